"""Faults outside the protocol: the system clock jumping, and a database that cannot be written.

- Clock: deadlines are durations (O4, O5, O12), so the server measures them on the monotonic
  clock (``server/clock.py``). A real server process runs under libfaketime, whose wall clock
  the test moves an hour forward and back while a match is running.
- Storage: a server that cannot store must never acknowledge what it would lose. It refuses to
  start on a database it cannot write, and while a running server's database refuses writes
  (SQLite ``SQLITE_READONLY`` / ``SQLITE_FULL``) it answers ``storage_unavailable`` to anything
  that would store, shows nothing it did not store, and takes work again once a write succeeds.
"""

from __future__ import annotations

import glob
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.harness import Harness, oracle_message
from support.reliability import record_figure

from mineduel.server.clock import SteadyClock
from mineduel.server.storage import SQLiteStorage
from mineduel.shared.fairness.verify import verify_record

pytestmark = pytest.mark.reliability

FAKETIME_LIBS = sorted(
    glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1") + glob.glob("/usr/local/lib/faketime/libfaketimeMT.so.1")
)


# ----- the steady clock --------------------------------------------------------------------------


def test_steady_clock_reads_as_unix_time_and_ignores_wall_clock_jumps():
    """O4/O5/O12 deadlines are durations: a wall-clock jump moves no deadline."""
    wall = [1_700_000_000.0]
    mono = [50.0]
    clock = SteadyClock(wall=lambda: wall[0], monotonic=lambda: mono[0])
    assert clock() == 1_700_000_000.0  # reads as Unix time at start
    mono[0] += 2.5
    wall[0] += 3600.0  # an operator, NTP or a waking laptop moves the system clock
    assert clock() == 1_700_000_002.5
    wall[0] -= 7200.0
    mono[0] += 1.0
    assert clock() == 1_700_000_003.5


class _Line:
    """A blocking line client for a server in another process (every wait is bounded)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buffer = b""
        self.seen: list[dict] = []
        self.unclaimed: list[dict] = []
        self.ids = 0

    def close(self) -> None:
        self.sock.close()

    def send(self, **msg: object) -> None:
        self.sock.sendall(json.dumps(msg).encode() + b"\n")

    def wait(self, pred, limit: float = 15.0) -> dict:
        """The first message not yet returned that matches ``pred``, already received or not."""
        for msg in self.unclaimed:
            if pred(msg):
                self.unclaimed.remove(msg)
                return msg
        deadline = time.monotonic() + limit
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                msg = json.loads(line)
                self.seen.append(msg)
                if msg["type"] == "ping":
                    self.send(type="pong")
                if pred(msg):
                    return msg
                self.unclaimed.append(msg)
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no such message within {limit} s; saw {[m['type'] for m in self.seen]}")
            self.sock.settimeout(left)
            chunk = self.sock.recv(65536)
            if not chunk:
                raise AssertionError(f"connection closed; saw {[m['type'] for m in self.seen]}")
            self.buffer += chunk

    def request(self, kind: str, **fields: object) -> dict:
        self.ids += 1
        rid = f"r{self.ids}"
        self.send(type=kind, id=rid, **fields)
        reply = self.wait(lambda m: m.get("id") == rid)
        assert reply["type"] != "error", reply
        return reply


def _spawn_server(args: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[bytes], int]:
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    deadline = time.monotonic() + 30
    seen = b""
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen += line
        m = re.search(rb"listening tcp=(\d+)", line)
        if m:
            return proc, int(m.group(1))
    _stop(proc, [])
    raise AssertionError(seen.decode(errors="replace"))


def _stop(proc: subprocess.Popen[bytes], lines: list[_Line]) -> None:
    """Close the test's connections, end the server process and close its output pipe."""
    for line in lines:
        line.close()
    proc.kill()
    proc.wait(timeout=30)
    if proc.stdout is not None:
        proc.stdout.close()


needs_faketime = pytest.mark.skipif(
    not FAKETIME_LIBS, reason="libfaketime is not installed (Debian: apt-get install faketime; .ci/run does)"
)


def _faketime_server(tmp_path: Path, turn: float) -> tuple[subprocess.Popen[bytes], int, Path]:
    """A server process whose wall clock the test moves by rewriting ``stamp`` (monotonic stays real)."""
    stamp = tmp_path / "faketime"
    stamp.write_text("+0\n")
    env = dict(os.environ, LD_PRELOAD=FAKETIME_LIBS[0], FAKETIME_TIMESTAMP_FILE=str(stamp),
               FAKETIME_NO_CACHE="1", FAKETIME_DONT_FAKE_MONOTONIC="1")
    args = [sys.executable, "-m", "mineduel.server", "--host", "127.0.0.1", "--port", "0", "--no-discovery",
            "--db", str(tmp_path / "clock.db"), "--turn-seconds", str(turn)]
    proc, port = _spawn_server(args, env)
    return proc, port, stamp


def _match(port: int, opened: list[_Line]) -> tuple[_Line, dict]:
    """Two players, a started match: the first player and its first state (both lines go to ``opened``)."""
    a, b = _Line(port), _Line(port)
    opened += (a, b)
    for c in (a, b):
        c.request("hello", protocol=1, client="faults/1")
    created = a.request("create_room", client_seed="a")
    b.request("join", room=created["room"], client_seed="b")
    a.request("ready")
    b.request("ready")
    first = a if a.wait(lambda m: m["type"] == "match_start")["seat"] == 0 else b
    return first, first.wait(lambda m: m["type"] == "state")


@needs_faketime
def test_o5_a_wall_clock_jump_forward_expires_no_deadline(tmp_path):
    """+1 h on the system clock: the 20 s opening deadline has not passed (O4), the server clock did not jump."""
    proc, port, stamp = _faketime_server(tmp_path, turn=20.0)
    opened: list[_Line] = []
    try:
        started = time.monotonic()  # before the server stamps ``before``
        first, before = _match(port, opened)
        assert before["to_move"] == "me" and before["deadline"]["left"] > 10
        stamp.write_text("+1h\n")
        pong = first.request("ping")
        # The server clock moved on by no more than the time that really passed (not by the hour):
        # a bound measured around the exchange, so it holds however slow the machine is.
        moved = pong["server_time"] - before["server_time"]
        assert 0 <= moved <= time.monotonic() - started + 0.01, moved
        ok = first.request("explore", cell=[0, 0])
        assert ok["seq"] == 1
        after = next(m for m in reversed(first.seen) if m["type"] == "state")
        assert after["events"][-1]["action"] == "explore" and not after["events"][-1].get("auto")
        assert after["deadline"]["at"] - after["server_time"] == pytest.approx(20.0, abs=0.01)
        record_figure("faults", "system clock jumps survived (+1 h, -1 h)", 1)
    finally:
        _stop(proc, opened)


@needs_faketime
def test_o4_a_wall_clock_jump_back_delays_no_deadline(tmp_path):
    """-1 h on the system clock: the opening deadline still fires when due, not an hour late (O4)."""
    turn = 2.0
    proc, port, stamp = _faketime_server(tmp_path, turn=turn)
    opened: list[_Line] = []
    try:
        first, before = _match(port, opened)
        stamp.write_text("-1h\n")
        # Without the steady clock this waits an hour; the bound fails it long before.
        waited = first.wait(lambda m: m["type"] == "state" and any(e["action"] == "timeout" for e in m["events"]), limit=30)
        timeout = next(e for e in waited["events"] if e["action"] == "timeout")
        assert timeout["at"] == pytest.approx(before["deadline"]["at"], abs=0.002)  # on time, on the server clock
        record_figure("faults", "system clock jumps survived (+1 h, -1 h)", 1)
    finally:
        _stop(proc, opened)


# ----- a database that cannot be written -----------------------------------------------------------


@pytest.mark.parametrize("how", ["journal-blocked", "read-only-file"])
def test_a_server_refuses_to_start_on_a_database_it_cannot_write(tmp_path, how):
    """Better no server than one that acknowledges moves it cannot store: exit 1, one clear line."""
    db = tmp_path / "server.sqlite3"
    SQLiteStorage(db).close()
    if how == "journal-blocked":
        # SQLite must create its write-ahead log beside the file; a folder in its place stops
        # every write, for root too (file permissions do not stop root).
        for extra in tmp_path.glob("server.sqlite3-*"):
            extra.unlink()
        (tmp_path / "server.sqlite3-wal").mkdir()
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes through file permissions; the journal-blocked case covers root")
        db.chmod(0o444)
        tmp_path.chmod(0o555)
    args = [sys.executable, "-m", "mineduel.server", "--host", "127.0.0.1", "--port", "0", "--no-discovery", "--db", str(db)]
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=60)
    finally:
        tmp_path.chmod(0o755)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "cannot open the database for writing" in done.stderr and "Traceback" not in done.stderr
    assert "listening" not in done.stdout


def test_a_database_that_turns_read_only_refuses_new_work_and_loses_nothing(tmp_path):
    """SQLITE_READONLY mid-match: the move is refused (internal_error), later requests that would
    store get storage_unavailable at once, deadlines are not settled on screen, nothing is shown that
    is not stored; once writes work again play goes on and the stored match is the one played."""
    storage = SQLiteStorage(tmp_path / "ro.sqlite3")
    h = Harness(storage=storage)
    first, second = h.start()
    by_seat = {first.seat: first, second.seat: second}
    for _ in range(6):
        state = h.match(first).state
        assert by_seat[state.to_move].send(**oracle_message(state))[-1]["type"] == "ok"
    seq_before = h.match(first).seq
    storage._db.execute("PRAGMA query_only = ON")  # every write now fails with SQLITE_READONLY

    state = h.match(first).state
    mover = by_seat[state.to_move]
    watcher = by_seat[1 - state.to_move]
    seen = len(watcher.messages)
    refused = mover.send(**oracle_message(state), id="m1")
    assert refused[0]["type"] == "error" and refused[0]["code"] == "internal_error" and refused[0]["id"] == "m1"
    assert not any(m["type"] == "state" for m in watcher.messages[seen:])  # nobody saw the unstored move
    assert not h.core.commits.healthy and h.match(first).seq == seq_before

    stranger = h.connect("10.9.9.9")
    assert stranger.send(type="create_room", id="c")[0]["code"] == "storage_unavailable"
    assert stranger.send(type="peek", room=first.room)[0]["type"] == "room_info"
    back = h.connect("10.0.0.1")
    assert back.send(type="resume", room=mover.room, token=mover.token)[0]["code"] == "storage_unavailable"
    h.advance(h.config.turn_seconds + 5)  # the turn's deadline passes while nothing can be stored
    assert h.match(first).seq == seq_before  # the timeout is not applied in memory without its row
    assert not [m for m in back.new() if m["type"] == "state"]

    storage._db.execute("PRAGMA query_only = OFF")  # the disk is back
    h.advance(1)  # the deadline's retry (1 s) and the clock write land
    assert h.core.commits.healthy
    settled = h.match(first).seq
    assert settled > seq_before  # the overdue timeout is now applied and stored
    again = {}
    for old, address in ((first, "10.0.0.1"), (second, "10.0.0.2")):
        c = h.connect(address)
        c.token, c.room = old.token, old.room
        assert c.send(type="resume", room=old.room, token=old.token)[0]["resumed"] is True
        assert c.last("state")["seq"] == settled
        again[old.seat] = c
    for _ in range(200):
        state = h.match(first).state
        if state.over:
            break
        assert again[state.to_move].send(**oracle_message(state))[-1]["type"] == "ok"
    end = again[0].last("match_end")
    assert verify_record(end["record"]).ok
    stored = storage.load_result(end["match_id"])
    assert stored is not None and json.loads(stored) == end["record"]  # what was played is what is stored
    actions = end["record"]["actions"]
    assert not any(a.get("at", 0) < 0 for a in actions) and len(actions) >= settled
    record_figure("faults", "moves refused while the database was read-only, none acknowledged", 3)
    storage.close()
