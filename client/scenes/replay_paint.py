"""How the replay viewer (client/scenes/replay_viewer.py) is drawn: view tabs, the board, the step's
words, the timeline and the controls.

The board is the match screen's :class:`~mineduel.client.ui.board.BoardView` with the chosen seat's
view — the viewing seat in the "me" colour (blue), the other in the opponent's (pink, with the
notch). The full board draws seat 0's view and adds seat 1's mines in seat 1's colour; an overlap
shows both. Everything stays in the top 692 canvas pixels, so 320×568 (width-fit) needs no scroll.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pygame

from mineduel.client.ui import palette, shapes
from mineduel.client.ui.board import CELL, BoardView
from mineduel.client.ui.text import blit_paragraph, blit_text, paragraph_height
from mineduel.shared.rules.bitboard import CELLS
from mineduel.shared.rules.views import SeatView

if TYPE_CHECKING:
    from mineduel.client.scenes.replay_viewer import ReplayStep, ReplayViewer

W = 390
LEFT, INNER = 16, 358
TITLE_Y = 30
TABS_Y, TAB_H, TAB_GAP = 60, 44, 8
CAPTION_Y = 118
BOARD_TOP = 130
STEP_Y = 520
EVENT_Y = 542
TRACK_Y = 566
CONTROLS_Y = 594
TURNS_Y = 648


class ReplayPainter:
    """Draws one :class:`ReplayViewer`; holds the layout its buttons use."""

    BACK = pygame.Rect(8, 8, 108, 44)
    TRACK = pygame.Rect(LEFT + 10, TRACK_Y, INNER - 20, 8)
    PREV = pygame.Rect(LEFT, CONTROLS_Y, 96, 48)
    PLAY = pygame.Rect(LEFT + 102, CONTROLS_Y, INNER - 204, 48)
    NEXT = pygame.Rect(W - LEFT - 96, CONTROLS_Y, 96, 48)
    TURN_PREV = pygame.Rect(LEFT, TURNS_Y, (INNER - 10) // 2, 44)
    TURN_NEXT = pygame.Rect(LEFT + (INNER - 10) // 2 + 10, TURNS_Y, INNER - (INNER - 10) // 2 - 10, 44)

    def __init__(self, scene: ReplayViewer) -> None:
        self.scene = scene
        ctx = scene.ctx
        self.board = BoardView(ctx.fonts, ctx.invalidate, BOARD_TOP)
        self._step: ReplayStep | None = None

    @staticmethod
    def tab_rect(slot: int) -> pygame.Rect:
        width = (INNER - 2 * TAB_GAP) // 3
        return pygame.Rect(LEFT + slot * (width + TAB_GAP), TABS_Y, width, TAB_H)

    def index_at(self, x: float, last: int) -> int:
        """The action under ``x`` on the timeline (0 … ``last``)."""
        if last <= 0:
            return 0
        share = (x - self.TRACK.left) / max(1, self.TRACK.width)
        return max(0, min(last, round(share * last)))

    def knob_x(self, index: int, last: int) -> int:
        return self.TRACK.left + (round(self.TRACK.width * index / last) if last else 0)

    def set_step(self, step: ReplayStep | None, view: SeatView | None) -> None:
        self._step = step
        board = self.board
        board.view = view
        board.actionable = 0
        board.ko_cell = None if step is None or step.outcome is None else step.ko_cell
        self.scene.ctx.invalidate(board.card)

    # ----- drawing -------------------------------------------------------------------------------------
    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        scene = self.scene
        ctx = scene.ctx
        t, fonts = ctx.t, ctx.fonts
        canvas.fill(palette.BACKGROUND, area)
        title = t("replay.title")
        blit_text(canvas, fonts, title, fonts.fit_size(title, 22, W - 2 * 124, True), palette.INK, bold=True,
                  center=(W // 2, TITLE_Y))
        replay, step = scene.replay, scene.step
        if scene.problem is not None or replay is None or step is None:
            self._draw_message(canvas, scene.problem or "")
            return
        if scene.view == "full":
            caption, color = t("replay.seeing.full"), palette.INK_SOFT
        else:
            seat = int(scene.view)
            you = scene.replay is not None and scene.replay.names[seat] == "\x00you"
            caption = t("replay.seeing.you") if you else t("replay.seeing.seat", name=scene.name(seat))
            color = palette.ME_LIGHT
        blit_text(canvas, fonts, caption, fonts.fit_size(caption, 14, INNER, True), color, bold=True,
                  center=(W // 2, CAPTION_Y))
        self.board.draw(canvas, area, ctx.clock())
        if scene.view == "full":
            self._draw_other_mines(canvas, area, step)
        total = replay.last
        line = t("replay.start") if step.index == 0 else t("replay.step", n=step.index, total=total)
        line = f"{line} · {scene.turn_label()}"
        outcome = scene.outcome_text()
        if outcome is not None:
            line = f"{line} · {outcome}"
        blit_text(canvas, fonts, line, fonts.fit_size(line, 15, INNER, True),
                  palette.PRIMARY if outcome is not None else palette.INK, bold=True, center=(W // 2, STEP_Y))
        if step.index:
            event = scene.event_text()
            blit_text(canvas, fonts, event, fonts.fit_size(event, 15, INNER), palette.WARN if step.refused else palette.INK_SOFT,
                      center=(W // 2, EVENT_Y))
        self._draw_track(canvas, scene.index, total)

    def _draw_message(self, canvas: pygame.Surface, text: str) -> None:
        ctx = self.scene.ctx
        y = 200
        canvas.blit(shapes.circle(84, palette.CARD_RAISED), (W // 2 - 42, y - 42))
        icon = shapes.icon("warning", 46, palette.WARN)
        canvas.blit(icon, icon.get_rect(center=(W // 2, y)))
        h = paragraph_height(ctx.fonts, text, 17, INNER - 20)
        blit_paragraph(canvas, ctx.fonts, text, 17, palette.INK,
                       pygame.Rect(LEFT + 10, y + 64, INNER - 20, h + 4), align="center", max_lines=8)

    def _draw_other_mines(self, canvas: pygame.Surface, area: pygame.Rect, step: ReplayStep) -> None:
        """The full board: seat 1's mines over seat 0's view, in seat 1's colour (both at an overlap)."""
        view = step.views[0]
        hidden = step.mines[1] & ~view.revealed
        for cell in range(CELLS):
            if not hidden >> cell & 1 or (step.ko_cell == cell and step.outcome is not None):
                continue
            rect = self.board.cell_rect(cell)
            if not rect.colliderect(area):
                continue
            crowded = bool((view.my_mines | view.markers) >> cell & 1)
            size = 17 if crowded else 25
            mine = shapes.icon("mine", size, palette.OPP)
            where = (rect.left + size // 2 + 2, rect.top + size // 2 + 2) if crowded else rect.center
            canvas.blit(mine, mine.get_rect(center=where))

    def _draw_track(self, canvas: pygame.Surface, index: int, last: int) -> None:
        """The timeline: a bar, a tick at each turn's start, and the knob at the current action."""
        scene = self.scene
        track = self.TRACK
        canvas.blit(shapes.rounded(track.size, 4, palette.CARD_RAISED), track)
        done = pygame.Rect(track.left, track.top, max(8, self.knob_x(index, last) - track.left), track.height)
        canvas.blit(shapes.rounded(done.size, 4, palette.ME), done)
        replay = scene.replay
        if replay is not None and last:
            previous = replay.steps[0].turn
            for step in replay.steps[1:]:
                if step.turn != previous:
                    x = self.knob_x(step.index, last)
                    canvas.fill(palette.INK_FAINT, (x, track.top - 4, 1, 4))
                    canvas.fill(palette.INK_FAINT, (x, track.bottom, 1, 4))
                previous = step.turn
        knob = CELL // 2
        x = self.knob_x(index, last)
        canvas.blit(shapes.circle(knob, palette.PRIMARY), (x - knob // 2, track.centery - knob // 2))
