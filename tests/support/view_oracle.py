"""What a seat's ``state`` must say, rebuilt without the server's engine: a test oracle.

The fault-injection suites (a SIGKILLed server, a silent network) compare what the server
shows after the fault with an independent replay of the match's record actions through
``reference_rules.py`` (written from RULES.md alone). Nothing here imports
``mineduel.shared.rules.engine`` or ``mineduel.shared.fairness.commitments``: the transcript is rehashed from
PROTOCOL.md §10's words (version 1, the plant chain) or RECORD.md's (version 2, the whole-match
transcript R3c, with the deadlines rederived from O4/O5), the deadline is rederived from O4/O5.

The record actions come from the seats' own histories (``state.events``): each seat sees its
own plants' cells and never the opponent's (R3b), so the two seats' histories together give
the whole record.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from support import reference_rules as ref

Action = tuple[int, str, tuple[int, int] | None]


def _sha3(text: str) -> str:
    return hashlib.sha3_256(text.encode("utf-8")).hexdigest()


def transcript_after(match_id: str, commitments: Sequence[str]) -> str:
    """PROTOCOL.md §10: ``SHA3-256("mine-duel/chain/1|" + h + "|" + commitment)`` from the match's start hash."""
    h = _sha3(f"mine-duel/transcript/1|{match_id}")
    for commitment in commitments:
        h = _sha3(f"mine-duel/chain/1|{h}|{commitment}")
    return h


def _deadline_moves(before: tuple[Any, ...], after: tuple[Any, ...]) -> bool:
    """O4/O5: the action from ``before`` to ``after`` (phase, to move, turn) started a new deadline."""
    return after != before and (before[0] in ref.OPENING_PHASES or after[2] != before[2])


def transcript_v2(
    actions: Sequence[Mapping[str, Any]], *, match_id: str, commitment: str, client_seeds: Sequence[str], nonce: int,
    first_player: str, join_order: Sequence[int], turn_seconds: float, started: float, previous: str | None,
    plant_commitments: Sequence[str] | None = None,
) -> list[str]:
    """RECORD.md (fairness version 2): ``[h_0, ..., h_n]`` after each of ``actions`` (record actions
    with ``at`` and ``auto``; a plant's ``commitment`` from the action, or in order from
    ``plant_commitments`` for a record's actions, which carry none)."""
    turn_ms, start_ms = round(turn_seconds * 1000), round(started * 1000)
    h = _sha3(
        f"mine-duel/match/2|{match_id}|{commitment}|{client_seeds[0]}|{client_seeds[1]}|{nonce}|{first_player}"
        f"|{join_order[0]},{join_order[1]}|{turn_ms}|{start_ms}|{'-' if previous is None else previous}"
    )
    hashes = [h]
    match = ref.RefMatch("online")
    deadline: int | None = start_ms + turn_ms
    plants = iter(plant_commitments or ())
    for i, action in enumerate(actions):
        before = (match.phase, match.to_move, match.turn)
        cell = action.get("cell")
        match.act(action["seat"], action["type"], None if cell is None else (cell[0], cell[1]))
        at_ms = round(action["at"] * 1000)
        if match.over:
            deadline = None
        elif _deadline_moves(before, (match.phase, match.to_move, match.turn)):
            deadline = at_ms + turn_ms
        if action["type"] == "plant":
            target = action["commitment"] if "commitment" in action else next(plants)
        elif action["type"] in ("explore", "flag", "unflag"):
            target = f"{cell[0]},{cell[1]}"
        else:
            target = "-"
        h = _sha3(
            f"mine-duel/step/2|{h}|{i}|{action['seat']}|{action['type']}|{target}|{at_ms}"
            f"|{1 if action.get('auto') else 0}|{'-' if deadline is None else deadline}"
        )
        hashes.append(h)
    return hashes


def start_of(start: Mapping[str, Any], previous: str | None = None) -> dict[str, Any]:
    """``transcript_v2``'s keywords from a seat's ``match_start`` message (``previous``: the room's
    previous match's final transcript for a rematch)."""
    seat, index = start["seat"], start["my_seed_index"]
    join_order = [index, 1 - index] if seat == 0 else [1 - index, index]
    return {
        "match_id": start["match_id"], "commitment": start["commitment"], "client_seeds": start["client_seeds"],
        "nonce": start["nonce"], "first_player": start["first_player_rule"], "join_order": join_order,
        "turn_seconds": start["turn_seconds"], "started": start["started"], "previous": previous,
    }


def _public(event: Mapping[str, Any]) -> dict[str, Any]:
    """An event as both seats may see it: a plant's cell removed (only its owner sees it)."""
    out = dict(event)
    if out["action"] == "plant":
        out.pop("cell", None)
    return out


def merge_histories(seat_events: Mapping[int, Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Both seats' full histories (``{record seat: events}``) → the record actions with ``seat`` and ``at``.

    Each action is taken from the seat that made it (it sees its own cells) and checked
    against the other seat's copy: the same action, time and hashes, the opponent's plant cell
    hidden (V2, R3b). Raises ``AssertionError`` if the two histories disagree.
    """
    a, b = seat_events[0], seat_events[1]
    assert len(a) == len(b), f"the seats' histories differ in length: {len(a)} vs {len(b)}"
    actions = []
    for i, (e0, e1) in enumerate(zip(a, b, strict=True)):
        assert e0["seq"] == e1["seq"] == i, f"history out of order at {i}: {e0['seq']}, {e1['seq']}"
        own, other, seat = (e0, e1, 0) if e0["by"] == "me" else (e1, e0, 1)
        assert own["by"] == "me" and other["by"] == "opponent", f"seq {i}: both seats say they made it: {e0} vs {e1}"
        assert _public(own) | {"by": "opponent"} == _public(other), f"the seats' histories disagree at seq {i}: {e0} vs {e1}"
        assert not (other["action"] == "plant" and "cell" in other), f"seq {i}: the opponent's plant shows its cell (R3b)"
        assert ("cell" in own) == (own["action"] in ref.CELL_TYPES), f"seq {i}: cell missing or extra in {own}"
        action: dict[str, Any] = {"seat": seat, "type": own["action"], "at": own["at"]}
        if "cell" in own:
            action["cell"] = list(own["cell"])
        for key in ("auto", "commitment", "transcript"):
            if key in own:
                action[key] = own[key]
        actions.append(action)
    return actions


def replay(actions: Sequence[Mapping[str, Any]]) -> ref.RefMatch:
    """The reference match after ``actions``; every one must be accepted (a server history never holds a refused one)."""
    match = ref.RefMatch("online")
    for i, action in enumerate(actions):
        cell = action.get("cell")
        error = match.act(action["seat"], action["type"], None if cell is None else (cell[0], cell[1]))
        assert error is None, f"action {i} {dict(action)} is refused by the reference rules: {error}"
    return match


def _rows(char_of: Any) -> list[str]:
    return ["".join(char_of((r, c)) for c in range(ref.COLS)) for r in range(ref.ROWS)]


def board(match: ref.RefMatch, seat: int) -> dict[str, list[str]]:
    """PROTOCOL.md §5 ``state.board`` for ``seat``, from the reference match."""

    def number(cell: tuple[int, int]) -> str:
        sq = match.square(cell)
        return str(match.number(cell)) if sq.revealed else "."

    def opened(cell: tuple[int, int]) -> str:
        sq = match.square(cell)
        return "." if not sq.revealed else ("m" if sq.by == seat else "o")

    def marker(cell: tuple[int, int]) -> str:
        sq = match.square(cell)
        return "." if sq.marker is None else ("m" if sq.marker == seat else "o")

    def my_mine(cell: tuple[int, int]) -> str:
        return "x" if match.square(cell).mine[seat] else "."

    return {"numbers": _rows(number), "opened_by": _rows(opened), "markers": _rows(marker), "my_mines": _rows(my_mine)}


def result(match: ref.RefMatch, seat: int) -> dict[str, Any] | None:
    """PROTOCOL.md §5's seat-relative ``result``."""
    if not match.over:
        return None
    if match.reason == "void":
        outcome = "void"
    elif match.winner is None:
        outcome = "draw"
    else:
        outcome = "win" if match.winner == seat else "loss"
    scores = None if match.scores is None else {"me": match.scores[seat], "opponent": match.scores[1 - seat]}
    winner = None if match.winner is None else ("me" if match.winner == seat else "opponent")
    return {"outcome": outcome, "winner": winner, "reason": match.reason, "scores": scores}


def expected_deadline(actions: Sequence[Mapping[str, Any]], started: float, turn_seconds: float) -> float | None:
    """O4/O5: when the seat to move must have acted, on the server clock (``None`` once over).

    Each opening step has its own ``turn_seconds`` from the step before it (or the start); a
    normal turn has ``turn_seconds`` from the action that started it, whatever happens within it.
    """
    match = ref.RefMatch("online")
    deadline = started + turn_seconds
    for action in actions:
        before = (match.phase, match.to_move, match.turn)
        cell = action.get("cell")
        match.act(action["seat"], action["type"], None if cell is None else (cell[0], cell[1]))
        after = (match.phase, match.to_move, match.turn)
        if _deadline_moves(before, after):
            deadline = action["at"] + turn_seconds
    return None if match.over else deadline


def state_differences(
    state: Mapping[str, Any], actions: Sequence[Mapping[str, Any]], *, started: float, turn_seconds: float,
    start: Mapping[str, Any] | None = None, previous: str | None = None,
) -> list[str]:
    """Every field of a ``state`` message that differs from the reference replay of ``actions``.

    Compared: ``seq``, ``phase``, ``to_move``, ``turn``, ``quota_left``, the four board layers,
    ``transcript``, ``result`` and ``deadline.at`` (to the millisecond the server rounds to).
    ``transcript`` is the version 2 whole-match transcript when the seat's ``match_start`` is given
    (``start``, and ``previous`` for a rematch), else the version 1 plant chain.
    """
    seat = state["seat"]
    match = replay(actions)
    to_move = None if match.to_move is None else ("me" if match.to_move == seat else "opponent")
    commitments = [a["commitment"] for a in actions if a["type"] == "plant"]
    expected: dict[str, Any] = {
        "seq": len(actions),
        "phase": match.phase,
        "to_move": to_move,
        "turn": match.turn,
        "quota_left": match.quota_left() if match.to_move == seat else 0,
        "board": board(match, seat),
        "transcript": (
            transcript_after(state["match_id"], commitments) if start is None
            else transcript_v2(actions, **start_of(start, previous))[-1]
        ),
        "result": result(match, seat),
    }
    out = [f"{key}: server {state.get(key)!r}, reference {value!r}" for key, value in expected.items() if state.get(key) != value]
    deadline = expected_deadline(actions, started, turn_seconds)
    shown = state.get("deadline")
    if deadline is None or shown is None:
        if (deadline is None) != (shown is None):
            out.append(f"deadline: server {shown!r}, reference {deadline!r}")
    elif abs(shown["at"] - deadline) > 0.0011:  # the server rounds times to 3 decimals
        out.append(f"deadline.at: server {shown['at']!r}, reference {deadline!r}")
    return out


def record_differences(record: Mapping[str, Any]) -> list[str]:
    """A finished match's record against the reference replay of its own actions: every action
    accepted, the same result (RECORD.md's form), the same transcript, and every timeout at the
    deadline O4/O5 give (``times.clock_started``, ``times.turn_seconds``)."""
    variant, actions = ref.check_record(dict(record))
    _, replayed = ref.replay_actions(variant, actions)
    out = []
    for i, step in enumerate(replayed["steps"]):
        if not step["ok"]:
            out.append(f"action {i} {actions[i]} refused by the reference rules: {step.get('error')}")
    if replayed["result"] != record["result"]:
        out.append(f"result: record {record['result']!r}, reference {replayed['result']!r}")
    fairness = record.get("fairness", {})
    times = record.get("times", {})
    if fairness.get("version") == 2:
        chained = transcript_v2(
            record["actions"], match_id=record["match_id"], commitment=fairness["commitment"],
            client_seeds=fairness["client_seeds"], nonce=fairness["nonce"], first_player=fairness["first_player"],
            join_order=fairness["join_order"], turn_seconds=times["turn_seconds"], started=times["clock_started"],
            previous=fairness["previous_transcript"], plant_commitments=fairness["mine_commitments"],
        )[-1]
    else:
        chained = transcript_after(record["match_id"], fairness.get("mine_commitments", []))
    if fairness.get("transcript") != chained:
        out.append(f"transcript: record {fairness.get('transcript')!r}, rehashed {chained!r}")
    raw = record["actions"]
    for i, action in enumerate(raw):
        if action["type"] == "timeout":
            due = expected_deadline(raw[:i], times["clock_started"], times["turn_seconds"])
            if due is None or abs(action["at"] - due) > 0.0011:
                out.append(f"action {i}: timeout at {action['at']}, deadline {due}")
    return out
