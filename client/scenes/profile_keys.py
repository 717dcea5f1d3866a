"""Moving an identity to another computer (issue 20): the player key exported and imported.

*Export* shows the short text of :func:`~mineduel.client.player_key.export_text` (``MD1-…``) with
**Copy** and the one warning that matters (anyone holding it plays as you); nothing is written
anywhere else, so the secret is only where the player puts it. *Import* takes that text back —
typed or pasted (Ctrl+V), spaces and line breaks forgiven — checks it (a typo is caught by its
check characters and said, nothing changes), and when there is an identity on this computer asks
once more, naming it, before it is replaced. The new key is used from the next connection on
(PROTOCOL.md §17: one identity per connection), which the lobby opens at once when it can.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pygame

from mineduel.client.player_key import KEY_CHARS, BadExport, KeyState, Loaded, export_text, parse_export
from mineduel.client.scenes.base import Context, Popup
from mineduel.client.scenes.popups import BUTTON_H, PAD
from mineduel.client.ui import palette, shapes
from mineduel.client.ui.input import InputEvent, KeyEvent, PointerEvent, PointerKind, TextEvent
from mineduel.client.ui.text import blit_paragraph, blit_text, paragraph_height
from mineduel.client.ui.textfield import TextField
from mineduel.client.ui.widgets import Button

if TYPE_CHECKING:
    from mineduel.client.player_session import PlayerSession

KEY_TEXT_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_ ")
"""What the import field takes: an exported text (and the spaces a messenger may put in it)."""


class ExportKeyPopup(Popup):
    """The exported text, Copy, and the warning (see the module docstring)."""

    closable = True

    def __init__(self, ctx: Context, key: str, clipboard: Callable[[str], bool]) -> None:
        super().__init__(ctx, card_width=350)
        self.text = export_text(key)
        self.clipboard = clipboard
        self.copied: bool | None = None
        self.relayout()

    def _lines(self) -> list[str]:
        """The text in two halves: it reads (and is written down) more easily, and never overflows."""
        half = (len(self.text) + 1) // 2
        return [self.text[:half], self.text[half:]]

    def relayout(self) -> None:
        t = self.ctx.t
        inner = self.card.width - 2 * PAD
        self._title_h = paragraph_height(self.ctx.fonts, t("player.export.title"), 20, inner, bold=True)
        self._body_h = paragraph_height(self.ctx.fonts, t("player.export.body"), 14, inner)
        height = PAD + 40 + self._title_h + 10 + self._body_h + 14 + 70 + 30 + BUTTON_H + PAD
        self.set_card_height(height)
        y = self.card.bottom - PAD - BUTTON_H
        half = (inner - 10) // 2
        left = self.card.left + PAD
        self.widgets.set([
            Button(pygame.Rect(left, y, half, BUTTON_H), lambda: t("action.close"), self.close, name="export_close"),
            Button(pygame.Rect(left + half + 10, y, inner - half - 10, BUTTON_H), lambda: t("player.export.copy"),
                   self.copy, style="primary", icon="export", name="export_copy"),
        ])
        if self.widgets.focus is None:
            self.widgets.focus_name("export_copy")

    def copy(self) -> None:
        self.copied = bool(self.clipboard(self.text))
        self.ctx.invalidate(None)

    def draw_content(self, surface: pygame.Surface, card: pygame.Rect) -> None:
        ctx = self.ctx
        t = ctx.t
        fonts = ctx.fonts
        inner = card.width - 2 * PAD
        left = card.left + PAD
        y = card.top + PAD
        mark = shapes.icon("person", 30, palette.ME_LIGHT)
        surface.blit(mark, mark.get_rect(midtop=(card.centerx, y)))
        y += 40
        blit_paragraph(surface, fonts, t("player.export.title"), 20, palette.INK,
                       pygame.Rect(left, y, inner, self._title_h + 4), bold=True, align="center")
        y += self._title_h + 10
        blit_paragraph(surface, fonts, t("player.export.body"), 14, palette.WARN,
                       pygame.Rect(left, y, inner, self._body_h + 4), align="center")
        y += self._body_h + 14
        box = pygame.Rect(left, y, inner, 70)
        surface.blit(shapes.rounded(box.size, 12, palette.PANEL, 1, palette.CARD_BORDER), box)
        for i, line in enumerate(self._lines()):
            size = fonts.fit_size(line, 16, inner - 20, True)
            blit_text(surface, fonts, line, size, palette.INK, bold=True, center=(box.centerx, box.top + 20 + i * 30))
        y += 70 + 6
        if self.copied is not None:
            text = t("player.export.copied") if self.copied else t("player.export.copy_failed")
            size = fonts.fit_size(text, 13, inner)
            blit_text(surface, fonts, text, size, palette.GOOD if self.copied else palette.WARN, center=(card.centerx, y + 10))


class ImportKeyPopup(Popup):
    """Paste an exported text, then (over an existing identity) confirm that it replaces it."""

    closable = True

    def __init__(self, ctx: Context, players: PlayerSession, *, current: str | None, on_done: Callable[[], None]) -> None:
        super().__init__(ctx, card_width=350)
        self.players = players
        self.current = current  # the identity on this computer as the player knows it ("Ann#3f9c"), if any
        self.on_done = on_done
        self.problem: str | None = None  # a catalog key
        self.pending: str | None = None  # a valid key waiting for the confirmation
        self.field = TextField(pygame.Rect(0, 0, 10, 52), lambda: ctx.t("player.import.placeholder"), self.submit,
                               allowed=KEY_TEXT_CHARS, max_len=KEY_CHARS + 40, name="key_text")
        self.field.focused = True
        self.relayout()

    def _body(self) -> str:
        t = self.ctx.t
        if self.pending is not None:
            return t("player.import.confirm_body", name=self.current or "")
        return t("player.import.body")

    def relayout(self) -> None:
        t = self.ctx.t
        inner = self.card.width - 2 * PAD
        title = t("player.import.confirm_title") if self.pending is not None else t("player.import.title")
        self._title_h = paragraph_height(self.ctx.fonts, title, 20, inner, bold=True)
        self._body_h = paragraph_height(self.ctx.fonts, self._body(), 14, inner)
        field_h = 0 if self.pending is not None else 52 + 34
        height = PAD + 40 + self._title_h + 10 + self._body_h + 16 + field_h + BUTTON_H + PAD
        self.set_card_height(height)
        left = self.card.left + PAD
        self.field.rect = pygame.Rect(left, self.card.top + PAD + 40 + self._title_h + 10 + self._body_h + 16, inner, 52)
        y = self.card.bottom - PAD - BUTTON_H
        half = (inner - 10) // 2
        if self.pending is None:
            confirm = Button(pygame.Rect(left + half + 10, y, inner - half - 10, BUTTON_H), lambda: t("player.import.go"),
                             lambda: self.submit(self.field.text), style="primary", icon="check", name="import_go")
        else:
            confirm = Button(pygame.Rect(left + half + 10, y, inner - half - 10, BUTTON_H),
                             lambda: t("player.import.replace"), self.replace, style="danger", name="import_replace")
        self.widgets.set([Button(pygame.Rect(left, y, half, BUTTON_H), lambda: t("action.cancel"), self.close,
                                 name="import_cancel"), confirm])

    def submit(self, text: str) -> None:
        """Check the text: a problem is said and nothing changes; a good key over an identity asks once more."""
        try:
            key = parse_export(text)
        except BadExport as err:
            self.problem = "player.import.error." + err.reason
            self.ctx.invalidate(None)
            return
        if self.players.loaded.key == key:
            self.problem = "player.import.error.same"
            self.ctx.invalidate(None)
            return
        self.problem = None
        if self.current is None:  # nothing of the player's would be replaced (none yet, or a damaged file)
            self.pending = key
            self.replace()
            return
        self.pending = key
        self.field.focused = False
        self.relayout()
        self.widgets.focus_name("import_cancel")
        self.ctx.invalidate(None)

    def replace(self) -> None:
        key = self.pending
        if key is None:
            return
        if not self.players.keys.replace(key):
            self.pending = None
            self.problem = "player.import.error.unwritable"
            self.relayout()
            self.ctx.invalidate(None)
            return
        self.players.set_key(Loaded(KeyState.READY, key))
        self.close()
        self.on_done()

    def handle_card_event(self, event: InputEvent) -> bool:
        field = self.field
        if self.pending is None:
            if isinstance(event, PointerEvent) and event.kind is PointerKind.DOWN:
                field.handle(event)
                self.ctx.invalidate(None)
            elif isinstance(event, (KeyEvent, TextEvent)) and field.focused:
                used = field.handle(event)
                self.problem = None
                self.ctx.invalidate(None)
                if used:
                    return True
        return self.widgets.handle(event)

    def _shift(self, dy: int) -> None:
        super()._shift(dy)
        if dy:
            self.field.rect.move_ip(0, dy)

    def draw_content(self, surface: pygame.Surface, card: pygame.Rect) -> None:
        ctx = self.ctx
        t = ctx.t
        fonts = ctx.fonts
        inner = card.width - 2 * PAD
        left = card.left + PAD
        y = card.top + PAD
        confirming = self.pending is not None
        mark = shapes.icon("warning" if confirming else "export", 30, palette.WARN if confirming else palette.ME_LIGHT)
        surface.blit(mark, mark.get_rect(midtop=(card.centerx, y)))
        y += 40
        title = t("player.import.confirm_title") if confirming else t("player.import.title")
        blit_paragraph(surface, fonts, title, 20, palette.INK, pygame.Rect(left, y, inner, self._title_h + 4), bold=True,
                       align="center")
        y += self._title_h + 10
        blit_paragraph(surface, fonts, self._body(), 14, palette.INK_SOFT, pygame.Rect(left, y, inner, self._body_h + 4),
                       align="center")
        if not confirming:
            self.field.draw(surface, fonts, keyboard=ctx.keyboard)
        if self.problem is not None:
            below = self.field.rect.bottom + 8 if not confirming else card.bottom - PAD - BUTTON_H - 26
            text = t(self.problem)
            surface.blit(shapes.icon("warning", 14, palette.WARN), (left, below + 2))
            blit_text(surface, fonts, text, fonts.fit_size(text, 13, inner - 20), palette.WARN, topleft=(left + 20, below))
