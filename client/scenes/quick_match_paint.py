"""How the quick-match screen looks (issue 20): each page of
:class:`~mineduel.client.scenes.quick_match.QuickMatchScene` drawn from the scene's state, as the
lobby's painter does for the lobby (pixels here, pages and commands there)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pygame

from mineduel.client.player_session import Quick
from mineduel.client.scenes.allow_watch import draw_off_pill, quick_watch_off
from mineduel.client.scenes.rating_words import fit_name, rating_text
from mineduel.client.ui import palette, shapes
from mineduel.client.ui.text import blit_paragraph, blit_text, paragraph_height

if TYPE_CHECKING:
    from mineduel.client.scenes.quick_match import QuickMatchScene

W, LEFT, INNER = 390, 8, 374
TITLE_Y = 84
PULSE = 1.6  # seconds per radar pulse


@dataclass(frozen=True, slots=True)
class Layout:
    """Where each page puts things for the height the window shows (``ctx.visible()``): on a short
    window (320×568 shows 692 of the 844 canvas rows) everything that matters — Ready and its
    countdown, Cancel, the CPU offer — stays in view without scrolling."""

    bottom: int  # the bottom buttons' top
    radar_y: int
    searching_y: int
    clock_y: int
    own_y: int
    cpu_y: int  # the CPU offer's card (its button at cpu_y + 92)
    found_y: int
    cards_y: int
    card_h: int
    ring_y: int
    line_y: int
    ready_y: int
    message_y: int
    again_y: int


def layout_for(height: int) -> Layout:
    """The full layout at 844 rows; a compact one below 800."""
    h = min(844, height)
    if h >= 800:
        return Layout(bottom=h - 16 - 52, radar_y=270, searching_y=410, clock_y=460, own_y=506, cpu_y=530, found_y=140,
                      cards_y=208, card_h=188, ring_y=500, line_y=574, ready_y=640, message_y=300, again_y=520)
    return Layout(bottom=h - 16 - 52, radar_y=212, searching_y=336, clock_y=380, own_y=418, cpu_y=h - 16 - 52 - 12 - 156,
                  found_y=124, cards_y=180, card_h=176, ring_y=428, line_y=494, ready_y=h - 16 - 60, message_y=260,
                  again_y=h - 16 - 52 - 12 - 56)


class QuickMatchPainter:
    """Draws the quick-match screen's current page (``draw``); one ``_draw_<page>`` per page."""

    def __init__(self, scene: QuickMatchScene) -> None:
        self.scene = scene
        self.ctx = scene.ctx

    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        ctx = self.ctx
        scene = self.scene
        t = ctx.t
        canvas.fill(palette.BACKGROUND, area)
        blit_text(canvas, ctx.fonts, t("quick.title"), 22, palette.INK, bold=True, midleft=(LEFT + 4, TITLE_Y))
        page = scene.page
        if page in ("searching", "matched"):  # issue 19: the player's choice, then the room's (§17)
            quick = scene.quick()
            matched = None if quick is None or quick.matched is None else quick.matched.room
            if quick_watch_off(scene.lobby, matched if page == "matched" else None):
                draw_off_pill(canvas, scene.lobby, right=W - LEFT - 4, y=TITLE_Y)
        draw = getattr(self, f"_draw_{page}", None)
        if draw is not None:
            draw(canvas)
        scene.widgets.draw(canvas, ctx.fonts, area)

    def _message(self, canvas: pygame.Surface, icon: str, color: palette.Color, text: str, y: int | None = None) -> int:
        ctx = self.ctx
        y = self.scene.layout.message_y if y is None else y
        canvas.blit(shapes.circle(88, palette.mix(palette.CARD, color, 0.18)), (W // 2 - 44, y - 110))
        mark = shapes.icon(icon, 44, color)
        canvas.blit(mark, mark.get_rect(center=(W // 2, y - 66)))
        h = paragraph_height(ctx.fonts, text, 18, INNER - 40, bold=True)
        blit_paragraph(canvas, ctx.fonts, text, 18, palette.INK, pygame.Rect(LEFT + 20, y, INNER - 40, h + 4),
                       bold=True, align="center")
        return y + h

    def _own_line(self, canvas: pygame.Surface, y: int) -> None:
        """The player's own identity and rating, under the radar."""
        players = self.scene.players
        identity = None if players is None else players.identity
        if identity is None:
            return
        ctx = self.ctx
        text = ctx.t("quick.you_are", name=identity.display,
                     rating=rating_text(identity.rating.value, identity.rating.provisional))
        size = ctx.fonts.fit_size(text, 15, INNER - 20)
        blit_text(canvas, ctx.fonts, text, size, palette.INK_SOFT, center=(W // 2, y))

    def _draw_identity(self, canvas: pygame.Surface) -> None:
        self._message(canvas, "person", palette.ME_LIGHT, self.ctx.t("quick.identifying"))

    def _draw_identity_error(self, canvas: pygame.Surface) -> None:
        players = self.scene.players
        key = (players.error if players is not None else None) or "online.error.other"
        self._message(canvas, "warning", palette.WARN, self.ctx.t(key))

    def _draw_key_unavailable(self, canvas: pygame.Surface) -> None:
        players = self.scene.players
        folder = "" if players is None else str(players.keys.folder)
        bottom = self._message(canvas, "warning", palette.WARN, self.ctx.t("player.key_unavailable"))
        blit_paragraph(canvas, self.ctx.fonts, folder, 13, palette.INK_SOFT, pygame.Rect(LEFT + 20, bottom + 16, INNER - 40, 60),
                       align="center", max_lines=3)

    def _draw_key_damaged(self, canvas: pygame.Surface) -> None:
        ctx = self.ctx
        bottom = self._message(canvas, "warning", palette.WARN, ctx.t("player.key_damaged.title"),
                               y=self.scene.layout.message_y - 60)
        text = ctx.t("player.key_damaged.body")
        h = paragraph_height(ctx.fonts, text, 15, INNER - 40)
        blit_paragraph(canvas, ctx.fonts, text, 15, palette.INK_SOFT, pygame.Rect(LEFT + 20, bottom + 14, INNER - 40, h + 4),
                       align="center")

    def _draw_notice(self, canvas: pygame.Surface) -> None:
        players = self.scene.players
        key = (players.queue.notice if players is not None else None) or "quick.you_not_ready"
        self._message(canvas, "warning", palette.WARN, self.ctx.t(key))

    def _draw_searching(self, canvas: pygame.Surface) -> None:
        ctx = self.ctx
        t = ctx.t
        quick = self.scene.quick()
        now = ctx.clock()
        # The radar: three rings growing and fading, one pulse every PULSE seconds.
        lay = self.scene.layout
        cx, cy = W // 2, lay.radar_y
        for i in range(3):
            phase = ((now - self.scene.started_at) / PULSE + i / 3) % 1.0
            radius = int(46 + phase * 62)
            alpha = int(150 * (1 - phase))
            ring = pygame.Surface((radius * 2 + 4, radius * 2 + 4), pygame.SRCALPHA)
            pygame.draw.circle(ring, (*palette.ME_LIGHT, alpha), (radius + 2, radius + 2), radius, 3)
            canvas.blit(ring, (cx - radius - 2, cy - radius - 2))
        canvas.blit(shapes.circle(92, palette.ME), (cx - 46, cy - 46))
        mark = shapes.icon("online", 46, palette.ON_ACCENT)
        canvas.blit(mark, mark.get_rect(center=(cx, cy)))
        elapsed = 0 if quick is None else quick.elapsed
        blit_text(canvas, ctx.fonts, t("quick.searching"), 20, palette.INK, bold=True, center=(W // 2, lay.searching_y))
        clock = f"{elapsed // 60}:{elapsed % 60:02d}"
        blit_text(canvas, ctx.fonts, clock, 40, palette.PRIMARY, bold=True, center=(W // 2, lay.clock_y))
        self._own_line(canvas, lay.own_y)
        if quick is not None and quick.notice is not None:
            self._banner(canvas, t(quick.notice), 120)
        if quick is not None and quick.cpu_offer:
            card = pygame.Rect(LEFT, lay.cpu_y, INNER, 156)
            canvas.blit(shapes.rounded(card.size, 16, palette.CARD, 1, palette.CARD_BORDER), card)
            text = t("quick.cpu_offer")
            size = ctx.fonts.fit_size(text, 15, INNER - 32, True)
            blit_text(canvas, ctx.fonts, text, size, palette.INK, bold=True, midleft=(card.left + 16, card.top + 22))
            note = t("quick.cpu_offer_note")
            blit_paragraph(canvas, ctx.fonts, note, 13, palette.INK_SOFT,
                           pygame.Rect(card.left + 16, card.top + 42, INNER - 32, 40), max_lines=2)

    def _banner(self, canvas: pygame.Surface, text: str, y: int) -> None:
        fonts = self.ctx.fonts
        h = paragraph_height(fonts, text, 15, INNER - 48)
        rect = pygame.Rect(LEFT, y, INNER, h + 20)
        canvas.blit(shapes.rounded(rect.size, 12, palette.mix(palette.CARD, palette.WARN, 0.12), 1, palette.WARN), rect)
        canvas.blit(shapes.icon("warning", 18, palette.WARN), (rect.left + 12, rect.top + 10))
        blit_paragraph(canvas, fonts, text, 15, palette.WARN, pygame.Rect(rect.left + 38, rect.top + 10, INNER - 48, h + 4))

    def _draw_matched(self, canvas: pygame.Surface) -> None:
        ctx = self.ctx
        t = ctx.t
        fonts = ctx.fonts
        quick = self.scene.quick()
        players = self.scene.players
        if quick is None or quick.matched is None or players is None:
            return
        matched = quick.matched
        lay = self.scene.layout
        blit_text(canvas, fonts, t("quick.found"), 24, palette.INK, bold=True, center=(W // 2, lay.found_y))
        if matched.rated:
            chip = t("quick.rated")
            w = fonts.width(chip, 13, True) + 24
            rect = pygame.Rect(W // 2 - w // 2, lay.found_y + 24, w, 26)
            canvas.blit(shapes.rounded(rect.size, 13, palette.mix(palette.CARD, palette.PRIMARY, 0.25)), rect)
            blit_text(canvas, fonts, chip, 13, palette.PRIMARY, bold=True, center=rect.center)
        identity = players.identity
        me = (t("status.you") if identity is None else identity.display,
              None if identity is None else identity.rating.value, identity is not None and identity.rating.provisional)
        them = (matched.opponent.display, matched.opponent.rating, matched.opponent.provisional)
        w = (INNER - 44) // 2
        for i, ((name, rating, provisional), color) in enumerate(((me, palette.ME), (them, palette.OPP))):
            rect = pygame.Rect(LEFT + i * (w + 44), lay.cards_y, w, lay.card_h)
            canvas.blit(shapes.rounded(rect.size, 18, palette.CARD, 1, palette.CARD_BORDER), rect)
            canvas.blit(shapes.circle(52, color), (rect.centerx - 26, rect.top + 16))
            canvas.blit(shapes.icon("person", 32, palette.ON_ACCENT), (rect.centerx - 16, rect.top + 26))
            label = t("status.you") if i == 0 else t("status.opponent")
            blit_text(canvas, fonts, label, 12, palette.INK_SOFT, bold=True, center=(rect.centerx, rect.top + 84))
            shown, size = fit_name(fonts, name, 16, rect.width - 16)
            blit_text(canvas, fonts, shown, size, palette.INK, bold=True,
                      center=(rect.centerx, rect.top + 108))
            if rating is not None:
                blit_text(canvas, fonts, rating_text(rating, provisional), 26, palette.PRIMARY if i else palette.ME_LIGHT,
                          bold=True, center=(rect.centerx, rect.bottom - 48))
                if provisional:
                    small = t("rating.provisional")
                    blit_text(canvas, fonts, small, fonts.fit_size(small, 12, rect.width - 12), palette.INK_FAINT,
                              center=(rect.centerx, rect.bottom - 20))
        blit_text(canvas, fonts, t("quick.versus"), 18, palette.INK_SOFT, bold=True,
                  center=(W // 2, lay.cards_y + lay.card_h // 2))
        # The confirm countdown: a ring that empties, the seconds inside.
        left = quick.confirm_left
        total = max(1.0, min(60.0, matched.confirm.left))
        cx, cy = W // 2, lay.ring_y
        canvas.blit(shapes.circle(112, palette.CARD_RAISED), (cx - 56, cy - 56))
        if left is not None:
            exact = players.queue.confirm_left() or 0.0
            frac = max(0.0, min(1.0, exact / total))
            if frac > 0:
                rect = pygame.Rect(cx - 52, cy - 52, 104, 104)
                pygame.draw.arc(canvas, palette.WARN if left <= 3 else palette.PRIMARY, rect,
                                math.pi / 2, math.pi / 2 + 2 * math.pi * frac, 6)
            blit_text(canvas, fonts, str(left), 40, palette.WARN if left <= 3 else palette.INK, bold=True, center=(cx, cy))
        confirmed = players.queue.state is Quick.CONFIRMED
        if confirmed:
            line = t("quick.opponent_ready") if quick.opponent_ready else t("quick.waiting_opponent",
                                                                             name=matched.opponent.display)
        elif left == 0:
            line = t("quick.time_up")
        else:
            line = t("quick.press_ready")
        h = paragraph_height(fonts, line, 15, INNER - 20)
        blit_paragraph(canvas, fonts, line, 15, palette.INK_SOFT, pygame.Rect(LEFT + 10, lay.line_y, INNER - 20, h + 4),
                       align="center", max_lines=2)

