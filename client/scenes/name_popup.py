"""The player's name, asked once: on the first online action that takes a seat (issue 16).

:class:`NamePopup` opens when the player first hosts or joins while ``settings.player_name`` is
``None``. The field holds a suggestion (:func:`default_name`: the operating system's user name,
trimmed); *OK* keeps the name in the settings and *Skip* (or Escape) plays without one for this
run. Either way the action the player asked for goes on with the name chosen — nothing the
player did is lost. The name can be changed later in the settings popup (``settings_popup.py``).

:class:`NameField` is the one-line field for a name: any printable character (Korean, Japanese,
Chinese included), where the room-code fields take ASCII only.
"""

from __future__ import annotations

import getpass
from collections.abc import Callable
from dataclasses import replace

import pygame

from mineduel.client.scenes.base import Context, Popup
from mineduel.client.settings import NAME_MAX, player_name_problem, valid_player_name
from mineduel.client.ui import palette, shapes
from mineduel.client.ui.input import InputEvent, KeyEvent, PointerEvent, PointerKind, TextEvent
from mineduel.client.ui.text import blit_paragraph, paragraph_height
from mineduel.client.ui.textfield import TextField
from mineduel.client.ui.widgets import Button
from mineduel.shared.wire.player_names import MARKS_MAX, NameRule


class NameField(TextField):
    """A :class:`TextField` for a player's name: every printable character, at most ``max_len``."""

    def set_text(self, text: str) -> None:
        self.text = "".join(ch for ch in text if ch.isprintable())[: self.max_len]


def default_name(user: Callable[[], str] = getpass.getuser) -> str:
    """The suggestion in the field: the OS user name, trimmed to a usable name, or ``""``."""
    try:
        raw = user()
    except Exception:  # noqa: BLE001 - getuser raises OSError or KeyError when nobody is known
        return ""
    name = valid_player_name(" ".join(raw.replace("_", " ").replace(".", " ").split())[:NAME_MAX])
    return "" if name is None else name[:1].upper() + name[1:]


def needs_name(ctx: Context, skipped: bool) -> bool:
    """Whether to ask: never asked (``None``), not skipped in this run, and the settings are kept
    (a kiosk keeps nothing, so it never asks)."""
    return ctx.settings.player_name is None and not skipped and ctx.allowed.save_settings


class NamePopup(Popup):
    """See the module docstring. ``then(name)`` runs after OK (the kept name) or Skip (``""``)."""

    closable = True  # Escape and a click outside: Skip

    def __init__(self, ctx: Context, then: Callable[[str], None], *, on_skip: Callable[[], None] = lambda: None,
                 suggestion: str | None = None) -> None:
        super().__init__(ctx, card_height=300)
        self.then = then
        self.on_skip = on_skip
        self.problem: NameRule | None = None  # the rule the last OK broke (PROTOCOL.md §17), shown under the field
        self.field = NameField(pygame.Rect(0, 0, 10, 52), lambda: ctx.t("friend.name_placeholder"), self._submit,
                               max_len=NAME_MAX, name="name")
        self.field.set_text(default_name() if suggestion is None else suggestion)
        self.field.focused = True
        self._layout()

    def _layout(self) -> None:
        t = self.ctx.t
        card = self.card
        width = card.width - 40
        title_h = paragraph_height(self.ctx.fonts, t("friend.name_title"), 20, width, bold=True)
        hint_h = paragraph_height(self.ctx.fonts, t("friend.name_hint"), 14, width)
        # The tallest rule line, so the card keeps its size whichever rule is shown.
        note_h = max(paragraph_height(self.ctx.fonts, rule_text(t, rule), 13, width - 20) for rule in NameRule)
        self._note_h = note_h
        height = 24 + title_h + 8 + hint_h + 16 + 52 + 12 + note_h + 12 + 50 + 20
        self.set_card_height(height)
        card = self.card
        self._title_h, self._hint_h = title_h, hint_h
        field_y = card.top + 24 + title_h + 8 + hint_h + 16
        self.field.rect = pygame.Rect(card.left + 20, field_y, width, 52)
        y = card.bottom - 20 - 50
        half = (width - 10) // 2
        self.widgets.set([
            Button(pygame.Rect(card.left + 20, y, half, 50), lambda: t("friend.name_skip"), self.skip, style="ghost",
                   name="name_skip"),
            Button(pygame.Rect(card.left + 30 + half, y, half, 50), lambda: t("friend.name_ok"),
                   lambda: self._submit(self.field.text), style="primary", icon="check", name="name_ok"),
        ])

    def relayout(self) -> None:
        self._layout()

    def _submit(self, text: str) -> None:
        """OK: a usable name is kept and the action goes on; an empty field is Skip; anything else
        (only spaces cannot happen: they are trimmed) says why and keeps the popup."""
        if not text.strip():
            self.skip()
            return
        name = valid_player_name(text)
        if name is None:
            self.problem = player_name_problem(text)
            self.ctx.invalidate(None)
            return
        self.ctx.save_settings(replace(self.ctx.settings, player_name=name))
        self.close()
        self.then(name)

    def skip(self) -> None:
        self.on_skip()
        self.close()
        self.then("")

    def dismiss(self) -> None:
        self.skip()

    def handle_card_event(self, event: InputEvent) -> bool:
        field = self.field
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
        t = self.ctx.t
        fonts = self.ctx.fonts
        width = card.width - 40
        blit_paragraph(surface, fonts, t("friend.name_title"), 20, palette.INK,
                       pygame.Rect(card.left + 20, card.top + 24, width, self._title_h + 4), bold=True)
        hint_top = card.top + 24 + self._title_h + 8
        blit_paragraph(surface, fonts, t("friend.name_hint"), 14, palette.INK_SOFT,
                       pygame.Rect(card.left + 20, hint_top, width, self._hint_h + 4))
        self.field.draw(surface, fonts, keyboard=self.ctx.keyboard)
        if self.problem is not None:
            below = self.field.rect.bottom + 8
            surface.blit(shapes.icon("warning", 14, palette.WARN), (card.left + 20, below + 2))
            blit_paragraph(surface, fonts, rule_text(t, self.problem), 13, palette.WARN,
                           pygame.Rect(card.left + 40, below, width - 20, self._note_h + 4))


def rule_text(t: Callable[..., str], rule: NameRule) -> str:
    """Why a name is refused, in the player's language (``player.name_rule.*``)."""
    return t(f"player.name_rule.{rule}", count=MARKS_MAX if rule is NameRule.ACCENTS else NAME_MAX)
