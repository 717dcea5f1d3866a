"""Everything the match screen draws, for CPU and online matches alike.

Each online part is drawn exactly when the controller offers its source (``Capabilities``): the
deadline pill (U6), the away / reconnecting marks and banner (O12), the final reveal and its
legend (O13), the in-screen result panel (E1, O14). A CPU match offers none, so it shows the
CPU's thinking dots, the result popup and the plain legend. No part asks what kind of match it is.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pygame

from mineduel.client.controller import BoardReveal
from mineduel.client.ui import palette, shapes
from mineduel.client.ui.text import blit_paragraph, blit_text
from mineduel.shared.rules.engine import Phase

if TYPE_CHECKING:
    from mineduel.client.scenes.game import GameScene

# Layout of the 390×844 canvas (U4): every button is at least 44 px tall.
HEADER = pygame.Rect(0, 0, 390, 60)
PLAYERS_Y, PLAYERS_H = 66, 58
PLAYERS = pygame.Rect(0, PLAYERS_Y - 4, 390, PLAYERS_H + 8)
STATUS = pygame.Rect(8, 132, 374, 88)
BOARD_TOP = 230
INFO_Y = 616
INFO = pygame.Rect(8, INFO_Y, 374, 34)
END_TURN = pygame.Rect(8, 656, 374, 56)
MODE_BAR = pygame.Rect(8, 726, 374, 84)
PANEL = pygame.Rect(8, BOARD_TOP - 2, 374, END_TURN.top - 8 - (BOARD_TOP - 2))
SHAKE_TIME = 0.35


class MatchPainter:
    """Draws the match screen of one :class:`GameScene` (reads it, never changes the match)."""

    def __init__(self, scene: GameScene) -> None:
        self.scene = scene
        self.ctx = scene.ctx

    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        scene = self.scene
        now = self.ctx.clock()
        canvas.fill(palette.BACKGROUND, area)
        if area.colliderect(HEADER):
            self.header(canvas)
        if area.colliderect(pygame.Rect(0, PLAYERS_Y, 390, PLAYERS_H)):
            self.players(canvas)
        if area.colliderect(STATUS.inflate(16, 4)):
            self.status(canvas, now)
        scene.board.draw(canvas, area, now)
        if area.colliderect(pygame.Rect(0, INFO_Y, 390, 32)):
            self.info(canvas)
        scene.widgets.draw(canvas, self.ctx.fonts, area)
        reveal = self._reveal()
        panel = scene.panel
        if reveal is not None and scene.ended is not None and not panel.open:
            self.reveal(canvas, area, reveal)
        if panel.open and area.colliderect(PANEL):
            panel.draw(canvas)

    def _reveal(self) -> BoardReveal | None:
        controller = self.scene.controller
        source = None if controller is None else controller.capabilities.reveal
        return None if source is None else source.reveal()

    # ----- header and players ------------------------------------------------------------------------
    def header(self, canvas: pygame.Surface) -> None:
        ctx = self.ctx
        scene = self.scene
        # The wordmark: a small mine badge and the title.
        canvas.blit(shapes.circle(32, palette.CARD_RAISED), (14, 15))
        canvas.blit(shapes.icon("mine", 22, palette.PRIMARY), (19, 20))
        title = blit_text(canvas, ctx.fonts, ctx.t("app.title"), 21, palette.INK, bold=True, midleft=(54, 31))
        view = scene.view()
        pills: list[tuple[str, palette.Color]] = []
        if view is not None:
            pills.append((ctx.t("status.turn", turn=view.turn) if view.turn else ctx.t("status.opening"), palette.INK))
        if scene.session.difficulty and view is not None:
            pills.append((ctx.t(f"difficulty.{scene.session.difficulty}"), palette.INK_SOFT))
        x = HEADER.right - (110 if scene.session.language_button else 60)  # room for the globe button
        for text, color in pills:
            size = 13
            w = ctx.fonts.width(text, size, True) + 20
            rect = pygame.Rect(x - w, 18, w, 26)
            if rect.left < title.right + 6:
                break  # no room beside the title (long words in some languages): drop the rest
            canvas.blit(shapes.rounded(rect.size, 13, palette.CARD_RAISED, 1, palette.CARD_BORDER), rect)
            blit_text(canvas, ctx.fonts, text, size, color, bold=True, center=rect.center)
            x = rect.left - 6

    def players(self, canvas: pygame.Surface) -> None:
        """Both player cards: badge, name, counts (my mines only to me: V2), whose turn it is."""
        ctx = self.ctx
        scene = self.scene
        view = scene.view()
        w = (374 - 10) // 2
        opponent_badge = "cpu" if scene.words.opponent_is_cpu() else "person"
        for i, (seat_is_me, name_key, color, badge) in enumerate(
            ((True, "status.you", palette.ME, "person"), (False, scene.words.opponent_key(), palette.OPP, opponent_badge))
        ):
            rect = pygame.Rect(8 + i * (w + 10), PLAYERS_Y, w, PLAYERS_H)
            active = view is not None and view.outcome is None and (view.to_move == view.seat) == seat_is_me
            fill = palette.mix(palette.CARD, color, 0.16) if active else palette.CARD
            canvas.blit(shapes.rounded(rect.size, 16, fill, 2 if active else 1, color if active else palette.CARD_BORDER), rect)
            badge_rect = pygame.Rect(rect.left + 10, rect.centery - 17, 34, 34)
            canvas.blit(shapes.circle(34, color), badge_rect)
            canvas.blit(shapes.icon(badge, 22, palette.ON_ACCENT), (badge_rect.x + 6, badge_rect.y + 6))
            blit_text(canvas, ctx.fonts, ctx.t(name_key), 16, palette.INK, bold=True, midleft=(rect.left + 52, rect.top + 19))
            if view is not None:
                # Counts: markers on the board (both), my mines (me only: V2).
                y = rect.top + 41
                x = rect.left + 52
                markers = view.my_markers if seat_is_me else view.opponent_markers
                flag = shapes.icon("flag" if seat_is_me else "flag_opponent", 18, palette.ME_LIGHT if seat_is_me else palette.OPP)
                canvas.blit(flag, (x, y - 9))
                r = blit_text(canvas, ctx.fonts, str(markers.bit_count()), 14, palette.INK_SOFT, bold=True, midleft=(x + 20, y))
                if seat_is_me:
                    x = r.right + 12
                    canvas.blit(shapes.icon("mine", 16, palette.ME_LIGHT), (x, y - 8))
                    blit_text(canvas, ctx.fonts, str(view.my_mines.bit_count()), 14, palette.INK_SOFT, bold=True,
                              midleft=(x + 19, y))
            if view is not None:
                self.player_extras(canvas, rect, badge_rect, seat_is_me, active, color)

    def player_extras(
        self, canvas: pygame.Surface, rect: pygame.Rect, badge: pygame.Rect, seat_is_me: bool, active: bool, color: palette.Color
    ) -> None:
        """With a deadline: the seconds left on the seat to move (U6) and presence marks (O12);
        without: the CPU's "thinking" dots and a dot on my card on my turn."""
        scene = self.scene
        controller = scene.controller
        if controller is None:
            return
        caps = controller.capabilities
        if caps.presence is not None:
            presence = caps.presence.presence()
            away = not seat_is_me and presence.opponent_away and scene.ended is None
            offline = seat_is_me and not presence.connected
            if away or offline:
                canvas.blit(shapes.circle(12, palette.WARN), (badge.right - 10, badge.top - 1))
        if caps.deadline is not None:
            seconds = caps.deadline.seconds_left()
            if active and seconds is not None:
                # U6: seconds left on the current deadline (the server's; display only).
                ctx = self.ctx
                secs = math.ceil(seconds)
                text = ctx.t("online.seconds", seconds=secs)
                size = ctx.fonts.fit_size(text, 15, 74, True)
                pill_w = max(44, ctx.fonts.width(text, size, True) + 14)
                pill = pygame.Rect(rect.right - 8 - pill_w, rect.bottom - 30, pill_w, 24)
                canvas.blit(shapes.rounded(pill.size, 12, palette.WARN if secs <= 5 else color), pill)
                blit_text(canvas, ctx.fonts, text, size, palette.ON_ACCENT, bold=True, center=pill.center)
            return
        if active and not seat_is_me and controller.opponent_to_move:
            # "Thinking" dots, stepping (not a smooth animation: three redraws a second).
            lit = scene.dots_phase if not scene.pauses else -1
            for k in range(3):
                c = color if k == lit else palette.mix(palette.CARD, color, 0.45)
                canvas.blit(shapes.circle(8, c), (rect.right - 40 + k * 11, rect.top + 15))
        if active and seat_is_me:
            canvas.blit(shapes.circle(8, color), (rect.right - 18, rect.top + 15))

    # ----- the status line and the line under the board ---------------------------------------------------
    def status(self, canvas: pygame.Surface, now: float) -> None:
        ctx = self.ctx
        scene = self.scene
        dx = 0
        if scene.shake_at is not None:
            t = (now - scene.shake_at) / SHAKE_TIME
            dx = round(math.sin(t * math.pi * 6) * 6 * (1 - t)) if t < 1 else 0
        rect = STATUS.move(dx, 0)
        view = scene.view()
        line = scene.words.event_line()
        refusal = line is not None and line[1]
        my_accent = view is None or view.to_move == view.seat or view.outcome is not None
        accent = palette.WARN if refusal else (palette.ME if my_accent else palette.OPP)
        canvas.blit(shapes.rounded(rect.size, 16, palette.CARD, 1, palette.CARD_BORDER), rect)
        canvas.blit(shapes.rounded((5, rect.height - 24), 3, accent), (rect.left + 10, rect.top + 12))
        inner = pygame.Rect(rect.left + 26, rect.top + 12, rect.width - 40, rect.height - 20)
        # A two-line instruction (long in some languages) steps down a size, so the line about
        # what just happened still fits below it: lines are counted from the height left.
        instruction = scene.words.instruction()
        wide = len(ctx.fonts.wrap(instruction, 17, inner.width, True)) > 1
        title_size, gap, sub_size = (15, 3, 13) if wide else (17, 6, 14)
        used = blit_paragraph(canvas, ctx.fonts, instruction, title_size, palette.INK, inner, bold=True, max_lines=2)
        if line is not None:
            text, is_refusal = line
            y = inner.top + used + gap
            x = inner.left
            step = ctx.fonts.line_height(sub_size) + 2
            lines_left = (inner.bottom - y + 2) // step
            if lines_left <= 0:
                return
            if is_refusal:
                canvas.blit(shapes.icon("warning", 16, palette.WARN), (x, y + 2))
                x += 22
            blit_paragraph(canvas, ctx.fonts, text, sub_size, palette.WARN if is_refusal else palette.INK_SOFT,
                           pygame.Rect(x, y, inner.right - x, inner.bottom - y), max_lines=lines_left)

    def info(self, canvas: pygame.Surface) -> None:
        """Under the board: the presence banner, else the reveal's legend, else whose cells are whose."""
        banner = self.scene.words.banner()
        if banner is not None:
            self.banner(canvas, *banner)
            return
        if self.scene.ended is not None and self._reveal() is not None:
            self.reveal_legend(canvas)
            return
        ctx = self.ctx
        scene = self.scene
        y = INFO_Y + 14
        x = 14
        # Legend: whose cells are whose (colour and notch), so colour is never the only cue.
        for key, kind in (("status.you", "me"), (scene.words.opponent_key(), "opp")):
            swatch = pygame.Rect(x, y - 8, 16, 16)
            canvas.blit(shapes.rounded(swatch.size, 4, palette.ME_CELL if kind == "me" else palette.OPP_CELL), swatch)
            if kind == "opp":
                notch = [(swatch.right - 7, swatch.top), (swatch.right - 1, swatch.top), (swatch.right - 1, swatch.top + 6)]
                pygame.draw.polygon(canvas, palette.OPP, notch)
            r = blit_text(canvas, ctx.fonts, ctx.t(key), 13, palette.INK_SOFT, bold=True, midleft=(swatch.right + 6, y))
            x = r.right + 14
        view = scene.view()
        if view is not None and scene.my_turn() and view.phase in (Phase.EXPLORE, Phase.PLANT, Phase.END_WAIT):
            text = ctx.t("status.flag_left" if view.quota_left else "status.flag_used")
            size = ctx.fonts.fit_size(text, 13, 382 - x - 24, True)
            icon = shapes.icon("flag", 18, palette.PRIMARY if view.quota_left else palette.INK_FAINT)
            ink = palette.INK if view.quota_left else palette.INK_FAINT
            r = blit_text(canvas, ctx.fonts, text, size, ink, bold=True, midright=(380, y))
            canvas.blit(icon, (r.left - 20, y - 9))

    def banner(self, canvas: pygame.Surface, text: str, color: palette.Color) -> None:
        ctx = self.ctx
        canvas.fill(palette.BACKGROUND, INFO.inflate(4, 4))
        canvas.blit(shapes.rounded(INFO.size, 12, color), INFO)
        canvas.blit(shapes.icon("warning", 18, palette.ON_ACCENT), (INFO.left + 10, INFO.centery - 9))
        size = ctx.fonts.fit_size(text, 14, INFO.width - 44, True)
        blit_text(canvas, ctx.fonts, text, size, palette.ON_ACCENT, bold=True, midleft=(INFO.left + 36, INFO.centery))

    # ----- O13: the final reveal ---------------------------------------------------------------------------
    def reveal_legend(self, canvas: pygame.Surface) -> None:
        ctx = self.ctx
        y = INFO_Y + 14
        x = 12
        items = (("mine", palette.OPP, "online.legend.opponent_mine"), ("overlap", palette.PRIMARY, "online.legend.overlap"),
                 ("check", palette.GOOD, "online.legend.right"), ("close", palette.WARN, "online.legend.wrong"))
        for icon, color, key in items:
            if icon == "overlap":
                canvas.blit(shapes.ring((18, 18), 5, color, 2), (x, y - 9))
            else:
                canvas.blit(shapes.icon(icon, 18, color), (x, y - 9))
            text = ctx.t(key)
            size = ctx.fonts.fit_size(text, 13, 62, True)
            r = blit_text(canvas, ctx.fonts, text, size, palette.INK_SOFT, bold=True, midleft=(x + 21, y))
            x = r.right + 10

    def reveal(self, canvas: pygame.Surface, area: pygame.Rect, reveal: BoardReveal) -> None:
        """O13 on the final board: the opponent's mines, overlaps, and every marker right or wrong."""
        scene = self.scene
        view = scene.view()
        if view is None:
            return
        board = scene.board
        clip = canvas.get_clip()
        canvas.set_clip(area.clip(clip) if clip else area)
        try:
            for cell in board.cells_in(area):
                b = 1 << cell
                rect = board.cell_rect(cell)
                if view.revealed & b or cell == reveal.ko_cell:
                    continue
                if reveal.opponent_mines & b:
                    marked = bool((reveal.my_markers | reveal.opponent_markers) & b)
                    size = 16 if marked or reveal.overlaps & b else 24
                    where = (rect.left + size // 2 + 3, rect.bottom - size // 2 - 4) if size == 16 else rect.center
                    mine = shapes.icon("mine", size, palette.OPP)
                    canvas.blit(mine, mine.get_rect(center=where))
                if reveal.overlaps & b:
                    canvas.blit(shapes.ring(rect.size, 7, palette.PRIMARY, 2), rect)
                if (reveal.right | reveal.wrong) & b:
                    good = bool(reveal.right & b)
                    badge = pygame.Rect(rect.right - 15, rect.top - 3, 17, 17)
                    canvas.blit(shapes.circle(17, palette.GOOD if good else palette.WARN), badge)
                    canvas.blit(shapes.icon("check" if good else "close", 13, palette.INK_DARK), (badge.x + 2, badge.y + 2))
        finally:
            canvas.set_clip(clip)
