"""Nothing on the wire changes (issue 13): every byte the server sends in seeded sessions is
compared with the capture the server wrote before the typed-vocabulary rewrite.

Rewritten once since, on purpose (issue 14, fairness version 2): the same sessions, where only
the transcript hashes (``state.transcript``, plant events' ``transcript``, the records'
``fairness.transcript``) and the records' ``fairness`` (``version`` 2, ``previous_transcript``)
differ from the issue 13 capture; its commit message has the count of each. And once more (issue
15, protocol loose ends): a ``room`` after every ``rematch`` status (28 lines in the scenarios, 2
on loopback) and no ``presence``/``room`` to the opponent of a seat resumed over its still-open
connection (one pair gone); nothing else.

The Harness scenarios (``wire_scenarios.py``) cover every ending with each seat winning,
reconnects, replaced and expired seats, rematches, limits and refusals; the loopback test
sends one seeded session through real sockets and the real line framing and compares what a
client reads with the same capture.
"""

from __future__ import annotations

import gzip
import json
import os
import random
from pathlib import Path

import pytest
import pytest_twisted
from support.harness import oracle_message
from support.wire_scenarios import SCENARIOS, load_golden
from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol
from twisted.internet.task import Clock

from mineduel.server.client import LineClient
from mineduel.server.config import Config
from mineduel.server.service import start_server
from mineduel.shared.version import VERSION

GOLDEN = load_golden()
CAPTURED_RELEASE = '"version":"0.1.0"}'  # welcome.server.version when the bytes were captured


def _at_this_release(lines: list[str]) -> list[str]:
    """The captured lines with welcome's release number (shared/version.py) as it is now; every other byte as captured."""
    return [
        line.replace(CAPTURED_RELEASE, f'"version":"{VERSION}"}}', 1) if line.startswith('{"type":"welcome"') else line
        for line in lines
    ]
LOOPBACK = Path(__file__).resolve().parents[1] / "support" / "data" / "wire_golden_loopback.json.gz"


def _first_difference(expected: list[str], got: list[str]) -> str:
    for i, (e, g) in enumerate(zip(expected, got, strict=False)):  # lengths may differ: reported below
        if e != g:
            return f"line {i}:\n  expected {e}\n  got      {g}"
    return f"expected {len(expected)} lines, got {len(got)}"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_server_bytes_are_those_captured_before_the_rewrite(name: str) -> None:
    captured = GOLDEN[name]
    now = SCENARIOS[name]()
    assert sorted(now) == sorted(captured), "a different set of connections was written to"
    for peer, lines_then in captured.items():
        lines = _at_this_release(lines_then)
        assert now[peer] == lines, f"connection {peer}: {_first_difference(lines, now[peer])}"


class _Recording(LineClient):
    """A line client that keeps every raw line exactly as it arrived."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.raw: list[str] = []

    def lineReceived(self, line: bytes) -> None:
        self.raw.append(line.decode("utf-8"))
        super().lineReceived(line)


async def _loopback_session(tmp_path) -> dict[str, list[str]]:
    from twisted.internet import reactor

    clock = Clock()
    clock.advance(1_700_000_000)
    config = Config(host="127.0.0.1", port=0, udp_port=0, db=str(tmp_path / "g.db"), name="Golden",
                    rate_per_second=1e6, rate_burst=1e6)
    handle = start_server(reactor, config, clock=clock, randbytes=random.Random(5).randbytes)
    clock.advance(0)
    try:
        a, b = _Recording("ann/1"), _Recording("bob/1")
        for client in (a, b):
            await connectProtocol(TCP4ClientEndpoint(reactor, "127.0.0.1", handle.port), client)
        await a.hello()
        await b.hello()
        created = await a.request("create_room", name="Ann", client_seed="seed-a")
        await b.request("join", room=created["room"], name="Bob", client_seed="seed-b")
        await a.request("ready")
        await b.request("ready")
        start = await a.wait_for("match_start")
        await b.wait_for("match_start")
        by_seat = {start["seat"]: a, 1 - start["seat"]: b}
        match = handle.core.rooms.rooms[created["room"]].match
        for _ in range(500):
            if match.over:
                break
            await by_seat[match.state.to_move].request(**oracle_message(match.state))
        await by_seat[0].request("rematch")
        await by_seat[1].request("rematch")
        await a.wait_for("match_start")
        await a.request("resign")
        await b.wait_for("match_end")
        await a.request("ping")
        port = f":{handle.port}/"  # the one thing a free port changes: the invite links
        return {who: [line.replace(port, ":PORT/") for line in c.raw] for who, c in (("a", a), ("b", b))}
    finally:
        await handle.stop()


@pytest_twisted.ensureDeferred
async def test_loopback_bytes_are_those_captured_before_the_rewrite(tmp_path) -> None:
    got = await _loopback_session(tmp_path)
    if os.environ.get("MINEDUEL_WRITE_GOLDEN") == "1":  # only with the capture of the old server
        with gzip.GzipFile(LOOPBACK, "wb", mtime=0) as f:
            f.write(json.dumps(got, ensure_ascii=False, indent=0).encode("utf-8"))
    with gzip.open(LOOPBACK, "rt", encoding="utf-8") as f:
        captured = json.load(f)
    for who in ("a", "b"):
        expected = _at_this_release(captured[who])
        assert got[who] == expected, f"client {who}: {_first_difference(expected, got[who])}"
