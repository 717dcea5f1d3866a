"""The session layer: hello, heartbeats, limits, request validation and dispatch.

Transport-free like ``rooms.py``: a connection is an integer id, lines arrive as bytes and
leave through the :class:`~mineduel.server.commits.Outbox`. ``net.py`` adapts it to Twisted;
tests drive it with ``task.Clock`` and a recording outbox.

Check order for every line (docs/PROTOCOL.md, "Errors"): line length → rate → JSON object →
``type`` → hello → fields → credentials / room → match state → rules. The first failing check
answers with an ``error`` and nothing changes.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.internet.task import LoopingCall
from twisted.logger import Logger

from mineduel.server import presenter
from mineduel.server.cluster import Routing
from mineduel.server.cluster_live import LiveShare
from mineduel.server.commits import Batch, CommitQueue, Outbox, Writer
from mineduel.server.config import Config
from mineduel.server.limits import AddressLimits, AddressState
from mineduel.server.lobby import PeerInfo, live_rooms
from mineduel.server.match import RandBytes
from mineduel.server.quickmatch import QuickMatch
from mineduel.server.rooms import Rooms, set_spectators
from mineduel.server.storage import Storage
from mineduel.shared.wire import messages as m
from mineduel.shared.wire.codec import (
    ProtocolError,
    decode,
    hello_request,
    parse_request,
    request_id,
    request_kind,
    room_code,
)
from mineduel.shared.wire.names import ACTION_TYPES, LIVE_ROOMS_MAX, PROTOCOL_VERSION, ClientType, ErrorCode

log = Logger(namespace="mineduel.session")

PING_SLICES = 50
"""Heartbeats go to one 50th of the connections every ``ping_interval / 50`` seconds."""


@dataclass
class Conn:
    info: PeerInfo
    greeted: bool = False
    client: str = ""
    tokens: float = 0.0
    refilled: float = 0.0
    idle: IDelayedCall | None = None
    strikes: int = 0  # consecutive rate-limited lines
    closed: bool = False
    address: AddressState | None = None  # its address's limits (server/limits.py), shared with its other connections


@dataclass
class AttemptLog:
    times: list[float] = field(default_factory=list)


WRITING_REQUESTS = frozenset({
    ClientType.CREATE, ClientType.JOIN, ClientType.RESUME, ClientType.READY, ClientType.LEAVE,
    ClientType.RESIGN, ClientType.REMATCH, *ACTION_TYPES,
    ClientType.IDENTIFY, ClientType.RENAME, ClientType.QUICK_MATCH,  # §17: players and their rooms are stored
    ClientType.SET_SPECTATORS,  # §16: the room's watchable flag is stored
})
"""Requests that store something when accepted: refused at once while storage is failing."""


PlayerRequest = m.Identify | m.Rename | m.QuickMatch | m.LeaveQueue | m.GetProfile | m.GetLeaderboard
PLAYER_REQUESTS = (m.Identify, m.Rename, m.QuickMatch, m.LeaveQueue, m.GetProfile, m.GetLeaderboard)
"""The requests of PROTOCOL.md §17 (``_player_request``)."""


def address_key(address: str) -> str:
    """Whose limits a connection counts against: its IPv4 address, or its IPv6 /64.

    One IPv6 subscriber usually holds a whole /64 (2^64 addresses); counting single addresses
    would let one machine step around every per-address limit by changing its interface ID.
    """
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


def _object_or_empty(line: bytes) -> Mapping[str, Any]:
    """The line's JSON object, or ``{}`` (only to find an ``id`` for an error reply)."""
    try:
        data = orjson.loads(line.rstrip(b"\r"))
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _echo_id(msg: Mapping[str, Any]) -> str | int | None:
    """The request ``id`` an error may echo, if it is one a reply could carry."""
    raw = msg.get("id")
    if isinstance(raw, (str, int)) and not isinstance(raw, bool) and len(str(raw)) <= 64:
        return raw
    return None


class ServerCore:
    """All connections of one server process."""

    def __init__(
        self,
        *,
        clock: IReactorTime,
        randbytes: RandBytes,
        storage: Storage,
        outbox: Outbox,
        config: Config,
        wall: Callable[[], float] | None = None,
        turns: IReactorTime | None = None,
        writer: Writer | None = None,
    ) -> None:
        self.clock = clock
        self.config = config
        # ``turns`` ends a reactor turn (the group commit): the reactor itself, even when tests
        # drive the rules' deadlines with a fake ``clock`` over real sockets.
        self.commits = CommitQueue(
            storage=storage, clock=turns or clock, outbox=outbox, on_failure=self._commit_failed, writer=writer
        )
        self.outbox: Outbox = self.commits  # messages wait for the commit of what they show
        self.rooms = Rooms(
            clock=clock, randbytes=randbytes, storage=storage, commits=self.commits, config=config, wall=wall
        )
        self.commits.meta = lambda: {"clock": repr(self.rooms.now())}
        self.conns: dict[int, Conn] = {}
        self.per_address: dict[str, int] = {}
        self.attempts: dict[str, AttemptLog] = {}
        # What each address may still do whatever its connections (rooms are counted by the lobby).
        self.limits = AddressLimits.for_storage(config, clock.seconds, storage)
        self.rooms.may_log = self.limits.may_log_owner
        self.quick = QuickMatch(self.rooms, clock, self._owner_of)  # §17 (server/quickmatch.py)
        self._loops: list[LoopingCall] = []
        self._ping_order: list[int] = []
        self._ping_next = 0
        self.closing = False
        self.cluster: Routing | None = None  # a node of several on one database (server/cluster_node.py)
        # A shared database (PostgreSQL's ``PgNode``): live_rooms of every node (issue 21).
        share = getattr(getattr(storage, "cluster", None), "share_live", None)
        self.live = None if share is None else LiveShare(
            share, lambda: live_rooms(self.rooms.rooms.values(), LIVE_ROOMS_MAX), clock)

    # ----- lifecycle --------------------------------------------------------------------------
    def start(self) -> None:
        """Start the ping, clock and retention loops (on the injected clock)."""
        for interval, fn, now in (
            (self.config.ping_interval / PING_SLICES, self._ping_slices, False),
            (self.config.clock_interval, self._tick, False),
            (self.config.sweep_interval, self._sweep, True),
        ):
            # The heartbeat counts the ticks a busy loop missed, so no slice is ever skipped.
            loop = LoopingCall.withCount(fn) if fn == self._ping_slices else LoopingCall(fn)
            loop.clock = self.clock
            loop.start(interval, now=now).addErrback(lambda f: log.failure("loop failed", f))
            self._loops.append(loop)
        self.quick.start()
        if self.live is not None:
            self.live.start()

    def _sweep(self) -> None:
        try:
            self.rooms.sweep()
        except Exception:  # noqa: BLE001 - a failed sweep is logged; the loop must go on
            log.failure("retention sweep failed")
        self._forget_old_attempts()

    def _forget_old_attempts(self) -> None:
        """Addresses whose failed guesses are all older than the window are forgotten (bounded memory)."""
        cutoff = self.clock.seconds() - self.config.code_failure_window
        for address in [a for a, entry in self.attempts.items() if not entry.times or entry.times[-1] <= cutoff]:
            del self.attempts[address]

    def _tick(self) -> None:
        try:
            self.rooms.tick()
        except Exception:  # noqa: BLE001 - logged; the clock loop must go on
            log.failure("could not write the server clock")
        self.limits.maybe_prune(self.per_address)

    def stop(self, reason: str = "shutdown") -> None:
        """Tell every client, store the clock, stop timers (SIGTERM/SIGINT, O12 still applies)."""
        self.closing = True
        for loop in self._loops:
            if loop.running:
                loop.stop()
        self._loops.clear()
        self.quick.stop()
        if self.live is not None:
            self.live.stop()
        moved: Mapping[int, m.Moved] = {}
        if self.cluster is not None:  # PROTOCOL.md §18: all stored, the lease ended, then `moved`
            self.rooms.shutdown()
            moved = self.cluster.hand_over()
        for pid in list(self.conns):
            self.outbox.send(pid, moved.get(pid) or m.ServerClosing(reason))
        if self.cluster is None:
            self.rooms.shutdown()
        for pid, conn in list(self.conns.items()):
            if conn.idle is not None and conn.idle.active():
                conn.idle.cancel()
            conn.closed = True
            self.outbox.close(pid)
        log.info("server_stopped reason={reason}", reason=reason)

    # ----- connections -------------------------------------------------------------------------
    def connection_made(
        self, pid: int, address: str, host: str = "127.0.0.1", port: int = 0, *, tls: bool = False, pin: str | None = None
    ) -> bool:
        """Register a connection; ``False`` (after an error line) if a limit refuses it."""
        key = address_key(address)
        count = self.per_address.get(key, 0)
        config = self.config
        state = None
        if self.closing or count >= config.max_connections_per_address or len(self.conns) >= config.max_connections:
            why = (
                f"too many connections from your address (at most {config.max_connections_per_address})"
                if count >= config.max_connections_per_address
                else "the server is full or closing; try again later"
            )
        else:
            state = self.limits.admit(key)  # the connection rate: reconnecting does not reset it
            why = f"too many new connections from your address (at most {config.connection_rate_per_address:g} a second)"
        if state is None:
            limited = self.limits.state(key)
            if self.limits.may_log(limited):
                log.info("connection_refused peer={peer} address={address} why={why!r}", peer=pid, address=key, why=why)
            self.outbox.send(pid, m.Error(ErrorCode.TOO_MANY_CONNECTIONS, why))
            self.outbox.close(pid)
            return False
        self.per_address[key] = count + 1
        info = PeerInfo(pid, address, host, port or config.port, tls, pin, owner=state.owner)
        now = self.clock.seconds()
        conn = Conn(info, tokens=config.rate_burst, refilled=now, address=state)
        conn.idle = self.clock.callLater(self.config.idle_timeout, self._idle, pid)
        self.conns[pid] = conn
        self.rooms.peers[pid] = info
        log.debug("connected peer={peer} address={address}", peer=pid, address=address)
        return True

    def connection_lost(self, pid: int) -> None:
        conn = self.conns.pop(pid, None)
        if conn is None:
            return
        if conn.idle is not None and conn.idle.active():
            conn.idle.cancel()
        key = address_key(conn.info.address)
        self.per_address[key] -= 1
        if not self.per_address[key]:
            del self.per_address[key]
        log.debug("disconnected peer={peer}", peer=pid)
        if not self.closing:
            self.quick.peer_lost(pid)
            self.rooms.peer_lost(pid)
        self.rooms.players.peer_lost(pid)

    def _close(self, pid: int) -> None:
        """Close from our side and treat the seat as gone right away (O12 detection)."""
        conn = self.conns.get(pid)
        if conn is None or conn.closed:
            return
        conn.closed = True
        self.outbox.close(pid)
        self.connection_lost(pid)

    def _idle(self, pid: int) -> None:
        conn = self.conns.get(pid)
        if conn is None:
            return
        conn.idle = None
        if conn.address is None or self.limits.may_log(conn.address):
            log.info("idle_timeout peer={peer} greeted={greeted}", peer=pid, greeted=conn.greeted)
        if conn.greeted:
            self.outbox.send(pid, m.Error(ErrorCode.IDLE, f"nothing received for {self.config.idle_timeout:g} s"))
        else:
            self.outbox.send(pid, m.Error(ErrorCode.IDLE, f"no hello within {self.config.idle_timeout:g} s"))
        self._close(pid)

    def _ping_slices(self, count: int = 1) -> None:
        for _ in range(min(count, PING_SLICES)):
            self._ping_slice()

    def _ping_slice(self) -> None:
        """Ping the next 1/PING_SLICES of the connections: each one every ``ping_interval``.

        Pinging all at once put 10,000 pings in one reactor turn and their 10,000 pongs in the
        next (0.3–0.8 s turns every 5 s, measured); in slices they are spread evenly.
        """
        if self._ping_next == 0:
            self._ping_order = list(self.conns)  # newer connections join the next round
        order = self._ping_order
        size = -(-len(order) // PING_SLICES)
        chunk = order[self._ping_next * size : (self._ping_next + 1) * size]
        self._ping_next = (self._ping_next + 1) % PING_SLICES
        if not chunk:
            return
        msg = m.Ping(round(self.rooms.now(), 3))
        for pid in chunk:
            conn = self.conns.get(pid)
            if conn is not None and not conn.closed:
                self.commits.send_now(pid, msg)

    # ----- lines -----------------------------------------------------------------------------------
    def line_too_long(self, pid: int) -> None:
        self.outbox.send(pid, m.Error(ErrorCode.LINE_TOO_LONG, f"lines are limited to {self.config.max_line} bytes"))
        self._close(pid)

    def line_received(self, pid: int, line: bytes) -> None:
        conn = self.conns.get(pid)
        if conn is None or conn.closed:
            return
        if conn.greeted and conn.idle is not None and conn.idle.active():
            # Any line proves a player is alive (O12). Before ``hello`` nothing does: a
            # connection must greet within the idle timeout, or it is closed (no free slots
            # for connections that only ping).
            conn.idle.reset(self.config.idle_timeout)
        if len(line) > self.config.max_line:
            self.line_too_long(pid)
            return
        if not self._take_token(conn):
            conn.strikes += 1
            if conn.strikes > self.config.rate_burst:
                if conn.address is not None and self.limits.may_log(conn.address):
                    log.info("flood_closed peer={peer} address={address}", peer=pid, address=conn.address.key)
                self._close(pid)  # a flood: stop reading it
                return
            self.outbox.send(pid, m.Error(ErrorCode.RATE_LIMITED, "slow down: too many messages per second"))
            return
        conn.strikes = 0
        msg: Mapping[str, Any] | None = None  # the decoded JSON object, read only by the codec and for the error's id
        current = self.commits.begin_request(pid, None, "")
        try:
            msg = decode(line)
            current.kind = msg["type"]
            current.rid = _echo_id(msg)
            self._dispatch(conn, msg)
        except ProtocolError as exc:
            rid = None
            request = None
            if msg is not None:
                request = msg.get("type") if isinstance(msg.get("type"), str) else None
                rid = _echo_id(msg)
            elif exc.code == ErrorCode.BAD_REQUEST:  # a JSON object without a string type: its id is known
                rid = _echo_id(_object_or_empty(line))
            self.outbox.send(pid, m.Error(exc.code, exc.message, request, rid))
            if exc.code == ErrorCode.UNSUPPORTED_PROTOCOL:
                self._close(pid)
        except Exception:  # noqa: BLE001 - a server bug answers internal_error, never kills the loop
            log.failure("request failed peer={peer}", peer=pid)
            self.outbox.send(pid, m.Error(ErrorCode.INTERNAL_ERROR, "internal error; nothing changed"))
        finally:
            self.commits.end_request()

    def _commit_failed(self, batch: Batch) -> None:
        """A batch did not reach the disk: undo it, tell whom it concerns, keep the rest.

        Nothing of the batch was shown (its messages were held). The rooms it touched are
        reloaded from the database; every request that changed something gets
        ``internal_error`` ("nothing changed", with its ``id``); the connections seated in those
        rooms are told and closed, and resume with their tokens, as after a restart. Held replies
        that changed nothing and concern nobody closed are still delivered.
        """
        close = self.rooms.reload_after_failure(batch)
        # §17: a quick_match staged with the failed batch is undone, as is a waiter whose identify was.
        self.quick.undo(r.peer for r in batch.requests if r.kind == ClientType.QUICK_MATCH.value)
        staged = set(batch.requests)  # Request compares by identity
        self.commits.deliver([h for h in batch.held if h.peer not in close and h.request not in staged])
        for request in batch.requests:
            conn = self.conns.get(request.peer)
            if conn is not None and not conn.closed:
                self.outbox.send(request.peer, m.Error(
                    ErrorCode.INTERNAL_ERROR, "the server could not store this; nothing changed",
                    request.kind or None, request.rid,
                ))
        for pid in sorted(close):
            conn = self.conns.get(pid)
            if conn is not None and not conn.closed:
                self.outbox.send(pid, m.Error(
                    ErrorCode.INTERNAL_ERROR,
                    "the server could not store a change to your room; reconnect and resume to see it as stored",
                ))
                self._close(pid)

    def _take_token(self, conn: Conn) -> bool:
        """A token from the connection's bucket and one from its address's (shared by all its
        connections, server/limits.py); neither is spent unless both have one."""
        now = self.clock.seconds()
        config = self.config
        conn.tokens = min(config.rate_burst, conn.tokens + (now - conn.refilled) * config.rate_per_second)
        conn.refilled = now
        if conn.tokens < 1.0:
            return False
        address = conn.address
        if address is not None and not address.take_line(now, config):
            return False
        conn.tokens -= 1.0
        return True

    def _check_attempts(self, address: str) -> None:
        """Room-code guessing limit: too many unknown codes or bad tokens from one address."""
        entry = self.attempts.get(address)
        if entry is None:
            return
        cutoff = self.clock.seconds() - self.config.code_failure_window
        entry.times = [t for t in entry.times if t > cutoff]
        if not entry.times:
            del self.attempts[address]
        elif len(entry.times) >= self.config.code_failures:
            raise ProtocolError(ErrorCode.TOO_MANY_ATTEMPTS, "too many unknown room codes; wait a minute")

    @contextmanager
    def _guess(self, conn: Conn, *misses: str) -> Iterator[None]:
        """A request naming something that can be guessed: refused once the address guessed
        wrong too often, and a refusal with one of ``misses`` counts as a wrong guess."""
        key = address_key(conn.info.address)
        self._check_attempts(key)
        try:
            yield
        except ProtocolError as exc:
            if exc.code in misses:
                self._failed_attempt(key)
            raise

    def _failed_attempt(self, address: str) -> None:
        self.attempts.setdefault(address, AttemptLog()).times.append(self.clock.seconds())

    # ----- dispatch ----------------------------------------------------------------------------------
    def _dispatch(self, conn: Conn, msg: Mapping[str, Any]) -> None:  # the decoded JSON object, for the codec
        kind = request_kind(msg)
        pid = conn.info.id
        if kind is ClientType.PONG:
            return
        if kind is ClientType.PING:
            self.commits.send_now(pid, m.Pong(round(self.rooms.now(), 3), request_id(msg)))
            return
        if kind is ClientType.HELLO:
            self._hello(conn, msg)
            return
        if not conn.greeted:
            raise ProtocolError(ErrorCode.HELLO_REQUIRED, "send hello first")
        if kind is ClientType.BYE:
            self._close(pid)
            return
        rid = request_id(msg)
        if kind in WRITING_REQUESTS and not self.commits.healthy:
            raise ProtocolError(
                ErrorCode.STORAGE_UNAVAILABLE,
                "the server cannot store anything right now (its database is failing); nothing changed, try again later",
            )
        req = parse_request(kind, msg)
        rooms = self.rooms
        if isinstance(req, m.MatchAction):
            self.outbox.send(pid, m.Ok(kind._value_, rid, rooms.act(pid, req)))
            return
        if isinstance(req, PLAYER_REQUESTS):
            self._player_request(conn, req)
            return
        if isinstance(req, (m.CreateRoom, m.Join, m.Resume, m.Spectate)) and self.quick.queued(pid):
            raise ProtocolError(ErrorCode.ALREADY_QUEUED, "this connection waits for a quick match: leave_queue first")
        if isinstance(req, m.CreateRoom):
            # One address must not fill the server's room limit (each room lives up to 24 h, O15):
            # the rooms it created count in any state, restored ones too (the owner tag is stored).
            held, waiting = rooms.lobby.rooms_of(conn.info.owner)
            if waiting >= self.config.max_open_rooms_per_address:
                raise ProtocolError(
                    ErrorCode.TOO_MANY_ROOMS,
                    f"your address already has {waiting} rooms waiting for an opponent; join or leave one first",
                )
            if held >= self.config.max_rooms_per_address:
                raise ProtocolError(
                    ErrorCode.TOO_MANY_ROOMS,
                    f"your address already holds {held} rooms (waiting, playing or finished); leave one first",
                )
            rooms.create(pid, req)
            return
        if isinstance(req, (m.Peek, m.Join, m.Resume, m.Spectate)):
            with self._guess(conn, ErrorCode.ROOM_NOT_FOUND, ErrorCode.BAD_TOKEN):
                code = room_code(req.room)
                try:
                    if isinstance(req, m.Spectate):
                        rooms.join(pid, code, req)
                        self.outbox.send(pid, m.Ok(kind._value_, rid))
                    elif isinstance(req, m.Peek):
                        rooms.perform(rooms.lobby.peek(pid, rooms.room(code), rid))
                    elif isinstance(req, m.Join):
                        rooms.join(pid, code, req)
                    else:
                        rooms.resume(pid, code, req)
                except ProtocolError as exc:
                    # PROTOCOL.md §18: a room another live node owns is answered `moved`, not a miss.
                    cluster = self.cluster
                    moved = cluster.moved(code, kind._value_, rid) if cluster and exc.code == ErrorCode.ROOM_NOT_FOUND else None
                    if moved is None:
                        raise
                    self.outbox.send(pid, moved)
            return
        if isinstance(req, m.LiveRoomsRequest):  # §16: any greeted connection, players and spectators too
            own = live_rooms(rooms.rooms.values(), LIVE_ROOMS_MAX)
            live = self.live  # a cluster: the other nodes' too, as they last shared them (server/cluster_live.py)
            reply = presenter.live_rooms(own, rid) if live is None else live.reply(own, rid, rooms.rooms.__contains__)
            self.outbox.send(pid, reply)
            return
        if isinstance(req, m.GetRecord):
            # Match ids can be guessed like room codes: misses count against the same limit.
            with self._guess(conn, ErrorCode.NOT_FOUND, ErrorCode.NOT_FINISHED):
                rooms.get_record(pid, req)
            return
        if isinstance(req, m.Resign):
            self.outbox.send(pid, m.Ok(kind._value_, rid, rooms.resign(pid, req)))
            return
        if isinstance(req, m.Ready):
            rooms.ready(pid, req)
        elif isinstance(req, m.Leave):
            rooms.leave(pid)
        elif isinstance(req, m.Rematch):
            rooms.rematch(pid, req)
        elif isinstance(req, m.SetSpectators):
            set_spectators(rooms, pid, req)
        self.outbox.send(pid, m.Ok(kind._value_, rid))

    def _owner_of(self, pid: int) -> str:
        conn = self.conns.get(pid)
        return conn.info.owner if conn is not None else ""

    def _player_request(self, conn: Conn, req: PlayerRequest) -> None:
        """§17: identity, the quick-match queue, profiles and the leaderboard."""
        pid = conn.info.id
        rooms = self.rooms
        players = rooms.players
        rid = req.id
        if isinstance(req, (m.Identify, m.Rename)):
            now, wall = rooms.now(), rooms.wall()
            if isinstance(req, m.Identify):
                player = players.identify(pid, conn.info.owner, req.key, req.name, now, wall, self.commits)
            else:
                player = players.rename(pid, conn.info.owner, req.name, now, wall, self.commits)
            self.outbox.send(pid, player.info())
        elif isinstance(req, m.QuickMatch):
            self.quick.join(pid, spectators=req.spectators)
        elif isinstance(req, m.LeaveQueue):
            self.quick.leave(pid)
        elif isinstance(req, m.GetProfile):
            if req.player is None:
                found = players.of(pid)
                if found is None:
                    raise ProtocolError(ErrorCode.IDENTIFY_REQUIRED, "identify first, or name a player")
            else:
                found = players.peek(req.player)
                if found is None:
                    raise ProtocolError(ErrorCode.NOT_FOUND, f"no player {req.player}")
            self.outbox.send(pid, players.profile(found, rid))
            return
        else:
            self.outbox.send(pid, players.leaderboard(players.of(pid), rid, rooms.now()))
            return
        self.outbox.send(pid, m.Ok(req.TYPE.value, rid))

    def _hello(self, conn: Conn, msg: Mapping[str, Any]) -> None:  # the decoded JSON object, for the codec
        if conn.greeted:
            raise ProtocolError(ErrorCode.ALREADY_GREETED, "hello was already received")
        hello = hello_request(msg, PROTOCOL_VERSION)  # check 5 before the fields (6); a refused hello greets nobody
        conn.greeted = True
        conn.client = hello.client
        if conn.idle is not None and conn.idle.active():
            conn.idle.reset(self.config.idle_timeout)
        if conn.address is None or self.limits.may_log(conn.address):
            log.info("hello peer={peer} client={client!r}", peer=conn.info.id, client=hello.client)
        config = self.config
        self.commits.send_now(conn.info.id, m.Welcome(
            PROTOCOL_VERSION, config.name, config.version, round(self.rooms.now(), 3), config.max_line,
            config.rate_per_second, config.rate_burst, config.ping_interval, config.idle_timeout,
            config.turn_seconds, config.grace_seconds, hello.id, config.referee,
        ))
