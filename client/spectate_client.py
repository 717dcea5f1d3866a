"""Watching a room (issue 19, PROTOCOL.md §16): one connection of its own, the public view only.

:class:`Watcher` is the spectator's session — pure logic on an injected clock, like the player's
:class:`~mineduel.client.online_client.OnlineClient`, over the same
:class:`~mineduel.client.online_link.Connection` (connect timeout, heartbeat, silence, backoff).
It sends ``hello`` then ``spectate``; every ``spectate_state`` it is sent replaces the view it holds
once it has been checked (below); the events between two views come from :mod:`spectate_events`.

* **Nothing hidden, nothing made up.** The screen draws only :attr:`Watcher.state` — a checked
  ``spectate_state`` — through :func:`public_view`, whose ``SeatView`` takes its mine layer from
  the O13 reveal after the end and from nowhere before it.
* **A hostile view changes nothing.** Beyond the codec's checks (no mine layer, no result before
  the end), a view must be for the room asked for, keep a revealed cell revealed and an opened cell
  opened by somebody, never put a marker on an open cell, and never go back in ``seq`` within a
  match. A view that fails is refused: the last good one stays on screen, the link is dropped and
  the screen says the server sent something impossible (``watch.error.bad_view``), with Try again.
* **Dropped connection**: *reconnecting* with the session's backoff, then ``hello`` and ``spectate``
  again on the new connection (§16); the view held meanwhile stays, marked as not live.
* **room_closed**: the room is gone (its last player left, or it expired, O15): watching stops
  with that message and no retry. ``leave`` (the screen's Leave, Esc) says ``leave`` and closes.
* :meth:`Watcher.switch` watches another room on the same connection (``leave``, then ``spectate``):
  the kiosk's attract mode rotates through a server's live matches with it.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

from mineduel.client.controller import BoardReveal
from mineduel.client.errors import error_key
from mineduel.client.online_link import MAX_MOVES, Connection, Connector, LinkChange
from mineduel.client.online_match import board_reveal
from mineduel.client.spectate_events import WatchEvent, changes
from mineduel.shared.rules.engine import Phase, Variant
from mineduel.shared.rules.views import SeatView
from mineduel.shared.wire import board as wire_board
from mineduel.shared.wire import codec
from mineduel.shared.wire.messages import (
    Error,
    GetRecord,
    Hello,
    Leave,
    LiveRoom,
    LiveRooms,
    LiveRoomsRequest,
    Moved,
    Ok,
    Ping,
    PingRequest,
    PongReply,
    RecordJson,
    RecordReply,
    RoomClosed,
    ServerMessage,
    Spectate,
    SpectateState,
    Welcome,
)
from mineduel.shared.wire.names import PROTOCOL_VERSION, ErrorCode

log = logging.getLogger(__name__)

__all__ = ["BadView", "LiveQuery", "Questions", "Watch", "Watcher", "check_view", "public_view"]

#: Spectate refusals with their own words; any other code is worded as errors.py words it.
WATCH_ERRORS: dict[str, str] = {
    ErrorCode.ROOM_NOT_FOUND: "watch.error.room_not_found",
    ErrorCode.SPECTATING_OFF: "watch.error.spectating_off",
    ErrorCode.TOO_MANY_SPECTATORS: "watch.error.too_many_spectators",
}

#: Refusals worth trying again later (after the backoff); the others are final.
RETRY_LATER = (ErrorCode.TOO_MANY_ATTEMPTS, ErrorCode.RATE_LIMITED, ErrorCode.INTERNAL_ERROR,
               ErrorCode.STORAGE_UNAVAILABLE)


class Watch:
    """Where the watching is: the states a :class:`Watcher` goes through."""

    IDLE = "idle"
    CONNECTING = "connecting"
    WATCHING = "watching"  # the view is live
    RECONNECTING = "reconnecting"  # the link dropped; the last view is held, not live
    CLOSED = "closed"  # room_closed: nothing more to watch
    FAILED = "failed"  # refused, unreachable, or a server that broke the protocol
    LEFT = "left"


class BadView(ValueError):
    """A ``spectate_state`` that cannot be true (see :func:`check_view`)."""


def check_view(view: SpectateState, room: str, last: SpectateState | None) -> None:
    """Refuse (``BadView``) a view the codec let through but that cannot be right for ``room``
    after ``last``: another room, open cells without an opener (B3), markers on open cells, a match
    without a board, ``seq`` going back or an open cell closing again within one match."""
    if view.room != room:
        raise BadView(f"a view of room {view.room!r}, not {room!r}")
    board = view.board
    if board is None:
        if view.match_id is not None or view.status == "playing":
            raise BadView("a match without a board")
        return
    if view.match_id is None:
        raise BadView("a board without a match")
    mask = wire_board.mask_of
    revealed = mask(board.numbers, "012345678")
    if revealed != mask(board.opened_by, "mo"):
        raise BadView("open cells and their openers disagree")
    if mask(board.markers, "mo") & revealed:
        raise BadView("a marker on an open cell")
    if view.to_move is None and view.status == "playing":
        raise BadView("a running match with nobody to move")
    if last is not None and last.match_id == view.match_id and last.board is not None:
        if view.seq < last.seq:
            raise BadView(f"seq went back from {last.seq} to {view.seq}")
        if mask(last.board.numbers, "012345678") & ~revealed:
            raise BadView("an open cell closed again")


def public_view(view: SpectateState) -> SeatView | None:
    """The board as the match screen's ``BoardView`` draws it, told from seat 0's side (``m`` = seat 0,
    blue; ``o`` = seat 1, pink). Mines only from the O13 reveal, so none before the end."""
    board = view.board
    if board is None:
        return None
    mask = wire_board.mask_of
    reveal = None if view.reveal is None else board_reveal(view.reveal)
    outcome = None if view.result is None else wire_board.outcome_of(view.result, 0)
    return SeatView(
        seat=0,
        variant=Variant.ONLINE,
        phase=Phase(view.phase) if view.phase is not None else Phase.OPEN_EXPLORE,
        to_move=view.to_move,
        turn=view.turn,
        revealed=mask(board.numbers, "012345678"),
        revealed_by_me=mask(board.opened_by, "m"),
        numbers=wire_board.numbers_of(board.numbers),
        my_mines=0 if reveal is None else reveal.my_mines,
        my_markers=mask(board.markers, "m"),
        opponent_markers=mask(board.markers, "o"),
        quota_left=0,
        outcome=outcome,
    )


@dataclass(frozen=True, slots=True)
class Seen:
    """What the screen last drew of the watcher; equal snapshots look the same."""

    status: str
    error: str | None
    revision: int
    deadline_seconds: int | None
    grace_seconds: tuple[int | None, ...]
    retry_seconds: int | None


class Watcher:
    """See the module docstring. ``connect`` gives the connector (read at each attempt)."""

    def __init__(self, connect: Callable[[], Connector], clock: Callable[[], float], client_name: str) -> None:
        self.clock = clock
        self.client_name = client_name
        self.connection = Connection(connect, clock)
        self.status = Watch.IDLE
        self.error: str | None = None  # a catalog key: why watching stopped
        self.address: tuple[str, int] | None = None
        self.tls = False
        self.pin: str | None = None
        self.via: tuple[str, int, bool, str | None] | None = None  # the node a ``moved`` named (§18); ``address`` as dialled
        self.moves = 0  # ``moved`` followed in a row without a view (at most MAX_MOVES)
        self.moving = False  # following one now: the screen says "moving to another server"
        self.room: str | None = None
        self.state: SpectateState | None = None  # the last good view
        self.reveal: BoardReveal | None = None  # O13, once the match is over
        self.events: list[WatchEvent] = []  # since the last :meth:`take_events`
        self.revision = 0  # bumped on every accepted view
        self.deadline_local: float | None = None  # the turn deadline on the local clock
        self.grace_local: tuple[float | None, ...] = ()  # each player's O12 deadline on the local clock
        self.refused_views = 0
        self._ids = itertools.count(1)
        self._spectate_id: str | None = None
        self.questions = Questions(self)  # live_rooms and get_record on this connection

    # ----- commands -------------------------------------------------------------------------------------
    def watch(self, host: str, port: int, room: str, *, tls: bool = False, pin: str | None = None) -> None:
        """Connect to ``host:port`` and watch ``room`` (a code, checked here: ``ValueError`` if it is none)."""
        self.room = codec.room_code(room)
        self.connection.drop()
        self.address = (host, port)
        self.tls, self.pin = tls, (pin if tls else None)
        self.via, self.moves, self.moving = None, 0, False
        self._forget_view()
        self.error = None
        self.connection.attempt = 0
        self.connection.retry_at = None
        self._open(Watch.CONNECTING)

    def switch(self, room: str) -> None:
        """Watch ``room`` instead, on the same server (the connection is kept when it is open)."""
        code = codec.room_code(room)
        if self.status != Watch.WATCHING or self.address is None:
            if self.address is not None:
                self.watch(*self.address, code, tls=self.tls, pin=self.pin)
            return
        self.connection.send(Leave(id=self.next_id()))
        self.room = code
        self._forget_view()
        self._send_spectate()

    def retry(self) -> None:
        """Try again after a failure (the screen's Try again)."""
        if self.address is not None and self.room is not None:
            self.watch(*self.address, self.room, tls=self.tls, pin=self.pin)

    def leave(self) -> None:
        """Stop watching: ``leave`` on an open link, then close it."""
        if self.status == Watch.WATCHING:
            self.connection.send(Leave(id=self.next_id()))
        self.connection.drop()
        self.questions.drop()
        self.connection.retry_at = None
        self.status = Watch.LEFT

    close = leave

    def take_events(self) -> list[WatchEvent]:
        events, self.events = self.events, []
        return events

    # ----- what the screen shows ---------------------------------------------------------------------------
    @property
    def live(self) -> bool:
        return self.status == Watch.WATCHING and self.state is not None

    def deadline_left(self) -> float | None:
        """The turn's seconds left, while the view is live (a held view's deadline is not known any more)."""
        if self.deadline_local is None or self.status != Watch.WATCHING:
            return None
        return max(0.0, self.deadline_local - self.clock())

    def grace_left(self, seat: int) -> float | None:
        if seat >= len(self.grace_local) or self.grace_local[seat] is None:
            return None
        return max(0.0, (self.grace_local[seat] or 0.0) - self.clock())

    def retry_in(self) -> float | None:
        return self.connection.retry_in()

    def seen(self) -> Seen:
        def whole(x: float | None) -> int | None:
            return None if x is None else math.ceil(x)

        graces = tuple(whole(self.grace_left(i)) for i in range(len(self.grace_local)))
        return Seen(self.status, self.error, self.revision, whole(self.deadline_left()), graces, whole(self.retry_in()))

    # ----- the frame ------------------------------------------------------------------------------------------
    def update(self) -> None:
        """Handle what arrived; retry a dropped link when due; keep the heartbeat."""
        for item in self.connection.arrived():
            if isinstance(item, LinkChange):
                self._link_change(item)
            else:
                self._message(item)
        due = self.connection.due(connecting=self.status in (Watch.CONNECTING, Watch.RECONNECTING),
                                  retrying=self.status == Watch.RECONNECTING and self.connection.link is None,
                                  open_=self.status == Watch.WATCHING)
        if due == "retry":
            self._open(Watch.RECONNECTING)
        elif due in ("timeout", "silent"):
            self._lost(due)
        elif due == "heartbeat":
            self.connection.send(PingRequest())

    def next_wakeup(self) -> float | None:
        times = self.connection.wakeups(open_=self.status == Watch.WATCHING)
        now = self.clock()
        for left in (self.deadline_left(), self.retry_in(), *(self.grace_left(i) for i in range(len(self.grace_local)))):
            if left is not None and left > 0:
                frac = left - int(left)
                times.append(now + (frac if frac > 1e-3 else 1.0))
        return min(times) if times else None

    # ----- the connection -----------------------------------------------------------------------------------------
    def next_id(self) -> str:
        """A fresh request id on this watcher's connection (``Questions`` use it too)."""
        return f"w{next(self._ids)}"

    def _open(self, status: str) -> None:
        assert self.address is not None
        self.status = status
        host, port, tls, pin = self.via or (*self.address, self.tls, self.pin)  # a moved's node, else the one named
        if not self.connection.open(host, port, tls=tls, pin=pin):
            self._lost("unreachable")

    def _lost(self, why: str) -> None:
        """The link is gone: keep trying while a view was live (or is held), else say it could not connect."""
        self.connection.drop()
        self.questions.drop()
        if self.status in (Watch.FAILED, Watch.CLOSED, Watch.LEFT):
            return
        if self.state is not None or self.status == Watch.RECONNECTING:
            self.status = Watch.RECONNECTING
            self.connection.back_off()
            self.via = None  # after a move: back to the address dialled (a cluster's front)
            return
        self._fail("online.server_unreachable" if why in ("unreachable", "timeout") else "online.connection_lost")

    def _fail(self, key: str) -> None:
        self.connection.drop()
        self.questions.drop()
        self.connection.retry_at = None
        self.status = Watch.FAILED
        self.moving = False
        self.error = key
        self.revision += 1

    def _link_change(self, change: LinkChange) -> None:
        match change.kind:
            case "open":
                self.connection.opened()
                self.connection.send(Hello(PROTOCOL_VERSION, self.client_name))
            case "garbage":
                log.warning("watch: the server sent something that is not the protocol: %s", change.detail)
                self._fail("online.error.bad_server")
            case "failed":
                self._lost("unreachable")
            case "closed":
                self._lost("closed")
            case "refused":
                self._fail("online.error.tls_refused")

    def _send_spectate(self) -> None:
        assert self.room is not None
        self._spectate_id = self.next_id()
        self.connection.send(Spectate(self.room, id=self._spectate_id))

    def _message(self, msg: ServerMessage) -> None:
        if self.questions.answer(msg):
            return
        match msg:
            case Welcome():
                if msg.protocol != PROTOCOL_VERSION:
                    self._fail("online.protocol_mismatch")
                    return
                self.connection.welcomed()
                self._send_spectate()
            case SpectateState():
                self._view(msg)
            case Moved():
                follow_moved(self, msg)
            case Ok() if msg.id is not None and msg.id == self._spectate_id:
                self.status = Watch.WATCHING
                self.connection.attempt = 0
                self.revision += 1
            case Error() if msg.id is not None and msg.id == self._spectate_id:
                self._refused(msg.code)
            case Error() if msg.id is None and msg.code == ErrorCode.UNSUPPORTED_PROTOCOL:
                self._fail("online.protocol_mismatch")
            case RoomClosed() if msg.room == self.room:
                self.connection.drop()
                self.status = Watch.CLOSED
                # The host turned watching off (§16): the room goes on, but not for us.
                self.error = "watch.closed_off" if msg.reason == "spectating_off" else "watch.room_closed"
                self.deadline_local = None
                self.revision += 1
            case Ping():
                self.connection.send(PongReply())
            case _:
                pass  # pong, ok of leave, another room's leftovers: nothing to show

    def _refused(self, code: str) -> None:
        if code in RETRY_LATER and self.state is not None:
            self.connection.drop()
            self.status = Watch.RECONNECTING
            self.connection.back_off()
            return
        self._fail(WATCH_ERRORS.get(code, error_key(code)))

    def _view(self, msg: SpectateState) -> None:
        if self.room is None or msg.room != self.room:
            return  # the room left just before (switch): its last views may still be on the way
        try:
            check_view(msg, self.room, self.state)
        except BadView as exc:
            log.warning("watch: refused a view from the server: %s", exc)
            self.refused_views += 1
            self._fail("watch.error.bad_view")
            return
        self.events += changes(self.state, msg)
        self.state = msg
        self.moves, self.moving = 0, False
        if self.status in (Watch.CONNECTING, Watch.RECONNECTING):
            self.status = Watch.WATCHING  # the view is the answer; its ``ok`` only follows it (§16)
            self.connection.attempt = 0
        self.reveal = None if msg.reveal is None else board_reveal(msg.reveal)
        now = self.clock()
        at = msg.deadline
        self.deadline_local = None if at is None or msg.status != "playing" else now + max(0.0, at.at - msg.server_time)
        self.grace_local = tuple(
            None if p.grace is None or p.connected else now + max(0.0, p.grace.at - msg.server_time) for p in msg.players
        )
        self.revision += 1

    def _forget_view(self) -> None:
        self.state = None
        self.reveal = None
        self.events = []
        self.deadline_local = None
        self.grace_local = ()
        self._spectate_id = None
        self.revision += 1


def follow_moved(w: Watcher, msg: Moved) -> None:
    """PROTOCOL.md §18 for a spectator: the room is served by another node. Close, connect there
    (TLS and pin as it says), ``hello`` and ``spectate`` again (the view held stays, marked not live).
    Refused with a clear error: a ``moved`` for another room or request, one from TLS to plaintext,
    and the fourth in a row without a view."""
    if msg.request is not None and msg.id != w._spectate_id:
        return  # answers nothing this link asked for
    secure = w.tls or (w.via is not None and w.via[2])  # never from TLS to plaintext (§1)
    if msg.room != w.room or msg.request not in (None, "spectate") or (secure and not msg.tls):
        log.warning("watch: refused a moved (%s, room %s, tls %s)", msg.request, msg.room, msg.tls)
        w._fail("online.error.bad_server")
        return
    w.moves += 1
    if w.moves > MAX_MOVES:
        w._fail("cluster.error.too_many_moves")
        return
    w.connection.drop()
    w.questions.drop()
    w.via = (msg.host, msg.port, msg.tls, msg.pin if msg.tls else None)
    w.moving = True
    w.connection.attempt, w.connection.retry_at = 0, None
    w._open(Watch.RECONNECTING if w.state is not None else Watch.CONNECTING)
    w.revision += 1


class Questions:
    """What a watcher may ask on its connection besides watching (§16): ``live_rooms`` (the kiosk's
    rotation) and ``get_record`` (Replay after the end). Each answer goes to its callback; a link
    that closes first answers ``None`` to every question still open."""

    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher
        self._live: dict[str, Callable[[tuple[LiveRoom, ...] | None], None]] = {}
        self._records: dict[str, Callable[[RecordJson | None, str | None], None]] = {}

    def live_rooms(self, answer: Callable[[tuple[LiveRoom, ...] | None], None]) -> bool:
        """``answer(rooms)``, or ``answer(None)`` when refused or the link drops; ``False``: not watching now."""
        w = self.watcher
        if w.status != Watch.WATCHING:
            return False
        rid = w.next_id()
        self._live[rid] = answer
        w.connection.send(LiveRoomsRequest(id=rid))
        return True

    def record(self, match_id: str, answer: Callable[[RecordJson | None, str | None], None]) -> bool:
        """The finished match's public record (R3): ``answer(record, None)`` or ``answer(None, code)``."""
        w = self.watcher
        if w.status != Watch.WATCHING:
            return False
        rid = w.next_id()
        self._records[rid] = answer
        w.connection.send(GetRecord(match_id, id=rid))
        return True

    def answer(self, msg: ServerMessage) -> bool:
        """Route a reply to its question; ``False`` when ``msg`` answers none of them."""
        rid = getattr(msg, "id", None)
        if rid is None:
            return False
        rid = str(rid)
        if rid in self._live and isinstance(msg, (LiveRooms, Error)):
            rooms = tuple(r for r in msg.rooms if _valid_code(r.room)) if isinstance(msg, LiveRooms) else None
            self._live.pop(rid)(rooms)
            return True
        if rid in self._records and isinstance(msg, (RecordReply, Error)):
            record, code = (msg.record, None) if isinstance(msg, RecordReply) else (None, msg.code)
            self._records.pop(rid)(record, code)
            return True
        return False

    def drop(self) -> None:
        """No answer will come on a closed link."""
        live, self._live = self._live, {}
        records, self._records = self._records, {}
        for answer in live.values():
            answer(None)
        for record_answer in records.values():
            record_answer(None, "connection_lost")


class LiveQuery:
    """One ``live_rooms`` question (PROTOCOL.md §16, C1) on a connection of its own: connect, ``hello``,
    ``live_rooms``, the answer, closed. ``status``: ``asking``, ``done`` (``rooms``) or ``failed``
    (``error``, a catalog key; a server too old to know the request says ``unknown_type``)."""

    def __init__(self, connect: Callable[[], Connector], clock: Callable[[], float], client_name: str) -> None:
        self.connection = Connection(connect, clock)
        self.client_name = client_name
        self.status = "idle"
        self.rooms: tuple[LiveRoom, ...] = ()
        self.error: str | None = None
        self.address: tuple[str, int] | None = None
        self._id = "live"

    def start(self, host: str, port: int, *, tls: bool = False, pin: str | None = None) -> None:
        self.connection.drop()
        self.address = (host, port)
        self.status, self.error = "asking", None
        if not self.connection.open(host, port, tls=tls, pin=pin if tls else None):
            self._done("failed", "online.server_unreachable")

    def close(self) -> None:
        self.connection.drop()
        if self.status == "asking":
            self.status = "idle"

    def update(self) -> None:
        if self.status != "asking":
            return
        for item in self.connection.arrived():
            if isinstance(item, LinkChange):
                if item.kind == "open":
                    self.connection.opened()
                    self.connection.send(Hello(PROTOCOL_VERSION, self.client_name))
                elif item.kind == "garbage":
                    self._done("failed", "online.error.bad_server")
                else:
                    self._done("failed", "online.server_unreachable")
            elif isinstance(item, Welcome):
                self.connection.welcomed()
                self.connection.send(LiveRoomsRequest(id=self._id))
            elif isinstance(item, LiveRooms) and item.id == self._id:
                self.rooms = tuple(r for r in item.rooms if _valid_code(r.room))
                self._done("done", None)
            elif isinstance(item, Error) and item.id == self._id:
                self._done("failed", "watch.live_unsupported" if item.code == ErrorCode.UNKNOWN_TYPE else error_key(item.code))
            elif isinstance(item, Ping):
                self.connection.send(PongReply())
            if self.status != "asking":
                return
        if self.connection.due(connecting=True, retrying=False, open_=False) == "timeout":
            self._done("failed", "online.server_unreachable")

    def next_wakeup(self) -> float | None:
        times = self.connection.wakeups(open_=False) if self.status == "asking" else []
        return min(times) if times else None

    def _done(self, status: str, error: str | None) -> None:
        self.status, self.error = status, error
        self.connection.drop()


def _valid_code(code: str) -> bool:
    try:
        codec.room_code(code)
    except ValueError:
        return False
    return True
