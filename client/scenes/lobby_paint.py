"""How the lobby looks: each page of :class:`~mineduel.client.scenes.online.OnlineScene` drawn
from the scene's state and the layout its page builder left (``OnlineScene.ys`` and ``rects``).

Kept apart from the scene so that the scene is about pages, commands and the session, and this
module only about pixels; it reads the scene (and notes where the waiting room's notice goes,
which only drawing knows).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pygame

from mineduel.client.scenes.allow_watch import draw_watch_state, strike_eye
from mineduel.client.scenes.rating_words import ellipsized, rating_text
from mineduel.client.ui import palette, shapes
from mineduel.client.ui.text import blit_paragraph, blit_text, paragraph_height
from mineduel.shared.wire import links
from mineduel.shared.wire.messages import SeatInfo

if TYPE_CHECKING:
    from mineduel.client.scenes.online import OnlineScene

W = 390
LEFT, INNER = 8, 374
TITLE_Y = 84


def seal_text(commitment: str) -> str:
    """The first 8 hex digits of a commitment in two groups of four (``"9a3f 07c1"``), or ``""``."""
    head = commitment[:8].lower()
    return f"{head[:4]} {head[4:]}" if len(head) == 8 else head


def refereed_by_host(lobby: OnlineScene) -> bool:
    """The server was started by another player's game (``welcome`` says ``referee: "player"``): the
    joining player is told that the host's computer referees (issue 14). Not said to the host."""
    c = lobby.client
    return c is not None and lobby.hosting is None and c.welcome is not None and c.welcome.referee == "player"


def seat_title(t: Callable[..., str], key: str, side: SeatInfo | None) -> str:
    """A waiting-room seat's title: the name its player gave (mine marked *you*), else *You* / *Opponent*."""
    name = "" if side is None else "".join(ch for ch in side.name if ch.isprintable())
    if key == "me":
        return t("friend.you_named", name=name) if name else t("status.you")
    return name or t("status.opponent")


class LobbyPainter:
    """Draws the lobby's current page (``draw``); one ``_draw_<page>`` per page."""

    def __init__(self, lobby: OnlineScene) -> None:
        self.lobby = lobby

    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        ctx = self.lobby.ctx
        t = ctx.t
        canvas.fill(palette.BACKGROUND, area)
        title = t("friend.title") if self.lobby.page == "home" else t("online.title")
        blit_text(canvas, ctx.fonts, title, 22, palette.INK, bold=True, midleft=(LEFT + 4, TITLE_Y))
        self._draw_address(canvas)
        page = self.lobby.page
        getattr(self, f"_draw_{page}")(canvas)
        for f in self.lobby.fields:
            f.draw(canvas, ctx.fonts, keyboard=ctx.keyboard)
        self.lobby.widgets.draw(canvas, ctx.fonts, area)
        if page == "home":
            self._lan_rows(canvas)
        if page == "server":
            self._live_details(canvas)
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
        fonts = self.lobby.ctx.fonts
        found_y = self.lobby.ys["found_y"]
        title = t("friend.waiting_here")
        size = fonts.fit_size(title, 15, INNER - 60, True)
        blit_text(canvas, fonts, title, size, palette.INK_SOFT, bold=True, midleft=(LEFT + 4, found_y + 16))
        empty_y = self.lobby.ys.get("empty_y")
        if empty_y is not None:
            text = t("friend.searching") if self.lobby.searching or self.lobby.found is None else t("friend.none_waiting")
            rect = pygame.Rect(LEFT + 4, empty_y, INNER - 8, 44)
            blit_paragraph(canvas, fonts, text, 14, palette.INK_FAINT, rect, max_lines=2)
        self._section(canvas, t("friend.join_title"), self.lobby.ys["connect_y"])

    def _lan_rows(self, canvas: pygame.Surface) -> None:
        """Over each waiting room's button: its code, spaced (what the host reads out), at the right."""
        fonts = self.lobby.ctx.fonts
        for server, room, rect in self.lobby.entries:
            text = " ".join((room.code[:3], room.code[3:])) if room is not None else f"{server.host}:{server.port}"
            size = 16 if room is not None else 12
            # A cluster's room (issue 21): the front it dials, under the code (anyone on the LAN may name one).
            front = room is not None and server.via is not None
            y = rect.centery - 8 if front else rect.centery
            blit_text(canvas, fonts, text, size, palette.ME_LIGHT if room is not None else palette.INK_SOFT,
                      bold=room is not None, midright=(rect.right - 14, y))
            if front:
                small = fonts.fit_size(server.host, 11, 110, False, minimum=9)
                shown = ellipsized(fonts, server.host, small, 110, bold=False)
                blit_text(canvas, fonts, shown, small, palette.INK_FAINT, midright=(rect.right - 14, rect.centery + 11))
            if room is not None and not room.watchable:  # issue 19: its eye struck, the room takes no spectators
                strike_eye(canvas, self.lobby.widgets.by_name(f"watch:{room.code}").rect)

    def _draw_server(self, canvas: pygame.Surface) -> None:
        t = self.lobby.ctx.t
        c = self.lobby.client
        if c is not None and c.address is not None:
            host, port = c.address
            canvas.blit(shapes.circle(10, palette.GOOD), (LEFT + 6, self.lobby.ys["info_y"] + 8))
            blit_text(canvas, self.lobby.ctx.fonts, t("online.connected_to", address=f"{host}:{port}"), 15, palette.INK,
                      midleft=(LEFT + 24, self.lobby.ys["info_y"] + 13))
        if "quick_y" in self.lobby.ys:  # issue 20: under Quick match, the friend's way
            self._section(canvas, t("quick.or_friend"), self.lobby.ys["quick_y"])
        self._section(canvas, t("online.room_code"), self.lobby.ys["code_y"])
        self._live(canvas)

    def _live_details(self, canvas: pygame.Surface) -> None:
        """Over each live match's row (issue 19): its round and how many watch, at the right."""
        lobby = self.lobby
        t, fonts = lobby.ctx.t, lobby.ctx.fonts
        for live, rect in lobby.watching.entries:
            if not live.turn:
                detail = t("status.opening")
            elif live.spectators:
                detail = t("watch.live_detail", round=(live.turn + 1) // 2, count=live.spectators)
            else:
                detail = t("match.round", round=(live.turn + 1) // 2)
            blit_text(canvas, fonts, detail, fonts.fit_size(detail, 13, 140), palette.INK_SOFT,
                      midright=(rect.right - 14, rect.centery))

    def _live(self, canvas: pygame.Surface) -> None:
        """The server page's live matches (issue 19): the title, each row's round and watchers, or why none."""
        lobby = self.lobby
        t, fonts = lobby.ctx.t, lobby.ctx.fonts
        y = lobby.ys.get("live_y")
        if y is None:
            return
        self._section(canvas, t("watch.live_title"), y)
        if lobby.watching.hidden:  # more live matches than the page has room for
            more = t("watch.live_more", count=lobby.watching.hidden)
            blit_text(canvas, fonts, more, fonts.fit_size(more, 13, 150), palette.INK_FAINT, midright=(LEFT + INNER - 56, y + 13))
        empty_y = lobby.ys.get("live_empty_y")
        if empty_y is not None:
            state = lobby.watching.live_state()
            if state == "rooms":
                return  # rooms, but no room on the page for a row: the title's "N more" says so
            key = {"loading": "watch.live_loading", "none": "watch.live_none"}.get(state)
            error = lobby.watching.error or "online.error.other"
            text = t(key) if key is not None else t(error, detail="live_rooms")
            blit_paragraph(canvas, fonts, text, 14, palette.INK_FAINT, pygame.Rect(LEFT + 4, empty_y, INNER - 8, 44), max_lines=2)

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
        self._commitment(canvas, info.commitment, pygame.Rect(card.left + 18, card.bottom - 80, card.width - 36, 66))

    def _big_code(self, canvas: pygame.Surface, code: str, center: tuple[int, int]) -> None:
        fonts = self.lobby.ctx.fonts
        spaced = " ".join(code)
        blit_text(canvas, fonts, spaced, 40, palette.PRIMARY, bold=True, center=center)

    def _commitment(self, canvas: pygame.Surface, commitment: str, rect: pygame.Rect, copied: bool | None = None) -> None:
        """The fairness commitment as a player reads it (issue 16 item 10): a *Fairness seal* with its
        first 8 hex digits in two groups and one line saying what it is for; the whole value is
        copied by the button beside it and shown in full by Verify after the match."""
        ctx = self.lobby.ctx
        fonts = ctx.fonts
        label = ctx.t("friend.seal")
        short = seal_text(commitment)
        value_w = fonts.width(short, 17, True) if short else 0
        size = fonts.fit_size(label, 14, rect.width - value_w - 16, True)
        canvas.blit(shapes.icon("check", 16, palette.GOOD if commitment else palette.INK_FAINT), (rect.left, rect.top + 2))
        blit_text(canvas, fonts, label, size, palette.INK, bold=True, midleft=(rect.left + 22, rect.top + 10))
        if short:
            blit_text(canvas, fonts, short, 17, palette.ME_LIGHT, bold=True,
                      midleft=(rect.left + 22 + fonts.width(label, size, True) + 12, rect.top + 10))
        hint = ctx.t("friend.seal_hint") if copied is None else ctx.t("friend.seal_copied" if copied else "online.copy_failed")
        color = palette.INK_SOFT if copied is None else palette.GOOD if copied else palette.WARN
        blit_paragraph(canvas, fonts, hint, 13, color, pygame.Rect(rect.left, rect.top + 26, rect.width, 36), max_lines=2)

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
        label = blit_text(canvas, fonts, t("online.invite_link"), 13, palette.INK_SOFT, bold=True, midleft=(card.left + 18, y))
        # Issue 19: how many watch, or whether anyone may (the room's spectators:false, §16).
        draw_watch_state(canvas, self.lobby, right=card.right - 16, y=y, width=card.right - 16 - label.right - 16)
        link = c.invite or ""
        size = fonts.fit_size(link, 14, card.width - 36)
        blit_text(canvas, fonts, link, size, palette.ME_LIGHT, midleft=(card.left + 18, y + 22))
        note_y = y + 40
        for text, warn in self.lobby.host_notes():
            h = paragraph_height(fonts, text, 13, card.width - 36)
            blit_paragraph(canvas, fonts, text, 13, palette.WARN if warn else palette.INK_SOFT,
                           pygame.Rect(card.left + 18, note_y, card.width - 36, h + 4))
            note_y += h + 6
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
            name = seat_title(t, key, side)
            rating = None if side is None or side.rating is None else rating_text(side.rating, bool(side.provisional))
            room_w = rect.width - 60 - (0 if rating is None else fonts.width(rating, 13, True) + 8)  # issue 20
            size = fonts.fit_size(name, 16, room_w, True)
            blit_text(canvas, fonts, name, size, palette.INK, bold=True, midleft=(rect.left + 52, rect.top + 27))
            if rating is not None:
                blit_text(canvas, fonts, rating, 13, palette.PRIMARY, bold=True, midright=(rect.right - 10, rect.top + 27))
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
        inner = pygame.Rect(commit_rect.left + 14, commit_rect.top + 12, commit_rect.width - 28 - 52, 64)
        copied = self.lobby.seal_copied
        self._commitment(canvas, "" if room is None else room.next_commitment, inner, copied)
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
        text = self.lobby.ctx.t("cluster.moving") if c is not None and c.moving else self.lobby.ctx.t(
            "online.connecting", address=address)  # issue 21: another node of the cluster
        self._centre_message(canvas, "online", palette.ME_LIGHT, text)

    def _draw_reconnecting(self, canvas: pygame.Surface) -> None:
        c = self.lobby.client
        if c is not None and c.moving:  # issue 21: another node of the cluster serves the room now
            self._centre_message(canvas, "online", palette.ME_LIGHT, self.lobby.ctx.t("cluster.moving"))
            return
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
