"""``mine-duel verify RECORD``: check an ONLINE match record's fairness proofs (RULES.md §9).

Given the record the server publishes at the end (RECORD.md with ``fairness`` and ``times``),
recompute everything that was promised:

``record``            the file is a valid ``mine-duel-record/1`` ONLINE record with fairness data
``commitment``        SHA3-256(server_seed) equals the commitment published before the match (R1)
``signature``         the round signature follows from server seed, client seeds and nonce (R1)
``first_player``      the first player was drawn from the stream (O3, R2), or sides swapped (O14)
``actions``           every recorded action is allowed by the rules, in order (replay)
``auto_moves``        every automatic opening move is the stream's uniform pick (O4, R2)
``mine_commitments``  every plant's salted hash matches its cell, seat and sequence number (R3b)
``transcript``        the chained transcript hash matches (R3b: nothing added, removed, reordered)
``result``            replaying the rules gives the recorded result and turn count (O7–O12, E1)

:func:`verify_record` returns a :class:`VerifyReport` (the game client shows it); :func:`main`
prints it and exits 0 when every check holds, 1 when one fails, 2 when the input is not a
record at all. Pure standard library.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mineduel.shared.fairness import commitments as fairness
from mineduel.shared.fairness.record import InvalidRecord, Record, from_json, is_int, result_json
from mineduel.shared.rules.engine import ActionType, GameState, Phase, Refusal, Variant

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INVALID = 2

CHECK_NAMES = (
    "record",
    "commitment",
    "signature",
    "first_player",
    "actions",
    "auto_moves",
    "mine_commitments",
    "transcript",
    "result",
)

_HEX64 = re.compile(r"[0-9a-f]{64}")
_SALT = re.compile(r"(?:[0-9a-f]{2})+")


@dataclass(frozen=True, slots=True)
class Check:
    """One named check; ``ok`` is ``None`` when it does not apply to this record."""

    name: str
    ok: bool | None
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """Every check in :data:`CHECK_NAMES` order; ``valid`` is False for unreadable input."""

    checks: tuple[Check, ...]
    valid: bool
    match_id: str | None = None

    @property
    def ok(self) -> bool:
        return self.valid and all(c.ok is not False for c in self.checks)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.ok is False]

    def check(self, name: str) -> Check:
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "valid": self.valid,
            "match_id": self.match_id,
            "checks": [c.to_json() for c in self.checks],
        }

    def text(self) -> str:
        lines = [f"mine-duel verify: match {self.match_id or '?'}"]
        width = max(len(n) for n in CHECK_NAMES)
        for c in self.checks:
            mark = "PASS" if c.ok else "FAIL" if c.ok is False else "n/a "
            lines.append(f"  {mark}  {c.name:<{width}}  {c.detail}")
        if not self.valid:
            lines.append("Not a verifiable record: nothing else was checked.")
        elif self.ok:
            lines.append("All checks hold: the match was played as the server committed to.")
        else:
            names = ", ".join(c.name for c in self.failed)
            lines.append(f"{len(self.failed)} check(s) FAILED: {names}.")
        return "\n".join(lines)


class _Invalid(Exception):
    pass


def _need(cond: bool, message: str) -> None:
    if not cond:
        raise _Invalid(message)


def _parse(data: Any) -> tuple[Record, Mapping[str, Any], dict[str, Any]]:
    if isinstance(data, (str, bytes, bytearray)):
        try:
            data = json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise _Invalid(f"not JSON: {exc}") from None
    try:
        record = from_json(data)
    except InvalidRecord as exc:
        raise _Invalid(str(exc)) from None
    _need(record.variant is Variant.ONLINE, "only ONLINE records carry fairness proofs")
    fair = data.get("fairness")
    _need(isinstance(fair, dict), "'fairness' is missing or not an object")
    for key in ("commitment", "server_seed", "transcript"):
        _need(isinstance(fair.get(key), str), f"fairness.{key} is missing or not a string")
    _need(_HEX64.fullmatch(fair["commitment"]) is not None, "fairness.commitment is not 64 hex digits")
    _need(_HEX64.fullmatch(fair["transcript"]) is not None, "fairness.transcript is not 64 hex digits")
    seeds = fair.get("client_seeds")
    _need(isinstance(seeds, list) and len(seeds) in (1, 2) and all(isinstance(s, str) for s in seeds),
          "fairness.client_seeds must be a list of one or two strings")
    _need(is_int(fair.get("nonce")) or isinstance(fair.get("nonce"), str), "fairness.nonce must be an integer or string")
    _need(fair.get("first_player") in ("draw", "swap"), "fairness.first_player must be 'draw' or 'swap'")
    order = fair.get("join_order")
    _need(isinstance(order, list) and sorted(order) == [0, 1] and all(is_int(s) for s in order),
          "fairness.join_order must be [0, 1] or [1, 0]")
    for key in ("salts", "mine_commitments"):
        values = fair.get(key)
        _need(isinstance(values, list) and all(isinstance(v, str) for v in values), f"fairness.{key} must be a list of strings")
    _need(all(_SALT.fullmatch(s) for s in fair["salts"]), "fairness.salts must be lowercase hex")
    match_id = data.get("match_id")
    _need(isinstance(match_id, str) and match_id != "", "'match_id' is missing")
    result = data.get("result")
    _need(isinstance(result, dict), "'result' is missing or not an object")
    return record, data, fair


def verify_record(data: Any) -> VerifyReport:
    """Check a record (a parsed JSON object, or its text); never raises on bad input."""
    try:
        record, raw, fair = _parse(data)
    except _Invalid as exc:
        return VerifyReport((Check("record", False, str(exc)),), valid=False)
    match_id: str = raw["match_id"]
    checks: list[Check] = [Check("record", True, f"{len(record.actions)} actions, ONLINE, fairness data present")]

    server_seed: str = fair["server_seed"]
    seeds: list[str] = fair["client_seeds"]
    nonce = fair["nonce"]

    # R1: commitment and signature.
    if fairness.commitment(server_seed) == fair["commitment"]:
        checks.append(Check("commitment", True, "SHA3-256(server_seed) equals the published commitment"))
    else:
        checks.append(Check("commitment", False,
                            "SHA3-256(server_seed) differs from the published commitment: the seed was changed"))
    signature = fairness.round_signature(server_seed, seeds, nonce)
    if "signature" not in fair:
        checks.append(Check("signature", None, "no signature in the record; recomputed from the seeds"))
    elif fair["signature"] == signature:
        checks.append(Check("signature", True, "round signature = SHA3-256(server_seed:client seeds:nonce)"))
    else:
        checks.append(Check("signature", False, "the recorded round signature does not follow from the seeds and nonce"))
    stream = fairness.FairStream(signature)

    # O3: first player.
    order: list[int] = fair["join_order"]
    if fair["first_player"] == "draw":
        index = stream.pick(2)
        if order[index] == 0:
            checks.append(Check("first_player", True, f"the stream drew join-order seat {index}, which moved first"))
        else:
            checks.append(Check("first_player", False,
                                f"the stream draws join-order seat {index}, but the other seat moved first"))
    else:
        checks.append(Check("first_player", None, "rematch: sides swapped (O14), nothing was drawn"))

    # Replay: actions, auto-moves, plants.
    state = GameState(Variant.ONLINE)
    refused: str | None = None
    auto_problem: str | None = None
    auto_count = 0
    plants: list[tuple[int, int, int]] = []  # (seq, seat, cell)
    previous_timeout: int | None = None
    for seq, (action, extra) in enumerate(zip(record.actions, record.action_extras, strict=True)):
        is_auto = bool(extra.get("auto"))
        if is_auto and action.type in (ActionType.EXPLORE, ActionType.PLANT) and refused is None:
            auto_count += 1
            if state.phase not in (Phase.OPEN_EXPLORE, Phase.OPEN_PLANT) or state.over:
                auto_problem = auto_problem or f"action {seq}: an automatic move outside the opening"
            elif previous_timeout != action.seat:
                auto_problem = auto_problem or f"action {seq}: an automatic move without a timeout before it"
            else:
                expected = state.opening_auto_action(stream)
                if expected != action:
                    auto_problem = auto_problem or (
                        f"action {seq}: the stream picks cell {list(divmod(expected.cell or 0, 8))}, "
                        f"the record has {list(divmod(action.cell or 0, 8))}"
                    )
        result = state.apply(action)
        if isinstance(result, Refusal) and refused is None:
            refused = f"action {seq} ({action.type} by seat {action.seat}) is refused: {result}"
        if not isinstance(result, Refusal) and action.type is ActionType.PLANT:
            assert action.cell is not None
            plants.append((seq, action.seat, action.cell))
        previous_timeout = action.seat if action.type is ActionType.TIMEOUT else None
    if refused is None:
        checks.append(Check("actions", True, f"all {len(record.actions)} actions are allowed by the rules in order"))
    else:
        checks.append(Check("actions", False, refused))
    used = fair.get("stream_used")
    if auto_problem is None and is_int(used) and used != stream.consumed:
        auto_problem = f"the server read {used} stream values, the replay reads {stream.consumed}"
    if auto_problem is not None:
        checks.append(Check("auto_moves", False, auto_problem))
    elif auto_count:
        checks.append(Check("auto_moves", True, f"{auto_count} automatic opening move(s) are the stream's uniform picks"))
    else:
        checks.append(Check("auto_moves", None, "no automatic moves in this match"))

    # R3b: mine commitments and transcript.
    salts: list[str] = fair["salts"]
    published: list[str] = fair["mine_commitments"]
    recomputed: list[str] = []
    problem: str | None = None
    if not (len(plants) == len(salts) == len(published)):
        problem = f"{len(plants)} plants, {len(salts)} salts, {len(published)} commitments: counts differ"
    for i, (seq, seat, cell) in enumerate(plants):
        if i >= len(salts):
            break
        value = fairness.mine_commitment(salts[i], match_id, seq, seat, cell)
        recomputed.append(value)
        if problem is None and (i >= len(published) or published[i] != value):
            problem = f"plant {i} (action {seq}, seat {seat}): the commitment does not match its cell, seat, sequence and salt"
    if problem is None:
        checks.append(Check("mine_commitments", True, f"all {len(plants)} mine commitments match their plants"))
    else:
        checks.append(Check("mine_commitments", False, problem))
    if fairness.transcript_hash(match_id, published) != fair["transcript"]:
        checks.append(Check("transcript", False, "the transcript hash does not chain the published commitments"))
    elif problem is not None:
        checks.append(Check("transcript", False, "the transcript chains commitments that do not match the plants"))
    else:
        checks.append(Check("transcript", True, "the transcript hash chains every commitment in order"))

    # Result and turn count.
    replayed = result_json(state)
    claimed = raw["result"]
    turns = raw.get("times", {}).get("turns") if isinstance(raw.get("times"), dict) else None
    if replayed != claimed:
        checks.append(Check("result", False, f"the rules give {replayed}, the record claims {claimed}"))
    elif turns is not None and turns != state.turn:
        checks.append(Check("result", False, f"the rules end at turn {state.turn}, the record claims {turns}"))
    elif not state.over:
        checks.append(Check("result", False, "the replayed match is not over"))
    else:
        reason = replayed["reason"]
        checks.append(Check("result", True, f"replaying the rules gives the recorded result ({reason}, turn {state.turn})"))
    return VerifyReport(tuple(checks), valid=True, match_id=match_id)
