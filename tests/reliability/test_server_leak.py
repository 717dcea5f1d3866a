"""The leak audit: no message tells a seat its opponent's hidden information (V2, V4, V5, R1, R3b, O16).

Hidden from a seat, until its match ends: the opponent's mine cells (and which overlapping cells
are whose), the match's server seed, stream signature and mine salts; always: the next match's
server seed (only its commitment is public), the opponent's session token and every token hash.
Everything else a seat receives is public by PROTOCOL.md §5.

Every server is an in-process ``ServerCore`` on ``task.Clock`` (``tests/support/harness.py``'s Harness).
Four kinds of property test, all derandomized and bounded (``reliability.scaled``):

1. **Tour** — a whole room's life per example (waiting, ready, every phase, O4/O5 timeouts and
   auto-moves, drops, silent drops, a failed commit, grace expiry, six matches ending in the six
   ways, rematches, a leave and a new opponent, expiry, shutdown) plus strangers and errors of every
   kind. :class:`Audit` checks every line sent to every connection against the server's own
   objects: secrets, tokens, allowed fields, who may receive a view. Each example must see all
   seventeen message types, every listed state and every error code, so the audit cannot
   silently miss one.
2. **Non-interference** — two worlds fed the same inputs that differ only in the cells of the
   opponent's plants (:class:`Twin`). The bytes sent to the observing seat (and to a stranger)
   must be identical before the end; the only values replaced are mine commitments and
   transcripts that are each world's genuine salted hash of a different cell (checked).
3. **Probe sweep** — at every kind of decision point, every explore/plant/flag/unflag on all 64
   cells (and end_turn, resign, stale/wrong ids) gets the same reply in both worlds, except the
   KO itself (and a revealed number that B4 makes differ: numbers are public).
4. **Strangers** — a connection with guessed codes, tokens and match ids gets byte-identical
   answers whatever the running match does: room_info and refusals only.
5. **Planted leaks** — the server patched to leak in one way each (a plant's cell, an overlap in
   the numbers, an overlap's timing, seeds, token hashes, a refusal's wording, a match id to a
   stranger) must be caught, so none of the checks above is vacuous.

Figures (``reliability.record_figure``): messages checked, matches, message types covered and
leaks found (counted, not only asserted: a failing run still reports them).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import random
import re
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import Phase as Stage
from hypothesis import strategies as st
from support import view_oracle
from support.harness import Client, Harness, oracle_message
from support.reliability import record_figure, scaled
from support.strategies import REAL_CODE, resolve_guess, stranger_requests

from mineduel.server import presenter
from mineduel.server.lobby import Lobby
from mineduel.server.match import LiveMatch, MatchHistory
from mineduel.server.rooms import Room, Rooms
from mineduel.shared.fairness import commitments as fairness
from mineduel.shared.rules.bitboard import FULL, NEIGHBOURS, cells
from mineduel.shared.rules.engine import ActionType, GameState, Phase
from mineduel.shared.wire import bots, codec
from mineduel.shared.wire.codec import ProtocolError
from mineduel.shared.wire.names import ErrorCode, ServerType

pytestmark = pytest.mark.reliability

# ----- what PROTOCOL.md §5 lets each message carry --------------------------------------------------
FIELDS: dict[str, frozenset[str]] = {
    kind: frozenset(keys.split())
    for kind, keys in {
        "welcome": "type protocol server server_time limits rules id",
        "ping": "type server_time",
        "pong": "type server_time id",
        "ok": "type request id seq",
        "error": "type code message request id",
        "room_created": "type room invite token id",
        "joined": "type room resumed invite token id",
        "room_info": "type room status seats open commitment id",
        "room": "type room status me opponent match_id next_commitment expires server_time spectators rated",
        "match_start": "type room match_id seat first first_player_rule commitment client_seeds my_seed_index "
        "nonce turn_seconds opponent started",
        "state": "type match_id seq seat phase to_move turn quota_left deadline server_time board transcript events result",
        "presence": "type who connected deadline grace_expired server_time",
        "match_end": "type match_id seat result reveal turns elapsed record next_commitment rating",
        "rematch": "type me opponent",
        "record": "type match_id record id",
        "room_closed": "type room reason",
        "server_closing": "type reason",
        # PROTOCOL.md §16; its own leak property: tests/reliability/test_spectator_leak.py.
        "spectate_state": "type room status spectators players match_id number seq phase to_move turn deadline "
        "server_time board result reveal",
        "live_rooms": "type rooms id",  # §16: listed rooms only (tests/server/test_spectators.py)
        # PROTOCOL.md §17: players, the quick match, ratings; their leak rules: tests/server/test_quick_match.py.
        "player": "type player name tag display rating games wins losses draws",
        "queue": "type status since server_time reason",
        "matched": "type room token seat opponent rated confirm",
        "profile": "type player display rating games wins losses draws recent id",
        "leaderboard": "type top me id",
        # PROTOCOL.md §18: several nodes; only a cluster sends it (tests/server/test_cluster_node.py).
        "moved": "type room host port tls pin request id",
    }.items()
}
MESSAGE_TYPES = frozenset(t.value for t in ServerType)
assert frozenset(FIELDS) == MESSAGE_TYPES, "a new server message type needs its audit fields"
SPECTATOR_TYPES = frozenset({ServerType.SPECTATE_STATE.value, ServerType.LIVE_ROOMS.value}) | frozenset({
    ServerType.PLAYER.value, ServerType.QUEUE.value, ServerType.MATCHED.value, ServerType.PROFILE.value,
    ServerType.LEADERBOARD.value,  # §17: only after identify, which the tour and the twins never send
    ServerType.MOVED.value,  # §18: only from a node of a cluster, which the tour and the twins never run on
})
SPECTATOR_ERRORS = frozenset({ErrorCode.SPECTATOR.value, ErrorCode.SPECTATING_OFF.value, ErrorCode.TOO_MANY_SPECTATORS.value})
"""What only spectators (and whoever asks ``live_rooms``) get (PROTOCOL.md §16): the tour and the twins
seat players and never ask, so their audit is tests/reliability/test_spectator_leak.py and tests/server/test_spectators.py."""
BOARD_LAYERS = frozenset({"numbers", "opened_by", "markers", "my_mines"})  # no layer for the opponent's mines
EVENT_FIELDS = frozenset({"seq", "by", "action", "cell", "at", "auto", "commitment", "transcript"})
SEAT_FIELDS = frozenset({"name", "connected", "ready", "rematch", "grace", "grace_expired"})
RESULT_FIELDS = frozenset({"outcome", "winner", "reason", "scores"})
DEADLINE_FIELDS = frozenset({"at", "left"})

STRANGER_TYPES = frozenset({"welcome", "ping", "pong", "room_info", "error", "server_closing"})
"""All a connection that never held a seat may receive."""
STRANGER_ERRORS = frozenset({
    "line_too_long", "rate_limited", "bad_json", "bad_request", "unknown_type", "hello_required",
    "unsupported_protocol", "already_greeted", "too_many_attempts", "room_not_found", "bad_token",
    "room_full", "not_seated", "too_many_rooms", "not_found", "not_finished", "too_many_connections",
    "idle", "storage_unavailable", "internal_error",
})
SEAT_ONLY_TYPES = frozenset({"room", "match_start", "state", "presence", "match_end", "rematch", "room_closed"})

TOUR_STATES = frozenset({
    "waiting", "ready", "open_explore", "open_plant", "explore", "plant", "end_wait", "timeout",
    "auto_move", "opponent_away", "grace_expired", "after_end", "rematch_match", "new_opponent", "stranger",
})
"""States the tour must audit messages in (labels computed by :meth:`Audit.room_labels`)."""
PLAYER_ERRORS = frozenset({
    ErrorCode.IDENTIFY_REQUIRED.value, ErrorCode.ALREADY_IDENTIFIED.value, ErrorCode.BAD_NAME.value,
    ErrorCode.TOO_MANY_PLAYERS.value, ErrorCode.ALREADY_QUEUED.value, ErrorCode.NOT_QUEUED.value,
})
"""§17's codes: provoked by tests/server/test_players.py and tests/server/test_quick_match.py."""
TOUR_ERRORS = frozenset(code.value for code in ErrorCode) - SPECTATOR_ERRORS - PLAYER_ERRORS
"""Every error code: the tour provokes each one (storage ones with MemoryStorage.fail_next)."""

CELL_KINDS = ("explore", "plant", "flag", "unflag")
HEX_RUN = re.compile(rb"[0-9a-f]{64,}")
PUBLISHED = (b'{"type":"match_end"', b'{"type":"record"')
TYPE_PREFIX = re.compile(rb'\{"type":"(\w+)"')
FAST = {"rate_per_second": 1000.0, "rate_burst": 10.0**6, "idle_timeout": 1e9, "ping_interval": 1e9}
"""Harness settings for the twin worlds: no limits, heartbeats or idle drops in the way."""

HYPOTHESIS: dict[str, Any] = {
    "deadline": None, "derandomize": True, "suppress_health_check": [HealthCheck.too_slow],
    "phases": (Stage.explicit, Stage.generate),  # the input is a seed: shrinking it means nothing
}


def _cell(index: int) -> list[int]:
    return [index // 8, index % 8]


def _mask(rows: list[str], char: str) -> int:
    return sum(1 << (r * 8 + c) for r, row in enumerate(rows) for c, ch in enumerate(row) if ch == char)


def _zone(mask: int) -> int:
    """``mask`` and every neighbour of it (B2): where a mine difference shows in a number (B4)."""
    out = mask
    for c in cells(mask):
        out |= NEIGHBOURS[c]
    return out


# ----- figures ----------------------------------------------------------------------------------------
@dataclass
class Tally:
    """What one test checked, for docs/RELIABILITY.md; leaks are kept as text for the failure message."""

    messages: int = 0
    matches: int = 0
    types: set[str] = field(default_factory=set)
    leaks: list[str] = field(default_factory=list)

    def record(self) -> None:
        record_figure("leak", "messages checked", self.messages)
        record_figure("leak", "matches", self.matches)
        record_figure("leak", "message types covered", len(self.types), "max")
        record_figure("leak", "leaks found", len(set(self.leaks)))


@contextmanager
def figures(tally: Tally) -> Iterator[Tally]:
    """Record the figures whatever happens: a failing audit still reports what it found."""
    try:
        yield tally
    finally:
        tally.record()


# ----- the audit: every line against the server's own objects ----------------------------------------
class Audit:
    """Checks every line a harness sends, after each step, against what the server really holds.

    Secrets are read from the rooms and matches themselves (server seeds, next seeds, stream
    signatures, salts, token hashes); tokens are learnt where they are issued (``room_created`` /
    ``joined`` to the connection whose seat has that token's hash) and may appear nowhere else.
    """

    def __init__(self, h: Harness, tally: Tally) -> None:
        self.h = h
        self.tally = tally
        self.read: dict[int, int] = defaultdict(int)
        self.owner: dict[bytes, str | None] = {}  # secret -> the match whose end may publish it (None: never)
        self.matches: dict[str, tuple[str, LiveMatch]] = {}
        self.rooms: dict[str, Room] = {}
        self.salts_seen: dict[str, int] = {}
        self.token_hashes: set[bytes] = set()
        self.tokens: dict[bytes, tuple[int, int]] = {}  # token -> (pid, line) where it was issued
        self.held: dict[int, set[tuple[str, int]]] = defaultdict(set)  # pid -> (room, seat id) it held
        self.strangers: set[int] = set()
        self.main_room: str | None = None
        self.labels: set[str] = set()
        self.coverage: dict[str, set[str]] = defaultdict(set)  # state label -> message types seen
        self.errors: set[str] = set()
        self.seat_errors: set[str] = set()
        self._mark: tuple[str, int] | None = None
        self._actor: int | None = None

    # ----- registry ------------------------------------------------------------------------------
    def register(self) -> None:
        for code, room in self.h.rooms.rooms.items():
            self.rooms[code] = room
            self.owner.setdefault(room.next_seed.encode(), None)
            for seat in room.seats:
                self.token_hashes.add(seat.token_hash.encode())
                if seat.peer is not None:
                    self.held[seat.peer].add((code, seat.sid))
            match = room.match
            if match is None:
                continue
            if match.id not in self.matches:
                self.tally.matches += 1
                self.owner[match.server_seed.encode()] = match.id
                self.owner[match.signature.encode()] = match.id
                self.salts_seen[match.id] = 0
            self.matches[match.id] = (code, match)  # a reload after a failed commit makes a new object
            if match.history.plants > self.salts_seen[match.id]:
                for salt in match.salts[self.salts_seen[match.id] :]:
                    self.owner[salt.encode()] = match.id
                self.salts_seen[match.id] = match.history.plants

    # ----- steps -----------------------------------------------------------------------------------
    def begin(self, actor: int | None) -> None:
        """A step starts: note the main room's state (its labels) and the match's length."""
        self._actor = actor
        room = self.h.rooms.rooms.get(self.main_room) if self.main_room else None
        self.labels = self.room_labels(room)
        if actor in self.strangers:
            self.labels.add("stranger")
        match = room.match if room is not None else None
        self._mark = (match.id, match.seq) if match is not None else None

    @staticmethod
    def room_labels(room: Room | None) -> set[str]:
        if room is None:
            return {"no_room"}
        match = room.match
        if match is None:
            if len(room.seats) < 2:
                return {"waiting"}
            return {"ready"} if any(s.ready for s in room.seats) else {"seated"}
        if match.over:
            return {"after_end"}
        labels = {match.state.phase.value}
        pair = room.match_seats()
        if pair is not None and any(s.peer is None for s in pair):
            labels.add("opponent_away")
        if any(s.expired is not None for s in room.seats):
            labels.add("grace_expired")
        if match.first_rule == "swap":
            labels.add("rematch_match")
        if max(match.players) >= 2:
            labels.add("new_opponent")
        return labels

    def check(self) -> None:
        """Check every line sent since the last check (call after every step)."""
        self.register()
        room = self.h.rooms.rooms.get(self.main_room) if self.main_room else None
        self.labels |= self.room_labels(room)
        if room is not None and room.match is not None and self._mark is not None and room.match.id == self._mark[0]:
            for entry in room.match.history[self._mark[1] :]:
                if entry["type"] == "timeout":
                    self.labels.add("timeout")
                if entry.get("auto") and entry["type"] in ("explore", "plant"):
                    self.labels.add("auto_move")
        new: list[tuple[int, int, bytes]] = []
        for pid, lines in self.h.out.lines.items():
            start = self.read[pid]
            new.extend((pid, i, lines[i]) for i in range(start, len(lines)))
            self.read[pid] = len(lines)
        decoded = [(pid, i, line, codec.decode(line[:-1])) for pid, i, line in new]
        for pid, i, _, msg in decoded:  # first pass: tokens issued in this step
            if msg.get("type") in ("room_created", "joined") and "token" in msg:
                self._issued(pid, i, msg)
        for pid, i, line, msg in decoded:
            self._check_line(pid, i, line, msg)

    def leak(self, what: str, pid: int, line: bytes) -> None:
        self.tally.leaks.append(f"{what} -> peer {pid}: {line[:300]!r}")

    def _issued(self, pid: int, i: int, msg: dict[str, Any]) -> None:
        token = str(msg["token"]).encode()
        digest = hashlib.sha256(token).hexdigest().encode()
        found = self.h.rooms.peer_seat.get(pid)
        if found is None or found[1].token_hash.encode() != digest or found[0].code != msg.get("room"):
            self.leak("a token that is not the recipient's own seat's", pid, json.dumps(msg).encode())
        if msg["type"] == "joined" and msg.get("resumed") is not False:
            self.leak("a token in a resume reply", pid, json.dumps(msg).encode())
        if token in self.tokens:
            self.leak("the same token issued twice", pid, json.dumps(msg).encode())
        self.tokens[token] = (pid, i)

    def _check_line(self, pid: int, i: int, line: bytes, msg: dict[str, Any]) -> None:
        self.tally.messages += 1
        kind = msg.get("type")
        allowed = FIELDS.get(kind)  # type: ignore[arg-type]
        if allowed is None:
            self.leak("an unknown message type", pid, line)
            return
        self.tally.types.add(kind)  # type: ignore[arg-type]
        for label in self.labels:
            self.coverage[label].add(kind)  # type: ignore[arg-type]
        if set(msg) - allowed:
            self.leak(f"fields outside PROTOCOL.md §5: {sorted(set(msg) - allowed)}", pid, line)
        # secrets: a match's seed, signature and salts only in its own match_end/record, after its end
        publish = None
        if kind in ("match_end", "record"):
            entry = self.matches.get(msg.get("match_id"))  # type: ignore[arg-type]
            if entry is None or not entry[1].over:
                self.leak("a record or reveal of a match that is not over", pid, line)
            else:
                publish = entry[1].id
        for secret, owner in self.owner.items():
            if secret in line and (owner is None or owner != publish):
                self.leak(f"a secret of match {owner} (seed, signature, salt or next seed)", pid, line)
        for token_hash in self.token_hashes:
            if token_hash in line:
                self.leak("a token hash", pid, line)
        for run in HEX_RUN.findall(line):
            for start in range(len(run) - 63):
                piece = run[start : start + 64]
                if hashlib.sha256(piece).hexdigest().encode() in self.token_hashes and self.tokens.get(piece) != (pid, i):
                    self.leak("a session token outside its own room_created/joined", pid, line)
        if kind == "error":
            self.errors.add(msg["code"])
            if self.held.get(pid):
                self.seat_errors.add(msg["code"])
        if pid in self.strangers:
            self._check_stranger(pid, line, msg)
        if kind in SEAT_ONLY_TYPES:
            self._check_recipient(pid, line, msg)
        if kind == "room_info":
            self._check_room_info(pid, line, msg)
        elif kind == "state":
            self._check_state(pid, line, msg)
        elif kind == "room":
            for side in ("me", "opponent"):
                if msg.get(side) is not None and set(msg[side]) - SEAT_FIELDS:
                    self.leak(f"room.{side} fields outside §5", pid, line)
        elif kind == "match_start" and set(msg.get("opponent", {})) - {"name"}:
            self.leak("match_start.opponent fields outside §5", pid, line)

    def _check_stranger(self, pid: int, line: bytes, msg: dict[str, Any]) -> None:
        if msg["type"] not in STRANGER_TYPES:
            self.leak("a stranger got more than room_info", pid, line)
        if msg["type"] == "error" and msg["code"] not in STRANGER_ERRORS:
            self.leak("a stranger got a seat's error", pid, line)
        for match_id in self.matches:
            if match_id.encode() in line:
                self.leak("a match id to a stranger", pid, line)

    def _check_recipient(self, pid: int, line: bytes, msg: dict[str, Any]) -> None:
        held = self.held.get(pid, set())
        if not held:
            self.leak("a seat's message to a connection that never held a seat", pid, line)
            return
        if "room" in msg and not any(code == msg["room"] for code, _ in held):
            self.leak("another room's message", pid, line)
        if msg["type"] in ("state", "match_start", "match_end"):
            entry = self.matches.get(msg["match_id"])
            if entry is None:
                self.leak("a view of an unknown match", pid, line)
                return
            code, match = entry
            seat = msg["seat"]
            if seat not in (0, 1) or (code, match.players[seat]) not in held:
                self.leak("another seat's view", pid, line)

    def _check_room_info(self, pid: int, line: bytes, msg: dict[str, Any]) -> None:
        room = self.rooms.get(msg.get("room"))  # type: ignore[arg-type]
        if room is None:
            self.leak("room_info of an unknown room", pid, line)
            return
        expected = {
            "room": room.code, "status": room.status, "seats": len(room.seats), "open": len(room.seats) < 2,
            "commitment": fairness.commitment(room.next_seed),
        }
        if {k: msg.get(k) for k in expected} != expected:
            self.leak("room_info that is not the room's public summary", pid, line)

    def _check_state(self, pid: int, line: bytes, msg: dict[str, Any]) -> None:
        """V4 against the truth: own mines only, no cell of an opponent plant, no explored opponent mine."""
        entry = self.matches.get(msg["match_id"])
        if entry is None:
            return
        truth = entry[1].state
        me = msg["seat"]
        board = msg["board"]
        if set(board) != BOARD_LAYERS:
            self.leak("a board layer outside §5", pid, line)
        if msg["result"] is not None:
            return
        if _mask(board["my_mines"], "x") & ~truth.mines[me]:
            self.leak("my_mines shows a mine that is not the seat's own", pid, line)
        if set(msg["deadline"] or {}) - DEADLINE_FIELDS:
            self.leak("deadline fields outside §5", pid, line)
        for event in msg["events"]:
            if set(event) - EVENT_FIELDS:
                self.leak("event fields outside §5", pid, line)
            if event["by"] == "opponent" and event["action"] == "plant" and "cell" in event:
                self.leak("the cell of an opponent's plant (R3b)", pid, line)
            if event["action"] == "explore" and "cell" in event:
                cell = event["cell"][0] * 8 + event["cell"][1]
                owner = me if event["by"] == "opponent" else 1 - me
                if truth.mines[owner] >> cell & 1 and truth.ko_cell != cell:
                    self.leak("an explore event on a hidden mine", pid, line)


# ----- a world: one in-process server and named people --------------------------------------------
class World:
    """A Harness with named people (each may use several connections), audited after every step.

    Connections the server closes are closed for real afterwards (``connection_lost``), as a
    socket would be. With ``heartbeats`` the server's loops run (pings, clock, sweep) and every
    live person who is not ``silent`` answers with a pong after each slice of clock time.
    """

    def __init__(self, seed: int, tally: Tally, *, heartbeats: bool = False, **config: Any) -> None:
        self.h = Harness(seed=seed, **config)  # MemoryStorage: ``fail_next`` makes a commit fail
        self.audit = Audit(self.h, tally)
        self.people: dict[str, Client] = {}
        self.pids: dict[str, list[int]] = defaultdict(list)
        self.tokens: dict[str, str] = {}
        self.sids: dict[str, int] = {}
        self.addresses: dict[str, str] = {}
        self.heartbeats = heartbeats
        self.silent: set[str] = set()
        self.lost: set[int] = set()
        self.seen: dict[int, int] = defaultdict(int)
        if heartbeats:
            self.h.core.start()

    # ----- people ----------------------------------------------------------------------------------
    def connect(self, name: str, address: str, *, hello: bool = True, stranger: bool = False) -> Client:
        self.audit.begin(None)
        client = self.h.connect(address, hello=False)
        if stranger:
            self.audit.strangers.add(client.pid)
        self.people[name] = client
        self.pids[name].append(client.pid)
        self.addresses[name] = address
        if hello:
            client.send(**bots.hello("leak-audit/1").wire())
        self.settle()
        return client

    def send(self, name: str, /, **msg: Any) -> list[dict[str, Any]]:
        client = self.people[name]
        self.audit.begin(client.pid)
        replies = client.send(**msg)
        self.settle()
        for reply in replies:
            if reply["type"] in ("room_created", "joined") and "token" in reply:
                self.tokens[name] = reply["token"]
                self.sids[name] = self.h.rooms.peer_seat[client.pid][1].sid
                if reply["type"] == "room_created" and self.audit.main_room is None:
                    self.audit.main_room = reply["room"]
        return replies

    def send_raw(self, name: str, line: bytes) -> list[dict[str, Any]]:
        client = self.people[name]
        self.audit.begin(client.pid)
        replies = client.send_raw(line)
        self.settle()
        return replies

    def drop(self, name: str) -> None:
        client = self.people[name]
        self.audit.begin(client.pid)
        self.lost.add(client.pid)
        client.drop()
        self.settle()

    def resume(self, name: str) -> list[dict[str, Any]]:
        """``name`` comes back on a new connection with its token (O12)."""
        self.connect(name, self.addresses[name])
        return self.send(name, type="resume", room=self.audit.main_room, token=self.tokens[name])

    def connected(self, name: str) -> bool:
        client = self.people.get(name)
        return client is not None and client.pid in self.h.core.conns and client.pid not in self.h.out.closed

    def seated(self, name: str) -> bool:
        """``name``'s current connection holds its seat (a refused resume leaves it connected, unseated)."""
        client = self.people.get(name)
        return client is not None and self.connected(name) and client.pid in self.h.rooms.peer_seat

    # ----- time ----------------------------------------------------------------------------------------
    def advance(self, seconds: float) -> None:
        self.audit.begin(None)
        left = seconds
        while left > 1e-9:
            step = min(left, 10.0) if self.heartbeats else left
            self.h.advance(step)
            left -= step
            if self.heartbeats:
                for name, client in self.people.items():
                    if name not in self.silent and self.connected(name):
                        self.h.core.line_received(client.pid, b'{"type":"pong"}')
                self.h.turn()
            self._close_transports()
        self.settle()

    def _close_transports(self) -> None:
        while True:
            closed = self.h.out.closed - self.lost
            if not closed:
                return
            for pid in sorted(closed):
                self.lost.add(pid)
                self.h.core.connection_lost(pid)
            self.h.turn()

    def settle(self) -> None:
        self._close_transports()
        self.audit.check()

    # ----- the main room's match --------------------------------------------------------------------
    @property
    def room(self) -> Room:
        assert self.audit.main_room is not None
        return self.h.rooms.rooms[self.audit.main_room]

    @property
    def match(self) -> LiveMatch:
        match = self.room.match
        assert match is not None
        return match

    def seat(self, name: str) -> int:
        return self.match.record_seat(self.sids[name])

    def new_lines(self, name: str) -> list[tuple[int, bytes]]:
        """Lines sent to ``name`` (any of its connections) since the last call."""
        out = []
        for pid in self.pids[name]:
            lines = self.h.out.lines[pid]
            out.extend((pid, line) for line in lines[self.seen[pid] :])
            self.seen[pid] = len(lines)
        return out

    def fork(self) -> World:
        """An independent copy at this very point (the recorded lines are shared up to here, then copied)."""
        memo: dict[int, Any] = {id(self.audit.tally): self.audit.tally}
        memo[id(self.h.out.lines)] = defaultdict(list, {k: list(v) for k, v in self.h.out.lines.items()})
        for client in self.people.values():
            memo[id(client._decoded)] = list(client._decoded)  # decoded once, never changed
        rng = random.Random()
        rng.setstate(self.h.rng.getstate())  # far cheaper than deep-copying 625 integers
        memo[id(self.h.rng)] = rng
        twin: World = copy.deepcopy(self, memo)
        # task.Clock cancels a call with its list's (built-in, so not copied) ``remove``: rebind it.
        calls = twin.h.clock.calls
        for call in calls:
            if getattr(call.canceller, "__self__", None) is self.h.clock.calls:
                call.canceller = calls.remove
        return twin


def _safe_cells(state: GameState) -> int:
    return FULL & ~(state.revealed | state.any_marker | state.any_mine)


def _random_move(state: GameState, rng: random.Random, *, ko: bool = False) -> dict[str, Any]:
    """A legal move for the seat to move; it never explores the opponent's mine unless ``ko``."""
    seat = state.to_move
    assert seat is not None
    hidden = state.mines[1 - seat]
    options = [a for a in state.legal_actions() if ko or a.type is not ActionType.EXPLORE or not hidden >> a.cell & 1]  # type: ignore[operator]
    main = [a for a in options if a.type in (ActionType.EXPLORE, ActionType.PLANT, ActionType.END_TURN)]
    pool = main if main and rng.random() < 0.8 else options
    if not pool:
        return {"type": "end_turn"}
    action = rng.choice(pool)
    msg: dict[str, Any] = {"type": action.type.value}
    if action.cell is not None:
        msg["cell"] = _cell(action.cell)
    return msg


# ----- 1. the tour ------------------------------------------------------------------------------------
TOUR_CONFIG: dict[str, Any] = {
    "ping_interval": 5.0, "idle_timeout": 60.0, "room_ttl": 900.0, "result_ttl": 900.0, "sweep_interval": 60.0,
    "max_rooms": 2, "max_connections_per_address": 16, "rate_per_second": 1000.0, "rate_burst": 1000.0,
    "code_failures": 10, "code_failure_window": 60.0,
}
ENDINGS = ("ko", "resign", "disconnect", "expired_first", "void", "score")


class Tour:
    """One room's whole life, driven by ``rng``; every line to every connection is audited."""

    def __init__(self, seed: int, tally: Tally) -> None:
        self.rng = random.Random(seed)
        self.w = World(seed, tally, heartbeats=True, **TOUR_CONFIG)
        self.players: tuple[str, str] = ("ann", "bob")

    # ----- connection-level errors and strangers -------------------------------------------------------
    def strangers(self) -> None:
        """Connections without a seat cause every framing, greeting and limit error (PROTOCOL.md §9)."""
        w = self.w
        w.connect("eve", "10.0.0.9", stranger=True)
        w.send("eve", type="ping", id=7)
        w.send_raw("eve", b"{not json")
        w.send_raw("eve", b'{"type":5}')
        w.send("eve", type="teleport")
        w.send("eve", **bots.hello("again").wire())
        w.send("eve", type="peek", room="ZZZZZZ")
        w.send("eve", type="get_record", match_id="0123456789abcdef")
        w.send("eve", type="ready")
        w.connect("early", "10.0.0.8", hello=False, stranger=True)
        w.send("early", type="peek", room="ZZZZZZ")  # hello_required
        w.send("early", type="hello", protocol=2, client="old")  # unsupported_protocol, closed
        w.connect("long", "10.0.0.10", stranger=True)
        w.send_raw("long", b'{"type":"ping","pad":"' + b"x" * 9000 + b'"}')  # line_too_long, closed
        w.connect("flood", "10.0.0.11", stranger=True)
        flood = w.people["flood"]
        w.audit.begin(flood.pid)
        for _ in range(int(TOUR_CONFIG["rate_burst"]) + 1):
            w.h.core.line_received(flood.pid, b'{"type":"pong"}')
        w.h.turn()
        w.settle()
        crowd = [w.connect(f"crowd{i}", "10.0.0.12", stranger=True) for i in range(TOUR_CONFIG["max_connections_per_address"])]
        w.connect("crowd-extra", "10.0.0.12", hello=False, stranger=True)  # too_many_connections
        for i in range(len(crowd)):
            w.drop(f"crowd{i}")

    def guesses(self, *, until_refused: bool = False) -> None:
        """Eve guesses: the real code (a full room), wrong tokens; past the limit, too_many_attempts."""
        w = self.w
        code = w.audit.main_room
        assert code is not None
        w.send("eve", type="peek", room=code.lower())
        w.send("eve", type="join", room=f" {code} ", name="eve")
        for _ in range(TOUR_CONFIG["code_failures"] + 1 if until_refused else 1):
            w.send("eve", type="resume", room=code, token=f"{self.rng.getrandbits(256):064x}")

    # ----- seats' errors -------------------------------------------------------------------------------
    def seat_errors(self, name: str) -> None:
        """Requests the seat's current state refuses; none changes anything."""
        w = self.w
        rng = self.rng
        w.send(name, type="create_room")  # already_seated
        w.send(name, type="join", room=w.audit.main_room)  # already_seated
        w.send(name, type="explore", cell=[8, 0])  # bad_request
        w.send(name, type="get_record", match_id=f"{rng.getrandbits(64):016x}")  # not_found
        if w.sids[name] != 0:  # the room's seat, not the match's (a rematch may swap who moves first)
            w.send(name, type="set_spectators", allowed=False)  # not_host: only the room's creator chooses (§16)
        room = w.room
        if room.match is None:
            w.send(name, type="explore", cell=[0, 0])  # no_match
            w.send(name, type="rematch")  # no_match
            return
        match = room.match
        if match.over:
            w.send(name, type="explore", cell=[0, 0])  # game_over
            return
        me = w.seat(name)
        w.send(name, type="ready")  # match_running
        w.send(name, type="leave")  # match_running
        w.send(name, type="rematch")  # not_finished
        w.send(name, type="get_record", match_id=match.id)  # not_finished
        w.send(name, type="explore", cell=[0, 0], match_id=f"{rng.getrandbits(64):016x}")  # wrong_match
        state = match.state
        if state.to_move != me:
            w.send(name, type="explore", cell=_cell(rng.randrange(64)))  # not_your_turn
            return
        w.send(name, type="end_turn", seq=match.seq + 5)  # stale_state
        if state.phase in (Phase.EXPLORE, Phase.OPEN_EXPLORE):
            w.send(name, type="plant", cell=_cell(rng.randrange(64)))  # wrong_phase
        else:
            w.send(name, type="explore", cell=_cell(rng.randrange(64)))  # wrong_phase
        if state.revealed:
            w.send(name, type="flag" if state.phase in (Phase.EXPLORE, Phase.PLANT, Phase.END_WAIT) else "explore",
                   cell=_cell(next(cells(state.revealed))))  # revealed / wrong_phase
        own = state.mines[me] & ~state.any_marker
        if state.phase is Phase.EXPLORE and own:
            w.send(name, type="explore", cell=_cell(rng.choice(list(cells(own)))))  # own_mine

    def marker_errors(self, name: str) -> None:
        """In the seat's normal turn: a flag, then quota_used, marked, no_marker and not_your_marker."""
        w = self.w
        match = w.match
        state = match.state
        me = w.seat(name)
        assert state.to_move == me and state.phase is Phase.EXPLORE, state
        free = list(cells(FULL & ~state.revealed & ~state.any_marker & ~state.mines[me]))
        target = self.rng.choice(free)
        assert w.send(name, type="flag", cell=_cell(target))[-1]["type"] == "ok"
        w.send(name, type="flag", cell=_cell(self.rng.choice([c for c in free if c != target])))  # quota_used
        w.send(name, type="explore", cell=_cell(target))  # marked
        empty = FULL & ~match.state.any_marker
        w.send(name, type="unflag", cell=_cell(next(cells(empty))))  # no_marker
        theirs = match.state.markers[1 - me]
        if theirs:
            w.send(name, type="unflag", cell=_cell(next(cells(theirs))))  # not_your_marker

    # ----- matches -------------------------------------------------------------------------------------
    def by_seat(self) -> dict[int, str]:
        return {self.w.seat(n): n for n in self.players}

    def move(self) -> None:
        w = self.w
        state = w.match.state
        name = self.by_seat()[state.to_move]  # type: ignore[index]
        if not w.seated(name):
            w.advance(w.match.deadline - w.h.rooms.now() + 0.5)  # type: ignore[operator]
            return
        w.send(name, **_random_move(state, self.rng))

    def ensure_connected(self) -> None:
        for name in self.players:
            if not self.w.seated(name):
                self.w.silent.discard(name)
                self.w.resume(name)

    def opening(self, *, force_timeout: bool) -> None:
        """F1 with O4: some steps time out and the server moves (auto), at least one if forced."""
        w = self.w
        forced = self.rng.randrange(4) if force_timeout else -1
        for step in range(4):
            if w.match.over:
                return
            if step == forced or self.rng.random() < 0.25:
                w.advance(w.match.deadline - w.h.rooms.now())  # type: ignore[operator]
            else:
                self.move()
            w.send(self.rng.choice(self.players), type="ping", id=step)

    def first_turns(self) -> None:
        """Both seats' first normal turns carry every rules refusal (A1-A6, F4, stale seq)."""
        w = self.w
        for _ in range(2):
            match = w.match
            if match.over or match.state.phase is not Phase.EXPLORE:
                return
            name = self.by_seat()[match.state.to_move]  # type: ignore[index]
            other = self.players[1 - self.players.index(name)]
            self.marker_errors(name)
            self.seat_errors(name)
            self.seat_errors(other)
            self.finish_turn(name)

    def finish_turn(self, name: str) -> None:
        """Explore and plant safe cells, then end the turn (no KO, no marker)."""
        w = self.w
        for _ in range(3):
            state = w.match.state
            if state.over or state.to_move != w.seat(name):
                return
            safe = _safe_cells(state)
            if state.phase is Phase.EXPLORE:
                w.send(name, type="explore", cell=_cell(self.rng.choice(list(cells(safe)))))
            elif state.phase is Phase.PLANT:
                w.send(name, type="plant", cell=_cell(self.rng.choice(list(cells(safe)))))
            else:
                w.send(name, type="end_turn")

    def middle(self, steps: int) -> None:
        """Random play with O5 timeouts, a drop and return, a replaced connection, a failed commit."""
        w = self.w
        events = ["away_back", "replaced", "storage_failure", "timeout"]
        self.rng.shuffle(events)
        at = sorted(self.rng.sample(range(steps), len(events)))
        plan = dict(zip(at, events, strict=True))
        for i in range(steps):
            if w.match.over:
                return
            event = plan.get(i)
            if event == "timeout":
                w.advance(w.match.deadline - w.h.rooms.now() + 0.25)  # type: ignore[operator]
            elif event == "away_back":
                name = self.rng.choice(self.players)
                w.drop(name)
                self.seat_errors(self.players[1 - self.players.index(name)])
                w.advance(self.rng.choice([3.0, 25.0]))
                self.ensure_connected()
            elif event == "replaced":
                w.resume(self.rng.choice(self.players))  # the old connection gets `replaced`
            elif event == "storage_failure":
                w.h.storage.fail_next = True
                self.move()  # internal_error; the room is reloaded, its seats closed
                for name in self.players:
                    if not w.seated(name):
                        w.resume(name)  # storage_unavailable until the clock's commit lands
                        break
                w.advance(1.5)
                self.ensure_connected()
            elif self.rng.random() < 0.1:
                w.send("eve", type="peek", room=w.audit.main_room)
            else:
                self.move()

    def end(self, ending: str) -> None:
        w = self.w
        rng = self.rng
        x, y = rng.sample(self.players, 2)
        if ending == "resign":
            w.send(x, type="resign")
        elif ending == "ko":
            for _ in range(200):
                state = w.match.state
                if state.over:
                    return
                seat = state.to_move
                target = state.explorable(seat) & state.mines[1 - seat] & ~state.mines[seat]  # type: ignore[index]
                if state.phase is Phase.EXPLORE and target and w.seated(self.by_seat()[seat]):  # type: ignore[index]
                    w.send(self.by_seat()[seat], type="explore", cell=_cell(next(cells(target))))  # type: ignore[index]
                    return
                self.move()
            w.send(x, type="resign")
        elif ending == "disconnect":
            w.silent.add(x)  # a silent drop: idle after 60 s, then 120 s of grace (O12)
            w.advance(200.0)
        elif ending == "expired_first":
            for name in (x, y):  # both present, so the graces below start now (one may still be away)
                if not w.seated(name):
                    w.resume(name)
            # Leave the opening with safe moves first: its deadlines make O4 auto-moves, which may
            # step on a mine (KO) while both are away and end the match before a grace runs out.
            for _ in range(8):
                state = w.match.state
                mover = self.by_seat()[state.to_move] if not state.over else None
                if mover is None or not state.phase.value.startswith("open") or not w.seated(mover):
                    break
                w.send(mover, **oracle_message(state))
            w.drop(x)
            w.advance(30.0)
            w.drop(y)
            w.advance(95.0)  # x's grace is over, y has 25 s left: nothing decided yet (O12)
            w.resume(x)
            w.send(x, type="explore", cell=[0, 0])  # grace_expired
            w.resume(y)  # y is back in time: x loses
        elif ending == "void":
            w.drop(x)
            w.drop(y)
            w.advance(125.0)
        elif ending == "score":
            for _ in range(600):
                state = w.match.state
                if state.over:
                    break
                name = self.by_seat()[state.to_move]  # type: ignore[index]
                if not w.seated(name):
                    self.ensure_connected()
                    continue
                w.send(name, **oracle_message(state))
        assert w.match.over, (ending, w.match.state)

    def after_end(self) -> None:
        w = self.w
        self.ensure_connected()
        w.send("eve", type="peek", room=w.audit.main_room)
        for name in self.players:
            self.seat_errors(name)
            w.send(name, type="get_record", match_id=w.match.id)
        w.resume(self.rng.choice(self.players))  # match_end again on resume (O13)

    def match(self, ending: str, *, first: bool) -> None:
        self.opening(force_timeout=first)
        self.first_turns()
        self.middle(self.rng.randrange(8, 20))
        if not self.w.match.over:
            self.end(ending)
        self.after_end()

    def rematch(self) -> None:
        x, y = self.rng.sample(self.players, 2)
        self.w.send(x, type="rematch")
        self.w.send(y, type=self.rng.choice(["rematch", "ready"]))  # after a finished match, ready counts (O14)
        assert self.w.match.first_rule == "swap" and not self.w.match.over

    def run(self) -> None:
        w = self.w
        rng = self.rng
        endings = list(ENDINGS)
        rng.shuffle(endings)
        self.strangers()
        w.connect("ann", "10.0.0.1")
        w.send("ann", type="create_room", name="Ann", client_seed="ann-1")
        w.send("eve", type="peek", room=w.audit.main_room)
        self.seat_errors("ann")
        w.connect("filler", "10.0.0.20")
        w.send("filler", type="create_room")
        w.send("eve", type="create_room")  # too_many_rooms
        w.connect("bob", "10.0.0.2")
        w.send("bob", type="join", room=w.audit.main_room, name="Bob", client_seed="bob-2")
        self.guesses()
        w.send("ann", type="ready", client_seed="ann-3")
        self.seat_errors("bob")
        w.send("bob", type="ready")
        self.match(endings[0], first=True)
        for ending in endings[1:3]:
            self.rematch()
            self.match(ending, first=False)
        # bob leaves; cat takes the seat: a new opponent, a new draw (O3)
        w.send("bob", type="leave")
        w.send("ann", type="rematch")  # opponent_missing
        w.connect("cat", "10.0.0.3")
        w.send("cat", type="join", room=w.audit.main_room, name="Cat")
        self.players = ("ann", "cat")
        w.send("cat", type="ready")
        w.send("ann", type="ready")
        assert w.match.first_rule == "draw"
        self.match(endings[3], first=False)
        for ending in endings[4:]:
            self.rematch()
            self.match(ending, first=False)
        self.guesses(until_refused=True)  # too_many_attempts ...
        w.advance(TOUR_CONFIG["code_failure_window"] + 1)
        self.guesses()  # ... and answers again once the window has passed
        w.advance(TOUR_CONFIG["result_ttl"] + 2 * TOUR_CONFIG["sweep_interval"])  # room_closed (O15)
        w.audit.begin(None)
        w.h.core.stop()  # server_closing
        w.settle()


@settings(max_examples=scaled(3), **HYPOTHESIS)
@given(st.integers(0, 2**32 - 1))
def test_tour_every_message_type_in_every_state_hides_the_opponents_secrets(seed: int) -> None:
    """V4/R1/R3b/O16: a room's whole life; every line to every connection is checked against the truth.

    Six matches per example end by KO, resignation, disconnection (drop or silent), first-expired
    (with grace_expired), void and score (O9), in an order drawn per example; all 17 message types,
    every listed state and every error code must be seen, else the audit missed something.
    """
    with figures(Tally()) as tally:
        tour = Tour(seed, tally)
        tour.run()
        audit = tour.w.audit
        assert not tally.leaks, "\n".join(tally.leaks[:10])
        assert tally.types == MESSAGE_TYPES - SPECTATOR_TYPES, MESSAGE_TYPES - SPECTATOR_TYPES - tally.types
        missing_states = {s for s in TOUR_STATES if not audit.coverage.get(s)}
        assert not missing_states, missing_states
        assert audit.errors >= TOUR_ERRORS, TOUR_ERRORS - audit.errors
        assert audit.matches.keys() and all(m.over for _, m in audit.matches.values())
        assert len(audit.matches) == 6


# ----- 2. non-interference: two worlds, the opponent's plants on different cells --------------------------
@dataclass
class Probe:
    """An action the observer tries at a sweep point (``cell`` for the four cell actions)."""

    kind: str
    cell: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def message(self) -> dict[str, Any]:
        msg: dict[str, Any] = {"type": self.kind, **self.extra}
        if self.cell is not None:
            msg["cell"] = _cell(self.cell)
        return msg


class Twin:
    """Two worlds fed the same inputs; they differ only where the opponent's plants landed.

    The observer (``obs``) and a stranger (``eve``) must receive the same bytes in both worlds
    before the end. The one thing replaced before comparing: a ``commitment``/``transcript`` value
    in a ``state`` message that is, in each world, that world's genuine hash at that ``seq`` and
    differs between the worlds (salted hashes of different cells, R3b).
    """

    def __init__(self, seed: int, tally: Tally, *, observer_creates: bool) -> None:
        self.worlds = [World(seed, tally, **FAST), World(seed, tally, **FAST)]
        self.tally = tally
        self.steps = 0
        self.stopped: str | None = None  # why the worlds may no longer be compared
        self.opponent = "opp"
        self.compared: dict[str, set[str]] = defaultdict(set)  # state label -> message types found alike
        self.exceptions: dict[str, int] = defaultdict(int)  # legitimate differences met (KO, B4 number, O9)
        creator, joiner = ("obs", "opp") if observer_creates else ("opp", "obs")
        for w in self.worlds:
            w.connect(creator, "10.0.0.1")
            w.connect(joiner, "10.0.0.2")
            w.connect("eve", "10.0.0.9", stranger=True)
        self.compare()
        self.send(creator, type="create_room", name=creator, client_seed=f"{creator}-seed")
        self.send(joiner, type="join", room=self.code, name=joiner, client_seed=f"{joiner}-seed")

    # ----- driving both worlds ----------------------------------------------------------------------
    @property
    def code(self) -> str:
        code = self.worlds[0].audit.main_room
        assert code is not None
        return code

    def each(self, fn: Callable[[World, int], Any], probe: Probe | None = None) -> list[Any]:
        out = [fn(w, i) for i, w in enumerate(self.worlds)]
        self.compare(probe)
        return out

    def send(self, name: str, /, **msg: Any) -> list[list[dict[str, Any]]]:
        return self.each(lambda w, _: w.send(name, **msg))

    def hidden_plant(self, a: int, b: int) -> None:
        """The opponent plants ``a`` in world 0 and ``b`` in world 1 (both legal there)."""
        replies = self.each(lambda w, i: w.send(self.opponent, type="plant", cell=_cell((a, b)[i])))
        assert all(r[-1]["type"] == "ok" or r[0].get("code") == "internal_error" for r in replies), replies

    def advance(self, seconds: float) -> None:
        self.each(lambda w, _: w.advance(seconds))

    def drop(self, name: str) -> None:
        self.each(lambda w, _: w.drop(name))

    def resume(self, name: str) -> None:
        self.each(lambda w, _: w.resume(name))

    def connected(self, name: str) -> bool:
        return self.worlds[0].connected(name)

    def close_down(self) -> None:
        """The observer peeks its room, the room expires (O15), the server shuts down: compared too."""
        self.send("obs", type="peek", room=self.code)
        self.advance(24 * 3600 + 1)

        def expire(w: World, _: int) -> None:
            w.audit.begin(None)
            w.h.rooms.sweep()  # room_closed
            w.settle()

        def stop(w: World, _: int) -> None:
            w.audit.begin(None)
            w.h.core.stop()  # server_closing
            w.settle()

        self.each(expire)
        self.each(stop)

    # ----- truth (for choosing inputs that are legal in both worlds) ----------------------------------
    @property
    def states(self) -> tuple[GameState, GameState]:
        return self.worlds[0].match.state, self.worlds[1].match.state

    @property
    def obs_seat(self) -> int:
        return self.worlds[0].seat("obs")

    def delta(self) -> int:
        """Cells holding a mine in one world only (the opponent's differing plants not yet covered)."""
        s0, s1 = self.states
        return s0.any_mine ^ s1.any_mine

    def over(self) -> bool:
        return self.worlds[0].match.over or self.worlds[1].match.over

    # ----- comparing ------------------------------------------------------------------------------------
    def compare(self, probe: Probe | None = None) -> None:
        self.steps += 1
        lines = [{name: w.new_lines(name) for name in ("obs", "eve")} for w in self.worlds]
        if self.stopped:
            return
        if probe is not None and self._ko_itself(probe):
            self.exceptions["the KO itself"] += 1
            return
        if self._one_sided_end():
            self.exceptions["a score end (O9) in one world"] += 1
            return
        labels = self.worlds[0].audit.labels
        for name in ("obs", "eve"):
            one, two = lines[0][name], lines[1][name]
            if [p for p, _ in one] != [p for p, _ in two]:
                self._leak(name, "a different number of messages", one, two)
                continue
            for (_, a), (_, b) in zip(one, two, strict=True):
                kind = TYPE_PREFIX.match(a)
                for label in labels:
                    self.compared[label].add(kind.group(1).decode() if kind else "?")
                if a == b:
                    continue
                if a.startswith(PUBLISHED) and b.startswith(PUBLISHED) and a[:20] == b[:20]:
                    continue  # match_end / record: everything is public after the end (O13, R3)
                if name == "obs":
                    a, b = self._normalise(a, b, probe)
                if a != b:
                    self._leak(name, "different bytes", [(0, a)], [(0, b)])

    def _leak(self, name: str, what: str, one: list[tuple[int, bytes]], two: list[tuple[int, bytes]]) -> None:
        first = next(((a, b) for (_, a), (_, b) in zip(one, two, strict=False) if a != b), (b"", b""))
        self.tally.leaks.append(
            f"non-interference ({name}, step {self.steps}): {what}\n  world 0: {first[0][:400]!r}\n  world 1: {first[1][:400]!r}"
        )

    def _one_sided_end(self) -> bool:
        """One world ended and the other did not: legitimate only as O9 (a score end) while the mine sets differ."""
        rooms = [w.h.rooms.rooms.get(w.audit.main_room or "") for w in self.worlds]
        ended = [room is not None and room.match is not None and room.match.over for room in rooms]
        if ended[0] == ended[1]:
            return False
        w = self.worlds[ended.index(True)]
        reason = w.match.state.outcome().reason.value  # type: ignore[union-attr]
        if reason != "score" or not self.delta():
            self.tally.leaks.append(f"non-interference: the match ended in one world only ({reason})")
        self.stopped = f"one world ended by {reason}"
        return True

    def _ko_itself(self, probe: Probe) -> bool:
        """An explore of a cell holding the opponent's mine in one world only: the KO, there only."""
        if probe.kind != "explore" or probe.cell is None:
            return False
        me = self.obs_seat
        hidden = [bool(s.mines[1 - me] >> probe.cell & 1 and not s.mines[me] >> probe.cell & 1) for s in self.states]
        ended = [w.match.over for w in self.worlds]
        if hidden[0] == hidden[1] or not any(ended):
            return False  # not a KO anywhere (e.g. refused in both): compared as usual
        for w, ko in zip(self.worlds, hidden, strict=True):
            outcome = w.match.state.outcome()
            if ko != (outcome is not None and outcome.reason.value == "ko" and outcome.winner == 1 - me):
                self.tally.leaks.append(f"probe {probe}: the KO did not happen exactly where the opponent's mine is")
        return True

    def _normalise(self, a: bytes, b: bytes, probe: Probe | None) -> tuple[bytes, bytes]:
        """Replace genuine differing hashes (and, for an explore probe, a B4 number) in two state lines."""
        one, two = codec.decode(a[:-1]), codec.decode(b[:-1])
        if one.get("type") != "state" or two.get("type") != "state" or one["match_id"] != two["match_id"]:
            return a, b
        results = one["result"], two["result"]
        if None not in results and results[0] != results[1] and results[0]["reason"] == results[1]["reason"] == "score":
            one["result"] = two["result"] = "<scores depend on whose mines the markers hit (O10)>"
        matches = [w.audit.matches[one["match_id"]][1] for w in self.worlds]
        for key in ("commitment", "transcript"):
            for e1, e2 in zip(one["events"], two["events"], strict=False):
                if (
                    key in e1 and key in e2 and e1[key] != e2[key] and e1["seq"] == e2["seq"]
                    and e1[key] == _genuine(matches[0], e1["seq"], key)
                    and e2[key] == _genuine(matches[1], e2["seq"], key)
                ):
                    e1[key] = e2[key] = f"<{key} of action {e1['seq']}>"
        if (
            one["transcript"] != two["transcript"] and one["seq"] == two["seq"]
            and one["transcript"] == _transcript_at(matches[0], one["seq"])
            and two["transcript"] == _transcript_at(matches[1], two["seq"])
        ):
            one["transcript"] = two["transcript"] = "<transcript>"
        explored = probe is not None and probe.kind == "explore" and probe.cell is not None
        if explored and _public_number(one, two, probe.cell, [w.match.state for w in self.worlds]):  # type: ignore[union-attr, arg-type]
            self.exceptions["a number that B4 makes differ"] += 1
        return codec.encode(one), codec.encode(two)


def _genuine(match: LiveMatch, seq: int, key: str) -> str | None:
    if seq >= match.seq:
        return None
    return match.history[seq].get(key)


def _transcript_at(match: LiveMatch, seq: int) -> str:
    """The transcript after the first ``seq`` record actions of ``match``: version 2's whole-match
    hash (R3c, rehashed by ``view_oracle``), version 1's plant chain (R3b)."""
    if match.version == 2:
        return view_oracle.transcript_v2(
            match.history[: min(seq, match.seq)], match_id=match.id, commitment=match.commitment,
            client_seeds=match.client_seeds, nonce=match.number, first_player=match.first_rule,
            join_order=match.join_order, turn_seconds=match.turn_seconds, started=match.started,
            previous=match.previous,
        )[-1]
    for i in range(min(seq, match.seq) - 1, -1, -1):
        entry = match.history[i]
        if entry["type"] == "plant":
            return str(entry["transcript"])
    return fairness.transcript_start(match.id)


def _public_number(one: dict[str, Any], two: dict[str, Any], cell: int, truth: list[GameState]) -> bool:
    """An explored cell's number may differ by B4 (numbers are public) if each is its world's true count."""
    r, c = divmod(cell, 8)
    rows = [one["board"]["numbers"], two["board"]["numbers"]]
    if rows[0][r][c] == rows[1][r][c]:
        return False
    if any(row[r][c] != str(state.number(cell)) for state, row in zip(truth, rows, strict=True)):
        return False
    for row in rows:
        row[r] = row[r][:c] + "?" + row[r][c + 1 :]
    return True


# ----- choosing inputs that are legal and alike in both worlds ---------------------------------------------
class Walk:
    """Random inputs for a twin: the observer's and the opponent's moves, time, drops, strangers.

    Explores (either seat) keep away from the cells whose mine differs between the worlds and
    their neighbours (a revealed number there would differ: B4 numbers are public); the
    opponent's plants land on different cells in the two worlds whenever that is possible
    without touching a revealed neighbourhood, often on the observer's own mines (so the two
    mine sets are equal and only ownership differs); the observer often plants and flags
    exactly where the worlds differ (V5: an overlap in one world, an empty cell in the other).
    """

    def __init__(
        self, twin: Twin, rng: random.Random, *, safe: bool = False, markers: bool = True, cover: bool = True,
        keep_delta: bool = False,
    ) -> None:
        self.t = twin
        self.rng = rng
        self.safe = safe  # never explore a mine (no KO)
        self.markers = markers
        self.cover = cover  # the observer plants where the worlds differ (V5), which makes them alike again
        self.keep_delta = keep_delta  # the opponent plants on different empty cells while the worlds' mine sets are equal
        self.away: set[str] = set()

    def _common(self) -> tuple[GameState, int, int]:
        s0, _ = self.t.states
        return s0, self.t.obs_seat, 1 - self.t.obs_seat

    def hidden_pair(self, *, covered_first: bool) -> tuple[int, int] | None:
        """Cells for the opponent's plant in world 0 and world 1: both on the observer's own mines
        (covered: the mine sets stay equal), or both away from every revealed cell (no number moves)."""
        s0, s1 = self.t.states
        opp = 1 - self.t.obs_seat
        p0, p1 = s0.plantable(opp), s1.plantable(opp)
        covered = list(cells(p0 & p1 & s0.mines[self.t.obs_seat]))
        isolated = [c for c in range(64) if not NEIGHBOURS[c] & s0.revealed]
        one = [c for c in isolated if p0 >> c & 1]
        two = [c for c in isolated if p1 >> c & 1]
        options: list[tuple[int, int]] = []
        if len(covered) >= 2:
            options.append(tuple(self.rng.sample(covered, 2)))  # type: ignore[arg-type]
        if one and two and len(set(one) | set(two)) >= 2:
            a = self.rng.choice(one)
            b = self.rng.choice([c for c in two if c != a] or [a])
            if a != b:
                options.insert(0 if not covered_first else len(options), (a, b))
        return options[0] if options else None

    def explore_cell(self, seat: int) -> int | None:
        s0, s1 = self.t.states
        allowed = s0.explorable(seat) & s1.explorable(seat) & ~_zone(self.t.delta())
        safe = allowed & ~(s0.any_mine | s1.any_mine)
        pool = safe if safe and (self.safe or self.rng.random() < 0.95) else allowed
        return self.rng.choice(list(cells(pool))) if pool else None

    def move(self) -> None:
        s0, me, opp = self._common()
        seat = s0.to_move
        name = "obs" if seat == me else self.t.opponent
        if name in self.away:
            if self.rng.random() < 0.5:
                self.away.discard(name)
                self.t.resume(name)
            else:
                self.t.advance(20.0)  # O4/O5: the absent seat's deadline runs out
            return
        phase = s0.phase
        roll = self.rng.random()
        normal = phase in (Phase.EXPLORE, Phase.PLANT, Phase.END_WAIT)
        if normal and roll < 0.15 and s0.quota_left and self.markers:
            delta = self.t.delta()
            pool = FULL & ~s0.revealed & ~s0.any_marker
            if seat == me and delta & pool and self.rng.random() < 0.6:
                pool &= delta  # a marker on a cell that is the opponent's mine in one world only
            if pool:
                self.t.send(name, type="flag", cell=_cell(self.rng.choice(list(cells(pool)))))
                return
        if normal and roll < 0.22 and s0.markers[seat] and self.markers:
            self.t.send(name, type="unflag", cell=_cell(self.rng.choice(list(cells(s0.markers[seat])))))
            return
        if phase in (Phase.EXPLORE, Phase.OPEN_EXPLORE):
            cell = self.explore_cell(seat)
            if cell is None:
                self.t.advance(20.0)
            else:
                self.t.send(name, type="explore", cell=_cell(cell))
        elif phase in (Phase.PLANT, Phase.OPEN_PLANT):
            if seat == opp:
                want_delta = self.keep_delta and not self.t.delta()
                hide = want_delta or self.rng.random() < 0.7
                pair = self.hidden_pair(covered_first=not want_delta and self.rng.random() < 0.6) if hide else None
                if pair is not None:
                    self.t.hidden_plant(*pair)
                    return
                s1 = self.t.states[1]
                common = s0.plantable(opp) & s1.plantable(opp)
                if not common:
                    self.t.advance(20.0)
                    return
                self.t.send(name, type="plant", cell=_cell(self.rng.choice(list(cells(common)))))
                return
            pool = s0.plantable(me)
            delta = self.t.delta() & pool
            if delta and self.cover and self.rng.random() < 0.5:
                pool = delta  # V5: an overlap in one world, a plain plant in the other
            if not pool:
                self.t.advance(20.0)
                return
            self.t.send(name, type="plant", cell=_cell(self.rng.choice(list(cells(pool)))))
        else:
            self.t.send(name, type="end_turn")

    def refusals(self) -> None:
        """A few requests the observer's state refuses, whatever the hidden mines (both worlds)."""
        s0, me, _ = self._common()
        if "obs" in self.away:
            return
        match = self.t.worlds[0].match
        tries = [Probe("explore", self.rng.randrange(64), {"seq": match.seq + 1}),
                 Probe("flag", self.rng.randrange(64), {"match_id": f"{self.rng.getrandbits(64):016x}"}),
                 Probe("ready"), Probe("leave"), Probe("rematch"),
                 Probe("get_record", None, {"match_id": match.id})]
        if s0.to_move != me:
            tries.append(Probe(self.rng.choice(CELL_KINDS), self.rng.randrange(64)))
        if s0.revealed:
            tries.append(Probe("explore", self.rng.choice(list(cells(s0.revealed)))))
        if s0.mines[me]:
            tries.append(Probe("explore", self.rng.choice(list(cells(s0.mines[me])))))
        for probe in self.rng.sample(tries, 3):
            self.t.send("obs", **probe.message())

    def stranger(self) -> None:
        rng = self.rng
        match = self.t.worlds[0].room.match
        # the running match's real id (a lucky guess); a finished match's record is public, not a leak
        match_id = match.id if match is not None and not self.t.over() else f"{rng.getrandbits(64):016x}"
        choice = rng.randrange(5)
        if choice == 0:
            self.t.send("eve", type="peek", room=self.t.code.lower())
        elif choice == 1 and len(self.t.worlds[0].room.seats) == 2:
            self.t.send("eve", type="join", room=self.t.code, name="eve")
        elif choice == 2:
            self.t.send("eve", type="resume", room=self.t.code, token=f"{rng.getrandbits(256):064x}")
        elif choice == 3:
            self.t.send("eve", type="get_record", match_id=match_id)
        else:
            self.t.send("eve", type="ping", id="e")

    def presence(self) -> None:
        """Someone drops or comes back; now and then the opponent's grace runs out (disconnect)."""
        name = self.rng.choice(["obs", self.t.opponent])
        if name in self.away:
            self.away.discard(name)
            self.t.resume(name)  # the observer's full history (state on resume) is compared too
        elif self.rng.random() < 0.8 or not self.away:
            self.away.add(name)
            self.t.drop(name)
            if name == self.t.opponent and self.rng.random() < 0.15:
                self.t.advance(121.0)  # O12: the grace runs out while the observer is there

    def play(self, budget: int) -> None:
        for _ in range(budget):
            if self.t.stopped or self.t.over():
                return
            roll = self.rng.random()
            if roll < 0.05:
                self.t.advance(self.rng.choice([2.5, 9.0, 20.0, 20.5]))
            elif roll < 0.09:
                self.stranger()
            elif roll < 0.12:
                self.presence()
            elif roll < 0.16:
                self.refusals()
            elif roll < 0.17:
                self.storage_failure()
            else:
                self.move()
        if not self.t.over() and not self.t.stopped:
            self.come_back()
            self.t.send(self.rng.choice(["obs", self.t.opponent]), type="resign")

    def storage_failure(self) -> None:
        """A commit fails: the room is reloaded from storage (its match replayed) and both seats resume."""
        self.come_back()
        self.t.each(lambda w, _: setattr(w.h.storage, "fail_next", True))
        self.move()  # its commit fails: internal_error, the room reloaded, both seats' connections closed

        def recover(w: World, _: int) -> None:
            w.audit.begin(None)
            w.h.storage.fail_next = False
            w.h.rooms.tick()  # the clock's next write lands: storage is healthy again
            w.h.turn()
            w.settle()

        self.t.each(recover)
        for name in ("obs", self.t.opponent):
            if not self.t.worlds[0].seated(name):
                self.t.resume(name)  # the full history, as rebuilt from storage

    def come_back(self) -> None:
        for name in sorted(self.away):
            self.t.resume(name)
        self.away.clear()

    def next_match(self) -> None:
        """After the end: the record (public now), then a rematch or a new opponent (O14, O3)."""
        self.come_back()
        self.t.send("obs", type="get_record", match_id=self.t.worlds[0].match.id)
        self.stranger()
        if self.rng.random() < 0.5:
            first, second = self.rng.sample(["obs", self.t.opponent], 2)
            self.t.send(first, type="rematch")
            self.t.send(second, type=self.rng.choice(["rematch", "ready"]))
            return
        self.t.send(self.t.opponent, type="leave")
        self.t.opponent = "opp2"
        self.t.each(lambda w, _: w.connect("opp2", "10.0.0.3"))
        self.t.send("opp2", type="join", room=self.t.code, name="opp2")
        self.t.send("opp2", type="ready")
        self.t.send("obs", type="ready")


TWIN_STATES = frozenset({
    "waiting", "ready", "open_explore", "open_plant", "explore", "plant", "end_wait", "timeout", "auto_move",
    "opponent_away", "after_end", "rematch_match", "new_opponent", "stranger",
})
TWIN_TYPES = MESSAGE_TYPES - {"ping"} - SPECTATOR_TYPES
"""Compared between the twin worlds (no heartbeats there: the tour audits ``ping``)."""


def test_non_interference_the_observers_bytes_do_not_depend_on_where_the_opponent_planted() -> None:
    """V2/V4/V5/R3b: two worlds whose only difference is the cells of the opponent's plants.

    Same inputs (moves, timeouts and O4 auto-moves, drops and resumes with full history, presence,
    a grace running out, strangers, refusals, a rematch or a new opponent, expiry, shutdown); the
    observer's bytes and a stranger's bytes are identical before each end, up to genuine
    differing mine hashes. Over the run every message type but ping is compared, in every state.
    """
    compared: dict[str, set[str]] = defaultdict(set)

    @settings(max_examples=scaled(16), **HYPOTHESIS)
    @given(st.integers(0, 2**32 - 1), st.booleans())
    def run(seed: int, observer_creates: bool) -> None:
        before = len(tally.leaks)
        rng = random.Random(seed)
        twin = Twin(seed, tally, observer_creates=observer_creates)
        twin.send("obs", type="ready")
        twin.send(twin.opponent, type="ready")
        walk = Walk(twin, rng)
        for round_ in range(2):
            walk.play(budget=100)
            if twin.stopped or round_ == 1:
                break
            walk.next_match()
        if not twin.stopped:
            walk.come_back()
            twin.close_down()
        for label, kinds in twin.compared.items():
            compared[label] |= kinds
        assert len(tally.leaks) == before, "\n".join(tally.leaks[before : before + 5])

    with figures(Tally()) as tally:
        run()
    assert set().union(*compared.values()) >= TWIN_TYPES, TWIN_TYPES - set().union(*compared.values())
    assert {label for label, kinds in compared.items() if kinds} >= TWIN_STATES, TWIN_STATES - set(compared)


@settings(max_examples=scaled(8), **HYPOTHESIS)
@given(st.integers(0, 2**32 - 1))
def test_v5_an_overlapping_plant_is_answered_byte_for_byte_like_a_plant_on_an_empty_cell(seed: int) -> None:
    """V5: the opponent's opening mine is on c (world 0) or d (world 1); the observer plants on c, then d.

    In world 0 the observer's plant on c is an overlap, in world 1 it is not (and the other way
    round for d); explores keep away from c and d until both are the observer's, then play on.
    """
    with figures(Tally()) as tally:
        rng = random.Random(seed)
        twin = Twin(seed, tally, observer_creates=rng.random() < 0.5)
        twin.send("obs", type="ready")
        twin.send("opp", type="ready")
        walk = Walk(twin, rng, safe=True, markers=False)
        c = d = -1
        for _ in range(60):
            s0, s1 = twin.states
            if twin.over():
                break
            me = twin.obs_seat
            if s0.phase in (Phase.OPEN_PLANT, Phase.PLANT) and s0.to_move == 1 - me and c < 0:
                free = [x for x in cells(s0.plantable(1 - me) & ~s0.mines[me]) if not NEIGHBOURS[x] & s0.revealed]
                c, d = rng.sample(free, 2)
                twin.hidden_plant(c, d)
            elif s0.phase in (Phase.OPEN_PLANT, Phase.PLANT) and s0.to_move == me and c >= 0 and not (s0.mines[me] >> d & 1):
                target = c if not s0.mines[me] >> c & 1 else d
                replies = twin.send("obs", type="plant", cell=_cell(target))
                assert replies[0][-1]["type"] == replies[1][-1]["type"] == "ok"
            else:
                walk.move()
        me = twin.obs_seat
        s0, s1 = twin.states
        assert c >= 0 and s0.mines[me] >> c & 1 and s0.mines[me] >> d & 1, "the scenario reached both plants"
        assert s0.mines[1 - me] >> c & 1 and s1.mines[1 - me] >> d & 1  # an overlap on c in world 0, on d in world 1
        assert not tally.leaks, "\n".join(tally.leaks[:5])


# ----- 3. the probe sweep: every action on every cell, both worlds ------------------------------------------
SWEEP_POINTS = ("open_explore", "open_plant", "explore", "plant", "end_wait", "opponent_turn")


def _probes(match_id: str, seq: int) -> list[Probe]:
    out = [Probe(kind, cell) for kind in CELL_KINDS for cell in range(64)]
    out += [Probe("end_turn"), Probe("resign"), Probe("explore", 0, {"seq": seq + 1}), Probe("plant", 0, {"match_id": "f" * 16}),
            Probe("ready"), Probe("leave"), Probe("rematch"), Probe("get_record", None, {"match_id": match_id})]
    return out


def sweep(twin: Twin, tried: set[tuple[str, int | None]]) -> None:
    """Every probe on both worlds: the same reply in both unless it is the KO itself.

    A refused probe changes nothing (§9), so the next one goes on from the same point; after
    an accepted one both worlds are replaced by fresh forks of the point.
    """
    bases = [w.fork() for w in twin.worlds]
    twin.worlds = [base.fork() for base in bases]
    match = twin.worlds[0].match
    for probe in _probes(match.id, match.seq):
        message = probe.message()
        replies = twin.each(lambda w, _, message=message: w.send("obs", **message), probe)
        tried.add((probe.kind, probe.cell))
        if any(r and r[-1]["type"] != "error" for r in replies):
            twin.worlds = [base.fork() for base in bases]
    twin.worlds = bases


def test_sweep_every_action_on_every_cell_gets_the_same_reply_whatever_the_opponent_planted() -> None:
    """V4/V5/A1-A6: at each kind of decision point, all 4 x 64 cell actions and the rest, on both worlds.

    The opponent's plants differ between the worlds: on the observer's own mines (equal mine sets,
    other owners) and on empty cells far from anything revealed. Every reply is the same in
    both worlds except the KO itself (the explore of a cell that is the opponent's mine in one
    world only) and a revealed number that differs by B4 (each checked against its world); both
    exceptions must have been met during the run, so they are not dead code.
    """
    exceptions: dict[str, int] = defaultdict(int)

    @settings(max_examples=scaled(2), **HYPOTHESIS)
    @given(st.integers(0, 2**32 - 1), st.booleans())
    def run(seed: int, observer_creates: bool) -> None:
        before = len(tally.leaks)
        rng = random.Random(seed)
        twin = Twin(seed, tally, observer_creates=observer_creates)
        twin.send("obs", type="ready")
        twin.send("opp", type="ready")
        walk = Walk(twin, rng, safe=True, cover=False, keep_delta=True)  # differences stay until every point is swept
        tried: set[tuple[str, int | None]] = set()
        swept: set[str] = set()
        for _ in range(200):
            if twin.over() or swept == set(SWEEP_POINTS):
                break
            s0, _ = twin.states
            me = twin.obs_seat
            point = s0.phase.value if s0.to_move == me else "opponent_turn"
            ready = point in ("open_explore", "opponent_turn") or twin.delta() or point == "open_plant"
            if point not in swept and ready and (point != "opponent_turn" or (s0.turn >= 2 and twin.delta())):
                sweep(twin, tried)
                swept.add(point)
            walk.move()
        assert swept == set(SWEEP_POINTS), swept
        assert {(k, c) for k in CELL_KINDS for c in range(64)} <= tried
        for what, count in twin.exceptions.items():
            exceptions[what] += count
        assert len(tally.leaks) == before, "\n".join(tally.leaks[before : before + 5])

    with figures(Tally()) as tally:
        run()
    assert exceptions["the KO itself"] and exceptions["a number that B4 makes differ"], dict(exceptions)


def test_a_fork_of_a_world_goes_on_exactly_like_the_world() -> None:
    """The sweep's forks are faithful: the same inputs after a fork give the same bytes to everyone."""
    tally = Tally()
    worlds = [World(5, tally, **FAST)]
    w = worlds[0]
    w.connect("a", "10.0.0.1")
    w.connect("b", "10.0.0.2")
    w.send("a", type="create_room")
    w.send("b", type="join", room=w.audit.main_room)
    w.send("a", type="ready")
    w.send("b", type="ready")
    copy_ = w.fork()
    rng = [random.Random(3), random.Random(3)]
    for world, r in zip((w, copy_), rng, strict=True):
        for _ in range(30):
            state = world.match.state
            if state.over:
                break
            name = "a" if world.seat("a") == state.to_move else "b"
            world.send(name, **_random_move(state, r))
        world.advance(21.0)
        world.send("b", type="resign")  # cancels the room's timer on the fork's own clock
    for pid in w.h.out.lines:
        assert w.h.out.lines[pid] == copy_.h.out.lines[pid]
    assert w.match is not copy_.match and w.match.seq == copy_.match.seq > 8 and w.match.over
    assert not tally.leaks


# ----- 4. strangers --------------------------------------------------------------------------------------
def stranger_scenario(seed: int, guesses: list[dict[str, Any]], tally: Tally) -> list[World]:
    """Two worlds, one room, two different running matches; the stranger's answers are compared."""
    worlds = [World(seed, tally, **FAST), World(seed, tally, **FAST)]
    rngs = [random.Random(seed), random.Random(seed ^ 0x5A5A5A5A)]
    for w in worlds:
        w.connect("a", "10.0.0.1")
        w.connect("b", "10.0.0.2")
        w.connect("eve", "10.0.0.9", stranger=True)
        w.send("a", type="create_room", name="A")
        w.send("b", type="join", room=w.audit.main_room, name="B")
        w.send("a", type="ready")
        w.send("b", type="ready")
    code = worlds[0].audit.main_room
    assert code is not None
    for guess in guesses:
        for w, rng in zip(worlds, rngs, strict=True):
            state = w.match.state
            if _safe_cells(state).bit_count() > 12:  # neither match may end (its room would say so)
                name = "a" if w.seat("a") == state.to_move else "b"
                w.send(name, **_random_move(state, rng))
            msg = {k: resolve_guess(v, w.match.id if k == "match_id" else code) for k, v in guess.items()}
            w.send("eve", **msg)
        one, two = (w.new_lines("eve") for w in worlds)
        if one != two:
            tally.leaks.append(f"stranger: {guess} answered {one!r} / {two!r}")
    return worlds


@settings(max_examples=scaled(15), **{**HYPOTHESIS, "phases": tuple(Stage)})
@given(st.integers(0, 2**32 - 1), st.lists(stranger_requests(), min_size=5, max_size=30))
def test_a_stranger_with_guesses_learns_nothing_of_a_running_match(seed: int, guesses: list[dict[str, Any]]) -> None:
    """O1/O16/V4: peek, join, resume and get_record with guessed codes, tokens and match ids.

    Two worlds with the same room and two different running matches (other moves, other
    plants); between the stranger's requests each match moves on its own way. The stranger's
    bytes are identical in both (the real match id is among the guesses: not_finished, no more),
    and the audit allows it only welcome, pong, room_info and refusals a stranger can cause.
    """
    with figures(Tally()) as tally:
        worlds = stranger_scenario(seed, guesses, tally)
        assert worlds[0].match.history[:] != worlds[1].match.history[:], "the two matches must differ"
        assert not any(w.match.over for w in worlds)
        assert not tally.leaks, "\n".join(tally.leaks[:5])


# ----- 5. the audit itself can fail: planted leaks are found ------------------------------------------------
def _leaky_event_json(monkeypatch: pytest.MonkeyPatch) -> None:
    original = MatchHistory.seen

    def seen(self: MatchHistory, i: int, me: int) -> Any:
        out = original(self, i, me)
        entry = self[i]
        if "cell" in entry:
            out = dataclasses.replace(out, cell=entry["cell"])  # the opponent's plant too (R3b broken)
        return out

    monkeypatch.setattr(MatchHistory, "seen", seen)


def _overlap_counted_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    def numbers(self: GameState) -> tuple[int, ...]:  # B4 broken: an overlap counts twice (V5)
        out = [-1] * 64
        for c in cells(self.revealed):
            out[c] = (NEIGHBOURS[c] & self.mines[0]).bit_count() + (NEIGHBOURS[c] & self.mines[1]).bit_count()
        return tuple(out)

    monkeypatch.setattr(GameState, "numbers", numbers)


def _overlap_timing(monkeypatch: pytest.MonkeyPatch) -> None:
    original = LiveMatch.apply

    def apply(self: LiveMatch, action: Any, *, at: float, randbytes: Any, auto: bool = False) -> Any:
        if action.type is ActionType.PLANT and self.state.mines[1 - action.seat] >> action.cell & 1:
            at += 0.001  # an overlap is recorded a millisecond late (V5 broken by a side channel)
        return original(self, action, at=at, randbytes=randbytes, auto=auto)

    monkeypatch.setattr(LiveMatch, "apply", apply)


class _WithExtra:
    """A planted leak: a typed message written with keys it does not have."""

    def __init__(self, message: Any, **extra: Any) -> None:
        self.message, self.extra = message, extra

    def wire(self) -> dict[str, Any]:
        return {**self.message.wire(), **self.extra}


def _next_seed_in_room(monkeypatch: pytest.MonkeyPatch) -> None:
    original = presenter.room
    monkeypatch.setattr(presenter, "room", lambda room, seat, env: _WithExtra(original(room, seat, env), seed=room.next_seed))


def _token_hash_in_room(monkeypatch: pytest.MonkeyPatch) -> None:
    original = presenter.seat_info

    def seat_info(seat: Any, now: float) -> Any:
        out = original(seat, now)
        return out if out is None else dataclasses.replace(out, name=seat.token_hash)  # hidden in an allowed field

    monkeypatch.setattr(presenter, "seat_info", seat_info)


def _signature_as_commitment(monkeypatch: pytest.MonkeyPatch) -> None:
    original = presenter.match_start

    def match_start(room: Room, me: int) -> Any:
        assert room.match is not None
        return dataclasses.replace(original(room, me), commitment=room.match.signature)  # R1 broken

    monkeypatch.setattr(presenter, "match_start", match_start)


def _refusal_hints(monkeypatch: pytest.MonkeyPatch) -> None:
    original = Rooms.act

    def act(self: Rooms, peer: int, req: Any) -> int:
        try:
            return original(self, peer, req)
        except ProtocolError as exc:
            match = self.peer_seat[peer][0].match
            mover = match.state.to_move if match is not None else None
            cell = req.cell
            if exc.code == "not_your_turn" and cell is not None and mover is not None and match.state.mines[mover] >> cell & 1:  # type: ignore[union-attr]
                raise ProtocolError(exc.code, exc.message + ".") from None  # one dot more on a hidden mine
            raise

    monkeypatch.setattr(Rooms, "act", act)


def _match_id_to_strangers(monkeypatch: pytest.MonkeyPatch) -> None:
    original = Lobby.peek

    def peek(self: Lobby, peer: int, room: Room, rid: Any = None) -> Any:
        if room.match is not None and rid is None:
            rid = room.match.id  # the running match's id, as the reply's id
        return original(self, peer, room, rid)

    monkeypatch.setattr(Lobby, "peek", peek)


def _walk(seed: int, tally: Tally) -> None:
    twin = Twin(seed, tally, observer_creates=True)
    twin.send("obs", type="ready")
    twin.send("opp", type="ready")
    Walk(twin, random.Random(seed)).play(budget=60)


def _sweep_opponent_turn(seed: int, tally: Tally) -> None:
    twin = Twin(seed, tally, observer_creates=False)
    twin.send("obs", type="ready")
    twin.send("opp", type="ready")
    walk = Walk(twin, random.Random(seed), safe=True)
    for _ in range(100):
        state = twin.states[0]
        if state.to_move != twin.obs_seat and twin.delta() and state.turn >= 2:
            sweep(twin, set())
            return
        walk.move()
    raise AssertionError("no sweep point reached")


def _strangers(seed: int, tally: Tally) -> None:
    stranger_scenario(seed, [{"type": "peek", "room": REAL_CODE}], tally)


PLANTED = {
    "plant cell in events": (_leaky_event_json, _walk),
    "overlap counted twice in numbers": (_overlap_counted_twice, _walk),
    "overlap timing side channel": (_overlap_timing, _walk),
    "next seed in room": (_next_seed_in_room, _walk),
    "token hash in a name": (_token_hash_in_room, _walk),
    "signature as commitment": (_signature_as_commitment, _walk),
    "refusal text hints": (_refusal_hints, _sweep_opponent_turn),
    "match id to strangers": (_match_id_to_strangers, _strangers),
}


@pytest.mark.parametrize("planted", sorted(PLANTED))
def test_the_audit_finds_a_planted_leak(planted: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each check can fail: a server patched to leak (one way each) is caught by the scenario shown."""
    plant, scenario = PLANTED[planted]
    plant(monkeypatch)
    tally = Tally()  # not recorded: these leaks are ours
    try:
        scenario(3, tally)
    except AssertionError:
        if not tally.leaks:
            raise
    assert tally.leaks, f"the planted leak ({planted}) went unnoticed"
