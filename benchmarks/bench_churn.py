#!/usr/bin/env python3
"""Hostile peers (issue 15): what one address gets out of churn, and what its neighbours notice.

    .venv/bin/python benchmarks/bench_churn.py [--seconds 3] [--attackers 2]

A real ``mine-duel-server`` process (``server_probe.py`` around it, ``--queues``) on 127.0.0.1 with
its **default limits**, a fresh SQLite database. Everything is loopback: the attacker connects
from 127.0.0.66 (and its accomplices from 127.0.0.67-69), two neighbours from 127.0.0.2 play a
match throughout, one move every 50 ms, and every move's round trip (action sent -> its ``ok``
read) is measured. The attackers are ``--attackers`` processes with blocking sockets, each as
fast as it can (the machine's cores are shared with the server).

Figures printed (one JSON line at the end too):

* **rooms one address can hold**: 127.0.0.66 creates rooms and joins each from a second
  connection of its own (issue 15 item 1), until refused; the server is restarted (SIGTERM) on the
  same database and it tries again;
* per phase of ``--seconds`` (none, then each churn): the neighbours' round trip p50/p95/max, and
  what the attacker got:
  - **connection churn**: connect, ``hello`` and 39 pings in one write, read the answers, close;
  - **get_record churn**: the same with 39 ``get_record`` of a finished match;
  - **resume churn** (``--resume-seconds``, 10): 127.0.0.66 holds a seat in a match against
    127.0.0.67, which reads 40 KB/s; it drops and resumes its seat from a new connection as fast as
    it can; what waits for the opponent (sampled every 0.1 s: in the server, what ``max_unsent``
    bounds, and in the kernel's send queue) and whether it was cut;
  - **collusion** (``--collusion-seconds``, 12): 127.0.0.68 and 127.0.0.69 resign and rematch in a
    loop at the per-connection rate; matches played, and records stored (counted in the database
    afterwards);
* then the resume churn again on a server with the resume, connection and address limits lifted:
  output coalescing alone, as the attack of issue 15 met it (about a thousand resumes a second).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from server_bots import View, choose_move  # noqa: E402 - benchmarks/ is not a package

SERVER = "127.0.0.1"
ATTACKER, ACCOMPLICE = "127.0.0.66", "127.0.0.67"
COLLUDERS = ("127.0.0.68", "127.0.0.69")
NEIGHBOUR = "127.0.0.2"


# ----- a blocking line client ------------------------------------------------------------------
class Wire:
    """One connection: JSON lines out, JSON objects in (blocking, with a timeout)."""

    def __init__(self, port: int, source: str, timeout: float = 5.0, rcvbuf: int = 0) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)  # before connect: the window
        self.sock.settimeout(timeout)
        self.sock.bind((source, 0))
        self.sock.connect((SERVER, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.ids = 0

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def send(self, *messages: dict[str, Any]) -> None:
        self.sock.sendall(b"".join(orjson.dumps(msg) + b"\n" for msg in messages))

    def read(self) -> dict[str, Any] | None:
        """The next message (pings answered on the way), ``None`` once the server closed."""
        while True:
            if b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                msg = orjson.loads(line)
                if msg.get("type") == "ping":
                    self.send({"type": "pong"})
                    continue
                return msg
            try:
                data = self.sock.recv(65536)
            except (ConnectionError, TimeoutError, OSError):
                return None
            if not data:
                return None
            self.buf += data

    def request(self, kind: str, **fields: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Send a request with an id; its reply and what came before it."""
        self.ids += 1
        rid = f"q{self.ids}"
        self.send({"type": kind, "id": rid, **fields})
        before = []
        while True:
            msg = self.read()
            if msg is None:
                raise ConnectionError(f"closed before the reply to {kind}")
            if msg.get("id") == rid or (msg["type"] == "error" and "id" not in msg):
                return msg, before  # an error without id (rate_limited) answers the oldest request
            before.append(msg)

    def close(self) -> None:
        self.sock.close()


def greeted(port: int, source: str, rcvbuf: int = 0) -> Wire:
    wire = Wire(port, source, rcvbuf=rcvbuf)
    reply, _ = wire.request("hello", protocol=1, client="bench-churn/1")
    assert reply["type"] == "welcome", reply
    return wire


def start_match(
    port: int, first: str, second: str, rcvbuf: int = 0,
) -> tuple[Wire, Wire, str, str, list[dict[str, Any]]]:
    """A room created from ``first`` (``rcvbuf``: its receive buffer), joined from ``second``, both
    ready: (a, b, room, b's token, what b was sent before its ``ok`` to ready: its ``match_start``
    and ``state``; a's are unread)."""
    a, b = greeted(port, first, rcvbuf), greeted(port, second)
    created, _ = a.request("create_room", client_seed="a")
    assert created["type"] == "room_created", created
    joined, _ = b.request("join", room=created["room"], client_seed="b")
    a.request("ready")
    _, seen = b.request("ready")
    return a, b, created["room"], joined["token"], seen


# ----- the server ----------------------------------------------------------------------------
class Server:
    def __init__(self, work: Path, *options: str) -> None:
        self.work = work
        self.options = options
        self.db = work / "churn.sqlite3"
        self.probe = work / "probe.jsonl"
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    def start(self) -> None:
        with socket.socket() as s:
            s.bind((SERVER, 0))
            self.port = s.getsockname()[1]
        cmd = [sys.executable, str(HERE / "server_probe.py"), "--probe", str(self.probe), "--queues", "--",
               "--host", SERVER, "--port", str(self.port), "--no-discovery", "--db", str(self.db), "--log-level", "warn", *self.options]
        log = open(self.work / "server.log", "ab")  # noqa: SIM115 - the server's output for its whole run
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        for _ in range(200):
            try:
                socket.create_connection((SERVER, self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the server did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)

    def queues(self, since: float, until: float, port: int) -> list[tuple[int, int]]:
        """The sampled bytes waiting for the connection from ``port`` between two monotonic times:
        (in the server, in the kernel's send queue)."""
        out = []
        for line in self.probe.read_text().splitlines():
            event = json.loads(line)
            if event.get("event") == "queues" and since <= event["t"] <= until:
                server, kernel = event["waiting"].get(str(port), (0, 0))
                out.append((server, kernel))
        return out


# ----- 1. rooms one address can hold ------------------------------------------------------------
def fill_rooms(port: int, source: str, limit: int) -> int:
    """Rooms created from ``source`` (each joined from a second connection of its own) until refused
    ``too_many_rooms``, or ``limit`` of them. A connection refused for the connection rate waits and
    tries again (that limit is not what this measures)."""
    made = waits = 0
    while made < limit:
        try:
            a, b = greeted(port, source), greeted(port, source)
        except (OSError, AssertionError):
            waits += 1
            if waits > 50:
                raise
            time.sleep(0.5)
            continue
        waits = 0
        created, _ = a.request("create_room")
        if created["type"] != "room_created":
            assert created.get("code") == "too_many_rooms", created
            a.close()
            b.close()
            return made
        b.request("join", room=created["room"])
        a.close()
        b.close()
        made += 1
    return made


# ----- neighbours ------------------------------------------------------------------------------
class Neighbours(threading.Thread):
    """Two players from 127.0.0.2 playing match after match, a move every 50 ms; round trips kept."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.a, self.b, _, _, seen = start_match(port, NEIGHBOUR, NEIGHBOUR)
        self.rtts: list[tuple[float, float]] = []  # (monotonic time sent, seconds)
        self.errors: list[str] = []
        self.stopping = threading.Event()
        self.rng = random.Random(15)
        self.views: dict[Wire, View] = {}
        self.take(self.b, seen)

    def take(self, wire: Wire, messages: list[dict[str, Any]]) -> None:
        for msg in messages:
            if msg["type"] == "state":
                board = msg["board"]
                self.views[wire] = View(msg["match_id"], msg["seq"], msg["to_move"] == "me", msg["phase"],
                                        msg["quota_left"], "".join(board["numbers"]), "".join(board["markers"]),
                                        "".join(board["my_mines"]), msg["result"] is not None)
            elif msg["type"] == "error":
                self.errors.append(msg["code"])

    def drain(self, wire: Wire) -> None:
        wire.sock.settimeout(0.0)
        try:
            while True:
                try:
                    data = wire.sock.recv(65536)
                except (BlockingIOError, InterruptedError):
                    break
                if not data:
                    raise ConnectionError("a neighbour was disconnected")
                wire.buf += data
        finally:
            wire.sock.settimeout(5.0)
        messages = []
        while b"\n" in wire.buf:
            line, wire.buf = wire.buf.split(b"\n", 1)
            msg = orjson.loads(line)
            if msg["type"] == "ping":
                wire.send({"type": "pong"})
            else:
                messages.append(msg)
        self.take(wire, messages)

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                time.sleep(0.05)
                for wire in (self.a, self.b):
                    self.drain(wire)
                views = [(w, v) for w, v in self.views.items() if v.my_turn and not v.over]
                if not views:
                    if self.views and all(v.over for v in self.views.values()):
                        self.views.clear()
                        for wire in (self.a, self.b):
                            reply, before = wire.request("rematch", client_seed="n")
                            self.take(wire, before)
                    continue
                wire, view = views[0]
                move = choose_move(view, self.rng, 0.2)
                kind = move.pop("type")
                sent = time.monotonic()
                reply, before = wire.request(kind, **move, match_id=view.match_id, seq=view.seq)
                self.rtts.append((sent, time.monotonic() - sent))
                self.take(wire, before)
                if reply["type"] == "error":
                    self.errors.append(reply["code"])
        except Exception as exc:  # noqa: BLE001 - reported with the figures
            self.errors.append(f"neighbours stopped: {exc!r}")

    def window(self, since: float, until: float) -> dict[str, Any]:
        rtts = sorted(r for t, r in self.rtts if since <= t <= until)
        if not rtts:
            return {"moves": 0}
        return {"moves": len(rtts), "p50_ms": 1000 * statistics.median(rtts),
                "p95_ms": 1000 * rtts[int(0.95 * (len(rtts) - 1))], "max_ms": 1000 * rtts[-1]}


# ----- attackers (separate processes) ---------------------------------------------------------
def attack(kind: str, port: int, seconds: float, extra: dict[str, Any], out: Any) -> None:
    """One attacker process: ``kind`` churn for ``seconds``; its counts go to the queue ``out``."""
    counts = {"connections": 0, "served": 0, "refused": 0, "answered": 0, "rate_limited": 0, "bytes": 0,
              "resumed": 0, "resume_refused": 0, "matches": 0, "failed": 0}
    try:
        churn(kind, port, time.monotonic() + seconds, extra, counts)
    except Exception as exc:  # noqa: BLE001 - counted: the figures say an attacker stopped early
        print(f"attacker {kind} stopped: {exc!r}", file=sys.stderr)
        counts["failed"] += 1
    out.put(counts)


def churn(kind: str, port: int, end: float, extra: dict[str, Any], counts: dict[str, int]) -> None:
    if kind in ("connections", "get_record"):
        line = {"type": "ping"} if kind == "connections" else {"type": "get_record", "match_id": extra["match_id"]}
        burst = orjson.dumps({"type": "hello", "protocol": 1, "client": "churn"}) + b"\n" + (orjson.dumps(line) + b"\n") * 39
        while time.monotonic() < end:
            try:
                sock = socket.create_connection((SERVER, port), timeout=2, source_address=(ATTACKER, 0))
            except OSError:
                counts["refused"] += 1
                continue
            counts["connections"] += 1
            try:
                sock.sendall(burst)
                buf, lines = b"", 0
                while lines < 40:
                    data = sock.recv(65536)
                    if not data:
                        break
                    counts["bytes"] += len(data)
                    buf += data
                    lines = buf.count(b"\n")
            except OSError:
                pass
            finally:
                sock.close()
            replies = [orjson.loads(x) for x in buf.split(b"\n") if x]
            if replies and replies[0].get("code") == "too_many_connections":
                counts["refused"] += 1
                continue
            counts["served"] += 1
            counts["answered"] += sum(r["type"] in ("welcome", "pong", "record") for r in replies)
            counts["rate_limited"] += sum(r.get("code") == "rate_limited" for r in replies)
    elif kind == "resume":
        while time.monotonic() < end:
            try:
                wire = greeted(port, ATTACKER)
                reply, _ = wire.request("resume", room=extra["room"], token=extra["token"])
                wire.close()
            except (OSError, AssertionError):
                counts["refused"] += 1
                continue
            counts["connections"] += 1
            if reply["type"] == "joined":
                counts["resumed"] += 1
            else:
                counts["resume_refused"] += 1
    elif kind == "collusion":
        a, b, _, _, _ = start_match(port, *COLLUDERS)
        while time.monotonic() < end:
            time.sleep(0.105)  # a sends two lines a match: just under its 20 per second
            reply, _ = a.request("resign")  # either seat may resign at any time
            if reply["type"] != "ok":
                counts["refused"] += 1
            else:
                counts["matches"] += 1
            for wire in (a, b):
                wire.request("rematch", client_seed="c")


def run_phase(kind: str, port: int, seconds: float, attackers: int, extra: dict[str, Any]) -> dict[str, int]:
    queue: Any = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=attack, args=(kind, port, seconds, extra, queue))
             for _ in range(attackers if kind in ("connections", "get_record", "resume") else 1)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=seconds + 60) for _ in procs]
    for p in procs:
        p.join(timeout=10)
    return {k: sum(r[k] for r in results) for k in results[0]}


class SlowReader(threading.Thread):
    """The resumer's opponent: reads 4 KB every 0.1 s (40 KB/s); notes whether it was cut."""

    def __init__(self, wire: Wire) -> None:
        super().__init__(daemon=True)
        self.wire = wire
        self.cut = False
        self.read = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            time.sleep(0.1)
            try:
                data = self.wire.sock.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                self.cut = True
                return
            if not data:
                self.cut = True
                return
            self.read += len(data)
            if b'"type":"ping"' in data:
                self.wire.send({"type": "pong"})


def phases(
    server: Server, kinds: tuple[str, ...], seconds: float, attackers: int, collusion: float = 0.0, resume: float = 0.0,
) -> dict[str, Any]:
    """Neighbours playing on ``server`` while each churn of ``kinds`` runs for ``seconds``."""
    # A finished match for get_record, then the resume victim: the resumer holds the joiner's seat
    # (from the attacker's address) against it.
    a, b, _, _, _ = start_match(server.port, ACCOMPLICE, ACCOMPLICE)
    _, before = a.request("resign")
    match_id = next(msg["match_id"] for msg in before if msg["type"] == "match_end")
    a.close()
    b.close()
    victim, resumer, room, token, _ = start_match(server.port, ACCOMPLICE, ATTACKER, rcvbuf=4096)
    resumer.close()
    neighbours = Neighbours(server.port)
    neighbours.start()
    out: dict[str, Any] = {}
    for kind in kinds:
        time.sleep(0.5)
        since = time.monotonic()
        reader = None
        if kind == "none":
            time.sleep(seconds)
            got: dict[str, Any] = {}
        else:
            if kind == "resume":
                reader = SlowReader(victim)
                reader.start()
            length = {"collusion": collusion, "resume": resume}.get(kind, seconds)
            got = dict(run_phase(kind, server.port, length, attackers, {"match_id": match_id, "room": room, "token": token}))
        until = time.monotonic()
        got["seconds"] = round(until - since, 2)
        got["neighbours"] = neighbours.window(since, until)
        if reader is not None:
            reader.stopping.set()
            reader.join(timeout=5)
            sizes = server.queues(since, until, victim.port)
            got["opponent"] = {
                "cut": reader.cut, "read_bytes": reader.read,
                "server_queue_max_bytes": max((q for q, _ in sizes), default=0),
                "server_queue_median_bytes": statistics.median(q for q, _ in sizes) if sizes else 0,
                "kernel_queue_max_bytes": max((k for _, k in sizes), default=0),
            }
        out[kind] = got
        print(f"  {kind}: {json.dumps(got)}", flush=True)
    neighbours.stopping.set()
    neighbours.join(timeout=5)
    out["neighbour_errors"] = sorted(set(neighbours.errors))
    return out


def measure(tmp: Path, args: argparse.Namespace, figures: dict[str, Any], servers: list[Server]) -> None:
    server = Server(tmp / "default")
    servers.append(server)
    server.work.mkdir()
    server.start()
    held = fill_rooms(server.port, ATTACKER, args.fill_limit)
    server.stop()
    server.start()
    after = fill_rooms(server.port, ATTACKER, args.fill_limit)
    figures["rooms"] = {"held": held, "more_after_restart": after}
    print(f"rooms one address could hold: {held}; after a restart, {after} more", flush=True)
    print("default limits:", flush=True)
    figures["default"] = phases(server, ("none", "connections", "get_record", "resume", "collusion"),
                                args.seconds, args.attackers, args.collusion_seconds, args.resume_seconds)
    server.stop()
    with sqlite3.connect(server.db) as db:
        total = db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
        most = db.execute("SELECT COUNT(*) FROM results GROUP BY room ORDER BY 1 DESC LIMIT 1").fetchone()[0]
    db.close()
    figures["records"] = {"stored": total, "colluders_stored": most,
                          "colluders_played": figures["default"]["collusion"]["matches"]}
    print(f"records: {json.dumps(figures['records'])} (the colluders' room has the most)", flush=True)
    if args.only_default:
        return
    # Output coalescing alone: the resume, connection and address limits lifted, as before issue 15.
    lifted = Server(tmp / "lifted", "--resumes-per-seat", "1000000000", "--connection-rate", "1000000000",
                    "--address-rate", "1000000000")
    servers.append(lifted)
    lifted.work.mkdir()
    lifted.start()
    print("resume, connection and address limits lifted (output coalescing alone):", flush=True)
    figures["coalescing_only"] = phases(lifted, ("resume",), args.seconds, args.attackers, resume=args.resume_seconds)
    lifted.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="length of each phase (default 3)")
    parser.add_argument("--attackers", type=int, default=2, help="attacker processes per churn (default 2)")
    parser.add_argument("--fill-limit", type=int, default=200,
                        help="stop filling rooms from one address at this many (default 200)")
    parser.add_argument("--only-default", action="store_true",
                        help="skip the run with limits lifted (e.g. against a server from before issue 15)")
    parser.add_argument("--resume-seconds", type=float, default=10.0,
                        help="length of the resume phases (default 10: the kernel's buffers fill first)")
    parser.add_argument("--collusion-seconds", type=float, default=12.0,
                        help="length of the collusion phase (default 12: past the 100 records a pair may store)")
    args = parser.parse_args()
    figures: dict[str, Any] = {"cpus": os.cpu_count(), "seconds": args.seconds, "attackers": args.attackers}
    with tempfile.TemporaryDirectory(prefix="bench-churn-") as tmp:
        servers: list[Server] = []
        try:
            measure(Path(tmp), args, figures, servers)
        finally:
            for server in servers:
                server.stop()  # also after a failure: no server is left running
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
