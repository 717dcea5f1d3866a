"""A hostile address floods the issue 20 requests of a real server on loopback while two honest
players go on (red-team review, docs/SECURITY.md "Players and ratings").

The server is the unchanged ``mine-duel-server`` (a subprocess, its own SQLite file). From
127.0.0.1 the flood keeps ``--flood`` connections open (reconnecting whenever the server cuts
one) and sends, as fast as it can write, ``identify`` with fresh keys, ``rename``,
``quick_match``/``leave_queue``, ``get_leaderboard`` and ``get_profile`` of random ids; it also
tries ``--burst`` connections at once. Two honest players (127.0.0.2 and 127.0.0.3) sit in one
room: one toggles ``ready`` (a request that is committed, then ``room`` and ``ok``), the other
sends ``ping``; their round trips are measured before and during the flood. The server's RSS is
read from /proc every 0.2 s. Figures only, no verdict::

    .venv/bin/python benchmarks/bench_players_flood.py --seconds 10 --flood 15 --burst 1000
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def new_key() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()


class Line:
    """One JSON-lines connection from a chosen loopback source address."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int, source: str) -> Line:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0), limit=1 << 20)
        return cls(reader, writer)

    def send(self, **msg: object) -> None:
        self.writer.write(json.dumps(msg).encode() + b"\n")

    async def until(self, kind: str, **match: object) -> dict[str, object]:
        while True:
            raw = await self.reader.readline()
            if not raw:
                raise ConnectionError("closed")
            msg = json.loads(raw)
            if msg.get("type") == kind and all(msg.get(k) == v for k, v in match.items()):
                return msg


async def honest(port: int, stop: asyncio.Event, rtts: dict[str, list[float]], phase: list[str]) -> None:
    a = await Line.open(port, "127.0.0.2")
    b = await Line.open(port, "127.0.0.3")
    for c in (a, b):
        c.send(type="hello", protocol=1, client="honest/1")
        await c.until("welcome")
    a.send(type="create_room", name="Ann", client_seed="a")
    room = (await a.until("room_created"))["room"]
    b.send(type="join", room=room, name="Bob", client_seed="b")
    await b.until("joined")
    n = 0
    while not stop.is_set():
        n += 1
        t = time.perf_counter()
        a.send(type="ready", ready=n % 2 == 1, id=n)
        await a.until("ok", id=n)
        rtts.setdefault(f"{phase[0]} ready", []).append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        b.send(type="ping", id=n)
        await b.until("pong", id=n)
        rtts.setdefault(f"{phase[0]} ping", []).append((time.perf_counter() - t) * 1000)
        await asyncio.sleep(0.05)


async def flooder(port: int, stop: asyncio.Event, sent: Counter[str], replies: Counter[str], pause: float) -> None:
    """One flooding connection slot: reconnects (after ``pause`` s) whenever the server cuts it."""
    first = True
    while not stop.is_set():
        if not first:
            await asyncio.sleep(pause)
        first = False
        try:
            c = await Line.open(port, "127.0.0.1")
        except OSError:
            await asyncio.sleep(0.05)
            continue
        sent["connections"] += 1

        async def drain(c: Line = c) -> None:
            while True:
                raw = await c.reader.readline()
                if not raw:
                    return
                msg = json.loads(raw)
                replies[str(msg.get("code") or msg.get("type"))] += 1

        reader = asyncio.ensure_future(drain())
        c.send(type="hello", protocol=1, client="flood/1")
        i = 0
        try:
            while not stop.is_set() and not reader.done():
                i += 1
                kind = ("identify", "rename", "quick_match", "leave_queue", "get_leaderboard", "get_profile")[i % 6]
                if kind == "identify":
                    c.send(type="identify", key=new_key(), name=f"F{i}")
                elif kind == "rename":
                    c.send(type="rename", name=f"R{i}")
                elif kind == "get_profile":
                    c.send(type="get_profile", player=secrets.token_hex(8))
                else:
                    c.send(type=kind)
                sent[kind] += 1
                await c.writer.drain()
                await asyncio.sleep(0.001 if i % 50 else 0.02)
        except (ConnectionError, OSError):
            pass
        reader.cancel()
        c.writer.close()


async def burst(port: int, count: int) -> Counter[str]:
    """``count`` connections of one address at once: how many the server keeps."""
    out: Counter[str] = Counter()
    conns = []
    for _ in range(count):
        try:
            c = await Line.open(port, "127.0.0.4")
        except OSError:
            out["refused_at_connect"] += 1
            continue
        c.send(type="hello", protocol=1, client="burst/1")
        conns.append(c)
    for c in conns:
        try:
            raw = await asyncio.wait_for(c.reader.readline(), 2.0)
        except (TimeoutError, ConnectionError, OSError):
            raw = b""
        msg = json.loads(raw) if raw else {}
        out[str(msg.get("code") or msg.get("type") or "closed")] += 1
        c.writer.close()
    return out


async def main_async(args: argparse.Namespace) -> None:
    port = free_port()
    db = Path(tempfile.mkdtemp()) / "flood.db"
    exe = Path(sys.executable).with_name("mine-duel-server")
    proc = subprocess.Popen([str(exe), "--host", "127.0.0.1", "--port", str(port), "--no-discovery", "--db", str(db),
                             "--log-level", "warn"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                (await Line.open(port, "127.0.0.9")).writer.close()
                break
            except OSError:
                await asyncio.sleep(0.1)
        rtts: dict[str, list[float]] = {}
        phase = ["quiet"]
        stop = asyncio.Event()
        rss: list[tuple[str, float]] = []

        async def sample() -> None:
            while not stop.is_set():
                rss.append((phase[0], rss_mb(proc.pid)))
                await asyncio.sleep(0.2)

        tasks = [asyncio.ensure_future(honest(port, stop, rtts, phase)), asyncio.ensure_future(sample())]
        await asyncio.sleep(args.seconds / 2)
        phase[0] = "flood"
        sent: Counter[str] = Counter()
        replies: Counter[str] = Counter()
        flood_stop = asyncio.Event()
        floods = [asyncio.ensure_future(flooder(port, flood_stop, sent, replies, args.reconnect)) for _ in range(args.flood)]
        bursted = await burst(port, args.burst)
        await asyncio.sleep(args.seconds)
        flood_stop.set()
        await asyncio.gather(*floods, return_exceptions=True)
        phase[0] = "after"
        await asyncio.sleep(args.seconds / 2)
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        print(f"server: mine-duel-server on 127.0.0.1:{port}, SQLite {db}; flood {args.flood} slots for {args.seconds:g} s, "
              f"reconnect after {args.reconnect:g} s")
        for name, values in sorted(rtts.items()):
            values.sort()
            p95 = values[int(len(values) * 0.95) - 1] if len(values) >= 20 else values[-1]
            print(f"  {name:>12} round trip: n={len(values):4d} median {statistics.median(values):6.2f} ms "
                  f"p95 {p95:6.2f} ms max {values[-1]:6.2f} ms")
        for ph in ("quiet", "flood", "after"):
            seen = [v for p, v in rss if p == ph]
            if seen:
                print(f"  server RSS {ph:>5}: first {seen[0]:6.1f} MB, max {max(seen):6.1f} MB, last {seen[-1]:6.1f} MB")
        total = sum(v for k, v in sent.items() if k != "connections")
        print(f"  flood sent {total} lines ({total / args.seconds:.0f}/s) over {sent['connections']} connections: "
              + ", ".join(f"{k} {v}" for k, v in sorted(sent.items()) if k != "connections"))
        print("  flood got: " + ", ".join(f"{k} {v}" for k, v in replies.most_common(12)))
        print(f"  burst of {args.burst} connections from one address: " + ", ".join(f"{k} {v}" for k, v in bursted.most_common()))
        print(f"  server CPU (user+sys) over the run: {_cpu(proc.pid):.2f} s")
    finally:
        proc.terminate()
        proc.wait(10)


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the flood (quiet halves before and after)")
    parser.add_argument("--flood", type=int, default=15, help="flooding connection slots from one address")
    parser.add_argument("--reconnect", type=float, default=0.0, help="seconds a cut flood slot waits to reconnect")
    parser.add_argument("--burst", type=int, default=1000, help="connections tried at once from one address")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
