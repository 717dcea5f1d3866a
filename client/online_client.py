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

The session is three parts, one idea each: :class:`~mineduel.client.online_link.Connection` (the
link, its queued events, reconnection backoff, heartbeat and silence), :class:`~mineduel.client.
online_requests.Requests` (ids, replies, the room commands and what a refusal says) and, here, the
room, the seat and the match the server's messages describe, with :class:`OpponentState` for the
opponent's presence and rematch wish.

Anything malformed from the server (``BadMessage`` at the edge, or a room code or token that is not
one) ends the session with ``online.error.bad_server`` instead of a traceback.
"""

from __future__ import annotations

import logging
import math
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeAlias

from mineduel.client.controller import Notice, PresenceInfo, RematchInfo
from mineduel.client.errors import error_key
from mineduel.client.online_link import MAX_MOVES, Connection, Connector, LinkChange
from mineduel.client.online_match import OnlineMatch
from mineduel.client.online_requests import Requests
from mineduel.client.player_key import KeyStore
from mineduel.client.player_session import PlayerSession, PlayerSnapshot
from mineduel.client.tokens import SavedSession, TokenStore
from mineduel.client.witness import WitnessKeeper, WitnessStore, server_label
from mineduel.shared.version import VERSION
from mineduel.shared.wire import codec, links
from mineduel.shared.wire.messages import (
    Hello,
    Joined,
    MatchEnd,
    MatchStart,
    Moved,
    Ping,
    PingRequest,
    PongReply,
    Presence,
    RematchStatus,
    Room,
    RoomClosed,
    RoomCreated,
    RoomInfo,
    ServerClosing,
    ServerMessage,
    State,
    Welcome,
)
from mineduel.shared.wire.names import PROTOCOL_VERSION, ErrorCode

log = logging.getLogger(__name__)

Params: TypeAlias = tuple[tuple[str, str], ...]
"""A catalog key's parameters, frozen (snapshots compare them)."""


@dataclass(frozen=True, slots=True)
class LanRoom:
    """A room a LAN server says waits for a player (PROTOCOL.md §12): its code and its host's name."""

    code: str
    host_name: str  # may be empty: the screen then says "a player"
    watchable: bool = True  # false: the room refuses spectators (PROTOCOL.md §12 ``watchable``; an older server: true)


@dataclass(frozen=True, slots=True)
class FoundServer:
    """A server that answered LAN discovery (one entry per server: ``server/discovery.merge``)."""

    host: str
    port: int
    name: str
    open_rooms: int
    protocol: int = PROTOCOL_VERSION
    tls: bool = False  # the server speaks TLS (PROTOCOL.md §12) ...
    pin: str | None = None  # ... with this certificate
    instance: str | None = None  # this start of the server, if it says
    rooms: tuple[LanRoom, ...] = ()  # rooms waiting for a player, newest first
    via: str | None = None  # the cluster node that answered: ``host``/``port`` are its front (PROTOCOL.md §12)


@dataclass(frozen=True, slots=True)
class HostInfo:
    """The server this client started (Host on this computer)."""

    port: int
    public_host: str
    stop: Callable[[], object]
    udp_port: int | None = None  # LAN discovery, when it could listen
    addresses: tuple[str, ...] = ()  # every address a friend could dial, best first (``public_host`` is the first)
    only_loopback: bool = False  # no such address: the friend must be on this computer (lan_address.py)


@dataclass
class OnlineServices:
    """What the online screens need from outside: made by the app (``net.py``) or by tests."""

    connect: Connector
    tokens: TokenStore
    start_host: Callable[[], HostInfo] | None = None
    discover: Callable[[Callable[[list[FoundServer]], None]], None] | None = None
    clipboard: Callable[[str], bool] = lambda text: False
    wall_clock: Callable[[], float] = time.time
    client_name: str = f"mine-duel/{VERSION}"
    client_seed: Callable[[], str] = lambda: secrets.token_hex(8)  # R1: this seat's contribution to the draw
    host: HostInfo | None = field(default=None)  # the hosted server, once started
    witnesses: WitnessStore | None = None  # the match witnesses; default: ``witnesses/`` beside the token
    name_skipped: bool = False  # the player skipped the name popup: not asked again in this run
    keys: KeyStore | None = None  # the player's identity key (issue 20); default: beside the token

    def __post_init__(self) -> None:
        if self.witnesses is None:
            self.witnesses = WitnessStore(self.tokens.folder / "witnesses")
        if self.keys is None:
            self.keys = KeyStore(self.tokens.folder)


class Conn:
    IDLE = "idle"
    CONNECTING = "connecting"
    OPEN = "open"
    RECONNECTING = "reconnecting"
    FAILED = "failed"


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
    players: PlayerSnapshot | None = None  # identity, quick match, profile, leaderboard (issue 20)


def _ceil(seconds: float | None) -> int | None:
    return None if seconds is None else math.ceil(seconds)


def as_reached(invite: str, tls: bool, pin: str | None) -> str:
    """The server's invite, over TLS as this client reached it: a plain ``mineduel://`` link from a
    server behind TLS would send a friend there in plaintext, which the TLS port cannot answer."""
    if not tls or not invite:
        return invite
    try:
        link = links.parse_link(invite)
    except ValueError:
        return invite
    if link.tls or link.code is None:
        return invite
    return links.invite_link(link.host, link.port, link.code, tls=True, pin=pin)


def unsolicited(code: str) -> tuple[str, str] | None:
    """An error that answers no request: ``("fail", key)`` ends the session, ``("notice", key)``
    only tells the player; ``None`` (idle and others): the server closes the link next and
    reconnection follows."""
    if code == ErrorCode.UNSUPPORTED_PROTOCOL:
        return "fail", "online.protocol_mismatch"
    if code == ErrorCode.REPLACED:
        return "fail", "online.error.replaced"
    if code == ErrorCode.TOO_MANY_CONNECTIONS:
        return "fail", error_key(code)
    if code in (ErrorCode.BAD_JSON, ErrorCode.BAD_REQUEST, ErrorCode.UNKNOWN_TYPE, ErrorCode.HELLO_REQUIRED,
                ErrorCode.LINE_TOO_LONG):
        log.warning("online: the server did not understand us (%s)", code)
        return "notice", "online.error.other"
    return None


class OpponentState:
    """The opponent as the room shows them: away (until when, on the local clock), gone for good,
    and the two rematch wishes."""

    def __init__(self) -> None:
        self.away_until: float | None = None  # local clock: when the opponent's grace ends
        self.grace_expired = False
        self.rematch_me = False
        self.rematch_opponent = False

    def clear(self) -> None:
        self.away_until = None
        self.grace_expired = False
        self.rematch_me = self.rematch_opponent = False

    def on_room(self, msg: Room, now: float) -> None:
        opponent = msg.opponent
        if opponent is None:
            self.away_until = None
            return
        self.grace_expired = opponent.grace_expired
        if opponent.grace is not None and not opponent.connected:
            self.away_until = now + max(0.0, opponent.grace.at - msg.server_time)
        elif opponent.connected:
            self.away_until = None
        self.rematch_me, self.rematch_opponent = msg.me.rematch, opponent.rematch

    def on_presence(self, msg: Presence, now: float) -> None:
        self.grace_expired = msg.grace_expired
        if msg.connected:
            self.away_until = None
        elif msg.deadline is None:
            self.away_until = now
        else:
            self.away_until = now + max(0.0, msg.deadline.at - msg.server_time)

    def seconds_left(self, now: float) -> float | None:
        return None if self.away_until is None else max(0.0, self.away_until - now)


class SessionView:
    """What the screens see of the session: the lobby's frozen snapshot, and the match screen's
    presence and rematch sources (controller.Capabilities)."""

    def __init__(self, session: OnlineClient) -> None:
        self.session = session

    def snapshot(self) -> SessionSnapshot:
        """What the screens show now (see :class:`SessionSnapshot`)."""
        s = self.session
        match = s.match
        opponent = s.opponent
        return SessionSnapshot(
            s.conn, s.error, s.notice, s.address, s.busy, s.room_info, s.room, s.room_code,
            s.invite, s.seated, self.rematch_info(), opponent.away_until is not None,
            _ceil(opponent.seconds_left(s.clock())), opponent.grace_expired, _ceil(s.next_retry_in()),
            None if match is None else match.match_id, match is not None and match.outcome is None,
            players=s.players.snapshot(),
        )

    # PresenceSource and RematchSource for the match screen (controller.Capabilities).
    def presence(self) -> PresenceInfo:
        s = self.session
        return PresenceInfo(
            connected=s.connected,
            reconnecting=s.conn in (Conn.RECONNECTING, Conn.CONNECTING),
            retry_in=s.next_retry_in(),
            opponent_away=s.opponent.away_until is not None,
            opponent_seconds=s.opponent.seconds_left(s.clock()),
            opponent_gone=s.opponent.grace_expired,
            spectators=0 if s.room is None else s.room.spectators,
            moving=s.moving,
        )

    def rematch_info(self) -> RematchInfo:
        s = self.session
        opponent = s.room.opponent if s.room is not None else None
        possible = s.connected and opponent is not None and opponent.connected
        return RematchInfo(s.opponent.rematch_me, s.opponent.rematch_opponent, possible)

    def request_rematch(self) -> None:
        self.session.requests.rematch()


class OnlineClient:
    """See the module docstring. Screens read ``view.snapshot()`` and call its commands (``requests``)."""

    def __init__(self, services: OnlineServices, clock: Callable[[], float]) -> None:
        self.services = services
        self.clock = clock
        self.conn = Conn.IDLE
        self.error: str | None = None  # a catalog key: why the session stopped
        self._notice: tuple[str, Params] | None = None  # the last refusal, for the screen
        self.address: tuple[str, int] | None = None
        self.tls = False  # the connection to ``address`` is TLS ...
        self.pin: str | None = None  # ... accepting only this certificate (else the system trust store)
        # The node a ``moved`` sent this session to (host, port, tls, pin; PROTOCOL.md §18), or None:
        # ``address`` stays the server the player named (a cluster's front), for the screens, the
        # saved token and the witness; a plain drop goes back there.
        self.via: tuple[str, int, bool, str | None] | None = None
        self.moves = 0  # ``moved`` followed in a row without a request succeeding (at most MAX_MOVES)
        self.moving = False  # following one now: the screens say "moving to another server", not an error
        self.welcome: Welcome | None = None
        self.room_info: RoomInfo | None = None
        self.room: Room | None = None
        self.room_code: str | None = None
        self.created: str | None = None  # the room this session created (room_created): its host may set_spectators (§16)
        self.invite: str | None = None
        self.token: str | None = None
        self.token_saved = True
        self.match: OnlineMatch | None = None
        self.opponent = OpponentState()
        self.server_closing = False
        self.busy: str | None = None  # a request the screen waits for (create/join/peek/...)
        self.connection = Connection(lambda: self.services.connect, clock)
        self.requests = Requests(self)
        self.view = SessionView(self)
        # What this client saw of each match (witness.py); a failed write is said once, as a notice.
        self.witness = WitnessKeeper(services.witnesses, lambda key: setattr(self, "notice", (key, ())))
        self._after_welcome: Callable[[], None] | None = None
        self.player_name = ""  # sent in create_room / join (PROTOCOL.md §4: up to 32 characters)
        assert services.keys is not None
        self.players = PlayerSession(self, services.keys)  # identity, quick match, ratings (issue 20)

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

    def next_retry_in(self) -> float | None:
        return self.connection.retry_in()

    # ----- commands (the room's requests are ``requests``) --------------------------------------------
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
        self.via = None
        self.moves = 0
        self.moving = False
        self.error = None
        self.notice = None
        self.server_closing = False
        self._after_welcome = then
        self.connection.attempt = 0
        self.connection.retry_at = None
        self._open(Conn.CONNECTING)

    def resume_saved(self, saved: SavedSession) -> None:
        """Come back to a stored seat (O12): connect, then ``resume`` with the token."""
        self.connect(saved.host, saved.port, tls=saved.tls, pin=saved.pin)
        self.room_code = saved.room
        self.token = saved.token
        if saved.created:
            self.created = saved.room  # a host back after a restart keeps its waiting room's toggle (§16)
        self.busy = "resume"

    def create_room(self, *, listed: bool = False, rated: bool | None = None, spectators: bool = True) -> None:
        """Create a room and take its first seat (what *Host a game* does once welcomed, ``listed``);
        ``rated`` ``None``: as the server page's *Rated room* says (issue 20); ``spectators``: *Let others watch* (§16)."""
        self.requests.create_room(listed=listed, rated=self.players.rated_room if rated is None else rated,
                                  spectators=spectators)

    def close(self) -> None:
        """Stop: close the connection, keep the token (the seat may be resumed later)."""
        self._drop_link()
        self.conn = Conn.IDLE
        self.connection.retry_at = None

    def forget_room(self) -> None:
        if self.match is not None:
            self.match.close()
        self.room_info = None
        self.room = None
        self.room_code = None
        self.created = None
        self.invite = None
        self.token = None
        self.match = None
        self.opponent.clear()
        self.busy = None

    def forget_seat(self) -> None:
        """The seat is gone (left, closed, unknown to the server): its stored token too."""
        self.services.tokens.clear()
        self.forget_room()

    # ----- the frame -----------------------------------------------------------------------------------------
    def update(self) -> None:
        """Handle everything that arrived, retry a lost connection when due, keep the heartbeat."""
        for item in self.connection.arrived():
            try:
                if isinstance(item, LinkChange):
                    self._link_change(item)
                elif isinstance(item, Moved):
                    follow_moved(self, item)
                else:
                    self._push(item)
                    if not self.requests.answer(item):
                        self._unsolicited(item)
            except ValueError as exc:  # a room code or token that is not one: a broken server
                log.warning("online: malformed %r from the server: %s", type(item).__name__, exc)
                self._fail("online.error.bad_server")
        due = self.connection.due(connecting=self.conn in (Conn.CONNECTING, Conn.RECONNECTING),
                                  retrying=self.conn == Conn.RECONNECTING, open_=self.conn == Conn.OPEN)
        if due == "retry":
            self._open(Conn.RECONNECTING)
        elif due in ("timeout", "silent"):
            self.lost(due)
        elif due == "heartbeat":
            self.connection.send(PingRequest())

    def next_wakeup(self) -> float | None:
        times = self.connection.wakeups(open_=self.conn == Conn.OPEN)
        for left in (self.opponent.seconds_left(self.clock()), self.next_retry_in()):
            if left is not None and left > 0:
                frac = left - int(left)
                times.append(self.clock() + (frac if frac > 1e-3 else 1.0))
        if self.match is not None:
            wake = self.match.next_wakeup()
            if wake is not None:
                times.append(wake)
        wake = self.players.next_wakeup()
        if wake is not None:
            times.append(wake)
        return min(times) if times else None

    # ----- the connection ------------------------------------------------------------------------------------
    def _open(self, state: str) -> None:
        assert self.address is not None
        self.conn = state
        host, port, tls, pin = self.via or (*self.address, self.tls, self.pin)  # a moved's node, else the server named
        if not self.connection.open(host, port, tls=tls, pin=pin):
            self.lost("unreachable")

    def _drop_link(self) -> None:
        self.requests.clear()
        self.connection.drop()

    def lost(self, why: str) -> None:
        """The connection is gone (or never came): retry if we hold a seat, else stop with a message."""
        was = self.conn
        self._drop_link()
        self.players.lost()
        if self.conn == Conn.FAILED:
            return
        if self.seated and self.error is None:
            self.conn = Conn.RECONNECTING
            self.connection.back_off()
            self.via = None  # after a move: back to the front (any live node there answers, §18)
            return
        if was == Conn.CONNECTING or why in ("unreachable", "timeout"):
            self._fail("online.server_unreachable")
        else:
            self._fail("online.server_closed" if self.server_closing else "online.connection_lost")

    def _fail(self, key: str) -> None:
        self._drop_link()
        self.conn = Conn.FAILED
        self.moving = False
        self.error = key
        self.connection.retry_at = None
        self.busy = None

    def _link_change(self, change: LinkChange) -> None:
        match change.kind:
            case "open":
                self.connection.opened()
                self.connection.send(Hello(PROTOCOL_VERSION, self.services.client_name))
            case "garbage":
                log.warning("online: the server sent something that is not the protocol: %s", change.detail)
                self._fail("online.error.bad_server")
            case "failed":
                self.lost("unreachable")
            case "closed":
                self.lost("closed")
            case "refused":  # a certificate that fails its check: never retried, never plaintext
                log.warning("online: TLS refused by %s:%s: %s", *(self.address or ("?", 0)), change.detail)
                self._fail("online.error.tls_refused")

    def _unsolicited(self, msg: ServerMessage) -> None:
        code = getattr(msg, "code", "")
        verdict = unsolicited(code)
        if verdict is None:
            return
        kind, key = verdict
        if kind == "fail":
            self._fail(key)
        else:
            self.notice = (key, (("detail", code),))

    # ----- what each message changes (replies and pushes alike) ----------------------------------------------
    def _push(self, msg: ServerMessage) -> None:
        match msg:
            case Welcome():
                self._welcomed(msg)
            case RoomInfo():
                codec.room_code(msg.room)
                self.room_info = msg
                self.busy = None
                self.moves = 0
            case RoomCreated():
                self.created = msg.room  # (a parsed room code) before the seat is stored: kept with its token
                self.take_seat(msg.room, msg.invite, msg.token)
            case Joined():
                if not msg.resumed:
                    self.created = None  # a joined seat is not its room's creator
                self.take_seat(msg.room, msg.invite, None if msg.resumed else msg.token)
            case Room():
                codec.room_code(msg.room)
                self.room = msg
                self.opponent.on_room(msg, self.clock())
                if self.match is not None and (witness := self.witness.for_match(self.match.match_id)) is not None:
                    witness.saw_room(msg)
                    self.witness.flush()
            case Presence():
                self.opponent.on_presence(msg, self.clock())
            case MatchStart():
                self._on_match_start(msg)
            case State():
                if self.match is not None and msg.match_id == self.match.match_id:
                    self.match.apply_state(msg)
                    if (witness := self.witness.for_match(msg.match_id)) is not None:
                        witness.saw_state(msg)
                        self.witness.flush()
            case MatchEnd():
                if self.match is not None and msg.match_id == self.match.match_id:
                    self.match.apply_end(msg)
                    if (witness := self.witness.for_match(msg.match_id)) is not None:
                        witness.saw_end(msg)
                        self.witness.flush(durable=True)
                    self.opponent.away_until = None
                    self._save_token(playing=False)
            case RematchStatus():
                self.opponent.rematch_me, self.opponent.rematch_opponent = msg.me, msg.opponent
            case RoomClosed():
                if not self.players.room_closed(msg.room):  # a quick match's room says why itself
                    self.forget_seat()
                    self.notice = ("online.error.room_closed", ())
            case ServerClosing():
                self.server_closing = True
            case Ping():
                # Answered here, by the frame loop, not by the network layer: a window whose loop
                # has stopped answers nothing, and the server soon counts it as gone (issue 15).
                self.connection.send(PongReply())
            case _:
                self.players.push(msg)  # §17 (issue 20); pong, ok, error, record: nothing to show

    def _welcomed(self, msg: Welcome) -> None:
        if msg.protocol != PROTOCOL_VERSION:
            self._fail("online.protocol_mismatch")
            return
        self.welcome = msg
        self.conn = Conn.OPEN
        self.connection.welcomed()
        self.server_closing = False
        self.moving = False
        self.players.welcomed()  # identify first: a rated seat resumed needs it (PROTOCOL.md §17)
        if self.seated:
            room, token = self.room_code, self.token
            assert room is not None and token is not None
            self.requests.resume(room, token)
        elif self._after_welcome is not None:
            then, self._after_welcome = self._after_welcome, None
            then()

    def take_seat(self, room: str, invite: str, token: str | None) -> None:
        """``room_created`` / ``joined``: a fresh seat brings its token; a resumed one keeps ours."""
        self.room_code = codec.room_code(room)
        self.invite = as_reached(invite, self.tls, self.pin)
        self.moves = 0
        if token is not None:
            self.token = codec.token(token)
            self.opponent.rematch_me = self.opponent.rematch_opponent = False
        self.busy = None
        self._save_token(playing=self.match is not None and self.match.outcome is None)

    def _save_token(self, *, playing: bool) -> None:
        if self.address is None or self.room_code is None or self.token is None:
            return
        host, port = self.address
        saved = SavedSession(host, port, self.room_code, self.token, playing, self.services.wall_clock(), self.tls, self.pin,
                             self.created is not None and self.created == self.room_code)
        self.token_saved = self.services.tokens.save(saved)
        if not self.token_saved:
            self.notice = ("online.token_unavailable", ())

    def _on_match_start(self, msg: MatchStart) -> None:
        codec.match_id(msg.match_id)
        if self.match is not None and self.match.match_id == msg.match_id:
            return  # a resume repeats the start of the match we already show
        if self.match is not None:
            self.match.close()
        # O14: a new id drops the old match.
        match_id = msg.match_id
        self.match = OnlineMatch(msg, clock=self.clock, send=self.requests.send_action, presence=self.view,
                                 rematch=self.view, witness=lambda: self.witness.complete_json(match_id),
                                 room=lambda: self.room)
        self.opponent.rematch_me = self.opponent.rematch_opponent = False
        self.players.match_started()
        self._save_token(playing=True)
        # Its witness: resumed from its file, or begun with the seed sent for it (witness.py).
        server = "" if self.address is None else server_label(*self.address)
        me = None if self.room is None or self.room.room != msg.room else self.room.me.name
        self.witness.started(msg, server=server, my_name=me)


def follow_moved(session: OnlineClient, msg: Moved) -> None:
    """PROTOCOL.md §18: another node serves the room. Close, connect there (TLS and pin as it says),
    ``hello``, and repeat the request it answered (a seat resumes by itself once welcomed: the
    token goes only into that ``resume``); unsolicited, a seat resumes there. Refused (nothing
    changes but the link): a ``moved`` from TLS to plaintext, one for another room or request,
    and the fourth in a row without a request succeeding."""
    pending = session.requests.take(msg.id)
    if msg.request is not None and pending is None:
        return  # an answer to nothing this link asked: ignored
    asked = session.room_code if pending is None else pending.room
    if pending is None and not session.seated:
        session.server_closing = True  # not for us to follow: the close that comes next says so
        return
    secure = session.tls or (session.via is not None and session.via[2])  # never from TLS to plaintext (§1)
    if (secure and not msg.tls) or asked is None or msg.room != asked.strip().upper() or (
            pending is not None and (pending.request != msg.request or msg.request == "spectate")):
        log.warning("online: refused a moved (%s, room %s, tls %s) for %s", msg.request, msg.room, msg.tls,
                    None if pending is None else pending.request)
        session._fail("online.error.bad_server")
        return
    session.moves += 1
    if session.moves > MAX_MOVES:
        log.warning("online: moved %d times in a row; stopping", session.moves)
        session._fail("cluster.error.too_many_moves")
        return
    log.info("online: room %s is served by %s:%s; moving there", msg.room, msg.host, msg.port)
    session._drop_link()
    session.players.lost()  # identify again on the new node, as after any new connection
    session.via = (msg.host, msg.port, msg.tls, msg.pin if msg.tls else None)
    session.moving = True
    session.connection.attempt = 0
    session.connection.retry_at = None
    code = msg.room
    if pending is not None and pending.request == "peek":
        session._after_welcome = lambda: session.requests.peek(code)
    elif pending is not None and pending.request == "join":
        session._after_welcome = lambda: session.requests.join(code)
    session._open(Conn.RECONNECTING if session.seated else Conn.CONNECTING)
