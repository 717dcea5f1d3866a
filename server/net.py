"""Twisted adapter: frames lines, forwards them to :class:`ServerCore`, writes its messages.

Nothing here knows a rule. Shared state lives in the factory; a protocol instance is one
connection and has an integer id the core uses as its address.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Sequence
from typing import Protocol, cast

import orjson
from twisted.internet import tcp
from twisted.internet.interfaces import IAddress, IDelayedCall, IPushProducer, IReactorTime
from twisted.internet.protocol import Factory
from twisted.logger import Logger
from twisted.protocols.basic import LineOnlyReceiver
from twisted.python.failure import Failure
from zope.interface import implementer

from mineduel.server.proxy_protocol import ProxyHeaderProtocol
from mineduel.server.session import ServerCore
from mineduel.shared.wire import codec
from mineduel.shared.wire import messages as m
from mineduel.shared.wire.messages import ServerMessage

log = Logger(namespace="mineduel.net")

Outgoing = ServerMessage
"""What the core hands its outbox: a typed message (or, while it switches over, a JSON object)."""


class Connection(Protocol):
    """What this adapter uses of a connection's transport (TCP, TLS over TCP, a test's StringTransport)."""

    def write(self, data: bytes) -> None: ...
    def loseConnection(self) -> None: ...
    def abortConnection(self) -> None: ...
    def registerProducer(self, producer: object, streaming: bool) -> None: ...
    def pauseProducing(self) -> None: ...
    def resumeProducing(self) -> None: ...
    def getPeer(self) -> IAddress: ...
    def getHost(self) -> IAddress: ...


SPECTATE_LINES_KEPT = 16
"""The newest ``spectate_state`` lines kept by :func:`line`: a turn's delivery goes connection by
connection, so a room that changed twice in one turn hands each of its spectators two views in a
row; a cache of one would encode both again for every spectator."""

_spectate_lines: dict[int, tuple[m.SpectateState, bytes]] = {}  # id(message) -> (message, its line)

SPECTATE_HEADS_KEPT = 1024
"""Encoded heads of ``spectate_state`` lines kept by :func:`spectate_line` (one per watched room
while its players list stays the same; the oldest goes first): a few hundred bytes each."""

_spectate_heads: dict[int, tuple[Sequence[m.SpectatePlayer], tuple[str, str, int, str | None, int], bytes]] = {}
"""id(players list) -> (the list, the other head fields, the encoded head up to ``"number":N,``)."""


def line(message: Outgoing) -> bytes:
    """One outgoing message as its line: encoded here, at the edge, once.

    A ``spectate_state`` goes to every spectator of a room as the same object (PROTOCOL.md §16):
    it is encoded once for all of them (the newest :data:`SPECTATE_LINES_KEPT` lines are kept,
    each with its message, so an ``id`` is never reused while it is a key), by :func:`spectate_line`.
    """
    if type(message) is m.SpectateState:
        cached = _spectate_lines
        found = cached.get(id(message))
        if found is not None and found[0] is message:
            return found[1]
        encoded = spectate_line(message)
        if len(cached) >= SPECTATE_LINES_KEPT:
            del cached[next(iter(cached))]  # the oldest
        cached[id(message)] = (message, encoded)
        return encoded
    return codec.encode_message(message)


def spectate_line(message: m.SpectateState) -> bytes:
    """``codec.encode_message(message)``, the same bytes, with the head spliced in.

    The head of a view (type, room, status, spectators, players, match id and number) changes
    only when someone connects, leaves, starts watching or the match ends, while every move
    sends a view: it is encoded once per players list (``presenter._spectate_players`` hands
    every view of a room the same list while both players are there) and the same other head
    fields, and kept (:data:`SPECTATE_HEADS_KEPT`). The rest (seq, phase, turn, deadline, server
    time, board) is encoded per view. The end (a result, the O13 reveal) goes the plain way.
    Tested equal to the plain encoding (tests/server/test_spectators.py).
    """
    board = message.board
    if board is None or message.result is not None or message.reveal is not None:
        return codec.encode_message(message)
    players = message.players
    fields = (message.room, message.status, message.spectators, message.match_id, message.number)
    heads = _spectate_heads
    kept = heads.get(id(players))
    if kept is not None and kept[0] is players and kept[1] == fields:
        head = kept[2]
    else:
        head = orjson.dumps({
            "type": "spectate_state", "room": fields[0], "status": fields[1], "spectators": fields[2],
            "players": [p.wire() for p in players], "match_id": fields[3], "number": fields[4],
        })[:-1] + b","  # the object left open: the rest follows
        if kept is None and len(heads) >= SPECTATE_HEADS_KEPT:
            del heads[next(iter(heads))]  # the oldest
        heads[id(players)] = (players, fields, head)
    deadline = message.deadline
    rest = orjson.dumps({
        "seq": message.seq, "phase": message.phase, "to_move": message.to_move, "turn": message.turn,
        "deadline": None if deadline is None else {"at": deadline.at, "left": deadline.left},
        "server_time": message.server_time,
        "board": {"numbers": board.numbers, "opened_by": board.opened_by, "markers": board.markers},
        "result": None, "reveal": None,
    }, option=orjson.OPT_APPEND_NEWLINE)
    return head + rest[1:]


SNAPSHOTS: tuple[type[ServerMessage], ...] = (m.Room, m.Presence, m.RematchStatus, m.SpectateState)
"""Messages that each show the whole of something (the room as the seat sees it, the opponent's
connection, both rematch wishes, a spectator's public view): a newer one makes an older one still waiting for the same
connection worthless, so it replaces it (output coalescing, issue 15)."""


def snapshot_key(message: ServerMessage) -> object:
    """What a snapshot message shows: a newer message with the same key replaces an older one."""
    if isinstance(message, m.Room):
        return ("room", message.room)
    if isinstance(message, m.SpectateState):
        return ("spectate", message.room)
    return type(message)


def unsent_bytes(transport: object) -> int:
    """Bytes Twisted still holds for this connection (its peer has not read them yet)."""
    buffered = getattr(transport, "dataBuffer", b"")
    return len(buffered) - getattr(transport, "offset", 0) + getattr(transport, "_tempDataLen", 0)


@implementer(IPushProducer)
class LineProtocol(LineOnlyReceiver):
    """One client connection: ``\\n``-terminated JSON lines.

    It is also the producer of its own output, so Twisted tells it when its peer stops reading
    (the send buffer passed 64 KiB): it then stops reading that peer's requests too, and a peer
    that still has not read after ``send_stall`` seconds, or lets ``max_unsent`` bytes pile up,
    is cut off. Its seat is then away, as after any drop (O12); nobody else waits for it.

    While paused, snapshot messages (:data:`SNAPSHOTS`) wait in ``tail`` instead of Twisted's
    buffer, and a newer one replaces an older one there: whatever the opponent does (resuming in
    a loop, toggling ``ready``), a slow reader's queue grows by at most one message of each kind.
    Any other message first writes the tail out, then itself, so the order of PROTOCOL.md §1
    holds (a request's effects before its reply; nothing overtakes anything). The tail goes out
    when Twisted has sent everything (``resumeProducing``) and before a close.
    """

    delimiter = b"\n"
    factory: ServerFactory

    def __init__(self) -> None:
        self.pid = 0
        self.stalled: IDelayedCall | None = None
        self.cut = False
        self.tls = False  # set by the listener (ListenerFactory): invite links say mineduels://
        self.pin: str | None = None
        self.paused = False  # Twisted's buffer for this peer is full (pauseProducing)
        self.tail: dict[object, tuple[ServerMessage, bytes]] = {}  # held snapshots, in order (while paused)

    @property
    def conn(self) -> Connection:
        """The transport, as the interfaces this adapter uses (``None`` only before ``makeConnection``)."""
        return cast(Connection, self.transport)

    def connectionMade(self) -> None:
        self.MAX_LENGTH = self.factory.core.config.max_line
        self.pid = next(self.factory.ids)
        self.factory.protocols[self.pid] = self
        self.conn.registerProducer(self, True)
        # Every message is a small write that should leave now: Nagle's algorithm held the
        # first reply after each turn change for the client's delayed ACK (~40 ms, measured).
        with contextlib.suppress(AttributeError, OSError):  # not a TCP socket (UNIX endpoint, a test transport)
            self.transport.setTcpNoDelay(True)  # type: ignore[union-attr]
        peer = self.conn.getPeer()
        host = self.conn.getHost()
        self.factory.core.connection_made(
            self.pid, getattr(peer, "host", "?"), getattr(host, "host", "127.0.0.1"), getattr(host, "port", 0),
            tls=self.tls, pin=self.pin,
        )

    def lineReceived(self, line: bytes) -> None:
        self.factory.core.line_received(self.pid, line)

    def lineLengthExceeded(self, line: bytes) -> None:
        self.factory.core.line_too_long(self.pid)

    def connectionLost(self, reason: Failure = Failure(ConnectionError())) -> None:  # noqa: B008
        if self.stalled is not None and self.stalled.active():
            self.stalled.cancel()
        self.stalled = None
        self.factory.protocols.pop(self.pid, None)
        self.factory.core.connection_lost(self.pid)

    # IPushProducer: our output to this peer
    def pauseProducing(self) -> None:
        """The peer is not reading: read nothing more from it, and give it ``send_stall`` seconds."""
        self.paused = True
        self.conn.pauseProducing()
        if self.stalled is None:
            self.stalled = self.factory.clock.callLater(self.factory.core.config.send_stall, self._stall_expired)

    def resumeProducing(self) -> None:
        if self.stalled is not None and self.stalled.active():
            self.stalled.cancel()
        self.stalled = None
        self.paused = False
        if not self.cut:
            self.conn.resumeProducing()
            self.write_tail()  # may pause us again at once

    # Output (the factory's outbox writes through these)
    def deliver(self, messages: Sequence[ServerMessage]) -> None:
        """Write ``messages`` in order; while paused, snapshots wait in the tail (coalesced)."""
        if self.cut or self.transport is None:
            return
        if not self.paused:  # nearly always; a spectator's turn is one view: no list to join
            # Not paused, so no tail: all of it sent now leaves nothing unread to check.
            data = line(messages[0]) if len(messages) == 1 else b"".join([line(message) for message in messages])
            if not write_now(self.conn, data):
                self.wrote()
            return
        tail = self.tail
        chunks: list[bytes] = []
        for message in messages:
            if isinstance(message, SNAPSHOTS):
                if chunks:  # what came before it goes first
                    write_now(self.conn, b"".join(chunks))
                    chunks.clear()
                key = snapshot_key(message)
                tail.pop(key, None)  # the older one is worthless now; the newer one goes last
                tail[key] = (message, line(message))
            else:
                if tail:
                    chunks += [data for _, data in tail.values()]
                    tail.clear()
                chunks.append(line(message))
        if chunks:
            write_now(self.conn, b"".join(chunks))
        self.wrote()

    def write_tail(self) -> None:
        """Write the held snapshots now (resumed, or closing)."""
        if self.tail and not self.cut and self.transport is not None:
            data = b"".join([data for _, data in self.tail.values()])
            self.tail.clear()
            write_now(self.conn, data)
            self.wrote()

    def held_bytes(self) -> int:
        return sum(len(data) for _, data in self.tail.values())

    def stopProducing(self) -> None:
        """The connection is going away; ``connectionLost`` cleans up."""

    def _stall_expired(self) -> None:
        self.stalled = None
        self.cut_off("stalled", f"has not read for {self.factory.core.config.send_stall:g} s")

    def cut_off(self, reason: str, detail: str) -> None:
        """Drop the connection now, unsent bytes and all (a peer that does not read cannot be told)."""
        if self.cut or self.transport is None:
            return
        self.cut = True
        log.info("connection_cut peer={peer} reason={reason} detail={detail} unsent={unsent}",
                 peer=self.pid, reason=reason, detail=detail, unsent=unsent_bytes(self.transport))
        self.conn.abortConnection()

    def wrote(self) -> None:
        """After each write: a peer with too much unread output is cut at once."""
        if not self.cut and unsent_bytes(self.transport) + (self.held_bytes() if self.tail else 0) > (
            self.factory.core.config.max_unsent
        ):
            self.cut_off("unread_output", f"over {self.factory.core.config.max_unsent} bytes unread")


def write_now(transport: Connection, data: bytes) -> bool:
    """Send at once when nothing is queued, else queue behind what is; ``True``: all of it went
    to the socket now, so nothing of this connection waits unsent (no need to check :meth:`LineProtocol.wrote`).

    Twisted queues every write and sends it on the next poll, which costs two ``epoll_ctl`` calls
    and a write event per connection per turn (measured: about a tenth of the server's time at
    saturation). Nearly always the socket takes a whole message at once: then it goes now.
    """
    if type(transport) is ProxyHeaderProtocol:  # --proxy-protocol: plain TCP beneath, the header long read
        transport = cast(Connection, transport.transport)
    tcp_conn: object = transport
    if not isinstance(tcp_conn, tcp.Connection):
        # A TLS transport forwards unknown attributes to the TCP connection beneath it: its
        # ``socket`` would put plaintext on the wire. Only a plain TCP connection takes the shortcut.
        transport.write(data)
        return False
    # Plain attributes of every tcp.Connection (FileDescriptor's), read directly; only ``socket``
    # goes once the connection is lost.
    sock = getattr(tcp_conn, "socket", None)
    if (
        sock is None
        or not tcp_conn.connected
        or tcp_conn.disconnecting
        or tcp_conn._tempDataBuffer
        or tcp_conn.offset != len(tcp_conn.dataBuffer)
    ):
        transport.write(data)
        return False
    try:
        sent = sock.send(data)
    except BlockingIOError:
        sent = 0
    except OSError:
        transport.write(data)  # Twisted finds the broken connection and reports it as usual
        return False
    if sent < len(data):
        transport.write(data[sent:])
        return False
    return True


class ListenerFactory(Factory[LineProtocol]):
    """One listening endpoint's view of the shared :class:`ServerFactory`: it tags each
    connection with what it came in on (TLS and the certificate pin, for invite links)."""

    def __init__(self, shared: ServerFactory, *, tls: bool = False, pin: str | None = None) -> None:
        self.shared = shared
        self.tls = tls
        self.pin = pin

    def buildProtocol(self, addr: IAddress | None) -> LineProtocol:
        proto = self.shared.buildProtocol(addr)
        proto.tls = self.tls
        proto.pin = self.pin
        return proto


class ServerFactory(Factory[LineProtocol]):
    """Builds :class:`LineProtocol`s and is the core's outbox."""

    def __init__(self, clock: IReactorTime | None = None) -> None:
        self.core: ServerCore = None  # type: ignore[assignment]  # set by service.py
        self.protocols: dict[int, LineProtocol] = {}
        self.ids = itertools.count(1)
        if clock is None:
            from twisted.internet import reactor

            clock = reactor
        self.clock: IReactorTime = clock

    def buildProtocol(self, addr: IAddress | None) -> LineProtocol:
        proto = LineProtocol()
        proto.factory = self
        return proto

    # Outbox
    def send(self, peer: int, message: Outgoing) -> None:
        proto = self.protocols.get(peer)
        if proto is not None and proto.transport is not None and not proto.cut:
            if proto.paused:
                proto.deliver((message,))
                return
            if not write_now(proto.conn, line(message)):  # not paused: no tail to count
                proto.wrote()

    def send_all(self, items: Sequence[tuple[int, Outgoing | None]]) -> None:
        """Messages (``None``: close) in order: one write per connection, closes after its data."""
        messages: dict[int, list[Outgoing]] = {}
        closing: list[int] = []
        for peer, message in items:
            if message is None:
                closing.append(peer)
            else:
                messages.setdefault(peer, []).append(message)
        for peer, batch in messages.items():
            proto = self.protocols.get(peer)
            if proto is not None:
                proto.deliver(batch)
        for peer in closing:
            self.close(peer)

    def close(self, peer: int) -> None:
        """Close after our last bytes; a peer that never reads them is cut after ``close_timeout``."""
        proto = self.protocols.get(peer)
        if proto is not None and proto.transport is not None and not proto.cut:
            proto.write_tail()  # held snapshots are part of the last bytes
            if proto.cut:
                return
            proto.conn.loseConnection()
            if unsent_bytes(proto.transport):
                self.clock.callLater(self.core.config.close_timeout, self._cut_if_open, proto)

    def _cut_if_open(self, proto: LineProtocol) -> None:
        if proto.connected:
            proto.cut_off("close_timeout", "did not read our last bytes")
