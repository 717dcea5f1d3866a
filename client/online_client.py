"""The online session: one connection to a server, the room, the match, reconnection (O1–O16).

Pure logic on an injected clock, with no socket and no Twisted: a *connector* (``client/net.py``
for TCP, or an in-process server in tests and screenshots) opens a :class:`Link` and reports what
happens on it through the :class:`LinkListener` methods — already decoded into the typed messages
of :mod:`mineduel.shared.wire.messages` (the line is read once, at the edge). Those only queue;
:meth:`OnlineClient.update`, called by the app's frame loop once per frame, handles the queue — so
the frame never waits on the network, and a slow or broken server can only ever change what the
screens show.

What screens show is one frozen :class:`SessionSnapshot`: they compare it with the one they drew
and redraw only when it differs, so a message that changes nothing visible (a ``ping``, a ``pong``,
an ``ok``) redraws nothing.

What it does with the messages (docs/PROTOCOL.md):

* ``hello`` on connect; a server speaking another protocol version is refused clearly;
* create / peek / join / resume / ready / leave / rematch / resign as requests with ids, whose
  refusals become a message key for the screen (``online.error.*``);
* the session token from ``room_created`` / ``joined`` is stored at once (O12, O16) with the server
  address and room, and marked *playing* while a match runs, so a restarted client resumes by itself;
* a lost connection while seated → *reconnecting*: new attempts with exponential backoff, then
  ``hello`` + ``resume`` with the token; silence longer than the server's idle timeout counts as lost;
* a new ``match_id`` replaces the match object (O14: the previous board and result are dropped).

Anything malformed from the server (``BadMessage`` at the edge, or a room code or token that is not
one) ends the session with ``online.error.bad_server`` instead of a traceback.
"""

from __future__ import annotations

import itertools
import logging
import math
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeAlias

from mineduel.client.controller import Notice, PresenceInfo, RematchInfo
from mineduel.client.errors import error_key
from mineduel.client.online_match import OnlineMatch
from mineduel.client.tokens import SavedSession, TokenStore
from mineduel.shared.wire import codec, links
from mineduel.shared.wire.messages import (
    ClientMessage,
    CreateRoom,
    Error,
    Hello,
    Join,
    Joined,
    Leave,
    MatchAction,
    MatchEnd,
    MatchStart,
    Ok,
    PingRequest,
    Pong,
    Presence,
    Ready,
    RecordReply,
    Rematch,
    RematchStatus,
    RequestId,
    Resign,
    Resume,
    Room,
    RoomClosed,
    RoomCreated,
    RoomInfo,
    ServerClosing,
    ServerMessage,
    State,
    Peek,
    Welcome,
)
from mineduel.shared.wire.names import PROTOCOL_VERSION, ErrorCode

log = logging.getLogger(__name__)

BACKOFF = (0.5, 1.0, 2.0, 4.0, 8.0)  # seconds between reconnection attempts, then 8 s each
HEARTBEAT = 5.0  # send something at least this often (the server closes a connection silent for 15 s)
SILENCE = 20.0  # nothing received this long (the server pings every 5 s): the connection is dead
CONNECT_TIMEOUT = 10.0

Params: TypeAlias = tuple[tuple[str, str], ...]
"""A catalog key's parameters, frozen (snapshots compare them)."""


class Link(Protocol):
    """One connection, as the session sees it."""

    def send(self, message: ClientMessage) -> None: ...

    def close(self) -> None: ...


class LinkListener(Protocol):
    def link_open(self, link: Link) -> None: ...

    def link_message(self, link: Link, message: ServerMessage) -> None: ...

    def link_garbage(self, link: Link, detail: str) -> None: ...

    def link_failed(self, link: Link, detail: str) -> None: ...

    def link_closed(self, link: Link, detail: str) -> None: ...

    def link_refused(self, link: Link, detail: str) -> None: ...


class Connector(Protocol):
    """``connect(host, port, listener)``; over TLS ``connect(host, port, listener, tls=True, pin=PIN_OR_NONE)``.

    ``link_refused`` (TLS only) says the server's certificate failed its check: nothing was sent on it.
    """

    def __call__(self, host: str, port: int, listener: LinkListener, *, tls: bool = False, pin: str | None = None) -> Link: ...


@dataclass(frozen=True, slots=True)
class FoundServer:
    """A server that answered LAN discovery."""

    host: str
    port: int
    name: str
    open_rooms: int
    protocol: int = PROTOCOL_VERSION
    tls: bool = False  # the server speaks TLS (PROTOCOL.md §12) ...
    pin: str | None = None  # ... with this certificate


@dataclass(frozen=True, slots=True)
class HostInfo:
    """The server this client started (Host on this computer)."""

    port: int
    public_host: str
    stop: Callable[[], object]
    udp_port: int | None = None  # LAN discovery, when it could listen


@dataclass
class OnlineServices:
    """What the online screens need from outside: made by the app (``net.py``) or by tests."""

    connect: Connector
    tokens: TokenStore
    start_host: Callable[[], HostInfo] | None = None
    discover: Callable[[Callable[[list[FoundServer]], None]], None] | None = None
    clipboard: Callable[[str], bool] = lambda text: False
    wall_clock: Callable[[], float] = time.time
    client_name: str = "mine-duel/0.1.0"
    client_seed: Callable[[], str] = lambda: secrets.token_hex(8)  # R1: this seat's contribution to the draw
    host: HostInfo | None = field(default=None)  # the hosted server, once started


class Conn:
    IDLE = "idle"
    CONNECTING = "connecting"
    OPEN = "open"
    RECONNECTING = "reconnecting"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class LinkChange:
    """Something that happened to a link other than a message."""

    kind: Literal["open", "garbage", "failed", "closed", "refused"]
    detail: str = ""


@dataclass(frozen=True, slots=True)
class _Pending:
    request: str
    on_ok: Callable[[ServerMessage], None] | None
    on_error: Callable[[str], None] | None


@dataclass(frozen=True, slots=True)
class SessionSnapshot:
    """Everything the online screens show of the session, frozen: equal snapshots look the same.

    Times are whole seconds as shown (the reconnection countdown, the opponent's grace), so the
    snapshot changes once a second while one runs and never because a ``ping`` arrived.
    """

    conn: str
    error: str | None
    notice: tuple[str, Params] | None
    address: tuple[str, int] | None
    busy: str | None
    room_info: RoomInfo | None
    room: Room | None
    room_code: str | None
    invite: str | None
    seated: bool
    rematch: RematchInfo
    opponent_away: bool
    opponent_seconds: int | None
    opponent_gone: bool
    retry_seconds: int | None
    match_id: str | None
    match_running: bool


def _reply_id(msg: ServerMessage) -> RequestId | None:
    """The request id a reply echoes (only replies carry one)."""
    if isinstance(msg, (Welcome, Error, Ok, Pong, RoomCreated, RoomInfo, Joined, RecordReply)):
        return msg.id
    return None


def _ceil(seconds: float | None) -> int | None:
    return None if seconds is None else math.ceil(seconds)


class OnlineClient:
    """See the module docstring. Screens read :meth:`snapshot` and call its commands."""

    def __init__(self, services: OnlineServices, clock: Callable[[], float]) -> None:
        self.services = services
        self.clock = clock
        self.conn = Conn.IDLE
        self.error: str | None = None  # a catalog key: why the session stopped
        self._notice: tuple[str, Params] | None = None  # the last refusal, for the screen
        self.address: tuple[str, int] | None = None
        self.tls = False  # the connection to ``address`` is TLS ...
        self.pin: str | None = None  # ... accepting only this certificate (else the system trust store)
        self.welcome: Welcome | None = None
        self.room_info: RoomInfo | None = None
        self.room: Room | None = None
        self.room_code: str | None = None
        self.invite: str | None = None
        self.token: str | None = None
        self.token_saved = True
        self.match: OnlineMatch | None = None
        self.rematch_me = False
        self.rematch_opponent = False
        self.opponent_away_until: float | None = None  # local clock: when the opponent's grace ends
        self.opponent_grace_expired = False
        self.server_closing = False
        self.busy: str | None = None  # a request the screen waits for (create/join/peek/...)
        self._link: Link | None = None
        self._inbox: deque[tuple[Link, ServerMessage | LinkChange]] = deque()
        self._pending: dict[RequestId, _Pending] = {}
        self._ids = itertools.count(1)
        self._after_welcome: Callable[[], None] | None = None
        self._retry_at: float | None = None
        self._attempt = 0
        self._connect_deadline: float | None = None
        self._last_received = 0.0
        self._last_sent = 0.0

    # ----- LinkListener (called by the connector; only queues) ------------------------------------------
    def link_open(self, link: Link) -> None:
        self._inbox.append((link, LinkChange("open")))

    def link_message(self, link: Link, message: ServerMessage) -> None:
        self._inbox.append((link, message))

    def link_garbage(self, link: Link, detail: str) -> None:
        self._inbox.append((link, LinkChange("garbage", detail)))

    def link_failed(self, link: Link, detail: str) -> None:
        self._inbox.append((link, LinkChange("failed", detail)))

    def link_closed(self, link: Link, detail: str) -> None:
        self._inbox.append((link, LinkChange("closed", detail)))

    def link_refused(self, link: Link, detail: str) -> None:
        self._inbox.append((link, LinkChange("refused", detail)))

    # ----- what the screens show ----------------------------------------------------------------------
    @property
    def notice(self) -> tuple[str, Params] | None:
        return self._notice

    @notice.setter
    def notice(self, value: tuple[str, Params] | None) -> None:
        """The last refusal; during a match it is also said on the match screen's status line."""
        self._notice = value
        if value is not None and self.match is not None:
            self.match.tell(Notice(*value))

    @property
    def seated(self) -> bool:
        return self.room_code is not None and self.token is not None

    @property
    def connected(self) -> bool:
        return self.conn == Conn.OPEN

    def opponent_seconds_left(self) -> float | None:
        if self.opponent_away_until is None:
            return None
        return max(0.0, self.opponent_away_until - self.clock())

    def next_retry_in(self) -> float | None:
        return None if self._retry_at is None else max(0.0, self._retry_at - self.clock())

    def snapshot(self) -> SessionSnapshot:
        """What the screens show now (see :class:`SessionSnapshot`)."""
        match = self.match
        return SessionSnapshot(
            self.conn, self.error, self.notice, self.address, self.busy, self.room_info, self.room, self.room_code,
            self.invite, self.seated, self.rematch_info(), self.opponent_away_until is not None,
            _ceil(self.opponent_seconds_left()), self.opponent_grace_expired, _ceil(self.next_retry_in()),
            None if match is None else match.match_id, match is not None and match.outcome is None,
        )

    # PresenceSource and RematchSource for the match screen (controller.Capabilities).
    def presence(self) -> PresenceInfo:
        return PresenceInfo(
            connected=self.connected,
            reconnecting=self.conn in (Conn.RECONNECTING, Conn.CONNECTING),
            retry_in=self.next_retry_in(),
            opponent_away=self.opponent_away_until is not None,
            opponent_seconds=self.opponent_seconds_left(),
            opponent_gone=self.opponent_grace_expired,
        )

    def rematch_info(self) -> RematchInfo:
        opponent = self.room.opponent if self.room is not None else None
        possible = self.connected and opponent is not None and opponent.connected
        return RematchInfo(self.rematch_me, self.rematch_opponent, possible)

    def request_rematch(self) -> None:
        seed = self.services.client_seed()
        self._request(lambda rid: Rematch(seed, rid))

    # ----- commands ----------------------------------------------------------------------------------------
    def connect(self, host: str, port: int, then: Callable[[], None] | None = None, *, tls: bool = False,
                pin: str | None = None) -> None:
        """Open a connection to ``host:port``; ``then`` runs once the server has said welcome.

        ``tls`` (a ``mineduels://`` link, a server that says ``tls``): only over TLS, the certificate
        checked against ``pin`` or else the system trust store; a failed check is final, never plaintext.
        """
        self._drop_link()
        self.forget_room()
        self.address = (host, port)
        self.tls = tls
        self.pin = pin if tls else None
        self.error = None
        self.notice = None
        self.server_closing = False
        self._after_welcome = then
        self._attempt = 0
        self._retry_at = None
        self._open(Conn.CONNECTING)

    def resume_saved(self, saved: SavedSession) -> None:
        """Come back to a stored seat (O12): connect, then ``resume`` with the token."""
        self.connect(saved.host, saved.port, tls=saved.tls, pin=saved.pin)
        self.room_code = saved.room
        self.token = saved.token
        self.busy = "resume"

    def peek(self, code: str) -> None:
        self.room_info = None
        self.busy = "peek"
        self._request(lambda rid: Peek(code, rid), on_ok=self._answered)

    def create_room(self) -> None:
        if not self._can_store():
            return
        self.busy = "create"
        seed = self.services.client_seed()
        self._request(lambda rid: CreateRoom(client_seed=seed, id=rid), on_ok=self._answered)

    def join(self, code: str) -> None:
        """O1: only this seats anyone (opening a link only peeks)."""
        if not self._can_store():
            return
        self.busy = "join"
        seed = self.services.client_seed()
        self._request(lambda rid: Join(code, client_seed=seed, id=rid), on_ok=self._answered)

    def ready(self, ready: bool = True) -> None:
        # The seed is sent after the room's next_commitment was seen (R1).
        seed = self.services.client_seed() if ready else None
        self._request(lambda rid: Ready(ready, seed, rid))

    def rematch(self) -> None:
        self.request_rematch()

    def leave(self) -> None:
        """Give the seat up (outside a match); the token is forgotten."""
        self._request(lambda rid: Leave(rid), on_ok=lambda _msg: self._left())

    def resign(self) -> None:
        if self.match is not None:
            self.match.resign()

    def close(self) -> None:
        """Stop: close the connection, keep the token (the seat may be resumed later)."""
        self._drop_link()
        self.conn = Conn.IDLE
        self._retry_at = None

    def forget_room(self) -> None:
        if self.match is not None:
            self.match.close()
        self.room_info = None
        self.room = None
        self.room_code = None
        self.invite = None
        self.token = None
        self.match = None
        self.rematch_me = self.rematch_opponent = False
        self.opponent_away_until = None
        self.opponent_grace_expired = False
        self.busy = None

    # ----- the frame -----------------------------------------------------------------------------------------
    def update(self) -> None:
        """Handle everything that arrived, retry a lost connection when due, keep the heartbeat."""
        while self._inbox:
            link, item = self._inbox.popleft()
            if link is not self._link:
                continue  # an old connection
            try:
                if isinstance(item, LinkChange):
                    self._link_change(item)
                else:
                    self._last_received = self.clock()
                    self._message(item)
            except ValueError as exc:  # a room code or token that is not one: a broken server
                log.warning("online: malformed %r from the server: %s", type(item).__name__, exc)
                self._fail("online.error.bad_server")
        now = self.clock()
        if self.conn == Conn.RECONNECTING and self._retry_at is not None and now >= self._retry_at:
            self._retry_at = None
            self._open(Conn.RECONNECTING)
        elif self.conn in (Conn.CONNECTING, Conn.RECONNECTING) and self._connect_deadline is not None and now >= self._connect_deadline:
            self._connect_deadline = None
            self._lost("timeout")
        elif self.conn == Conn.OPEN and self._link is not None:
            if now - self._last_received > SILENCE:
                log.info("online: nothing heard for %.0f s; reconnecting", now - self._last_received)
                self._lost("silent")
            elif now - self._last_sent > HEARTBEAT:
                self._send(PingRequest())

    def next_wakeup(self) -> float | None:
        times = []
        if self._retry_at is not None:
            times.append(self._retry_at)
        if self._connect_deadline is not None:
            times.append(self._connect_deadline)
        if self.conn == Conn.OPEN:
            times.append(min(self._last_sent + HEARTBEAT, self._last_received + SILENCE) + 0.01)
        for left in (self.opponent_seconds_left(), self.next_retry_in()):
            if left is not None and left > 0:
                frac = left - int(left)
                times.append(self.clock() + (frac if frac > 1e-3 else 1.0))
        if self.match is not None:
            wake = self.match.next_wakeup()
            if wake is not None:
                times.append(wake)
        return min(times) if times else None

    # ----- internals -----------------------------------------------------------------------------------------
    def _can_store(self) -> bool:
        if not self.services.tokens.available():
            self.notice = ("online.token_unavailable", ())
            return False
        return True

    def _open(self, state: str) -> None:
        assert self.address is not None
        self.conn = state
        self._connect_deadline = self.clock() + CONNECT_TIMEOUT
        host, port = self.address
        try:
            if self.tls:
                self._link = self.services.connect(host, port, self, tls=True, pin=self.pin)
            else:
                self._link = self.services.connect(host, port, self)
        except Exception as exc:  # noqa: BLE001 - a bad address must become a message, not a crash
            log.warning("online: cannot connect to %s:%s: %s", host, port, exc)
            self._link = None
            self._lost("unreachable")

    def _drop_link(self) -> None:
        link, self._link = self._link, None
        self._pending.clear()
        self._connect_deadline = None
        if link is not None:
            try:
                link.close()
            except Exception:  # noqa: BLE001 - closing a dead link must not fail
                log.debug("online: closing a dead link failed", exc_info=True)

    def _send(self, message: ClientMessage) -> None:
        if self._link is None:
            return
        self._last_sent = self.clock()
        try:
            self._link.send(message)
        except Exception as exc:  # noqa: BLE001 - a dying transport: the loss is reported by the link
            log.warning("online: send failed: %s", exc)

    def _request(self, build: Callable[[str], ClientMessage], *, on_ok: Callable[[ServerMessage], None] | None = None,
                 on_error: Callable[[str], None] | None = None) -> None:
        """Send ``build(id)``; its reply (same ``id``) goes to ``on_ok``, a refusal to ``on_error``."""
        if self.conn != Conn.OPEN or self._link is None:
            if on_error is not None:
                on_error("not_connected")
            else:
                self.notice = ("online.connection_lost", ())
                self.busy = None
            return
        rid = f"m{next(self._ids)}"
        message = build(rid)
        kind = message.type if isinstance(message, MatchAction) else message.TYPE
        self._pending[rid] = _Pending(kind.value, on_ok, on_error)
        self._send(message)

    def send_action(self, message: MatchAction | Resign, on_error: Callable[[str], None]) -> None:
        """The match's way to send an action; a refusal comes back through ``on_error``."""
        if isinstance(message, MatchAction):
            self._request(lambda rid: MatchAction(message.type, message.cell, message.match_id, message.seq, rid), on_error=on_error)
        else:
            self._request(lambda rid: Resign(message.match_id, rid), on_error=on_error)

    def _lost(self, why: str) -> None:
        """The connection is gone (or never came): retry if we hold a seat, else stop with a message."""
        was = self.conn
        self._drop_link()
        if self.conn == Conn.FAILED:
            return
        if self.seated and self.error is None:
            self.conn = Conn.RECONNECTING
            delay = BACKOFF[min(self._attempt, len(BACKOFF) - 1)]
            self._attempt += 1
            self._retry_at = self.clock() + delay
            return
        if was == Conn.CONNECTING or why in ("unreachable", "timeout"):
            self._fail("online.server_unreachable")
        else:
            self._fail("online.server_closed" if self.server_closing else "online.connection_lost")

    def _fail(self, key: str) -> None:
        self._drop_link()
        self.conn = Conn.FAILED
        self.error = key
        self._retry_at = None
        self.busy = None

    def _link_change(self, change: LinkChange) -> None:
        match change.kind:
            case "open":
                self._connect_deadline = self.clock() + CONNECT_TIMEOUT
                self._last_received = self.clock()
                self._send(Hello(PROTOCOL_VERSION, self.services.client_name))
            case "garbage":
                log.warning("online: the server sent something that is not the protocol: %s", change.detail)
                self._fail("online.error.bad_server")
            case "failed":
                self._lost("unreachable")
            case "closed":
                self._lost("closed")
            case "refused":  # a certificate that fails its check: never retried, never plaintext
                log.warning("online: TLS refused by %s:%s: %s", *(self.address or ("?", 0)), change.detail)
                self._fail("online.error.tls_refused")

    def _message(self, msg: ServerMessage) -> None:
        rid = _reply_id(msg)
        pending = self._pending.pop(rid, None) if rid is not None else None
        self._push(msg)
        if pending is not None:
            if isinstance(msg, Error):
                self.busy = None
                if pending.on_error is not None:
                    pending.on_error(msg.code)
                else:
                    self._refused(pending.request, msg.code)
            elif pending.on_ok is not None:
                pending.on_ok(msg)
        elif isinstance(msg, Error):
            self._unsolicited_error(msg.code)

    def _push(self, msg: ServerMessage) -> None:
        """What each message changes (replies and pushes alike)."""
        match msg:
            case Welcome():
                self._welcomed(msg)
            case RoomInfo():
                codec.room_code(msg.room)
                self.room_info = msg
                self.busy = None
            case RoomCreated():
                self._take_seat(msg.room, msg.invite, msg.token)
            case Joined():
                self._take_seat(msg.room, msg.invite, None if msg.resumed else msg.token)
            case Room():
                self._on_room(msg)
            case Presence():
                self._on_presence(msg)
            case MatchStart():
                self._on_match_start(msg)
            case State():
                if self.match is not None and msg.match_id == self.match.match_id:
                    self.match.apply_state(msg)
            case MatchEnd():
                if self.match is not None and msg.match_id == self.match.match_id:
                    self.match.apply_end(msg)
                    self.opponent_away_until = None
                    self._save_token(playing=False)
            case RematchStatus():
                self.rematch_me, self.rematch_opponent = msg.me, msg.opponent
            case RoomClosed():
                self.services.tokens.clear()
                self.forget_room()
                self.notice = ("online.error.room_closed", ())
            case ServerClosing():
                self.server_closing = True
            case _:
                pass  # ping (the connector answered it), pong, ok, error, record: nothing to show

    # Replies and pushes ------------------------------------------------------------------------------------------
    def _welcomed(self, msg: Welcome) -> None:
        if msg.protocol != PROTOCOL_VERSION:
            self._fail("online.protocol_mismatch")
            return
        self.welcome = msg
        self.conn = Conn.OPEN
        self._connect_deadline = None
        self._attempt = 0
        self.server_closing = False
        if self.seated:
            room, token = self.room_code, self.token
            assert room is not None and token is not None
            self._request(lambda rid: Resume(room, token, rid), on_error=self._resume_refused)
        elif self._after_welcome is not None:
            then, self._after_welcome = self._after_welcome, None
            then()

    def _resume_refused(self, code: str) -> None:
        """The server no longer knows this seat (room expired, token unknown): forget it."""
        if code in (ErrorCode.BAD_TOKEN, ErrorCode.ROOM_NOT_FOUND):
            self.services.tokens.clear()
            self.forget_room()
            self.notice = ("online.error.session_gone", ())
        elif code in (ErrorCode.TOO_MANY_ATTEMPTS, ErrorCode.STORAGE_UNAVAILABLE, ErrorCode.INTERNAL_ERROR):
            # Not a verdict on the seat: keep the token and try again after the usual backoff.
            self.notice = (error_key(code), ())
            self._lost("closed")
        else:
            self._refused("resume", code)

    def _answered(self, msg: ServerMessage) -> None:
        self.busy = None

    def _take_seat(self, room: str, invite: str, token: str | None) -> None:
        """``room_created`` / ``joined``: a fresh seat brings its token; a resumed one keeps ours."""
        self.room_code = codec.room_code(room)
        self.invite = self._as_reached(invite)
        if token is not None:
            self.token = codec.token(token)
            self.rematch_me = self.rematch_opponent = False
        self.busy = None
        self._save_token(playing=self.match is not None and self.match.outcome is None)

    def _as_reached(self, invite: str) -> str:
        """The server's invite, over TLS as this client reached it: a plain ``mineduel://`` link from a
        server behind TLS would send a friend there in plaintext, which the TLS port cannot answer."""
        if not self.tls or not invite:
            return invite
        try:
            link = links.parse_link(invite)
        except ValueError:
            return invite
        if link.tls or link.code is None:
            return invite
        return links.invite_link(link.host, link.port, link.code, tls=True, pin=self.pin)

    def _save_token(self, *, playing: bool) -> None:
        if self.address is None or self.room_code is None or self.token is None:
            return
        host, port = self.address
        saved = SavedSession(host, port, self.room_code, self.token, playing, self.services.wall_clock(), self.tls, self.pin)
        self.token_saved = self.services.tokens.save(saved)
        if not self.token_saved:
            self.notice = ("online.token_unavailable", ())

    def _on_room(self, msg: Room) -> None:
        codec.room_code(msg.room)
        self.room = msg
        opponent = msg.opponent
        if opponent is None:
            self.opponent_away_until = None
            return
        self.opponent_grace_expired = opponent.grace_expired
        if opponent.grace is not None and not opponent.connected:
            self.opponent_away_until = self.clock() + max(0.0, opponent.grace.at - msg.server_time)
        elif opponent.connected:
            self.opponent_away_until = None
        self.rematch_me, self.rematch_opponent = msg.me.rematch, opponent.rematch

    def _on_presence(self, msg: Presence) -> None:
        self.opponent_grace_expired = msg.grace_expired
        if msg.connected:
            self.opponent_away_until = None
        elif msg.deadline is None:
            self.opponent_away_until = self.clock()
        else:
            self.opponent_away_until = self.clock() + max(0.0, msg.deadline.at - msg.server_time)

    def _on_match_start(self, msg: MatchStart) -> None:
        codec.match_id(msg.match_id)
        if self.match is not None and self.match.match_id == msg.match_id:
            return  # a resume repeats the start of the match we already show
        if self.match is not None:
            self.match.close()
        # O14: a new id drops the old match.
        self.match = OnlineMatch(msg, clock=self.clock, send=self.send_action, presence=self, rematch=self)
        self.rematch_me = self.rematch_opponent = False
        self._save_token(playing=True)

    def _left(self) -> None:
        self.services.tokens.clear()
        self.forget_room()

    def _refused(self, request: str, code: str) -> None:
        if request == "resume" and code in (ErrorCode.BAD_TOKEN, ErrorCode.ROOM_NOT_FOUND):
            self._resume_refused(code)
            return
        self.notice = (error_key(code), (("detail", code),))

    def _unsolicited_error(self, code: str) -> None:
        if code == ErrorCode.UNSUPPORTED_PROTOCOL:
            self._fail("online.protocol_mismatch")
        elif code == ErrorCode.REPLACED:
            self._fail("online.error.replaced")
        elif code == ErrorCode.TOO_MANY_CONNECTIONS:
            self._fail(error_key(code))
        elif code in (ErrorCode.BAD_JSON, ErrorCode.BAD_REQUEST, ErrorCode.UNKNOWN_TYPE, ErrorCode.HELLO_REQUIRED,
                      ErrorCode.LINE_TOO_LONG):
            log.warning("online: the server did not understand us (%s)", code)
            self.notice = ("online.error.other", (("detail", code),))
        # idle and others: the server closes the connection next; reconnection follows
