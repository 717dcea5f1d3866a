"""The server's test double: a recording outbox and scripted clients on ``task.Clock``.

No sockets, no real time: ``ServerCore`` is driven directly, the way ``server/net.py`` drives
it. It lives with the tests, not in the server package, because nothing in production may
depend on it; ``oracle_message`` reads the server's whole truth, which only a test may do.
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any

from twisted.internet.task import Clock

from mineduel.server.config import Config
from mineduel.server.session import ServerCore
from mineduel.server.storage import MemoryStorage
from mineduel.shared.wire import bots, codec
from mineduel.shared.wire.messages import ServerMessage

START = 1_700_000_000.0


class RecordingOutbox:
    """Keeps every line sent to every peer, as bytes exactly as the wire would carry them."""

    def __init__(self) -> None:
        self.lines: dict[int, list[bytes]] = defaultdict(list)
        self.closed: set[int] = set()

    def send(self, peer: int, message: ServerMessage) -> None:
        self.lines[peer].append(codec.encode_message(message))

    def close(self, peer: int) -> None:
        self.closed.add(peer)


class Client:
    """One scripted connection."""

    def __init__(self, harness: Harness, pid: int) -> None:
        self.h = harness
        self.pid = pid
        self.read = 0
        self.token: str | None = None
        self.room: str | None = None
        self._decoded: list[dict[str, Any]] = []

    @property
    def messages(self) -> list[dict[str, Any]]:
        lines = self.h.out.lines[self.pid]
        cache = self._decoded
        if len(cache) < len(lines):  # decode each line once
            cache.extend(codec.decode(line[:-1]) for line in lines[len(cache) :])
        return cache

    def new(self) -> list[dict[str, Any]]:
        """Messages received since the last call."""
        msgs = self.messages
        out = list(msgs[self.read :])
        self.read = len(msgs)
        return out

    def send(self, **msg: Any) -> list[dict[str, Any]]:
        """Send one line and return the replies (after the reactor turn's commit)."""
        self.new()
        self.h.core.line_received(self.pid, codec.encode(msg)[:-1])
        self.h.turn()
        return self.new()

    def send_raw(self, line: bytes) -> list[dict[str, Any]]:
        self.new()
        self.h.core.line_received(self.pid, line)
        self.h.turn()
        return self.new()

    def last(self, kind: str) -> dict[str, Any]:
        for msg in reversed(self.messages):
            if msg["type"] == kind:
                return msg
        raise AssertionError(f"no {kind} message; got {[m['type'] for m in self.messages]}")

    def all(self, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m["type"] == kind]

    def drop(self) -> None:
        """The connection closes (a clean close is detected at once, O12)."""
        self.h.core.connection_lost(self.pid)
        self.h.turn()

    @property
    def seat(self) -> int:
        return self.last("match_start")["seat"]

    @property
    def closed(self) -> bool:
        return self.pid in self.h.out.closed


class Harness:
    """A whole server core on a fake clock."""

    def __init__(self, seed: int = 1, storage: Any = None, clock: Clock | None = None, writer: Any = None, **config: Any) -> None:
        self.clock = clock or Clock()
        if clock is None:
            self.clock.advance(START)
        self.out = RecordingOutbox()
        self.storage = storage if storage is not None else MemoryStorage()
        self.rng = random.Random(seed)
        self.config = Config(**{
            "rate_per_second": 1000.0, "rate_burst": 1000.0, "idle_timeout": 1e9, "ping_interval": 1e9,
            "max_connections_per_address": 10**6,
            # The per-address limits of issue 15 are off unless a test asks for them (its own tests do).
            "address_rate_per_second": 1e9, "address_rate_burst": 1e9, "connection_rate_per_address": 1e9,
            "connection_burst_per_address": 1e9, "max_rooms_per_address": 10**6, "resumes_per_seat": 10**6,
            "max_records_per_address": 10**9, "max_records_per_pair": 10**9,
            **config,
        })
        self.core = ServerCore(
            clock=self.clock,
            randbytes=self.rng.randbytes,
            storage=self.storage,
            outbox=self.out,
            config=self.config,
            writer=writer,
        )
        self.pids = iter(range(1, 10**6))
        self.rooms = self.core.rooms

    def connect(self, address: str = "10.0.0.1", hello: bool = True) -> Client:
        pid = next(self.pids)
        self.core.connection_made(pid, address, "192.168.1.5", 47650)
        client = Client(self, pid)
        if hello:
            reply = client.send(**bots.hello("test/1").wire())
            assert reply[0]["type"] == "welcome", reply
        return client

    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)

    def turn(self) -> None:
        """End the reactor turn: the group commit runs and held messages go out."""
        self.core.commits.flush()

    def pair(self, seeds: tuple[str, str] = ("alpha", "beta")) -> tuple[Client, Client]:
        """Two seated clients in one room (creator first), not ready yet."""
        a = self.connect("10.0.0.1")
        b = self.connect("10.0.0.2")
        created = a.send(type="create_room", name="Ann", client_seed=seeds[0])
        a.token = created[0]["token"]
        a.room = b.room = created[0]["room"]
        joined = b.send(type="join", room=a.room, name="Bob", client_seed=seeds[1])
        b.token = joined[0]["token"]
        return a, b

    def start(self, seeds: tuple[str, str] = ("alpha", "beta")) -> tuple[Client, Client]:
        """Two clients with a match started; returned as (first player, second player)."""
        a, b = self.pair(seeds)
        a.send(type="ready")
        b.send(type="ready")
        first = a if a.last("match_start")["seat"] == 0 else b
        return first, (b if first is a else a)

    def match(self, client: Client) -> Any:  # the server's LiveMatch
        room = self.rooms.rooms[client.room]
        return room.match


def oracle_message(state: Any) -> dict[str, Any]:
    """A move for the seat to move that never loses: explore/plant a cell with no mine at all.

    It reads the server's whole truth, so it exists only for tests and benchmarks that need a
    long match to reach the score ending (O9) quickly.
    """
    from mineduel.shared.rules.bitboard import FULL, cells
    from mineduel.shared.rules.engine import Phase

    seat = state.to_move
    safe = FULL & ~(state.revealed | state.any_marker | state.any_mine)
    if state.phase in (Phase.OPEN_EXPLORE, Phase.EXPLORE):
        cell = next(cells(safe))
        return {"type": "explore", "cell": list(divmod(cell, 8))}
    if state.phase in (Phase.OPEN_PLANT, Phase.PLANT):
        options = safe or state.plantable(seat)
        cell = next(cells(options))
        return {"type": "plant", "cell": list(divmod(cell, 8))}
    return {"type": "end_turn"}


def play_to_score_end(h: Harness, a: Client, b: Client, limit: int = 500) -> None:
    """Drive a started match with :func:`oracle_message` until it ends by score (O9)."""
    by_seat = {a.seat: a, b.seat: b}
    for _ in range(limit):
        state = h.match(a).state
        if state.over:
            return
        client = by_seat[state.to_move]
        reply = client.send(**oracle_message(state))
        assert reply[-1]["type"] == "ok", reply
    raise AssertionError("the match did not end")
