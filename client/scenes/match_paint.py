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
from mineduel.client.scenes.rating_words import rating_text
from mineduel.client.ui import palette, shapes
from mineduel.client.ui.board import BoardView
from mineduel.client.ui.text import blit_paragraph, blit_text
from mineduel.shared.rules.engine import Phase
from mineduel.shared.rules.views import SeatView

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
WATCH_ROOM = "       "  # the spectators' pill keeps this much room for its eye before the number (issue 19)


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
        if reveal is not None and scene.flow.reveal_shown() and not panel.open:
            self.reveal(canvas, area, reveal)
        if panel.open and area.colliderect(PANEL):
            panel.draw(canvas)

    def _reveal(self) -> BoardReveal | None:
        """O13 as the match offers it (``None`` before the end: V3/V4)."""
        controller = self.scene.controller
        source = None if controller is None else controller.capabilities.reveal
        return None if source is None else source.reveal()

    # ----- header and players ------------------------------------------------------------------------
    def header(self, canvas: pygame.Surface) -> None:
        fonts = self.ctx.fonts
        title_text, title_size, pills = self.header_layout()
        # The wordmark: a small mine badge and the title.
        canvas.blit(shapes.circle(32, palette.CARD_RAISED), (14, 15))
        canvas.blit(shapes.icon("mine", 22, palette.PRIMARY), (19, 20))
        blit_text(canvas, fonts, title_text, title_size, palette.INK, bold=True, midleft=(54, 31))
        for text, color, size, rect in pills:
            canvas.blit(shapes.rounded(rect.size, 13, palette.CARD_RAISED, 1, palette.CARD_BORDER), rect)
            blit_text(canvas, fonts, text, size, color, bold=True, center=rect.center)
            if text.startswith(WATCH_ROOM):  # the spectators' pill: the eye in the room its spaces left
                eye = shapes.icon("eye", 14, color)
                canvas.blit(eye, eye.get_rect(midleft=(rect.centerx - fonts.width(text, size, True) // 2, rect.centery)))

    def header_layout(self) -> tuple[str, int, list[tuple[str, palette.Color, int, pygame.Rect]]]:
        """The title's text and size, and each pill (the round, the difficulty) with its size and place."""
        ctx = self.ctx
        scene = self.scene
        fonts = ctx.fonts
        view = scene.view()
        pills: list[tuple[str, palette.Color]] = []
        if view is not None:
            pills.append((scene.words.turn_pill(view), palette.INK))
        if scene.session.difficulty and view is not None:
            pills.append((ctx.t(f"difficulty.{scene.session.difficulty}"), palette.INK_SOFT))
        watching = self.spectators()
        if watching:  # issue 19: the players see how many watch: an eye and the number, first to the right
            pills.insert(0, (WATCH_ROOM + str(watching), palette.ME_LIGHT))
        right = HEADER.right - (110 if scene.session.language_button else 60)  # room for the globe button
        # Measure first: the pills keep their words (a long difficulty name in some languages) by
        # stepping the pills' and then the title's size down, never by dropping a pill.
        title_text = ctx.t("app.title")
        title_size, size, pad = 21, 13, 20
        for title_size, size, pad in ((21, 13, 20), (21, 12, 16), (19, 12, 14), (18, 11, 12), (16, 11, 10)):
            need = sum(fonts.width(text, size, True) + pad + 6 for text, _ in pills)
            if 54 + fonts.width(title_text, title_size, True) + 6 + need <= right:
                break
        title_right = 54 + fonts.width(title_text, title_size, True)
        placed: list[tuple[str, palette.Color, int, pygame.Rect]] = []
        x = right
        for text, color in pills:
            w = fonts.width(text, size, True) + pad
            rect = pygame.Rect(x - w, 18, w, 26)
            if rect.left < title_right + 4:
                break  # still no room (no catalog text comes near: a test measures them all)
            placed.append((text, color, size, rect))
            x = rect.left - 6
        return title_text, title_size, placed

    def spectators(self) -> int:
        """How many watch this match (online: the room's count, PROTOCOL.md §16; 0 without presence)."""
        controller = self.scene.controller
        source = None if controller is None else controller.capabilities.presence
        return 0 if source is None else source.presence().spectators

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
            # First row: badge and name (and, on the right, the seconds pill or the CPU's dots).
            badge_rect = pygame.Rect(rect.left + 9, rect.top + 5, 26, 26)
            canvas.blit(shapes.circle(26, color), badge_rect)
            canvas.blit(shapes.icon(badge, 18, palette.ON_ACCENT), (badge_rect.x + 4, badge_rect.y + 4))
            name = self.card_name(seat_is_me, name_key)
            blit_text(canvas, ctx.fonts, name, ctx.fonts.fit_size(name, 16, rect.width - 44 - 62, True), palette.INK,
                      bold=True, midleft=(rect.left + 42, badge_rect.centery))
            if view is not None:
                self.counters(canvas, rect, view, seat_is_me)
            if view is not None:
                self.player_extras(canvas, rect, badge_rect, seat_is_me, active, color)

    def card_name(self, seat_is_me: bool, name_key: str) -> str:
        """The card's title: "You", the CPU's label, or (online) the name the opponent chose."""
        if not seat_is_me:
            given = getattr(self.scene.controller, "opponent_name", "")
            if isinstance(given, str) and given:
                return given
        return self.ctx.t(name_key)

    def counters(self, canvas: pygame.Surface, rect: pygame.Rect, view: SeatView, seat_is_me: bool) -> None:
        """Second row: labelled counts — my mines planted (me only: V2) and the flags on the board."""
        fonts = self.ctx.fonts
        y = rect.top + 43
        items = self.counter_items(view, seat_is_me)
        rating = self.card_rating(seat_is_me)  # issue 20: a rated match's rating, right of the counts
        reserve = 0 if rating is None else fonts.width(rating, 13, True) + 8
        number_size, label_size, gap, used = self.counter_sizes(items, rect.width - 20 - reserve)
        if used > rect.width - 20 - reserve:  # a rated card too narrow for the labels: icons and counts
            items = [(icon, color, number, "") for icon, color, number, _label in items]
            number_size, label_size, gap, used = self.counter_sizes(items, rect.width - 20 - reserve)
        if rating is not None:
            blit_text(canvas, fonts, rating, 13, palette.PRIMARY, bold=True, midright=(rect.right - 10, y))
        x = rect.left + 10
        for icon, color, number, label in items:  # icon, label, number: "Mines 3" (no plural to agree)
            canvas.blit(shapes.icon(icon, 18, color), (x, y - 9))
            r = blit_text(canvas, fonts, label, label_size, palette.INK_SOFT, midleft=(x + 20, y + 1))
            r = blit_text(canvas, fonts, str(number), number_size, palette.INK, bold=True, midleft=(r.right + 4, y))
            x = r.right + gap

    def card_rating(self, seat_is_me: bool) -> str | None:
        """``1523`` / ``1500?`` on a rated match's card (client/scenes/rating_words.py), else ``None``."""
        controller = self.scene.controller
        source = None if controller is None else controller.capabilities.rating
        if source is None:
            return None
        ratings = source.ratings()
        seat = ratings.me if seat_is_me else ratings.opponent
        return None if seat is None else rating_text(seat.value, seat.provisional)

    def counter_items(self, view: SeatView, seat_is_me: bool) -> list[tuple[str, palette.Color, int, str]]:
        """(icon, colour, count, label) of one card: my mines (to me only, V2), then the flags."""
        t = self.ctx.t
        items: list[tuple[str, palette.Color, int, str]] = []
        if seat_is_me:
            items.append(("mine", palette.ME_LIGHT, view.my_mines.bit_count(), t("match.card.mines")))
        markers = view.my_markers if seat_is_me else view.opponent_markers
        items.append(("flag" if seat_is_me else "flag_opponent", palette.ME_LIGHT if seat_is_me else palette.OPP,
                      markers.bit_count(), t("match.card.flags")))
        return items

    def counter_sizes(self, items: list[tuple[str, palette.Color, int, str]], avail: int) -> tuple[int, int, int, int]:
        """(number size, label size, gap, width used): the largest readable sizes that fit ``avail``."""
        fonts = self.ctx.fonts
        need = 0
        for number_size, label_size, gap in ((16, 13, 12), (15, 12, 8), (14, 11, 6)):
            need = sum(20 + fonts.width(label, label_size) + 4 + fonts.width(str(n), number_size, True)
                       for _, _, n, label in items) + gap * (len(items) - 1)
            if need <= avail:
                break
        return number_size, label_size, gap, need

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
                canvas.blit(shapes.circle(12, palette.WARN), (badge.right - 9, badge.top - 2))
        if caps.deadline is not None:
            seconds = caps.deadline.seconds_left()
            if active and seconds is not None:
                # U6: seconds left on the current deadline (the server's; display only). My last
                # seconds pulse between the warning colour and a lighter one, a size larger.
                ctx = self.ctx
                secs = math.ceil(seconds)
                text = ctx.t("online.seconds", seconds=secs)
                warning = seat_is_me and scene.deadline_warning is not None
                size = ctx.fonts.fit_size(text, 17 if warning else 15, 74, True)
                pill_w = max(48 if warning else 44, ctx.fonts.width(text, size, True) + 14)
                pill = pygame.Rect(rect.right - 7 - pill_w, rect.top + 5, pill_w, 26)
                fill = palette.WARN if secs <= 5 else color
                if warning and scene.pulse:
                    fill = palette.mix(palette.WARN, palette.ON_ACCENT, 0.45)
                    canvas.blit(shapes.ring(pill.inflate(6, 6).size, 16, palette.WARN, 2), pill.inflate(6, 6))
                canvas.blit(shapes.rounded(pill.size, 13, fill), pill)
                blit_text(canvas, ctx.fonts, text, size, palette.INK_DARK if warning and scene.pulse else palette.ON_ACCENT,
                          bold=True, center=pill.center)
            return
        if active and not seat_is_me and controller.opponent_to_move:
            # "Thinking" dots, stepping (not a smooth animation: three redraws a second).
            lit = scene.dots_phase if not scene.pauses else -1
            for k in range(3):
                c = color if k == lit else palette.mix(palette.CARD, color, 0.45)
                canvas.blit(shapes.circle(8, c), (rect.right - 40 + k * 11, rect.top + 14))
        if active and seat_is_me:
            canvas.blit(shapes.circle(8, color), (rect.right - 18, rect.top + 14))

    # ----- the status line and the line under the board ---------------------------------------------------
    def status(self, canvas: pygame.Surface, now: float) -> None:
        ctx = self.ctx
        scene = self.scene
        dx = 0
        shake_at = scene.line.shake_at
        if shake_at is not None:
            t = (now - shake_at) / SHAKE_TIME
            dx = round(math.sin(t * math.pi * 6) * 6 * (1 - t)) if t < 1 else 0
        rect = STATUS.move(dx, 0)
        view = scene.view()
        line = scene.words.event_line()
        refusal = (line is not None and line[1]) or scene.deadline_warning is not None
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
        if self.scene.flow.reveal_shown() and self._reveal() is not None:
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
        icon = "online" if color == palette.ME else "warning"  # a blue banner is a calm note (moving to another server)
        canvas.blit(shapes.icon(icon, 18, palette.ON_ACCENT), (INFO.left + 10, INFO.centery - 9))
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
        draw_reveal(canvas, area, scene.board, view, reveal)


def draw_reveal(canvas: pygame.Surface, area: pygame.Rect, board: BoardView, view: SeatView, reveal: BoardReveal) -> None:
    """O13 drawn over ``board`` (which shows ``view``): the other seat's mines, overlaps, each marker
    right or wrong. The match screen and the spectator screen (client/scenes/spectate.py) share it."""
    clip = canvas.get_clip()
    canvas.set_clip(area.clip(clip) if clip else area)
    try:
        for cell in board.cells_in(area):
            marks = reveal_marks(view, reveal, cell)
            if not marks:
                continue
            rect = board.cell_rect(cell)
            if "opponent_mine" in marks:
                size = 16 if "marked" in marks or "overlap" in marks else 24
                where = (rect.left + size // 2 + 3, rect.bottom - size // 2 - 4) if size == 16 else rect.center
                mine = shapes.icon("mine", size, palette.OPP)
                canvas.blit(mine, mine.get_rect(center=where))
            if "overlap" in marks:
                canvas.blit(shapes.ring(rect.size, 7, palette.PRIMARY, 2), rect)
            if "right" in marks or "wrong" in marks:
                good = "right" in marks
                badge = pygame.Rect(rect.right - 15, rect.top - 3, 17, 17)
                canvas.blit(shapes.circle(17, palette.GOOD if good else palette.WARN), badge)
                canvas.blit(shapes.icon("check" if good else "close", 13, palette.INK_DARK), (badge.x + 2, badge.y + 2))
    finally:
        canvas.set_clip(clip)


def reveal_marks(view: SeatView, reveal: BoardReveal, cell: int) -> frozenset[str]:
    """What the O13 reveal draws on ``cell`` over the final board (online and, on request, CPU):
    ``opponent_mine``, ``overlap``, ``marked`` (a marker sits there), ``right`` / ``wrong`` (that
    marker against the opponent's mines, O10). Nothing on revealed cells and the KO cell."""
    b = 1 << cell
    if view.revealed & b or cell == reveal.ko_cell:
        return frozenset()
    marks = set()
    if reveal.opponent_mines & b:
        marks.add("opponent_mine")
    if reveal.overlaps & b:
        marks.add("overlap")
    if (reveal.my_markers | reveal.opponent_markers) & b:
        marks.add("marked")
    if reveal.right & b:
        marks.add("right")
    elif reveal.wrong & b:
        marks.add("wrong")
    return frozenset(marks)
