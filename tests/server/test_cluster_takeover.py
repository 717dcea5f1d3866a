"""Races between the ways a room changes hands in a cluster (issue 21, docs/CLUSTER.md "Takeover").

A room of a dead node may be taken by any live node's sweep (``PgNode.claim_expired``) or by a
client naming it (the lazy claim, ``PostgresStorage.load_room``); a node may also lose its lease
or stop cleanly while it restores what it claimed. Whatever the interleaving: no room is served
by two nodes, none is lost, and nothing is logged as critical (each of these is an expected
turn of events in a cluster, not a failure).

Each race is run for real on the throw-away PostgreSQL (tests/support/postgres.py): one side's
transaction is held open at the exact point where the other must meet it (its row lock), the
other side is started on a thread and the test waits until PostgreSQL reports it waiting for that
lock; then the first side commits. Each node is a whole server core on its own ``task.Clock``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed: pip install 'mine-duel[postgres]'")

from support.harness import START, Harness  # noqa: E402 - after the skip: the storage imports psycopg
from twisted.internet.task import Clock  # noqa: E402
from twisted.logger import ILogObserver, LogLevel, globalLogPublisher  # noqa: E402
from zope.interface import provider  # noqa: E402

from mineduel.server.cluster import NodeAddress  # noqa: E402
from mineduel.server.cluster_node import ClusterNode  # noqa: E402

pytestmark = pytest.mark.usefixtures("pg_server")


def expire(dsn: str, name: str) -> None:
    """Node ``name``'s lease runs out now (as if it had stopped renewing 5 s ago)."""
    with psycopg.connect(dsn, autocommit=True) as db:
        db.execute("UPDATE nodes SET lease = now() - interval '1 second' WHERE node = %s", (name,))


def row(dsn: str, sql: str, *params: Any) -> Any:
    with psycopg.connect(dsn, autocommit=True) as db:
        return db.execute(sql, params).fetchone()


def own_clock() -> Clock:
    clock = Clock()
    clock.advance(START)
    return clock


def node(pg_open: Any, name: str, *, clock: Clock | None = None, host: str = "127.0.0.1",
         port: int = 47650) -> tuple[Harness, ClusterNode]:
    """A server core as node ``name`` with its cluster side started (advertising host:port)."""
    harness = Harness(seed=1, storage=pg_open(node=name), clock=clock)
    cluster = ClusterNode(harness.core, harness.storage.cluster, harness.clock,
                          advertise=NodeAddress(host, port, False, None, name))
    cluster.start()
    done = harness.rooms.restore_all()
    harness.core.start()
    while not done.called:
        harness.clock.advance(0)
    return harness, cluster


def _wait_until_blocked_on_a_lock(dsn: str, application: str) -> None:
    """Wait (polling PostgreSQL, bounded) until a backend of ``application`` waits for a row lock:
    the one condition the race needs, rather than a guessed delay."""
    ready = threading.Event()
    with psycopg.connect(dsn, autocommit=True) as db:
        for _ in range(1000):
            if db.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s AND wait_event_type = 'Lock'",
                (application,),
            ).fetchone()[0]:
                return
            ready.wait(0.01)
    raise AssertionError(f"{application} never waited for the lock")


@pytest.fixture
def bad_logs() -> Iterator[list[str]]:
    """Every log event at level error or critical while the test runs (a race must log neither)."""
    found: list[str] = []

    @provider(ILogObserver)
    def observe(event: dict[str, Any]) -> None:
        level = event.get("log_level")
        if level in (LogLevel.error, LogLevel.critical):
            found.append(f"{level.name} {event.get('log_namespace')} {event.get('log_format')} "
                         f"{event.get('log_failure', '')}")

    globalLogPublisher.addObserver(observe)
    yield found
    globalLogPublisher.removeObserver(observe)


class _HoldAfter:
    """A node's connection that, right after a statement containing ``marker`` ran (its locks
    taken, its transaction still open), runs ``meanwhile`` once: the other side of the race."""

    def __init__(self, db: Any, marker: str, meanwhile: Any) -> None:
        self._db, self._marker, self._meanwhile = db, marker, meanwhile

    def execute(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        if self._marker not in sql or self._meanwhile is None:
            return self._db.execute(sql, *args, **kwargs)
        meanwhile, self._meanwhile = self._meanwhile, None
        if self._db.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            result = self._db.execute(sql, *args, **kwargs)
            meanwhile()
            return result
        # A statement in autocommit holds its locks only while it runs: held here just as long
        # as the other side needs to meet them (the same statement, in a transaction of its own).
        with self._db.transaction():
            rows = self._db.execute(sql, *args, **kwargs).fetchall()
            meanwhile()
        return _Rows(rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


class _Rows:
    """The result of a held statement, already fetched."""

    def __init__(self, rows: list[Any]) -> None:
        self._rows = rows

    def fetchall(self) -> list[Any]:
        return self._rows

    def fetchone(self) -> Any:
        return self._rows[0] if self._rows else None


def _hold(monkeypatch: pytest.MonkeyPatch, harness: Harness, marker: str, meanwhile: Any) -> None:
    real = harness.storage._connection
    monkeypatch.setattr(harness.storage, "_connection", lambda: _HoldAfter(real(), marker, meanwhile))


def _on_thread(target: Any, dsn: str, application: str) -> threading.Thread:
    """Start ``target`` on a thread and return once its database connection waits for a row lock."""
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    _wait_until_blocked_on_a_lock(dsn, application)
    return thread


def test_a_lazy_claim_waiting_on_the_sweeps_claim_does_not_take_the_room_from_the_live_claimer(
        pg_dsn, pg_open, monkeypatch, bad_logs):
    """The race last seen as ``critical … takeover restore failed: no room X``: a's lease ran out;
    c's sweep claims a's room (its row locked, the transaction open) while a player resumes on b,
    whose lazy claim reads the row and waits for the lock. When c commits, b must see the room as
    c's — a live node's — and answer ``moved`` naming c, not take it (before the fix it re-read
    the locked row joined with the old owner's lease, saw "no live owner" and bumped the epoch
    again). c then restores the room it claimed and the player plays on there."""
    ha, cluster_a = node(pg_open, "a")
    first, _ = ha.start()
    code, seq = first.room, ha.match(first).seq
    hb, _ = node(pg_open, "b", clock=own_clock(), host="10.1.0.2", port=47002)  # running before a dies
    hc, cluster_c = node(pg_open, "c", clock=own_clock(), host="10.1.0.3", port=47003)
    cluster_a.stop()  # SIGKILL: no more renewals
    expire(pg_dsn, "a")

    again = hb.connect("10.0.5.1")
    replies: list[list[dict[str, Any]]] = []
    threads: list[threading.Thread] = []

    def b_resumes() -> None:  # c's claim holds the room row now, uncommitted
        threads.append(_on_thread(lambda: replies.append(again.send(type="resume", room=code, token=first.token)),
                                  pg_dsn, "mine-duel-server b"))

    _hold(monkeypatch, hc, "WITH claim", b_resumes)
    assert cluster_c.sweep() == 1  # c's claim, with b waiting on it
    monkeypatch.undo()
    threads[0].join(10)
    assert not threads[0].is_alive()

    assert replies == [[{"type": "moved", "room": code, "host": "10.1.0.3", "port": 47003, "tls": False,
                         "pin": None, "request": "resume"}]]
    assert row(pg_dsn, "SELECT owner, epoch FROM rooms WHERE code = %s", code) == ("c", 2)
    assert code not in hb.rooms.rooms and hb.storage.held() == {}
    hc.advance(0)  # c's restore slice
    hc.advance(0)
    assert code in hc.rooms.rooms and row(pg_dsn, "SELECT owner, epoch FROM rooms WHERE code = %s", code) == ("c", 2)
    back = hc.connect("10.0.5.2")
    assert back.send(type="resume", room=code, token=first.token)[0]["type"] == "joined"
    assert back.last("state")["seq"] == seq
    assert bad_logs == []


def test_a_sweep_waiting_on_a_lazy_claim_skips_the_room_and_the_lazy_claimer_serves_it(
        pg_dsn, pg_open, monkeypatch, bad_logs):
    """The other order: b's lazy claim holds the row (taking it over) while c's sweep runs. c skips
    the locked row (``SKIP LOCKED``), never waits, claims nothing; b serves the room."""
    ha, cluster_a = node(pg_open, "a")
    first, _ = ha.start()
    code = first.room
    hb, _ = node(pg_open, "b", clock=own_clock(), host="10.1.0.2", port=47002)
    hc, cluster_c = node(pg_open, "c", clock=own_clock(), host="10.1.0.3", port=47003)
    cluster_a.stop()
    expire(pg_dsn, "a")
    claimed: list[int] = []

    def c_sweeps() -> None:  # b's lazy claim holds the row, epoch bumped, uncommitted
        claimed.append(cluster_c.sweep())

    _hold(monkeypatch, hb, "UPDATE rooms SET owner", c_sweeps)
    again = hb.connect("10.0.5.1")
    assert again.send(type="resume", room=code, token=first.token)[0]["type"] == "joined"
    monkeypatch.undo()
    assert claimed == [0] and not hc.rooms.lobby.pending
    assert row(pg_dsn, "SELECT owner, epoch FROM rooms WHERE code = %s", code) == ("b", 2)
    hc.advance(1.0)  # the next sweep: b is alive, nothing to claim
    hc.advance(0)
    assert code not in hc.rooms.rooms and row(pg_dsn, "SELECT owner, epoch FROM rooms WHERE code = %s", code) == ("b", 2)
    assert bad_logs == []


def test_a_claimed_room_taken_by_another_node_before_its_restore_is_let_go_quietly(pg_dsn, pg_open, bad_logs):
    """c's sweep claims a dead node's room; before c's restore slice runs, c's own lease runs out
    (c paused, or its database slow) and b takes the room for a player. c's slice then finds the
    room no longer its own: it lets it go (not pending, not held, not in memory) and logs no error;
    b serves it, at the epoch of its own takeover."""
    ha, cluster_a = node(pg_open, "a")
    first, _ = ha.start()
    code = first.room
    hb, _ = node(pg_open, "b", clock=own_clock(), host="10.1.0.2", port=47002)
    hc, cluster_c = node(pg_open, "c", clock=own_clock(), host="10.1.0.3", port=47003)
    cluster_a.stop()
    expire(pg_dsn, "a")
    assert cluster_c.sweep() == 1 and code in hc.rooms.lobby.pending  # claimed; its restore is the next turn
    cluster_c.stop()
    expire(pg_dsn, "c")  # c stands still past its lease
    again = hb.connect("10.0.5.1")
    assert again.send(type="resume", room=code, token=first.token)[0]["type"] == "joined"
    assert row(pg_dsn, "SELECT owner, epoch FROM rooms WHERE code = %s", code) == ("b", 3)
    hc.advance(0)  # c runs again: its restore slice
    hc.advance(0)
    assert code not in hc.rooms.rooms and code not in hc.rooms.lobby.pending and code not in hc.storage.held()
    assert row(pg_dsn, "SELECT owner, epoch FROM rooms WHERE code = %s", code) == ("b", 3)
    assert again.send(type="ping")[-1]["type"] == "pong" and not again.closed
    assert bad_logs == []


def test_a_room_claimed_again_while_an_old_copy_is_in_memory_is_rebuilt_never_served_twice(
        pg_dsn, pg_open, monkeypatch):
    """a is paused holding a room; b takes it over and the match goes on there (one more move); b
    dies. a runs again, and its check of what it lost while away fails (the database hiccups), so
    the room is still in a's memory — as it was before the pause — when a's sweep claims it back
    from the dead b. a must drop that old copy and rebuild the room from its rows (with b's move),
    closing the connections seated in the old copy: two copies of one room in one node would let
    the old one's players act on a past position."""
    ha, cluster_a = node(pg_open, "a", host="10.1.0.1", port=47001)
    first, second = ha.start()
    code = first.room
    hb, cluster_b = node(pg_open, "b", clock=own_clock(), host="10.1.0.2", port=47002)
    cluster_a.stop()  # paused
    expire(pg_dsn, "a")
    hb.advance(1.0)
    hb.advance(0)
    assert code in hb.rooms.rooms
    on_b = {c: hb.connect(f"10.0.6.{i}") for i, c in enumerate((first, second), 1)}
    for player, conn in on_b.items():
        assert conn.send(type="resume", room=code, token=player.token)[0]["type"] == "joined"
    mover = next(c for c in on_b.values() if c.last("state")["to_move"] == "me")
    state = mover.last("state")
    move = {"type": "plant"} if state["phase"] == "plant" else {"type": "explore"}
    replies = mover.send(match_id=state["match_id"], seq=state["seq"], cell=[0, 0], **move)
    assert replies[-1]["type"] == "ok", replies
    seq_b = hb.match(first).seq
    cluster_b.stop()  # b dies
    expire(pg_dsn, "b")

    cluster_a.start()
    cluster_a.renewed -= 10  # the pause, as a's own clock saw it

    def lost() -> set[str]:
        raise psycopg.OperationalError("the database hiccups")

    monkeypatch.setattr(cluster_a.rows, "lost", lost)
    ha.advance(1.0)  # the late renewal, the failed check, the sweep claiming the room back
    for _ in range(3):
        ha.advance(0)
    assert row(pg_dsn, "SELECT owner, epoch FROM rooms WHERE code = %s", code) == ("a", 3)
    room = ha.rooms.rooms[code]
    assert room.match is not None and room.match.seq == seq_b  # rebuilt from the rows, b's move in
    assert first.closed and second.closed  # the old copy's connections
    assert all(ha.rooms.rooms.get(r.code) is r for r, _ in ha.rooms.lobby.peer_seat.values())
    back = ha.connect("10.0.6.9")
    assert back.send(type="resume", room=code, token=first.token)[0]["type"] == "joined"
    assert back.last("state")["seq"] == seq_b


def test_a_clean_shutdown_in_the_middle_of_a_sweeps_restore_leaves_the_rooms_to_the_others(pg_dsn, pg_open, bad_logs):
    """c's sweep claims a dead node's rooms and is stopped cleanly (SIGTERM) before its restore
    slices ran: c's lease ends at once, it restores nothing more (no room of it shown anywhere),
    and b's next sweep takes every one of them — nothing left ownerless, nothing logged as an error."""
    ha, cluster_a = node(pg_open, "a")
    codes = {ha.start((f"s{i}", f"t{i}"))[0].room for i in range(3)}
    hb, _ = node(pg_open, "b", clock=own_clock(), host="10.1.0.2", port=47002)
    hc, cluster_c = node(pg_open, "c", clock=own_clock(), host="10.1.0.3", port=47003)
    cluster_a.stop()
    expire(pg_dsn, "a")
    assert cluster_c.sweep() == 3
    hc.core.stop()  # the clean shutdown, its restore slice still to come
    for _ in range(3):
        hc.advance(0)
    assert not set(hc.rooms.rooms) & codes
    hb.advance(1.0)  # b's beat: c's lease ended, its claimed rooms are b's to take
    for _ in range(3):
        hb.advance(0)
    assert codes <= set(hb.rooms.rooms)
    assert {row(pg_dsn, "SELECT owner, epoch FROM rooms WHERE code = %s", code) for code in codes} == {("b", 3)}
    assert bad_logs == []
