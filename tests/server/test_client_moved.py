"""LineClient follows ``moved`` (PROTOCOL.md §18, C5): bots, benchmarks and tests reach the node
that owns their room by themselves, keep their token, and stop after 3 moves in a row.

Fake nodes on loopback (real sockets, :class:`FakeNode`): each answers ``hello`` with a genuine
``welcome`` and every room request either with ``moved`` to the next node or with a plain answer.
The only waits are bounded waits for a socket to answer.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
import pytest_twisted
from support.hostile_server import ROOM, TOKEN, baseline
from twisted.internet import defer, protocol
from twisted.protocols.basic import LineOnlyReceiver

from mineduel.server.client import BadMove, LineClient, MovedError, check_move, connect, follow
from mineduel.shared.wire import messages as m


def _reactor() -> Any:
    from twisted.internet import reactor

    return reactor


class _NodeConn(LineOnlyReceiver):
    delimiter = b"\n"

    def __init__(self, node: FakeNode) -> None:
        self.node = node

    def connectionMade(self) -> None:
        self.node.conns.append(self)

    def lineReceived(self, raw: bytes) -> None:
        msg = json.loads(raw)
        self.node.received.append(msg)
        kind, rid = msg.get("type"), msg.get("id")
        if kind == "hello":
            self.write({**baseline()["welcome"], "id": rid})
        elif self.node.moved_to is not None:
            host, port = self.node.moved_to
            self.write(self.node.moved_line or {"type": "moved", "room": msg.get("room", ROOM), "host": host, "port": port,
                                                "tls": False, "pin": None, "request": kind, "id": rid})
        elif kind == "resume":
            self.write({**baseline()["joined"], "id": rid})
        elif kind == "peek":
            self.write({**baseline()["room_info"], "id": rid})
        else:
            self.write({"type": "ok", "request": kind, "id": rid})

    def write(self, message: dict[str, Any] | bytes) -> None:
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        assert self.transport is not None
        self.transport.write(data + b"\n")


class FakeNode:
    """A node of a fake cluster: ``moved_to`` set, every room request is answered ``moved`` there."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self.conns: list[_NodeConn] = []
        self.moved_to: tuple[str, int] | None = None
        self.moved_line: bytes | None = None
        self.port_ = _reactor().listenTCP(0, protocol.Factory.forProtocol(lambda: _NodeConn(self)), interface="127.0.0.1")

    @property
    def port(self) -> int:
        return int(self.port_.getHost().port)

    def requests(self, kind: str) -> list[dict[str, Any]]:
        return [x for x in self.received if x.get("type") == kind]

    def stop(self) -> Any:
        for conn in self.conns:
            if conn.transport is not None:
                conn.transport.abortConnection()
        return self.port_.stopListening()


@pytest_twisted.async_yield_fixture
async def nodes():
    made = [FakeNode() for _ in range(5)]
    yield made
    for node in made:
        await node.stop()


def chain(nodes: list[FakeNode], moves: int) -> None:
    """Node 0 moves to 1, 1 to 2, … ``moves`` times; the next one answers."""
    for a, b in itertools.pairwise(nodes[:moves + 1]):
        a.moved_to = ("127.0.0.1", b.port)


async def _bounded(d: defer.Deferred[Any], seconds: float = 5.0) -> Any:
    return await d.addTimeout(seconds, _reactor())


async def _client(node: FakeNode) -> LineClient:
    c = await _bounded(defer.ensureDeferred(connect(_reactor(), "127.0.0.1", node.port, "bot/1")))
    await _bounded(defer.ensureDeferred(c.hello()))
    return c


@pytest_twisted.ensureDeferred
async def test_a_resume_answered_moved_is_repeated_on_the_named_node_with_the_same_token(nodes):
    chain(nodes, 1)
    first = await _client(nodes[0])
    with pytest.raises(MovedError) as caught:  # request() alone says so: nothing is followed silently
        await _bounded(defer.ensureDeferred(first.request(m.Resume(ROOM, TOKEN))))
    assert caught.value.moved.port == nodes[1].port and caught.value.moved.request == "resume"
    client, reply = await _bounded(defer.ensureDeferred(follow(first, m.Resume(ROOM, TOKEN))))
    assert isinstance(reply, m.Joined) and client is not first and client.address == ("127.0.0.1", nodes[1].port)
    assert [r["token"] for r in nodes[1].requests("resume")] == [TOKEN]
    assert [x["type"] for x in nodes[1].received] == ["hello", "resume"]  # hello first, then the same request
    await _bounded(first.lost)  # the old connection was closed
    await client.close()


@pytest_twisted.ensureDeferred
async def test_three_moves_in_a_row_are_followed_and_a_fourth_is_a_clear_error(nodes):
    chain(nodes, 3)
    client, reply = await _bounded(defer.ensureDeferred(follow(await _client(nodes[0]), m.Peek(ROOM))))
    assert isinstance(reply, m.RoomInfo) and client.address == ("127.0.0.1", nodes[3].port)
    await client.close()
    for node in nodes:
        node.received.clear()
    chain(nodes, 4)
    start = await _client(nodes[0])
    with pytest.raises(BadMove, match="4 times in a row"):
        await _bounded(defer.ensureDeferred(follow(start, m.Resume(ROOM, TOKEN))))
    assert nodes[4].received == []  # the fifth node never heard of it, nor of the token


@pytest_twisted.ensureDeferred
async def test_an_unsolicited_moved_is_followed_by_resume_and_by_spectate(nodes):
    moved = m.Moved(ROOM, "127.0.0.1", nodes[1].port)
    for request in (m.Resume(ROOM, TOKEN), m.Spectate(ROOM)):
        start = await _client(nodes[0])
        client, reply = await _bounded(defer.ensureDeferred(follow(start, request, moved=moved)))
        assert client.address == ("127.0.0.1", nodes[1].port)
        assert isinstance(reply, m.Joined if isinstance(request, m.Resume) else m.Ok)
        await client.close()
    assert [x["type"] for x in nodes[1].received] == ["hello", "resume", "hello", "spectate"]
    start = await _client(nodes[0])
    with pytest.raises(BadMove, match="resume or spectate"):  # a join is never sent because of an unsolicited moved
        await _bounded(defer.ensureDeferred(follow(start, m.Join(ROOM), moved=moved)))
    assert nodes[1].requests("join") == []


@pytest.mark.parametrize("line", [
    {"host": "x" * 100_000},
    {"host": "evil host\n"},
    {"port": 0},
    {"port": 70000},
    {"tls": False, "pin": "ab" * 32},
    {"request": "create_room"},
])
@pytest_twisted.ensureDeferred
async def test_a_malformed_moved_is_refused_and_nothing_is_followed(nodes, line):
    """The strict reader refuses it (counted as malformed); the request is not answered by it and no
    connection goes anywhere."""
    nodes[0].moved_to = ("127.0.0.1", nodes[1].port)
    nodes[0].moved_line = json.dumps({"type": "moved", "room": ROOM, "host": "127.0.0.1", "port": nodes[1].port,
                                      "tls": False, "pin": None, "request": "resume", "id": "c2", **line}).encode()
    start = await _client(nodes[0])
    pending = defer.ensureDeferred(follow(start, m.Resume(ROOM, TOKEN)))
    await _bounded(_until(lambda: start.malformed_count == 1))
    assert not pending.called and nodes[1].received == []
    pending.addErrback(lambda _: None)
    await start.close()


def _until(condition: Any) -> defer.Deferred[None]:
    """Fires once ``condition()`` holds (polled each reactor turn; bounded by the caller)."""
    from twisted.internet.task import deferLater

    async def wait() -> None:
        while not condition():
            await deferLater(_reactor(), 0.01, lambda: None)

    return defer.ensureDeferred(wait())


def test_check_move_refuses_tls_to_plaintext_another_room_or_request():
    client = LineClient("bot/1")
    plain = m.Moved(ROOM, "10.0.0.2", 47650, request="resume", id="c1")
    check_move(client, plain, m.Resume(ROOM.lower(), TOKEN))  # room codes are case-insensitive
    client.tls = True
    with pytest.raises(BadMove, match="plaintext"):
        check_move(client, plain, m.Resume(ROOM, TOKEN))
    check_move(client, m.Moved(ROOM, "10.0.0.2", 47650, tls=True, pin=None, request="resume"), m.Resume(ROOM, TOKEN))
    client.tls = False
    with pytest.raises(BadMove, match="answers 'resume'"):
        check_move(client, plain, m.Join(ROOM))
    with pytest.raises(BadMove, match="names room"):
        check_move(client, plain, m.Resume("ABCDEF", TOKEN))


@pytest_twisted.ensureDeferred
async def test_the_game_client_over_tcp_follows_a_moved_to_a_real_server(nodes, tmp_path):
    """End to end on sockets: the game's own TCP link (client/net.py) reads the front's ``moved``
    and the session joins the room on a real server there (its rules on ``task.Clock``)."""
    from twisted.internet.task import Clock, deferLater

    from mineduel.client.net import tcp_connector
    from mineduel.client.online_client import Conn, OnlineClient, OnlineServices
    from mineduel.client.tokens import TokenStore
    from mineduel.server.config import Config
    from mineduel.server.service import start_server
    from mineduel.server.storage import MemoryStorage

    clock = Clock()
    clock.advance(1_700_000_000)
    config = Config(host="127.0.0.1", port=0, udp_port=None, db=":memory:", public_host="127.0.0.1")
    handle = start_server(_reactor(), config, clock=clock, storage=MemoryStorage())
    clock.advance(0)
    try:
        host = await _bounded(defer.ensureDeferred(connect(_reactor(), "127.0.0.1", handle.port, "host/1")))
        await _bounded(defer.ensureDeferred(host.hello()))
        created = await _bounded(defer.ensureDeferred(host.request(m.CreateRoom(name="Jun", client_seed="j"))))
        assert isinstance(created, m.RoomCreated)
        front = nodes[0]
        front.moved_to = ("127.0.0.1", handle.port)
        session = OnlineClient(OnlineServices(connect=tcp_connector(_reactor()), tokens=TokenStore(tmp_path / "c")),
                               lambda: 1000.0)
        session.player_name = "Mina"
        session.connect("127.0.0.1", front.port, then=lambda: session.requests.join(created.room))

        async def until_seated() -> None:
            for _ in range(3000):
                session.update()
                if session.seated or session.conn == Conn.FAILED:
                    return
                await deferLater(_reactor(), 0.002, lambda: None)

        await _bounded(defer.ensureDeferred(until_seated()))
        assert session.seated and session.via == ("127.0.0.1", handle.port, False, None)
        assert [x["type"] for x in front.received] == ["hello", "join"]
        room = await _bounded(host.wait_for(m.Room, lambda r: r.opponent is not None))
        assert room.opponent is not None and room.opponent.name == "Mina"
        session.close()
        await host.close()
    finally:
        await handle.stop()
