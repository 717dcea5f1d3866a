"""Forged match records, built the way a careful dishonest operator would (issue 14, items 1–7).

Each builder takes an honest ONLINE record (the JSON object a server sends in ``match_end``)
and returns a new one that tells another story — and then recomputes everything a forger
can recompute, because the operator knows every secret once the match is over: the server
seed, the plants' salts. :func:`reseal` is that careful forger: commitment and round signature
from the (possibly new) server seed, the stream read by the first-player draw and the opening
auto-moves (``stream_used``), every plant's mine commitment from its revealed salt (R3b), the
transcript of the record's version (the plant chain of version 1, R3b; the whole-match
transcript of version 2, R3c, with its deadlines), the result, the turn count and the end
times. What a forger *cannot* recompute is what each player saw live; the player's witness
(RECORD.md) keeps it, and the tests show each forgery caught by a named check.

:func:`seat_end` gives what ``match_end`` shows one seat (result, reveal, turns, elapsed), in
the server's seat-relative wire form, so a proxy can make the result screen agree with a forged
record (:func:`forge_match_end`).

Pure: the shared rules and fairness code only, no clock, no I/O, deterministic.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from mineduel.shared.fairness import commitments as fairness
from mineduel.shared.fairness import transcript as tx
from mineduel.shared.fairness.record import from_json, result_json
from mineduel.shared.rules.engine import Action, ActionType, GameState, Phase, Refusal, Variant
from mineduel.shared.rules.events import restarts_deadline
from mineduel.shared.wire.board import result_of as wire_result_of
from mineduel.shared.wire.board import reveal_of

Record = dict[str, Any]
OPENING = (Phase.OPEN_EXPLORE, Phase.OPEN_PLANT)


class NoForgery(AssertionError):
    """This honest match has nothing the builder can rewrite (the test's match must provide it)."""


# ----- replaying a record ------------------------------------------------------------------------------
@dataclass
class Replayed:
    """A record's actions through the engine: what a verifier (and a forger) recomputes."""

    state: GameState
    events: list[Any] = field(default_factory=list)  # per accepted action, its events
    refused: int | None = None  # index of the first refused action
    plants: list[tuple[int, int, int]] = field(default_factory=list)  # (seq, seat, cell)
    before: list[GameState] = field(default_factory=list)  # the state before each action (copies)
    phases: list[Phase] = field(default_factory=list)  # the phase before each action

    @property
    def accepted(self) -> bool:
        return self.refused is None

    @property
    def over(self) -> bool:
        return self.state.over


def actions_of(record: Record) -> list[Action]:
    return list(from_json({"format": record["format"], "variant": record["variant"], "actions": record["actions"]}).actions)


def replay(record: Record, *, keep_states: bool = False) -> Replayed:
    state = GameState(Variant.ONLINE)
    out = Replayed(state)
    for seq, action in enumerate(actions_of(record)):
        out.phases.append(state.phase)
        if keep_states:
            out.before.append(state.copy())
        events = state.apply(action)
        if isinstance(events, Refusal):
            if out.refused is None:
                out.refused = seq
            out.events.append(None)
            continue
        out.events.append(events)
        if action.type is ActionType.PLANT:
            assert action.cell is not None
            out.plants.append((seq, action.seat, action.cell))
    return out


def is_auto_pick(entry: dict[str, Any], phase: Phase) -> bool:
    """An opening auto-move, which the stream chose (O4, R2)."""
    return bool(entry.get("auto")) and entry["type"] in ("explore", "plant") and phase in OPENING


def stream_for(fair: dict[str, Any]) -> fairness.FairStream:
    return fairness.FairStream.from_seeds(fair["server_seed"], fair["client_seeds"], fair["nonce"])


@dataclass(frozen=True)
class StreamPlan:
    """What the stream decided in a match: the first-player draw and each opening auto-move."""

    draw: bool
    first_index: int  # the join-order index that moved first
    picks: tuple[tuple[GameState, Action], ...]  # (state before, the recorded auto-move)


def stream_plan(record: Record) -> StreamPlan:
    fair = record["fairness"]
    played = replay(record, keep_states=True)
    actions = actions_of(record)
    picks = tuple((played.before[seq], actions[seq]) for seq, entry in enumerate(record["actions"])
                  if is_auto_pick(entry, played.phases[seq]))
    return StreamPlan(fair["first_player"] == "draw", list(fair["join_order"]).index(0), picks)


def stream_reads(record: Record, plan: StreamPlan | None = None) -> tuple[int, bool]:
    """(values the draw and the auto-moves read, whether every pick is the recorded one)."""
    plan = stream_plan(record) if plan is None else plan
    stream = stream_for(record["fairness"])
    agrees = True
    if plan.draw:
        agrees = stream.pick(2) == plan.first_index
    for state, action in plan.picks:
        agrees = state.opening_auto_action(stream) == action and agrees
    return stream.consumed, agrees


# ----- transcripts -------------------------------------------------------------------------------------
def transcript_v1(record: Record, upto: int | None = None) -> str:
    """R3b: the plant chain (after the plants among the first ``upto`` actions)."""
    fair = record["fairness"]
    played = replay(record)
    count = sum(1 for seq, _, _ in played.plants if upto is None or seq < upto)
    return fairness.transcript_hash(record["match_id"], fair["mine_commitments"][:count])


def transcript_v2(record: Record) -> list[str]:
    """R3c: ``[h_0, h_1, ..., h_n]`` of the whole-match transcript (RECORD.md, fairness version 2)."""
    fair, times = record["fairness"], record["times"]
    turn_ms = tx.millis(times["turn_seconds"])
    start_ms = tx.millis(times["clock_started"])
    h = tx.match_start(
        record["match_id"], fair["commitment"], fair["client_seeds"], fair["nonce"], fair["first_player"],
        fair["join_order"], turn_ms, start_ms, fair.get("previous_transcript"),
    )
    hashes = [h]
    state = GameState(Variant.ONLINE)
    deadline: int | None = start_ms + turn_ms
    commitments = iter(fair["mine_commitments"])
    for seq, (action, entry) in enumerate(zip(actions_of(record), record["actions"], strict=True)):
        events = state.apply(action)
        at_ms = tx.millis(entry["at"])
        if isinstance(events, Refusal):  # a forger keeps every action legal; hash it anyway
            events = None
        if state.over:
            deadline = None
        elif events is not None and restarts_deadline(events):
            deadline = at_ms + turn_ms
        commitment = next(commitments, "0" * 64) if action.type is ActionType.PLANT else None
        target = tx.target_of(str(action.type), action.cell, commitment)
        h = tx.step(h, seq, action.seat, str(action.type), target, at_ms, bool(entry.get("auto")), deadline)
        hashes.append(h)
    return hashes


def transcript_at(record: Record, seq: int) -> str:
    """The transcript after ``seq`` actions, in the record's version (what a ``state`` carried)."""
    if record["fairness"].get("version") == 2:
        return transcript_v2(record)[seq]
    return transcript_v1(record, upto=seq)


# ----- the careful forger ------------------------------------------------------------------------------
def reseal(record: Record, *, times: bool = True) -> Record:
    """Recompute everything a forger who knows the secrets can recompute (see the module docstring).

    ``times`` also moves the end of the match (``clock_ended``, ``elapsed``, ``ended``) to the
    last action; the impossible-times forgeries keep the times they wrote.
    """
    out = copy.deepcopy(record)
    fair = out["fairness"]
    fair["commitment"] = fairness.commitment(fair["server_seed"])
    fair["signature"] = fairness.round_signature(fair["server_seed"], fair["client_seeds"], fair["nonce"])
    played = replay(out)
    if not played.accepted:
        raise NoForgery(f"action {played.refused} of the forged record is refused")
    fair["stream_used"] = stream_reads(out)[0]
    salts = fair["salts"]
    if len(salts) < len(played.plants):
        raise NoForgery("more plants than salts")
    fair["salts"] = salts[: len(played.plants)]
    fair["mine_commitments"] = [
        fairness.mine_commitment(salt, out["match_id"], seq, seat, cell)
        for salt, (seq, seat, cell) in zip(fair["salts"], played.plants, strict=True)
    ]
    if fair.get("version") == 2:
        fair["transcript"] = transcript_v2(out)[-1]
    else:
        fair["transcript"] = transcript_v1(out)
    out["result"] = result_json(played.state)
    t = out["times"]
    t["turns"] = played.state.turn
    if times and out["actions"]:
        moved = out["actions"][-1]["at"] - t["clock_ended"]  # the end moves with the last action
        t["clock_ended"] = out["actions"][-1]["at"]
        t["elapsed"] = round(t["clock_ended"] - t["clock_started"], 3)
        t["ended"] = round(t["ended"] + moved, 3)
    return out


def as_version1(record: Record) -> Record:
    """The same match as an older server (fairness version 1, the plant chain) would have recorded it."""
    out = copy.deepcopy(record)
    fair = out["fairness"]
    fair["version"] = 1
    fair.pop("previous_transcript", None)
    fair["transcript"] = transcript_v1(out)
    return out


def witness_as_version1(witness: dict[str, Any], record_v1: Record) -> dict[str, Any]:
    """What a client of that older server kept: its ``state.transcript`` was the plant chain."""
    out = copy.deepcopy(witness)
    seq = out["transcript"]["seq"]
    out["transcript"]["hash"] = transcript_v1(record_v1, upto=seq)
    out["previous"] = None
    return out


# ----- what match_end shows a seat ------------------------------------------------------------------------
def seat_end(record: Record, seat: int) -> dict[str, Any]:
    """``match_end``'s result, reveal, turns and elapsed for ``seat``, recomputed from ``record``."""
    played = replay(record)
    outcome = played.state.outcome()
    if outcome is None:
        raise NoForgery("the forged match is not over")
    return {
        "result": wire_result_of(outcome, seat).wire(),
        "reveal": reveal_of(played.state.reveal(), seat).wire(),
        "turns": played.state.turn,
        "elapsed": record["times"]["elapsed"],
    }


def forge_match_end(msg: dict[str, Any], forged: Record, *, screen: bool = True) -> dict[str, Any]:
    """A ``match_end`` carrying ``forged``; with ``screen`` the result screen agrees with it too."""
    out = dict(msg)
    out["record"] = forged
    if screen:
        shown = seat_end(forged, msg["seat"])
        if shown["elapsed"] < 0:  # no client shows a negative time: the forger keeps the one sent
            shown["elapsed"] = msg["elapsed"]
        out.update(shown)
    return out


# ----- helpers for the builders --------------------------------------------------------------------------
def _cell_of(entry: dict[str, Any]) -> int:
    row, col = entry["cell"]
    return int(row) * 8 + int(col)


def _set_cell(entry: dict[str, Any], cell: int) -> None:
    entry["cell"] = [cell // 8, cell % 8]


def _first_legal(candidates: Iterable[Record], accept: Callable[[Replayed], bool]) -> Record:
    for candidate in candidates:
        played = replay(candidate)
        if played.accepted and accept(played):
            return candidate
    raise NoForgery("no rewrite keeps every action legal")


def _ends(played: Replayed) -> bool:
    return played.over


def grind(record: Record, field_name: str, make: Callable[[int], Any], limit: int = 200_000) -> None:
    """Set ``fairness[field_name] = make(k)`` for the first ``k`` whose stream reproduces the match's
    draw and auto-moves (what an operator grinds when it changes an input of the stream)."""
    fair = record["fairness"]
    plan = stream_plan(record)
    for k in range(limit):
        trial = {**fair, field_name: make(k)}
        if stream_reads({**record, "fairness": trial}, plan)[1]:
            fair[field_name] = trial[field_name]
            return
    raise NoForgery(f"no {field_name} reproduces the draw in {limit} tries")


# ----- issue 14, items 1–7 -----------------------------------------------------------------------------
def new_server_seed(record: Record) -> Record:
    """1. A server seed chosen after both client seeds were seen: ground until the draw gives the
    first player the operator wants (here: the one who did move first, so the match stands),
    with commitment, signature, stream and transcript recomputed."""
    out = copy.deepcopy(record)
    grind(out, "server_seed", lambda k: f"operator-ground-{k}")
    return reseal(out)


def other_person_first(record: Record) -> Record:
    """2. The other person made first player: the players swap seats, the fairness block stays."""
    out = copy.deepcopy(record)
    names = [p["name"] for p in out["players"]]
    out["players"] = [{"seat": 0, "name": names[1]}, {"seat": 1, "name": names[0]}]
    return out


def first_match_swap(record: Record) -> Record:
    """3. A room's first match labelled ``swap``: no draw to check (stream and transcript recomputed)."""
    if record["fairness"]["nonce"] != 1:
        raise NoForgery("needs a room's first match")
    out = copy.deepcopy(record)
    out["fairness"]["first_player"] = "swap"
    if not stream_reads(out)[1]:  # without the draw the auto-moves read other values: regrind the seed
        grind(out, "server_seed", lambda k: f"operator-swap-{k}")
    return reseal(out)


def moved_mine(record: Record) -> Record:
    """4. The opponent's planted mine moved onto a cell the victim explored safely later: the match
    now ends there as a KO. The plant's commitment is recomputed from its revealed salt; the
    actions after the KO, their salts and the end times go. (An auto-plant is left alone: the
    stream chose its cell.)"""
    played = replay(record)
    entries = record["actions"]
    for p, planter, cell in played.plants:
        if entries[p].get("auto"):
            continue
        for q in range(p + 1, len(entries)):
            e = entries[q]
            if e["type"] != "explore" or e["seat"] == planter or _cell_of(e) == cell:
                continue
            out = copy.deepcopy(record)
            out["actions"] = out["actions"][: q + 1]
            _set_cell(out["actions"][p], _cell_of(e))
            r = replay(out)
            outcome = r.state.outcome()
            if r.accepted and outcome is not None and str(outcome.reason) == "ko" and outcome.winner == planter:
                return reseal(out)
    raise NoForgery("no plant can be moved onto a cell the other seat explored later")


def chosen_auto_move(record: Record, *, drop_timeout: bool = False) -> Record:
    """5. The last opening auto-move replaced by a cell the operator chose, its ``auto`` flag
    dropped and ``stream_used`` adjusted. With ``drop_timeout`` the timeout before it goes too
    (and everything after it moves up one ``seq``: commitments and transcript recomputed)."""
    played = replay(record, keep_states=True)
    autos = [i for i, e in enumerate(record["actions"]) if is_auto_pick(e, played.phases[i])]
    if not autos:
        raise NoForgery("needs an opening auto-move")
    a = autos[-1]
    state = played.before[a]
    honest = _cell_of(record["actions"][a])
    seat = record["actions"][a]["seat"]
    options = [c for c in range(64) if state.explorable(seat) >> c & 1 and c != honest]

    def candidates() -> Iterable[Record]:
        for cell in options:
            out = copy.deepcopy(record)
            entry = out["actions"][a]
            _set_cell(entry, cell)
            entry.pop("auto")
            if drop_timeout:
                assert out["actions"][a - 1]["type"] == "timeout"
                del out["actions"][a - 1]
            yield out

    return reseal(_first_legal(candidates(), _ends))


def rewritten_cells(record: Record) -> Record:
    """6. Explored cells and flags rewritten: one normal-turn explore and one flag (with its unflag)
    moved to other cells, every action still legal, result and transcript recomputed."""
    played = replay(record)
    out = copy.deepcopy(record)
    changed = 0
    explores = [i for i, e in enumerate(out["actions"])
                if e["type"] == "explore" and played.phases[i] is Phase.EXPLORE and i < len(out["actions"]) - 1]
    for i in explores:
        honest = _cell_of(out["actions"][i])
        for cell in range(64):
            if cell == honest:
                continue
            trial = copy.deepcopy(out)
            _set_cell(trial["actions"][i], cell)
            r = replay(trial)
            if r.accepted and r.over:
                out, changed = trial, changed + 1
                break
        if changed:
            break
    flags = [i for i, e in enumerate(out["actions"]) if e["type"] == "flag"]
    for i in flags:
        honest = _cell_of(out["actions"][i])
        seat = out["actions"][i]["seat"]
        later = [j for j in range(i + 1, len(out["actions"]))
                 if out["actions"][j]["type"] == "unflag" and out["actions"][j]["seat"] == seat
                 and _cell_of(out["actions"][j]) == honest]
        done = False
        for cell in range(64):
            if cell == honest:
                continue
            trial = copy.deepcopy(out)
            _set_cell(trial["actions"][i], cell)
            for j in later[:1]:
                _set_cell(trial["actions"][j], cell)
            r = replay(trial)
            if r.accepted and r.over:
                out, changed, done = trial, changed + 1, True
                break
        if done:
            break
    if changed < 2:
        raise NoForgery(f"needs a normal-turn explore and a flag that can move ({changed} rewritten)")
    return reseal(out)


def times_backwards(record: Record) -> Record:
    """7. Times going backwards: the last action is dated before the one before it."""
    out = copy.deepcopy(record)
    actions = out["actions"]
    actions[-1]["at"] = round(actions[-2]["at"] - 0.5, 3)
    return reseal(out, times=False)


def long_turn(record: Record) -> Record:
    """7. A 900 s turn with no timeout: from a normal-turn explore on, everything is 900 s later."""
    out = copy.deepcopy(record)
    played = replay(out)
    k = next((i for i, e in enumerate(out["actions"])
              if e["type"] == "explore" and played.phases[i] is Phase.EXPLORE), None)
    if k is None:
        raise NoForgery("needs a normal-turn explore")
    for e in out["actions"][k:]:
        e["at"] = round(e["at"] + 900.0, 3)
    return reseal(out)


def negative_elapsed(record: Record) -> Record:
    """7. A negative elapsed time (the clock's end written before its start)."""
    out = copy.deepcopy(record)
    t = out["times"]
    t["elapsed"] = round(-abs(t["elapsed"]) - 1.0, 3)
    return out


def four_opening_timeouts(record: Record) -> Record:
    """7. Four opening timeouts before one auto-move (O4 allows one): three more inserted."""
    played = replay(record)
    autos = [i for i, e in enumerate(record["actions"]) if is_auto_pick(e, played.phases[i])]
    if not autos:
        raise NoForgery("needs an opening auto-move")
    a = autos[-1]
    out = copy.deepcopy(record)
    timeout = out["actions"][a - 1]
    assert timeout["type"] == "timeout"
    out["actions"][a:a] = [copy.deepcopy(timeout) for _ in range(3)]
    return reseal(out, times=False)


def seed_with_colon(record: Record) -> Record:
    """7. A client seed containing ``:``: the operator appends ``:k`` to the second seed (the same
    signature as three seeds), ground until the stream reproduces the match."""
    out = copy.deepcopy(record)
    seed = out["fairness"]["client_seeds"][1]

    def make(k: int) -> list[str]:
        return [out["fairness"]["client_seeds"][0], f"{seed}:{k}"]

    grind(out, "client_seeds", make)
    return reseal(out)


def string_nonce(record: Record) -> Record:
    """7. The nonce as a string: ``"1"`` signs and hashes exactly like ``1``."""
    out = copy.deepcopy(record)
    out["fairness"]["nonce"] = str(out["fairness"]["nonce"])
    return reseal(out)


BUILDERS: dict[str, Callable[[Record], Record]] = {
    "new_server_seed": new_server_seed,
    "other_person_first": other_person_first,
    "first_match_swap": first_match_swap,
    "moved_mine": moved_mine,
    "chosen_auto_move": chosen_auto_move,
    "chosen_auto_move_no_timeout": lambda r: chosen_auto_move(r, drop_timeout=True),
    "rewritten_cells": rewritten_cells,
    "times_backwards": times_backwards,
    "long_turn": long_turn,
    "negative_elapsed": negative_elapsed,
    "four_opening_timeouts": four_opening_timeouts,
    "seed_with_colon": seed_with_colon,
    "string_nonce": string_nonce,
}
"""Every forgery by name (the test parametrizes over these)."""
