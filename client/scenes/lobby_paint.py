"""How the lobby looks: each page of :class:`~mineduel.client.scenes.online.OnlineScene` drawn
from the scene's state and the layout its page builder left (``OnlineScene.ys`` and ``rects``).

Kept apart from the scene so that the scene is about pages, commands and the session, and this
module only about pixels; it reads the scene (and notes where the waiting room's notice goes,
which only drawing knows).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pygame

from mineduel.client.ui import palette, shapes
from mineduel.client.ui.text import blit_paragraph, blit_text, paragraph_height
from mineduel.shared.wire import links

if TYPE_CHECKING:
    from mineduel.client.scenes.online import OnlineScene

W = 390
LEFT, INNER = 8, 374
TITLE_Y = 84


def refereed_by_host(lobby: OnlineScene) -> bool:
    """The server was started by another player's game (``welcome`` says ``referee: "player"``): the
    joining player is told that the host's computer referees (issue 14). Not said to the host."""
    c = lobby.client
    return c is not None and lobby.hosting is None and c.welcome is not None and c.welcome.referee == "player"


class LobbyPainter:
    """Draws the lobby's current page (``draw``); one ``_draw_<page>`` per page."""

    def __init__(self, lobby: OnlineScene) -> None:
        self.lobby = lobby

    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        ctx = self.lobby.ctx
        t = ctx.t
        canvas.fill(palette.BACKGROUND, area)
        blit_text(canvas, ctx.fonts, t("online.title"), 22, palette.INK, bold=True, midleft=(LEFT + 4, TITLE_Y))
        self._draw_address(canvas)
        page = self.lobby.page
        getattr(self, f"_draw_{page}")(canvas)
        for f in self.lobby.fields:
            f.draw(canvas, ctx.fonts, keyboard=ctx.keyboard)
        self.lobby.widgets.draw(canvas, ctx.fonts, area)
        notice = self.lobby.notice()
        y = self.lobby.ys.get("notice_y")
        if notice is not None and y is not None:
            key, params = notice
            self._warning(canvas, t(key, **params), y)

    def _draw_address(self, canvas: pygame.Surface) -> None:
        c = self.lobby.client
        if c is None or c.address is None or self.lobby.page == "home":
            return
        host, port = c.address
        text = self.lobby.hosting or links.invite_link(host, port, "X")[len("mineduel://"):-len("/join/X")]
        blit_text(canvas, self.lobby.ctx.fonts, text, 13, palette.INK_SOFT, midright=(LEFT + INNER - 4, TITLE_Y + 2))

    def _warning(self, canvas: pygame.Surface, text: str, y: int) -> None:
        fonts = self.lobby.ctx.fonts
        h = paragraph_height(fonts, text, 15, INNER - 48)
        rect = pygame.Rect(LEFT, y, INNER, h + 20)
        canvas.blit(shapes.rounded(rect.size, 12, palette.mix(palette.CARD, palette.WARN, 0.12), 1, palette.WARN), rect)
        canvas.blit(shapes.icon("warning", 18, palette.WARN), (rect.left + 12, rect.top + 10))
        blit_paragraph(canvas, fonts, text, 15, palette.WARN, pygame.Rect(rect.left + 38, rect.top + 10, INNER - 48, h + 4))

    def _section(self, canvas: pygame.Surface, text: str, y: int) -> None:
        blit_text(canvas, self.lobby.ctx.fonts, text, 15, palette.INK_SOFT, bold=True, midleft=(LEFT + 4, y + 13))

    def _draw_home(self, canvas: pygame.Surface) -> None:
        t = self.lobby.ctx.t
        warning = self.lobby.rects.get("warning")
        if warning is not None:
            canvas.blit(shapes.rounded(warning.size, 16, palette.mix(palette.CARD, palette.WARN, 0.10), 1, palette.WARN), warning)
            canvas.blit(shapes.icon("warning", 20, palette.WARN), (warning.left + 14, warning.top + 14))
            blit_paragraph(canvas, self.lobby.ctx.fonts, t("online.token_unavailable"), 16, palette.INK,
                           pygame.Rect(warning.left + 42, warning.top + 14, INNER - 58, warning.height))
        self._section(canvas, t("online.friends"), self.lobby.ys["friends_y"])
        found_y = self.lobby.ys.get("found_y")
        if found_y is not None and not self.lobby.found:
            text = t("online.searching") if self.lobby.searching else t("online.no_games_found")
            blit_text(canvas, self.lobby.ctx.fonts, text, 15, palette.INK_SOFT, midleft=(LEFT + 16, found_y + 12))
        self._section(canvas, t("online.connect_to"), self.lobby.ys["connect_y"] - 2)

    def _draw_server(self, canvas: pygame.Surface) -> None:
        t = self.lobby.ctx.t
        c = self.lobby.client
        if c is not None and c.address is not None:
            host, port = c.address
            canvas.blit(shapes.circle(10, palette.GOOD), (LEFT + 6, self.lobby.ys["info_y"] + 8))
            blit_text(canvas, self.lobby.ctx.fonts, t("online.connected_to", address=f"{host}:{port}"), 15, palette.INK,
                      midleft=(LEFT + 24, self.lobby.ys["info_y"] + 13))
        self._section(canvas, t("online.room_code"), self.lobby.ys["code_y"])

    def _draw_room(self, canvas: pygame.Surface) -> None:
        t = self.lobby.ctx.t
        fonts = self.lobby.ctx.fonts
        card = self.lobby.rects["card"]
        canvas.blit(shapes.rounded(card.size, 18, palette.CARD, 1, palette.CARD_BORDER), card)
        info = self.lobby.client.room_info if self.lobby.client else None
        if not info:
            return
        blit_text(canvas, fonts, t("online.room_code"), 14, palette.INK_SOFT, bold=True, midleft=(card.left + 18, card.top + 24))
        self._big_code(canvas, info.room, (card.centerx, card.top + 70))
        status = info.status
        known = status in ("waiting", "playing", "finished")
        status_key = f"online.room_status.{status}" if known else "online.room_status.waiting"
        lines = [t(status_key), t("online.seats", count=info.seats)]
        if not info.open:
            lines.append(t("online.room_full"))
        y = card.top + 118
        for i, line in enumerate(lines):
            blit_text(canvas, fonts, line, 16, palette.WARN if i == 2 else palette.INK, bold=i == 0, midleft=(card.left + 18, y))
            y += 26
        self._commitment(canvas, info.commitment, pygame.Rect(card.left + 18, card.bottom - 68, card.width - 36, 60))

    def _big_code(self, canvas: pygame.Surface, code: str, center: tuple[int, int]) -> None:
        fonts = self.lobby.ctx.fonts
        spaced = " ".join(code)
        blit_text(canvas, fonts, spaced, 40, palette.PRIMARY, bold=True, center=center)

    def _commitment(self, canvas: pygame.Surface, commitment: str, rect: pygame.Rect) -> None:
        fonts = self.lobby.ctx.fonts
        label = self.lobby.ctx.t("online.commitment")
        size = fonts.fit_size(label, 13, rect.width, True)
        blit_text(canvas, fonts, label, size, palette.INK_SOFT, bold=True, topleft=(rect.left, rect.top))
        half = (len(commitment) + 1) // 2
        for i, part in enumerate((commitment[:half], commitment[half:])):
            if part:
                blit_text(canvas, fonts, part, 13, palette.INK_FAINT if not commitment else palette.ME_LIGHT,
                          topleft=(rect.left, rect.top + 22 + i * 18))

    def _draw_waiting(self, canvas: pygame.Surface) -> None:
        t = self.lobby.ctx.t
        fonts = self.lobby.ctx.fonts
        c = self.lobby.client
        assert c is not None
        card = self.lobby.rects["code_card"]
        canvas.blit(shapes.rounded(card.size, 18, palette.CARD, 1, palette.CARD_BORDER), card)
        blit_text(canvas, fonts, t("online.room_code"), 14, palette.INK_SOFT, bold=True, midleft=(card.left + 18, card.top + 24))
        code = c.room_code or ""
        blit_text(canvas, fonts, " ".join(code), 34, palette.PRIMARY, bold=True, midleft=(card.left + 16, card.top + 76))
        y = card.top + 108
        blit_text(canvas, fonts, t("online.invite_link"), 13, palette.INK_SOFT, bold=True, midleft=(card.left + 18, y))
        link = c.invite or ""
        size = fonts.fit_size(link, 14, card.width - 36)
        blit_text(canvas, fonts, link, size, palette.ME_LIGHT, midleft=(card.left + 18, y + 22))
        if self.lobby.hosting:
            blit_text(canvas, fonts, t("online.hosting", address=self.lobby.hosting), 13, palette.INK_SOFT,
                      midleft=(card.left + 18, y + 48))
        if self.lobby.copied is not None:
            text = t("online.link_copied") if self.lobby.copied else t("online.copy_failed")
            color = palette.GOOD if self.lobby.copied else palette.WARN
            size = fonts.fit_size(text, 13, 160)
            blit_text(canvas, fonts, text, size, color, midright=(card.right - 16, card.top + 74))
        # Both seats.
        room = c.room
        y = self.lobby.ys["seats_y"]
        w = (INNER - 10) // 2
        for i, (key, color, badge) in enumerate((("me", palette.ME, "person"), ("opponent", palette.OPP, "person"))):
            rect = pygame.Rect(LEFT + i * (w + 10), y, w, 96)
            side = None if room is None else (room.me if key == "me" else room.opponent)
            canvas.blit(shapes.rounded(rect.size, 16, palette.CARD, 1, palette.CARD_BORDER), rect)
            canvas.blit(shapes.circle(34, color if side else palette.CARD_RAISED), (rect.left + 10, rect.top + 10))
            canvas.blit(shapes.icon(badge, 22, palette.ON_ACCENT), (rect.left + 16, rect.top + 16))
            name = t("status.you" if key == "me" else "status.opponent")
            blit_text(canvas, fonts, name, 16, palette.INK, bold=True, midleft=(rect.left + 52, rect.top + 27))
            if side is None:
                blit_paragraph(canvas, fonts, t("online.state.empty"), 13, palette.INK_SOFT,
                               pygame.Rect(rect.left + 12, rect.top + 54, rect.width - 20, 40), max_lines=2)
                continue
            connected = side.connected and (key != "me" or c.connected)
            dot = palette.GOOD if connected else palette.WARN
            canvas.blit(shapes.circle(10, dot), (rect.left + 14, rect.top + 57))
            blit_text(canvas, fonts, t("online.state.connected" if connected else "online.state.disconnected"), 13,
                      palette.INK_SOFT, midleft=(rect.left + 30, rect.top + 62))
            ready = side.ready
            if ready:
                canvas.blit(shapes.icon("check", 16, palette.GOOD), (rect.left + 11, rect.top + 74))
            blit_text(canvas, fonts, t("online.state.ready" if ready else "online.state.not_ready"), 13,
                      palette.GOOD if ready else palette.INK_FAINT, bold=ready, midleft=(rect.left + 30, rect.top + 82))
        if room is None or room.opponent is None:
            status = t("online.waiting_opponent")
        elif room.me.ready:
            status = t("online.waiting_ready")
        else:
            status = t("online.press_ready")
        size = fonts.fit_size(status, 15, INNER)
        blit_text(canvas, fonts, status, size, palette.INK_SOFT, center=(W // 2, self.lobby.ys["status_y"] + 10))
        commit_rect = pygame.Rect(LEFT, self.lobby.ys["commit_y"], INNER, 84)
        canvas.blit(shapes.rounded(commit_rect.size, 14, palette.PANEL), commit_rect)
        self._commitment(canvas, "" if room is None else room.next_commitment, commit_rect.inflate(-28, -20))
        y = commit_rect.bottom + 10
        if refereed_by_host(self.lobby):
            y = self._referee(canvas, y) + 10
        self.lobby.ys["notice_y"] = y

    def _referee(self, canvas: pygame.Surface, y: int) -> int:
        """Issue 14: a server started by another player's game referees the match; say so, plainly."""
        fonts = self.lobby.ctx.fonts
        text = self.lobby.ctx.t("online.referee_host")
        h = paragraph_height(fonts, text, 14, INNER - 52)
        rect = pygame.Rect(LEFT, y, INNER, h + 20)
        canvas.blit(shapes.rounded(rect.size, 12, palette.CARD, 1, palette.CARD_BORDER), rect)
        canvas.blit(shapes.icon("eye", 18, palette.ME_LIGHT), (rect.left + 12, rect.top + 10))
        blit_paragraph(canvas, fonts, text, 14, palette.INK, pygame.Rect(rect.left + 40, rect.top + 10, INNER - 52, h + 4))
        return rect.bottom

    def _draw_connecting(self, canvas: pygame.Surface) -> None:
        c = self.lobby.client
        address = "" if c is None or c.address is None else f"{c.address[0]}:{c.address[1]}"
        self._centre_message(canvas, "online", palette.ME_LIGHT, self.lobby.ctx.t("online.connecting", address=address))

    def _draw_reconnecting(self, canvas: pygame.Surface) -> None:
        c = self.lobby.client
        text = self.lobby.ctx.t("online.reconnecting")
        left = c.next_retry_in() if c is not None else None
        if left is not None and left >= 0.5:
            text += "\n" + self.lobby.ctx.t("online.reconnect_in", seconds=int(left + 0.999))
        self._centre_message(canvas, "online", palette.WARN, text)

    def _draw_error(self, canvas: pygame.Surface) -> None:
        c = self.lobby.client
        key = (c.error if c is not None else None) or "online.connection_lost"
        self._centre_message(canvas, "warning", palette.WARN, self.lobby.ctx.t(key))

    def _centre_message(self, canvas: pygame.Surface, icon: str, color: palette.Color, text: str) -> None:
        y = self.lobby.ys["message_y"]
        canvas.blit(shapes.circle(72, palette.CARD_RAISED), (W // 2 - 36, y - 90))
        canvas.blit(shapes.icon(icon, 40, color), (W // 2 - 20, y - 74))
        blit_paragraph(canvas, self.lobby.ctx.fonts, text, 18, palette.INK, pygame.Rect(LEFT + 20, y, INNER - 40, 120),
                       bold=True, align="center")
