"""The kiosk's attract mode (issue 19, docs/KIOSK.md): a server's live matches, one after another.

:class:`AttractLoop` decides what to show, on the app's clock (tests drive it with a fake one):
it asks the configured server for its live matches (``live_rooms``, PROTOCOL.md §16) — or, when
the server cannot list them, takes the room codes the kiosk config names — and watches each in
turn for ``rotate`` seconds on one spectator connection (:meth:`Watcher.switch`). It moves on early
when the match ends (after :data:`END_HOLD` seconds of its reveal), when the room closes or
watching fails; after the last room it asks again. With nothing live it shows a calm
*no live matches* card and asks again every ``retry`` seconds.

:class:`AttractScene` draws it: the spectator screen in its attract form (no Leave; the footer
invites a touch) or the calm card. It never takes input itself: the kiosk (client/kiosk.py) ends
attract mode on any touch or key and shows its normal start screen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pygame

from mineduel.client.online_link import Connector
from mineduel.client.scenes.base import Context, Scene
from mineduel.client.scenes.spectate import SpectateScene
from mineduel.client.spectate_client import LiveQuery, Watch, Watcher
from mineduel.client.ui import palette, shapes
from mineduel.client.ui.input import InputEvent
from mineduel.client.ui.text import blit_paragraph, blit_text, paragraph_height
from mineduel.shared.wire.messages import LiveRoom

__all__ = ["END_HOLD", "AttractLoop", "AttractScene", "AttractTarget"]

END_HOLD = 8.0  # seconds a finished match's reveal stays before the next match


@dataclass(frozen=True, slots=True)
class AttractTarget:
    """The server whose live matches a kiosk shows, and room codes to show when it cannot list them."""

    host: str
    port: int
    tls: bool = False
    pin: str | None = None
    rooms: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return f"{self.host}:{self.port}"


class AttractLoop:
    """What attract mode shows now (``mode``: ``looking``, ``showing`` or ``none``); see the module docstring."""

    def __init__(self, target: AttractTarget, connect: Callable[[], Connector], clock: Callable[[], float],
                 client_name: str, *, rotate: float, retry: float) -> None:
        self.target = target
        self.clock = clock
        self.rotate = rotate
        self.retry = retry
        self.watcher = Watcher(connect, clock, client_name)
        self.query = LiveQuery(connect, clock, client_name)
        self.mode = "looking"
        self.queue: list[str] = []
        self.current: str | None = None
        self.shown_since = 0.0
        self.ended_at: float | None = None
        self.next_try: float | None = None
        self.asking = False
        self.answer: tuple[LiveRoom, ...] | None = None  # the watcher's answer to the last question
        self.answered = False
        self.last_ask = -1e9
        self.shown: list[str] = []  # every room shown, in order (tests, logs)

    def start(self) -> None:
        self._ask()

    def close(self) -> None:
        self.query.close()
        self.watcher.leave()

    # ----- deciding ---------------------------------------------------------------------------------------
    def _ask(self) -> None:
        """Which matches are live: on the spectator connection while it watches (no new connection
        each round), else on a connection of its own."""
        self.asking = True
        self.last_ask = self.clock()
        self.answer, self.answered = None, False
        if self.watcher.questions.live_rooms(self._heard):
            return
        t = self.target
        self.query.start(t.host, t.port, tls=t.tls, pin=t.pin)

    def _heard(self, rooms: tuple[LiveRoom, ...] | None) -> None:
        self.answer, self.answered = rooms, True

    def _answered(self) -> None:
        """The list's answer: its rooms (then the configured codes), or only the codes when it failed."""
        self.asking = False
        if self.answered:
            live = [r.room for r in self.answer or ()]
        else:
            live = [r.room for r in self.query.rooms] if self.query.status == "done" else []
        self.queue = live + [c for c in self.target.rooms if c not in live]
        if self.queue:
            self._show(self.queue.pop(0))
        elif self.mode == "showing" and self._live_now():
            self.shown_since = self.clock()  # nothing listed, but this match still runs: keep it
        else:
            self._none()

    def _next(self) -> None:
        """Time to move on: the next room of this round, or ask again (calm while nothing is live)."""
        if self.queue:
            self._show(self.queue.pop(0))
            return
        if self.mode == "showing" and self._live_now():
            self.shown_since = self.clock()
            if not self.asking:
                self._ask()
            return
        self._none()
        if not self.asking and self.clock() - self.last_ask >= self.retry:
            self._ask()  # else at next_try: rooms that fail at once are not dialled in a loop

    def _show(self, code: str) -> None:
        now = self.clock()
        t = self.target
        if code == self.current and self.watcher.status == Watch.WATCHING and self._live_now():
            self.shown_since = now  # the same match again: keep watching it
            return
        if self.watcher.status == Watch.WATCHING:
            self.watcher.switch(code)
        else:
            self.watcher.watch(t.host, t.port, code, tls=t.tls, pin=t.pin)
        self.mode = "showing"
        self.current = code
        self.shown_since = now
        self.ended_at = None
        self.shown.append(code)

    def _none(self) -> None:
        if self.mode == "showing":
            self.watcher.leave()
        self.mode = "none"
        self.current = None
        self.next_try = self.clock() + self.retry

    def _live_now(self) -> bool:
        state = self.watcher.state
        return state is not None and state.status == "playing" and state.result is None

    def update(self) -> None:
        """One frame: the list's answer, the rotation, a match that ended or a room that closed."""
        now = self.clock()
        if self.asking:
            self.query.update()
            if self.answered or self.query.status in ("done", "failed"):
                self._answered()
                return
        if self.mode == "none":
            if not self.asking and self.next_try is not None and now >= self.next_try:
                self.next_try = None
                self._ask()
            return
        if self.mode != "showing":
            return
        w = self.watcher
        state = w.state
        if w.status in (Watch.CLOSED, Watch.FAILED, Watch.LEFT):
            self._next()
        elif state is not None and state.result is not None:
            if self.ended_at is None:
                self.ended_at = now
            elif now - self.ended_at >= END_HOLD:
                self._next()
        elif state is not None and state.status != "playing":
            self._next()  # a configured room with no match running: not a live match
        elif now - self.shown_since >= self.rotate:
            self._next()

    def next_wakeup(self) -> float | None:
        times = [t for t in (self.query.next_wakeup(), self.watcher.next_wakeup(), self.next_try) if t is not None]
        if self.mode == "showing":
            times.append(self.shown_since + self.rotate)
            if self.ended_at is not None:
                times.append(self.ended_at + END_HOLD)
        return min(times) if times else None


class AttractScene(Scene):
    """Draws an :class:`AttractLoop` (see the module docstring); input is the kiosk's."""

    def __init__(self, ctx: Context, loop: AttractLoop) -> None:
        super().__init__(ctx)
        self.loop = loop
        self.spectate = SpectateScene(ctx, loop.watcher, attract=True)
        self._mode = loop.mode

    def enter(self) -> None:
        self.loop.start()

    def leave(self) -> None:
        self.loop.close()

    def relayout(self) -> None:
        self.spectate.relayout()

    def update(self, now: float) -> None:
        self.spectate.update(now)  # pumps the watcher
        self.loop.update()
        if self.loop.mode != self._mode:
            self._mode = self.loop.mode
            self.ctx.invalidate(None)

    def next_wakeup(self, now: float) -> float | None:
        times = [t for t in (self.loop.next_wakeup(), self.spectate.next_wakeup(now)) if t is not None]
        return min(times) if times else None

    def process_event(self, event: InputEvent) -> bool:
        return True  # the kiosk ends attract mode on any input before it gets here

    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        if self.loop.mode == "showing":
            self.spectate.draw(canvas, area)
            return
        self._draw_calm(canvas, area)

    def _draw_calm(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        """No live match (or still looking): the wordmark, one quiet card, and the invitation to play."""
        ctx, fonts = self.ctx, self.ctx.fonts
        canvas.fill(palette.BACKGROUND, area)
        canvas.blit(shapes.circle(32, palette.CARD_RAISED), (14, 15))
        canvas.blit(shapes.icon("mine", 22, palette.PRIMARY), (19, 20))
        blit_text(canvas, fonts, ctx.t("app.title"), 21, palette.INK, bold=True, midleft=(54, 31))
        looking = self.loop.mode == "looking"
        title = ctx.t("attract.looking" if looking else "attract.none_title")
        body = ctx.t("attract.none_body", server=self.loop.target.label)
        inner = 300
        body_h = paragraph_height(fonts, body, 16, inner)
        card = pygame.Rect(0, 0, 342, 100 + 40 + body_h + 40)
        card.center = (195, 380)
        canvas.blit(shapes.rounded(card.size, 24, palette.CARD, 1, palette.CARD_BORDER), card)
        canvas.blit(shapes.circle(76, palette.CARD_RAISED), (card.centerx - 38, card.top + 28))
        eye = shapes.icon("eye", 44, palette.ME_LIGHT)
        canvas.blit(eye, eye.get_rect(center=(card.centerx, card.top + 66)))
        y = card.top + 124
        blit_text(canvas, fonts, title, fonts.fit_size(title, 22, inner, True), palette.INK, bold=True, center=(card.centerx, y))
        body_rect = pygame.Rect(card.centerx - inner // 2, y + 26, inner, body_h + 4)
        blit_paragraph(canvas, fonts, body, 16, palette.INK_SOFT, body_rect, align="center")
        touch = ctx.t("attract.touch")
        prompt = pygame.Rect(24, 700, 342, 64)
        canvas.blit(shapes.rounded(prompt.size, 32, palette.PRIMARY), prompt)
        blit_text(canvas, fonts, touch, fonts.fit_size(touch, 20, prompt.width - 40, True), palette.INK_DARK, bold=True,
                  center=prompt.center)
