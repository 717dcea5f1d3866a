"""Group commit, held messages, room timers, heartbeats and the GC policy (server/commits.py,
server/rooms.py, server/session.py, server/gcpolicy.py) — the server's throughput machinery.

Durability contract (issue 5, "an accepted action is on disk before it is acknowledged"): what a
reactor turn accepts is committed in one transaction at the end of the turn, and nothing the
turn produced reaches anyone before that commit.
"""

from __future__ import annotations

import gc
import json

import pytest
import pytest_twisted
from support.harness import Harness, RecordingOutbox, oracle_message
from twisted.internet import defer, task
from twisted.internet import protocol as tprotocol

from mineduel.server.commits import CommitQueue
from mineduel.server.config import Config
from mineduel.server.gcpolicy import YOUNG_THRESHOLD, FreezeAfterFullCollections
from mineduel.server.net import LineProtocol
from mineduel.server.service import start_server
from mineduel.server.session import PING_SLICES
from mineduel.server.storage import MemoryStorage, Write
from mineduel.shared.wire.messages import Ok, Pong


def line(**msg) -> bytes:
    return json.dumps(msg).encode()


def types(client) -> list[str]:
    return [m["type"] for m in client.new()]


def test_one_commit_for_every_action_of_a_reactor_turn():
    """Group commit: two matches' actions read in one turn share one transaction, and each is stored."""
    h = Harness()
    a1, b1 = h.start()
    a2, b2 = h.start()
    before = h.storage.commits
    h.core.line_received(a1.pid, line(type="explore", cell=[0, 0]))
    h.core.line_received(a2.pid, line(type="explore", cell=[7, 7]))
    h.turn()
    assert h.storage.commits == before + 1
    for client in (a1, a2):
        match = h.match(client)
        assert sorted(h.storage.actions[match.id]) == [0]
        assert client.last("ok")["seq"] == 1


def test_nothing_is_shown_before_the_turn_is_committed():
    """O7 + durability: the ok and both seats' states wait for the commit; then they arrive in order."""
    h = Harness()
    first, second = h.start()
    first.new(), second.new()
    h.core.line_received(first.pid, line(type="explore", cell=[0, 0], id="x"))
    assert first.new() == [] and second.new() == []
    assert h.match(first).id not in h.storage.actions
    h.turn()
    assert types(first) == ["state", "ok"]
    assert types(second) == ["state"]
    assert 0 in h.storage.actions[h.match(first).id]


def test_replies_that_change_nothing_are_not_held():
    """A ping (or a refusal) in a turn with nothing staged goes out at once: no commit to wait for."""
    h = Harness()
    first, second = h.start()
    first.new()
    h.core.line_received(first.pid, line(type="ping", id=1))
    h.core.line_received(second.pid, line(type="explore", cell=[0, 0]))  # not second's turn
    assert types(first) == ["pong"]
    assert second.new()[-1]["code"] == "not_your_turn"


def test_a_room_changed_twice_in_a_turn_is_written_once_as_it_is_at_the_commit():
    """Rooms are serialised at the commit: the stored blob is the latest state, written once."""
    h = Harness()
    first, second = h.start()
    h.core.connection_lost(second.pid)  # O12: second's seat is away (the room changes)
    h.core.line_received(first.pid, line(type="resign"))  # the match ends (it changes again)
    batch = h.core.commits.batch
    assert list(batch.rooms) == [first.room]
    h.turn()
    stored = json.loads(h.storage.rooms[first.room])
    assert stored == json.loads(json.dumps(h.rooms.rooms[first.room].to_blob()))
    assert stored["match"]["ended"] is not None


def test_an_action_stores_its_row_not_the_room_and_a_restart_gets_the_same_match():
    """Durability without rewriting the room: the action rows carry each plant's salt and the
    match's clock state (deadline, fair-stream position), and a restore rebuilds it exactly."""
    h = Harness()
    first, second = h.start()
    blob_before = h.storage.rooms[first.room]
    first.send(type="explore", cell=[0, 0])
    second.send(type="explore", cell=[7, 7])
    first.send(type="plant", cell=[3, 3])
    h.advance(20)  # O4: second's opening plant times out: an auto-move from the fair stream
    assert h.storage.rooms[first.room] == blob_before  # the room was not rewritten
    live = h.match(first)
    again = Harness(storage=h.storage, clock=h.clock)
    again.rooms.restore_all()
    again.advance(0)
    back = again.rooms.rooms[first.room].match
    assert back.actions == live.actions and back.salts == live.salts
    assert back.transcript == live.transcript and back.commitments == live.commitments
    assert (back.deadline, back.stream.consumed, back.ended) == (live.deadline, live.stream.consumed, live.ended)
    rows = [json.loads(r) for _, r in sorted(h.storage.actions[live.id].items())]
    assert "salt" in rows[2] and rows[2]["type"] == "plant"
    assert all("salt" not in r for r in rows if r["type"] != "plant")


def test_actions_of_a_match_dropped_in_the_same_turn_are_not_written():
    """A match whose room is deleted in the turn of its last actions leaves no orphan rows."""
    storage = MemoryStorage()
    queue = CommitQueue(storage=storage, clock=task.Clock(), outbox=RecordingOutbox())
    queue.stage_actions("m1", 0, [{"type": "resign", "seat": 0, "at": 1.0}])
    queue.stage_drop("m1")
    assert queue.flush()
    assert "m1" not in storage.actions


def test_a_failed_commit_hands_the_batch_over_and_sends_nothing():
    """commits.py: a failing storage commit delivers none of the batch's messages by itself."""
    storage = MemoryStorage()
    out = RecordingOutbox()
    failed = []
    queue = CommitQueue(storage=storage, clock=task.Clock(), outbox=out, on_failure=failed.append)
    queue.stage_meta("k", "v")
    queue.send(1, Ok("ready"))
    storage.fail_next = True
    assert queue.flush() is False
    assert not out.lines and len(failed) == 1 and failed[0].held[0].message == Ok("ready")
    assert storage.meta("k") is None
    queue.send(1, Pong(1.0))  # the next batch starts empty: direct
    assert len(out.lines[1]) == 1


def test_the_server_clock_is_written_with_every_commit():
    """The clock (meta) rides on every batch, so a restart resumes deadlines from the last commit."""
    h = Harness()
    first, second = h.start()
    h.advance(3)
    first.send(type="explore", cell=[0, 0])
    assert float(h.storage.meta("clock")) == h.rooms.now()


def test_a_failed_storage_write_of_a_deadline_is_retried_a_second_later():
    """O4 + durability: a timeout whose commit fails is undone and retried after 1 s, not every turn."""
    h = Harness()
    first, second = h.start()
    h.storage.fail_next = True
    h.advance(20)
    assert h.core.commits.failures == 1 and h.match(first).seq == 0
    h.advance(0.99)
    assert h.match(first).seq == 0
    h.advance(0.01)
    assert h.match(first).seq == 2 and h.core.commits.failures == 1


def test_arm_moves_the_room_timer_instead_of_replacing_it():
    """O4/O5: after an action the room keeps one timer, moved to the new deadline (no cancel churn)."""
    h = Harness()
    first, second = h.start()
    room = h.rooms.rooms[first.room]
    call = room.call
    h.advance(5)
    first.send(type="explore", cell=[0, 0])
    assert room.call is call and call.active()
    assert call.getTime() == h.clock.seconds() + 20
    pending = [c for c in h.clock.getDelayedCalls() if c.active() and c.func == h.rooms._on_timer]
    assert pending == [call]


def test_o5_a_moved_timer_still_fires_exactly_once_at_the_new_deadline():
    """O5: advance(19.9) after the last action changes nothing; advance(0.1) times out exactly once."""
    h = Harness()
    first, second = h.start()
    h.advance(7)
    first.send(type="explore", cell=[0, 0])  # O4: second's opening step, 20 s from now
    match = h.match(first)
    h.advance(19.9)
    assert match.seq == 1
    h.advance(0.1)
    assert match.seq == 3 and [a["type"] for a in match.actions[1:]] == ["timeout", "explore"]


def test_heartbeats_are_spread_over_the_ping_interval():
    """O12 presence: every connection gets one ping per interval, a 1/PING_SLICES share per tick."""
    h = Harness(ping_interval=5.0)
    h.core.start()
    clients = [h.connect(f"10.0.{i // 200}.{i % 200}") for i in range(200)]
    h.advance(5.0 / PING_SLICES + 1e-6)  # float slack: the fake clock stands at 1.7e9 s
    pinged = [c for c in clients if any(m["type"] == "ping" for m in c.new())]
    assert 0 < len(pinged) <= 200 // PING_SLICES + 1
    h.advance(5.0 - 5.0 / PING_SLICES)
    counts = [sum(m["type"] == "ping" for m in c.messages) for c in clients]
    assert counts == [1] * 200
    h.advance(5.0)
    assert [sum(m["type"] == "ping" for m in c.messages) for c in clients] == [2] * 200


def test_gc_policy_freezes_after_full_collections_and_can_be_removed():
    """gcpolicy: the heap is frozen at install and again one turn after each full collection."""
    clock = task.Clock()
    policy = FreezeAfterFullCollections(clock)
    before = gc.get_threshold()
    uninstall = policy.install()
    try:
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD
        frozen = gc.get_freeze_count()
        assert frozen > 0
        garbage = [object()]
        garbage.append(garbage)  # a cycle made after the freeze: collectable
        del garbage
        gc.collect()
        assert policy.collections == 1 and policy.collected >= 1
        clock.advance(0)
        assert gc.get_freeze_count() >= frozen
    finally:
        uninstall()
        gc.unfreeze()
    assert policy._callback not in gc.callbacks and gc.get_threshold() == before


@pytest_twisted.ensureDeferred
async def test_closed_connections_leave_no_reference_cycles(tmp_path):
    """gcpolicy's premise: a closed server connection is freed by reference counting alone, so
    freezing long-lived objects never keeps a dead connection alive."""
    from twisted.internet import reactor

    handle = start_server(reactor, Config(host="127.0.0.1", port=0, udp_port=None, db=str(tmp_path / "s.db")))
    await handle.restored
    closed: list[defer.Deferred[None]] = []

    class Quick(tprotocol.Protocol):
        def connectionMade(self) -> None:
            self.done: defer.Deferred[None] = defer.Deferred()
            closed.append(self.done)
            self.transport.write(b'{"type":"hello","protocol":1}\n')

        def dataReceived(self, data: bytes) -> None:
            self.transport.loseConnection()

        def connectionLost(self, reason: object = None) -> None:
            self.done.callback(None)

    gc.collect()
    gc.disable()
    try:
        for _ in range(20):
            await tprotocol.ClientCreator(reactor, Quick).connectTCP("127.0.0.1", handle.port)
        await defer.gatherResults(closed)
        await task.deferLater(reactor, 0.05, lambda: None)  # the server side's close
        alive = [o for o in gc.get_objects() if isinstance(o, LineProtocol)]
        assert alive == [] and handle.core.conns == {}
    finally:
        gc.enable()
        await handle.stop()


def test_memory_storage_commit_is_all_or_nothing():
    """The test storage keeps the contract the queue relies on: a refused write changes nothing."""
    storage = MemoryStorage()
    storage.commit(Write(actions=[("m", 0, {"a": 1})]))
    with pytest.raises(ValueError, match="duplicate"):
        storage.commit(Write(rooms={"R": {"x": 1}}, actions=[("m", 0, {"a": 2})]))
    assert "R" not in storage.rooms and json.loads(storage.actions["m"][0]) == {"a": 1}


class StepWriter:
    """A writer whose commits land when the test says so (the threaded pipeline, deterministic)."""

    def __init__(self, storage: MemoryStorage) -> None:
        self.storage = storage
        self.waiting: list[tuple[Write, object]] = []

    def submit(self, write, done) -> None:
        self.waiting.append((write, done))

    def land(self, error: BaseException | None = None) -> None:
        write, done = self.waiting.pop(0)
        if error is None:
            self.storage.commit(write)
        done(error)

    def commit_now(self, write):
        self.storage.commit(write)

    def wait(self):
        if self.waiting:
            write, _ = self.waiting.pop(0)
            self.storage.commit(write)

    def close(self) -> None:
        pass


def threaded_harness() -> tuple[Harness, StepWriter]:
    storage = MemoryStorage()
    writer = StepWriter(storage)
    h = Harness(storage=storage, writer=writer)
    return h, writer


def play(h: Harness, writer: StepWriter, client, **msg) -> list[dict]:
    """One request in its own turn; the commit lands at once (set-up steps)."""
    client.new()
    h.core.line_received(client.pid, line(**msg))
    h.turn()
    while writer.waiting:
        writer.land()
    return client.new()


def threaded_start(h: Harness, writer: StepWriter):
    """Two clients with a match started, every set-up commit landed; (first player, second)."""
    a = h.connect()
    b = h.connect("10.0.0.2")
    created = play(h, writer, a, type="create_room", client_seed="a")
    code, a.token = created[0]["room"], created[0]["token"]
    a.room = b.room = code
    play(h, writer, b, type="join", room=code, client_seed="b")
    play(h, writer, a, type="ready")
    play(h, writer, b, type="ready")
    return (a, b) if a.last("match_start")["seat"] == 0 else (b, a)


def test_threaded_a_turn_formed_during_a_commit_waits_for_it_and_everything_is_held():
    """Pipeline: while a commit is in flight nothing is shown, not even a pong; then all in order."""
    h, writer = threaded_harness()
    first, second = threaded_start(h, writer)
    first.new(), second.new()
    h.core.line_received(first.pid, line(type="explore", cell=[0, 0]))
    h.turn()
    assert len(writer.waiting) == 1 and first.new() == []
    h.core.line_received(second.pid, line(type="ping"))
    h.core.line_received(second.pid, line(type="explore", cell=[7, 7]))  # built on the one in flight
    h.turn()
    assert len(writer.waiting) == 1 and second.new() == []  # waits: one commit at a time
    writer.land()
    assert types(first) == ["state", "ok"]
    assert types(second) == ["state"]  # the pong and the rest wait for the batch now in flight
    assert len(writer.waiting) == 1  # it went as soon as the first one landed
    writer.land()
    assert types(first) == ["state"]
    assert types(second) == ["pong", "state", "ok"]
    assert sorted(h.storage.actions[h.match(first).id]) == [0, 1]


def test_threaded_a_failed_commit_undoes_the_batch_built_on_top_of_it():
    """Pipeline failure: the in-flight batch fails, so the later one (built on it) is undone too."""
    h, writer = threaded_harness()
    first, second = threaded_start(h, writer)
    code = first.room
    match_id = h.rooms.rooms[code].match.id
    h.core.line_received(first.pid, line(type="explore", cell=[0, 0], id=1))
    h.turn()
    h.core.line_received(second.pid, line(type="explore", cell=[7, 7], id=2))
    h.turn()
    first.new(), second.new()
    writer.land(OSError("disk full"))
    for client, rid in ((first, 1), (second, 2)):
        got = client.new()
        assert got[0]["code"] == "internal_error" and got[0]["id"] == rid
        assert not any(m["type"] in ("state", "ok") for m in got)
        assert client.closed
    assert h.rooms.rooms[code].match.seq == 0 and match_id not in h.storage.actions
    assert not writer.waiting


def test_threaded_shutdown_drains_the_commit_in_flight_and_the_rest():
    """SIGTERM: stop() waits for the in-flight commit, commits what is staged, then says goodbye."""
    h, writer = threaded_harness()
    first, second = threaded_start(h, writer)
    h.core.line_received(first.pid, line(type="explore", cell=[0, 0]))
    h.turn()
    h.core.line_received(second.pid, line(type="ping"))
    assert writer.waiting
    h.core.stop()
    assert sorted(h.storage.actions[h.match(first).id]) == [0]
    assert first.last("ok")["seq"] == 1
    assert [m["type"] for m in second.messages][-2:] == ["pong", "server_closing"]
    assert not writer.waiting and float(h.storage.meta("clock")) == h.rooms.now()  # all on disk
    assert first.closed and second.closed


def test_threaded_writer_commits_on_its_own_thread(tmp_path):
    """ThreadedWriter: the commit (the sync) runs off the calling thread; ``done`` comes back via callFromThread."""
    import threading

    from mineduel.server.commits import ThreadedWriter
    from mineduel.server.storage import SQLiteStorage

    calls: list = []

    class Reactor:
        def callFromThread(self, fn, *args):
            calls.append((fn, args))

    main = SQLiteStorage(tmp_path / "db.sqlite3")
    storage = SQLiteStorage(tmp_path / "db.sqlite3")
    threads = []
    finish = storage.finish
    storage.finish = lambda: (threads.append(threading.current_thread().name), finish())[1]
    writer = ThreadedWriter(storage, Reactor())
    landed: list = []
    writer.submit(Write(meta={"k": "v"}), landed.append)
    assert writer.wait() is None
    writer.close()
    storage.close()
    (fn, args), = calls
    fn(*args)
    assert landed == [None] and threads and threads[0] != threading.current_thread().name
    assert main.meta("k") == "v"  # committed, and visible to the loop's own connection
    main.close()


def test_a_pong_does_not_wait_for_a_commit_but_keeps_its_place_behind_held_messages():
    """A pong shows no state: it goes at once, unless that connection already has held messages."""
    h = Harness()
    first, second = h.start()
    bystander = h.connect("10.0.0.9")
    first.new(), second.new()
    h.core.line_received(first.pid, line(type="explore", cell=[0, 0]))  # staged: a commit is due
    h.core.line_received(bystander.pid, line(type="ping", id=1))
    assert types(bystander) == ["pong"]  # not held
    h.core.line_received(second.pid, line(type="ping", id=2))
    assert second.new() == []  # second has a held state: its pong waits behind it
    h.turn()
    assert types(second) == ["state", "pong"]


def test_a_room_does_not_keep_its_ended_match_record_in_memory():
    """Memory: the record built at the end serves storage and both match_end messages, then goes
    (kept, it cost ~15 KB per room: RSS 94 -> 173 MB over 10 minutes of 5,000 matches)."""
    h = Harness()
    first, second = h.start()
    first.send(type="resign")
    room = h.rooms.rooms[first.room]
    assert room.match.over and not any(isinstance(v, dict) for v in vars(room).values())
    assert first.last("match_end")["record"]["match_id"] == room.match.id
    again = h.connect("10.0.0.1")
    again.send(type="resume", room=first.room, token=first.token)
    assert again.last("match_end")["record"] == first.last("match_end")["record"]
    assert not any(isinstance(v, dict) for v in vars(room).values())


def _stored_match(h: Harness, code: str):
    from mineduel.server.match import LiveMatch

    loaded = h.storage.load_room(code)
    assert loaded is not None, code
    blob, rows = loaded
    return None if blob["match"] is None else LiveMatch.from_blob(blob["match"], rows)


def _seated_again(h: Harness, old, address: str):
    """A closed client's program reconnects and resumes with its token (O12)."""
    c = h.connect(address)
    c.token, c.room = old.token, old.room
    c.send(type="resume", room=old.room, token=old.token)
    return c


def test_what_is_in_memory_is_what_a_restart_would_restore_under_random_failures():
    """Durability as a property: after every reactor turn — actions, timeouts, drops, resumes and
    commits that fail at random — each running match in memory is exactly the match a restart
    would rebuild from the database (record, salts, transcript, deadline, fair-stream position)."""
    import random

    for seed in range(12):
        rng = random.Random(seed)
        h = Harness(seed=seed)
        pairs = [list(h.start()) for _ in range(3)]
        for step in range(150):
            if rng.random() < 0.12:
                h.storage.fail_next = True
            pair = rng.choice(pairs)
            for i, client in enumerate(pair):
                if client.closed:
                    pair[i] = _seated_again(h, client, f"10.9.{seed}.{step % 250}")
            first = pair[0]
            room = h.rooms.rooms[first.room]
            roll = rng.random()
            if room.match.over:
                for client in pair:
                    client.send(type="rematch")
            elif roll < 0.7:
                state = room.match.state
                sid = room.match.players[state.to_move]
                movers = [c for c in pair if c.pid in h.rooms.peer_seat and h.rooms.peer_seat[c.pid][1].sid == sid]
                if movers:
                    movers[0].send(**oracle_message(state))
            elif roll < 0.87:
                h.advance(rng.choice([1.0, 7.5, 20.0, 21.0]))
            elif roll < 0.92:
                rng.choice(pair).send(type="resign")
            else:
                victim = rng.choice(pair)
                victim.drop()
                pair[pair.index(victim)] = _seated_again(h, victim, f"10.8.{seed}.{step % 250}")
            h.storage.fail_next = False
            for code, live in h.rooms.rooms.items():
                stored = _stored_match(h, code)
                if live.match is None or stored is None:
                    assert live.match is None and stored is None
                    continue
                assert stored.id == live.match.id
                assert stored.actions == live.match.actions, (seed, step)
                assert (stored.salts, stored.transcript) == (live.match.salts, live.match.transcript)
                assert (stored.deadline, stored.ended) == (live.match.deadline, live.match.ended)
                assert stored.stream.consumed == live.match.stream.consumed
        assert h.core.commits.failures > 0


def test_a_full_disk_refuses_the_turn_and_play_resumes_when_there_is_room(tmp_path):
    """Bad input / full disk (real SQLite): while the database cannot grow, a move gets
    internal_error and nothing of it is stored or shown; once there is room again, the players
    resume and the same move is accepted."""
    from mineduel.server.storage import SQLiteStorage

    storage = SQLiteStorage(tmp_path / "full.sqlite3")
    h = Harness(storage=storage)
    first, second = h.start()
    match_id = h.match(first).id
    db = storage._db
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages}")  # SQLITE_FULL as soon as the file must grow
    by_seat = {first.seat: first, second.seat: second}
    for _ in range(60):  # moves until the file's last free page is used up
        state = h.match(first).state
        got = by_seat[state.to_move].send(**oracle_message(state))
        if got[0]["type"] == "error":
            break
    assert got[0]["code"] == "internal_error" and h.core.commits.failures == 1
    stored_before = storage.load_room(first.room)[1]
    assert len(stored_before) == h.match(first).seq  # what is in memory is what is on disk
    # While the disk is full, what would store something is refused at once.
    probe = h.connect("10.0.0.3")
    assert probe.send(type="create_room")[0]["code"] == "storage_unavailable"
    db.execute("PRAGMA max_page_count = 1073741823")  # room again
    h.rooms.tick()  # the once-a-second clock write succeeds: the server takes requests again
    h.turn()
    again = {}
    for old, address in ((first, "10.0.0.1"), (second, "10.0.0.2")):
        c = h.connect(address)
        c.token, c.room = old.token, old.room
        assert c.send(type="resume", room=old.room, token=old.token)[0]["resumed"] is True
        again[old.last("match_start")["seat"]] = c
    state = h.match(first).state
    assert again[state.to_move].send(**oracle_message(state))[-1]["type"] == "ok"
    assert h.match(first).id == match_id and len(storage.load_room(first.room)[1]) == h.match(first).seq
    storage.close()
