"""Abuse limits (docs/PROTOCOL.md §8, docs/SECURITY.md "Abuse limits"): message floods, many
connections from one address, idle and half-open connections (slowloris), clients that never
read, room-code and token guessing, the room limit.

For every limit three things are shown: the abuser is limited (or closed) with the documented
error; nobody else notices (a match played next door by two well-behaved clients keeps getting
each reply within a few reactor turns); and what the server keeps for the abuser stays bounded.

Whatever is about sockets runs over real loopback connections against an in-process server; the
rules clock (token bucket, idle timer, guessing window) and the net layer's clock (send stall,
close timeout) are ``task.Clock``s the test advances, so nothing waits on real time. The rest
drives ``ServerCore`` directly with ``tests/support/harness.py``'s Harness. The abuser connects from
127.0.0.1, the well-behaved players from 127.0.0.2 (Linux routes all of 127/8 to ``lo``), so the
per-address limits tell them apart as they would two machines. The server sets TCP_NODELAY on
its sockets (a test below holds it to that: Nagle's algorithm delayed the first reply of a turn by
~40 ms), and the players' sockets do too, so the turn counts measure the abuser alone.

One address may keep at most 8 rooms waiting for an opponent, so it cannot fill the server's
room limit for everybody else.
"""

from __future__ import annotations

import contextlib
import random
import socket
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import pytest
import pytest_twisted
from support.harness import Harness, oracle_message
from support.reliability import record_figure, scaled
from twisted.internet import defer
from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol
from twisted.internet.task import Clock, deferLater
from twisted.python.failure import Failure

from mineduel.server.client import LineClient, ServerError
from mineduel.server.config import Config
from mineduel.server.net import LineProtocol, unsent_bytes
from mineduel.server.service import ServerHandle, start_server
from mineduel.server.session import ServerCore, address_key
from mineduel.shared.wire import bots, codec, names
from mineduel.shared.wire import messages as m

pytestmark = pytest.mark.reliability  # every test here is part of the adversarial suite

T = TypeVar("T")

START = 1_700_000_000.0
ABUSER = "127.0.0.1"
NEIGHBOUR = "127.0.0.2"
REPLY_TURNS = 30
"""A well-behaved client's request is answered within this many reactor turns whatever the abuser
does (measured: 3-4 turns on an idle server)."""


def _can_bind(address: str) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((address, 0))
        except OSError:
            return False
    return True


needs_second_loopback = pytest.mark.skipif(
    not _can_bind(NEIGHBOUR), reason=f"{NEIGHBOUR} is not a loopback address here (Linux routes 127/8 to lo)"
)


def _reactor() -> Any:
    from twisted.internet import reactor

    return reactor


async def one_turn() -> None:
    """Let the reactor run one iteration (poll the sockets once, run what is due)."""
    await deferLater(_reactor(), 0, lambda: None)


async def turns_until(condition: Callable[[], bool], limit: int = 5000) -> int:
    """Reactor turns until ``condition()`` holds (an AssertionError after ``limit``)."""
    for turns in range(limit):
        if condition():
            return turns
        await one_turn()
    raise AssertionError(f"condition not met within {limit} reactor turns")


async def within_turns(work: Awaitable[T], limit: int = REPLY_TURNS) -> tuple[T, int]:
    """``work``'s result and how many reactor turns it took; fails past ``limit`` turns."""
    done: list[Any] = []
    defer.ensureDeferred(work).addBoth(done.append)  # type: ignore[arg-type]
    turns = await turns_until(lambda: bool(done), limit)
    if isinstance(done[0], Failure):
        done[0].raiseException()
    return done[0], turns


# ----- a live server and its clients -------------------------------------------------------------


class _HeldWrites:
    """A :class:`DeafClient`'s socket as its line client's transport: writes wait in ``outgoing``
    until :meth:`DeafClient.flush`, so many requests leave in one ``send`` (one server read)."""

    disconnecting = False

    def __init__(self, client: DeafClient) -> None:
        self.client = client

    def write(self, data: bytes) -> None:
        self.client.outgoing += data

    def writeSequence(self, data: Sequence[bytes]) -> None:
        for chunk in data:
            self.write(chunk)

    def loseConnection(self) -> None:
        self.client.close()

    abortConnection = loseConnection


class DeafClient:
    """A raw client socket that reads only when the test says so, with a tiny receive buffer.

    Once it stops reading, its kernel buffers fill after a few kilobytes and whatever the server
    writes next piles up in the server's own buffers: the slow reader of the abuse list. The socket
    is raw because its receive window and its reads are the point; the protocol on it (typed
    requests out, lines framed and checked into typed messages in) is the shared
    :class:`LineClient`, fed with whatever bytes a read brings (it does not answer pings: deaf).
    """

    def __init__(self, port: int, source: str, rcvbuf: int = 4096) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)  # before connect: sets the window
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # every request leaves at once
        sock.bind((source, 0))
        sock.connect(("127.0.0.1", port))  # loopback: the kernel completes the handshake by itself
        sock.setblocking(False)
        self.sock = sock
        self.outgoing = bytearray()
        self.received = 0  # bytes read so far
        self.lines = LineClient("deaf/1", auto_pong=False)
        self.lines.makeConnection(_HeldWrites(self))  # type: ignore[arg-type]  # a socket, not a Twisted transport

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def send(self, *messages: m.ClientMessage) -> None:
        """Queue the requests' lines and push what the kernel takes now (the rest on the next :meth:`flush`)."""
        for message in messages:
            self.lines.send(message)
        self.flush()

    def flush(self) -> None:
        while self.outgoing:
            try:
                sent = self.sock.send(self.outgoing)
            except BlockingIOError:
                return
            del self.outgoing[:sent]

    def read(self) -> list[m.ServerMessage]:
        """Read whatever has arrived; the complete messages so far."""
        while True:
            try:
                data = self.sock.recv(65536)
            except BlockingIOError:
                break
            if not data:
                break
            self.received += len(data)
            self.lines.dataReceived(data)
        assert self.lines.malformed == [], self.lines.malformed
        return self.lines.typed

    async def read_until(self, kind: type[T]) -> T:
        """Read (turning the reactor) until a message of ``kind`` has arrived: the first one."""
        waiting = self.lines.wait_for(kind)
        await turns_until(lambda: bool(self.read()) and waiting.called)
        return await waiting

    def close(self) -> None:
        self.sock.close()
        if self.lines.connected_:
            self.lines.connectionLost(Failure(ConnectionError("closed by the test")))


class LiveServer:
    """An in-process server on 127.0.0.1 whose clocks the test drives.

    ``rules`` is the server's rules clock (token bucket, idle timer, guessing window, deadlines);
    ``net`` is the net layer's clock (send stall, close timeout). Turns last 600 s so that
    advancing the clock for a limit never ends the neighbours' turn.
    """

    def __init__(self, **config: Any) -> None:
        self.rules = Clock()
        self.rules.advance(START)
        self.net = Clock()
        settings: dict[str, Any] = {"turn_seconds": 600.0, **config}
        self.config = Config(host="127.0.0.1", port=0, udp_port=None, db=":memory:", name="Abuse test", **settings)
        self.handle: ServerHandle = start_server(_reactor(), self.config, clock=self.rules)
        self.handle.factory.clock = self.net
        self.rules.advance(0)  # the (empty) restore
        self.deaf_clients: list[DeafClient] = []

    @property
    def core(self) -> ServerCore:
        return self.handle.core

    def match(self, code: str) -> Any:
        return self.core.rooms.rooms[code].match

    async def connect(
        self, source: str, *, hello: bool = True, auto_pong: bool = True, server_nodelay: bool = True
    ) -> LineClient:
        """A :class:`LineClient` from ``source`` (greeted unless ``hello=False``).

        Nagle's algorithm is off on the client's socket and, unless ``server_nodelay=False``, on
        the server's socket for it too: the server leaves it on, and it then holds a reply for the
        client's delayed ACK (~40 ms) whenever something it sent before is not acknowledged yet
        (test_a_reply_is_not_held_back_by_nagles_algorithm), which would swamp the turn counts
        that measure an abuser's effect.
        """
        endpoint = TCP4ClientEndpoint(_reactor(), "127.0.0.1", self.handle.port, timeout=10, bindAddress=(source, 0))
        client = await connectProtocol(endpoint, LineClient("abuse-test/1", auto_pong=auto_pong))
        client.transport.setTcpNoDelay(True)
        if server_nodelay:
            (await self.accepted(local_port(client))).transport.setTcpNoDelay(True)
        if hello:
            assert (await client.hello())["type"] == "welcome"
        return client

    def deaf(self, source: str = ABUSER, rcvbuf: int = 4096) -> DeafClient:
        client = DeafClient(self.handle.port, source, rcvbuf)
        self.deaf_clients.append(client)
        return client

    def server_side(self, local_port: int) -> LineProtocol:
        """The server's protocol for the client whose local port is ``local_port``."""
        for proto in self.handle.factory.protocols.values():
            if proto.transport is not None and proto.transport.getPeer().port == local_port:
                return proto
        raise AssertionError(f"the server has no connection from port {local_port}")

    async def accepted(self, local_port: int) -> LineProtocol:
        """Wait until the server has accepted the connection from ``local_port``; its protocol."""
        found: list[LineProtocol] = []

        def known() -> bool:
            try:
                found.append(self.server_side(local_port))
            except AssertionError:
                return False
            return True

        await turns_until(known)
        return found[0]

    async def stop(self) -> None:
        for client in self.deaf_clients:
            client.close()
        await self.handle.stop()


def local_port(client: LineClient) -> int:
    return int(client.transport.getHost().port)


class Neighbours:
    """Two well-behaved players with a match running on the abused server.

    :meth:`move` plays one never-losing move (``oracle_message``) and counts the reactor turns
    until its ``ok`` arrives: the measure of "nobody else notices".
    """

    def __init__(self, server: LiveServer, first: LineClient, second: LineClient, code: str) -> None:
        self.server = server
        self.by_seat = {0: first, 1: second}
        self.code = code
        self.turns: list[int] = []

    @classmethod
    async def start(cls, server: LiveServer, *, server_nodelay: bool = True) -> Neighbours:
        a = await server.connect(NEIGHBOUR, server_nodelay=server_nodelay)
        b = await server.connect(NEIGHBOUR, server_nodelay=server_nodelay)
        code = (await a.request("create_room", name="Ann", client_seed="ann"))["room"]
        await b.request("join", room=code, name="Bob", client_seed="bob")
        await a.request("ready")
        await b.request("ready")
        first = a if (await a.wait_for("match_start"))["seat"] == 0 else b
        return cls(server, first, b if first is a else a, code)

    @property
    def clients(self) -> list[LineClient]:
        return list(self.by_seat.values())

    async def move(self, times: int = 1) -> None:
        for _ in range(times):
            match = self.server.match(self.code)
            assert not match.over, "the neighbours' match ended: play fewer moves"
            mover = self.by_seat[match.state.to_move]
            reply, turns = await within_turns(mover.request(**oracle_message(match.state)))
            assert reply["type"] == "ok" and reply["seq"] == match.seq
            self.turns.append(turns)

    def check_undisturbed(self) -> None:
        """Still connected, never told anything about the abuser, never refused."""
        for client in self.clients:
            assert client.connected_
            refused = [msg for msg in client.messages if msg["type"] in ("error", "presence", "server_closing")]
            assert not refused, refused
        record_figure("abuse", "slowest neighbour reply", max(self.turns, default=0), "max reactor turns")


@pytest_twisted.async_yield_fixture
async def live() -> Any:
    """Make live servers (``live(**config)``); all are stopped after the test."""
    made: list[LiveServer] = []

    def make(**config: Any) -> LiveServer:
        server = LiveServer(**config)
        made.append(server)
        return server

    yield make
    for server in made:
        await server.stop()


async def arrives(waiting: defer.Deferred[T], seconds: float = 10.0) -> T:
    """Wait for ``waiting``; the time bound only turns a hang into a failure (nothing is timed)."""
    return await waiting.addTimeout(seconds, _reactor())


def watch_unsent(proto: LineProtocol) -> dict[str, int]:
    """Record, after each write the server makes to ``proto``, its unsent bytes (``peak``) and the
    largest single growth (``write``): what the server held for this peer at worst."""
    seen = {"peak": 0, "write": 0, "last": 0}
    original = proto.wrote

    def wrote() -> None:
        unsent = unsent_bytes(proto.transport)
        seen["write"] = max(seen["write"], unsent - seen["last"])
        seen["peak"] = max(seen["peak"], unsent)
        seen["last"] = unsent
        original()

    proto.wrote = wrote  # type: ignore[method-assign]
    return seen


def count_lines(server: LiveServer) -> dict[int, int]:
    """Lines the server core handled, per connection id, from now on."""
    handled: dict[int, int] = {}
    original = server.core.line_received

    def line_received(pid: int, line: bytes) -> None:
        handled[pid] = handled.get(pid, 0) + 1
        original(pid, line)

    server.core.line_received = line_received  # type: ignore[method-assign]
    return handled


def forgotten(server: LiveServer, proto: LineProtocol) -> bool:
    """The server keeps nothing of this connection any more."""
    return proto.pid not in server.core.conns and proto.pid not in server.handle.factory.protocols


# ----- 1. floods: messages per second ------------------------------------------------------------


@needs_second_loopback
@pytest_twisted.ensureDeferred
async def test_flood_over_a_socket_is_rate_limited_then_closed_and_the_match_next_door_goes_on(live):
    """Rate limit (PROTOCOL.md §8): a connection writing pings as fast as its socket takes them gets
    the burst answered, then ``rate_limited`` (no id, in order after the answers) for ``rate_burst``
    lines, then it is closed; the match next door keeps its replies within a few reactor turns, and
    the server forgets the flooder entirely."""
    server = live()  # the default limits: 20 lines per second, bursts of 40
    burst = int(server.config.rate_burst)
    neighbours = await Neighbours.start(server)
    await neighbours.move(2)
    flooder = await server.connect(ABUSER)  # its hello took one token
    proto = server.server_side(local_port(flooder))
    lines = scaled(5000)
    flooder.transport.write(b"".join(codec.encode_message(m.PingRequest(i)) for i in range(lines)))  # one write
    await neighbours.move(3)  # while the flood arrives
    await arrives(flooder.lost)
    replies = flooder.messages[1:]  # after its welcome
    pongs = [msg for msg in replies if msg["type"] == "pong"]
    refusals = [msg for msg in replies if msg["type"] == "error"]
    assert [msg["id"] for msg in pongs] == list(range(burst - 1))
    assert [(msg["code"], "id" in msg) for msg in refusals] == [("rate_limited", False)] * burst
    assert replies == pongs + refusals  # the flood closed without another word
    await turns_until(lambda: forgotten(server, proto))
    assert address_key(ABUSER) not in server.core.per_address
    await neighbours.move(3)
    neighbours.check_undisturbed()
    again = await server.connect(ABUSER)  # the address is not banned: it may come back and behave
    for _ in range(scaled(60)):
        server.rules.advance(1 / server.config.rate_per_second)
        assert (await again.request("ping"))["type"] == "pong"
    record_figure("abuse", "flood lines sent", lines, "lines")
    record_figure("abuse", "flood lines handled before the close", len(replies) + 1, "max lines")


def test_rate_limit_tolerates_exactly_burst_refusals_in_a_row_and_closes_on_the_next():
    """Rate limit: tokens start at ``rate_burst``; each refused line is a strike; ``rate_burst``
    strikes in a row are tolerated, the next refused line closes the connection without reply."""
    h = Harness(rate_per_second=20.0, rate_burst=40.0)
    c = h.connect()  # hello: 39 tokens left
    assert [c.send(type="ping", id=i)[0]["type"] for i in range(39)] == ["pong"] * 39
    for _ in range(40):
        assert c.send(type="ping")[0]["code"] == "rate_limited"
    assert not c.closed
    assert c.send(type="ping") == [] and c.closed
    assert c.pid not in h.core.conns and not h.core.per_address


def test_rate_limit_refills_for_a_client_that_backs_off_and_never_refuses_one_at_the_rate():
    """Rate limit: after being refused, a client that waits gets ``rate_per_second`` tokens per
    second back and its strikes are forgiven; a client sending exactly 20 lines per second for a
    long time is never refused."""
    h = Harness(rate_per_second=20.0, rate_burst=40.0)
    backs_off = h.connect("10.0.0.1")
    steady = h.connect("10.0.0.2")
    for _ in range(39 + 40):
        backs_off.send(type="ping")
    assert backs_off.last("error")["code"] == "rate_limited" and not backs_off.closed
    h.advance(1.0)  # 20 tokens
    assert [backs_off.send(type="ping")[0]["type"] for _ in range(21)] == ["pong"] * 20 + ["error"]
    assert not backs_off.closed  # its strikes started again from zero
    h.advance(1.0)
    assert backs_off.send(type="ping")[0]["type"] == "pong"
    lines = scaled(2000)
    for _ in range(lines):
        h.advance(1 / 20)
        assert steady.send(type="ping")[0]["type"] == "pong"
    assert not steady.all("error")
    record_figure("abuse", "lines sent at the allowed rate", lines, "lines")



def test_a_flood_paced_to_dodge_the_close_is_still_held_to_the_rate():
    """Rate limit: a client that sends 40 lines per token, just under the closing threshold, is not
    closed, but only ``rate_per_second`` of its lines are handled each second; each other line
    costs the server one ``rate_limited`` line and no parsing. (16 per second: its token period,
    1/16 s, is exact in binary, so no token is lost to rounding.)"""
    h = Harness(rate_per_second=16.0, rate_burst=40.0)
    c = h.connect()
    for _ in range(39):
        c.send(type="ping")  # the burst, spent
    seconds = scaled(10)
    for _ in range(seconds * 16):
        h.advance(1 / 16)  # one token
        replies = [c.send_raw(b"not even json")[0] for _ in range(40)]
        assert replies[0]["code"] == "bad_json"  # the one line the token let through
        assert {r["code"] for r in replies[1:]} == {"rate_limited"}
    assert not c.closed
    record_figure("abuse", "paced flood lines sent", seconds * 16 * 40, "lines")


# ----- 2. many connections from one address ---------------------------------------------------------


async def refused(server: LiveServer, source: str) -> LineClient:
    """Open a connection that the server must refuse: ``too_many_connections``, then closed."""
    client = await server.connect(source, hello=False)
    error = await arrives(client.wait_for("error"))
    assert error["code"] == "too_many_connections"
    await arrives(client.lost)
    return client


@needs_second_loopback
@pytest_twisted.ensureDeferred
async def test_connections_from_one_address_beyond_16_are_refused_and_closing_frees_slots(live):
    """Connections per address (PROTOCOL.md §8): of 100 connections from 127.0.0.1 the first 16
    are served and every later one gets ``too_many_connections`` and is closed; closing some frees
    exactly as many slots; the match next door, from another address, is untouched; once the
    abuser is gone the server holds nothing for its address."""
    server = live()
    limit = server.config.max_connections_per_address
    key = address_key(ABUSER)
    neighbours = await Neighbours.start(server)
    total = scaled(100)
    served = [await server.connect(ABUSER) for _ in range(limit)]  # hello answered: registered
    assert server.core.per_address[key] == limit
    extra = 0
    while extra < total - limit:  # in waves of up to 50 at once
        wave = min(50, total - limit - extra)
        await defer.gatherResults([defer.ensureDeferred(refused(server, ABUSER)) for _ in range(wave)])
        extra += wave
        await neighbours.move()
    assert server.core.per_address[key] == limit and len(server.core.conns) == limit + 2
    for client in served:  # the 16 still work
        assert (await client.request("ping"))["type"] == "pong"
    freed = min(scaled(5), limit)
    for client in served[:freed]:
        await arrives(client.close())
    await turns_until(lambda: server.core.per_address.get(key, 0) == limit - freed)
    served[:freed] = [await server.connect(ABUSER) for _ in range(freed)]
    await refused(server, ABUSER)
    await neighbours.move(2)
    for client in served:
        await arrives(client.close())
    await turns_until(lambda: key not in server.core.per_address and len(server.handle.factory.protocols) == 2)
    assert len(server.core.conns) == 2
    neighbours.check_undisturbed()
    record_figure("abuse", "connections opened from one address", total + freed + 1, "connections")


@pytest.mark.parametrize(
    ("address", "key"),
    [
        ("192.0.2.7", "192.0.2.7"),
        ("2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"),
        ("2001:DB8:1:2::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:3::1", "2001:db8:1:3::/64"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        ("fe80::1%eth0", "fe80::/64"),
        ("::1", "::/64"),
        ("?", "?"),  # not an IP address (the net layer's placeholder): kept as it is
    ],
)
def test_address_key_is_the_ipv4_address_or_the_ipv6_64(address: str, key: str) -> None:
    """Per-address limits: an IPv4 address counts alone, an IPv6 address as its /64 (one subscriber
    holds a whole /64), an IPv4-mapped IPv6 address as the IPv4 address it carries."""
    assert address_key(address) == key


def test_ipv6_connections_count_per_64_and_mapped_ipv4_counts_as_ipv4():
    """Connections per address: 16 connections from one /64 with different interface IDs fill its
    slots (the 17th is refused); another /64 is served; ``::ffff:a.b.c.d`` and ``a.b.c.d`` share
    one count; every count goes when its connections do."""
    h = Harness(max_connections_per_address=16)
    rng = random.Random(64)

    def in_64(prefix: str) -> str:
        return prefix + ":".join(f"{rng.getrandbits(16):x}" for _ in range(4))

    same_64 = [h.connect(in_64("2001:db8:aa:bb:")) for _ in range(16)]
    assert len({h.core.conns[c.pid].info.address for c in same_64}) == 16
    extra = h.connect(in_64("2001:db8:aa:bb:"), hello=False)
    assert extra.messages[0]["code"] == "too_many_connections" and extra.closed
    assert h.connect(in_64("2001:db8:aa:bc:")).pid  # the neighbouring /64
    mixed = [h.connect("::ffff:198.51.100.9" if i % 2 else "198.51.100.9") for i in range(16)]
    for address in ("198.51.100.9", "::ffff:198.51.100.9"):
        refused_conn = h.connect(address, hello=False)
        assert refused_conn.messages[0]["code"] == "too_many_connections"
    mixed[0].drop()
    assert h.connect("::ffff:198.51.100.9").pid  # a freed slot, taken in the other spelling
    for client in list(h.core.conns):
        h.core.connection_lost(client)
    assert not h.core.conns and not h.core.per_address


def test_total_connections_are_limited_and_the_server_says_it_is_full():
    """Connections per server: past ``max_connections`` a new connection from any address gets
    ``too_many_connections`` ("the server is full") and is closed; one leaving frees a place."""
    h = Harness(max_connections=20, max_connections_per_address=16)
    clients = [h.connect(f"10.20.{i}.1") for i in range(20)]
    late = h.connect("10.99.0.1", hello=False)
    assert late.messages[0]["code"] == "too_many_connections" and "full" in late.messages[0]["message"]
    assert late.closed and len(h.core.conns) == 20
    clients[3].drop()
    assert h.connect("10.99.0.1").pid


# ----- 3. idle and half-open connections -------------------------------------------------------------


async def advance_rules(server: LiveServer, seconds: float, *, keep: Sequence[LineClient] = (), step: float = 1.0) -> None:
    """Advance the rules clock in steps; after each, every client in ``keep`` pings and is answered
    (so the server has heard it within the idle timeout, as a live client would be)."""
    left = seconds
    while left > 1e-9:
        now = min(step, left)
        server.rules.advance(now)
        left -= now
        for client in keep:
            await within_turns(client.request("ping"))


@needs_second_loopback
@pytest_twisted.ensureDeferred
async def test_a_connection_that_never_greets_is_closed_after_the_idle_timeout_even_if_it_pings(live):
    """Idle timeout before hello (PROTOCOL.md §3, §8): pings are answered but do not keep a
    connection that never said hello; at 15 s it gets ``idle`` ("no hello within 15 s") and is
    closed, so a connection slot cannot be held by pings alone."""
    server = live()
    neighbours = await Neighbours.start(server)
    lurker = await server.connect(ABUSER, hello=False)
    proto = await server.accepted(local_port(lurker))
    idle = server.config.idle_timeout
    for _ in range(3):  # a ping every 4.95 s: 14.85 s in all
        assert (await within_turns(lurker.request("ping")))[0]["type"] == "pong"
        await advance_rules(server, idle / 3 - 0.05, keep=neighbours.clients)
        await neighbours.move()
    assert proto.pid in server.core.conns and lurker.last("error") is None
    await advance_rules(server, 0.2, keep=neighbours.clients, step=0.1)  # 15.05 s
    error = await arrives(lurker.wait_for("error"))
    assert error["code"] == "idle" and error["message"] == f"no hello within {idle:g} s"
    await arrives(lurker.lost)
    await turns_until(lambda: forgotten(server, proto))
    await neighbours.move(2)
    neighbours.check_undisturbed()
    record_figure("abuse", "idle connections closed", 1, "connections")


@needs_second_loopback
@pytest.mark.parametrize("greeted", [False, True], ids=["before-hello", "after-hello"])
@pytest_twisted.ensureDeferred
async def test_slowloris_trickling_bytes_without_a_newline_is_closed_after_the_idle_timeout(live, greeted):
    """Idle timeout and partial lines: a client that sends one byte a second and never finishes a
    line is closed 15 s after its last complete line (``idle``) — trickled bytes never count, before
    hello or after — and its unfinished line is all the server keeps for it meanwhile."""
    server = live()
    neighbours = await Neighbours.start(server)
    slow = await server.connect(ABUSER, hello=greeted, auto_pong=False)
    proto = await server.accepted(local_port(slow))
    partial = b'{"type":"ping","note":"' + b"z" * 100
    idle = server.config.idle_timeout
    trickled = 0
    while server.rules.seconds() < START + idle - 1.5:  # one byte a second for 14 s or so
        slow.transport.write(partial[trickled : trickled + 1])
        trickled += 1
        await turns_until(lambda n=trickled: len(proto._buffer) == n)  # the server has read it
        await advance_rules(server, 1.0, keep=neighbours.clients)
    await neighbours.move(2)
    await advance_rules(server, START + idle - 0.1 - server.rules.seconds(), keep=neighbours.clients)
    assert proto.pid in server.core.conns and slow.last("error") is None  # at 14.9 s
    await advance_rules(server, 0.2, keep=neighbours.clients, step=0.1)
    error = await arrives(slow.wait_for("error"))
    expected = f"nothing received for {idle:g} s" if greeted else f"no hello within {idle:g} s"
    assert error["code"] == "idle" and error["message"] == expected
    await arrives(slow.lost)
    await turns_until(lambda: forgotten(server, proto))
    await neighbours.move(2)
    neighbours.check_undisturbed()
    record_figure("abuse", "slowloris bytes trickled", trickled, "bytes")


@needs_second_loopback
@pytest_twisted.ensureDeferred
async def test_an_unfinished_line_is_bounded_by_max_line(live):
    """Partial-line memory: bytes without a newline are kept only up to ``max_line``; one more and
    the connection gets ``line_too_long`` and is closed."""
    server = live()
    neighbours = await Neighbours.start(server)
    greedy = await server.connect(ABUSER)
    proto = server.server_side(local_port(greedy))
    limit = server.config.max_line
    greedy.transport.write(b"x" * limit)
    await turns_until(lambda: len(proto._buffer) == limit)
    await neighbours.move()
    assert proto.pid in server.core.conns
    greedy.transport.write(b"x")
    error = await arrives(greedy.wait_for("error"))
    assert error["code"] == "line_too_long"
    await arrives(greedy.lost)
    await turns_until(lambda: forgotten(server, proto))
    await neighbours.move(2)
    neighbours.check_undisturbed()


@needs_second_loopback
@pytest_twisted.ensureDeferred
async def test_a_greeted_silent_player_gets_idle_and_its_opponent_sees_it_away_o12(live):
    """Idle timeout after hello (O12): a seated player whose socket stays open but says nothing
    (not even pong) gets ``idle`` after 15 s and is closed; its opponent gets ``presence``
    connected:false with the 120 s grace; the match next door notices nothing."""
    server = live()
    neighbours = await Neighbours.start(server)
    silent = await server.connect(ABUSER, auto_pong=False)
    opponent = await server.connect(NEIGHBOUR)
    created = await silent.request("create_room", client_seed="silent")
    await opponent.request("join", room=created["room"], client_seed="opp")
    await silent.request("ready")
    await opponent.request("ready")
    await arrives(opponent.wait_for("match_start"))
    proto = server.server_side(local_port(silent))
    idle = server.config.idle_timeout
    await advance_rules(server, idle - 0.1, keep=[*neighbours.clients, opponent])
    assert proto.pid in server.core.conns and silent.last("ping") is not None  # pinged, did not answer
    await advance_rules(server, 0.2, keep=[*neighbours.clients, opponent], step=0.1)
    error = await arrives(silent.wait_for("error"))
    assert error["code"] == "idle" and error["message"] == f"nothing received for {idle:g} s"
    away = await arrives(opponent.wait_for("presence"))
    assert away["connected"] is False and away["deadline"]["left"] == server.config.grace_seconds
    await arrives(silent.lost)
    await turns_until(lambda: forgotten(server, proto))
    await neighbours.move(2)
    neighbours.check_undisturbed()


# ----- 4. slow readers ---------------------------------------------------------------------------------


SMALL_KERNEL_BUFFER = 8192
"""The server-side socket's send buffer in the slow-reader tests. Linux grows it up to 4 MB on
loopback, so a reader would have to leave megabytes unread before Twisted's own buffer (what the
limits are about) holds anything; a small one gets there after a few kilobytes."""


def small_kernel_buffer(proto: LineProtocol) -> None:
    proto.transport.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SMALL_KERNEL_BUFFER)


async def finished_match(server: LiveServer, *, to_the_end: bool) -> str:
    """The id of a match two clients play to its end (score, or a resign at once) before leaving;
    its record is public, so anyone may ask for it (``get_record``)."""
    a = await server.connect(NEIGHBOUR)
    b = await server.connect(NEIGHBOUR)
    code = (await a.request("create_room", client_seed="fa"))["room"]
    await b.request("join", room=code, client_seed="fb")
    await a.request("ready")
    await b.request("ready")
    first = a if (await a.wait_for("match_start"))["seat"] == 0 else b
    by_seat = {0: first, 1: b if first is a else a}
    match = server.match(code)
    if to_the_end:
        while not match.over:
            await by_seat[match.state.to_move].request(**oracle_message(match.state))
    else:
        await a.request("resign")
    await a.close()
    await b.close()
    return str(match.id)


@needs_second_loopback
@pytest_twisted.ensureDeferred
async def test_a_seated_slow_reader_stops_being_read_and_is_cut_after_send_stall_o12(live):
    """Slow reader (send stall): a seated player asks for full-history states (``resume``) and never
    reads them. Once Twisted holds 64 KiB for it the server stops reading it; 15 s later on the net
    clock — though it read a few kilobytes meanwhile — it is cut, its opponent gets ``presence``
    connected:false (O12), it never had more than ``max_unsent`` waiting, and the match next door
    went on. (Resumes per seat are not limited here: what it asks for is the point, not how often;
    tests/reliability/test_hostile_peers.py holds that limit.)"""
    server = live(resumes_per_seat=10**6)  # otherwise the default limits
    neighbours = await Neighbours.start(server)
    deaf = server.deaf()
    deaf.send(bots.hello("deaf/1"), m.CreateRoom(client_seed="deaf"))
    created = await deaf.read_until(m.RoomCreated)
    opponent = await server.connect(NEIGHBOUR)
    await opponent.request("join", room=created.room, client_seed="opp")
    deaf.send(m.Ready())
    await opponent.request("ready")
    await deaf.read_until(m.MatchStart)  # from here on it reads nothing
    proto = server.server_side(deaf.port)
    small_kernel_buffer(proto)
    seen = watch_unsent(proto)
    handled = count_lines(server)
    resume = m.Resume(created.room, created.token)
    sent = 0
    for _ in range(50):
        deaf.send(*[resume] * 30)  # within the burst: every one is answered
        sent += 30
        await turns_until(lambda n=sent: handled.get(proto.pid, 0) == n or proto.stalled is not None)
        if proto.stalled is not None:
            break
        await advance_rules(server, 2.0, keep=[*neighbours.clients, opponent])  # tokens refill
        await neighbours.move()
    assert proto.stalled is not None, "the server never noticed the slow reader"
    assert proto.transport not in _reactor().getReaders()
    read_before = handled[proto.pid]
    deaf.send(*[m.PingRequest()] * 20)
    await neighbours.move(2)
    assert handled[proto.pid] == read_before  # not read any more
    stall = server.config.send_stall
    timer = proto.stalled
    for _ in range(2):  # it reads a little, never enough to catch up
        server.net.advance(stall / 3)
        before = deaf.received
        deaf.read()
        assert deaf.received > before
        await neighbours.move()
    assert proto.stalled is timer  # reading a little did not restart the clock
    server.net.advance(stall / 3 - 0.1)
    await neighbours.move()
    assert not proto.cut and proto.pid in server.core.conns
    server.net.advance(0.2)
    assert proto.cut
    away = await arrives(opponent.wait_for("presence", lambda msg: not msg["connected"]))  # each resume said true
    assert away["deadline"]["left"] == server.config.grace_seconds
    await turns_until(lambda: forgotten(server, proto))
    assert 64 * 1024 < seen["peak"] <= server.config.max_unsent
    await neighbours.move(2)
    neighbours.check_undisturbed()
    record_figure("abuse", "slow reader requests sent", sent + 20, "lines")
    record_figure("abuse", "bytes unread before the stall cut", seen["last"], "max bytes")


@needs_second_loopback
@pytest_twisted.ensureDeferred
async def test_a_slow_reader_is_cut_as_soon_as_max_unsent_bytes_wait(live):
    """Slow reader (unsent limit): with the rate limit lifted, one read of ``get_record`` requests
    asks for far more than ``max_unsent``. The server cuts the reader within that turn, without
    waiting for the stall timer, having held at most ``max_unsent`` plus one message; whatever it
    still answers in that turn is dropped, not buffered."""
    server = live(rate_per_second=1e6, rate_burst=1e6)
    match_id = await finished_match(server, to_the_end=True)
    neighbours = await Neighbours.start(server)
    deaf = server.deaf()
    deaf.send(bots.hello("deaf/1"))
    await deaf.read_until(m.Welcome)
    proto = server.server_side(deaf.port)
    small_kernel_buffer(proto)
    seen = watch_unsent(proto)
    asked = await neighbours.clients[0].request("get_record", match_id=match_id)
    record_size = len(codec.encode(asked))  # with its id: a little more than the reader's
    asks = scaled(2) * (server.config.max_unsent // record_size + 1)
    deaf.send(*[m.GetRecord(match_id)] * asks)
    await turns_until(lambda: proto.cut)
    assert server.net.seconds() == 0  # no timer of the net clock could have fired: the unsent limit cut it
    at_cut = seen["last"]
    assert unsent_bytes(proto.transport) == at_cut  # the rest of that read was answered into the void
    assert server.config.max_unsent < at_cut <= server.config.max_unsent + seen["write"]
    assert seen["write"] <= record_size  # one message
    await turns_until(lambda: forgotten(server, proto))
    await neighbours.move(3)
    neighbours.check_undisturbed()
    record_figure("abuse", "slow reader requests sent", asks, "lines")
    record_figure("abuse", "bytes unread before the max_unsent cut", at_cut, "max bytes")


@needs_second_loopback
@pytest_twisted.ensureDeferred
async def test_a_closed_connection_that_never_reads_its_last_bytes_is_cut_after_close_timeout(live):
    """Close timeout: a half-open client (asked for records, then neither reads nor speaks) is
    closed as idle after 15 s, but the bytes the server still holds for it cannot leave; 10 s later
    (net clock) the server cuts it and keeps nothing of it any more."""
    server = live()
    match_id = await finished_match(server, to_the_end=False)
    neighbours = await Neighbours.start(server)
    deaf = server.deaf()
    deaf.send(bots.hello("deaf/1"))
    await deaf.read_until(m.Welcome)
    proto = server.server_side(deaf.port)
    small_kernel_buffer(proto)
    deaf.send(*[m.GetRecord(match_id)] * 30)
    await turns_until(lambda: unsent_bytes(proto.transport) > 0)
    await neighbours.move()
    assert proto.stalled is None  # still read: below Twisted's 64 KiB
    await advance_rules(server, server.config.idle_timeout + 0.5, keep=neighbours.clients)
    assert proto.pid not in server.core.conns  # closed for the rules (idle) ...
    assert proto.pid in server.handle.factory.protocols and unsent_bytes(proto.transport) > 0  # ... bytes wait
    close_timeout = server.config.close_timeout
    server.net.advance(close_timeout - 0.1)
    await neighbours.move()
    assert not proto.cut
    server.net.advance(0.2)
    assert proto.cut
    await turns_until(lambda: forgotten(server, proto))
    await neighbours.move(2)
    neighbours.check_undisturbed()


# ----- 5. room-code and token guessing -------------------------------------------------------------


def random_code(rng: random.Random, avoid: str) -> str:
    while True:
        code = "".join(rng.choice(names.ROOM_CODE_ALPHABET) for _ in range(names.ROOM_CODE_LENGTH))
        if code != avoid:
            return code


def test_room_code_guessing_stops_after_10_failures_even_for_the_right_code_until_the_window_passes():
    """Guessing limit (PROTOCOL.md §8): 10 unknown codes from one address within 60 s, whatever the
    request (peek, join, resume) and however many connections it spreads them over; then
    ``too_many_attempts`` even for the real code, so guessing cannot go on, and nothing more is
    logged for it. 60 s after the failures the address may try again; another address never
    noticed."""
    h = Harness(max_connections_per_address=16, rate_burst=1e9)  # the rate limit is not the point here
    rng = random.Random(5)
    owner = h.connect("10.0.0.1")
    created = owner.send(type="create_room", name="Owner")[0]
    code, token = created["room"], created["token"]
    guesser = "10.66.0.1"
    kinds = [
        lambda c: {"type": "peek", "room": c},
        lambda c: {"type": "join", "room": c},
        lambda c: {"type": "resume", "room": c, "token": "0" * 64},
    ]
    for i in range(10):  # a new connection for every guess: the count is per address
        conn = h.connect(guesser)
        assert conn.send(**kinds[i % 3](random_code(rng, code)))[0]["code"] == "room_not_found"
        conn.drop()
    conn = h.connect(guesser)
    for request in ({"type": "peek", "room": code}, {"type": "join", "room": code},
                    {"type": "resume", "room": code, "token": token}):
        assert conn.send(**request)[0]["code"] == "too_many_attempts"
    guesses = scaled(1000)
    for _ in range(guesses):
        assert conn.send(type="peek", room=random_code(rng, code))[0]["code"] == "too_many_attempts"
    assert len(h.core.attempts[address_key(guesser)].times) == 10  # bounded: refusals are not logged
    other = h.connect("10.0.0.2")
    assert other.send(type="join", room=code, name="Friend")[0]["type"] == "joined"
    h.advance(h.config.code_failure_window - 0.01)
    assert conn.send(type="peek", room=code)[0]["code"] == "too_many_attempts"
    h.advance(0.02)
    assert conn.send(type="peek", room=code)[0]["type"] == "room_info"
    assert address_key(guesser) not in h.core.attempts  # forgotten once the window passed
    assert [s.peer for s in h.rooms.rooms[code].seats] == [owner.pid, other.pid]  # the guesser took nothing
    record_figure("abuse", "room codes guessed", guesses + 10 + 3 + 2, "requests")


def test_token_guessing_stops_after_10_bad_tokens_even_for_the_right_token():
    """Guessing limit, tokens (O16): 10 ``bad_token`` resumes of a real room from one address, then
    ``too_many_attempts`` even with the right token; the seat's owner resumes from its own address
    meanwhile; the guessed seat was never taken."""
    h = Harness(rate_burst=1e9)
    rng = random.Random(16)
    a, _ = h.start()
    guesser = h.connect("10.66.0.2")
    for _ in range(10):
        bad = f"{rng.getrandbits(256):064x}"
        assert guesser.send(type="resume", room=a.room, token=bad)[0]["code"] == "bad_token"
    assert guesser.send(type="resume", room=a.room, token=a.token)[0]["code"] == "too_many_attempts"
    assert a.pid in h.rooms.peer_seat and guesser.pid not in h.rooms.peer_seat
    home = h.core.conns[a.pid].info.address
    a.drop()
    back = h.connect(home)
    assert back.send(type="resume", room=a.room, token=a.token)[0]["type"] == "joined"
    guesses = scaled(500)
    for _ in range(guesses):
        assert guesser.send(type="resume", room=a.room, token=f"{rng.getrandbits(256):064x}")[0]["code"] == "too_many_attempts"
    record_figure("abuse", "tokens guessed", guesses + 11, "requests")


def test_guessing_from_an_ipv6_64_with_changing_interface_ids_is_limited_as_one_address():
    """Guessing limit, IPv6: every guess from a new address of the same /64 counts against that /64;
    a mapped IPv4 address counts with its IPv4 form; a neighbouring /64 is not affected."""
    h = Harness(max_connections_per_address=16)
    rng = random.Random(6)
    owner = h.connect("10.0.0.1")
    code = owner.send(type="create_room")[0]["room"]

    def address(prefix: str) -> str:
        return prefix + ":".join(f"{rng.getrandbits(16):x}" for _ in range(4))

    for _ in range(10):
        conn = h.connect(address("2001:db8:77:1:"))
        assert conn.send(type="peek", room=random_code(rng, code))[0]["code"] == "room_not_found"
        conn.drop()
    for _ in range(scaled(50)):
        conn = h.connect(address("2001:db8:77:1:"))
        assert conn.send(type="peek", room=code)[0]["code"] == "too_many_attempts"
        conn.drop()
    assert h.connect(address("2001:db8:77:2:")).send(type="peek", room=code)[0]["type"] == "room_info"
    for i in range(10):
        mapped = h.connect("::ffff:203.0.113.5" if i % 2 else "203.0.113.5")
        assert mapped.send(type="peek", room=random_code(rng, code))[0]["code"] == "room_not_found"
    assert h.connect("203.0.113.5").send(type="peek", room=code)[0]["code"] == "too_many_attempts"
    assert h.connect("::ffff:203.0.113.5").send(type="peek", room=code)[0]["code"] == "too_many_attempts"
    assert set(h.core.attempts) == {"2001:db8:77:1::/64", "203.0.113.5"}


def test_the_guessing_log_of_many_addresses_is_forgotten_by_the_sweep():
    """Guessing memory: one failure from each of many addresses is logged per address; the next
    retention sweep after the window forgets all of them but the addresses that failed within the
    window, so the log does not grow without bound."""
    h = Harness(max_connections_per_address=16)
    h.core.start()  # the sweep loop (every sweep_interval, on the fake clock)
    owner = h.connect("10.0.0.1")
    code = owner.send(type="create_room")[0]["room"]
    addresses = scaled(2000)
    for i in range(addresses):
        conn = h.connect(f"10.{100 + i // 65536}.{i // 256 % 256}.{i % 256}")
        assert conn.send(type="peek", room="ZZZZZZ")[0]["code"] == "room_not_found"
        conn.drop()
    assert len(h.core.attempts) == addresses
    h.advance(h.config.sweep_interval - 5)
    recent = h.connect("10.99.0.1")
    recent.send(type="peek", room="ZZZZZZ")
    h.advance(5)  # the sweep: all but the recent failure are older than the window
    assert list(h.core.attempts) == ["10.99.0.1"]
    assert recent.send(type="peek", room=code)[0]["type"] == "room_info"
    record_figure("abuse", "guessing addresses forgotten", addresses, "addresses")


@needs_second_loopback
@pytest_twisted.ensureDeferred
async def test_room_code_guessing_over_sockets_is_limited_per_address_and_nobody_else_notices(live):
    """Guessing limit over sockets: 10 unknown codes from 127.0.0.1, then ``too_many_attempts`` for
    the neighbours' real code, on that connection and a fresh one; a client from 127.0.0.2 peeks
    and its players play on."""
    server = live()
    rng = random.Random(127)
    neighbours = await Neighbours.start(server)
    guesser = await server.connect(ABUSER)

    async def refusal(request: str, **fields: Any) -> str:
        with pytest.raises(ServerError) as refused:
            await within_turns(guesser.request(request, **fields))
        return str(refused.value.code)

    for _ in range(10):
        assert await refusal("peek", room=random_code(rng, neighbours.code)) == "room_not_found"
        await neighbours.move()
    assert await refusal("join", room=neighbours.code) == "too_many_attempts"
    await arrives(guesser.close())
    guesser = await server.connect(ABUSER)
    assert await refusal("peek", room=neighbours.code) == "too_many_attempts"
    bystander = await server.connect(NEIGHBOUR)
    info, _ = await within_turns(bystander.request("peek", room=neighbours.code))
    assert info["type"] == "room_info" and info["status"] == "playing"
    await neighbours.move(2)
    neighbours.check_undisturbed()


# ----- 6. the room limit --------------------------------------------------------------------------------


def test_too_many_rooms_refuses_a_create_changes_nothing_and_a_freed_room_makes_space():
    """Rooms per server (PROTOCOL.md §8): at ``max_rooms`` a ``create_room`` gets ``too_many_rooms``
    and changes nothing (no room, no seat: the refused client may still join a room); a room that
    goes away makes space for the next one."""
    limit = 5
    h = Harness(max_rooms=limit)
    creators = [h.connect(f"10.30.0.{i}") for i in range(limit)]
    codes = [c.send(type="create_room")[0]["room"] for c in creators]
    late = h.connect("10.30.1.1")
    for _ in range(scaled(20)):
        assert late.send(type="create_room")[0]["code"] == "too_many_rooms"
    assert sorted(h.rooms.rooms) == sorted(codes) and late.pid not in h.rooms.peer_seat
    assert late.send(type="join", room=codes[0])[0]["type"] == "joined"
    creators[1].send(type="leave")  # its only player left: the room is gone
    assert codes[1] not in h.rooms.rooms
    assert h.connect("10.30.1.2").send(type="create_room")[0]["type"] == "room_created"
    assert len(h.rooms.rooms) == limit


def test_one_address_cannot_take_every_room_of_the_server():
    """Rooms per server: a misbehaving client hurts nobody but itself, so the room limit must not be
    one that a single address can exhaust for everybody else."""
    limit = 40
    h = Harness(max_rooms=limit, max_connections_per_address=16)
    created = 0
    for _ in range(limit):  # one connection at a time: never more than one open
        conn = h.connect("10.6.6.6")
        reply = conn.send(type="create_room")[0]
        conn.drop()
        if reply["type"] != "room_created":
            break
        created += 1
    visitor = h.connect("10.0.0.9")
    assert visitor.send(type="create_room")[0]["type"] == "room_created", f"one address holds all {created} rooms"


# ----- latency: Nagle's algorithm ----------------------------------------------------------------------------


@needs_second_loopback
@pytest_twisted.ensureDeferred
async def test_a_reply_is_not_held_back_by_nagles_algorithm(live):
    """Latency: with the server's sockets as the server leaves them, a move is answered within a few
    reactor turns, also when the turn has just passed to the mover (the server had sent it the
    opponent's move, unsolicited, just before)."""
    server = live()
    neighbours = await Neighbours.start(server, server_nodelay=False)
    await neighbours.move(12)  # the opening's four steps and a few turns: the mover changes often


def test_match_id_guessing_with_get_record_counts_against_the_guessing_limit():
    """get_record misses (unknown or running ids) are guesses too: 10 per address per 60 s, and each one
    cost a look over every room, so an unlimited stream of them was a cheap way to load the server."""
    h = Harness()
    first, _second = h.start()
    running = h.match(first).id
    guesser = h.connect("10.7.7.7")
    codes = [guesser.send(type="get_record", match_id=f"{i:016x}")[0]["code"] for i in range(9)]
    assert codes == ["not_found"] * 9
    assert guesser.send(type="get_record", match_id=running)[0]["code"] == "not_finished"
    assert guesser.send(type="get_record", match_id="00000000000000aa")[0]["code"] == "too_many_attempts"
    assert h.connect("10.7.7.8").send(type="get_record", match_id=running)[0]["code"] == "not_finished"
    h.advance(61)
    assert guesser.send(type="get_record", match_id="00000000000000ab")[0]["code"] == "not_found"
    record_figure("abuse", "match ids guessed", 12)


# ----- 7. hostile peers (issue 15) ------------------------------------------------------------------------
# The per-address limits and the record caps are tested on a fake clock in
# tests/reliability/test_hostile_peers.py; here the two attacks that are about sockets.


def watch_queue(proto: LineProtocol) -> dict[str, int]:
    """After each write to ``proto``: the most it ever had waiting (``peak``: Twisted's buffer and
    the held snapshots of output coalescing); and the bytes of every message the server had for it
    (``offered``: what it would have been sent without coalescing)."""
    seen = {"peak": 0, "offered": 0}
    wrote, deliver = proto.wrote, proto.deliver

    def watched_wrote() -> None:
        seen["peak"] = max(seen["peak"], unsent_bytes(proto.transport) + proto.held_bytes())
        wrote()

    def watched_deliver(messages: Sequence[m.ServerMessage]) -> None:
        seen["offered"] += sum(len(codec.encode_message(msg)) for msg in messages)
        deliver(messages)

    proto.wrote = watched_wrote  # type: ignore[method-assign]
    proto.deliver = watched_deliver  # type: ignore[method-assign]
    return seen


@needs_second_loopback
@pytest_twisted.ensureDeferred
async def test_resume_churn_by_one_seat_never_gets_a_slow_reading_opponent_cut(live):
    """Issue 15 item 3: a player dropping and resuming its own seat as fast as it could sent the
    opponent a ``presence`` and a ``room`` each time it went and came back, and an opponent reading
    slowly was cut (``unread_output``). With every other limit lifted (the resume bound too:
    coalescing alone is under test) and ``max_unsent`` at 160 KiB, the resumer goes and comes back
    ``scaled(400)`` times from new connections — over twice ``max_unsent`` of messages for the
    opponent — while the opponent reads 256 bytes per cycle (about a quarter of it): once Twisted
    holds 64 KiB for it, a newer ``presence``/``room`` replaces the one waiting, so its queue stays
    within 64 KiB and one write, it is never cut (without coalescing it is), and once it catches up
    it sees the seat as it is; the match next door goes on."""
    server = live(rate_per_second=1e6, rate_burst=1e6, resumes_per_seat=10**6, connection_rate_per_address=1e9,
                  connection_burst_per_address=1e9, max_unsent=160 * 1024)
    neighbours = await Neighbours.start(server)
    deaf = server.deaf(NEIGHBOUR)
    deaf.send(bots.hello("deaf/1"), m.CreateRoom(client_seed="deaf"))
    created = await deaf.read_until(m.RoomCreated)
    resumer = await server.connect(ABUSER)
    token = (await resumer.request("join", room=created.room, client_seed="churn"))["token"]
    deaf.send(m.Ready())
    await resumer.request("ready")
    await deaf.read_until(m.MatchStart)
    proto = server.server_side(deaf.port)
    small_kernel_buffer(proto)
    seen = watch_queue(proto)
    seat = server.core.rooms.rooms[created.room].seats[1]
    cycles = scaled(400)
    for _ in range(cycles):
        resumer.transport.abortConnection()  # away (O12): the opponent is told ...
        await turns_until(lambda: seat.peer is None)
        resumer = await server.connect(ABUSER)
        await resumer.request("resume", room=created.room, token=token)  # ... and back: told again
        with contextlib.suppress(BlockingIOError):
            deaf.lines.dataReceived(deaf.sock.recv(256))  # the opponent reads slowly: a quarter of it
        assert not proto.cut, "the opponent was cut"
    assert seen["offered"] > 2 * server.config.max_unsent  # what it would have been sent without coalescing
    assert seen["peak"] <= 64 * 1024 + 2048  # Twisted's 64 KiB, then the write that passed them
    # The opponent catches up: everything that waited arrives.
    await turns_until(lambda: bool(deaf.read()) and not proto.tail and unsent_bytes(proto.transport) == 0)
    for _ in range(5):
        deaf.read()
        await one_turn()
    last = [msg for msg in deaf.lines.typed if isinstance(msg, m.Presence)][-1]
    assert last.connected and not proto.cut and proto.pid in server.core.conns
    await neighbours.move(2)
    neighbours.check_undisturbed()
    record_figure("abuse", "drop-and-resume cycles by one seat while its opponent read slowly", cycles, "cycles")
    record_figure("abuse", "opponent's queue under resume harassment", seen["peak"], "max bytes")


@needs_second_loopback
@pytest_twisted.ensureDeferred
async def test_reconnect_churn_from_one_address_gets_no_fresh_budget_and_is_refused_past_the_connection_rate(live):
    """Issue 15 item 2 over sockets, default limits: one address opens a connection after another,
    each sending ``hello`` and 10 pings at once, then closing. The first 30 connections (the burst
    of new connections) are served, later ones get ``too_many_connections``; of all their lines
    at most 120 (the address's burst) are answered, the rest ``rate_limited``. The neighbours'
    match goes on meanwhile, and a second later on the rules clock the address may connect again."""
    server = live()
    neighbours = await Neighbours.start(server)
    served = refused = answered = limited = 0
    for i in range(scaled(60)):
        client = await server.connect(ABUSER, hello=False)
        lines = b"".join(codec.encode_message(msg) for msg in [bots.hello("churn/1"), *[m.PingRequest(j) for j in range(10)]])
        client.transport.write(lines)
        await turns_until(lambda c=client: len(c.messages) >= 11 or not c.connected_)
        kinds = [(msg["type"], msg.get("code")) for msg in client.messages]
        if kinds[:1] == [("error", "too_many_connections")]:
            refused += 1
            assert len(kinds) == 1
        else:
            served += 1
            answered += sum(kind in ("welcome", "pong") for kind, _ in kinds)
            limited += sum(code == "rate_limited" for _, code in kinds)
        await arrives(client.close())
        if i % 10 == 9:
            await neighbours.move()
    assert (served, refused) == (30, scaled(60) - 30)
    assert answered == 3 * 40 and limited == served * 11 - answered
    server.rules.advance(1.0)
    await neighbours.move()
    again = await server.connect(ABUSER)  # ten new connections a second: one of them
    assert (await again.request("ping"))["type"] == "pong"
    neighbours.check_undisturbed()
    record_figure("abuse", "reconnect churn connections", scaled(60) + 1, "connections")
