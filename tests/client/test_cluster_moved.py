"""The game client follows ``moved`` (issue 21, C5, PROTOCOL.md §18): a player never handles a
cluster by hand.

No sockets, no real time: the node that owns the room is the real server core in this process
(``in_process_server``), reached at any address but the front's; the front is a scripted node
(:class:`Front`) that greets and answers ``moved``. Every link the client opens is recorded with
what was sent on it, so a test can say where the token went. The session and the watcher run on
a fake clock, one ``update()`` per frame.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from support.hostile_server import baseline

from mineduel.client.net import TcpLink
from mineduel.client.online_client import Conn, OnlineClient, OnlineServices
from mineduel.client.online_link import MAX_MOVES
from mineduel.client.spectate_client import Watch, Watcher
from mineduel.client.tokens import SavedSession, TokenStore
from mineduel.server.client import in_process_server
from mineduel.shared.wire import codec
from mineduel.shared.wire import messages as m

NODE = ("10.0.0.7", 47650)
FRONT = ("play.example.org", 47650)
WELCOME = codec.parse_server(baseline()["welcome"])


class Front:
    """A scripted node: ``welcome`` to ``hello``, and ``moved`` to ``moves_to`` for every room request."""

    def __init__(self, listener: Any, moves_to: tuple[str, int], **moved: Any) -> None:
        self.listener = listener
        self.moves_to = moves_to
        self.moved = moved
        self.sent: list[m.ClientMessage] = []
        self.closed = False
        listener.link_open(self)

    def send(self, message: m.ClientMessage) -> None:
        self.sent.append(message)
        if isinstance(message, m.Hello):
            self.listener.link_message(self, WELCOME)
        elif isinstance(message, (m.Peek, m.Join, m.Resume, m.Spectate)):
            fields = {"request": message.TYPE.value, "id": message.id, **self.moved}
            room = fields.pop("room", message.room)
            self.listener.link_message(self, m.Moved(room, *self.moves_to, **fields))

    def close(self) -> None:
        self.closed = True


class Cluster:
    """The real server at every address but the scripted ones; each link recorded as (host, port, link)."""

    def __init__(self, tmp_path: Any) -> None:
        self.server = in_process_server(seed=5)
        self.real = self.server.connector()
        self.scripted: dict[tuple[str, int], dict[str, Any]] = {}
        self.links: list[tuple[str, int, bool, Any]] = []
        self.now = 1000.0
        self.tmp_path = tmp_path
        self.observe: Any = None
        self.observed: list[tuple[str, Any]] = []

    def connect(self, host: str, port: int, listener: Any, *, tls: bool = False, pin: str | None = None) -> Any:
        script = self.scripted.get((host, port))
        link = Front(listener, **script) if script is not None else self._recorded(self.real(host, port, listener))
        self.links.append((host, port, tls, link))
        return link

    def client(self) -> OnlineClient:
        services = OnlineServices(connect=self.connect, tokens=TokenStore(self.tmp_path / "c"),
                                  wall_clock=lambda: 1_700_000_000.0)
        client = OnlineClient(services, lambda: self.now)
        client.player_name = "Mina"
        return client

    def run(self, *clients: Any, frames: int = 20) -> None:
        for _ in range(frames):
            for c in clients:
                c.update()
            self.now += 0.05

    def sent_to(self, host: str, kind: type[Any]) -> list[Any]:
        return [x for h, _p, _t, link in self.links if h == host for x in link.sent if isinstance(x, kind)]

    def _recorded(self, link: Any) -> Any:
        """A real in-process link that also keeps what was sent on it (and, with ``observe``, what
        the client showed when each message left: the in-process node answers at once)."""
        link.sent = []
        send = link.send

        def recording(message: m.ClientMessage) -> None:
            link.sent.append(message)
            if self.observe is not None:
                self.observed.append((type(message).__name__, self.observe()))
            send(message)

        link.send = recording
        return link


@pytest.fixture
def cluster(tmp_path):
    return Cluster(tmp_path)


def _room(cluster: Cluster) -> tuple[Any, str]:
    host = cluster.server.peer()
    code = host.send(type="create_room", name="Jun", client_seed="j-1")[0]["room"]
    return host, code


def test_a_join_answered_moved_joins_on_the_named_node_and_the_token_is_saved_with_the_front(cluster):
    host, code = _room(cluster)
    cluster.scripted[FRONT] = {"moves_to": NODE}
    client = cluster.client()
    client.connect(*FRONT, then=lambda: client.requests.join(code))
    cluster.run(client)
    assert client.conn == Conn.OPEN and client.seated and client.via == (*NODE, False, None) and not client.moving
    assert client.address == FRONT  # the screens, the saved token and the witness name the server dialled
    assert [(h, p) for h, p, _t, _l in cluster.links] == [FRONT, NODE]
    assert [type(x).__name__ for x in cluster.links[1][3].sent[:2]] == ["Hello", "Join"]
    assert host.last("room")["opponent"]["name"] == "Mina"
    saved = client.services.tokens.load()
    assert saved is not None and (saved.host, saved.port) == FRONT and saved.token == client.token
    assert client.moves == 0  # the join succeeded: the count starts again


def test_an_unsolicited_moved_mid_match_resumes_on_the_named_node_with_the_same_token(cluster):
    host, code = _room(cluster)
    client = cluster.client()
    client.connect(*NODE, then=lambda: client.requests.join(code))
    cluster.run(client)
    token = client.token
    client.requests.ready()
    host.send(type="ready", client_seed="j-2")
    cluster.run(client)
    assert client.match is not None
    first = cluster.links[-1][3]
    cluster.observe = lambda: (client.conn, client.view.presence().moving, client.view.presence().reconnecting)
    client.connection.link_message(first, m.Moved(code, "10.0.0.8", 47650))  # the node hands the room on
    cluster.run(client)
    # While it moved, the screens were told "moving", not an error: at its hello to the new node.
    assert cluster.observed[0] == ("Hello", (Conn.RECONNECTING, True, True))
    assert client.conn == Conn.OPEN and client.via == ("10.0.0.8", 47650, False, None) and client.token == token
    assert not client.moving and client.match is not None
    assert [r.token for r in cluster.sent_to("10.0.0.8", m.Resume)] == [token]
    assert not any(isinstance(x, m.Join) for x in cluster.sent_to("10.0.0.8", m.Join))


def test_three_moves_are_followed_and_the_fourth_in_a_row_is_a_clear_error(cluster):
    _host, code = _room(cluster)
    hops = [("f1", 1), ("f2", 2), ("f3", 3), ("f4", 4), NODE]
    for a, b in itertools.pairwise(hops):
        cluster.scripted[a] = {"moves_to": b}
    client = cluster.client()
    client.connect(*hops[1], then=lambda: client.requests.peek(code))  # 3 moves: f2 -> f3 -> f4 -> the node
    cluster.run(client)
    assert client.room_info is not None and client.room_info.room == code and client.via == (*NODE, False, None)
    cluster.links.clear()
    client = cluster.client()
    client.connect(*hops[0], then=lambda: client.requests.peek(code))  # 4 moves: refused at the fourth
    cluster.run(client)
    assert client.conn == Conn.FAILED and client.error == "cluster.error.too_many_moves"
    assert [(h, p) for h, p, _t, _l in cluster.links] == hops[:4]  # the node the 4th named was never dialled
    assert MAX_MOVES == 3


@pytest.mark.parametrize("moved", [{"tls": False}, {"room": "ABCDEF"}, {"request": "join"}])
def test_a_moved_that_would_leave_tls_or_names_another_room_or_request_is_refused(cluster, moved):
    """A TLS session told to go plaintext (the token would travel in clear), or a moved for another
    room or request: a clear error, no connection anywhere, the saved seat kept for later."""
    _host, code = _room(cluster)
    cluster.scripted[FRONT] = {"moves_to": NODE, **moved}
    client = cluster.client()
    token = "ab" * 32
    client.services.tokens.save(SavedSession(*FRONT, code, token, True, 1_700_000_000.0, True, None))
    saved = client.services.tokens.load()
    assert saved is not None
    client.resume_saved(saved)
    cluster.run(client)
    assert client.conn == Conn.FAILED and client.error == "online.error.bad_server"
    assert [(h, p) for h, p, _t, _l in cluster.links] == [FRONT]
    assert cluster.links[0][2] is True  # the front was reached over TLS
    assert client.services.tokens.load() == saved and client.token == token


def test_a_plain_drop_after_a_move_goes_back_to_the_front(cluster):
    """The node died (not a move): reconnecting goes to the address the player dialled, whose node
    sends the client on again (takeover, §18)."""
    _host, code = _room(cluster)
    cluster.scripted[FRONT] = {"moves_to": NODE}
    client = cluster.client()
    client.connect(*FRONT, then=lambda: client.requests.join(code))
    cluster.run(client)
    assert client.via is not None and client.via[:2] == NODE
    cluster.server.cut(cluster.links[-1][3])
    cluster.run(client, frames=40)
    assert [(h, p) for h, p, _t, _l in cluster.links][-2:] == [FRONT, NODE]
    assert client.conn == Conn.OPEN and client.seated
    assert len(cluster.sent_to(NODE[0], m.Resume)) == 1


def test_a_malformed_moved_line_ends_the_link_as_a_bad_server():
    """The strict reader refuses a moved with a bad host, port or pin; the TCP link reports garbage
    (the lobby says *bad server*) and nothing is followed."""
    heard: list[str] = []

    class Listener:
        def link_garbage(self, link: Any, detail: str) -> None:
            heard.append(detail)

    link = TcpLink(Listener())  # type: ignore[arg-type]
    for bad in (b'{"type":"moved","room":"NYTF23","host":"' + b"x" * 100_000 + b'","port":1,"tls":false,"pin":null}',
                b'{"type":"moved","room":"NYTF23","host":"a b","port":1,"tls":false,"pin":null}',
                b'{"type":"moved","room":"NYTF23","host":"a","port":70000,"tls":false,"pin":null}'):
        link.garbage = False
        with pytest.raises(m.BadMessage):
            codec.decode_server(bad)
        link.malformed_line(bad, "bad moved")
    assert len(heard) == 3


def test_a_spectator_follows_moved_and_spectates_on_the_named_node(cluster):
    _host, code = _room(cluster)
    cluster.scripted[FRONT] = {"moves_to": NODE}
    watcher = Watcher(lambda: cluster.connect, lambda: cluster.now, "test/1")
    watcher.watch(*FRONT, code)
    cluster.run(watcher)
    assert watcher.status == Watch.WATCHING and watcher.via == (*NODE, False, None) and watcher.state is not None
    assert not watcher.moving and watcher.moves == 0
    link = cluster.links[-1][3]
    cluster.observe = lambda: (watcher.moving, watcher.status)
    watcher.connection.link_message(link, m.Moved(code, "10.0.0.9", 47650))  # unsolicited: the node hands it on
    cluster.run(watcher)
    assert cluster.observed[0] == ("Hello", (True, Watch.RECONNECTING))
    assert watcher.status == Watch.WATCHING and watcher.via == ("10.0.0.9", 47650, False, None)
    assert len(cluster.sent_to("10.0.0.9", m.Spectate)) == 1
    watcher.connection.link_message(cluster.links[-1][3], m.Moved("ABCDEF", "10.0.0.10", 47650))
    watcher.update()
    assert watcher.status == Watch.FAILED and watcher.error == "online.error.bad_server"
