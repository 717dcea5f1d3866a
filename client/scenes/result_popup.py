"""The result popup (C4, E1–E2): win / loss / draw at the end of a match, and what to do next.

Its own module because it grows with the match's end (record line, reveal, verify) while the other
popups stay small; like them it only calls the callbacks it is given.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import pygame

from mineduel.client.controller import Ended
from mineduel.client.scenes.base import Context, Popup
from mineduel.client.scenes.match_words import round_of
from mineduel.client.scenes.popups import BUTTON_H, PAD
from mineduel.client.ui import palette, shapes
from mineduel.client.ui.text import blit_paragraph, blit_text, paragraph_height
from mineduel.client.ui.widgets import Button
from mineduel.shared.rules.engine import Reason


@dataclass(frozen=True, slots=True)
class ResultInfo:
    """What the result popup shows: fixed at the end (E1), re-worded on a language change."""

    ended: Ended
    my_seat: int
    difficulty: str | None
    record_line: Callable[[], tuple[str, bool]]  # (text, is_error)
    hints_used: int = 0  # CPU hints asked for (issue 18 item 4): said beside the difficulty when any


class ResultPopup(Popup):
    """C4/E1–E2: win / loss / draw with the round and turn (F3) and time. Never closes by background
    or Escape (U2). View board (and, after a CPU match, Show everything: the O13 reveal), Restart,
    Menu, Export a copy; a short line says the record was saved (the file name only)."""

    closable = False

    def __init__(self, ctx: Context, info: ResultInfo, *, on_view_board: Callable[[], None], on_restart: Callable[[], None],
                 on_menu: Callable[[], None], on_export: Callable[[], None] | None,
                 on_show_everything: Callable[[], None] | None = None,
                 on_analysis: Callable[[], None] | None = None,
                 on_replay: Callable[[], None] | None = None) -> None:
        super().__init__(ctx, card_width=350)
        self.info = info
        self.on_view_board = on_view_board
        self.on_show_everything = on_show_everything
        self.on_restart = on_restart
        self.on_menu = on_menu
        self.on_export = on_export
        self.on_analysis = on_analysis  # issue 18: the post-match analysis (client/scenes/analysis.py)
        self.on_replay = on_replay  # issue 19: the replay viewer (client/scenes/replay_viewer.py), in the same row
        self.relayout()

    @property
    def kind(self) -> str:
        winner = self.info.ended.outcome.winner
        if winner is None:
            return "void" if self.info.ended.outcome.reason is Reason.VOID else "draw"
        return "win" if winner == self.info.my_seat else "loss"

    def detail(self) -> str:
        outcome = self.info.ended.outcome
        if outcome.reason is Reason.KO:
            return self.ctx.t("result.detail.cpu_hit_mine" if self.kind == "win" else "result.detail.you_hit_mine")
        return self.ctx.t(f"result.detail.{outcome.reason}")

    def relayout(self) -> None:
        ctx = self.ctx
        inner = self.card.width - 2 * PAD
        self._detail_h = paragraph_height(ctx.fonts, self.detail(), 16, inner)
        record_text, _ = self.info.record_line()
        self._record_h = paragraph_height(ctx.fonts, record_text, 12, inner) if record_text else 0
        top_h = 72 + 12 + 40 + 6 + self._detail_h + 18 + 64 + 18
        extra = 46 + 10 if self.on_show_everything is not None else 0  # E2 after a CPU match: its own row
        last_row = any(f is not None for f in (self.on_export, self.on_analysis, self.on_replay))  # they share a row
        buttons_h = BUTTON_H + 10 + extra + BUTTON_H + (10 + 46 if last_row else 0)
        height = PAD + top_h + buttons_h + (12 + self._record_h if self._record_h else 0) + PAD
        self.set_card_height(height)
        y = self.card.top + PAD + top_h
        half = (inner - 10) // 2
        left = self.card.left + PAD
        buttons = [Button(pygame.Rect(left, y, inner, BUTTON_H), lambda: ctx.t("action.view_board"), self.on_view_board,
                          style="primary", icon="eye", text_size=18, name="view_board")]
        if self.on_show_everything is not None:
            buttons.append(Button(pygame.Rect(left, y + BUTTON_H + 10, inner, 46), lambda: ctx.t("result.show_everything"),
                                  self.on_show_everything, icon="mine", icon_color=palette.OPP, text_size=16,
                                  name="show_everything"))
        row = y + BUTTON_H + 10 + extra
        buttons += [
            Button(pygame.Rect(left, row, half, BUTTON_H), lambda: ctx.t("action.restart"), self.on_restart,
                   icon="restart", icon_color=palette.ME_LIGHT, name="restart"),
            Button(pygame.Rect(left + half + 10, row, inner - half - 10, BUTTON_H), lambda: ctx.t("action.menu"),
                   self.on_menu, icon="menu", icon_color=palette.ME_LIGHT, name="menu"),
        ]
        # Export | Analysis | Replay share the last row.
        last = [(f, key, icon, color, name) for f, key, icon, color, name in (
            (self.on_export, "result.export_copy", "export", palette.INK_SOFT, "export"),
            (self.on_analysis, "analysis.open", "grid", palette.PRIMARY, "analysis"),
            (self.on_replay, "replay.open", "restart", palette.ME_LIGHT, "replay")) if f is not None]
        gap = 8
        room = inner - gap * (len(last) - 1)
        # Each part as wide as its words need (at 15 px, with a margin), the rest shared equally.
        need = [ctx.fonts.render(ctx.t(key), 15, palette.INK, True).get_width() + 20 for _, key, *_ in last]
        spare = max(0, room - sum(need)) // max(1, len(last))
        widths = [n + spare for n in need] if sum(need) <= room else [room * n // sum(need) for n in need]
        x = left
        for i, (f, key, icon, color, name) in enumerate(last):
            width = widths[i] if i < len(last) - 1 else left + inner - x
            buttons.append(Button(pygame.Rect(x, row + BUTTON_H + 10, width, 46), partial(ctx.t, key), f,
                                  style="ghost", icon=icon if len(last) < 3 else None, icon_color=color,
                                  text_size=15, name=name))
            x += width + gap
        self._record_y = y + buttons_h + 12
        self.widgets.set(buttons)
        if self.widgets.focus is None:
            self.widgets.focus_name("view_board")

    def refresh_record_line(self) -> None:
        self.relayout()
        self.ctx.invalidate(None)

    def draw_content(self, surface: pygame.Surface, card: pygame.Rect) -> None:
        ctx = self.ctx
        kind = self.kind
        color, icon_name = {
            "win": (palette.PRIMARY, "trophy"),
            "loss": (palette.DANGER, "burst"),
            "draw": (palette.ME_LIGHT, "equal"),
            "void": (palette.INK_SOFT, "equal"),
        }[kind]
        cx = card.centerx
        y = card.top + PAD
        surface.blit(shapes.circle(72, palette.mix(palette.CARD, color, 0.22)), (cx - 36, y))
        icon = shapes.icon(icon_name, 44, color)
        surface.blit(icon, icon.get_rect(center=(cx, y + 36)))
        if kind == "loss":
            mine = shapes.icon("mine", 26, palette.MINE)
            surface.blit(mine, mine.get_rect(center=(cx, y + 36)))
        y += 72 + 12
        blit_text(surface, ctx.fonts, ctx.t(f"result.title.{kind}"), 32, palette.INK, bold=True, center=(cx, y + 20))
        y += 40 + 6
        blit_paragraph(surface, ctx.fonts, self.detail(), 16, palette.INK_SOFT,
                       pygame.Rect(card.left + PAD, y, card.width - 2 * PAD, self._detail_h + 4), align="center")
        y += self._detail_h + 18
        # Turns and time (E1, E3), then the difficulty.
        ended = self.info.ended
        chips = [ctx.t("result.round_turn", rounds=round_of(ended.turns), turns=ended.turns),
                 ctx.t("result.time", duration=ctx.tr.duration(ended.elapsed))]
        inner = card.width - 2 * PAD
        half = (inner - 10) // 2
        for i, text in enumerate(chips):
            rect = pygame.Rect(card.left + PAD + i * (half + 10), y, half if i == 0 else inner - half - 10, 38)
            surface.blit(shapes.rounded(rect.size, 12, palette.CARD_RAISED), rect)
            size = ctx.fonts.fit_size(text, 16, rect.width - 12, True)
            blit_text(surface, ctx.fonts, text, size, palette.INK, bold=True, center=rect.center)
        if self.info.difficulty:
            text = ctx.t("result.difficulty", level=ctx.t(f"difficulty.{self.info.difficulty}"))
            if self.info.hints_used:
                text += " · " + ctx.t("result.hints_used", count=self.info.hints_used)
            size = ctx.fonts.fit_size(text, 14, card.width - 2 * PAD)
            blit_text(surface, ctx.fonts, text, size, palette.INK_SOFT, center=(cx, y + 38 + 14))
        record_text, is_error = self.info.record_line()
        if record_text:
            blit_paragraph(surface, ctx.fonts, record_text, 12, palette.WARN if is_error else palette.INK_FAINT,
                           pygame.Rect(card.left + PAD, self._record_y, inner, self._record_h + 4), align="center", max_lines=4)
