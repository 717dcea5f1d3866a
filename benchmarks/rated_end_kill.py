"""SIGKILL a real server around a rated match's end, again and again (red-team review of issue 20).

Each round starts ``mine-duel-server`` on a fresh SQLite file, identifies two players from two
loopback addresses, starts a rated room's match, sends ``resign`` and kills the server 0–8 ms
later; then it reads the database: the end and both ratings must be there together or not at all
(PROTOCOL.md §17: one transaction). Prints the outcomes seen::

    .venv/bin/python benchmarks/rated_end_kill.py --rounds 24
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def key(n: int) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(f"kill{n}".encode()).digest()).rstrip(b"=").decode()


async def connect(port: int, source: str) -> Stream:
    for _ in range(100):
        try:
            return await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
        except OSError:
            await asyncio.sleep(0.05)
    raise ConnectionError("the server did not start")


async def until(reader: asyncio.StreamReader, kind: str) -> dict[str, Any]:
    while True:
        raw = await reader.readline()
        if not raw:
            raise ConnectionError("closed")
        msg: dict[str, Any] = json.loads(raw)
        if msg.get("type") == kind:
            return msg


def send(writer: asyncio.StreamWriter, **msg: Any) -> None:
    writer.write(json.dumps(msg).encode() + b"\n")


async def round_once(db: str, delay: float) -> tuple[tuple[int, ...], int, int]:
    port = free_port()
    exe = Path(sys.executable).with_name("mine-duel-server")
    proc = subprocess.Popen([str(exe), "--host", "127.0.0.1", "--port", str(port), "--no-discovery", "--db", db,
                             "--log-level", "error"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    (ra, wa), (rb, wb) = await connect(port, "127.0.0.2"), await connect(port, "127.0.0.3")
    for (r, w), n, name in (((ra, wa), 1, "Ann"), ((rb, wb), 2, "Bob")):
        send(w, type="hello", protocol=1)
        await until(r, "welcome")
        send(w, type="identify", key=key(n), name=name)
        await until(r, "ok")
    send(wa, type="create_room", rated=True, client_seed="a")
    room = (await until(ra, "room_created"))["room"]
    send(wb, type="join", room=room, client_seed="b")
    await until(rb, "joined")
    send(wa, type="ready")
    send(wb, type="ready")
    await until(ra, "match_start")
    send(wa, type="resign")
    await asyncio.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    for w in (wa, wb):
        w.close()
    con = sqlite3.connect(db)
    try:
        games = tuple(g for (g,) in con.execute("SELECT games FROM players ORDER BY player"))
        rated = int(con.execute("SELECT COUNT(*) FROM rated_results").fetchone()[0])
        results = int(con.execute("SELECT COUNT(*) FROM results").fetchone()[0])
    finally:
        con.close()
    return games, rated, results


async def main_async(rounds: int) -> None:
    folder = Path(tempfile.mkdtemp())
    seen: Counter[tuple[tuple[int, ...], int, int]] = Counter()
    for i in range(rounds):
        seen[await round_once(str(folder / f"kill{i}.db"), (i % 12) * 0.0007)] += 1
    whole = {((0, 0), 0, 0), ((1, 1), 2, 1)}
    print(f"{rounds} kills around a rated end (games per player, rated_results rows, results rows): count")
    for outcome, count in sorted(seen.items()):
        print(f"  {outcome}: {count}{'' if outcome in whole else '  <- HALF-APPLIED'}")


def main() -> None:
    parser = argparse.ArgumentParser(description="SIGKILL a real server around a rated end")
    parser.add_argument("--rounds", type=int, default=24)
    asyncio.run(main_async(parser.parse_args().rounds))


if __name__ == "__main__":
    main()
