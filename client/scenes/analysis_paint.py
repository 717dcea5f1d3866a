"""How the analysis screen (client/scenes/analysis.py) is drawn: the board as the seat saw it with a
heat map over it, the step bar, the two probabilities, the legend.

The board is the match screen's own :class:`~mineduel.client.ui.board.BoardView` (same geometry,
tiles, numbers, own mines and markers); each closed cell that is not the seat's own mine gets a
colour from green (no opponent mine possible) through amber to red (certainly one) and its
percentage. Colour is never the only carrier: every cell says its number, the chosen cell is ringed amber and
each safest cell carries a tick. Everything important stays in the top
692 canvas pixels, so a 320×568 window (width-fit) shows it without scrolling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pygame

from mineduel.client.ui import palette, shapes
from mineduel.client.ui.board import RADIUS, BoardView
from mineduel.client.ui.text import blit_paragraph, blit_text, paragraph_height
from mineduel.shared.rules.bitboard import CELLS

if TYPE_CHECKING:
    from mineduel.client.scenes.analysis import AnalysisScene, ExploreStep

W = 390
LEFT, INNER = 16, 358
TITLE_Y = 30
SUMMARY_Y = 74
CHIPS_Y = 88
CHIP_H, CHIP_GAP = 44, 8
BOARD_TOP = 138
STEP_Y = 520
STEP_H = 48
DETAIL_Y = 574
DETAIL_H = 46
LEGEND_Y = 626
NOTE_Y = 694


def heat(p: float) -> palette.Color:
    """Green at 0, amber at one quarter, red at 1 (the palette's GOOD, PRIMARY, DANGER); the square
    root spreads the small probabilities most explores face, so 5 % does not look like 0 %."""
    t = max(0.0, min(1.0, p)) ** 0.5
    if t <= 0.5:
        return palette.mix(palette.GOOD, palette.PRIMARY, t * 2)
    return palette.mix(palette.PRIMARY, palette.DANGER, (t - 0.5) * 2)


def percent(p: float) -> str:
    """A probability as a player reads it: a tenth of a percent below 10 %, whole percent above, and
    never "0%" or "100%" unless exact (the risk margin is 5 points, so 5.3 % must not read 5 %)."""
    if p <= 0:
        return "0%"
    if p >= 1:
        return "100%"
    if p < 0.001:
        return "<0.1%"
    if p > 0.995:
        return ">99%"
    if p < 0.0995:
        return f"{p * 100:.1f}%"
    return f"{round(p * 100)}%"


class AnalysisPainter:
    """Draws one :class:`AnalysisScene`; holds the layout its buttons use."""

    BACK = pygame.Rect(8, 8, 108, 44)
    PREV = pygame.Rect(LEFT, STEP_Y, 100, STEP_H)
    NEXT = pygame.Rect(W - LEFT - 100, STEP_Y, 100, STEP_H)

    def __init__(self, scene: AnalysisScene) -> None:
        self.scene = scene
        ctx = scene.ctx
        self.board = BoardView(ctx.fonts, ctx.invalidate, BOARD_TOP)
        self._step: ExploreStep | None = None

    @staticmethod
    def chip_rect(slot: int) -> pygame.Rect:
        width = (INNER - 3 * CHIP_GAP) // 4
        return pygame.Rect(LEFT + slot * (width + CHIP_GAP), CHIPS_Y, width, CHIP_H)

    def set_step(self, step: ExploreStep | None) -> None:
        self._step = step
        board = self.board
        board.view = None if step is None else step.view
        board.actionable = 0
        board.ko_cell = None

    # ----- drawing -------------------------------------------------------------------------------------
    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        scene = self.scene
        ctx = scene.ctx
        t, fonts = ctx.t, ctx.fonts
        canvas.fill(palette.BACKGROUND, area)
        title = t("analysis.title")
        blit_text(canvas, fonts, title, fonts.fit_size(title, 22, W - 2 * 124, True), palette.INK, bold=True,
                  center=(W // 2, TITLE_Y))
        if scene.problem is not None or scene.pending:
            self._draw_message(canvas, scene.problem or t("analysis.working"), scene.problem is not None)
            return
        analysis = scene.analysis
        assert analysis is not None
        steps = analysis.steps
        if not steps:
            self._draw_message(canvas, t("analysis.no_explores"), False)
            return
        risky = len(analysis.risky)
        summary = t("analysis.summary", risky=risky, total=len(steps))
        blit_text(canvas, fonts, summary, fonts.fit_size(summary, 18, INNER, True),
                  palette.WARN if risky else palette.GOOD, bold=True, center=(W // 2, SUMMARY_Y))
        if not risky:
            line = t("analysis.none_risky")
            blit_text(canvas, fonts, line, fonts.fit_size(line, 15, INNER), palette.INK_SOFT,
                      center=(W // 2, CHIPS_Y + CHIP_H // 2))
        self.board.draw(canvas, area, ctx.clock())
        step = scene.step
        assert step is not None
        self._draw_heat(canvas, area, step)
        self._draw_step_bar(canvas, step)
        self._draw_detail(canvas, step)
        self._draw_legend(canvas)
        note = t("analysis.threshold", margin=scene.margin_points)
        h = paragraph_height(fonts, note, 13, INNER)
        blit_paragraph(canvas, fonts, note, 13, palette.INK_FAINT, pygame.Rect(LEFT, NOTE_Y, INNER, h + 4), align="center")

    def _draw_message(self, canvas: pygame.Surface, text: str, problem: bool) -> None:
        ctx = self.scene.ctx
        y = 200
        if problem:
            canvas.blit(shapes.circle(84, palette.CARD_RAISED), (W // 2 - 42, y - 42))
            icon = shapes.icon("warning", 46, palette.WARN)
            canvas.blit(icon, icon.get_rect(center=(W // 2, y)))
        h = paragraph_height(ctx.fonts, text, 17, INNER - 20)
        blit_paragraph(canvas, ctx.fonts, text, 17, palette.INK if problem else palette.INK_SOFT,
                       pygame.Rect(LEFT + 10, y + 64, INNER - 20, h + 4), align="center")

    def _draw_heat(self, canvas: pygame.Surface, area: pygame.Rect, step: ExploreStep) -> None:
        """Each closed cell but the seat's own mines: its colour and percentage; then the two rings."""
        risk, view = step.risk, step.view
        fonts = self.scene.ctx.fonts
        closed = risk.probabilities.unrevealed & ~view.my_mines
        board = self.board
        for cell in range(CELLS):
            if not closed >> cell & 1:
                continue
            rect = board.cell_rect(cell)
            if not rect.colliderect(area):
                continue
            p = risk.probabilities.p(cell)
            color = heat(p)
            canvas.blit(shapes.rounded(rect.size, RADIUS, palette.mix(palette.TILE_IDLE, color, 0.78)), rect)
            if (view.my_markers | view.opponent_markers) >> cell & 1:
                mine = view.my_markers >> cell & 1
                flag = shapes.icon("flag" if mine else "flag_opponent", 16, palette.ME if mine else palette.OPP_DEEP)
                canvas.blit(flag, (rect.left + 2, rect.top + 1))
            text = percent(p)
            size = fonts.fit_size(text, 14, rect.width - 4, True)
            blit_text(canvas, fonts, text, size, palette.INK_DARK, bold=True, center=(rect.centerx, rect.centery + 2))
        check = shapes.icon("check", 14, palette.INK_DARK)
        for cell in range(CELLS):
            if risk.safest_cells >> cell & 1:  # a tick in the corner: many cells can tie for the safest
                rect = board.cell_rect(cell)
                canvas.blit(check, (rect.right - 15, rect.top + 1))
        ring = board.cell_rect(risk.cell).inflate(8, 8)
        canvas.blit(shapes.ring(ring.size, RADIUS + 4, palette.BACKGROUND_DEEP, 5), ring)
        canvas.blit(shapes.ring(ring.size, RADIUS + 4, palette.FOCUS, 3), ring)

    def _draw_step_bar(self, canvas: pygame.Surface, step: ExploreStep) -> None:
        scene = self.scene
        t, fonts = scene.ctx.t, scene.ctx.fonts
        mid = pygame.Rect(self.PREV.right + 6, STEP_Y, self.NEXT.left - self.PREV.right - 12, STEP_H)
        line = t("analysis.step", turn=step.risk.turn, n=scene.index + 1, total=len(scene.steps))
        blit_text(canvas, fonts, line, fonts.fit_size(line, 15, mid.width, True), palette.INK, bold=True,
                  center=(mid.centerx, mid.top + 14))
        risk = step.risk
        if risk.ko:
            verdict, color = t("analysis.verdict.ko"), palette.DANGER
        elif risk.risky:
            verdict, color = t("analysis.verdict.risky"), palette.WARN
        else:
            verdict, color = t("analysis.verdict.safe"), palette.GOOD
        blit_text(canvas, fonts, verdict, fonts.fit_size(verdict, 14, mid.width, True), color, bold=True,
                  center=(mid.centerx, mid.top + 35))

    def _draw_detail(self, canvas: pygame.Surface, step: ExploreStep) -> None:
        t, fonts = self.scene.ctx.t, self.scene.ctx.fonts
        risk = step.risk
        half = (INNER - 10) // 2
        boxes = ((t("analysis.chosen"), risk.chosen), (t("analysis.safest"), risk.safest))
        for i, (label, p) in enumerate(boxes):
            rect = pygame.Rect(LEFT + i * (half + 10), DETAIL_Y, half if i == 0 else INNER - half - 10, DETAIL_H)
            canvas.blit(shapes.rounded(rect.size, 12, palette.CARD_RAISED), rect)
            swatch = pygame.Rect(rect.left + 10, rect.centery - 13, 26, 26)
            canvas.blit(shapes.rounded(swatch.size, 6, palette.mix(palette.TILE_IDLE, heat(p), 0.78)), swatch)
            if i == 0:
                canvas.blit(shapes.ring(swatch.size, 6, palette.FOCUS, 3), swatch)
            else:
                canvas.blit(shapes.icon("check", 14, palette.INK_DARK), (swatch.right - 15, swatch.top + 1))
            x = swatch.right + 10
            avail = rect.right - 8 - x
            blit_text(canvas, fonts, label, fonts.fit_size(label, 12, avail), palette.INK_SOFT,
                      midleft=(x, rect.top + 13))
            blit_text(canvas, fonts, percent(p), 20, palette.INK, bold=True, midleft=(x, rect.top + 31))

    def _draw_legend(self, canvas: pygame.Surface) -> None:
        t, fonts = self.scene.ctx.t, self.scene.ctx.fonts
        label = t("analysis.legend.scale")
        blit_text(canvas, fonts, label, fonts.fit_size(label, 12, INNER - 90), palette.INK_SOFT,
                  center=(W // 2, LEGEND_Y + 6))
        bar = pygame.Rect(LEFT + 42, LEGEND_Y + 16, INNER - 84, 10)
        for x in range(bar.width):
            canvas.fill(palette.mix(palette.TILE_IDLE, heat(x / (bar.width - 1)), 0.78), (bar.left + x, bar.top, 1, bar.height))
        blit_text(canvas, fonts, "0%", 12, palette.INK_SOFT, bold=True, midright=(bar.left - 6, bar.centery))
        blit_text(canvas, fonts, "100%", 12, palette.INK_SOFT, bold=True, midleft=(bar.right + 6, bar.centery))
        items = ((t("analysis.legend.chosen"), "chosen"), (t("analysis.legend.safest"), "safest"),
                 (t("analysis.legend.mine"), "mine"))
        third = INNER // 3
        y = LEGEND_Y + 44
        for i, (text, kind) in enumerate(items):
            x = LEFT + i * third
            sample = pygame.Rect(x, y - 10, 20, 20)
            if kind == "mine":
                canvas.blit(shapes.icon("mine", 20, palette.ME_LIGHT), sample)
            elif kind == "chosen":
                canvas.blit(shapes.ring(sample.size, 5, palette.FOCUS, 3), sample)
            else:
                canvas.blit(shapes.rounded(sample.size, 5, palette.mix(palette.TILE_IDLE, heat(0.0), 0.78)), sample)
                canvas.blit(shapes.icon("check", 14, palette.INK_DARK), (sample.right - 15, sample.top + 1))
            avail = third - 28
            blit_text(canvas, fonts, text, fonts.fit_size(text, 13, avail), palette.INK_SOFT, midleft=(x + 26, y))
