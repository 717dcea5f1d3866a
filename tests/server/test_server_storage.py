"""Durability: SQLite storage, restore after a crash, deadlines re-armed with the time left (O5, O6, O12).

The storage contract and the restart tests run on every storage (``backend``: SQLite, memory
and PostgreSQL, issue 21); tests/server/test_storage_pg.py has PostgreSQL's own (ownership).
"""

from __future__ import annotations

import gc
import sqlite3
from types import SimpleNamespace

import pytest
from support.harness import START, Harness
from twisted.internet.task import Clock

from mineduel.server import rooms as rooms_module
from mineduel.server.storage import MemoryStorage, SQLiteStorage, Storage, Write, check_storage


class Backend:
    """One kind of storage the same tests run on (SQLite, memory, PostgreSQL: issue 21).

    :meth:`open` is what a server process opens at start, on the same data each time (a new
    SQLite connection to the file, a new PostgreSQL connection as the same node, the same memory
    object); :meth:`crash` is the process dying: nothing more written, no clean close.
    """

    def __init__(self, kind: str, request: pytest.FixtureRequest, tmp_path) -> None:
        self.kind = kind
        self.path = tmp_path / "s.db"
        self.memory = MemoryStorage()
        self.pg_open = request.getfixturevalue("pg_open") if kind == "postgres" else None

    def open(self) -> Storage:
        if self.kind == "sqlite":
            return SQLiteStorage(self.path)
        if self.kind == "memory":
            return self.memory
        return self.pg_open()

    def crash(self, storage) -> None:
        if self.kind == "sqlite":
            storage.close()  # SQLite keeps nothing open that a crash would leave behind
        elif self.kind == "postgres":
            storage._db.close()  # the connection just drops: the node's lease is not ended

    def duplicate(self) -> type[BaseException]:
        """What a commit repeating a stored action's key raises."""
        if self.kind == "sqlite":
            return sqlite3.IntegrityError
        if self.kind == "memory":
            return ValueError
        import psycopg

        return psycopg.errors.UniqueViolation


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path) -> Backend:
    return Backend(request.param, request, tmp_path)


def _restart(h: Harness, storage, downtime: float, **config) -> Harness:
    """A new server process on the same storage, ``downtime`` seconds later (no clean shutdown)."""
    clock = Clock()
    clock.advance(h.clock.seconds() + downtime)
    new = Harness(seed=99, storage=storage, clock=clock, **config)
    done = new.rooms.restore_all()
    while not done.called:
        clock.advance(0)
    return new


def test_sqlite_storage_round_trips_and_is_atomic(tmp_path):
    """Storage: a failed transaction leaves nothing; a committed one is read back; WAL mode is on."""
    db = SQLiteStorage(tmp_path / "s.db")
    check_storage(db)
    assert db._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.commit(Write(rooms={"ABC234": {"match": None, "x": 1}}, meta={"clock": "5.0"}))
    with pytest.raises(sqlite3.IntegrityError):  # the same action row twice: the whole write is refused
        db.commit(Write(rooms={"ZZZZZZ": {"match": None}}, actions=[("m", 0, {}), ("m", 0, {})]))
    assert db.room_codes() == ["ABC234"]
    assert db.load_room("ABC234") == ({"match": None, "x": 1}, [])
    assert db.meta("clock") == "5.0"
    db.close()


def test_every_storage_commits_all_or_nothing(backend):
    """Storage contract (SQLite, memory, PostgreSQL): a committed write is read back as written;
    a write that fails (a stored action's key again) leaves nothing of itself, rooms, actions
    and meta alike, and the storage goes on working."""
    db = backend.open()
    check_storage(db)
    room = {"match": {"id": "m"}, "owner": "tag-a", "x": [1, "é"]}
    db.commit(Write(rooms={"ABC234": room}, actions=[("m", 0, {"a": 0})], meta={"clock": "5.0"}))
    with pytest.raises(backend.duplicate()):
        db.commit(Write(rooms={"ZZZZZZ": {"match": None}}, actions=[("m", 1, {}), ("m", 0, {})], meta={"clock": "6.0"}))
    assert db.room_codes() == ["ABC234"]
    assert db.load_room("ABC234") == (room, [{"a": 0}])
    assert db.meta("clock") == "5.0" and db.meta("nothing") is None
    db.commit(Write(actions=[("m", 1, {"a": 1})], meta={"clock": "7.0"}))
    assert db.load_room("ABC234") == (room, [{"a": 0}, {"a": 1}])
    assert db.room_owners() == {"ABC234": "tag-a"} and db.load_room("NOROOM") is None
    db.commit(Write(drop_actions=["m"], rooms={"ABC234": {"match": {"id": "n"}}}))
    assert db.load_room("ABC234") == ({"match": {"id": "n"}}, [])
    db.commit(Write(rooms={"ABC234": None}))
    assert db.room_codes() == [] and db.load_room("ABC234") is None
    backend.crash(db)


def test_every_storage_keeps_purges_and_bounds_results(backend):
    """Results (O15): read back by match id, counted, purged by end time, bounded newest first."""
    db = backend.open()
    db.commit(Write(results=[(f"m{i}", "ROOMAA", 100.0 + i, f"record {i}") for i in range(6)]))
    assert db.load_result("m3") == "record 3" and db.load_result("m9") is None
    assert db.result_count() == 6
    db.commit(Write(results=[("m3", "ROOMAA", 103.0, "record 3 again")]))  # stored again: replaced
    assert db.load_result("m3") == "record 3 again" and db.result_count() == 6
    db.commit(Write(purge_results_before=102.0))
    assert db.result_count() == 4 and db.load_result("m1") is None
    db.commit(Write(keep_results=2))
    assert [db.load_result(f"m{i}") is not None for i in range(2, 6)] == [False, False, True, True]
    backend.crash(db)


def test_restart_restores_the_match_exactly_and_rearms_the_time_that_was_left(backend):
    """O5/O6: after a crash and 1000 s downtime the match state is identical and the turn has the seconds it had left."""
    storage = backend.open()
    h = Harness(storage=storage)
    first, second = h.start()
    first.send(type="explore", cell=[0, 0])
    second.send(type="explore", cell=[7, 7])
    first.send(type="plant", cell=[3, 3])
    second.send(type="plant", cell=[4, 4])
    h.advance(8)
    first.send(type="explore", cell=[0, 7])
    h.rooms.tick()  # the once-a-second clock write
    match = h.match(first)
    snapshot = match.state.snapshot()
    left = match.deadline - h.rooms.now()
    assert left == 12.0
    backend.crash(storage)  # the process dies: no shutdown message, no further writes

    storage2 = backend.open()
    h2 = _restart(h, storage2, downtime=1000.0)
    room = h2.rooms.rooms[first.room]
    assert room.match.state.snapshot() == snapshot
    assert room.match.deadline - h2.rooms.now() == left
    assert room.match.transcript == match.transcript and room.match.salts == match.salts
    # Both seats count as dropped at the restart and have a fresh 120 s grace (O12).
    assert all(s.grace == h2.rooms.now() + 120 for s in room.seats)
    a = h2.connect("10.0.0.1")
    b = h2.connect("10.0.0.2")
    a.send(type="resume", room=first.room, token=first.token)
    b.send(type="resume", room=first.room, token=second.token)
    assert a.last("state")["deadline"]["left"] == 12.0
    assert a.last("state")["seq"] == match.seq
    h2.advance(11.9)
    assert room.match.state.to_move == 0
    h2.advance(0.1)
    assert room.match.state.to_move == 1 and room.match.actions[-1]["type"] == "timeout"
    backend.crash(storage2)


def test_restart_keeps_a_running_grace_and_the_fair_stream_position(backend):
    """O12/R2: a seat already away keeps the grace it had left; the next auto-move is the stream's next pick."""
    storage = backend.open()
    h = Harness(storage=storage)
    first, second = h.start()
    h.advance(20)  # auto explore for the first player
    second.drop()
    h.advance(30)  # second's grace: 90 s left
    h.rooms.tick()
    used = h.match(first).stream.consumed
    backend.crash(storage)
    h2 = _restart(h, backend.open(), downtime=500)
    room = h2.rooms.rooms[first.room]
    away = room.seat(room.match.players[1])
    assert away.grace - h2.rooms.now() == 90.0
    assert room.match.stream.consumed == used


def test_clean_shutdown_tells_clients_and_writes_the_clock():
    """Operations: stop() sends server_closing to every connection and stores the server clock."""
    h = Harness()
    first, second = h.start()
    h.advance(3)
    h.core.stop()
    assert first.last("server_closing")["reason"] == "shutdown"
    assert second.closed
    assert float(h.storage.meta("clock")) == h.rooms.now()


def test_restore_runs_in_slices_and_a_pending_room_is_restored_on_demand(monkeypatch):
    """Restore: many rooms come back over several reactor turns; a request for a pending room restores it at once.

    The slicing is checked on an injected work clock (each room restored costs ``cost`` seconds of
    it), not on measured time: a slice stops at its first check past ``restore_slice``, so it does at
    most one room's work beyond it, and its commit is a turn of its own. The measured stall of a real
    restore is benchmarks/bench_server.py --mode restore (target < 20 ms).
    """
    storage = MemoryStorage()
    h = Harness(storage=storage)
    codes = []
    for _ in range(60):
        a, b = h.start()
        a.send(type="explore", cell=[0, 0])
        codes.append(a.room)
        tokens = (a.token, a.room)
    clock = Clock()
    clock.advance(h.clock.seconds() + 5)
    restore_slice, cost = 0.004, 0.0015  # a slice: checks at 0, 1.5 and 3 ms pass, at 4.5 ms it stops
    h2 = Harness(seed=5, storage=storage, clock=clock, restore_slice=restore_slice)
    work = [0.0]
    monkeypatch.setattr(rooms_module, "time", SimpleNamespace(perf_counter=lambda: work[0]))
    restore_room = h2.rooms._restore_room

    def costly_restore(code, **kw):
        work[0] += cost
        restore_room(code, **kw)

    monkeypatch.setattr(h2.rooms, "_restore_room", costly_restore)
    done = h2.rooms.restore_all()
    c = h2.connect()
    c.send(type="resume", room=tokens[1], token=tokens[0])
    assert c.last("state")["seq"] == 1
    assert len(h2.rooms.rooms) == 1  # restored on demand, before any slice ran
    turns = []  # (which call, rooms restored in that reactor turn)
    try:
        while not done.called:  # one reactor turn at a time: run only the call that is due
            call = clock.calls.pop(0)
            before = len(h2.rooms.rooms)
            call.func(*call.args, **call.kw)
            turns.append((call.func.__name__, len(h2.rooms.rooms) - before))
    finally:
        gc.unfreeze()  # give the frozen objects back to later tests' collections
    assert len(h2.rooms.rooms) == 60 and done.result == 59
    # slices and their commits alternate, each in a reactor turn of its own; only slices restore
    restoring = [(name, n) for name, n in turns if name in ("step", "commit_then_step")]
    assert [name for name, _ in restoring] == ["step", "commit_then_step"] * (len(restoring) // 2)
    assert all(n == 0 for name, n in turns if name != "step")
    slices = [n for name, n in turns if name == "step"]
    assert slices == [3] * 19 + [2]  # 59 pending rooms, 3 per slice: no slice does more than its share
    assert max(slices) * cost < restore_slice + cost


def test_server_clock_resumes_where_it_stopped(backend):
    """Server clock: after a restart the clock continues from the last written value, not from wall time."""
    storage = backend.open()
    h = Harness(storage=storage)
    h.advance(10)
    h.rooms.tick()
    h.turn()
    backend.crash(storage)
    clock = Clock()
    clock.advance(START + 10_000)
    h2 = Harness(storage=backend.open(), clock=clock)
    assert h2.rooms.now() == START + 10


def test_restore_pauses_automatic_collection_and_restores_it_at_the_end():
    """Restore: no collector pause during the sliced restore (measured as its longest stall); collection is on again after."""
    storage = MemoryStorage()
    h = Harness(storage=storage)
    for _ in range(5):
        h.start()
    clock = Clock()
    clock.advance(h.clock.seconds() + 5)
    h2 = Harness(seed=6, storage=storage, clock=clock, restore_slice=0.0005)
    assert gc.isenabled()
    done = h2.rooms.restore_all()
    during = []
    while not done.called:
        call = clock.calls.pop(0)
        call.func(*call.args, **call.kw)
        during.append(gc.isenabled())
    gc.unfreeze()  # give the frozen objects back to later tests' collections
    assert len(h2.rooms.rooms) == 5
    assert during[:-1] == [False] * (len(during) - 1) and gc.isenabled()
