"""The node side of a cluster (issue 21, PROTOCOL.md §18, docs/CLUSTER.md): ``moved`` for a room
another live node owns, the lease renewed every second by its own loop (``task.Clock``), a node
without a lease for 4 s dropping its rooms, a clean shutdown handing them over, the takeover
sweep, per-room time given back after a takeover (O4–O6 deadlines, O12 graces), the owner-tag
secret shared by all nodes, and a paused old owner that can store nothing more.

Each node is a whole server core (tests/support/harness.py) on the throw-away PostgreSQL of
tests/support/postgres.py; each has its own fake clock where the test needs one node to stand
still (a dead or paused process runs no timers).
"""

from __future__ import annotations

from typing import Any

import pytest
import pytest_twisted

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed: pip install 'mine-duel[postgres]'")

from support.harness import START, Harness  # noqa: E402 - after the skip: the storage imports psycopg
from twisted.internet.task import Clock  # noqa: E402

from mineduel.server.cli import parse_args  # noqa: E402
from mineduel.server.cluster import NodeAddress, OwnershipLost  # noqa: E402
from mineduel.server.cluster_node import ClusterNode  # noqa: E402
from mineduel.server.limits import OWNER_KEY, AddressLimits  # noqa: E402
from mineduel.server.storage import Write  # noqa: E402
from mineduel.shared.fairness.verify import verify_record  # noqa: E402

pytestmark = pytest.mark.usefixtures("pg_server")

PIN = "5e3b6376c09108d3d716324acb1a4ce9ab711fe4b445197bff573df3f210620e"
FRONT = NodeAddress("front.example.org", 47650)


def expire(dsn: str, node: str) -> None:
    """Node ``node``'s lease runs out now (as if it had stopped renewing 5 s ago)."""
    with psycopg.connect(dsn, autocommit=True) as db:
        db.execute("UPDATE nodes SET lease = now() - interval '1 second' WHERE node = %s", (node,))


def row(dsn: str, sql: str, *params: Any) -> Any:
    with psycopg.connect(dsn, autocommit=True) as db:
        return db.execute(sql, params).fetchone()


def node(pg_open: Any, name: str, *, clock: Clock | None = None, host: str = "127.0.0.1", port: int = 47650,
         tls: bool = False, pin: str | None = None, front: NodeAddress | None = None,
         seed: int = 1) -> tuple[Harness, ClusterNode]:
    """A server core as node ``name`` with its cluster side started (advertising host:port)."""
    harness = Harness(seed=seed, storage=pg_open(node=name), clock=clock)
    cluster = ClusterNode(harness.core, harness.storage.cluster, harness.clock,
                          advertise=NodeAddress(host, port, tls, pin, name), front=front)
    cluster.start()
    done = harness.rooms.restore_all()
    harness.core.start()  # the clock written every second, as a server does
    while not done.called:
        harness.clock.advance(0)
    return harness, cluster


def own_clock() -> Clock:
    clock = Clock()
    clock.advance(START)
    return clock


# ----- moved (PROTOCOL.md §18) -------------------------------------------------------------------------------
def test_each_request_naming_another_live_nodes_room_gets_moved_and_nothing_changes_here(pg_dsn, pg_open):
    """peek, join, resume and spectate of a room node a owns, sent to node b: ``moved`` naming a's
    advertised address (TLS and pin included) with the request and its id; b took nothing (the row's
    owner and epoch unchanged, no room, seat or spectator in b's memory) and counted no guess."""
    ha, _ = node(pg_open, "a", host="10.1.0.1", port=47001, tls=True, pin=PIN)
    hb, _ = node(pg_open, "b", clock=ha.clock, host="10.1.0.2", port=47002)
    first, _second = ha.start()
    code = first.room
    before = row(pg_dsn, "SELECT owner, epoch FROM rooms WHERE code = %s", code)
    visitor = hb.connect("10.0.2.1")
    requests = [
        {"type": "peek", "room": code, "id": 1},
        {"type": "join", "room": code.lower(), "name": "Cy", "client_seed": "c", "id": "two"},
        {"type": "resume", "room": code, "token": first.token, "id": 3},
        {"type": "spectate", "room": code, "id": 4},
        {"type": "peek", "room": code},  # no id: none echoed
    ]
    for request in requests:
        replies = visitor.send(**request)
        expected = {"type": "moved", "room": code, "host": "10.1.0.1", "port": 47001, "tls": True, "pin": PIN,
                    "request": request["type"]}
        if "id" in request:
            expected["id"] = request["id"]
        assert replies == [expected]
    for _ in range(20):  # more than the guess limit (10 per minute): a moved is not a miss
        assert visitor.send(type="peek", room=code)[0]["type"] == "moved"
    assert row(pg_dsn, "SELECT owner, epoch FROM rooms WHERE code = %s", code) == before == ("a", 1)
    assert code not in hb.rooms.rooms and code not in hb.rooms.lobby.pending
    assert not hb.rooms.lobby.peer_seat and not hb.rooms.lobby.peer_watch and hb.storage.held() == {}
    assert not visitor.closed
    # A code nobody stored is still room_not_found, and that still counts as a guess.
    assert visitor.send(type="peek", room="ZZZZZZ")[0]["code"] == "room_not_found"
    assert hb.core.attempts


def test_a_room_of_a_node_whose_lease_ran_out_is_taken_not_moved(pg_dsn, pg_open):
    """A dead owner (lease over) is not named: the node asked takes the room over (the lazy claim)."""
    ha, cluster_a = node(pg_open, "a")
    first, _ = ha.start()
    cluster_a.stop()
    expire(pg_dsn, "a")
    hb, _ = node(pg_open, "b", clock=own_clock(), port=47002)
    again = hb.connect("10.0.2.1")
    replies = again.send(type="resume", room=first.room, token=first.token)
    assert replies[0]["type"] == "joined" and row(pg_dsn, "SELECT owner FROM rooms WHERE code = %s", first.room) == ("b",)


# ----- the lease -----------------------------------------------------------------------------------------------
def test_the_lease_is_renewed_every_second_by_its_own_loop(pg_dsn, pg_open):
    """Renewals on the server's clock, one a second, whether or not anything is committed, each
    noting the server clock in the node's row (from which a takeover gives time back)."""
    ha, cluster = node(pg_open, "a")
    renewals: list[float | None] = []
    renew = cluster.rows.renew
    cluster.rows.renew = lambda clock: (renewals.append(clock), renew(clock))[1]  # type: ignore[method-assign]
    ha.advance(0.5)
    assert renewals == []
    for _ in range(3):
        ha.advance(1.0)
    assert renewals == [pytest.approx(ha.rooms.now() - 2.0), pytest.approx(ha.rooms.now() - 1.0),
                        pytest.approx(ha.rooms.now())]
    clock, alive = row(pg_dsn, "SELECT clock, lease > now() FROM nodes WHERE node = 'a'")
    assert clock == pytest.approx(ha.rooms.now()) and alive


@pytest.mark.parametrize("front", [FRONT, None], ids=["front", "no-front"])
def test_a_node_that_cannot_renew_for_4_s_stops_serving_its_rooms(pg_dsn, pg_open, front):
    """The database unreachable for the node: at 3 s it still serves; at 4 s (before anyone may take
    the rooms at 5 s) every seated and watching connection gets the unsolicited ``moved`` naming the
    front (or ``server_closing`` ``lease_lost``) and is closed, the rooms leave memory, timers off."""
    ha, cluster = node(pg_open, "a", front=front)
    first, second = ha.start()
    watcher = ha.connect("10.0.0.7")
    watcher.send(type="spectate", room=first.room)
    for client in (first, second, watcher):
        client.new()

    def unreachable(clock: float | None) -> None:
        raise psycopg.OperationalError("connection refused")

    cluster.rows.renew = unreachable  # type: ignore[method-assign]
    ha.advance(3.0)
    assert first.room in ha.rooms.rooms and not first.closed
    ha.advance(1.0)
    ha.turn()
    expected = ({"type": "moved", "room": first.room, "host": FRONT.host, "port": FRONT.port, "tls": False, "pin": None}
                if front is not None else {"type": "server_closing", "reason": "lease_lost"})
    for client in (first, second, watcher):
        assert client.new() == [expected] and client.closed
    assert first.room not in ha.rooms.rooms and ha.storage.held() == {}
    assert first.room in ha.rooms.lobby.pending  # still this node's until the lease ends: a request may restore it
    room_timers = [c for c in ha.clock.getDelayedCalls() if c.func == ha.rooms._on_timer]
    assert room_timers == []
    other = ha.connect("10.0.0.9")  # the node itself goes on (a new room once it can store again)
    assert other.send(type="ping")[0]["type"] == "pong"


def test_rooms_dropped_for_a_lost_lease_come_back_here_if_nobody_took_them(pg_dsn, pg_open):
    """The database back before the lease was taken over: the node renews again, and a player
    resuming on it brings the room back (epoch 2, still this node's), the turn's time given back."""
    ha, cluster = node(pg_open, "a")
    first, _ = ha.start()
    left = first.last("state")["deadline"]["left"]
    renew = cluster.rows.renew

    def unreachable(clock: float | None) -> None:
        raise psycopg.OperationalError("connection refused")

    cluster.rows.renew = unreachable  # type: ignore[method-assign]
    ha.advance(4.0)
    assert first.room not in ha.rooms.rooms and first.closed
    cluster.rows.renew = renew  # type: ignore[method-assign]
    ha.advance(1.0)
    assert cluster.serving
    again = ha.connect("10.0.3.1")
    again.send(type="resume", room=first.room, token=first.token)
    assert again.last("state")["deadline"]["left"] == pytest.approx(left, abs=1.0)
    assert row(pg_dsn, "SELECT owner, epoch FROM rooms WHERE code = %s", first.room) == ("a", 2)


def test_a_paused_old_owner_can_store_nothing_and_drops_what_it_lost_when_it_runs_again(pg_dsn, pg_open):
    """SIGSTOP, simulated by not renewing: a's lease runs out, b's sweep takes the room; a, running
    again, shows nothing of its players' move (its commit is refused whole, OwnershipLost) and its
    first late renewal drops the room with ``moved`` naming b; on b the room is as stored."""
    ha, cluster_a = node(pg_open, "a", host="10.1.0.1", port=47001)
    first, second = ha.start()
    code, seq = first.room, ha.match(first).seq
    cluster_a.stop()  # paused: no renewal, no timers run
    expire(pg_dsn, "a")
    hb, cluster_b = node(pg_open, "b", clock=own_clock(), host="10.1.0.2", port=47002)
    hb.advance(1.0)
    hb.advance(0)
    assert code in hb.rooms.rooms and row(pg_dsn, "SELECT owner, epoch FROM rooms WHERE code = %s", code) == ("b", 2)
    mover = first if first.last("state")["to_move"] == "me" else second
    match_id = ha.match(first).id
    stored = ("SELECT r.owner, r.epoch, r.data, (SELECT count(*) FROM actions a WHERE a.match_id = %s) "
              "FROM rooms r WHERE r.code = %s")
    before = row(pg_dsn, stored, match_id, code)
    first.new(), second.new()
    replies = mover.send(type="explore", cell=[0, 0])
    assert [m.get("code") for m in replies] == ["internal_error", "internal_error"]  # nothing of the move
    # At the database: the row's owner, epoch and blob and the match's action rows are as b left them.
    assert row(pg_dsn, stored, match_id, code) == before and before[:2] == ("b", 2)
    # Its players were shown no move (no state, no ok) and were closed: they resume on b.
    assert not [m for c in (first, second) for m in c.new() if m["type"] in ("state", "ok")]
    assert first.closed and second.closed
    assert hb.match(first).seq == seq and ha.core.commits.healthy
    with pytest.raises(OwnershipLost):
        ha.storage.commit(Write(rooms={code: {"stale": True}}))
    assert hb.storage.load_room(code)[0].get("stale") is None

    # A second room a still holds when it wakes: its late renewal asks, and drops it towards b.
    third, fourth = ha.start(("g", "h"))
    cluster_a.stop()
    expire(pg_dsn, "a")
    hb.advance(1.0)
    hb.advance(0)
    assert third.room in hb.rooms.rooms
    third.new()
    cluster_a.start()
    cluster_a.renewed -= 10  # the pause, as the node's own clock saw it
    ha.advance(1.0)
    ha.turn()
    assert third.new() == [{"type": "moved", "room": third.room, "host": "10.1.0.2", "port": 47002, "tls": False,
                            "pin": None}]
    assert third.closed and fourth.closed and third.room not in ha.rooms.rooms


# ----- a clean shutdown ------------------------------------------------------------------------------------
def test_a_clean_shutdown_ends_the_lease_and_sends_moved_naming_the_node_with_fewest_rooms(pg_dsn, pg_open):
    """SIGTERM: everything stored, the lease ended at once, each seated and watching connection
    told ``moved`` towards the live node with the fewest rooms (c, not the busier b); there the
    players resume at once (no lease to wait for) with nothing lost; others get server_closing."""
    ha, _ = node(pg_open, "a", host="10.1.0.1", port=47001)
    hb, _ = node(pg_open, "b", clock=ha.clock, host="10.1.0.2", port=47002, seed=2)
    hc, _ = node(pg_open, "c", clock=ha.clock, host="10.1.0.3", port=47003, seed=3)
    hb.pair(("x", "y"))  # b is busier than c
    first, second = ha.start()
    first.send(type="explore", cell=[0, 0]) if first.last("state")["to_move"] == "me" else None
    seq, code = ha.match(first).seq, first.room
    idle = ha.connect("10.0.0.9")
    for client in (first, second, idle):
        client.new()
    ha.core.stop()
    moved = {"type": "moved", "room": code, "host": "10.1.0.3", "port": 47003, "tls": False, "pin": None}
    assert first.new() == [moved] and second.new() == [moved] and first.closed and second.closed
    assert idle.new() == [{"type": "server_closing", "reason": "shutdown"}]
    assert row(pg_dsn, "SELECT lease <= now() FROM nodes WHERE node = 'a'") == (True,)
    for player in (first, second):
        again = hc.connect(f"10.0.3.{player.pid}")
        again.send(type="resume", room=code, token=player.token)
        assert again.last("state")["seq"] == seq
    assert row(pg_dsn, "SELECT owner FROM rooms WHERE code = %s", code) == ("c",)


# ----- the sweep --------------------------------------------------------------------------------------------
def test_the_sweep_takes_rooms_of_a_dead_node_without_waiting_for_a_client(pg_dsn, pg_open):
    """SIGKILL of a: once its lease ran out, b's next beat claims its rooms (one batch, SKIP
    LOCKED: a room another transaction holds is left for later, never waited for) and restores
    them in slices; the players then find them on b."""
    ha, cluster_a = node(pg_open, "a")
    hb, cluster_b = node(pg_open, "b", clock=own_clock(), port=47002)  # running before a dies
    rooms = [ha.start((f"s{i}", f"t{i}")) for i in range(3)]
    cluster_a.stop()
    expire(pg_dsn, "a")
    assert not hb.rooms.rooms
    locked = rooms[0][0].room
    with psycopg.connect(pg_dsn) as other:  # another node's claim in progress on one room
        other.execute("SELECT 1 FROM rooms WHERE code = %s FOR UPDATE", (locked,))
        hb.advance(1.0)
        while hb.rooms.lobby.pending:
            hb.advance(0)
            if locked in hb.rooms.lobby.pending and len(hb.rooms.lobby.pending) == 1:
                break
        assert {first.room for first, _ in rooms[1:]} <= set(hb.rooms.rooms) and locked not in hb.rooms.rooms
    hb.advance(1.0)
    hb.advance(0)
    assert {first.room for first, _ in rooms} <= set(hb.rooms.rooms) and cluster_b.swept == 3
    assert [row(pg_dsn, "SELECT owner, epoch FROM rooms WHERE code = %s", f.room) for f, _ in rooms] == [("b", 2)] * 3
    first, _ = rooms[1]
    again = hb.connect("10.0.3.1")
    assert again.send(type="resume", room=first.room, token=first.token)[0]["type"] == "joined"


def test_a_full_batch_is_followed_by_the_next_at_once(pg_dsn, pg_open):
    """Batches of 2, 5 rooms of a dead node: one beat of b and its reactor turns take all five
    (each batch claimed once the last is restored), not one batch a second."""
    ha, cluster_a = node(pg_open, "a")
    hb = Harness(seed=2, storage=pg_open(node="b"), clock=own_clock())
    cluster_b = ClusterNode(hb.core, hb.storage.cluster, hb.clock, advertise=NodeAddress("h", 2), sweep_batch=2)
    cluster_b.start()
    codes = {ha.start((f"s{i}", f"t{i}"))[0].room for i in range(5)}
    cluster_a.stop()
    expire(pg_dsn, "a")
    hb.advance(1.0)
    for _ in range(50):
        hb.advance(0)
    assert codes <= set(hb.rooms.rooms) and cluster_b.swept == 5 and not hb.rooms.lobby.pending


# ----- time per room ------------------------------------------------------------------------------------------
def test_a_room_taken_over_gives_its_ownerless_seconds_back_and_its_record_stays_valid(pg_dsn, pg_open):
    """a dies 5 s into a 20 s opening step; b takes the room 30 s later (its own clock). The player
    to move still has 15 s (not 0: the ownerless seconds are not charged, O4/O6 as after a restart),
    the absent seats' graces likewise, the timeout comes 15 s after the takeover, and the finished
    match's record passes every check of the verifier (no action later than its deadline)."""
    ha, cluster_a = node(pg_open, "a")
    hb, _ = node(pg_open, "b", clock=own_clock(), port=47002)
    first, second = ha.start()
    ha.advance(5.0)
    left_on_a = first.last("state")["deadline"]["at"] - ha.rooms.now()
    assert left_on_a == pytest.approx(15.0)
    cluster_a.stop()  # SIGKILL: nothing more runs on a
    hb.advance(34.0)  # b runs on; a's lease (5 s of the database's own clock) has not run out yet
    assert first.room not in hb.rooms.rooms
    expire(pg_dsn, "a")
    hb.advance(1.0)  # b's next beat: the sweep takes the room, 30 s after a's last renewal
    hb.advance(0)
    room = hb.rooms.rooms[first.room]
    assert hb.rooms.now() - room.lag == pytest.approx(ha.rooms.now(), abs=1.0)  # its clock resumed where a left it
    again = [hb.connect(f"10.0.3.{p.pid}") for p in (first, second)]
    for client, player in zip(again, (first, second), strict=True):
        client.send(type="resume", room=player.room, token=player.token)
        state = client.last("state")
        assert state["deadline"]["left"] == pytest.approx(15.0, abs=1.0)  # given back, as after a restart
    assert again[0].last("room")["opponent"]["grace"] is None or again[0].last("room")["opponent"]["grace"]["left"] > 100
    seq = hb.match(first).seq
    hb.advance(14.0)
    assert hb.match(first).seq == seq  # not timed out yet
    hb.advance(2.0)
    assert hb.match(first).seq > seq  # the timeout, 15 s after the takeover (O4)
    again[0].send(type="resign")
    record = again[1].last("match_end")["record"]
    report = verify_record(record)
    assert report.ok, [c for c in report.checks if not c.ok]


# ----- settled for several nodes ----------------------------------------------------------------------------
def test_the_owner_tag_secret_is_the_first_nodes(pg_open):
    """Nodes opening one database together share one owner-tag secret (the first one stored wins),
    so an address's rooms and limits are counted under one tag whichever node it reaches."""
    a, b = pg_open(node="a"), pg_open(node="b")
    assert a.meta(OWNER_KEY) == b.meta(OWNER_KEY) is not None
    clock = Clock()
    tags = {AddressLimits.for_storage(Harness().config, clock.seconds, s).owner("198.51.100.7") for s in (a, b)}
    assert len(tags) == 1


def test_advertise_and_front_options(pg_dsn):
    """``--advertise`` and ``--front`` take HOST:PORT ([v6]:PORT); anything else is a clear error."""
    config, _ = parse_args(["--db", pg_dsn, "--advertise", "10.1.0.1:47001", "--front", "[2001:db8::1]:443"])
    assert config.advertise == ("10.1.0.1", 47001) and config.front == ("2001:db8::1", 443)
    for bad in ("nohost", "h:0", "h:70000", "a b:1", ":1"):
        with pytest.raises(SystemExit):
            parse_args(["--advertise", bad])


def test_invite_links_name_the_front_address(pg_open):
    """With --front, the invite a room's creator gets names the cluster's front, not this node."""
    harness = Harness(storage=pg_open(node="a"), front=("play.example.org", 47650))
    creator = harness.connect()
    created = creator.send(type="create_room", name="Ann", client_seed="s")[0]
    assert created["invite"] == f"mineduel://play.example.org:47650/join/{created['room']}"


@pytest_twisted.ensureDeferred
async def test_real_nodes_moved_and_a_clean_stop_hand_over_over_sockets(pg_dsn):
    """Two real servers on loopback (service.start_server wires the node side): a peek at the
    other node's room gets ``moved`` naming its address (the default --advertise: --host and the
    bound port); stopping that node sends its
    seated client the unsolicited ``moved`` towards the node still running, where it resumes."""
    from twisted.internet import reactor

    from mineduel.server.client import connect
    from mineduel.server.config import Config
    from mineduel.server.service import start_server

    a = start_server(reactor, Config(host="127.0.0.1", port=0, udp_port=None, db=pg_dsn, node="a"))
    b = start_server(reactor, Config(host="127.0.0.1", port=0, udp_port=None, db=pg_dsn, node="b"))
    try:
        await a.restored
        await b.restored
        player = await connect(reactor, "127.0.0.1", a.port)
        await player.hello()
        created = await player.request("create_room", name="Ann", client_seed="s")
        code, token = created["room"], created["token"]
        visitor = await connect(reactor, "127.0.0.1", b.port)
        await visitor.hello()
        visitor.send("peek", room=code, id=5)
        moved = await visitor.wait_for("moved")
        assert moved == {"type": "moved", "room": code, "host": "127.0.0.1", "port": a.port, "tls": False,
                         "pin": None, "request": "peek", "id": 5}
        waiting = player.wait_for("moved")
        await a.stop()
        told = await waiting
        assert (told["host"], told["port"], "request" in told) == ("127.0.0.1", b.port, False)
        again = await connect(reactor, told["host"], told["port"])
        await again.hello()
        joined = await again.request("resume", room=code, token=token)
        assert joined["type"] == "joined" and row(pg_dsn, "SELECT owner FROM rooms WHERE code = %s", code) == ("b",)
        for client in (visitor, again):
            client.transport.loseConnection()
    finally:
        await a.stop()
        await b.stop()
