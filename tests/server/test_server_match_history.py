"""The packed match history (``server/match.py``) says exactly what the list of dicts said.

``OldMatch`` below is the list-of-dicts ``LiveMatch`` as it was before the history was packed
(commit 9a784f7, docstrings dropped). Seeded random matches — legal and refused actions, expired
deadlines, resignations, disconnects, voids, int and float times — are driven through
both with the same inputs, and every entry, record, blob and restored match must be the same
JSON, byte for byte. A memory test keeps the history small.
"""

from __future__ import annotations

import copy
import gc
import json
import random
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from mineduel.server.match import (
    OPENING,
    LiveMatch,
    MatchHistory,
    advanced_stream,
    draw_first,
)
from mineduel.shared.ai.randomplay import random_legal_action
from mineduel.shared.fairness import commitments as fairness
from mineduel.shared.fairness.record import FORMAT, action_json, from_json, result_json
from mineduel.shared.rules.engine import CELL_ACTIONS, Action, ActionType, GameState, Refusal, Variant

RandBytes = Callable[[int], bytes]


# ----- the reference: the list-of-dicts LiveMatch before packing ------------------------------
@dataclass
class OldMatch:
    id: str
    number: int
    players: tuple[int, int]
    join_order: tuple[int, int]
    server_seed: str
    client_seeds: tuple[str, str]
    first_rule: str
    started: float
    started_wall: float
    turn_seconds: float
    names: tuple[str, str] = ("", "")
    state: GameState = field(default_factory=lambda: GameState(Variant.ONLINE))
    actions: list[dict[str, Any]] = field(default_factory=list)
    salts: list[str] = field(default_factory=list)
    commitments: list[str] = field(default_factory=list)
    transcript: str = ""
    deadline: float | None = None
    ended: float | None = None
    ended_wall: float | None = None
    stream: fairness.FairStream = field(init=False)

    def __post_init__(self) -> None:
        self.stream = fairness.FairStream(self.signature)
        if not self.transcript:
            self.transcript = fairness.transcript_start(self.id)

    @property
    def commitment(self) -> str:
        return fairness.commitment(self.server_seed)

    @property
    def signature(self) -> str:
        return fairness.round_signature(self.server_seed, list(self.client_seeds), self.number)

    @property
    def over(self) -> bool:
        return self.state.over

    @property
    def seq(self) -> int:
        return len(self.actions)

    @classmethod
    def start(cls, *, match_id, number, seats_in_join_order, first_sid, server_seed, client_seeds,
              now, wall, turn_seconds, names_by_sid=None) -> OldMatch:
        a, b = seats_in_join_order
        match = cls(id=match_id, number=number, players=(a, b), join_order=(0, 1), server_seed=server_seed,
                    client_seeds=client_seeds, first_rule="draw" if first_sid is None else "swap",
                    started=now, started_wall=wall, turn_seconds=turn_seconds)
        if first_sid is None:
            first_sid = seats_in_join_order[draw_first(match.stream)]
        if first_sid == a:
            match.players, match.join_order = (a, b), (0, 1)
        else:
            match.players, match.join_order = (b, a), (1, 0)
        names = names_by_sid or {}
        match.names = (names.get(match.players[0], ""), names.get(match.players[1], ""))
        match.deadline = now + turn_seconds
        return match

    def apply(self, action: Action, *, at: float, randbytes: RandBytes, auto: bool = False):
        before = (self.state.phase, self.state.to_move, self.state.turn)
        refusal = self.state.apply(action)
        if isinstance(refusal, Refusal):  # the engine returns events on success
            return refusal
        entry = action_json(action, at=round(at, 3))
        if auto:
            entry["auto"] = True
        if action.type is ActionType.PLANT:
            salt = fairness.new_salt(randbytes)
            commitment = fairness.mine_commitment(salt, self.id, self.seq, action.seat, action.cell)
            self.salts.append(salt)
            self.commitments.append(commitment)
            self.transcript = fairness.chain(self.transcript, commitment)
            entry["commitment"] = commitment
            entry["transcript"] = self.transcript
        self.actions.append(entry)
        after = (self.state.phase, self.state.to_move, self.state.turn)
        if self.state.over:
            self.deadline = None
            self.ended = at
        elif after != before and (before[0] in OPENING or after[2] != before[2]):
            self.deadline = at + self.turn_seconds
        return [entry]

    def expire(self, at: float, randbytes: RandBytes) -> list[dict[str, Any]]:
        seat = self.state.to_move
        opening = self.state.phase in OPENING
        entries = self._must(Action(seat, ActionType.TIMEOUT), at, randbytes, auto=True)
        if opening and not self.over:
            auto = self.state.opening_auto_action(self.stream)
            entries += self._must(auto, at, randbytes, auto=True)
        return entries

    def end_by(self, kind: ActionType, seat: int, at: float, randbytes: RandBytes) -> list[dict[str, Any]]:
        return self._must(Action(seat, kind), at, randbytes, auto=kind is not ActionType.RESIGN)

    def _must(self, action, at, randbytes, auto):
        result = self.apply(action, at=at, randbytes=randbytes, auto=auto)
        assert not isinstance(result, Refusal)
        return result

    def fairness_json(self, *, reveal: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version": 1, "commitment": self.commitment, "client_seeds": list(self.client_seeds),
            "nonce": self.number, "first_player": self.first_rule, "join_order": list(self.join_order),
            "mine_commitments": list(self.commitments), "transcript": self.transcript,
        }
        if reveal:
            out["server_seed"] = self.server_seed
            out["signature"] = self.signature
            out["salts"] = list(self.salts)
            out["stream_used"] = self.stream.consumed
        return out

    def record(self, *, room: str) -> dict[str, Any]:
        if not self.over:
            raise ValueError("a record is published only after the end (V4, R3)")
        return {
            "format": FORMAT, "variant": "online", "match_id": self.id, "room": room,
            "players": [{"seat": s, "name": self.names[s]} for s in (0, 1)],
            "actions": [{k: v for k, v in a.items() if k not in ("commitment", "transcript")} for a in self.actions],
            "fairness": self.fairness_json(reveal=True),
            "times": {
                "started": round(self.started_wall, 3),
                "ended": round(
                    self.ended_wall if self.ended_wall is not None else self.started_wall + (self.ended - self.started), 3
                ),
                "elapsed": round(self.ended - self.started, 3),
                "turns": self.state.turn,
                "clock_started": round(self.started, 3),
                "clock_ended": round(self.ended, 3),
                "turn_seconds": self.turn_seconds,
            },
            "result": result_json(self.state),
        }

    def to_blob(self) -> dict[str, Any]:
        return {
            "id": self.id, "number": self.number, "players": list(self.players), "join_order": list(self.join_order),
            "server_seed": self.server_seed, "client_seeds": list(self.client_seeds), "first": self.first_rule,
            "started": self.started, "started_wall": self.started_wall, "turn_seconds": self.turn_seconds,
            "names": list(self.names), "salts": list(self.salts), "deadline": self.deadline, "ended": self.ended,
            "ended_wall": self.ended_wall, "stream_used": self.stream.consumed,
        }

    @classmethod
    def from_blob(cls, blob: dict[str, Any], actions: list[dict[str, Any]]) -> OldMatch:
        match = cls(id=blob["id"], number=blob["number"], players=tuple(blob["players"]),
                    join_order=tuple(blob["join_order"]), server_seed=blob["server_seed"],
                    client_seeds=tuple(blob["client_seeds"]), first_rule=blob["first"], started=blob["started"],
                    started_wall=blob["started_wall"], turn_seconds=blob["turn_seconds"],
                    names=tuple(blob.get("names", ("", ""))))
        record = from_json({"format": FORMAT, "variant": "online", "actions": actions})
        salts = blob["salts"]
        for index, action in enumerate(record.actions):
            if isinstance(match.state.apply(action), Refusal):
                raise ValueError(f"stored match {match.id}: action {index} is refused on replay")
            entry = dict(actions[index])
            if action.type is ActionType.PLANT:
                salt = salts[len(match.salts)]
                commitment = fairness.mine_commitment(salt, match.id, index, action.seat, action.cell)
                match.salts.append(salt)
                match.commitments.append(commitment)
                match.transcript = fairness.chain(match.transcript, commitment)
            match.actions.append(entry)
        match.deadline = blob["deadline"]
        match.ended = blob["ended"]
        match.ended_wall = blob.get("ended_wall")
        match.stream = advanced_stream(match.signature, blob["stream_used"])
        return match


# ----- comparing ---------------------------------------------------------------------------------
def same(new: Any, old: Any) -> None:
    """Equal, and the same JSON text: types (1 / 1.0 / True) and key order count too."""
    assert new == old
    assert json.dumps(new) == json.dumps(old)


def same_match(new: LiveMatch, old: OldMatch, room: str = "ROOM42") -> None:
    """Everything rooms.py and storage can read from a match, compared."""
    assert new.seq == old.seq == len(new.history)
    for i in range(old.seq):
        same(new.history[i], old.actions[i])
        same(new.actions[i], old.actions[i])
        same(new.history[i - old.seq], old.actions[i])
    same(list(new.history), old.actions)
    same(new.actions, old.actions)
    same(new.history[1:-1:2], old.actions[1:-1:2])
    same(new.salts, old.salts)
    same(new.commitments, old.commitments)
    same(new.transcript, old.transcript)
    same(
        (new.deadline, new.ended, new.ended_wall, new.stream.consumed),
        (old.deadline, old.ended, old.ended_wall, old.stream.consumed),
    )
    same(new.fairness_json(reveal=False), old.fairness_json(reveal=False))
    same(new.fairness_json(reveal=True), old.fairness_json(reveal=True))
    same(new.to_blob(), old.to_blob())
    same((new.deadline, new.ended, new.ended_wall), (old.deadline, old.ended, old.ended_wall))
    assert new.state.snapshot() == old.state.snapshot()
    if old.over:
        same(new.record(room=room), old.record(room=room))


def as_stored(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries as storage gives them back (JSON text round trip, as MemoryStorage/SQLite do)."""
    return json.loads(json.dumps(entries))


def same_restore(new: LiveMatch, old: OldMatch, actions: list[dict[str, Any]]) -> None:
    """``from_blob(to_blob(), stored actions)`` of both, compared with each other and the original."""
    blob = json.loads(json.dumps(old.to_blob()))
    restored_new = LiveMatch.from_blob(copy.deepcopy(blob), copy.deepcopy(actions))
    restored_old = OldMatch.from_blob(copy.deepcopy(blob), copy.deepcopy(actions))
    same_match(restored_new, restored_old)
    same(restored_new.stream.consumed, restored_old.stream.consumed)


# ----- driving both with the same inputs -----------------------------------------------------------
class Pair:
    """A new and an old match fed identical inputs; every result compared."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.entropy_new = random.Random(seed + 1).randbytes
        self.entropy_old = random.Random(seed + 1).randbytes
        rng = self.rng
        kwargs = {
            "match_id": rng.randbytes(8).hex(),
            "number": rng.randint(1, 5),
            "seats_in_join_order": (3, 8),
            "first_sid": rng.choice((None, 3, 8)),
            "server_seed": rng.randbytes(32).hex(),
            "client_seeds": (rng.randbytes(16).hex(), "seed é|2"),
            "now": rng.choice((1_700_000_000.0, 1_700_000_000, 12.5)),
            "wall": 1_700_000_000.25,
            "turn_seconds": rng.choice((20.0, 20)),
            "names_by_sid": {3: "Ann", 8: "Bo"},
        }
        self.new = LiveMatch.start(**kwargs, version=1)  # the reference is the version 1 server
        self.old = OldMatch.start(**kwargs)
        self.now: float = kwargs["now"]
        self.stored: list[dict[str, Any]] = []  # what storage holds, entry by entry

    def time(self) -> float:
        """The next ``at``: mostly server-clock floats, sometimes an int or a long fraction."""
        self.now += self.rng.uniform(0.1, 5.0)
        roll = self.rng.random()
        if roll < 0.05:
            return int(self.now)
        if roll < 0.1:
            return self.now + 1e-7
        return self.now

    def both(self, call: Callable[[Any, RandBytes], Any]) -> Any:
        new = call(self.new, self.entropy_new)
        old = call(self.old, self.entropy_old)
        if isinstance(old, Refusal):
            assert new is old
        else:
            same(new, old)
            self.stored += as_stored(old)
        return old

    def step(self) -> None:
        rng, old = self.rng, self.old
        roll = rng.random()
        at = self.time()
        if roll < 0.015:
            kind = rng.choice((ActionType.RESIGN, ActionType.DISCONNECT, ActionType.VOID))
            seat = rng.randrange(2)
            self.both(lambda m, rb: m.end_by(kind, seat, at, rb))
        elif roll < 0.12:
            deadline = old.deadline
            self.both(lambda m, rb: m.expire(deadline, rb))
        elif roll < 0.2:  # refused: a random action, usually illegal (wrong seat, taken cell, ...)
            kind = rng.choice(list(ActionType))
            cell = rng.randrange(64) if kind in CELL_ACTIONS else None
            action = Action(rng.randrange(2), kind, cell)
            auto = rng.random() < 0.5
            self.both(lambda m, rb: m.apply(action, at=at, randbytes=rb, auto=auto))
        else:
            action = random_legal_action(old.state, rng)
            auto = rng.random() < 0.1
            self.both(lambda m, rb: m.apply(action, at=at, randbytes=rb, auto=auto))


def play_pair(seed: int, check_every: int = 7) -> Pair:
    pair = Pair(seed)
    steps = 0
    while not pair.old.over and steps < 400:
        steps += 1
        pair.step()
        if steps % check_every == 0:
            same_match(pair.new, pair.old)
            same_restore(pair.new, pair.old, pair.stored)
    if pair.old.over and pair.rng.random() < 0.5:
        pair.new.ended_wall = pair.old.ended_wall = pair.now + 0.5
    same_match(pair.new, pair.old)
    same_restore(pair.new, pair.old, pair.stored)
    return pair


@pytest.mark.parametrize("block", range(4))
def test_random_matches_give_the_same_entries_records_blobs_and_restores(block: int) -> None:
    """Seeded random matches: every observable of the packed history equals the list of dicts."""
    plants = ints = 0
    for seed in range(block * 1000, block * 1000 + 40):
        pair = play_pair(seed)
        assert pair.old.over, seed
        plants += len(pair.old.salts)
        ints += sum(type(e["at"]) is int for e in pair.old.actions)
    assert plants > 100 and ints > 10  # the cases that matter were exercised


def test_restore_keeps_unusual_stored_entries_verbatim() -> None:
    """Stored entries the server would not write today (extra keys, auto false, int times,
    foreign hashes) come back from from_blob exactly as the old list kept them."""
    pair = play_pair(12345)
    actions = pair.stored
    rng = random.Random(5)
    tweaks: list[Callable[[dict[str, Any]], None]] = [
        lambda e: e.update(note="kept"),
        lambda e: e.update(auto=False),
        lambda e: e.update(at=int(e["at"])),
        lambda e: e.pop("at"),
        lambda e: e.update(at=e["at"] * 1.0 + 0.5),
        lambda e: e.update(seat=e["seat"]),  # unchanged: still packed
        lambda e: e.update(cell=[0, 0]) if "cell" not in e else None,  # a cell on a non-cell action
        lambda e: e.update(commitment="AB" * 32) if "commitment" in e else None,
        lambda e: e.update(transcript="not a hash") if "transcript" in e else None,
        lambda e: e.update({"type": e.pop("type")}),  # key order changed
    ]
    for _ in range(30):
        tweaked = copy.deepcopy(actions)
        for entry in rng.sample(tweaked, k=min(6, len(tweaked))):
            rng.choice(tweaks)(entry)
        same_restore(pair.new, pair.old, tweaked)


def test_odd_salts_from_storage_round_trip() -> None:
    """Stored salts of another length than new_salt's 16 bytes come back unchanged, also in a
    match restored from only part of its rows."""
    pair = next(p for p in map(play_pair, range(700, 800)) if len(p.old.salts) >= 3)
    blob = json.loads(json.dumps(pair.old.to_blob()))
    blob["salts"][0] = "00ff"  # 2 bytes: the stored entries' commitments no longer match
    blob["salts"][-1] = "ab" * 40
    matches = []
    for cls in (LiveMatch, OldMatch):
        full = cls.from_blob(copy.deepcopy(blob), copy.deepcopy(pair.stored))
        half = cls.from_blob(copy.deepcopy(blob), copy.deepcopy(pair.stored[: len(pair.stored) // 2]))
        matches.append((full, half))
    (new, new_half), (old, old_half) = matches
    same_match(new, old)
    assert new.salts[0] == "00ff" and new.salts[-1] == "ab" * 40
    same_match(new_half, old_half)


def test_history_is_a_read_only_sequence_of_fresh_dicts() -> None:
    pair = play_pair(99)
    history, old = pair.new.history, pair.old.actions
    first = history[0]
    first["seat"] = 7
    first.setdefault("cell", []).append(9)
    same(history[0], old[0])
    assert history[-1] == old[-1] and history[0] is not history[0]
    with pytest.raises(IndexError):
        history[len(old)]
    with pytest.raises(IndexError):
        history[-len(old) - 1]
    odd = copy.deepcopy(pair.stored)
    odd[0]["note"] = {"kept": [1]}  # kept verbatim, and still handed out as a copy
    restored = LiveMatch.from_blob(json.loads(json.dumps(pair.old.to_blob())), odd)
    restored.history[0]["note"]["kept"].append(2)
    same(restored.history[0], odd[0])
    record = from_json({"format": FORMAT, "variant": "online", "actions": pair.new.actions})
    assert len(record.actions) == len(old)


# ----- memory ------------------------------------------------------------------------------------------
def _play_new(rng: random.Random) -> LiveMatch:
    """A complete match of random legal play, on float times like the server's clock."""
    now = 1_700_000_000.0 + rng.uniform(0, 100)
    match = LiveMatch.start(
        match_id=rng.randbytes(8).hex(), number=1, seats_in_join_order=(1, 2), first_sid=None,
        server_seed=rng.randbytes(32).hex(), client_seeds=(rng.randbytes(16).hex(), rng.randbytes(16).hex()),
        now=now, wall=now, turn_seconds=20.0,
    )
    while not match.over:
        now += rng.uniform(0.3, 6.0)
        if rng.random() < 0.04:
            match.expire(now, rng.randbytes)
        else:
            match.apply(random_legal_action(match.state, rng), at=now, randbytes=rng.randbytes)
    return match


def test_history_costs_few_bytes_per_action() -> None:
    """Measured ~32 bytes per action (benchmarks/bench_match_memory.py) against ~420 for the
    list of dicts; the bound leaves a wide margin and still catches a return to dicts."""
    rng = random.Random(2)
    inputs = []  # per match, what LiveMatch.apply hands its history, made before tracing
    for _ in range(150):
        entries = _play_new(rng).actions
        actions = from_json({"format": FORMAT, "variant": "online", "actions": entries}).actions
        salts = iter(_play_salts(entries))
        inputs.append([
            (
                action, e["at"], e.get("auto") is True,
                (next(salts), e["commitment"], e["transcript"]) if "commitment" in e else None,
            )
            for action, e in zip(actions, entries, strict=True)
        ])
    total = sum(len(steps) for steps in inputs)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        histories = []
        for steps in inputs:
            history = MatchHistory()
            for action, at, auto, plant in steps:
                history.add(action, at, auto, plant)
            histories.append(history)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert [len(h) for h in histories] == [len(steps) for steps in inputs]
    assert grown / total < 100, grown / total


def _play_salts(entries: list[dict[str, Any]]) -> list[str]:
    """Salt-shaped stand-ins (16 bytes of hex) for the plants of ``entries``."""
    return [e["commitment"][:32] for e in entries if "commitment" in e]
