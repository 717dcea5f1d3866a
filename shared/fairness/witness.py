"""The player's witness, format ``mine-duel-witness/1`` (RECORD.md): what one client saw live.

A record only agrees with itself: the operator who writes it could have rewritten the whole
match. The witness is the other side of the proof. For every ONLINE match a client keeps, beside
its copy of the record, what the server showed it while the match ran — the commitment shown
before Ready, the client seed it sent, its seat, every plant commitment and the latest transcript
hash with its ``seq`` — and ``mine-duel verify RECORD --witness FILE`` (and the in-game *Verify*)
hold the record to it (``fairness.verify``: ``witness``, ``commitment_shown``, ``seat_and_seed``,
``plants_seen``, ``transcript_seen``, ``previous_match``, ``end_shown``).

Layout (every key required; other keys are ignored)::

    {"format": "mine-duel-witness/1", "match_id": str, "room": str, "server": str,
     "seat": 0|1,                      # match_start.seat: the record seat
     "seed_index": 0|1,                # match_start.my_seed_index: the join position
     "client_seed": str | null,               # the seed this client sent (ready / rematch)
     "commitment_before_ready": hex64 | null, # the room's next_commitment shown before Ready / Rematch
     "names": {"me": str | null, "opponent": str},
     "match_start": {"commitment": hex64, "client_seeds": [str, str], "nonce": int,
                     "first_player_rule": "draw"|"swap", "first": "me"|"opponent",
                     "turn_seconds": number, "started": number},
     "previous": null | {"match_id": str, "transcript": hex64},   # a rematch: the previous match's last hash
     "plants": [{"seq": int, "commitment": hex64}, ...],          # every plant seen, by seq (ascending)
     "transcript": null | {"seq": int, "hash": hex64},            # the latest state.seq / state.transcript
     "end": null | {"result": match_end.result, "reveal": match_end.reveal, "turns": int, "elapsed": number}}

``null`` says the client does not know: the seed and the commitment of a match it did not start
itself (resumed on another computer), its own name, the transcript before the first ``state``, the
end before ``match_end``; the checks that need them are then not applicable, never passed.
``hex64`` is exactly 64 lowercase hex digits; integers are JSON integers (never ``true``/``false``),
``seq`` and ``turns`` non-negative; numbers finite and at most ``1e12`` in size. :func:`parse`
checks every field and raises :class:`InvalidWitness` naming the first one that is wrong. Pure: standard library and
``mineduel.shared`` only, no I/O (the client stores the text, the CLI reads the file).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar

from mineduel.shared.fairness.record import strict_json
from mineduel.shared.wire.messages import BadMessage, Result, Reveal

__all__ = [
    "FORMAT",
    "EndSeen",
    "InvalidWitness",
    "MatchStartSeen",
    "PlantSeen",
    "PreviousSeen",
    "TranscriptSeen",
    "Witness",
    "loads",
    "parse",
]

FORMAT = "mine-duel-witness/1"

T = TypeVar("T")

MAX_SECONDS = 1e12
"""Times and durations are seconds of at most this size (about 31,700 years): anything larger is not a clock."""

_HEX64 = re.compile(r"[0-9a-f]{64}")


class InvalidWitness(ValueError):
    """The witness breaks the ``mine-duel-witness/1`` layout; the message names the field."""


@dataclass(frozen=True, slots=True)
class MatchStartSeen:
    """What ``match_start`` showed: the commitment, both seeds (join order), nonce, rule, who is first."""

    commitment: str
    client_seeds: tuple[str, str]
    nonce: int
    first_player_rule: Literal["draw", "swap"]
    first: Literal["me", "opponent"]
    turn_seconds: float
    started: float

    def to_json(self) -> dict[str, Any]:
        return {
            "commitment": self.commitment,
            "client_seeds": list(self.client_seeds),
            "nonce": self.nonce,
            "first_player_rule": self.first_player_rule,
            "first": self.first,
            "turn_seconds": self.turn_seconds,
            "started": self.started,
        }


@dataclass(frozen=True, slots=True)
class PreviousSeen:
    """A rematch (O14): the previous match of the room and the last transcript hash seen of it."""

    match_id: str
    transcript: str

    def to_json(self) -> dict[str, Any]:
        return {"match_id": self.match_id, "transcript": self.transcript}


@dataclass(frozen=True, slots=True)
class PlantSeen:
    """A plant's commitment as a ``state`` event showed it (R3b), by the plant's ``seq``."""

    seq: int
    commitment: str

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "commitment": self.commitment}


@dataclass(frozen=True, slots=True)
class TranscriptSeen:
    """The latest ``state.seq`` and ``state.transcript``: the hash after ``seq`` actions (R3c)."""

    seq: int
    hash: str

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "hash": self.hash}


@dataclass(frozen=True, slots=True)
class EndSeen:
    """What ``match_end`` showed: the seat-relative result and reveal, turns and elapsed seconds."""

    result: Result
    reveal: Reveal
    turns: int
    elapsed: float

    def to_json(self) -> dict[str, Any]:
        reveal = self.reveal
        return {
            "result": self.result.wire(),
            "reveal": {
                "mines": list(reveal.mines),
                "markers": list(reveal.markers),
                "marker_correct": list(reveal.marker_correct),
                "ko_cell": None if reveal.ko_cell is None else list(reveal.ko_cell),
            },
            "turns": self.turns,
            "elapsed": self.elapsed,
        }


@dataclass(frozen=True, slots=True)
class Witness:
    """One client's ``mine-duel-witness/1`` of one match (see the module docstring)."""

    match_id: str
    room: str
    server: str
    seat: int
    seed_index: int
    client_seed: str | None
    commitment_before_ready: str | None
    name_me: str | None
    name_opponent: str
    match_start: MatchStartSeen
    previous: PreviousSeen | None
    plants: tuple[PlantSeen, ...]
    transcript: TranscriptSeen | None
    end: EndSeen | None

    def to_json(self) -> dict[str, Any]:
        """The witness as its JSON object, keys in the documented order (``parse`` reads it back)."""
        return {
            "format": FORMAT,
            "match_id": self.match_id,
            "room": self.room,
            "server": self.server,
            "seat": self.seat,
            "seed_index": self.seed_index,
            "client_seed": self.client_seed,
            "commitment_before_ready": self.commitment_before_ready,
            "names": {"me": self.name_me, "opponent": self.name_opponent},
            "match_start": self.match_start.to_json(),
            "previous": None if self.previous is None else self.previous.to_json(),
            "plants": [p.to_json() for p in self.plants],
            "transcript": None if self.transcript is None else self.transcript.to_json(),
            "end": None if self.end is None else self.end.to_json(),
        }

    def dumps(self) -> str:
        """The witness as JSON text (UTF-8 when encoded), as a client stores it."""
        return json.dumps(self.to_json(), ensure_ascii=False, indent=1)

    def with_state(self, seq: int, transcript: str, plants: Iterable[tuple[int, str]] = ()) -> Witness:
        """After a ``state``: its ``seq``/``transcript`` (if not older than the kept one) and its plants.

        ``plants`` are ``(seq, commitment)`` of the plant events it carried; a plant already kept
        is not added twice. A ``state`` older than the kept one (a reordered or replayed message)
        never moves the kept transcript back.
        """
        _check_count("transcript.seq", seq)
        _check_hex("transcript.hash", transcript)
        known = {p.seq: p for p in self.plants}
        for plant_seq, commitment in plants:
            _check_count("plants.seq", plant_seq)
            _check_hex("plants.commitment", commitment)
            known.setdefault(plant_seq, PlantSeen(plant_seq, commitment))
        kept = self.transcript
        latest = kept if kept is not None and seq < kept.seq else TranscriptSeen(seq, transcript)
        return replace(self, plants=tuple(known[s] for s in sorted(known)), transcript=latest)

    def with_end(self, result: Result, reveal: Reveal, turns: int, elapsed: float) -> Witness:
        """After ``match_end``: what it showed (its reveal kept as :func:`parse` reads one back)."""
        kept = Reveal(
            tuple(reveal.mines), tuple(reveal.markers), tuple(reveal.marker_correct),
            None if reveal.ko_cell is None else list(reveal.ko_cell),
        )
        return replace(self, end=EndSeen(result, kept, _check_count("end.turns", turns), _number(elapsed, "end.elapsed")))


# ----- reading --------------------------------------------------------------------------------------


def _fail(where: str, message: str) -> InvalidWitness:
    return InvalidWitness(f"witness.{where} {message}")


def _get(obj: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise _fail(f"{where}{key}", "is missing")
    return obj[key]


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise _fail(where, f"must be an object, got {_show(value)}")
    return value


def _string(value: Any, where: str, *, nonempty: bool = False) -> str:
    if not isinstance(value, str):
        raise _fail(where, f"must be a string, got {_show(value)}")
    if nonempty and not value:
        raise _fail(where, "must not be empty")
    return value


def _check_hex(where: str, value: Any) -> str:
    if not isinstance(value, str) or _HEX64.fullmatch(value) is None:
        raise _fail(where, f"must be 64 lowercase hex digits, got {_show(value)}")
    return value


def _hex_at(value: Any, where: str) -> str:
    return _check_hex(where, value)


def _optional(read: Callable[[Any, str], T], value: Any, where: str) -> T | None:
    return None if value is None else read(value, where)


def _integer(value: Any, where: str) -> int:
    if type(value) is not int:
        raise _fail(where, f"must be an integer, got {_show(value)}")
    return value


def _check_count(where: str, value: Any) -> int:
    number = _integer(value, where)
    if number < 0:
        raise _fail(where, f"must not be negative, got {number}")
    return number


def _seat(value: Any, where: str) -> int:
    number = _integer(value, where)
    if number not in (0, 1):
        raise _fail(where, f"must be 0 or 1, got {number}")
    return number


def _number(value: Any, where: str) -> float:
    if type(value) not in (int, float):
        raise _fail(where, f"must be a number, got {_show(value)}")
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an int too large for a float
        finite = False
    if not finite:
        raise _fail(where, f"must be a finite number, got {_show(value)}")
    if abs(value) > MAX_SECONDS:
        raise _fail(where, f"is out of range: {_show(value)} s")
    return float(value)


def _show(value: Any) -> str:
    """A short description of a bad value for a message (never the whole of a huge value)."""
    if isinstance(value, (dict, list)):
        return f"a JSON {'object' if isinstance(value, dict) else 'array'}"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return "a huge integer"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _match_start(value: Any) -> MatchStartSeen:
    obj = _object(value, "match_start")
    where = "match_start."
    seeds = _get(obj, "client_seeds", where)
    if not (isinstance(seeds, list) and len(seeds) == 2):
        raise _fail("match_start.client_seeds", f"must be a list of two strings, got {_show(seeds)}")
    first_seed = _string(seeds[0], "match_start.client_seeds[0]")
    second_seed = _string(seeds[1], "match_start.client_seeds[1]")
    rule = _get(obj, "first_player_rule", where)
    if rule not in ("draw", "swap"):
        raise _fail("match_start.first_player_rule", f"must be 'draw' or 'swap', got {_show(rule)}")
    first = _get(obj, "first", where)
    if first not in ("me", "opponent"):
        raise _fail("match_start.first", f"must be 'me' or 'opponent', got {_show(first)}")
    return MatchStartSeen(
        _check_hex("match_start.commitment", _get(obj, "commitment", where)),
        (first_seed, second_seed),
        _integer(_get(obj, "nonce", where), "match_start.nonce"),
        "draw" if rule == "draw" else "swap",
        "me" if first == "me" else "opponent",
        _number(_get(obj, "turn_seconds", where), "match_start.turn_seconds"),
        _number(_get(obj, "started", where), "match_start.started"),
    )


def _previous(value: Any) -> PreviousSeen | None:
    if value is None:
        return None
    obj = _object(value, "previous")
    return PreviousSeen(
        _string(_get(obj, "match_id", "previous."), "previous.match_id", nonempty=True),
        _check_hex("previous.transcript", _get(obj, "transcript", "previous.")),
    )


def _plants(value: Any) -> tuple[PlantSeen, ...]:
    if not isinstance(value, list):
        raise _fail("plants", f"must be a list, got {_show(value)}")
    out: list[PlantSeen] = []
    for i, raw in enumerate(value):
        where = f"plants[{i}]"
        obj = _object(raw, where)
        seq = _check_count(f"{where}.seq", _get(obj, "seq", f"{where}."))
        if out and seq <= out[-1].seq:
            raise _fail(f"{where}.seq", f"must be greater than the plant before it ({out[-1].seq}), got {seq}")
        out.append(PlantSeen(seq, _check_hex(f"{where}.commitment", _get(obj, "commitment", f"{where}."))))
    return tuple(out)


def _end(value: Any) -> EndSeen | None:
    if value is None:
        return None
    obj = _object(value, "end")
    result = _object(_get(obj, "result", "end."), "end.result")
    reveal = _object(_get(obj, "reveal", "end."), "end.reveal")
    try:
        parsed_result = Result.parse(result)
    except BadMessage as exc:
        raise _fail("end.result", f"is not a match_end result: {exc}") from None
    try:
        parsed_reveal = Reveal.parse(reveal)
    except BadMessage as exc:
        raise _fail("end.reveal", f"is not a match_end reveal: {exc}") from None
    return EndSeen(
        parsed_result,
        parsed_reveal,
        _check_count("end.turns", _get(obj, "turns", "end.")),
        _number(_get(obj, "elapsed", "end."), "end.elapsed"),
    )


def parse(obj: Any) -> Witness:
    """Check a decoded witness field by field; :class:`InvalidWitness` names the first bad one."""
    if not isinstance(obj, dict):
        raise InvalidWitness(f"a witness is a JSON object, got {_show(obj)}")
    fmt = obj.get("format")
    if fmt != FORMAT:
        raise _fail("format", f"is {_show(fmt)}, expected exactly {FORMAT!r}")
    names = _object(_get(obj, "names", ""), "names")
    transcript = _get(obj, "transcript", "")
    if transcript is not None:
        transcript = _object(transcript, "transcript")
    return Witness(
        match_id=_string(_get(obj, "match_id", ""), "match_id", nonempty=True),
        room=_string(_get(obj, "room", ""), "room"),
        server=_string(_get(obj, "server", ""), "server"),
        seat=_seat(_get(obj, "seat", ""), "seat"),
        seed_index=_seat(_get(obj, "seed_index", ""), "seed_index"),
        client_seed=_optional(_string, _get(obj, "client_seed", ""), "client_seed"),
        commitment_before_ready=_optional(_hex_at, _get(obj, "commitment_before_ready", ""), "commitment_before_ready"),
        name_me=_optional(_string, _get(names, "me", "names."), "names.me"),
        name_opponent=_string(_get(names, "opponent", "names."), "names.opponent"),
        match_start=_match_start(_get(obj, "match_start", "")),
        previous=_previous(_get(obj, "previous", "")),
        plants=_plants(_get(obj, "plants", "")),
        transcript=None if transcript is None else TranscriptSeen(
            _check_count("transcript.seq", _get(transcript, "seq", "transcript.")),
            _check_hex("transcript.hash", _get(transcript, "hash", "transcript.")),
        ),
        end=_end(_get(obj, "end", "")),
    )


def loads(text: str | bytes | bytearray) -> Witness:
    """Parse a witness from its JSON text (UTF-8 bytes or str); :class:`InvalidWitness` if it is not one."""
    return parse(strict_json(text, InvalidWitness))
