"""PostgreSQL storage's own guarantees (issue 21, docs/CLUSTER.md): the schema migrated from an
older version, room ownership fenced by owner and epoch (a conflicting commit rolls back whole),
leases on the database clock, lost connections, and the server dropping a room taken over.

The storage contract shared with SQLite and memory is tests/server/test_server_storage.py
(``backend``); these run on the throw-away server of tests/support/postgres.py.
"""

from __future__ import annotations

import pytest
import pytest_twisted

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed: pip install 'mine-duel[postgres]'")

from support.harness import Harness  # noqa: E402 - after the skip: the storage imports psycopg
from twisted.internet.task import Clock  # noqa: E402

from mineduel.server.cli import parse_args  # noqa: E402
from mineduel.server.cluster import OwnershipLost, is_postgres_dsn  # noqa: E402
from mineduel.server.config import Config  # noqa: E402
from mineduel.server.service import open_storage  # noqa: E402
from mineduel.server.storage import PlayerRow, Write  # noqa: E402
from mineduel.server.storage_pg import MIGRATIONS, SCHEMA_VERSION, PostgresStorage  # noqa: E402

pytestmark = pytest.mark.usefixtures("pg_server")


def expire(dsn: str, node: str) -> None:
    """Node ``node``'s lease runs out now (as if it had stopped renewing 5 s ago)."""
    with psycopg.connect(dsn, autocommit=True) as db:
        db.execute("UPDATE nodes SET lease = now() - interval '1 second' WHERE node = %s", (node,))


def room_row(dsn: str, code: str) -> tuple[str | None, int] | None:
    with psycopg.connect(dsn, autocommit=True) as db:
        row = db.execute("SELECT owner, epoch FROM rooms WHERE code = %s", (code,)).fetchone()
    return None if row is None else (row[0], row[1])


def test_a_schema_1_database_is_migrated(pg_dsn, pg_open):
    """Migration: a database as schema 1 left it (no nodes, no owner/epoch, no players) opens:
    its rooms, actions and results stay, the first node to load a room takes it (epoch 1),
    the player tables work, and the version is the current one; a newer schema is refused."""
    with psycopg.connect(pg_dsn, autocommit=True) as db:
        db.execute("CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL)")
        db.execute(MIGRATIONS[0])
        db.execute("INSERT INTO meta VALUES ('schema', '1'), ('clock', '1234.5')")
        db.execute("""INSERT INTO rooms VALUES ('OLDABC', '{"match":{"id":"m1"},"owner":"t"}')""")
        db.execute("""INSERT INTO actions VALUES ('m1', 0, '{"a":0}')""")
        db.execute("""INSERT INTO results VALUES ('m0', 'OLDABC', 10.0, 'rec')""")
    storage = pg_open(node="n1")
    assert SCHEMA_VERSION == 7 and storage.meta("schema") == "7" and storage.meta("clock") == "1234.5"
    assert storage.room_codes() == ["OLDABC"] and room_row(pg_dsn, "OLDABC") == (None, 0)
    assert storage.load_room("OLDABC") == ({"match": {"id": "m1"}, "owner": "t"}, [{"a": 0}])
    assert room_row(pg_dsn, "OLDABC") == ("n1", 1) and storage.held() == {"OLDABC": 1}
    assert storage.load_result("m0") == "rec" and storage.room_owners() == {"OLDABC": "t"}
    player = PlayerRow("k" * 64, "p" * 16, "Ann")
    storage.commit(Write(players=[player], actions=[("m1", 1, {"a": 1})]))
    assert storage.load_player("k" * 64) == player
    pg_open(node="n2")  # a second node on a current schema: nothing to do, nothing lost
    assert storage.load_room("OLDABC")[1] == [{"a": 0}, {"a": 1}]
    with psycopg.connect(pg_dsn, autocommit=True) as db:
        db.execute("UPDATE meta SET value = %s WHERE key = 'schema'", (str(SCHEMA_VERSION + 1),))
    with pytest.raises(RuntimeError, match="newer than this server"):
        PostgresStorage(pg_dsn, node="n3")


def test_a_room_is_served_by_one_node_until_its_lease_runs_out(pg_dsn, pg_open):
    """Ownership: a live node's room is not listed or loadable by another; once its lease has
    run out (on the database clock) the other takes it over, bumping the epoch."""
    a, b = pg_open(node="a"), pg_open(node="b")
    a.commit(Write(rooms={"ROOMAA": {"match": None}}))
    assert room_row(pg_dsn, "ROOMAA") == ("a", 1)
    assert b.room_codes() == [] and b.load_room("ROOMAA") is None and b.room_owners() == {}
    assert a.room_codes() == ["ROOMAA"]
    expire(pg_dsn, "a")
    assert b.room_codes() == ["ROOMAA"]
    assert b.load_room("ROOMAA") == ({"match": None}, [])
    assert room_row(pg_dsn, "ROOMAA") == ("b", 2) and b.held() == {"ROOMAA": 2}
    assert a.load_room("ROOMAA") is None  # b's lease is live: a gets nothing back, holds nothing
    assert a.held() == {}


def test_a_commit_touching_a_room_taken_over_rolls_back_whole(pg_dsn, pg_open):
    """Fencing: node a was paused while b took its room; a's next commit — that room's blob,
    actions and result, with a new room and meta beside them — stores nothing at all and raises
    OwnershipLost naming the room; an actions-only commit for it is fenced too (by its match)."""
    a, b = pg_open(node="a"), pg_open(node="b")
    a.commit(Write(rooms={"ROOMAA": {"match": {"id": "ma"}}}, actions=[("ma", 0, {"n": 0})], meta={"clock": "1.0"}))
    expire(pg_dsn, "a")
    assert b.load_room("ROOMAA") is not None
    with pytest.raises(OwnershipLost) as lost:  # the one-statement commit (actions and clock only)
        a.commit(Write(actions=[("ma", 1, {"n": 1})], meta={"clock": "1.5"}))
    assert lost.value.rooms == frozenset({"ROOMAA"}) and b.meta("clock") == "1.0"
    taken_over = Write(
        rooms={"ROOMAA": {"match": {"id": "ma"}, "stale": True}, "NEWROO": {"match": None}},
        actions=[("ma", 1, {"n": 1})], results=[("ma", "ROOMAA", 5.0, "rec")], meta={"clock": "2.0"},
    )
    with pytest.raises(OwnershipLost) as lost:
        a.commit(taken_over)
    assert lost.value.rooms == frozenset({"ROOMAA"})
    assert b.load_room("ROOMAA") == ({"match": {"id": "ma"}}, [{"n": 0}])
    assert room_row(pg_dsn, "NEWROO") is None and b.load_result("ma") is None and b.meta("clock") == "1.0"
    assert a.held() == {}
    a.commit(Write(rooms={"OTHERR": {"match": {"id": "mo"}}}))  # a's other work goes on
    with pytest.raises(OwnershipLost):  # ROOMAA's match again, actions only
        a.commit(Write(actions=[("ma", 1, {"n": 1})]))
    with pytest.raises(RuntimeError, match="never loaded"):  # a match this node never saw
        a.commit(Write(actions=[("zz", 0, {})]))
    b.commit(Write(actions=[("ma", 1, {"n": 1})]))  # the owner's commit goes through
    assert b.load_room("ROOMAA")[1] == [{"n": 0}, {"n": 1}]


def test_a_new_room_whose_code_another_node_stored_is_refused(pg_open):
    """Two nodes drawing the same new room code: the second commit is an ownership loss, the first
    node's room intact."""
    a, b = pg_open(node="a"), pg_open(node="b")
    a.commit(Write(rooms={"SAMECO": {"by": "a"}}))
    with pytest.raises(OwnershipLost):
        b.commit(Write(rooms={"SAMECO": {"by": "b"}}))
    assert a.load_room("SAMECO") == ({"by": "a"}, [])
    with pytest.raises(OwnershipLost):  # nor may b delete it
        b.commit(Write(rooms={"SAMECO": None}))


def test_a_restart_under_the_same_name_takes_its_rooms_back_and_fences_the_old_process(pg_dsn, pg_open):
    """A node restarted with the same ``--node`` serves its rooms at once (no lease to wait for);
    if the old process is in fact still alive (paused, not dead), it can no longer commit to them."""
    old = pg_open(node="a")
    old.commit(Write(rooms={"ROOMAA": {"v": 1}}))
    new = pg_open(node="a")
    assert new.room_codes() == ["ROOMAA"] and new.load_room("ROOMAA") == ({"v": 1}, [])
    assert room_row(pg_dsn, "ROOMAA") == ("a", 2)
    with pytest.raises(OwnershipLost):
        old.commit(Write(rooms={"ROOMAA": {"v": "stale"}}))
    new.commit(Write(rooms={"ROOMAA": {"v": 2}}))
    assert new.load_room("ROOMAA") == ({"v": 2}, [])


def test_the_lease_is_now_plus_5_s_on_the_database_clock_and_a_clean_close_ends_it(pg_dsn, pg_open):
    """Leases: every commit renews "now + 5 s" as the database's clock says; close() ends the lease
    at once, so another node may take the rooms without waiting."""
    a, b = pg_open(node="a"), pg_open(node="b")
    a.commit(Write(rooms={"ROOMAA": {}}))
    with psycopg.connect(pg_dsn, autocommit=True) as db:
        db.execute("UPDATE nodes SET lease = now() WHERE node = 'a'")
        a.commit(Write(meta={"clock": "1"}))
        left = db.execute("SELECT extract(epoch FROM lease - now()) FROM nodes WHERE node = 'a'").fetchone()[0]
    assert 4.0 < float(left) <= 5.0
    assert b.load_room("ROOMAA") is None
    a.close()
    assert b.load_room("ROOMAA") == ({}, [])


def test_a_connection_lost_mid_commit_applies_nothing_and_the_next_commit_reconnects(pg_dsn, pg_open, monkeypatch):
    """A lost connection (the backend killed after the rows were written, before COMMIT) is a
    failed commit: nothing of it is stored; reads and the next commit work on a new connection."""
    storage = pg_open(node="a")
    storage.commit(Write(rooms={"ROOMAA": {"match": {"id": "m"}}}, actions=[("m", 0, {})], meta={"clock": "1"}))
    write_rows = storage._write

    def write_then_lose_the_connection(db, write, new_rooms):
        write_rows(db, write, new_rooms)
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (db.info.backend_pid,))

    monkeypatch.setattr(storage, "_write", write_then_lose_the_connection)
    with pytest.raises(psycopg.OperationalError):
        storage.commit(Write(rooms={"ROOMAA": {"match": {"id": "m"}, "v": 2}, "NEWROO": {}},
                             actions=[("m", 1, {})], meta={"clock": "2"}))
    monkeypatch.undo()
    assert storage.meta("clock") == "1.0"  # a read on a new connection (the clock is the node row's float)
    assert storage.load_room("ROOMAA") == ({"match": {"id": "m"}}, [{}]) and storage.load_room("NEWROO") is None
    storage.commit(Write(actions=[("m", 1, {"n": 1})], meta={"clock": "3"}))
    assert storage.load_room("ROOMAA")[1] == [{}, {"n": 1}] and storage.meta("clock") == "3.0"


def test_storage_reconnects_after_the_database_restarts(pg_server, pg_dsn, pg_open):
    """The database server restarting (every connection cut): reads and commits go on after it."""
    storage = pg_open(node="a")
    storage.commit(Write(rooms={"ROOMAA": {"v": 1}}))
    pg_server.restart()
    assert storage.meta("schema") == str(SCHEMA_VERSION)
    storage.commit(Write(rooms={"ROOMAA": {"v": 2}}))
    assert storage.load_room("ROOMAA") == ({"v": 2}, [])


def test_a_server_whose_room_was_taken_over_drops_it_and_shows_nothing_stale(pg_dsn, pg_open):
    """End to end on two server cores: node a's players act after node b took their room over.
    a shows nothing of that action (its commit rolled back), drops the room and closes the
    players, and stays healthy; on b the room is as stored and both players resume there."""
    ha = Harness(storage=pg_open(node="a"))
    first, second = ha.start()
    first.send(type="explore", cell=[0, 0])
    seq = ha.match(first).seq
    code = first.room
    expire(pg_dsn, "a")
    clock = Clock()
    clock.advance(ha.clock.seconds())
    hb = Harness(seed=7, storage=pg_open(node="b"), clock=clock)
    done = hb.rooms.restore_all()
    while not done.called:
        clock.advance(0)
    assert code in hb.rooms.rooms and room_row(pg_dsn, code) == ("b", 2)

    first.new()
    second.new()
    replies = second.send(type="explore", cell=[7, 7])
    # The request's "nothing changed" and the room's "reconnect and resume", as after any failed commit.
    assert [(m["type"], m["code"]) for m in replies] == [("error", "internal_error")] * 2
    assert [m["type"] for m in first.new()] == ["error"]  # told to resume; nothing of the move
    assert first.closed and second.closed and code not in ha.rooms.rooms
    assert ha.core.commits.healthy  # an ownership loss is not a sick database
    other = ha.connect("10.0.0.9")
    assert other.send(type="create_room", name="Cy", client_seed="c")[0]["type"] == "room_created"

    for player in (first, second):
        again = hb.connect(f"10.0.1.{player.pid}")
        again.send(type="resume", room=code, token=player.token)
        assert again.last("state")["seq"] == seq
    assert hb.match(first).seq == seq


def test_the_server_opens_postgresql_for_a_postgresql_db(pg_dsn):
    """``--db postgresql://…`` (and ``--node``) opens PostgresStorage; anything else stays SQLite."""
    config, _ = parse_args(["--db", pg_dsn, "--node", "east-1"])
    assert config.db == pg_dsn and config.node == "east-1"
    assert is_postgres_dsn(pg_dsn) and is_postgres_dsn("postgres://x/y") and not is_postgres_dsn("/var/db.sqlite3")
    storage = open_storage(config)
    try:
        assert isinstance(storage, PostgresStorage) and storage.node == "east-1"
        assert "password" not in storage.path
    finally:
        storage.close()
    secret = PostgresStorage(pg_dsn.replace("mineduel@", "mineduel:hunter2@"), node="n")
    try:
        assert "hunter2" not in secret.path
    finally:
        secret.close()
    assert open_storage(Config(db=":memory:")).__class__.__name__ == "SQLiteStorage"


@pytest_twisted.ensureDeferred
async def test_a_real_server_on_postgresql_stores_and_restores_a_room(pg_dsn):
    """The whole server on ``--db postgresql://…`` (real sockets): a room created over TCP is in
    the database before the reply; a clean stop ends the node's lease; a new process with the same
    ``--node`` restores the room."""
    from twisted.internet import reactor

    from mineduel.server.client import connect
    from mineduel.server.service import start_server

    config = Config(host="127.0.0.1", port=0, udp_port=None, db=pg_dsn, node="game-1")
    handle = start_server(reactor, config)
    try:
        await handle.restored
        client = await connect(reactor, "127.0.0.1", handle.port)
        await client.hello()
        created = await client.request("create_room", name="Ann", client_seed="s")
        code = created["room"]
        assert room_row(pg_dsn, code) == ("game-1", 1)  # stored before the reply came
        client.transport.loseConnection()
    finally:
        await handle.stop()
    with psycopg.connect(pg_dsn, autocommit=True) as db:
        assert db.execute("SELECT lease <= now() FROM nodes WHERE node = 'game-1'").fetchone()[0]
    again = start_server(reactor, config)
    try:
        await again.restored
        assert code in again.core.rooms.rooms and room_row(pg_dsn, code) == ("game-1", 2)
    finally:
        await again.stop()


def test_a_room_of_a_dead_node_is_taken_over_when_a_client_names_it(pg_dsn, pg_open):
    """Takeover on demand: node b was already running when node a died mid-match. While a's lease
    lasts, b answers room_not_found; once it ran out, a player resuming on b makes b take
    the room over (epoch 2) and both play on from the stored state."""
    ha = Harness(storage=pg_open(node="a"))
    hb = Harness(seed=7, storage=pg_open(node="b"), clock=ha.clock)
    done = hb.rooms.restore_all()
    while not done.called:
        ha.clock.advance(0)
    first, second = ha.start()
    first.send(type="explore", cell=[0, 0])
    seq, code = ha.match(first).seq, first.room
    ha.storage._db.close()  # node a dies: nothing more written, its lease left to run out

    early = hb.connect("10.0.1.1")
    assert early.send(type="resume", room=code, token=first.token)[-1]["code"] == "room_not_found"
    assert room_row(pg_dsn, code) == ("a", 1)
    expire(pg_dsn, "a")
    a_again, b_again = hb.connect("10.0.1.2"), hb.connect("10.0.1.3")
    a_again.send(type="resume", room=code, token=first.token)
    assert a_again.last("state")["seq"] == seq and room_row(pg_dsn, code) == ("b", 2)
    b_again.send(type="resume", room=code, token=second.token)
    assert b_again.send(type="explore", cell=[7, 7])[-1]["type"] == "ok"
    assert hb.match(first).seq == seq + 1
    assert hb.storage.load_room(code)[1][-1]["type"] == "explore"  # stored by b, under its epoch


def test_the_database_going_away_mid_match_loses_nothing_and_the_room_comes_back(pg_dsn, pg_open, monkeypatch):
    """The database unreachable (connection lost, reconnecting refused) when a player moves: the
    move is refused ("nothing changed"), both players are told and closed (nothing unstored was
    shown), the server keeps running; once the database is back, both resume and the match goes
    on from the stored state."""
    storage = pg_open(node="a")
    h = Harness(storage=storage)
    first, second = h.start()
    first.send(type="explore", cell=[0, 0])
    seq, code = h.match(first).seq, first.room

    def refused(*args, **kwargs):
        raise psycopg.OperationalError("connection refused (test)")

    monkeypatch.setattr(psycopg, "connect", refused)
    storage._db.close()  # the connection is lost; every reconnection is refused
    first.new()
    replies = second.send(type="explore", cell=[7, 7])
    assert [(m["type"], m["code"]) for m in replies] == [("error", "internal_error")] * 2
    assert first.closed and second.closed and [m["type"] for m in first.new()] == ["error"]
    monkeypatch.undo()  # the database is back
    h.advance(1.0)
    h.rooms.tick()  # the server's once-a-second clock commit: the probe that finds it back
    h.turn()
    assert h.core.commits.healthy and code not in h.rooms.rooms  # not reloaded: it could not be read

    a_again, b_again = h.connect("10.0.1.2"), h.connect("10.0.1.3")
    a_again.send(type="resume", room=code, token=first.token)
    assert a_again.last("state")["seq"] == seq
    b_again.send(type="resume", room=code, token=second.token)
    assert b_again.send(type="explore", cell=[7, 7])[-1]["type"] == "ok"
    assert h.match(first).seq == seq + 1


def _wait_until_blocked_on_a_lock(dsn: str, application: str) -> None:
    """Poll (bounded) until a backend of ``application`` waits for a row lock."""
    import time

    with psycopg.connect(dsn, autocommit=True) as db:
        for _ in range(500):
            if db.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s AND wait_event_type = 'Lock'",
                (application,),
            ).fetchone()[0]:
                return
            time.sleep(0.01)
    raise AssertionError(f"{application} never waited for the lock")


def test_a_commit_and_a_takeover_at_the_same_moment_serialise_on_the_room_row(pg_dsn, pg_open, monkeypatch):
    """The race the fence exists for, run for real on two connections: a takeover that starts
    while the old owner's commit holds the room waits for it and rebuilds the room WITH that
    commit; an old owner's commit that starts while a takeover holds the room waits for it and
    stores nothing (OwnershipLost)."""
    import threading

    # a's leases last no time at all: its commit (which renews, as every commit does) leaves it expired
    # for b, which reads the lease only once it holds the row (tests/server/test_cluster_takeover.py).
    a, b = pg_open(node="a", lease_seconds=0), pg_open(node="b")
    a.commit(Write(rooms={"ROOMAA": {"match": {"id": "m"}}}, actions=[("m", 0, {"n": 0})]))
    expire(pg_dsn, "a")

    # 1. a's commit first (it has locked the room); b's takeover starts meanwhile and must wait.
    write_rows = a._write
    taken: list[object] = []

    def write_then_let_b_try(db, write, new_rooms):
        write_rows(db, write, new_rooms)
        thread = threading.Thread(target=lambda: taken.append(b.load_room("ROOMAA")))
        thread.start()
        _wait_until_blocked_on_a_lock(pg_dsn, "mine-duel-server b")
        a_thread.append(thread)

    a_thread: list[threading.Thread] = []
    monkeypatch.setattr(a, "_write", write_then_let_b_try)
    a.commit(Write(rooms={"NEWROO": {}}, actions=[("m", 1, {"n": 1})]))  # a new room: the transaction path
    a_thread[0].join(10)
    assert taken == [({"match": {"id": "m"}}, [{"n": 0}, {"n": 1}])]  # rebuilt with a's commit
    assert room_row(pg_dsn, "ROOMAA") == ("b", 2)
    monkeypatch.undo()

    # 2. b's takeover first (a again, lease expired, takes it back and holds the row); b's one-statement
    # commit starts meanwhile and must wait, then find the new epoch.
    expire(pg_dsn, "b")
    renew = a._renew
    outcome: list[BaseException | None] = []

    def b_commit() -> None:
        try:
            b.commit(Write(actions=[("m", 2, {"n": "stale"})], meta={"clock": "9"}))
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - the test reads it
            outcome.append(exc)

    def renew_while_b_tries(db, clock=None):
        renew(db, clock)
        thread = threading.Thread(target=b_commit)
        thread.start()
        _wait_until_blocked_on_a_lock(pg_dsn, "mine-duel-server b")
        b_thread.append(thread)

    b_thread: list[threading.Thread] = []
    monkeypatch.setattr(a, "_renew", renew_while_b_tries)
    assert a.load_room("ROOMAA") is not None  # the claim's transaction renews inside, holding the row
    monkeypatch.undo()
    b_thread[0].join(10)
    assert isinstance(outcome[0], OwnershipLost) and room_row(pg_dsn, "ROOMAA") == ("a", 3)
    assert a.load_room("ROOMAA")[1] == [{"n": 0}, {"n": 1}] and a.meta("clock") != "9"


# ----- the commit's cost (docs/PERFORMANCE.md "Cluster: the commit's cost") ------------------------------
def test_the_server_clock_is_each_nodes_own_row_and_reads_back_as_the_latest(pg_dsn, pg_open):
    """No commit writes a ``meta`` row every node shares (each commit would wait for the others'
    on its lock): a commit's clock goes into its node's row with the lease; ``meta('clock')`` is the
    latest node's, or the ``meta`` row a database written before this change still has."""
    a, b = pg_open(node="a"), pg_open(node="b")
    a.commit(Write(rooms={"ROOMAA": {"match": {"id": "ma"}}}, meta={"clock": "10.5", "other": "x"}))
    b.commit(Write(meta={"clock": "12.25"}))
    a.commit(Write(actions=[("ma", 0, {})], meta={"clock": "11.0"}))  # the one-statement commit
    with psycopg.connect(pg_dsn, autocommit=True) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'clock'").fetchone() is None
        assert dict(db.execute("SELECT node, clock FROM nodes").fetchall()) == {"a": 11.0, "b": 12.25}
    assert a.meta("clock") == b.meta("clock") == "12.25" and a.meta("other") == "x"
    with psycopg.connect(pg_dsn, autocommit=True) as db:  # as an older server left it
        db.execute("INSERT INTO meta VALUES ('clock', '99.5')")
    assert a.meta("clock") == "99.5"
    a.commit(Write(meta={"clock": "100.0"}))
    assert a.meta("clock") == "100.0"


def test_two_nodes_commits_do_not_wait_for_each_other(pg_dsn, pg_open, monkeypatch):
    """While node a's commit is held open (its rows written, its COMMIT not yet sent), node b's
    commits of its own rooms, the clock included, land: nothing both write (``meta.clock`` did)."""
    import threading

    a, b = pg_open(node="a"), pg_open(node="b")
    a.commit(Write(rooms={"ROOMAA": {"match": {"id": "ma"}}}))
    b.commit(Write(rooms={"ROOMBB": {"match": {"id": "mb"}}}))
    write_rows, held, done = a._write, threading.Event(), threading.Event()

    def write_then_hold(db, write, new_rooms):
        write_rows(db, write, new_rooms)
        held.set()
        assert done.wait(10)

    monkeypatch.setattr(a, "_write", write_then_hold)
    thread = threading.Thread(target=lambda: a.commit(Write(
        rooms={"NEWAAA": {}}, actions=[("ma", 0, {"n": 0})], meta={"clock": "5.0"})))
    thread.start()
    try:
        assert held.wait(10)
        b._connection().execute("SET lock_timeout = '3s'")  # waiting on a's lock fails the test, never hangs it
        b.commit(Write(actions=[("mb", 0, {"n": 0})], meta={"clock": "6.0"}))  # one statement
        b.commit(Write(rooms={"NEWBBB": {}}, actions=[("mb", 1, {"n": 1})], meta={"clock": "6.5"}))  # a transaction
        assert b.load_room("ROOMBB")[1] == [{"n": 0}, {"n": 1}]
    finally:
        done.set()
        thread.join(10)
    assert a.load_room("ROOMAA")[1] == [{"n": 0}] and room_row(pg_dsn, "NEWAAA") == ("a", 1)


@pytest.mark.parametrize("rooms", [1, 4, 5, 12], ids=lambda n: f"{n}-rooms")
def test_a_commit_of_any_shape_stores_every_row_and_fences_every_room(pg_dsn, pg_open, rooms):
    """The one-statement commit sends short arrays as scalars and long ones as one binary array:
    either way every room blob and action (quotes, backslashes and non-ASCII in the JSON) is
    stored exactly, and one room taken over among them refuses the whole commit."""
    a, b = pg_open(node="a"), pg_open(node="b")
    codes = [f"ROOM{i:02d}" for i in range(rooms)]
    a.commit(Write(rooms={c: {"match": {"id": f"m{c}"}} for c in codes}))
    tricky = {"q": 'a "quoted" \\ back\\slash', "u": "한국어 日本語", "n": [1, 2.5, None]}
    actions = [(f"m{c}", seq, {**tricky, "seq": seq}) for c in codes for seq in range(2)]
    a.commit(Write(rooms={c: {"match": {"id": f"m{c}"}, "v": 2, **tricky} for c in codes[::2]}, actions=actions,
                   meta={"clock": "3.0"}))
    for i, code in enumerate(codes):
        blob, stored = a.load_room(code)
        assert blob == ({"match": {"id": f"m{code}"}, "v": 2, **tricky} if i % 2 == 0 else {"match": {"id": f"m{code}"}})
        assert stored == [{**tricky, "seq": 0}, {**tricky, "seq": 1}]
    expire(pg_dsn, "a")
    assert b.load_room(codes[-1]) is not None
    with pytest.raises(OwnershipLost) as lost:
        a.commit(Write(actions=[(f"m{c}", 2, {"n": 2}) for c in codes], meta={"clock": "4.0"}))
    assert lost.value.rooms == frozenset({codes[-1]})
    with psycopg.connect(pg_dsn, autocommit=True) as db:
        assert db.execute("SELECT count(*) FROM actions WHERE seq = 2").fetchone()[0] == 0


def test_a_sweep_that_finds_no_expired_lease_writes_nothing(pg_dsn, pg_open):
    """The sweep's claim (once a second per node) renews nothing itself (its beat just did): with no
    lease run out it leaves the node's row as it was; with one run out it claims that node's rooms."""
    a, b = pg_open(node="a"), pg_open(node="b")
    a.commit(Write(rooms={"ROOMAA": {"match": None}, "ROOMAB": {"match": None}}))

    def version(node: str) -> tuple[str, object]:
        with psycopg.connect(pg_dsn, autocommit=True) as db:
            return db.execute("SELECT xmin::text, lease FROM nodes WHERE node = %s", (node,)).fetchone()

    before = version("b")
    assert b.cluster.claim_expired(64) == [] and version("b") == before
    expire(pg_dsn, "a")
    assert b.cluster.claim_expired(1) == ["ROOMAA"] and b.cluster.claim_expired(64) == ["ROOMAB"]
    assert room_row(pg_dsn, "ROOMAA") == ("b", 2) and b.held() == {"ROOMAA": 2, "ROOMAB": 2}
    assert version("b") == before


def test_a_schema_6_database_gets_the_fence_by_key(pg_dsn, pg_open):
    """Migration 7 replaces step 4's fence in a database a schema 6 server left (rooms in it): the
    function now reads each room by its key, and still refuses a commit to a room taken over."""
    with psycopg.connect(pg_dsn, autocommit=True) as db:
        db.execute("CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL)")
        for step in MIGRATIONS[:6]:
            db.execute(step)
        db.execute("INSERT INTO meta VALUES ('schema', '6')")
        db.execute("""INSERT INTO rooms (code, data) VALUES ('OLDABC', '{"match":{"id":"m1"}}')""")
    a, b = pg_open(node="a"), pg_open(node="b")
    with psycopg.connect(pg_dsn, autocommit=True) as db:
        source = db.execute("SELECT prosrc FROM pg_proc WHERE proname = 'mineduel_fence'").fetchone()[0]
    assert a.meta("schema") == "7" and "WHERE r.code = c FOR UPDATE" in source and "string_agg" not in source
    assert a.load_room("OLDABC") == ({"match": {"id": "m1"}}, [])
    a.commit(Write(actions=[("m1", 0, {"n": 0})], meta={"clock": "1.0"}))
    expire(pg_dsn, "a")
    assert b.load_room("OLDABC") is not None
    with pytest.raises(OwnershipLost) as lost:
        a.commit(Write(actions=[("m1", 1, {"n": 1})], meta={"clock": "2.0"}))
    assert lost.value.rooms == frozenset({"OLDABC"}) and b.load_room("OLDABC")[1] == [{"n": 0}]


def test_the_commit_is_prepared_once_and_the_players_range_reads_are_not(pg_open):
    """The connection plans prepared statements once (generic plans): the commit, run again and
    again, is prepared; the leaderboard, rank and recent results (a range and a LIMIT, whose best
    plan depends on the values) are never prepared, so each is planned for its values."""
    storage = pg_open(node="a")
    storage.commit(Write(rooms={"ROOMAA": {"match": {"id": "m"}}}))
    storage.commit(Write(players=[PlayerRow("k" * 64, "p" * 16, "Ann")]))
    for seq in range(8):
        storage.commit(Write(actions=[("m", seq, {"n": seq})], meta={"clock": f"{seq}.0"}))
        storage.leaderboard(10, 350.0)
        storage.rank_of("p" * 16, 350.0)
        storage.recent_results("p" * 16, 10)
    db = storage._connection()
    assert db.execute("SHOW plan_cache_mode").fetchone()[0] == "force_generic_plan"
    prepared = [row[0] for row in db.execute("SELECT statement FROM pg_prepared_statements").fetchall()]
    assert any("mineduel_fence" in sql for sql in prepared)
    assert any("FROM players WHERE player =" in sql for sql in prepared)  # a lookup by key: prepared
    assert not any("ORDER BY rating" in sql or "count(*) FROM players" in sql or "FROM rated_results" in sql
                   for sql in prepared)
