"""``live_rooms`` across a cluster (issue 21, PROTOCOL.md §16 and §18, server/cluster_live.py).

Two (or three) whole server cores (tests/support/harness.py) on one throw-away PostgreSQL
(tests/support/postgres.py), sharing a fake clock: a spectator asking any node sees the listed,
watchable, running matches of every live node, in the §16 order and cap, with their turn and
spectator count as their node last shared them (every 2 s); the request itself never queries the
database; a `spectate` of a room another node owns is answered `moved`; a node whose lease ran
out, or whose match finished, drops out at the next share. SQLite and memory keep the answer
from memory alone."""

from __future__ import annotations

from typing import Any

import pytest

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed: pip install 'mine-duel[postgres]'")

from support.harness import START, Harness  # noqa: E402 - after the skip: the storage imports psycopg
from twisted.internet.task import Clock  # noqa: E402

from mineduel.server.cluster import NodeAddress  # noqa: E402
from mineduel.server.cluster_live import SHARE_EVERY, merged, read_entry  # noqa: E402
from mineduel.server.cluster_node import ClusterNode  # noqa: E402
from mineduel.shared.wire import messages as m  # noqa: E402
from mineduel.shared.wire.names import LIVE_ROOMS_MAX  # noqa: E402

pytestmark = pytest.mark.usefixtures("pg_server")


def node(pg_open: Any, name: str, clock: Clock, *, port: int = 47650, cluster: bool = True, seed: int = 1) -> Harness:
    """A server core as node ``name`` (its ``moved`` side started when ``cluster``)."""
    harness = Harness(seed=seed, storage=pg_open(node=name), clock=clock)
    if cluster:
        ClusterNode(harness.core, harness.storage.cluster, clock, advertise=NodeAddress("127.0.0.1", port, node=name)).start()
    harness.core.start()
    return harness


def match(h: Harness, names: tuple[str, str], *, listed: bool = True, spectators: bool = True, seed: str = "s") -> str:
    """A room created ``listed`` on ``h`` with a match started; its code."""
    a, b = h.connect("10.0.0.1"), h.connect("10.0.0.2")
    code = a.send(type="create_room", name=names[0], client_seed=seed, listed=listed, spectators=spectators)[0]["room"]
    b.send(type="join", room=code, name=names[1], client_seed=seed + "b")
    a.send(type="ready")
    b.send(type="ready")
    assert h.rooms.rooms[code].match is not None
    h.clients = {**getattr(h, "clients", {}), a.pid: a, b.pid: b}  # type: ignore[attr-defined]
    return code


def wait(clock: Clock, seconds: float) -> None:
    """Time passes a second at a time (one ``advance`` runs a late loop once, skipping what it missed)."""
    for _ in range(int(seconds)):
        clock.advance(1)
    clock.advance(seconds - int(seconds))


def ask(h: Harness) -> list[dict[str, Any]]:
    viewer = h.connect("10.0.9.9")
    (reply,) = viewer.send(type="live_rooms", id=1)
    assert reply["type"] == "live_rooms" and reply["id"] == 1
    return reply["rooms"]


@pytest.fixture
def clock() -> Clock:
    clock = Clock()
    clock.advance(START)
    return clock


def test_a_spectator_on_any_node_sees_every_nodes_live_matches(pg_open, clock):
    """The §16 list of node b names a's running match too, newest first, with its turn and
    spectators as a shared them; an unlisted, an unwatchable and a waiting room are named nowhere."""
    ha = node(pg_open, "a", clock, port=47001)
    hb = node(pg_open, "b", clock, port=47002, seed=2)
    on_a = match(ha, ("Ann", "Bob"))
    match(ha, ("Hid", "Den"), listed=False, seed="u")
    match(ha, ("No", "Eyes"), spectators=False, seed="w")
    ha.connect("10.0.1.1").send(type="create_room", name="Wait", client_seed="q", listed=True)
    watcher = ha.connect("10.0.1.2")
    assert watcher.send(type="spectate", room=on_a)[-1]["type"] == "ok"
    clock.advance(1)
    on_b = match(hb, ("Cy", "Dee"), seed="t")
    assert [r["room"] for r in ask(hb)] == [on_b]  # a's not read yet: b shared at its start, before a had any
    wait(clock, SHARE_EVERY - 1)  # both nodes share: a's list is read by b
    expected_a = {"room": on_a, "players": list(ha.rooms.rooms[on_a].match.names), "number": 1, "turn": 0, "spectators": 1}
    on_b_entry = ask(hb)
    assert on_b_entry[0]["room"] == on_b and on_b_entry[1] == expected_a and len(on_b_entry) == 2
    wait(clock, SHARE_EVERY)
    assert [r["room"] for r in ask(ha)] == [on_b, on_a]  # a sees b's the same way


def test_a_spectate_of_a_room_listed_from_another_node_is_moved(pg_open, clock):
    ha = node(pg_open, "a", clock, port=47001)
    hb = node(pg_open, "b", clock, port=47002, seed=2)
    code = match(ha, ("Ann", "Bob"))
    wait(clock, SHARE_EVERY)
    assert [r["room"] for r in ask(hb)] == [code]
    (moved,) = hb.connect("10.0.3.3").send(type="spectate", room=code, id=9)
    assert moved == {"type": "moved", "room": code, "host": "127.0.0.1", "port": 47001, "tls": False, "pin": None,
                     "request": "spectate", "id": 9}


def test_a_flood_of_requests_puts_no_query_on_the_database(pg_open, clock):
    """live_rooms is answered from memory: the share runs on its own clock, not per request."""
    ha = node(pg_open, "a", clock)
    hb = node(pg_open, "b", clock, seed=2)
    code = match(ha, ("Ann", "Bob"))
    wait(clock, SHARE_EVERY)
    live = hb.core.live
    assert live is not None
    shares = live.shares

    def forbidden(entries: list[dict[str, Any]]) -> list[object]:
        raise AssertionError("a request queried the database")

    live.share = forbidden
    for _ in range(300):
        assert [r["room"] for r in ask(hb)] == [code]
    assert live.shares == shares


def test_the_order_and_the_cap_hold_across_nodes(pg_open, clock):
    """At most 20, the most recently started first, whichever node holds them."""
    nodes = [node(pg_open, name, clock, port=47001 + i, seed=i + 1) for i, name in enumerate("abc")]
    started: list[str] = []
    for i in range(9):
        for h in nodes:
            started.append(match(h, (f"P{i}", f"Q{i}"), seed=f"{h.storage.node}{i}"))
            clock.advance(1)
    wait(clock, 2 * SHARE_EVERY)  # every node shared its newest after the others read: twice the period at most
    for h in nodes:
        assert [r["room"] for r in ask(h)] == list(reversed(started))[:LIVE_ROOMS_MAX]


def test_a_node_whose_lease_ran_out_and_a_finished_match_drop_out(pg_dsn, pg_open, clock):
    ha = node(pg_open, "a", clock)
    hb = node(pg_open, "b", clock, cluster=False, seed=2)  # no sweep here: a's rooms stay a's
    first = match(ha, ("Ann", "Bob"))
    second = match(ha, ("Cy", "Dee"), seed="t")
    wait(clock, SHARE_EVERY)
    assert sorted(r["room"] for r in ask(hb)) == sorted([first, second])
    room = ha.rooms.rooms[first]
    player = ha.clients[room.seats[0].peer]
    player.send(type="resign")
    assert room.match.over
    wait(clock, SHARE_EVERY)
    assert [r["room"] for r in ask(hb)] == [second]
    ha.core.stop()  # a stops sharing and renewing; its lease is made to run out
    with psycopg.connect(pg_dsn, autocommit=True) as db:
        db.execute("UPDATE nodes SET lease = now() - interval '1 second' WHERE node = 'a'")
    wait(clock, SHARE_EVERY)
    assert ask(hb) == []


def test_a_failed_share_leaves_this_nodes_own_rooms_listed(pg_open, clock):
    ha = node(pg_open, "a", clock)
    hb = node(pg_open, "b", clock, seed=2)
    on_a, on_b = match(ha, ("Ann", "Bob")), match(hb, ("Cy", "Dee"), seed="t")
    wait(clock, SHARE_EVERY)
    assert len(ask(hb)) == 2
    live = hb.core.live
    real = live.share

    def gone(entries: list[dict[str, Any]]) -> list[object]:
        raise psycopg.OperationalError("the database went away")

    live.share = gone
    wait(clock, SHARE_EVERY)
    assert [r["room"] for r in ask(hb)] == [on_b]
    live.share = real
    wait(clock, SHARE_EVERY)  # the loop went on: back at the next share
    assert sorted(r["room"] for r in ask(hb)) == sorted([on_a, on_b])


def test_one_sqlite_or_memory_server_answers_from_memory_alone():
    h = Harness()
    assert h.core.live is None
    code = match(h, ("Ann", "Bob"))
    assert [r["room"] for r in ask(h)] == [code]


def test_a_shared_entry_is_checked_and_a_held_room_is_described_by_its_holder():
    good = {"room": "ABC234", "players": ["A", "B"], "number": 1, "turn": 4, "spectators": 0, "started": 5.0}
    assert read_entry(good) == (5.0, m.LiveRoom("ABC234", ("A", "B"), 1, 4, 0))
    for bad in ({**good, "started": "5"}, {**good, "started": True}, {**good, "room": "x"}, {**good, "players": ["A"]},
                {**good, "turn": -1}, [good], "x"):
        assert read_entry(bad) is None, bad
    own = [(1.0, m.LiveRoom("ABC234", ("A", "B"), 1, 9, 2))]
    others = [(6.0, m.LiveRoom("ABC234", ("A", "B"), 1, 4, 0)),  # an older owner's last share of it
              (3.0, m.LiveRoom("XYZ789", ("C", "D"), 2, 1, 0)), (3.0, m.LiveRoom("XYZ789", ("C", "D"), 2, 7, 0)),
              (3.0, m.LiveRoom("QRS234", ("E", "F"), 1, 0, 0))]
    listed = merged(own, others, lambda code: code == "ABC234", 20)
    assert [(r.room, r.turn) for r in listed] == [("QRS234", 0), ("XYZ789", 7), ("ABC234", 9)]
