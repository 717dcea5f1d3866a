"""``mine-duel verify RECORD [--witness FILE]``: check an ONLINE match record's fairness proofs (RULES.md §9).

Given the record the server publishes at the end (RECORD.md: ``fairness``, ``times``, ``players``),
recompute everything that was promised, and — with the player's witness (``fairness.witness``,
``mine-duel-witness/1``) — compare it with what that player was shown while the match ran.

Record checks (what the record says about itself):

``record``            the input is a ``mine-duel-record/1`` ONLINE record with fairness data (else: invalid input)
``version``           ``fairness.version`` is 1 or 2 (version 1 commits only the plants)
``commitment``        SHA3-256(server_seed) equals the published commitment (R1)
``signature``         the round signature follows from server seed, client seeds and nonce (R1)
``first_player``      a room's first match (nonce 1, no previous match) drew its first player from the stream (O3, R2);
                      a rematch swaps sides (O14) and draws nobody
``seeds``             no client seed contains ``:``, the nonce is a positive integer, version 2 has two seeds (R1)
``actions``           every recorded action is allowed by the rules, in order (replay)
``auto_moves``        every opening timeout is followed at once by the same seat's automatic move, which is the
                      stream's uniform pick (O4, R2); no automatic move without one; the stream was read as recorded
``times``             the clock never goes backwards, elapsed time agrees with the clock and is not negative (E1)
``deadlines``         no action later than the deadline in force without a timeout; every timeout exactly at it (O4–O6)
``mine_commitments``  every plant's salted hash matches its cell, seat and sequence number (R3b)
``transcript``        version 2: the whole-match transcript recomputed from the record (``fairness.transcript``,
                      R3c) equals the recorded one; version 1: the plant chain (R3b)
``result``            replaying the rules gives the recorded result and turn count (O7–O12, E1)
``players``           two players, seats 0 and 1, and a room code
``rematches``         given a room's records in order: each follows the one before it (O14)

Witness checks (n/a without a witness; then the report says that only the record's own consistency was
checked): ``witness``, ``commitment_shown``, ``seat_and_seed``, ``plants_seen``, ``transcript_seen``,
``previous_match``, ``end_shown`` (see :data:`CHECK_NAMES` and docs/RECORD.md).

:func:`verify_record` returns a :class:`VerifyReport` (the game client shows it), :func:`verify` one per
record of a room; neither ever raises, whatever the input: anything malformed gives ``valid=False`` with
the reason. Pure: standard library and ``mineduel.shared`` only.
"""

from __future__ import annotations

import json
import math
import re
import reprlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mineduel.shared.fairness import commitments as fairness
from mineduel.shared.fairness import transcript as v2
from mineduel.shared.fairness.record import InvalidRecord, Record, from_json, is_int, result_json
from mineduel.shared.fairness.witness import InvalidWitness, Witness
from mineduel.shared.fairness.witness import loads as load_witness
from mineduel.shared.fairness.witness import parse as parse_witness
from mineduel.shared.rules.engine import OPENING_PHASES, ActionType, GameState, Refusal, Variant
from mineduel.shared.rules.events import restarts_deadline
from mineduel.shared.wire.board import result_of, reveal_of

__all__ = [
    "CHECK_NAMES",
    "EXIT_FAILED",
    "EXIT_INVALID",
    "EXIT_OK",
    "NO_WITNESS",
    "RECORD_CHECKS",
    "VERSION_1_NOTE",
    "WITNESS_CHECKS",
    "Check",
    "RoomReport",
    "VerifyReport",
    "verify",
    "verify_record",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INVALID = 2

RECORD_CHECKS = (
    "record",
    "version",
    "commitment",
    "signature",
    "first_player",
    "seeds",
    "actions",
    "auto_moves",
    "times",
    "deadlines",
    "mine_commitments",
    "transcript",
    "result",
    "players",
    "rematches",
)
WITNESS_CHECKS = (
    "witness",
    "commitment_shown",
    "seat_and_seed",
    "plants_seen",
    "transcript_seen",
    "previous_match",
    "end_shown",
)
CHECK_NAMES = RECORD_CHECKS + WITNESS_CHECKS
"""Every check, in report order."""

NO_WITNESS = (
    "No witness: only the record's own consistency was checked; a dishonest server could have rewritten this match."
)
VERSION_1_NOTE = "version 1: only plants are committed; actions, markers and times are not"
INTERNAL_ERROR = "the verifier could not read this input"
"""Start of the detail when a check met input it did not foresee (a bug of the verifier: tests look for it)."""

_HEX64 = re.compile(r"[0-9a-f]{64}")
_SALT = re.compile(r"(?:[0-9a-f]{2})+")
_SAFE_INT_BITS = 63
"""Integers of the record (nonce, stream_used) wider than this are refused as input: nothing real is."""
_TOLERANCE_MS = 1
"""Record times have 3 decimals and are rounded one by one: sums and deadlines agree to within 1 ms."""
_MAX_SECONDS = 1e12
"""Times and durations beyond this many seconds (about 31,700 years) are refused as input: the
transcript's milliseconds of them would not fit a float."""
_MAX_NONCE = 2**53
"""R1: the reference program formats the nonce as a JavaScript number, exact below 2**53."""
_ALWAYS_AUTO = frozenset({ActionType.TIMEOUT, ActionType.DISCONNECT, ActionType.VOID})
_NEVER_AUTO = frozenset({ActionType.FLAG, ActionType.UNFLAG, ActionType.END_TURN, ActionType.RESIGN})


# ----- the report ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Check:
    """One named check; ``ok`` is ``None`` when it does not apply (n/a), with the reason in ``detail``."""

    name: str
    ok: bool | None
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """Every check of one record in :data:`CHECK_NAMES` order.

    ``valid`` is False for input that is not a record (then only ``record`` is reported) or a witness
    that is not one (``witness`` says why). ``witnessed`` tells whether a witness of this match was
    compared; without one only the record's own consistency was checked (:data:`NO_WITNESS`).
    """

    checks: tuple[Check, ...]
    valid: bool
    match_id: str | None = None
    version: int | None = None
    witnessed: bool = False

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
            "version": self.version,
            "witnessed": self.witnessed,
            "checks": [c.to_json() for c in self.checks],
        }

    def text(self) -> str:
        version = "" if self.version is None else f" (fairness version {self.version})"
        lines = [f"mine-duel verify: match {self.match_id or '?'}{version}"]
        width = max(len(n) for n in CHECK_NAMES)
        for c in self.checks:
            mark = "PASS" if c.ok else "FAIL" if c.ok is False else "n/a "
            lines.append(f"  {mark}  {c.name:<{width}}  {c.detail}")
        if not self.valid:
            if self.checks and self.checks[0].ok is False:
                lines.append("Not a verifiable record: nothing else was checked.")
            else:
                lines.append("The witness is not a mine-duel-witness/1 file: fix or drop it to verify against it.")
        elif self.failed:
            names = ", ".join(c.name for c in self.failed)
            lines.append(f"{len(self.failed)} check(s) FAILED: {names}.")
        elif self.witnessed:
            lines.append("All checks hold: the match was played as the server committed to and as this player saw it.")
        else:
            lines.append("All checks hold for the record itself.")
        if self.version == 1:
            lines.append(f"Fairness {VERSION_1_NOTE}.")
        if self.valid and not self.witnessed:
            lines.append(NO_WITNESS)
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class RoomReport:
    """The reports of a room's records given in order (``mine-duel verify R1 R2 ...``)."""

    reports: tuple[VerifyReport, ...]

    @property
    def ok(self) -> bool:
        return bool(self.reports) and all(r.ok for r in self.reports)

    @property
    def valid(self) -> bool:
        return all(r.valid for r in self.reports)

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "valid": self.valid, "records": [r.to_json() for r in self.reports]}

    def text(self) -> str:
        parts = [r.text() for r in self.reports]
        if len(self.reports) > 1:
            held = sum(r.ok for r in self.reports)
            parts.append(f"{held} of {len(self.reports)} records verify.")
        return "\n\n".join(parts)


# ----- reading the record ---------------------------------------------------------------------------------


class _Invalid(Exception):
    pass


def _need(cond: bool, message: str) -> None:
    if not cond:
        raise _Invalid(message)


_BRIEF = reprlib.Repr()  # keyword arguments only from Python 3.12
_BRIEF.maxlevel, _BRIEF.maxdict, _BRIEF.maxlist, _BRIEF.maxstring, _BRIEF.maxother, _BRIEF.maxlong = 3, 6, 6, 40, 40, 40


def _brief(value: Any) -> str:
    """A bounded picture of any value (nested garbage included) for a detail."""
    return _BRIEF.repr(value)


def _show(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return "an object" if isinstance(value, dict) else "a list"
    if is_int(value) and value.bit_length() > _SAFE_INT_BITS:
        return "a huge integer"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def _number(value: Any, where: str) -> float:
    _need(type(value) in (int, float), f"{where} must be a number, got {_show(value)}")
    try:
        number = float(value)
    except OverflowError:
        raise _Invalid(f"{where} is out of range") from None
    _need(math.isfinite(number), f"{where} must be a finite number, got {_show(value)}")
    _need(abs(number) <= _MAX_SECONDS, f"{where} is out of range ({_show(value)} s)")
    return number


def _small_int(value: Any, where: str) -> int:
    _need(is_int(value), f"{where} must be an integer, got {_show(value)}")
    _need(value.bit_length() <= _SAFE_INT_BITS, f"{where} is out of range")
    return int(value)


def _hex64(value: Any, where: str) -> str:
    _need(isinstance(value, str) and _HEX64.fullmatch(value) is not None,
          f"{where} must be 64 lowercase hex digits, got {_show(value)}")
    return str(value)


@dataclass(frozen=True, slots=True)
class _Times:
    started: float
    ended: float
    elapsed: float
    turns: int
    clock_started: float
    clock_ended: float
    turn_seconds: float


@dataclass(frozen=True, slots=True)
class _Match:
    """A record whose structure is right: every value the checks read, with its type checked."""

    raw: Mapping[str, Any]
    record: Record
    match_id: str
    version: int | None  # None: missing or not 1/2 (the version check fails)
    version_raw: Any
    commitment: str
    server_seed: str
    signature: str | None
    seeds: tuple[str, ...]
    nonce: int | str
    first_player: str
    join_order: tuple[int, int]
    mine_commitments: tuple[str, ...]
    salts: tuple[str, ...]
    stream_used: int | None
    previous_transcript: str | None
    transcript: str
    at: tuple[float, ...]
    auto: tuple[bool, ...]
    times: _Times
    result: Mapping[str, Any]


def _reject_constant(name: str) -> Any:
    raise _Invalid(f"not JSON: {name} is not a JSON value")


def _decode(data: Any) -> Any:
    if not isinstance(data, (str, bytes, bytearray)):
        return data
    try:
        text = bytes(data).decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _Invalid(f"not JSON: {exc}") from None
    except RecursionError:
        raise _Invalid("not JSON this reader accepts: nested too deeply") from None


def _read(data: Any) -> _Match:
    """The record's structure, strictly (RECORD.md, RULES.md §9); :class:`_Invalid` names the first problem."""
    data = _decode(data)
    try:
        record = from_json(data)
    except InvalidRecord as exc:
        raise _Invalid(str(exc)) from None
    _need(record.variant is Variant.ONLINE, "only ONLINE records carry fairness proofs")
    match_id = data.get("match_id")
    _need(isinstance(match_id, str) and match_id != "", f"'match_id' must be a non-empty string, got {_show(match_id)}")
    fair = data.get("fairness")
    _need(isinstance(fair, dict), "'fairness' is missing or not an object")
    version_raw = fair.get("version")
    version = version_raw if type(version_raw) is int and version_raw in (1, 2) else None
    commitment = _hex64(fair.get("commitment"), "fairness.commitment")
    transcript = _hex64(fair.get("transcript"), "fairness.transcript")
    server_seed = fair.get("server_seed")
    _need(isinstance(server_seed, str), "fairness.server_seed is missing or not a string")
    signature = fair.get("signature")
    _need(signature is None or isinstance(signature, str), "fairness.signature must be a string")
    seeds = fair.get("client_seeds")
    _need(isinstance(seeds, list) and len(seeds) in (1, 2) and all(isinstance(s, str) for s in seeds),
          "fairness.client_seeds must be a list of one or two strings")
    nonce = fair.get("nonce")
    if isinstance(nonce, str):
        pass  # a string nonce reads, and fails the seeds check (R1: an integer)
    else:
        nonce = _small_int(nonce, "fairness.nonce")
    _need(fair.get("first_player") in ("draw", "swap"), "fairness.first_player must be 'draw' or 'swap'")
    order = fair.get("join_order")
    _need(isinstance(order, list) and len(order) == 2 and all(is_int(s) for s in order) and sorted(order) == [0, 1],
          "fairness.join_order must be [0, 1] or [1, 0]")
    commitments = fair.get("mine_commitments")
    _need(isinstance(commitments, list), "fairness.mine_commitments must be a list")
    for i, value in enumerate(commitments):
        _hex64(value, f"fairness.mine_commitments[{i}]")
    salts = fair.get("salts")
    _need(isinstance(salts, list) and all(isinstance(s, str) and _SALT.fullmatch(s) for s in salts),
          "fairness.salts must be a list of lowercase hex strings (an even number of digits)")
    used = fair.get("stream_used")
    if used is not None or version == 2:
        used = _small_int(used, "fairness.stream_used")
        _need(used >= 0, "fairness.stream_used must not be negative")
    previous = None
    if version == 2:
        _need("previous_transcript" in fair, "fairness.previous_transcript is missing (version 2: null or a hash)")
        if fair["previous_transcript"] is not None:
            previous = _hex64(fair["previous_transcript"], "fairness.previous_transcript")
    times = data.get("times")
    _need(isinstance(times, dict), "'times' is missing or not an object")
    turns = times.get("turns")
    _need(is_int(turns) and 0 <= turns < 2**_SAFE_INT_BITS, f"times.turns must be a non-negative integer, got {_show(turns)}")
    number = {k: _number(times.get(k), f"times.{k}")
              for k in ("started", "ended", "elapsed", "clock_started", "clock_ended", "turn_seconds")}
    parsed_times = _Times(
        number["started"], number["ended"], number["elapsed"], int(turns),
        number["clock_started"], number["clock_ended"], number["turn_seconds"],
    )
    at: list[float] = []
    auto: list[bool] = []
    for i, extra in enumerate(record.action_extras):
        at.append(_number(extra.get("at"), f"action {i}: 'at'"))
        flag = extra.get("auto", False)
        _need(type(flag) is bool, f"action {i}: 'auto' must be true or false, got {_show(flag)}")
        auto.append(bool(flag))
    result = data.get("result")
    _need(isinstance(result, dict), "'result' is missing or not an object")
    for key, value in result.items():
        _need(_scalar(value) or (isinstance(value, list) and all(_scalar(v) for v in value)),
              f"result.{_brief(key)} must be a JSON scalar or a list of them, got {_show(value)}")
    return _Match(
        raw=data, record=record, match_id=match_id, version=version, version_raw=version_raw,
        commitment=commitment, server_seed=server_seed, signature=signature, seeds=tuple(seeds), nonce=nonce,
        first_player=fair["first_player"], join_order=(order[0], order[1]), mine_commitments=tuple(commitments),
        salts=tuple(salts), stream_used=used, previous_transcript=previous, transcript=transcript,
        at=tuple(at), auto=tuple(auto), times=parsed_times, result=result,
    )


# ----- the checks -----------------------------------------------------------------------------------------


def _ms(seconds: float) -> int:
    return v2.millis(seconds)


def _s(ms: int) -> str:
    """Milliseconds as seconds for a detail."""
    return f"{ms / 1000:.3f} s"


def _short(value: str | None) -> str:
    return "null" if value is None else f"{value[:12]}…"


def _players(raw: Mapping[str, Any]) -> tuple[str, str] | str:
    """Names by record seat, or what is wrong with ``players`` / ``room``."""
    players = raw.get("players")
    if not (isinstance(players, list) and len(players) == 2 and all(isinstance(p, dict) for p in players)):
        return "'players' must be two entries {seat, name}"
    names: dict[int, str] = {}
    for p in players:
        seat, name = p.get("seat"), p.get("name")
        if not (is_int(seat) and seat in (0, 1) and seat not in names and isinstance(name, str)):
            return "'players' must have one entry {seat, name} for each of seats 0 and 1, names as strings"
        names[seat] = name
    room = raw.get("room")
    if not (isinstance(room, str) and room):
        return f"'room' must be a non-empty string, got {_show(room)}"
    return names[0], names[1]


@dataclass
class _Replay:
    """What replaying the record computed, for the record checks and the witness checks."""

    state: GameState
    signature: str
    stream: fairness.FairStream
    drawn: int | None = None  # the join-order index the stream draws (first_player "draw")
    refused: str | None = None
    auto_problem: str | None = None
    auto_count: int = 0
    deadline_problem: str | None = None
    timeouts: int = 0
    plants: list[tuple[int, int, int]] = field(default_factory=list)  # accepted: (seq, seat, cell)
    plant_actions: list[int] = field(default_factory=list)  # seq of every plant action, in order
    hashes: list[str] = field(default_factory=list)  # version 2: h_0 .. h_k
    hash_problem: str | None = None  # why hashes stop before h_n


class _Verifier:
    def __init__(self, m: _Match) -> None:
        self.m = m
        self.checks: list[Check] = []

    def add(self, name: str, ok: bool | None, detail: str) -> None:
        self.checks.append(Check(name, ok, detail))

    # ----- R1, O3 ---------------------------------------------------------------------------------------
    def version(self) -> None:
        m = self.m
        if m.version == 1:
            self.add("version", True, VERSION_1_NOTE)
        elif m.version == 2:
            self.add("version", True, "version 2: every action, its time and the deadline it starts are committed (R3c)")
        elif "version" not in m.raw["fairness"]:
            self.add("version", False, "fairness.version is missing: an unknown fairness version")
        else:
            self.add("version", False, f"fairness.version is {_show(m.version_raw)}: only 1 and 2 are known")

    def commitment(self) -> None:
        if fairness.commitment(self.m.server_seed) == self.m.commitment:
            self.add("commitment", True, "SHA3-256(server_seed) equals the published commitment")
        else:
            self.add("commitment", False, "SHA3-256(server_seed) differs from the published commitment: the seed was changed")

    def signature(self) -> str:
        m = self.m
        signature = fairness.round_signature(m.server_seed, list(m.seeds), m.nonce)
        if m.signature is None:
            self.add("signature", None, "no signature in the record; recomputed from the seeds")
        elif m.signature == signature:
            self.add("signature", True, "round signature = SHA3-256(server_seed:client seeds:nonce)")
        else:
            self.add("signature", False,
                     f"the recorded round signature {_short(m.signature)} does not follow from the seeds and nonce "
                     f"({_short(signature)})")
        return signature

    def first_player(self, replay: _Replay) -> None:
        """O3/O14: a pair's first match in a room draws, a rematch of the same pair swaps.

        Version 2 says which is which: a rematch carries the previous match's transcript, a match of a
        new pair (the room's first, nonce 1, or one after the opponent left) carries none and draws.
        Version 1 cannot tell a new pair from a rematch after nonce 1, so either label is accepted there.
        """
        m = self.m
        first_match = m.nonce == 1
        new_pair = m.previous_transcript is None
        if m.version == 2 and first_match and not new_pair:
            self.add("first_player", False,
                     f"nonce 1 with previous_transcript {_short(m.previous_transcript)}: a room's first match has no "
                     "previous match")
        elif m.version == 2 and m.first_player == "swap" and new_pair:
            self.add("first_player", False,
                     f"nonce {_show(m.nonce)} labelled 'swap' without a previous match: the first match of a pair "
                     "must draw its first player (O3)")
        elif m.version == 2 and m.first_player == "draw" and not new_pair:
            self.add("first_player", False,
                     f"nonce {_show(m.nonce)} labelled 'draw' with a previous match: a rematch swaps sides (O14)")
        elif m.first_player == "swap" and first_match:
            self.add("first_player", False, "a room's first match (nonce 1) labelled 'swap': its first player must be drawn (O3)")
        elif m.first_player == "draw":
            index = replay.drawn
            assert index is not None
            if m.join_order[index] == 0:
                self.add("first_player", True, f"the stream drew join-order seat {index}, which moved first")
            else:
                self.add("first_player", False,
                         f"the stream draws join-order seat {index}, but join-order seat {1 - index} moved first")
        else:
            self.add("first_player", None, "rematch: sides swapped (O14), nothing was drawn")

    def seeds(self) -> None:
        m = self.m
        problems = []
        for i, seed in enumerate(m.seeds):
            if ":" in seed:
                problems.append(f"client seed {i} {_show(seed)} contains ':' (the signature would not tell the seeds apart)")
        if not is_int(m.nonce):
            problems.append(f"the nonce {_show(m.nonce)} is not an integer")
        elif not 1 <= m.nonce < _MAX_NONCE:
            problems.append(f"the nonce {m.nonce} is not between 1 and 2**53")
        if m.version == 2 and len(m.seeds) != 2:
            problems.append(f"a version 2 match has two client seeds, this one {len(m.seeds)}")
        if problems:
            self.add("seeds", False, "; ".join(problems))
        else:
            self.add("seeds", True, f"{len(m.seeds)} client seed(s) without ':', nonce {m.nonce}")

    # ----- the replay -----------------------------------------------------------------------------------
    def replay(self, signature: str) -> _Replay:
        """One pass over the actions: rules, auto-moves, deadlines, plants and the version 2 transcript."""
        m = self.m
        stream = fairness.FairStream(signature)
        replay = _Replay(GameState(Variant.ONLINE), signature, stream)
        if m.first_player == "draw":
            replay.drawn = stream.pick(2)
        state = replay.state
        turn_ms = _ms(m.times.turn_seconds)
        deadline: int | None = _ms(m.times.clock_started) + turn_ms
        h = self._start_hash(replay, turn_ms)
        open_timeout: tuple[int, int, int] | None = None  # (seq, seat, at_ms) of an opening timeout awaiting its move
        plant_index = 0
        for seq, action in enumerate(m.record.actions):
            at_ms = _ms(m.at[seq])
            auto = m.auto[seq]
            kind = action.type
            # O4: the move an opening timeout calls for.
            if open_timeout is not None:
                t_seq, t_seat, t_at = open_timeout
                open_timeout = None
                if not (auto and kind in (ActionType.EXPLORE, ActionType.PLANT) and action.seat == t_seat and at_ms == t_at):
                    replay.auto_problem = replay.auto_problem or (
                        f"action {t_seq}: seat {t_seat}'s opening timeout is not followed at once by its automatic move "
                        f"(action {seq} is a{'n automatic' if auto else ''} {kind} by seat {action.seat} at {_s(at_ms)})"
                    )
                elif replay.refused is None and not state.over:
                    replay.auto_count += 1
                    expected = state.opening_auto_action(stream)
                    if expected != action:
                        replay.auto_problem = replay.auto_problem or (
                            f"action {seq}: the stream picks cell {list(divmod(expected.cell or 0, 8))}, "
                            f"the record has {list(divmod(action.cell or 0, 8))}"
                        )
            elif auto and kind in (ActionType.EXPLORE, ActionType.PLANT):
                replay.auto_problem = replay.auto_problem or (
                    f"action {seq}: an automatic {kind} without an opening timeout before it"
                )
            if m.version == 2 and replay.auto_problem is None:
                if kind in _ALWAYS_AUTO and not m.auto[seq]:
                    replay.auto_problem = f"action {seq}: a {kind} is the server's, so it is marked \"auto\": true"
                elif kind in _NEVER_AUTO and m.auto[seq]:
                    replay.auto_problem = f"action {seq}: a {kind} is a player's, never automatic"
            # O4-O6: the deadline in force before this action.
            if deadline is not None and replay.deadline_problem is None:
                if kind is ActionType.TIMEOUT:
                    replay.timeouts += 1
                    if abs(at_ms - deadline) > _TOLERANCE_MS:
                        replay.deadline_problem = (
                            f"action {seq}: seat {action.seat} timed out at {_s(at_ms)}, the deadline in force was {_s(deadline)}"
                        )
                elif at_ms > deadline + _TOLERANCE_MS:
                    replay.deadline_problem = (
                        f"action {seq}: a {kind} by seat {action.seat} at {_s(at_ms)}, {_s(at_ms - deadline)} after the "
                        f"deadline in force ({_s(deadline)}) with no timeout"
                    )
            opening = state.phase in OPENING_PHASES and not state.over
            events = state.apply(action)
            if isinstance(events, Refusal):
                replay.refused = replay.refused or f"action {seq} ({kind} by seat {action.seat}) is refused: {events}"
            else:
                if kind is ActionType.PLANT:
                    assert action.cell is not None
                    replay.plants.append((seq, action.seat, action.cell))
                if kind is ActionType.TIMEOUT and opening:
                    open_timeout = (seq, action.seat, at_ms)
                if state.over:
                    deadline = None
                elif restarts_deadline(events):
                    deadline = at_ms + turn_ms
            # R3c: fold the action in.
            commitment = None
            if kind is ActionType.PLANT:
                replay.plant_actions.append(seq)
                if plant_index < len(m.mine_commitments):
                    commitment = m.mine_commitments[plant_index]
                elif h is not None:
                    replay.hash_problem = (
                        f"action {seq} is plant {plant_index}, but the record has {len(m.mine_commitments)} mine commitments"
                    )
                    h = None
                plant_index += 1
            if h is not None:
                target = v2.target_of(str(kind), action.cell, commitment)
                h = v2.step(h, seq, action.seat, str(kind), target, at_ms, m.auto[seq], deadline)
                replay.hashes.append(h)
        if open_timeout is not None:
            t_seq, t_seat, _ = open_timeout
            replay.auto_problem = replay.auto_problem or (
                f"action {t_seq}: seat {t_seat}'s opening timeout is the last action: its automatic move is missing"
            )
        return replay

    def _start_hash(self, replay: _Replay, turn_ms: int) -> str | None:
        m = self.m
        if m.version != 2:
            return None
        if not is_int(m.nonce):
            replay.hash_problem = f"h_0 needs an integer nonce, the record has {_show(m.nonce)}"
            return None
        if len(m.seeds) != 2:
            replay.hash_problem = f"h_0 needs two client seeds, the record has {len(m.seeds)}"
            return None
        h = v2.match_start(
            m.match_id, m.commitment, m.seeds, m.nonce, m.first_player, m.join_order, turn_ms,
            _ms(m.times.clock_started), m.previous_transcript,
        )
        replay.hashes.append(h)
        return h

    def actions(self, replay: _Replay) -> None:
        n = len(self.m.record.actions)
        if replay.refused is None:
            self.add("actions", True, f"all {n} actions are allowed by the rules in order")
        else:
            self.add("actions", False, replay.refused)

    def auto_moves(self, replay: _Replay) -> None:
        m = self.m
        problem = replay.auto_problem
        if problem is None and m.stream_used is not None and m.stream_used != replay.stream.consumed:
            problem = f"the record says the server read {m.stream_used} stream values, the replay reads {replay.stream.consumed}"
        if problem is not None:
            self.add("auto_moves", False, problem)
        elif replay.auto_count:
            self.add("auto_moves", True,
                     f"{replay.auto_count} automatic opening move(s), each right after its timeout, "
                     "are the stream's uniform picks")
        else:
            self.add("auto_moves", None, "no automatic moves in this match")

    def times(self) -> None:
        m = self.m
        t = m.times
        problems = []
        start, end = _ms(t.clock_started), _ms(t.clock_ended)
        previous, where = start, "the match started (times.clock_started)"
        for seq, at in enumerate(m.at):
            at_ms = _ms(at)
            if at_ms < previous:
                problems.append(f"action {seq} at {_s(at_ms)} is before {where} at {_s(previous)}: time went backwards")
                break
            previous, where = at_ms, f"action {seq}"
        # Version 2 servers keep their clock in whole milliseconds (started, every at and every deadline
        # rounded first), so the end is the last action's time and elapsed their difference exactly.
        slack = 0 if m.version == 2 else _TOLERANCE_MS
        if not problems and end < previous:
            problems.append(f"the match ended (times.clock_ended) at {_s(end)}, before {where} at {_s(previous)}")
        elif not problems and m.at and end - previous > slack:
            problems.append(f"the match ended (times.clock_ended) at {_s(end)}, its last action was at {_s(previous)}")
        elapsed = _ms(t.elapsed)
        if elapsed < 0:
            problems.append(f"times.elapsed is negative ({t.elapsed} s)")
        elif abs(elapsed - (end - start)) > slack:
            problems.append(f"times.elapsed is {t.elapsed} s, the server clock says {_s(end - start)}")
        if t.ended < t.started:
            problems.append(f"times.ended ({t.ended}) is before times.started ({t.started})")
        if not t.turn_seconds > 0:
            problems.append(f"times.turn_seconds is {t.turn_seconds}: a turn lasts more than 0 s")
        if problems:
            self.add("times", False, "; ".join(problems))
        else:
            self.add("times", True, f"the clock never goes backwards; {t.elapsed} s elapsed as the clock says")

    def deadlines(self, replay: _Replay) -> None:
        if not self.m.times.turn_seconds > 0:
            self.add("deadlines", False, "no deadline can be worked out: times.turn_seconds is not positive")
        elif replay.deadline_problem is not None:
            self.add("deadlines", False, replay.deadline_problem)
        else:
            self.add("deadlines", True,
                     f"no action after its deadline; {replay.timeouts} timeout(s), each at its deadline "
                     f"({self.m.times.turn_seconds} s per step or turn)")

    # ----- R3b, R3c -------------------------------------------------------------------------------------
    def mine_commitments(self, replay: _Replay) -> str | None:
        m = self.m
        plants, salts, published = replay.plants, m.salts, m.mine_commitments
        problem: str | None = None
        if not (len(plants) == len(salts) == len(published)):
            problem = f"{len(plants)} plants, {len(salts)} salts, {len(published)} commitments: counts differ"
        for i, (seq, seat, cell) in enumerate(plants):
            if i >= len(salts) or i >= len(published) or problem is not None:
                break
            if fairness.mine_commitment(salts[i], m.match_id, seq, seat, cell) != published[i]:
                problem = (
                    f"plant {i} (action {seq}, seat {seat}): the commitment does not match its cell, seat, sequence and salt"
                )
        if problem is None:
            self.add("mine_commitments", True, f"all {len(plants)} mine commitments match their plants")
        else:
            self.add("mine_commitments", False, problem)
        return problem

    def transcript(self, replay: _Replay, mine_problem: str | None) -> None:
        m = self.m
        if m.version == 2:
            n = len(m.record.actions)
            if replay.hash_problem is not None:
                self.add("transcript", False, f"the transcript cannot be recomputed: {replay.hash_problem}")
            elif replay.hashes[-1] != m.transcript:
                self.add("transcript", False,
                         f"the record's {n} actions recompute to h_{n} = {_short(replay.hashes[-1])}, "
                         f"fairness.transcript is {_short(m.transcript)}: the record is not the match that was committed")
            else:
                self.add("transcript", True,
                         f"h_{n} recomputed from the record (seeds, seats, clock, every action, time and deadline) "
                         "equals fairness.transcript")
        elif m.version == 1:
            if fairness.transcript_hash(m.match_id, m.mine_commitments) != m.transcript:
                self.add("transcript", False, "the transcript hash does not chain the published commitments")
            elif mine_problem is not None:
                self.add("transcript", False, "the transcript chains commitments that do not match the plants")
            else:
                self.add("transcript", True, "the transcript hash chains every commitment in order (version 1: plants only)")
        else:
            self.add("transcript", False, "an unknown fairness version: the transcript cannot be recomputed")

    def result(self, replay: _Replay) -> None:
        m = self.m
        state = replay.state
        replayed = result_json(state)
        claimed = dict(m.result)
        if replayed != claimed:
            self.add("result", False, f"the rules give {replayed}, the record claims {_brief(claimed)}")
        elif m.times.turns != state.turn:
            self.add("result", False, f"the rules end at turn {state.turn}, the record claims {m.times.turns}")
        elif not state.over:
            self.add("result", False, "the replayed match is not over")
        else:
            self.add("result", True, f"replaying the rules gives the recorded result ({replayed['reason']}, turn {state.turn})")

    def players(self) -> None:
        names = _players(self.m.raw)
        if isinstance(names, str):
            self.add("players", False, names)
        else:
            self.add("players", True, f"seat 0 {names[0]!r}, seat 1 {names[1]!r} in room {self.m.raw['room']!r}")

    def rematches(self, before: _Match | str | None) -> None:
        m = self.m
        if before is None:
            if m.nonce == 1:
                self.add("rematches", None, "the room's first match: no match before it")
            else:
                self.add("rematches", None,
                         f"match {_show(m.nonce)} of its room: give the room's records in order to check that it follows them")
            return
        if isinstance(before, str):
            self.add("rematches", False, f"the record before it is not a verifiable record: {before}")
            return
        problems = []
        mine, theirs = _players(m.raw), _players(before.raw)
        if isinstance(mine, str) or isinstance(theirs, str):
            problems.append("the players or room of one of the two records are malformed")
        else:
            if m.raw["room"] != before.raw["room"]:
                problems.append(f"room {m.raw['room']!r} after room {before.raw['room']!r}")
            now = [mine[s] for s in m.join_order]
            then = [theirs[s] for s in before.join_order]
            if now != then:
                problems.append(f"the players by join position are {now}, the match before had {then}")
        if not (is_int(m.nonce) and is_int(before.nonce) and m.nonce == before.nonce + 1):
            problems.append(f"nonce {_show(m.nonce)} follows nonce {_show(before.nonce)}: nonces count the room's matches")
        if m.first_player != "swap":
            problems.append(f"a rematch is 'swap', not {m.first_player!r} (O14)")
        if m.join_order != before.join_order[::-1]:
            problems.append(f"join_order {list(m.join_order)} after {list(before.join_order)}: sides swap each rematch (O14)")
        if m.version == 2 and m.previous_transcript != before.transcript:
            problems.append(
                f"previous_transcript {_short(m.previous_transcript)} is not the previous record's transcript "
                f"{_short(before.transcript)}"
            )
        if m.match_id == before.match_id:
            problems.append("the same match id twice")
        if problems:
            self.add("rematches", False, "; ".join(problems))
        else:
            self.add("rematches", True, f"follows match {before.match_id}: same room and players, sides swapped, linked")

    # ----- the witness ----------------------------------------------------------------------------------
    def no_witness(self, detail: str) -> None:
        for name in WITNESS_CHECKS:
            self.add(name, None, detail)

    def witness(self, w: Witness, replay: _Replay, before: _Match | str | None = None) -> None:
        m = self.m
        room = m.raw.get("room")
        if w.match_id != m.match_id:
            self.add("witness", False, f"the witness is for match {w.match_id!r}, this record is match {m.match_id!r}")
            for name in WITNESS_CHECKS[1:]:
                self.add(name, None, "the witness is for another match")
            return
        if w.room != room:
            self.add("witness", False, f"the witness was kept in room {w.room!r}, the record says {_show(room)}")
        else:
            self.add("witness", True, f"a witness of this match kept by seat {w.seat} ({w.name_me!r})")
        self._commitment_shown(w)
        self._seat_and_seed(w)
        self._plants_seen(w, replay)
        self._transcript_seen(w, replay)
        self._previous_match(w, before)
        self._end_shown(w, replay)

    def _commitment_shown(self, w: Witness) -> None:
        m = self.m
        problems = []
        before = w.commitment_before_ready
        if before is not None and before != m.commitment:
            problems.append(
                f"the commitment shown before Ready was {_short(before)}, the record's is "
                f"{_short(m.commitment)}: the server seed was changed after the seeds were known"
            )
        if w.match_start.commitment != m.commitment:
            problems.append(
                f"match_start showed commitment {_short(w.match_start.commitment)}, the record's is {_short(m.commitment)}"
            )
        if problems:
            self.add("commitment_shown", False, "; ".join(problems))
        elif before is None:
            self.add("commitment_shown", None,
                     "this witness does not know the commitment shown before Ready (the seed was sent from elsewhere); "
                     "match_start's is the record's")
        else:
            self.add("commitment_shown", True, "the commitment shown before Ready and at the start is the record's")

    def _seat_and_seed(self, w: Witness) -> None:
        m = self.m
        problems = []
        if m.join_order[w.seat] != w.seed_index:
            problems.append(
                f"the witness is seat {w.seat} at join position {w.seed_index}, the record's join_order "
                f"{list(m.join_order)} puts seat {w.seat} at join position {m.join_order[w.seat]}"
            )
        if w.client_seed is not None and (w.seed_index >= len(m.seeds) or m.seeds[w.seed_index] != w.client_seed):
            shown = m.seeds[w.seed_index] if w.seed_index < len(m.seeds) else None
            problems.append(f"this player sent client seed {w.client_seed!r}, the record has {shown!r} at its join position")
        names = _players(m.raw)
        if isinstance(names, str):
            problems.append(f"the record's players cannot be compared: {names}")
        else:
            if w.name_me is not None and names[w.seat] != w.name_me:
                problems.append(f"seat {w.seat} is {names[w.seat]!r} in the record, the witness is {w.name_me!r}")
            if names[1 - w.seat] != w.name_opponent:
                problems.append(f"the opponent (seat {1 - w.seat}) is {names[1 - w.seat]!r} in the record, "
                                f"the witness saw {w.name_opponent!r}")
        start = w.match_start
        if tuple(m.seeds) != start.client_seeds:
            problems.append(f"match_start showed client seeds {list(start.client_seeds)}, the record has {list(m.seeds)}")
        if start.nonce != m.nonce or not is_int(m.nonce):
            problems.append(f"match_start showed nonce {start.nonce}, the record has {_show(m.nonce)}")
        if start.first_player_rule != m.first_player:
            problems.append(f"match_start said {start.first_player_rule!r}, the record says {m.first_player!r}")
        expected_first = "me" if w.seat == 0 else "opponent"
        if start.first != expected_first:
            problems.append(f"match_start showed {start.first!r} as first, but seat {w.seat} "
                            f"{'moves' if w.seat == 0 else 'does not move'} first in the record")
        if _ms(start.turn_seconds) != _ms(m.times.turn_seconds):
            problems.append(f"match_start showed {start.turn_seconds} s per turn, the record has {m.times.turn_seconds} s")
        if _ms(start.started) != _ms(m.times.clock_started):
            problems.append(f"match_start showed the start at {start.started}, the record at {m.times.clock_started}")
        if problems:
            self.add("seat_and_seed", False, "; ".join(problems))
        else:
            seed = "the seed sent is not known to this witness" if w.client_seed is None else f"client seed {w.client_seed!r}"
            self.add("seat_and_seed", True,
                     f"seat {w.seat}, join position {w.seed_index}, the names, the match start and {seed}: as in the record")

    def _plants_seen(self, w: Witness, replay: _Replay) -> None:
        m = self.m
        if not w.plants:
            self.add("plants_seen", None, "the witness saw no plant")
            return
        index = {seq: k for k, seq in enumerate(replay.plant_actions)}
        for p in w.plants:
            k = index.get(p.seq)
            if k is None:
                actions = m.record.actions
                what = f"action {p.seq} is a {actions[p.seq].type}" if p.seq < len(actions) else f"it has {len(actions)} actions"
                self.add("plants_seen", False, f"the witness saw a plant at seq {p.seq}; in the record {what}")
                return
            recorded = m.mine_commitments[k] if k < len(m.mine_commitments) else None
            if recorded != p.commitment:
                self.add("plants_seen", False,
                         f"the plant at seq {p.seq} was shown with commitment {_short(p.commitment)}, the record has "
                         f"{_short(recorded)}: the mine was moved, added or removed")
                return
        self.add("plants_seen", True, f"all {len(w.plants)} plant commitment(s) seen are the record's")

    def _transcript_seen(self, w: Witness, replay: _Replay) -> None:
        m = self.m
        if w.transcript is None:
            self.add("transcript_seen", None, "the witness saw no state of this match")
            return
        seq, seen = w.transcript.seq, w.transcript.hash
        n = len(m.record.actions)
        if seq > n:
            self.add("transcript_seen", False,
                     f"the witness saw the transcript after {seq} actions, the record has only {n}: actions were removed")
            return
        if m.version == 2:
            if seq >= len(replay.hashes):
                self.add("transcript_seen", False,
                         f"the transcript after {seq} actions cannot be recomputed: {replay.hash_problem}")
                return
            value = replay.hashes[seq]
        elif m.version == 1:
            published = m.mine_commitments
            seen_plants = [published[k] for k, s in enumerate(replay.plant_actions) if s < seq and k < len(published)]
            value = fairness.transcript_hash(m.match_id, seen_plants)
        else:
            self.add("transcript_seen", False, "an unknown fairness version: the transcript cannot be recomputed")
            return
        if value != seen:
            what = "the match up to then" if m.version == 2 else "the plants up to then"
            self.add("transcript_seen", False,
                     f"after {seq} actions the witness saw {_short(seen)}, the record recomputes to {_short(value)}: "
                     f"{what} differ from what this player was shown")
        else:
            covered = "the whole match up to there" if m.version == 2 else "its plants (version 1)"
            self.add("transcript_seen", True, f"the record's transcript after {seq} of {n} actions is the one seen: {covered}")

    def _previous_match(self, w: Witness, before: _Match | str | None) -> None:
        m = self.m
        if w.previous is not None and isinstance(before, _Match) and w.previous.match_id != before.match_id:
            self.add("previous_match", False,
                     f"the witness's previous match is {w.previous.match_id!r}, the record given before this one is "
                     f"{before.match_id!r}")
        elif m.version != 2:
            self.add("previous_match", None, "version 1 records do not link a rematch to the match before it")
        elif w.previous is None and m.previous_transcript is None:
            self.add("previous_match", None, "the room's first match: no match before it")
        elif w.previous is None:
            self.add("previous_match", None, "the witness did not see the room's previous match")
        elif w.previous.transcript != m.previous_transcript:
            self.add("previous_match", False,
                     f"the witness saw match {w.previous.match_id!r} end at {_short(w.previous.transcript)}, the record "
                     f"links to {_short(m.previous_transcript)}")
        else:
            self.add("previous_match", True, f"linked to the end of match {w.previous.match_id!r} as this player saw it")

    def _end_shown(self, w: Witness, replay: _Replay) -> None:
        m = self.m
        if w.end is None:
            self.add("end_shown", None, "the witness saw no match_end")
            return
        state = replay.state
        outcome = state.outcome()
        if outcome is None:
            self.add("end_shown", False, "the witness saw the match end, the record's replay is not over")
            return
        end = w.end
        problems = []
        result = result_of(outcome, w.seat).wire()
        if result != end.result.wire():
            problems.append(f"the result shown was {end.result.wire()}, the record gives {result}")
        reveal = _plain(reveal_of(state.reveal(), w.seat).wire())
        shown = _plain(end.reveal.wire())
        if reveal != shown:
            differ = [k for k in ("mines", "markers", "marker_correct", "ko_cell") if reveal.get(k) != shown.get(k)]
            problems.append(f"the reveal shown differs from the record's in {', '.join(differ)}")
        if end.turns != state.turn:
            problems.append(f"{end.turns} turns were shown, the record replays {state.turn}")
        if _ms(end.elapsed) != _ms(m.times.elapsed):
            problems.append(f"{end.elapsed} s were shown, the record has {m.times.elapsed} s")
        if problems:
            self.add("end_shown", False, "; ".join(problems))
        else:
            self.add("end_shown", True, "the result, reveal, turns and time shown at the end are the record's")


def _plain(value: Any) -> Any:
    """Tuples as lists, for comparing wire objects built by different code."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# ----- entry points -----------------------------------------------------------------------------------------


_Given = Witness | InvalidWitness | None


def _witness_of(witness: Any) -> _Given:
    if witness is None or isinstance(witness, Witness):
        return witness
    if isinstance(witness, (str, bytes, bytearray)):
        try:
            return load_witness(witness)
        except InvalidWitness as exc:
            return exc
    try:
        return parse_witness(witness)
    except InvalidWitness as exc:
        return exc
    except RecursionError:
        return InvalidWitness("the witness is nested too deeply")


def _load(data: Any) -> _Match | str:
    try:
        return _read(data)
    except _Invalid as exc:
        return str(exc)
    except RecursionError:
        return "not a record this reader accepts: nested too deeply"


def _report(loaded: _Match | str, witness: _Given, before: _Match | str | None, other: str | None) -> VerifyReport:
    """One record's report; ``other`` is the match id of a witness that belongs to another record given."""
    if isinstance(loaded, str):
        return VerifyReport((Check("record", False, loaded),), valid=False)
    m = loaded
    v = _Verifier(m)
    v.add("record", True, f"{len(m.record.actions)} actions, ONLINE, fairness data present")
    v.version()
    v.commitment()
    signature = v.signature()
    replay = v.replay(signature)
    v.first_player(replay)
    v.seeds()
    v.actions(replay)
    v.auto_moves(replay)
    v.times()
    v.deadlines(replay)
    mine_problem = v.mine_commitments(replay)
    v.transcript(replay, mine_problem)
    v.result(replay)
    v.players()
    v.rematches(before)
    witnessed = False
    valid = True
    if isinstance(witness, InvalidWitness):
        v.add("witness", False, f"not a mine-duel-witness/1: {witness}")
        for name in WITNESS_CHECKS[1:]:
            v.add(name, None, "the witness could not be read")
        valid = False
    elif witness is None:
        v.no_witness("no witness given" if other is None else f"the witness given is for match {other!r}")
    else:
        v.witness(witness, replay, before)
        witnessed = witness.match_id == m.match_id
    return VerifyReport(tuple(v.checks), valid=valid, match_id=m.match_id, version=m.version, witnessed=witnessed)


def _guarded(build: Callable[[], VerifyReport]) -> VerifyReport:
    try:
        return build()
    except Exception as exc:  # noqa: BLE001 - never a traceback, nor a frozen client: the input is reported instead
        return VerifyReport((Check("record", False, f"{INTERNAL_ERROR} ({type(exc).__name__}): please report it"),), valid=False)


def verify_record(data: Any, witness: Any = None, previous: Sequence[Any] = ()) -> VerifyReport:
    """Check one record (parsed JSON or its text); never raises.

    ``witness``: the player's ``mine-duel-witness/1`` (a :class:`Witness`, its JSON object or its text)
    or ``None``. ``previous``: the room's earlier records in order (only the last one is compared:
    the ``rematches`` check).
    """
    def build() -> VerifyReport:
        before = _load(previous[-1]) if len(previous) else None
        return _report(_load(data), _witness_of(witness), before, None)

    return _guarded(build)


def _bound(loaded: _Match | str, witness: _Given, before: _Match | str | None, other: str | None) -> Callable[[], VerifyReport]:
    return lambda: _report(loaded, witness, before, other)


def verify(records: Sequence[Any], witness: Any = None) -> RoomReport:
    """Check a room's records given in order; the witness applies to the record with its match id.

    A witness that belongs to none of them fails the ``witness`` check of every record. Never raises.
    """
    def build() -> RoomReport:
        loaded = [_load(r) for r in records]
        given = _witness_of(witness)
        target = None
        if isinstance(given, Witness):
            target = next((i for i, m in enumerate(loaded) if isinstance(m, _Match) and m.match_id == given.match_id), None)
        reports = []
        for i, m in enumerate(loaded):
            if isinstance(given, Witness) and target is not None and i != target:
                reports.append(_guarded(_bound(m, None, loaded[i - 1] if i else None, given.match_id)))
            else:
                reports.append(_guarded(_bound(m, given, loaded[i - 1] if i else None, None)))
        return RoomReport(tuple(reports))

    try:
        return build()
    except Exception as exc:  # noqa: BLE001 - never a traceback: the input is reported instead
        check = Check("record", False, f"{INTERNAL_ERROR} ({type(exc).__name__}): please report it")
        return RoomReport((VerifyReport((check,), valid=False),))
