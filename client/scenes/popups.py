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
from mineduel.client.ui.text import FontBook, blit_paragraph, blit_text, paragraph_height
from mineduel.client.ui.widgets import Button

PAD = 22
BUTTON_H = 50
TITLE_SIZE = 23
BODY_SIZE = 15
HINT_SIZE, HINT_GAP = 13, 4  # the first run's language hint, one line per language


def _title(surface: pygame.Surface, ctx: Context, text: str, card: pygame.Rect, y: int, size: int = TITLE_SIZE) -> int:
    width = card.width - 2 * PAD
    return blit_paragraph(surface, ctx.fonts, text, size, palette.INK, pygame.Rect(card.left + PAD, y, width, 200),
                          bold=True, align="center")


# ----- language ----------------------------------------------------------------------------------


class LanguagePopup(Popup):
    """U1/U5: each language in its own script. On first run it cannot be dismissed (board locked) and
    says, in every language offered, that the language can be changed later in the menu; opened from
    the menu it does not (the player is already there)."""

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
        hint_h = sum(paragraph_height(self.ctx.fonts, hint, HINT_SIZE, self.card.width - 2 * PAD) + HINT_GAP
                     for hint in self.hints())
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
            buttons.append(Button(pygame.Rect(self.card.left + PAD, y, self.card.width - 2 * PAD, BUTTON_H),
                                  lambda: self.ctx.t("action.close"), self.close, name="close"))
        self.widgets.set(buttons)
        if self.widgets.focus is None:
            self.widgets.focus_name(f"lang:{current or self.ctx.languages[0]}")

    def hints(self) -> list[str]:
        """The first run's "you can change this later in the menu", in each language offered."""
        if not self.first_run:
            return []
        return [translate("language.picker_hint", code) for code in self.ctx.languages]

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
        y = self._hint_y
        for hint in self.hints():
            height = paragraph_height(self.ctx.fonts, hint, HINT_SIZE, card.width - 2 * PAD)
            blit_paragraph(surface, self.ctx.fonts, hint, HINT_SIZE, palette.INK_SOFT,
                           pygame.Rect(card.left + PAD, y, card.width - 2 * PAD, height + 4), align="center")
            y += height + HINT_GAP


# ----- rules and difficulty ------------------------------------------------------------------------

RULE_KEYS = (
    "rules.board", "rules.colors", "rules.opening", "rules.turn", "rules.numbers_all", "rules.overlap", "rules.flags",
    "rules.lose", "rules.draw_cpu", "rules.keys",
)
RULE_ICONS = ("grid", "person", "explore", "restart", "eye", "mine", "flag", "mine", "equal", "menu")
DIFFICULTIES = ("easy", "normal", "hard", "expert")  # shared.ai.levels.Level, in this order
DIFFICULTY_ROWS = 2

# Small boards beside some rules (3×3, row by row). Tokens: "." a closed cell, "o"/"x" a cell opened
# by me (blue) / the opponent (pink), its number worked out from the mines shown (B4, an overlap
# once); "A" my mine, "B" the opponent's, "X" both (an overlap); "a"/"b" my / the opponent's flag;
# "K" the opponent's mine someone stepped on.
ILLUSTRATIONS: dict[str, tuple[str, ...]] = {
    "rules.colors": ("o o A", "x x .", ". . ."),
    "rules.numbers_all": ("A . .", ". o .", ". . B"),
    "rules.overlap": (". . .", ". o X", ". . ."),
    "rules.flags": (". a .", ". . .", "b . ."),
    "rules.lose": (". . .", ". K .", ". . ."),
}
MINI_CELL = 19
MINI_GAP = 2
MINI = 3 * MINI_CELL + 2 * MINI_GAP


def illustration_numbers(rows: tuple[str, ...]) -> dict[tuple[int, int], int]:
    """The number each opened cell of an illustration shows: neighbouring cells holding at least one
    mine (B4: an overlap counts once), exactly as the engine counts them on the real board."""
    grid = [row.split() for row in rows]
    mined = {(r, c) for r, row in enumerate(grid) for c, token in enumerate(row) if token in "ABXK"}
    out = {}
    for r, row in enumerate(grid):
        for c, token in enumerate(row):
            if token in "ox":
                out[(r, c)] = sum((r + dr, c + dc) in mined for dr in (-1, 0, 1) for dc in (-1, 0, 1) if dr or dc)
    return out


def draw_illustration(surface: pygame.Surface, fonts: FontBook, rows: tuple[str, ...], topleft: tuple[int, int]) -> None:
    """A 3×3 mini board in the board's own colours and shapes (blue me, pink the opponent with its notch)."""
    numbers = illustration_numbers(rows)
    x0, y0 = topleft
    surface.blit(shapes.rounded((MINI + 8, MINI + 8), 8, palette.BOARD), (x0 - 4, y0 - 4))
    for r, row in enumerate(rows):
        for c, token in enumerate(row.split()):
            rect = pygame.Rect(x0 + c * (MINI_CELL + MINI_GAP), y0 + r * (MINI_CELL + MINI_GAP), MINI_CELL, MINI_CELL)
            if token in "ox":
                me = token == "o"
                fill, edge = (palette.ME_CELL, palette.ME_CELL_EDGE) if me else (palette.OPP_CELL, palette.OPP_CELL_EDGE)
                surface.blit(shapes.rounded(rect.size, 4, fill, 1, edge), rect)
                if not me:
                    pygame.draw.polygon(surface, palette.OPP, [(rect.right - 7, rect.top + 1), (rect.right - 1, rect.top + 1),
                                                               (rect.right - 1, rect.top + 7)])
                n = numbers[(r, c)]
                digit = fonts.render(str(n), 13, palette.NUMBER_INK[n], True)
                surface.blit(digit, digit.get_rect(center=rect.center))
                continue
            surface.blit(shapes.rounded(rect.size, 4, palette.TILE_IDLE, 1, palette.TILE_IDLE_EDGE), rect)
            if token == "K":
                surface.blit(shapes.icon("burst", MINI_CELL, palette.WARN), rect)
            if token in "ABK":
                mine = shapes.icon("mine", 13, palette.ME_LIGHT if token == "A" else palette.OPP)
                surface.blit(mine, mine.get_rect(center=rect.center))
            elif token == "X":
                left = shapes.icon("mine", 11, palette.ME_LIGHT)
                right = shapes.icon("mine", 11, palette.OPP)
                surface.blit(left, left.get_rect(center=(rect.centerx - 3, rect.centery - 2)))
                surface.blit(right, right.get_rect(center=(rect.centerx + 3, rect.centery + 2)))
                surface.blit(shapes.ring(rect.size, 4, palette.PRIMARY, 2), rect)
            elif token in "ab":
                flag = shapes.icon("flag" if token == "a" else "flag_opponent", 15, palette.ME if token == "a" else palette.OPP)
                surface.blit(flag, flag.get_rect(center=rect.center))


class RulesPopup(Popup):
    """U1: the rules, and — at the start of a CPU match — the difficulty (default normal) and Start.

    The start version is not closable: the match begins only with Start (against the CPU), or
    *Play with a friend* (when the caller offers it: ``on_friend``) leaves for the online screen.
    Both versions offer the tutorial (``Context.open_tutorial``). Rules that need a picture have a
    3×3 mini board beside them (:data:`ILLUSTRATIONS`). The rules text scrolls inside the card
    (wheel, drag, PageUp/PageDown, the base class's input) while the buttons stay in view.
    """

    rule_keys: tuple[str, ...] = RULE_KEYS  # the online screen shows its own rules (U7)
    rule_icons: tuple[str, ...] = RULE_ICONS
    offers_tutorial = True  # not over an online match: its deadlines would run on meanwhile (U7)

    def __init__(self, ctx: Context, *, on_start: Callable[[str], None] | None = None, difficulty: str = "normal",
                 on_friend: Callable[[], None] | None = None) -> None:
        self.on_start = on_start
        self.on_friend = on_friend
        self.difficulty = difficulty
        self.scroll = 0
        self._body = pygame.Rect(0, 0, 0, 0)
        self._content_h = 0
        super().__init__(ctx, card_width=358)
        self.closable = on_start is None
        self.relayout()

    def _text_width(self, key: str) -> int:
        width = self.card.width - 2 * PAD - 36 - 12  # room for the scroll bar
        return width - (MINI + 12 if key in ILLUSTRATIONS else 0)

    def relayout(self) -> None:
        ctx = self.ctx
        self._rule_heights = [max(paragraph_height(ctx.fonts, ctx.t(k), BODY_SIZE, self._text_width(k)),
                                  MINI + 4 if k in ILLUSTRATIONS else 0) for k in self.rule_keys]
        self._content_h = sum(self._rule_heights) + 14 * (len(self.rule_keys) - 1)
        footer = (34 + DIFFICULTY_ROWS * 56 + 16 if self.on_start else 0) + BUTTON_H + (10 + 44 if self.offers_tutorial else 0)
        header = 52
        wanted = PAD + header + self._content_h + 18 + footer + PAD
        self.set_card_height(min(wanted, self.max_card_height()))
        self._body = pygame.Rect(self.card.left + PAD, self.card.top + PAD + header, self.card.width - 2 * PAD,
                                 self.card.height - 2 * PAD - header - 18 - footer)
        self.scroll = min(self.scroll, self.scroll_limit())
        y = self._body.bottom + 18
        inner = self.card.width - 2 * PAD
        left = self.card.left + PAD
        buttons: list[Button] = []
        if self.on_start:
            self._difficulty_y = y
            y += 34
            # Four levels as two rows of two: "むずかしい" and "エキスパート" need more than a quarter of the card.
            per_row = len(DIFFICULTIES) // DIFFICULTY_ROWS
            seg_w = (inner - 8 * (per_row - 1)) // per_row
            for i, level in enumerate(DIFFICULTIES):
                row, col = divmod(i, per_row)
                buttons.append(Button(pygame.Rect(left + col * (seg_w + 8), y + row * 56, seg_w, 48),
                                      partial(ctx.t, f"difficulty.{level}"), partial(self.pick, level),
                                      style="selected" if level == self.difficulty else "secondary", text_size=16,
                                      name=f"difficulty:{level}"))
            y += DIFFICULTY_ROWS * 56 + 16
            friend = self.on_friend is not None and ctx.allowed.online
            start_w = (inner - 10) * 2 // 5 if friend else inner  # "Start" is short, "Play with a friend" is not
            buttons.append(Button(pygame.Rect(left, y, start_w, BUTTON_H), lambda: ctx.t("action.start"), self.start,
                                  style="primary", icon="cpu", text_size=18, name="start"))
            if friend:
                buttons.append(Button(pygame.Rect(left + start_w + 10, y, inner - start_w - 10, BUTTON_H),
                                      lambda: ctx.t("rules.play_friend"), self.friend, icon="person",
                                      icon_color=palette.OPP, text_size=16, name="friend"))
        else:
            buttons.append(Button(pygame.Rect(left, y, inner, BUTTON_H), lambda: ctx.t("action.close"), self.close,
                                  name="close"))
        if self.offers_tutorial:
            buttons.append(Button(pygame.Rect(left, y + BUTTON_H + 10, inner, 44), lambda: ctx.t("menu.tutorial"), self.tutorial,
                                  style="ghost", icon="explore", icon_color=palette.PRIMARY, text_size=15, name="tutorial"))
        self.widgets.set(buttons)
        if self.widgets.focus is None:
            self.widgets.focus_name("start" if self.on_start else "close")

    # ----- the rules text scrolls, the buttons stay (the base class's input, this area) ----------------
    def scroll_area(self) -> pygame.Rect | None:
        return self._body if self._content_h > self._body.height else None

    def scroll_offset(self) -> int:
        return self.scroll

    def scroll_limit(self) -> int:
        return max(0, self._content_h - self._body.height)

    @property
    def max_scroll(self) -> int:
        return self.scroll_limit()

    def set_scroll(self, value: int) -> None:
        value = max(0, min(self.scroll_limit(), value))
        if value != self.scroll:
            self.scroll = value
            self.ctx.invalidate(self._body.inflate(24, 8))

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

    def friend(self) -> None:
        """*Play with a friend*: the online screen (host, the rooms waiting on this network, join)."""
        assert self.on_friend is not None
        self.close()
        self.on_friend()

    def tutorial(self) -> None:
        self.close()
        self.ctx.open_tutorial()

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
                               pygame.Rect(body.left + 36, y, self._text_width(key), h + 4))
                rows = ILLUSTRATIONS.get(key)
                if rows is not None:
                    draw_illustration(surface, ctx.fonts, rows, (body.right - MINI - 14, y + 2))
            y += h + 14
        surface.set_clip(clip)
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
