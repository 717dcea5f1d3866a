"""How the spectator screen (client/scenes/spectate.py) is drawn: the match screen's layout and
board (``match_paint``'s rectangles, :class:`BoardView`, ``draw_reveal``), told for a spectator.

Seat 0 takes the blue card, cells and flags, seat 1 the pink ones with the notch (as the board
spells them, ``m`` / ``o``); the reveal at the end draws seat 0's mines in blue (the view's own
mine layer, which before the end is empty) and seat 1's in pink, overlaps ringed, every marker
right or wrong. Where the match screen has End turn and the mode bar, this one has Leave and a card
saying what is watched, how many watch, and whether the view is live.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pygame

from mineduel.client.scenes.match_paint import (
    BOARD_TOP,
    END_TURN,
    HEADER,
    INFO,
    INFO_Y,
    MODE_BAR,
    PLAYERS_H,
    PLAYERS_Y,
    STATUS,
    draw_reveal,
)
from mineduel.client.scenes.match_words import round_of
from mineduel.client.spectate_client import Watch, public_view
from mineduel.client.ui import palette, shapes
from mineduel.client.ui.board import BoardView
from mineduel.client.ui.text import blit_paragraph, blit_text, paragraph_height

if TYPE_CHECKING:
    from mineduel.client.scenes.spectate import SpectateScene

W = 390
SEAT_COLORS = (palette.ME, palette.OPP)
SEAT_LIGHT = (palette.ME_LIGHT, palette.OPP)
PROBLEM = pygame.Rect(20, BOARD_TOP + 70, 350, 230)


class SpectatePainter:
    """Draws one :class:`SpectateScene`; holds the layout its buttons use."""

    LEAVE = END_TURN.copy()
    LANGUAGE = pygame.Rect(HEADER.right - 54, 8, 46, 46)
    TICKING = (pygame.Rect(0, PLAYERS_Y - 4, 390, PLAYERS_H + 8), INFO.inflate(8, 8), MODE_BAR.inflate(8, 8))
    WORDS = (HEADER, *TICKING, STATUS.inflate(16, 4))  # everything but the board and Leave

    def __init__(self, scene: SpectateScene) -> None:
        self.scene = scene
        self.ctx = scene.ctx
        self.board = BoardView(scene.ctx.fonts, scene.ctx.invalidate, BOARD_TOP)

    def problem_card(self) -> pygame.Rect:
        """The card over the board when watching stopped, as tall as its words (and Try again)."""
        problem = self.scene.problem()
        body = "" if problem is None else self.ctx.t(problem[0])
        body_h = paragraph_height(self.ctx.fonts, body, 15, PROBLEM.width - 48)
        height = 104 + min(body_h, 4 * self.ctx.fonts.line_height(15) + 8) + 24 + (70 if problem and problem[1] else 0)
        card = pygame.Rect(PROBLEM.left, 0, PROBLEM.width, height)
        card.centery = self.board.card.centery
        return card

    def retry_rect(self) -> pygame.Rect:
        card = self.problem_card()
        return pygame.Rect(card.left + 40, card.bottom - 20 - 50, card.width - 80, 50)

    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        canvas.fill(palette.BACKGROUND, area)
        if area.colliderect(HEADER):
            self.header(canvas)
        if area.colliderect(self.TICKING[0]):
            self.players(canvas)
        if area.colliderect(STATUS.inflate(16, 4)):
            self.status(canvas)
        self.board.draw(canvas, area, self.ctx.clock())
        w = self.scene.watcher
        view = None if w.state is None else public_view(w.state)
        if w.reveal is not None and view is not None:
            draw_reveal(canvas, area, self.board, view, w.reveal)
        if w.state is None or w.state.board is None:
            self.board_message(canvas)
        if area.colliderect(self.TICKING[1]):
            self.info(canvas)
        if area.colliderect(END_TURN.union(MODE_BAR)):
            self.footer(canvas)
        problem = self.scene.problem()
        if problem is not None:
            self.problem(canvas, *problem)

    # ----- header and cards ------------------------------------------------------------------------------
    def header(self, canvas: pygame.Surface) -> None:
        ctx, fonts = self.ctx, self.ctx.fonts
        w = self.scene.watcher
        canvas.blit(shapes.circle(32, palette.CARD_RAISED), (14, 15))
        canvas.blit(shapes.icon("mine", 22, palette.PRIMARY), (19, 20))
        title = ctx.t("app.title")
        right = HEADER.right - (64 if not self.scene.attract else 12)  # the language button
        pills: list[tuple[str, palette.Color, bool]] = []
        state = w.state
        if state is not None and state.board is not None:
            turn = ctx.t("status.opening") if not state.turn else ctx.t("match.round", round=round_of(state.turn))
            pills.append((turn, palette.INK, False))
        live = w.live
        pills.append((ctx.t("watch.live" if live else "watch.not_live"), palette.ON_ACCENT if live else palette.INK_SOFT, live))
        title_size = 21
        for title_size, size in ((21, 13), (19, 12), (17, 11)):
            need = sum(fonts.width(text, size, True) + 22 + (14 if dot else 0) + 6 for text, _, dot in pills)
            if 54 + fonts.width(title, title_size, True) + 10 + need <= right:
                break
        blit_text(canvas, fonts, title, title_size, palette.INK, bold=True, midleft=(54, 31))
        x = right
        for text, color, dot in reversed(pills):
            width = fonts.width(text, size, True) + 22 + (14 if dot else 0)
            rect = pygame.Rect(x - width, 18, width, 26)
            fill = palette.DANGER if dot else palette.CARD_RAISED
            canvas.blit(shapes.rounded(rect.size, 13, fill, 0 if dot else 1, palette.CARD_BORDER), rect)
            if dot:
                canvas.blit(shapes.circle(8, palette.ON_ACCENT), (rect.left + 10, rect.centery - 4))
            blit_text(canvas, fonts, text, size, color, bold=True, center=(rect.centerx + (7 if dot else 0), rect.centery))
            x = rect.left - 6

    def players(self, canvas: pygame.Surface) -> None:
        """Both cards: seat 0 blue, seat 1 pink; the name, the flags (public), the deadline on the seat
        to move (U6), and an away mark with the grace left (O12)."""
        ctx, fonts = self.ctx, self.ctx.fonts
        scene = self.scene
        w = scene.watcher
        state = w.state
        view = None if state is None else public_view(state)
        width = (374 - 10) // 2
        for seat in (0, 1):
            color = SEAT_COLORS[seat]
            rect = pygame.Rect(8 + seat * (width + 10), PLAYERS_Y, width, PLAYERS_H)
            playing = state is not None and state.status == "playing"
            active = playing and state is not None and state.to_move == seat
            fill = palette.mix(palette.CARD, color, 0.16) if active else palette.CARD
            canvas.blit(shapes.rounded(rect.size, 16, fill, 2 if active else 1, color if active else palette.CARD_BORDER), rect)
            badge = pygame.Rect(rect.left + 9, rect.top + 5, 26, 26)
            canvas.blit(shapes.circle(26, color), badge)
            canvas.blit(shapes.icon("person", 18, palette.ON_ACCENT), (badge.x + 4, badge.y + 4))
            present = state is not None and seat < len(state.players)
            name = scene.name(seat) if present else ctx.t("watch.nobody")
            pill_room = 58 if active and w.deadline_left() is not None else 4
            blit_text(canvas, fonts, name, fonts.fit_size(name, 16, rect.width - 44 - pill_room, True),
                      palette.INK if present else palette.INK_FAINT, bold=True, midleft=(rect.left + 42, badge.centery))
            y = rect.top + 43
            away = present and state is not None and playing and not state.players[seat].connected
            if away:
                canvas.blit(shapes.circle(12, palette.WARN), (badge.right - 9, badge.top - 2))
                left = w.grace_left(seat)
                text = ctx.t("watch.card.away") if left is None else ctx.t("watch.card.away_for", seconds=math.ceil(left))
                blit_text(canvas, fonts, text, fonts.fit_size(text, 13, rect.width - 20, True), palette.WARN, bold=True,
                          midleft=(rect.left + 10, y))
            elif view is not None:
                markers = view.my_markers if seat == 0 else view.opponent_markers
                icon = "flag" if seat == 0 else "flag_opponent"
                canvas.blit(shapes.icon(icon, 18, SEAT_LIGHT[seat]), (rect.left + 10, y - 9))
                r = blit_text(canvas, fonts, ctx.t("match.card.flags"), 13, palette.INK_SOFT, midleft=(rect.left + 30, y + 1))
                blit_text(canvas, fonts, str(markers.bit_count()), 16, palette.INK, bold=True, midleft=(r.right + 4, y))
            if active:
                self.deadline_pill(canvas, rect, color)

    def deadline_pill(self, canvas: pygame.Surface, card: pygame.Rect, color: palette.Color) -> None:
        """U6: the seconds left on the turn's deadline (the server's; display only), warning at 5."""
        ctx = self.ctx
        seconds = self.scene.watcher.deadline_left()
        if seconds is None:
            return
        secs = math.ceil(seconds)
        text = ctx.t("online.seconds", seconds=secs)
        size = ctx.fonts.fit_size(text, 15, 74, True)
        pill_w = max(44, ctx.fonts.width(text, size, True) + 14)
        pill = pygame.Rect(card.right - 7 - pill_w, card.top + 5, pill_w, 26)
        canvas.blit(shapes.rounded(pill.size, 13, palette.WARN if secs <= 5 else color), pill)
        blit_text(canvas, ctx.fonts, text, size, palette.ON_ACCENT, bold=True, center=pill.center)

    # ----- status, info and footer ---------------------------------------------------------------------------
    def status(self, canvas: pygame.Surface) -> None:
        fonts = self.ctx.fonts
        scene = self.scene
        state = scene.watcher.state
        rect = STATUS
        if state is not None and state.result is not None:
            accent = palette.PRIMARY
        elif state is not None and state.to_move in (0, 1) and state.status == "playing":
            accent = SEAT_COLORS[state.to_move or 0]
        else:
            accent = palette.INK_FAINT
        canvas.blit(shapes.rounded(rect.size, 16, palette.CARD, 1, palette.CARD_BORDER), rect)
        canvas.blit(shapes.rounded((5, rect.height - 24), 3, accent), (rect.left + 10, rect.top + 12))
        inner = pygame.Rect(rect.left + 26, rect.top + 12, rect.width - 40, rect.height - 20)
        title = scene.title()
        wide = len(fonts.wrap(title, 17, inner.width, True)) > 1
        title_size, gap, sub_size = (15, 3, 13) if wide else (17, 6, 14)
        used = blit_paragraph(canvas, fonts, title, title_size, palette.INK, inner, bold=True, max_lines=2)
        # After the end the result's reason (and score) stays; before it, what just happened.
        text = scene.result_detail() if state is not None and state.result is not None else scene.event_text()
        if text is None:
            return
        y = inner.top + used + gap
        step = fonts.line_height(sub_size) + 2
        lines_left = (inner.bottom - y + 2) // step
        x = inner.left
        actor = scene.events[-1].seat if scene.events and (state is None or state.result is None) else None
        if actor in (0, 1) and scene.watcher.status == Watch.WATCHING:  # whose move it was, in its seat's colour
            dot = fonts.line_height(sub_size) // 2
            canvas.blit(shapes.circle(8, SEAT_LIGHT[actor or 0]), (x, y + dot - 4))
            x += 14
        if lines_left > 0:
            blit_paragraph(canvas, fonts, text, sub_size, palette.INK_SOFT,
                           pygame.Rect(x, y, inner.right - x, inner.bottom - y),
                           max_lines=lines_left)

    def board_message(self, canvas: pygame.Surface) -> None:
        """No board yet (waiting for the first match, or connecting): say so on the empty board."""
        ctx = self.ctx
        scene = self.scene
        if scene.problem() is not None:
            return
        w = scene.watcher
        key = "watch.board.connecting" if w.state is None else "watch.board.waiting"
        text = ctx.t(key)
        card = self.board.card
        box = pygame.Rect(card.left + 40, card.centery - 46, card.width - 80, 92)
        canvas.blit(shapes.rounded(box.size, 16, palette.CARD, 1, palette.CARD_BORDER), box)
        icon = shapes.icon("eye", 30, palette.ME_LIGHT)
        canvas.blit(icon, icon.get_rect(center=(box.centerx, box.top + 28)))
        blit_paragraph(canvas, ctx.fonts, text, 15, palette.INK, pygame.Rect(box.left + 12, box.top + 48, box.width - 24, 40),
                       bold=True, align="center", max_lines=2)

    def info(self, canvas: pygame.Surface) -> None:
        """Under the board: a player away, else the reveal's legend, else whose colour is whose."""
        ctx, fonts = self.ctx, self.ctx.fonts
        scene = self.scene
        banner = scene.banner()
        if banner is not None:
            canvas.blit(shapes.rounded(INFO.size, 12, palette.WARN), INFO)
            canvas.blit(shapes.icon("warning", 18, palette.ON_ACCENT), (INFO.left + 10, INFO.centery - 9))
            size = fonts.fit_size(banner, 14, INFO.width - 44, True)
            blit_text(canvas, fonts, banner, size, palette.ON_ACCENT, bold=True, midleft=(INFO.left + 36, INFO.centery))
            return
        y = INFO_Y + 14
        if scene.watcher.reveal is not None:
            self.reveal_legend(canvas, y)
            return
        x = 14
        for seat in (0, 1):
            swatch = pygame.Rect(x, y - 8, 16, 16)
            canvas.blit(shapes.rounded(swatch.size, 4, palette.ME_CELL if seat == 0 else palette.OPP_CELL), swatch)
            if seat == 1:
                notch = [(swatch.right - 7, swatch.top), (swatch.right - 1, swatch.top), (swatch.right - 1, swatch.top + 6)]
                pygame.draw.polygon(canvas, palette.OPP, notch)
            name = scene.name(seat)
            size = fonts.fit_size(name, 13, 120, True)
            r = blit_text(canvas, fonts, name, size, palette.INK_SOFT, bold=True, midleft=(swatch.right + 6, y))
            x = r.right + 14
        state = scene.watcher.state
        if state is not None and scene.watcher.error != "watch.closed_off":  # sent away: nobody watches now (issue 19)
            text = ctx.t("watch.spectators", count=state.spectators)
            size = fonts.fit_size(text, 13, 380 - x - 24, True)
            r = blit_text(canvas, fonts, text, size, palette.INK_SOFT, bold=True, midright=(380, y))
            eye = shapes.icon("eye", 18, palette.INK_SOFT)
            canvas.blit(eye, (r.left - 22, y - 9))

    def reveal_legend(self, canvas: pygame.Surface, y: int) -> None:
        """O13's legend: each seat's mines by name, overlaps, markers right and wrong."""
        ctx, fonts = self.ctx, self.ctx.fonts
        scene = self.scene
        items = [("mine", palette.ME_LIGHT, scene.name(0), 64), ("mine", palette.OPP, scene.name(1), 64),
                 ("overlap", palette.PRIMARY, ctx.t("online.legend.overlap"), 56),
                 ("check", palette.GOOD, ctx.t("online.legend.right"), 44),
                 ("close", palette.WARN, ctx.t("online.legend.wrong"), 44)]
        x = 10
        for icon, color, text, room in items:
            if icon == "overlap":
                canvas.blit(shapes.ring((18, 18), 5, color, 2), (x, y - 9))
            else:
                canvas.blit(shapes.icon(icon, 18, color), (x, y - 9))
            shown, base = text, text
            size = fonts.fit_size(shown, 12, room, True)
            while fonts.width(shown, size, True) > room and len(base) > 1:
                base = base[:-1]
                shown = base.rstrip() + "..."
            r = blit_text(canvas, fonts, shown, size, palette.INK_SOFT, bold=True, midleft=(x + 20, y))
            x = r.right + 8

    def footer(self, canvas: pygame.Surface) -> None:
        """Under Leave: the room and match watched, how many watch, and whether this is live."""
        ctx, fonts = self.ctx, self.ctx.fonts
        scene = self.scene
        w = scene.watcher
        rect = MODE_BAR
        state = w.state
        room = w.room or ""
        if scene.attract:
            # Where Leave and this card are: the invitation to play (as on the calm card), then what is shown.
            prompt = pygame.Rect(END_TURN.left + 8, END_TURN.top + 4, END_TURN.width - 16, 64)
            top = ctx.t("attract.touch")
            canvas.blit(shapes.rounded(prompt.size, 32, palette.PRIMARY), prompt)
            blit_text(canvas, fonts, top, fonts.fit_size(top, 20, prompt.width - 40, True), palette.INK_DARK, bold=True,
                      center=prompt.center)
            sub = ctx.t("attract.watching", room=room) if state is None or state.number <= 0 else ctx.t(
                "attract.watching_match", room=room, number=state.number)
            size = fonts.fit_size(sub, 15, rect.width - 60)
            x0 = rect.centerx - (fonts.width(sub, size) + 26) // 2
            canvas.blit(shapes.icon("eye", 20, palette.ME_LIGHT), (x0, prompt.bottom + 22))
            blit_text(canvas, fonts, sub, size, palette.INK_SOFT, midleft=(x0 + 26, prompt.bottom + 32))
            return
        canvas.blit(shapes.rounded(rect.size, 16, palette.PANEL, 1, palette.CARD_BORDER), rect)
        canvas.blit(shapes.icon("eye", 26, palette.ME_LIGHT), (rect.left + 14, rect.top + 14))
        head = ctx.t("watch.footer.room", room=room) if state is None or state.number <= 0 else ctx.t(
            "watch.footer.match", room=room, number=state.number)
        blit_text(canvas, fonts, head, fonts.fit_size(head, 16, rect.width - 70, True), palette.INK, bold=True,
                  midleft=(rect.left + 50, rect.top + 27))
        if w.moving and w.status in (Watch.RECONNECTING, Watch.CONNECTING):  # issue 21: another node
            sub, color = ctx.t("cluster.moving"), palette.INK_SOFT
        elif w.status == Watch.RECONNECTING:
            left = w.retry_in()
            sub = ctx.t("watch.reconnecting") if not left else ctx.t("watch.reconnecting_in", seconds=math.ceil(left))
            color = palette.WARN
        elif w.status == Watch.CONNECTING:
            sub, color = ctx.t("watch.connecting"), palette.INK_SOFT
        elif w.status == Watch.WATCHING:
            sub, color = ctx.t("watch.footer.note"), palette.INK_SOFT
        else:
            sub, color = ctx.t("watch.footer.stopped"), palette.INK_FAINT
        blit_paragraph(canvas, fonts, sub, 13, color, pygame.Rect(rect.left + 50, rect.top + 44, rect.width - 64, 36),
                       max_lines=2)

    def problem(self, canvas: pygame.Surface, key: str, retry: bool) -> None:
        """Watching stopped (room closed, refused, connection failed): a card over the board saying why."""
        ctx, fonts = self.ctx, self.ctx.fonts
        card = self.problem_card()
        board = self.board.card
        canvas.blit(shapes.rounded(board.size, 18, (*palette.BACKGROUND_DEEP, 150)), board)  # the last view, dimmed
        canvas.blit(shapes.shadow(card.size, 20, palette.SHADOW, 60, 14), (card.x - 14, card.y - 8))
        canvas.blit(shapes.rounded(card.size, 20, palette.CARD, 1, palette.CARD_BORDER), card)
        closed = key in ("watch.room_closed", "watch.closed_off")
        icon = shapes.icon("eye" if closed else "warning", 40, palette.INK_SOFT if closed else palette.WARN)
        canvas.blit(icon, icon.get_rect(center=(card.centerx, card.top + 40)))
        title = ctx.t("watch.stopped")
        blit_text(canvas, fonts, title, fonts.fit_size(title, 20, card.width - 40, True), palette.INK, bold=True,
                  center=(card.centerx, card.top + 82))
        body = ctx.t(key)
        bottom = self.retry_rect().top - 8 if retry else card.bottom - 16
        height = min(bottom - (card.top + 104), paragraph_height(fonts, body, 15, card.width - 48) + 4)
        blit_paragraph(canvas, fonts, body, 15, palette.INK_SOFT,
                       pygame.Rect(card.left + 24, card.top + 104, card.width - 48, height),
                       align="center", max_lines=4)
