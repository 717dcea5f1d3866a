"""The spectator screen (issue 19): a room's match watched live, with no input to the match.

It is the match screen's look without its controls — the same header, player cards, status card,
:class:`~mineduel.client.ui.board.BoardView` and O13 reveal (``match_paint.draw_reveal``), drawn by
:mod:`.spectate_paint` — fed by a :class:`~mineduel.client.spectate_client.Watcher` instead of a
match controller. Seat 0 is the blue side and seat 1 the pink one, as the public view spells them
(``m`` / ``o``, PROTOCOL.md §16); each card names its player. Shown: the turn deadline counting
down (U6), a player away with their grace (O12), how many watch, a live event line saying what just
happened (:mod:`~mineduel.client.spectate_events`), and after the end the result and the full
reveal; a rematch (O14) continues on the same screen. A closed room or a lost connection says so
(the watcher reconnects by itself); Leave (or Esc / Backspace) goes back at any time.

Nothing on the board, the cards or the lines comes from anywhere but the watcher's last checked
``spectate_state``: the screen has no other source (and no way to act: it sends nothing but
``leave``). ``attract=True`` is the kiosk's attract mode (client/kiosk.py): no Leave button, the
footer invites a touch instead, and the owner decides what a touch does.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import replace

import pygame

from mineduel.client.scenes.base import Context, Scene
from mineduel.client.spectate_client import Watch, Watcher, public_view
from mineduel.client.spectate_events import WatchEvent, winner_seat
from mineduel.client.ui import palette
from mineduel.client.ui.input import InputEvent, KeyEvent, PointerEvent
from mineduel.client.ui.widgets import Button, WidgetGroup
from mineduel.shared.rules.bitboard import COLS
from mineduel.shared.wire.messages import RecordJson

log = logging.getLogger(__name__)

__all__ = ["EVENT_LINES", "SpectateScene", "display_name"]

NAMED_EVENTS = frozenset({"match_start", "explored", "explored_many", "auto_explored", "planted", "auto_planted",
                          "flagged", "unflagged", "ended", "timeout", "away", "back", "end.ko", "end.resign",
                          "end.disconnect"})  # said only with the seat that did it
EVENT_LINES = 1  # the newest view's last event (one that covers several actions names the latest)
NAME_LIMIT = 24
RETRYABLE = ("online.server_unreachable", "online.connection_lost", "watch.error.bad_view",
             "online.error.bad_server", "online.error.too_many_attempts", "online.error.rate_limited")


def display_name(raw: str) -> str:
    """A player's name as the screen may show it: printable characters only, trimmed, not too long
    (the server's limit is the server's; a hostile one is still only a label here)."""
    shown = "".join(ch for ch in raw if ch.isprintable()).strip()
    return shown[:NAME_LIMIT].rstrip() + ("..." if len(shown) > NAME_LIMIT else "")


class SpectateScene(Scene):
    """See the module docstring. ``on_leave`` runs after the scene is popped (Leave, Esc)."""

    def __init__(self, ctx: Context, watcher: Watcher, *, on_leave: Callable[[], None] = lambda: None,
                 attract: bool = False) -> None:
        super().__init__(ctx)
        from mineduel.client.scenes.spectate_paint import SpectatePainter

        self.watcher = watcher
        self.on_leave = on_leave
        self.attract = attract
        self.events: list[WatchEvent] = []  # the newest view's events (the event line)
        self.match_id: str | None = None
        self.left = False
        self.widgets = WidgetGroup(ctx.invalidate, lambda: self.ctx.keyboard)
        self.paint = SpectatePainter(self)
        self._seen = watcher.seen()
        self.fetching: str | None = None  # the match whose record is being fetched for the replay
        self._problem = (self.problem(), self.replayable())
        self._follow()
        self.relayout()

    # ----- what is shown (all from the watcher's last checked view) -----------------------------------------
    def name(self, seat: int) -> str:
        state = self.watcher.state
        raw = "" if state is None or seat >= len(state.players) else display_name(state.players[seat].name)
        return raw or self.ctx.t("watch.player", n=seat + 1)

    def event_text(self) -> str | None:
        """The live event line: the newest view's events (the last :data:`EVENT_LINES`) in words; while
        the link is down, that the board is the last view seen."""
        if self.watcher.status == Watch.RECONNECTING and self.watcher.state is not None:
            return self.ctx.t("cluster.moving" if self.watcher.moving else "watch.held")  # issue 21: no drop, a move
        state = self.watcher.state
        if self.watcher.status == Watch.CLOSED and state is not None and state.result is None:
            return self.ctx.t("watch.last_view")  # sent away or the room closed mid-match: nothing here is live now
        texts = [self.event_words(e) for e in self.events[-EVENT_LINES:]]
        texts = [t for t in texts if t]
        return " · ".join(texts) if texts else None

    def event_words(self, event: WatchEvent) -> str:
        """One event in words. Every placeholder gets a value (a hostile view may name no seat or
        cell where a real one would): the line is then vaguer, never a failed frame."""
        t = self.ctx.t
        seat = 0 if event.seat is None else event.seat
        params: dict[str, object] = {"count": event.count, "number": event.count, "name": self.name(seat),
                                     "other": self.name(1 - seat), "cell": ""}
        if event.cell is not None:
            row, col = divmod(event.cell, COLS)
            params["cell"] = t("cell.name", row=row + 1, col=col + 1)
        if event.seat is None and event.key in NAMED_EVENTS:
            return ""
        if event.key == "match_start" and event.count <= 1:
            return t("watch.event.first_match", **params)
        return t(f"watch.event.{event.key}", **params)

    def title(self) -> str:
        """What is happening now: the result, whose step it is, or what the room waits for."""
        t = self.ctx.t
        w = self.watcher
        state = w.state
        if state is None:
            if w.status == Watch.FAILED:  # refused before any view (e.g. spectating_off): nothing is coming
                return t("watch.no_view_failed")
            return t("watch.connecting" if w.status in (Watch.CONNECTING, Watch.IDLE) else "watch.no_view")
        if state.result is not None:
            winner = winner_seat(state)
            if winner is not None:
                return t("watch.result.win", name=self.name(winner))
            return t("result.title.void" if state.result.outcome == "void" else "result.title.draw")
        if state.status != "playing" or state.to_move is None or state.phase is None:
            return t("watch.status.waiting")
        return t(f"watch.status.{state.phase}", name=self.name(state.to_move))

    def result_detail(self) -> str | None:
        """After the end: why, and the score when markers decided it (O9, O10)."""
        state = self.watcher.state
        if state is None or state.result is None:
            return None
        result = state.result
        t = self.ctx.t
        loser = None if (w := winner_seat(state)) is None else 1 - w
        params: dict[str, object] = {"name": self.name(loser) if loser is not None else ""}
        text = t(f"watch.reason.{result.reason}", **params)
        if result.scores is not None:
            text += " · " + t("watch.score", a=result.scores.me, b=result.scores.opponent)
        return text

    def banner(self) -> str | None:
        """A player away (O12): who, and the seconds left to come back."""
        state = self.watcher.state
        if state is None or state.status != "playing":
            return None
        for seat, player in enumerate(state.players):
            if not player.connected:
                left = self.watcher.grace_left(seat)
                if left is None:
                    return self.ctx.t("watch.away_plain", name=self.name(seat))
                return self.ctx.t("watch.away", name=self.name(seat), seconds=int(left + 0.999))
        return None

    def problem(self) -> tuple[str, bool] | None:
        """A message over the board (the key, and whether Try again is offered), or ``None``."""
        w = self.watcher
        if w.status == Watch.CLOSED:  # gone, or its host turned watching off (issue 19)
            return w.error if w.error == "watch.closed_off" else "watch.room_closed", False
        if w.status == Watch.FAILED and w.error is not None:
            return w.error, w.error in RETRYABLE
        return None

    # ----- commands -----------------------------------------------------------------------------------------------
    def go_back(self) -> None:
        """Leave (the button, Esc): stop watching (``leave``) and go back."""
        if self.left:
            return
        self.left = True
        self.watcher.leave()
        if self.ctx.stack.top is self:
            self.ctx.stack.pop()
        self.on_leave()

    def leave(self) -> None:
        """Taken off the stack (by Leave or by anything else): stop watching."""
        if self.watcher.status != Watch.LEFT:
            self.watcher.leave()

    def retry(self) -> None:
        self.watcher.retry()
        self._changed()

    def replayable(self) -> str | None:
        """The finished match's id while its end is on screen and the link is live (its record is public, R3)."""
        w = self.watcher
        state = w.state
        if state is None or state.result is None or state.match_id is None or w.status != Watch.WATCHING:
            return None
        return state.match_id

    def replay(self) -> None:
        """The finished match in the replay viewer (issue 19 item 3): its record asked with get_record
        on this connection (§16); Back returns here, where the next match may have begun meanwhile."""
        match_id = self.replayable()
        if match_id is None or self.fetching is not None:
            return
        if self.watcher.questions.record(match_id, self._record):
            self.fetching = match_id
            self.relayout()

    def _record(self, record: RecordJson | None, code: str | None) -> None:
        self.fetching = None
        if record is None:
            log.info("watch: no record for the replay (%s)", code)
            self.events = [WatchEvent("replay_failed")]
            self.relayout()
            return
        from mineduel.client.scenes.replay_viewer import ReplayViewer

        self.relayout()
        self.ctx.stack.push(ReplayViewer(self.ctx, json.dumps(record), on_back=lambda: None, seat=0))

    def open_language(self) -> None:
        """U5 on every online screen: the language changes, the watching does not."""
        from mineduel.client.scenes.popups import LanguagePopup

        self.ctx.stack.open_popup(LanguagePopup(self.ctx, self._choose_language))

    def _choose_language(self, code: str) -> None:
        self.ctx.tr.set_language(code)
        self.ctx.save_settings(replace(self.ctx.settings, language=code))
        self.ctx.stack.relayout()

    # ----- layout --------------------------------------------------------------------------------------------------
    def relayout(self) -> None:
        paint = self.paint
        t = self.ctx.t
        buttons: list[Button] = []
        if not self.attract:
            buttons.append(Button(paint.LANGUAGE.copy(), lambda: "", self.open_language, style="ghost", icon="globe",
                                  icon_color=palette.INK, radius=12, name="language"))
            leave = paint.LEAVE.copy()
            if self.replayable() is not None:  # after the end: Replay | Leave
                half = (leave.width - 10) // 2
                buttons.append(Button(pygame.Rect(leave.left, leave.top, half, leave.height), lambda: t("replay.open"),
                                      self.replay, style="primary", icon="restart", name="replay", text_size=18,
                                      enabled=self.fetching is None))
                leave = pygame.Rect(leave.left + half + 10, leave.top, leave.width - half - 10, leave.height)
            buttons.append(Button(leave, lambda: t("watch.leave"), self.go_back, style="secondary",
                                  icon="back", name="leave", text_size=18))
            problem = self.problem()
            if problem is not None and problem[1]:
                buttons.append(Button(paint.retry_rect(), lambda: t("online.retry"), self.retry, style="primary",
                                      icon="restart", name="retry", text_size=17))
        focus = self.widgets.focused()
        self.widgets.set(buttons)
        names = [b.name for b in buttons]
        if focus is not None and focus.name in names:
            self.widgets.focus_name(focus.name)
        self.ctx.invalidate(None)

    def _follow(self) -> None:
        """The board follows the newest view; a new match (O14) starts on a clean board."""
        w = self.watcher
        state = w.state
        board = self.paint.board
        if state is None or state.match_id != self.match_id:
            board.reset()
            self.match_id = None if state is None else state.match_id
        view = None if state is None else public_view(state)
        if view is not None:
            board.set_view(view, self.ctx.clock())
        board.set_ko(None if w.reveal is None else w.reveal.ko_cell)
        events = w.take_events()
        if events:
            self.events = events

    def _changed(self) -> None:
        """A new view (or status): the board redraws its changed cells itself; the words around it are
        redrawn; the buttons are laid out again only when watching stopped or started again."""
        self._follow()
        self._seen = self.watcher.seen()
        problem = (self.problem(), self.replayable())
        if problem != self._problem:
            self._problem = problem
            self.relayout()
            return
        for rect in self.paint.WORDS:
            self.ctx.invalidate(rect)

    # ----- the frame ------------------------------------------------------------------------------------------------
    def update(self, now: float) -> None:
        w = self.watcher
        w.update()
        seen = w.seen()
        if seen.revision != self._seen.revision or seen.status != self._seen.status or seen.error != self._seen.error:
            self._changed()
        elif seen != self._seen:
            self._seen = seen
            for rect in self.paint.TICKING:  # a countdown ticked: the cards, the banner, the footer
                self.ctx.invalidate(rect)
        board = self.paint.board
        board.update(now)

    def next_wakeup(self, now: float) -> float | None:
        wake = self.watcher.next_wakeup()
        if self.paint.board.animating():
            wake = now + 1 / 60 if wake is None else min(wake, now + 1 / 60)
        return wake

    def process_event(self, event: InputEvent) -> bool:
        if isinstance(event, KeyEvent) and event.key in (pygame.K_ESCAPE, pygame.K_BACKSPACE) and not self.attract:
            self.go_back()
            return True
        if isinstance(event, (KeyEvent, PointerEvent)):
            return self.widgets.handle(event)  # the board takes nothing: a spectator never acts
        return False

    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        self.paint.draw(canvas, area)
        self.widgets.draw(canvas, self.ctx.fonts, area)
