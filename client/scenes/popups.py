"""The popups: language picker, rules (+ difficulty and Start), confirmation and menu (result: result_popup.py).

Each is a :class:`~mineduel.client.scenes.base.Popup`, so the U2 rules (one at a time,
background click needs press *and* release outside the card, Escape) are enforced in one
place. Popups know nothing about CPU or online matches: they call the callbacks they are given.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import pygame

from mineduel.client.i18n import native_name, translate
from mineduel.client.scenes.base import Context, Popup
from mineduel.client.ui import palette, shapes
from mineduel.client.ui.input import InputEvent, KeyEvent, PointerEvent, PointerKind, WheelEvent
from mineduel.client.ui.text import blit_paragraph, blit_text, paragraph_height
from mineduel.client.ui.widgets import Button

PAD = 22
BUTTON_H = 50
TITLE_SIZE = 23
BODY_SIZE = 15


def _title(surface: pygame.Surface, ctx: Context, text: str, card: pygame.Rect, y: int, size: int = TITLE_SIZE) -> int:
    width = card.width - 2 * PAD
    return blit_paragraph(surface, ctx.fonts, text, size, palette.INK, pygame.Rect(card.left + PAD, y, width, 200),
                          bold=True, align="center")


# ----- language ----------------------------------------------------------------------------------


class LanguagePopup(Popup):
    """U1/U5: each language in its own script. On first run it cannot be dismissed (board locked)."""

    def __init__(self, ctx: Context, on_chosen: Callable[[str], None], *, first_run: bool = False) -> None:
        super().__init__(ctx)
        self.first_run = first_run
        self.closable = not first_run
        self.on_chosen = on_chosen
        self.relayout()

    def title_lines(self) -> list[str]:
        if self.first_run:
            # Nothing is saved yet: greet in all four languages, each in its own script.
            return [translate("language.picker_title", code) for code in self.ctx.languages]
        return [self.ctx.t("language.picker_title")]

    def relayout(self) -> None:
        current = self.ctx.settings.language
        lines = self.title_lines()
        self._header_h = 44 + (len(lines) * 26 if self.first_run else 34)
        hint_h = 0
        if not self.first_run:
            hint_h = paragraph_height(self.ctx.fonts, self.ctx.t("language.picker_hint"), 14, self.card.width - 2 * PAD) + 12
        close_h = 0 if self.first_run else BUTTON_H + 10
        height = PAD + self._header_h + len(self.ctx.languages) * (56 + 10) + hint_h + close_h + PAD
        self.set_card_height(height)
        y = self.card.top + PAD + self._header_h
        buttons = []
        for code in self.ctx.languages:
            selected = code == current
            buttons.append(
                Button(
                    pygame.Rect(self.card.left + PAD, y, self.card.width - 2 * PAD, 56),
                    partial(native_name, code),
                    partial(self.choose, code),
                    style="selected" if selected else "secondary",
                    icon="check" if selected else None,
                    text_size=20,
                    name=f"lang:{code}",
                )
            )
            y += 66
        self._hint_y = y
        if not self.first_run:
            y += hint_h
            buttons.append(Button(pygame.Rect(self.card.left + PAD, y, self.card.width - 2 * PAD, BUTTON_H),
                                  lambda: self.ctx.t("action.close"), self.close, name="close"))
        self.widgets.set(buttons)
        if self.widgets.focus is None:
            self.widgets.focus_name(f"lang:{current or self.ctx.languages[0]}")

    def choose(self, code: str) -> None:
        self.close()
        self.on_chosen(code)

    def draw_content(self, surface: pygame.Surface, card: pygame.Rect) -> None:
        icon = shapes.icon("globe", 34, palette.ME_LIGHT)
        surface.blit(icon, icon.get_rect(midtop=(card.centerx, card.top + PAD)))
        y = card.top + PAD + 44
        for i, line in enumerate(self.title_lines()):
            size = 19 if self.first_run else TITLE_SIZE
            color = palette.INK if i == 0 or not self.first_run else palette.INK_SOFT
            blit_text(surface, self.ctx.fonts, line, size, color, bold=True, center=(card.centerx, y + 12))
            y += 26
        if not self.first_run:
            blit_paragraph(surface, self.ctx.fonts, self.ctx.t("language.picker_hint"), 14, palette.INK_SOFT,
                           pygame.Rect(card.left + PAD, self._hint_y, card.width - 2 * PAD, 60), align="center")


# ----- rules and difficulty ------------------------------------------------------------------------

RULE_KEYS = (
    "rules.board", "rules.opening", "rules.turn", "rules.numbers", "rules.flags", "rules.lose", "rules.draw_cpu", "rules.keys",
)
RULE_ICONS = ("grid", "explore", "restart", "eye", "flag", "mine", "equal", "menu")
DIFFICULTIES = ("easy", "normal", "hard")


class RulesPopup(Popup):
    """U1: the rules, and — at the start of a CPU match — the difficulty (default normal) and Start.

    The start version is not closable: the match begins only with Start. The rules text scrolls
    (wheel, drag, PageUp/PageDown) when it does not fit.
    """

    rule_keys: tuple[str, ...] = RULE_KEYS  # the online screen shows its own rules (U7)
    rule_icons: tuple[str, ...] = RULE_ICONS

    def __init__(self, ctx: Context, *, on_start: Callable[[str], None] | None = None, difficulty: str = "normal") -> None:
        super().__init__(ctx, card_width=358)
        self.on_start = on_start
        self.closable = on_start is None
        self.difficulty = difficulty
        self.scroll = 0
        self._drag: tuple[float, int] | None = None
        self.relayout()

    def relayout(self) -> None:
        ctx = self.ctx
        width = self.card.width - 2 * PAD - 36
        self._rule_heights = [paragraph_height(ctx.fonts, ctx.t(k), BODY_SIZE, width) for k in self.rule_keys]
        self._content_h = sum(self._rule_heights) + 14 * (len(self.rule_keys) - 1)
        footer = (34 + 56 + 16 if self.on_start else 0) + BUTTON_H
        header = 52
        max_h = ctx.size[1] - 40
        wanted = PAD + header + self._content_h + 18 + footer + PAD
        self.set_card_height(min(wanted, max_h))
        self._body = pygame.Rect(self.card.left + PAD, self.card.top + PAD + header, self.card.width - 2 * PAD,
                                 self.card.height - 2 * PAD - header - 18 - footer)
        self.scroll = min(self.scroll, self.max_scroll)
        y = self._body.bottom + 18
        buttons: list[Button] = []
        if self.on_start:
            self._difficulty_y = y
            y += 34
            seg_w = (self.card.width - 2 * PAD - 16) // 3
            for i, level in enumerate(DIFFICULTIES):
                buttons.append(Button(pygame.Rect(self.card.left + PAD + i * (seg_w + 8), y, seg_w, 48),
                                      partial(ctx.t, f"difficulty.{level}"), partial(self.pick, level),
                                      style="selected" if level == self.difficulty else "secondary", text_size=16,
                                      name=f"difficulty:{level}"))
            y += 56 + 16
            buttons.append(Button(pygame.Rect(self.card.left + PAD, y, self.card.width - 2 * PAD, BUTTON_H),
                                  lambda: ctx.t("action.start"), self.start, style="primary", text_size=18, name="start"))
        else:
            buttons.append(Button(pygame.Rect(self.card.left + PAD, y, self.card.width - 2 * PAD, BUTTON_H),
                                  lambda: ctx.t("action.close"), self.close, name="close"))
        self.widgets.set(buttons)
        if self.widgets.focus is None:
            self.widgets.focus_name("start" if self.on_start else "close")

    @property
    def max_scroll(self) -> int:
        return max(0, self._content_h - self._body.height)

    def pick(self, level: str) -> None:
        self.difficulty = level
        for b in self.widgets.buttons:
            if b.name.startswith("difficulty:"):
                b.style = "selected" if b.name == f"difficulty:{level}" else "secondary"
                self.widgets.invalidate(b)

    def start(self) -> None:
        assert self.on_start is not None
        self.close()
        self.on_start(self.difficulty)

    def _scroll_to(self, value: int) -> None:
        value = max(0, min(self.max_scroll, value))
        if value != self.scroll:
            self.scroll = value
            self.ctx.invalidate(self._body)

    def handle_card_event(self, event: InputEvent) -> bool:
        if isinstance(event, WheelEvent):
            self._scroll_to(self.scroll - round(event.dy * 40))
            return True
        if isinstance(event, KeyEvent) and event.key in (pygame.K_PAGEDOWN, pygame.K_PAGEUP, pygame.K_HOME, pygame.K_END):
            step = self._body.height - 40
            target = {pygame.K_PAGEDOWN: self.scroll + step, pygame.K_PAGEUP: self.scroll - step,
                      pygame.K_HOME: 0, pygame.K_END: self.max_scroll}[event.key]
            self._scroll_to(target)
            return True
        if isinstance(event, PointerEvent) and self.max_scroll:
            if event.kind is PointerKind.DOWN and self._body.collidepoint(event.pos):
                self._drag = (event.pos[1], self.scroll)
            elif event.kind is PointerKind.MOVE and self._drag is not None and event.pressed:
                self._scroll_to(self._drag[1] - round(event.pos[1] - self._drag[0]))
            elif event.kind in (PointerKind.UP, PointerKind.CANCEL):
                self._drag = None
        return super().handle_card_event(event)

    def draw_content(self, surface: pygame.Surface, card: pygame.Rect) -> None:
        ctx = self.ctx
        icon = shapes.icon("rules", 28, palette.PRIMARY)
        title = ctx.t("rules.title")
        tw = ctx.fonts.width(title, TITLE_SIZE, True)
        x = card.centerx - (tw + 36) // 2
        surface.blit(icon, (x, card.top + PAD + 2))
        blit_text(surface, ctx.fonts, title, TITLE_SIZE, palette.INK, bold=True, midleft=(x + 36, card.top + PAD + 16))
        body = self._body.move(0, card.top - self.card.top)
        clip = surface.get_clip()
        surface.set_clip(body.clip(clip) if clip else body)
        y = body.top - self.scroll
        for key, icon_name, h in zip(self.rule_keys, self.rule_icons, self._rule_heights, strict=True):
            if y + h >= body.top and y <= body.bottom:
                color = palette.OPP if key == "rules.lose" else palette.ME_LIGHT
                surface.blit(shapes.circle(28, palette.CARD_RAISED), (body.left, y - 3))
                surface.blit(shapes.icon(icon_name, 18, color), (body.left + 5, y + 2))
                blit_paragraph(surface, ctx.fonts, ctx.t(key), BODY_SIZE, palette.INK,
                               pygame.Rect(body.left + 36, y, body.width - 36, h + 4))
            y += h + 14
        surface.set_clip(clip)
        if self.max_scroll:
            # A thin scroll indicator on the right edge of the text.
            track = pygame.Rect(body.right + 8, body.top, 4, body.height)
            surface.blit(shapes.rounded(track.size, 2, palette.CARD_RAISED), track)
            thumb_h = max(24, round(track.height * body.height / self._content_h))
            thumb_y = track.top + round((track.height - thumb_h) * self.scroll / self.max_scroll)
            surface.blit(shapes.rounded((4, thumb_h), 2, palette.INK_SOFT), (track.left, thumb_y))
        if self.on_start:
            blit_text(surface, ctx.fonts, ctx.t("difficulty.title"), 16, palette.INK_SOFT, bold=True,
                      midleft=(card.left + PAD, self._difficulty_y + 14 + card.top - self.card.top))


# ----- confirmation and menu ------------------------------------------------------------------------


class ConfirmPopup(Popup):
    """A yes/no question (E4: restart). Closable: background or Escape means no."""

    def __init__(self, ctx: Context, *, title_key: str, body_key: str, confirm_key: str, on_confirm: Callable[[], None],
                 on_cancel: Callable[[], None] | None = None, danger: bool = True) -> None:
        super().__init__(ctx)
        self.title_key, self.body_key, self.confirm_key = title_key, body_key, confirm_key
        self.on_confirm = on_confirm
        self.on_cancel = on_cancel
        self.danger = danger
        self.relayout()

    def relayout(self) -> None:
        ctx = self.ctx
        inner = self.card.width - 2 * PAD
        self._title_h = paragraph_height(ctx.fonts, ctx.t(self.title_key), TITLE_SIZE, inner, bold=True)
        self._body_h = paragraph_height(ctx.fonts, ctx.t(self.body_key), BODY_SIZE + 1, inner)
        height = PAD + 52 + self._title_h + 12 + self._body_h + 24 + BUTTON_H + PAD
        self.set_card_height(height)
        y = self.card.bottom - PAD - BUTTON_H
        half = (inner - 10) // 2
        self.widgets.set([
            Button(pygame.Rect(self.card.left + PAD, y, half, BUTTON_H), lambda: ctx.t("action.cancel"), self.cancel,
                   name="cancel"),
            Button(pygame.Rect(self.card.left + PAD + half + 10, y, inner - half - 10, BUTTON_H), lambda: ctx.t(self.confirm_key),
                   self.confirm, style="danger" if self.danger else "primary", name="confirm"),
        ])
        if self.widgets.focus is None:
            self.widgets.focus_name("cancel")

    def confirm(self) -> None:
        self.close()
        self.on_confirm()

    def cancel(self) -> None:
        self.close()
        if self.on_cancel:
            self.on_cancel()

    def dismiss(self) -> None:
        self.cancel()

    def draw_content(self, surface: pygame.Surface, card: pygame.Rect) -> None:
        ctx = self.ctx
        icon = shapes.icon("restart", 36, palette.DANGER if self.danger else palette.PRIMARY)
        surface.blit(icon, icon.get_rect(midtop=(card.centerx, card.top + PAD)))
        y = card.top + PAD + 52
        y += _title(surface, ctx, ctx.t(self.title_key), card, y) + 12
        blit_paragraph(surface, ctx.fonts, ctx.t(self.body_key), BODY_SIZE + 1, palette.INK_SOFT,
                       pygame.Rect(card.left + PAD, y, card.width - 2 * PAD, self._body_h + 4), align="center")


@dataclass(frozen=True, slots=True)
class MenuItem:
    key: str
    icon: str
    action: Callable[[], None]
    enabled: bool = True
    danger: bool = False


class MenuPopup(Popup):
    """The menu: rules, language, restart, online play, quit — whatever the screen passes in."""

    def __init__(self, ctx: Context, items: Sequence[MenuItem]) -> None:
        super().__init__(ctx)
        self.items = list(items)
        self.relayout()

    def relayout(self) -> None:
        ctx = self.ctx
        row = 54
        height = PAD + 44 + len(self.items) * (row + 8) + 6 + BUTTON_H + PAD
        self.set_card_height(height)
        y = self.card.top + PAD + 44
        buttons = []
        for item in self.items:
            buttons.append(Button(pygame.Rect(self.card.left + PAD, y, self.card.width - 2 * PAD, row), partial(ctx.t, item.key),
                                  partial(self.pick, item), enabled=item.enabled, icon=item.icon,
                                  icon_color=palette.OPP if item.danger else palette.ME_LIGHT, layout="list", name=item.key))
            y += row + 8
        y += 6
        buttons.append(Button(pygame.Rect(self.card.left + PAD, y, self.card.width - 2 * PAD, BUTTON_H),
                              lambda: ctx.t("action.close"), self.close, style="ghost", name="close"))
        self.widgets.set(buttons)
        if self.widgets.focus is None:
            self.widgets.focus = 0

    def pick(self, item: MenuItem) -> None:
        self.close()
        item.action()

    def draw_content(self, surface: pygame.Surface, card: pygame.Rect) -> None:
        blit_text(surface, self.ctx.fonts, self.ctx.t("action.menu"), TITLE_SIZE, palette.INK, bold=True,
                  center=(card.centerx, card.top + PAD + 16))
