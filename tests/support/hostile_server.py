"""A malicious MINE DUEL server on loopback (issue 15): just enough protocol to seat a real client.

:class:`HostileServer` listens on 127.0.0.1 (Twisted, real sockets) and answers the game client's
requests with well-formed messages (PROTOCOL.md §3–§5): ``hello`` → ``welcome``, ``peek`` →
``room_info``, ``create_room`` → ``room_created`` + ``room`` (an opponent already seated),
``resume`` → ``joined`` + ``room`` (+ ``match_start`` and ``state`` once a match was started with
:meth:`HostileServer.start_match`), ``ping`` → ``pong``, anything else → ``ok``. Between those it
sends whatever a test hands :meth:`HostileServer.send`, byte for byte (so ``1e400``, ``NaN`` or a
line nested 100,000 deep can be sent too). Its clock stands still (``T``): nothing here sleeps.

:func:`baseline` gives one valid message of every server type (as JSON objects), and
:func:`mutations` a bounded, seeded set of variants of it, each changing one field: a wrong type,
a huge, negative or non-finite number, a long string, a wrong list shape.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from twisted.internet import protocol
from twisted.protocols.basic import LineOnlyReceiver

T = 1_700_000_000.0
ROOM = "NYTF23"
TOKEN = "ab" * 32
MATCH = "b048f279829caa65"
COMMIT = "07" * 32
HEX64 = "c5" * 32
INVITE = f"mineduel://127.0.0.1:47650/join/{ROOM}"
EMPTY = ["........"] * 8


def board(**layers: list[str]) -> dict[str, list[str]]:
    return {"numbers": EMPTY, "opened_by": EMPTY, "markers": EMPTY, "my_mines": EMPTY, **layers}


def seat(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "connected": True, "ready": False, "rematch": False, "grace": None,
            "grace_expired": False, **extra}


def baseline() -> dict[str, dict[str, Any]]:
    """One valid message of every server → client type, for the room :data:`ROOM` and match :data:`MATCH`."""
    record = {"format": "mine-duel-record/1", "match_id": MATCH, "variant": "online", "actions": [],
              "fairness": {"version": 2, "mine_commitments": [HEX64]}}
    return {
        "welcome": {"type": "welcome", "protocol": 1, "server": {"name": "hostile", "version": "6.6.6"},
                    "server_time": T, "limits": {"max_line": 8192, "messages_per_second": 20.0, "burst": 40.0,
                                                 "ping_interval": 5.0, "idle_timeout": 15.0},
                    "rules": {"turn_seconds": 20.0, "grace_seconds": 120.0}},
        "error": {"type": "error", "code": "not_your_turn", "message": "wait", "request": "explore"},
        "ok": {"type": "ok", "request": "explore", "seq": 3},
        "ping": {"type": "ping", "server_time": T},
        "pong": {"type": "pong", "server_time": T},
        "room_created": {"type": "room_created", "room": ROOM, "invite": INVITE, "token": TOKEN},
        "room_info": {"type": "room_info", "room": ROOM, "status": "waiting", "seats": 1, "open": True,
                      "commitment": COMMIT},
        "joined": {"type": "joined", "room": ROOM, "resumed": True, "invite": INVITE},
        "room": {"type": "room", "room": ROOM, "status": "playing", "me": seat("Ann"),
                 "opponent": seat("Bob", connected=False, grace={"at": T + 100.0, "left": 100.0}),
                 "match_id": MATCH, "next_commitment": COMMIT, "expires": None, "server_time": T},
        "match_start": {"type": "match_start", "room": ROOM, "match_id": MATCH, "seat": 0, "first": "me",
                        "first_player_rule": "draw", "commitment": COMMIT, "client_seeds": ["ann", "bob"],
                        "my_seed_index": 0, "nonce": 1, "turn_seconds": 20.0, "opponent": {"name": "Bob"},
                        "started": T},
        "state": {"type": "state", "match_id": MATCH, "seq": 3, "seat": 0, "phase": "explore", "to_move": "me",
                  "turn": 1, "quota_left": 1, "deadline": {"at": T + 20.0, "left": 20.0}, "server_time": T,
                  "board": board(numbers=["0.......", *EMPTY[1:]], opened_by=["m.......", *EMPTY[1:]],
                                 my_mines=[*EMPTY[:3], "...x....", *EMPTY[4:]]),
                  "transcript": HEX64,
                  "events": [{"seq": 2, "by": "opponent", "action": "plant", "at": T, "commitment": HEX64,
                              "transcript": HEX64}],
                  "result": None},
        "presence": {"type": "presence", "who": "opponent", "connected": False,
                     "deadline": {"at": T + 120.0, "left": 120.0}, "grace_expired": False, "server_time": T},
        "match_end": {"type": "match_end", "match_id": MATCH, "seat": 0,
                      "result": {"outcome": "win", "winner": "me", "reason": "resign", "scores": None},
                      "reveal": {"mines": [*EMPTY[:3], "...m....", *EMPTY[4:]], "markers": EMPTY,
                                 "marker_correct": EMPTY, "ko_cell": None},
                      "turns": 1, "elapsed": 12.5, "record": record, "next_commitment": COMMIT},
        "rematch": {"type": "rematch", "me": False, "opponent": True},
        "record": {"type": "record", "match_id": MATCH, "record": record},
        "room_closed": {"type": "room_closed", "room": ROOM, "reason": "expired"},
        "server_closing": {"type": "server_closing", "reason": "shutdown"},
    }


def over_state(seq: int = 4) -> dict[str, Any]:
    """The final ``state`` of :data:`MATCH` (the opponent resigned), to send before a ``match_end``."""
    state = copy.deepcopy(baseline()["state"])
    state.update(seq=seq, phase="over", to_move=None, deadline=None, events=[],
                 result={"outcome": "win", "winner": "me", "reason": "resign", "scores": None})
    return state


def line(message: dict[str, Any] | bytes) -> bytes:
    """A message as one line: JSON objects compact, bytes as they are (a hostile line may be anything)."""
    if isinstance(message, bytes):
        return message.rstrip(b"\n") + b"\n"
    return json.dumps(message, separators=(",", ":"), allow_nan=True).encode() + b"\n"


# ----- the server -------------------------------------------------------------------------------------------


class _Connection(LineOnlyReceiver):
    delimiter = b"\n"
    MAX_LENGTH = 1 << 20

    def __init__(self, server: HostileServer) -> None:
        self.server = server
        self.received: list[dict[str, Any]] = []
        self.pongs = 0
        self.open = False

    def connectionMade(self) -> None:
        self.open = True
        self.server.connections.append(self)

    def connectionLost(self, reason: Any = None) -> None:
        self.open = False

    def lineReceived(self, raw: bytes) -> None:
        message = json.loads(raw)
        self.received.append(message)
        self.server.answer(self, message)

    def write(self, message: dict[str, Any] | bytes) -> None:
        if self.transport is not None and self.open:
            self.transport.write(line(message))


@dataclass
class HostileServer:
    """See the module docstring. ``port`` after :meth:`listen`; ``stage`` is ``lobby``, ``match`` or ``over``."""

    connections: list[_Connection] = field(default_factory=list)
    stage: str = "lobby"
    listening: Any = None

    def listen(self, reactor: Any) -> HostileServer:
        self.listening = reactor.listenTCP(0, protocol.Factory.forProtocol(lambda: _Connection(self)),
                                           interface="127.0.0.1")
        return self

    @property
    def port(self) -> int:
        return int(self.listening.getHost().port)

    @property
    def last(self) -> _Connection:
        return self.connections[-1]

    def stop(self) -> Any:
        for conn in self.connections:
            if conn.transport is not None:
                conn.transport.abortConnection()
        return self.listening.stopListening()

    # ----- what it says -------------------------------------------------------------------------------------
    def answer(self, conn: _Connection, msg: dict[str, Any]) -> None:
        kind, rid = msg.get("type"), msg.get("id")
        base = baseline()

        def reply(message: dict[str, Any]) -> None:
            conn.write(message if rid is None else {**message, "id": rid})

        if kind == "hello":
            reply(base["welcome"])
        elif kind == "ping":
            reply(base["pong"])
        elif kind == "pong":
            conn.pongs += 1
        elif kind == "peek":
            reply(base["room_info"])
        elif kind == "create_room":
            reply({"type": "room_created", "room": ROOM, "invite": INVITE, "token": TOKEN})
            conn.write(self.room())
        elif kind == "resume":
            reply(base["joined"])
            conn.write(self.room())
            if self.stage != "lobby":
                conn.write(base["match_start"])
                conn.write(base["state"] if self.stage == "match" else over_state())
            if self.stage == "over":
                conn.write(base["match_end"])
        elif kind in ("bye",):
            pass
        else:
            reply({"type": "ok", "request": str(kind)})

    def room(self) -> dict[str, Any]:
        """The ``room`` for the current stage: both seats connected, the match's id once there is one."""
        status = {"lobby": "waiting", "match": "playing", "over": "finished"}[self.stage]
        return {"type": "room", "room": ROOM, "status": status, "me": seat("Ann"), "opponent": seat("Bob"),
                "match_id": None if self.stage == "lobby" else MATCH, "next_commitment": COMMIT,
                "expires": None if self.stage == "match" else T + 86400.0, "server_time": T}

    def start_match(self) -> None:
        """``match_start`` and the first ``state`` to the seated client (as when both pressed Ready)."""
        base = baseline()
        self.stage = "match"
        self.send(base["match_start"])
        self.send(base["state"])
        self.send(self.room())

    def end_match(self) -> None:
        """The opponent resigns: the final ``state`` and ``match_end`` (with :func:`baseline`'s record)."""
        self.stage = "over"
        self.send(over_state())
        self.send(baseline()["match_end"])

    def send(self, message: dict[str, Any] | bytes) -> None:
        """Any line to the latest connection."""
        self.last.write(message)

    def ping(self) -> None:
        self.send({"type": "ping", "server_time": T})


# ----- fuzzed variants -------------------------------------------------------------------------------------

_HUGE = (1.7e308, -1.7e308, 10**30, -(10**30), 2**63, -1, -1.5, 0, 1e12 + 1)
_WEIRD = ("two", "", "x" * 5000, None, True, [], [1], {}, {"a": [1]}, "\u0000", 3.5)


@dataclass(frozen=True)
class Variant:
    """One hostile message: the type it came from, the field changed (a path), how, and the line."""

    kind: str
    path: str
    how: str
    raw: bytes


def _paths(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            if prefix == "" and key == "type":
                continue
            path = f"{prefix}.{key}" if prefix else key
            yield path, inner
            yield from _paths(inner, path)
    elif isinstance(value, list):
        for i, inner in enumerate(value[:2]):
            path = f"{prefix}[{i}]"
            yield path, inner
            yield from _paths(inner, path)


def _set(message: dict[str, Any], path: str, new: Any) -> dict[str, Any]:
    out = copy.deepcopy(message)
    parts = path.replace("[", ".[").split(".")
    target: Any = out
    for part in parts[:-1]:
        target = target[int(part[1:-1])] if part.startswith("[") else target[part]
    last = parts[-1]
    if last.startswith("["):
        target[int(last[1:-1])] = new
    else:
        target[last] = new
    return out


def _replacements(value: Any) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = [(f"type:{w!r}"[:40], w) for w in _WEIRD]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        out += [(f"number:{n!r}", n) for n in _HUGE]
    if isinstance(value, str):
        out += [("longer", value + "z" * 70), ("upper", value.upper() + "G"), ("control", value + "\x07")]
    if isinstance(value, list):
        out += [("shorter", value[:-1]), ("longer", [*value, value[-1] if value else 1]), ("nested", [value])]
    return out


_RAW_NUMBERS = (b"1e400", b"-1e400", b"NaN", b"Infinity", b"-Infinity", b"1" * 5000)


def mutations(seed: int = 15, per_type: int = 12) -> list[Variant]:
    """Up to ``per_type`` seeded variants of each :func:`baseline` message, one field changed in each;
    some numbers written as raw JSON text the standard encoder would refuse (``1e400``, ``NaN``, 5000 digits)."""
    rng = random.Random(seed)
    out: list[Variant] = []
    for kind, message in baseline().items():
        candidates: list[Variant] = []
        for path, value in _paths(message):
            for how, new in _replacements(value):
                candidates.append(Variant(kind, path, how, line(_set(message, path, new))))
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                marker = "__RAW__"
                text = line(_set(message, path, marker))
                for raw in _RAW_NUMBERS:
                    candidates.append(Variant(kind, path, f"raw:{raw[:12].decode()}",
                                              text.replace(f'"{marker}"'.encode(), raw)))
        out += rng.sample(candidates, min(per_type, len(candidates)))
    return out


def all_mutations() -> list[Variant]:
    """Every variant :func:`mutations` samples from (for the decoder alone: fast)."""
    return mutations(per_type=10**9)
