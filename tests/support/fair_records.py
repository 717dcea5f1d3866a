"""Honest fairness-version-2 records and witnesses, built without the server (RULES.md §9, RECORD.md).

The server produces version 2 records only once it implements them; the verifier's unit tests
need honest ones now, and forgeries built the way a careful operator would. This module plays a
match the way the server does — the pure engine (``GameState.apply``), the R1 stream for the
first-player draw and the opening auto-moves, salted mine commitments (R3b), deadlines restarted
by ``restarts_deadline`` on millisecond times, the whole-match transcript of
``shared/fairness/transcript.py`` (R3c) — and writes the record and each seat's witness
(``mine-duel-witness/1``) as the server and the game client would. It never calls the verifier.

Times are kept as integer milliseconds (the server rounds its times to 3 decimals, so every
deadline is ``at + turn`` to the millisecond and a timeout's ``at`` is its deadline exactly).

:func:`build` is also the careful forger: given the match's parameters (every secret included)
and any list of actions, it recomputes commitments, signature, the stream count, the plant
commitments from the salts, the transcript, the result and the times — everything an operator
who wrote the record could recompute. What it cannot rewrite is a witness made from the honest
record (:func:`witness_of`).
"""

from __future__ import annotations

import copy
import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from mineduel.shared.fairness import commitments as fairness
from mineduel.shared.fairness import transcript
from mineduel.shared.fairness.record import FORMAT, result_json
from mineduel.shared.rules.bitboard import COLS, cells
from mineduel.shared.rules.engine import OPENING_PHASES, Action, ActionType, GameState, Phase, Refusal, Variant
from mineduel.shared.rules.events import restarts_deadline
from mineduel.shared.wire.board import result_of, reveal_of

Entry = dict[str, Any]
"""One record action as RECORD.md spells it, but with ``at`` in integer milliseconds (``at_ms``)."""

WITNESS_FORMAT = "mine-duel-witness/1"
SERVER = "127.0.0.1:47650"


@dataclass(frozen=True)
class MatchParams:
    """Everything a match is built from, secrets included (the operator knows them all)."""

    match_id: str
    room: str
    names_by_join: tuple[str, str]
    seeds_by_join: tuple[str, str]
    server_seed: str
    nonce: int
    first_player: str  # "draw" | "swap"
    join_order: tuple[int, int]  # record seat of each join position
    turn_ms: int
    start_ms: int
    wall_start: float
    previous: str | None
    previous_match_id: str | None
    salts: tuple[str, ...]

    @property
    def commitment(self) -> str:
        return fairness.commitment(self.server_seed)

    @property
    def signature(self) -> str:
        return fairness.round_signature(self.server_seed, list(self.seeds_by_join), self.nonce)

    def name_of(self, seat: int) -> str:
        return self.names_by_join[self.join_order.index(seat)]


def draw_join_order(server_seed: str, seeds_by_join: Sequence[str], nonce: int) -> tuple[int, int]:
    """O3/R2: the stream's first pick chooses the join position that moves first (record seat 0)."""
    first = fairness.FairStream.from_seeds(server_seed, list(seeds_by_join), nonce).pick(2)
    return (0, 1) if first == 0 else (1, 0)


def first_params(rng: random.Random, *, turn_seconds: float = 20.0, server_seed: str | None = None) -> MatchParams:
    """A room's first match (nonce 1, first player drawn, no previous match)."""
    seed = server_seed if server_seed is not None else rng.randbytes(32).hex()
    seeds = (f"ann-{rng.randrange(1000)}", f"bob-{rng.randrange(1000)}")
    return MatchParams(
        match_id=rng.randbytes(8).hex(),
        room="".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(6)),
        names_by_join=("Ann", "Bob"),
        seeds_by_join=seeds,
        server_seed=seed,
        nonce=1,
        first_player="draw",
        join_order=draw_join_order(seed, seeds, 1),
        turn_ms=round(turn_seconds * 1000),
        start_ms=1_700_000_000_000 + rng.randrange(1000),
        wall_start=1_700_000_000.0 + rng.randrange(1000) / 1000,
        previous=None,
        previous_match_id=None,
        salts=tuple(rng.randbytes(fairness.SALT_BYTES).hex() for _ in range(64)),
    )


def rematch_params(rng: random.Random, before: MatchParams, before_record: dict[str, Any]) -> MatchParams:
    """O14: the next match of the room: sides swap, the nonce counts on, h_0 links the match before."""
    end_ms = round(before_record["times"]["clock_ended"] * 1000)
    return replace(
        before,
        match_id=rng.randbytes(8).hex(),
        seeds_by_join=(f"ann-{rng.randrange(1000)}", f"bob-{rng.randrange(1000)}"),
        server_seed=rng.randbytes(32).hex(),
        nonce=before.nonce + 1,
        first_player="swap",
        join_order=(before.join_order[1], before.join_order[0]),
        start_ms=end_ms + 5_000 + rng.randrange(1000),
        wall_start=before.wall_start + (end_ms - before.start_ms) / 1000 + 5,
        previous=before_record["fairness"]["transcript"],
        previous_match_id=before.match_id,
        salts=tuple(rng.randbytes(fairness.SALT_BYTES).hex() for _ in range(64)),
    )


# ----- playing -------------------------------------------------------------------------------------------------


@dataclass
class _Live:
    params: MatchParams
    state: GameState = field(default_factory=lambda: GameState(Variant.ONLINE))
    entries: list[Entry] = field(default_factory=list)
    stream: fairness.FairStream | None = None
    now: int = 0
    deadline: int | None = None

    def add(self, action: Action, at: int, auto: bool) -> None:
        events = self.state.apply(action)
        assert not isinstance(events, Refusal), (action, events)
        entry: Entry = {"seat": action.seat, "type": str(action.type)}
        if action.cell is not None:
            entry["cell"] = list(divmod(action.cell, COLS))
        entry["at_ms"] = at
        if auto:
            entry["auto"] = True
        self.entries.append(entry)
        self.now = at
        if self.state.over:
            self.deadline = None
        elif restarts_deadline(events):
            self.deadline = at + self.params.turn_ms


def play(params: MatchParams, rng: random.Random, *, timeouts: float = 0.15, endings: float = 0.01,
         max_actions: int = 300) -> list[Entry]:
    """An honest match: random legal moves in time, timeouts at their deadlines (O4 auto-moves
    from the stream), now and then a resignation, a disconnection or a void (O11, O12)."""
    live = _Live(params)
    stream = fairness.FairStream(params.signature)
    if params.first_player == "draw":
        stream.pick(2)  # the draw (O3) is the stream's first read
    live.stream = stream
    live.now = params.start_ms
    live.deadline = params.start_ms + params.turn_ms
    state = live.state
    while not state.over and len(live.entries) < max_actions:
        assert live.deadline is not None
        seat = state.to_move
        assert seat is not None
        left = live.deadline - live.now
        roll = rng.random()
        if roll < endings:
            at = live.now + rng.randrange(0, max(1, left))
            kind = rng.choices([ActionType.RESIGN, ActionType.DISCONNECT, ActionType.VOID], [5, 3, 1])[0]
            live.add(Action(rng.randrange(2), kind), at, auto=kind is not ActionType.RESIGN)
            break
        if roll < endings + timeouts or left <= 1:
            at = live.deadline
            opening = state.phase in OPENING_PHASES
            live.add(Action(seat, ActionType.TIMEOUT), at, auto=True)
            if opening and not state.over:
                live.add(state.opening_auto_action(stream), at, auto=True)
            continue
        at = live.now + rng.randrange(0, min(left, 4000))
        live.add(_choose(state, rng), at, auto=False)
    if not state.over:  # a guard: end it the way a player may
        live.add(Action(state.to_move or 0, ActionType.RESIGN), live.now, auto=False)
    return live.entries


def _choose(state: GameState, rng: random.Random) -> Action:
    """A legal move, markers now and then (so that flags, unflags and score endings occur)."""
    legal = list(state.legal_actions())
    markers = [a for a in legal if a.type in (ActionType.FLAG, ActionType.UNFLAG)]
    others = [a for a in legal if a.type not in (ActionType.FLAG, ActionType.UNFLAG)]
    if markers and (not others or rng.random() < 0.3):
        return rng.choice(markers)
    end_turn = [a for a in others if a.type is ActionType.END_TURN]
    if end_turn and rng.random() < 0.7:
        return end_turn[0]
    if state.phase in (Phase.EXPLORE, Phase.OPEN_EXPLORE):
        # Explore next to what is open when possible: longer matches than blind guessing.
        safe = [a for a in others if a.cell is not None and not (state.any_mine >> a.cell & 1)]
        if safe and rng.random() < 0.85:
            return rng.choice(safe)
    return rng.choice(others)


# ----- the record ----------------------------------------------------------------------------------------------


def _actions(entries: Sequence[Entry]) -> list[Action]:
    out = []
    for e in entries:
        cell = e.get("cell")
        out.append(Action(e["seat"], ActionType(e["type"]), None if cell is None else cell[0] * COLS + cell[1]))
    return out


def build(params: MatchParams, entries: Sequence[Entry], *, version: int = 2) -> dict[str, Any]:
    """The record of ``entries`` (``at_ms`` times), everything derived recomputed from ``params``.

    Refused actions are kept (a forger may write them); the engine skips them as a verifier does.
    ``version=1`` writes the record an older server wrote: the plant chain (R3b) as its transcript,
    no ``previous_transcript``.
    """
    state = GameState(Variant.ONLINE)
    deadline: int | None = params.start_ms + params.turn_ms
    h = transcript.match_start(
        params.match_id, params.commitment, params.seeds_by_join, params.nonce, params.first_player,
        params.join_order, params.turn_ms, params.start_ms, params.previous,
    )
    hashes = [h]
    commitments: list[str] = []
    salts: list[str] = []
    stream_used = 1 if params.first_player == "draw" else 0
    for seq, (entry, action) in enumerate(zip(entries, _actions(entries), strict=True)):
        at = entry["at_ms"]
        events = state.apply(action)
        commitment = None
        if action.type is ActionType.PLANT:
            assert action.cell is not None
            salt = params.salts[len(salts)]
            commitment = fairness.mine_commitment(salt, params.match_id, seq, action.seat, action.cell)
            salts.append(salt)
            commitments.append(commitment)
        if entry.get("auto") and action.type in (ActionType.EXPLORE, ActionType.PLANT):
            stream_used += 1
        if not isinstance(events, Refusal):
            if state.over:
                deadline = None
            elif restarts_deadline(events):
                deadline = at + params.turn_ms
        target = transcript.target_of(str(action.type), action.cell, commitment)
        h = transcript.step(h, seq, action.seat, str(action.type), target, at, bool(entry.get("auto")), deadline)
        hashes.append(h)
    end_ms = entries[-1]["at_ms"] if entries else params.start_ms
    actions = []
    for entry in entries:
        out = {k: v for k, v in entry.items() if k != "at_ms"}
        out.pop("auto", None)
        out["at"] = entry["at_ms"] / 1000
        if entry.get("auto"):
            out["auto"] = True
        actions.append(out)
    elapsed = (end_ms - params.start_ms) / 1000
    fair: dict[str, Any] = {
        "version": version,
        "commitment": params.commitment,
        "client_seeds": list(params.seeds_by_join),
        "nonce": params.nonce,
        "first_player": params.first_player,
        "join_order": list(params.join_order),
        "mine_commitments": commitments,
        "transcript": h if version == 2 else fairness.transcript_hash(params.match_id, commitments),
        "previous_transcript": params.previous,
        "server_seed": params.server_seed,
        "signature": params.signature,
        "salts": salts,
        "stream_used": stream_used,
    }
    if version == 1:
        del fair["previous_transcript"]
    return {
        "format": FORMAT,
        "variant": "online",
        "match_id": params.match_id,
        "room": params.room,
        "players": [{"seat": s, "name": params.name_of(s)} for s in (0, 1)],
        "actions": actions,
        "fairness": fair,
        "times": {
            "started": params.wall_start,
            "ended": round(params.wall_start + elapsed, 3),
            "elapsed": elapsed,
            "turns": state.turn,
            "clock_started": params.start_ms / 1000,
            "clock_ended": end_ms / 1000,
            "turn_seconds": params.turn_ms / 1000,
        },
        "result": result_json(state),
    }


def hashes_of(params: MatchParams, entries: Sequence[Entry]) -> list[str]:
    """``h_0 .. h_n`` of ``entries`` (what each ``state`` carried at its ``seq``)."""
    record = build(params, entries[:0])
    out = [record["fairness"]["transcript"]]
    for n in range(1, len(entries) + 1):
        out.append(build(params, entries[:n])["fairness"]["transcript"])
    return out


def entries_of(record: dict[str, Any]) -> list[Entry]:
    """A record's actions back as entries with ``at_ms`` (to forge them and :func:`build` again)."""
    out = []
    for a in record["actions"]:
        entry = {k: v for k, v in a.items() if k != "at"}
        entry["at_ms"] = round(a["at"] * 1000)
        out.append(entry)
    return copy.deepcopy(out)


# ----- the witness ---------------------------------------------------------------------------------------------


def witness_of(params: MatchParams, entries: Sequence[Entry], seat: int, *, upto: int | None = None,
               end: bool = True, version: int = 2) -> dict[str, Any]:
    """What seat ``seat``'s client kept of the honest match: ``upto`` actions seen (all by default)."""
    record = build(params, entries, version=version)
    n = len(entries) if upto is None else upto
    join = params.join_order.index(seat)
    state = GameState(Variant.ONLINE)
    for action in _actions(entries):
        state.apply(action)
    plants = []
    k = 0
    for seq, entry in enumerate(entries):
        if entry["type"] == "plant":
            if seq < n:
                plants.append({"seq": seq, "commitment": record["fairness"]["mine_commitments"][k]})
            k += 1
    seen = record if n == len(entries) else build(params, entries[:n], version=version)
    outcome = state.outcome()
    show_end = end and n == len(entries) and outcome is not None
    return {
        "format": WITNESS_FORMAT,
        "match_id": params.match_id,
        "room": params.room,
        "server": SERVER,
        "seat": seat,
        "seed_index": join,
        "client_seed": params.seeds_by_join[join],
        "commitment_before_ready": params.commitment,
        "names": {"me": params.name_of(seat), "opponent": params.name_of(1 - seat)},
        "match_start": {
            "commitment": params.commitment,
            "client_seeds": list(params.seeds_by_join),
            "nonce": params.nonce,
            "first_player_rule": params.first_player,
            "first": "me" if seat == 0 else "opponent",
            "turn_seconds": params.turn_ms / 1000,
            "started": params.start_ms / 1000,
        },
        "previous": None if params.previous is None or version == 1 else {
            "match_id": params.previous_match_id, "transcript": params.previous,
        },
        "plants": plants,
        "transcript": {"seq": n, "hash": seen["fairness"]["transcript"]},
        "end": None if not show_end else {
            "result": result_of(outcome, seat).wire(),
            "reveal": _lists(reveal_of(state.reveal(), seat).wire()),
            "turns": state.turn,
            "elapsed": record["times"]["elapsed"],
        },
    }


def _lists(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_lists(v) for v in value]
    return value


# ----- whole matches and rooms -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Honest:
    """One honest match: its parameters (secrets included), its entries, the record and both witnesses."""

    params: MatchParams
    entries: tuple[Entry, ...]
    record: dict[str, Any]
    witnesses: tuple[dict[str, Any], dict[str, Any]]

    def forged(self, entries: Sequence[Entry] | None = None, **changes: Any) -> dict[str, Any]:
        """The careful forger: other entries and/or parameters, everything derived recomputed."""
        params = replace(self.params, **changes) if changes else self.params
        return build(params, self.entries if entries is None else entries)


def honest(params: MatchParams, entries: Sequence[Entry]) -> Honest:
    record = build(params, entries)
    return Honest(params, tuple(copy.deepcopy(list(entries))), record,
                  (witness_of(params, entries, 0), witness_of(params, entries, 1)))


def honest_match(seed: int, **play_options: Any) -> Honest:
    rng = random.Random(seed)
    params = first_params(rng)
    return honest(params, play(params, rng, **play_options))


def honest_room(seed: int, matches: int, **play_options: Any) -> list[Honest]:
    """A room's first match and its rematches (O14), each record linked to the one before it."""
    rng = random.Random(seed)
    params = first_params(rng)
    room = [honest(params, play(params, rng, **play_options))]
    for _ in range(matches - 1):
        params = rematch_params(rng, room[-1].params, room[-1].record)
        room.append(honest(params, play(params, rng, **play_options)))
    return room


def find_match(predicate: Any, *, seeds: range = range(1, 400), **play_options: Any) -> Honest:
    """The first honest match (by seed) whose entries satisfy ``predicate(Honest)``."""
    for seed in seeds:
        match = honest_match(seed, **play_options)
        if predicate(match):
            return match
    raise AssertionError("no honest match of these seeds has what the test needs")


def cells_of(mask: int) -> list[int]:
    return list(cells(mask))
