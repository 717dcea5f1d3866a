"""One ONLINE match on the server: the rules engine plus provable fairness and its record.

No clock, no sockets, no storage: times arrive as arguments and entropy as a ``randbytes``
function, so the room logic (``room.py``) decides *when* things happen and this module only
what they do. Every accepted step becomes a record action (RECORD.md); plants are committed
(R3b) as they happen; every random choice comes from the match's :class:`FairStream` (R1, R2).

Fairness version 2 (R3c, ``shared/fairness/transcript.py``): every accepted action, with its
time and the deadline it leaves in force, is folded into the whole-match transcript (one SHA3 per
action), whose hash every ``state`` carries. Its times are the server clock rounded to the
millisecond as the record writes them (the start, each ``at``, each deadline ``at + turn``), so
the record, the transcript and the server's own deadlines agree exactly. A match restored from
a database written by an older server (no ``version`` in its blob) stays version 1 — the plant
chain, unrounded deadlines — exactly as that server would have finished it.
"""

from __future__ import annotations

import copy
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, overload

from mineduel.server.storage import Blob
from mineduel.shared.fairness import commitments as fairness
from mineduel.shared.fairness import transcript as whole
from mineduel.shared.fairness.record import FORMAT, action_json, result_json
from mineduel.shared.rules.bitboard import CELLS, COLS
from mineduel.shared.rules.engine import (
    Action,
    ActionType,
    GameState,
    Phase,
    Refusal,
    Variant,
)
from mineduel.shared.rules.events import Events, restarts_deadline, shows_cell
from mineduel.shared.wire.messages import RecordJson, SeenAction

RandBytes = Callable[[int], bytes]

RecordEntry: TypeAlias = dict[str, Any]
"""One record action as RECORD.md spells it (JSON): stored, published in the record, replayed."""

OPENING = (Phase.OPEN_EXPLORE, Phase.OPEN_PLANT)
ROW_SALT = "salt"  # storage rows only: a plant's salt
ROW_STATE = "match"  # storage rows only: deadline, stream position and end after the row
NEW_MATCH_VERSION = 2
"""The fairness version of a match started now (``LiveMatch.start``)."""
FAIRNESS_VERSIONS = (1, 2)
"""1: the plant chain only (R3b; matches an older server started); 2: the whole-match transcript (R3c)."""


def draw_first(stream: fairness.FairStream) -> int:
    """O3/R2: index into the seats in join order of the seat that moves first."""
    return stream.pick(2)


# ----- the packed history -------------------------------------------------------------------
_KINDS: tuple[ActionType, ...] = tuple(ActionType)
_KIND_NAMES: tuple[str, ...] = tuple(str(kind) for kind in _KINDS)  # shared by every entry built
_KIND_INDEX: dict[ActionType, int] = {kind: index for index, kind in enumerate(_KINDS)}
_PLANT = _KIND_INDEX[ActionType.PLANT]
_SEAT1 = 0x40  # code bits: kind index in the low bits, then seat 1, then auto
_AUTO = 0x80
_KIND_MASK = 0x3F
_ODD = 0xFF  # code of an entry kept verbatim (see MatchHistory.restore)
_NO_CELL = 0xFF
_HASH = 32  # bytes of a SHA3-256 digest: a mine commitment or a transcript hash
_PLANT_BYTES = 2 * _HASH + fairness.SALT_BYTES
assert len(_KINDS) <= _KIND_MASK


_CELL_PAIRS = tuple((cell // COLS, cell % COLS) for cell in range(CELLS))
"""``[row, col]`` of every cell, shared by every event shown (a tuple is the same JSON array)."""

_TARGET_OF_CELL = tuple(whole.target_of("explore", cell, None) for cell in range(CELLS))
"""The transcript's ``target`` of a cell action (``transcript.target_of``), per cell: no formatting per action."""
_CELL_TARGETED = frozenset({ActionType.EXPLORE, ActionType.FLAG, ActionType.UNFLAG})
"""The kinds whose ``target`` is their cell (a plant's is its commitment, the others' ``-``)."""


def seen_entry(entry: RecordEntry, seq: int, me: int) -> SeenAction:  # a record entry kept verbatim
    """A record entry kept verbatim (see ``MatchHistory.restore``) as seat ``me`` may see it."""
    kind = ActionType(entry["type"])  # read from stored JSON: the one place a kind is parsed
    shown = "cell" in entry and shows_cell(kind, entry["seat"], me)
    plant = kind is ActionType.PLANT
    return SeenAction(
        seq, "me" if entry["seat"] == me else "opponent", entry["type"], entry["cell"] if shown else None,
        entry["at"], bool(entry.get("auto")), entry["commitment"] if plant else None,
        entry["transcript"] if plant else None,
    )


def _identical(a: Any, b: Any) -> bool:
    """Equal *and* the same JSON: same types (1 is not 1.0 nor True) and the same key order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_identical(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(_identical(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


class MatchHistory(Sequence[RecordEntry]):
    """A match's record actions, packed: about 10 bytes per action plus 84 per plant.

    A room keeps its whole history in memory for as long as it lives, and the list of dicts it
    replaces cost ~420 bytes per action (a dict, a ``[row, col]`` list, a float and two hex
    strings per plant): most of a room. Each action is now two bytes (kind, seat and auto flag;
    cell) and one double (``at``); each plant adds its commitment, the transcript hash after it
    and its salt as raw bytes, in one ``bytearray``. Item ``i`` is built on access as a new dict,
    exactly the entry ``action_json`` + ``at``/``auto``/``commitment``/``transcript`` gave
    (same keys, order, types and values). An entry that would not come back identical (an int
    ``at``, a stored entry with other keys or values) is kept verbatim instead, so nothing that
    leaves the server can change. Read-only for callers: only :class:`LiveMatch` appends.
    """

    __slots__ = ("_at", "_codes", "_odd", "_odd_salts", "_plant_seq", "_plants")

    def __init__(self) -> None:
        self._codes = bytearray()  # two bytes per action: kind | seat | auto, then cell or _NO_CELL
        self._at = array("d")  # per action, its ``at`` (a float round-trips a double exactly)
        self._plant_seq = array("I")  # per plant (in order), the index of its action
        self._plants = bytearray()  # per plant: commitment, transcript after it, salt
        self._odd: dict[int, RecordEntry] | None = None  # action index -> verbatim entry
        self._odd_salts: dict[int, str] | None = None  # plant number -> salt not SALT_BYTES long

    # ----- reading ------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._at)

    @overload
    def __getitem__(self, index: int) -> RecordEntry: ...

    @overload
    def __getitem__(self, index: slice) -> list[RecordEntry]: ...

    def __getitem__(self, index: int | slice) -> RecordEntry | list[RecordEntry]:
        n = len(self._at)
        if isinstance(index, slice):
            return [self._entry(i) for i in range(*index.indices(n))]
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError("match history index out of range")
        return self._entry(i)

    def __iter__(self) -> Iterator[RecordEntry]:
        for i in range(len(self._at)):
            yield self._entry(i)

    def _entry(self, i: int) -> RecordEntry:
        code = self._codes[2 * i]
        if code == _ODD:
            assert self._odd is not None
            return copy.deepcopy(self._odd[i])
        kind = code & _KIND_MASK
        entry: RecordEntry = {"seat": 1 if code & _SEAT1 else 0, "type": _KIND_NAMES[kind]}
        cell = self._codes[2 * i + 1]
        if cell != _NO_CELL:
            entry["cell"] = [cell // COLS, cell % COLS]
        entry["at"] = self._at[i]
        if code & _AUTO:
            entry["auto"] = True
        if kind == _PLANT:
            start = _PLANT_BYTES * bisect_left(self._plant_seq, i)
            entry["commitment"] = self._plants[start : start + _HASH].hex()
            entry["transcript"] = self._plants[start + _HASH : start + 2 * _HASH].hex()
        return entry

    def seen(self, i: int, me: int) -> SeenAction:
        """Action ``i`` as seat ``me`` may see it (``state.events``): the opponent's plant has no
        cell (V2, ``shows_cell``). Built from the packed bytes, without the entry dict."""
        code = self._codes[2 * i]
        if code == _ODD:
            assert self._odd is not None
            return seen_entry(self._odd[i], i, me)
        kind = code & _KIND_MASK
        seat = 1 if code & _SEAT1 else 0
        cell = self._codes[2 * i + 1]
        commitment = transcript = None
        if kind == _PLANT:
            start = _PLANT_BYTES * bisect_left(self._plant_seq, i)
            commitment = self._plants[start : start + _HASH].hex()
            transcript = self._plants[start + _HASH : start + 2 * _HASH].hex()
        return SeenAction(
            i, "me" if seat == me else "opponent", _KIND_NAMES[kind],
            _CELL_PAIRS[cell] if cell != _NO_CELL and shows_cell(_KINDS[kind], seat, me) else None,
            self._at[i], bool(code & _AUTO), commitment, transcript,
        )

    @property
    def plants(self) -> int:
        """Number of plants so far (each has a salt and a commitment)."""
        return len(self._plant_seq)

    def __repr__(self) -> str:
        return f"MatchHistory({len(self)} actions, {self.plants} plants)"

    def commitments(self) -> list[str]:
        """R3b mine commitments in plant order, as hex."""
        data = self._plants
        return [data[s : s + _HASH].hex() for s in range(0, len(data), _PLANT_BYTES)]

    def salt_at(self, index: int) -> str:
        """The salt of the plant that is action ``index``, as hex."""
        k = bisect_left(self._plant_seq, index)
        if k == len(self._plant_seq) or self._plant_seq[k] != index:
            raise KeyError(f"action {index} is not a plant")
        if self._odd_salts and k in self._odd_salts:
            return self._odd_salts[k]
        end = _PLANT_BYTES * (k + 1)
        return self._plants[end - fairness.SALT_BYTES : end].hex()

    def salts(self) -> list[str]:
        """The plants' secret salts in plant order, as hex."""
        data, odd = self._plants, self._odd_salts or {}
        return [
            odd[k] if k in odd else data[s - fairness.SALT_BYTES : s].hex()
            for k, s in enumerate(range(_PLANT_BYTES, len(data) + 1, _PLANT_BYTES))
        ]

    # ----- writing (LiveMatch only) -----------------------------------------------------------
    def add(
        self, action: Action, at: float, auto: bool, plant: tuple[str, str, str] | None
    ) -> RecordEntry:
        """Record one accepted action; ``plant`` is (salt, commitment, transcript) as hex.

        Returns its entry, as item ``-1`` will give it."""
        i = len(self._at)
        kind, seat, cell = action.type, action.seat, action.cell
        packable = (
            type(at) is float
            and type(seat) is int
            and seat in (0, 1)
            and (cell is None or (type(cell) is int and 0 <= cell < CELLS))
            and kind in _KIND_INDEX
            and (plant is not None) == (kind is ActionType.PLANT)
        )
        if plant is not None:
            salt, commitment, transcript = plant
            raw_salt = bytes.fromhex(salt)
            if len(raw_salt) != fairness.SALT_BYTES:  # only from a stored blob (new_salt makes 16)
                self._odd_salts = self._odd_salts or {}
                self._odd_salts[len(self._plant_seq)] = salt
                raw_salt = bytes(fairness.SALT_BYTES)
            self._plant_seq.append(i)
            self._plants += bytes.fromhex(commitment) + bytes.fromhex(transcript) + raw_salt
        if packable:
            code = _KIND_INDEX[kind] | (_SEAT1 if seat else 0) | (_AUTO if auto else 0)
            self._codes += bytes((code, _NO_CELL if cell is None else cell))
            self._at.append(at)
            return self._entry(i)
        entry = action_json(action, at=at)
        if auto:
            entry["auto"] = True
        if plant is not None:
            entry["commitment"], entry["transcript"] = plant[1], plant[2]
        self._verbatim(i, entry)
        return copy.deepcopy(entry)

    def restore(
        self, action: Action, stored: RecordEntry, plant: tuple[str, str, str] | None
    ) -> None:
        """Append a stored entry (``from_blob``): packed if it comes back identical, else verbatim."""
        i = len(self._at)
        self.add(action, stored.get("at"), stored.get("auto") is True, plant)  # type: ignore[arg-type]
        if not _identical(self._entry(i), stored):
            self._verbatim(i, copy.deepcopy(stored))

    def _verbatim(self, i: int, entry: RecordEntry) -> None:
        """Keep action ``i`` (the next one, or one just appended) as this very dict."""
        if i == len(self._at):
            self._codes += bytes((_ODD, _NO_CELL))
            self._at.append(0.0)
        else:
            self._codes[2 * i] = _ODD
        if self._odd is None:
            self._odd = {}
        self._odd[i] = entry


@dataclass
class LiveMatch:
    """The server's whole truth about one match; only ``presenter.py`` may show parts of it."""

    id: str
    number: int  # R1 match nonce: 1 for the room's first match, then 2, 3, ...
    players: tuple[int, int]  # room seat ids of record seat 0 (first player) and 1
    join_order: tuple[int, int]  # record seats in join order (R1 client-seed order)
    server_seed: str
    client_seeds: tuple[str, str]  # in join order
    first_rule: str  # "draw" (O3) or "swap" (O14 rematch)
    started: float  # server-clock time
    started_wall: float  # Unix time, for people (E1)
    turn_seconds: float
    names: tuple[str, str] = ("", "")  # by record seat
    state: GameState = field(default_factory=lambda: GameState(Variant.ONLINE))
    history: MatchHistory = field(default_factory=MatchHistory)  # the record actions, packed
    transcript: str = ""  # v1: the plant chain (R3b); v2: the whole-match transcript h_seq (R3c)
    deadline: float | None = None
    ended: float | None = None
    ended_wall: float | None = None
    version: int = 1  # fairness version (FAIRNESS_VERSIONS); start() gives NEW_MATCH_VERSION
    previous: str | None = None  # v2: the room's previous match's final transcript (a rematch), else None
    deadline_ms: int | None = None  # v2: the transcript's deadline in force (ms), None once over
    turn_ms: int = 0  # v2: turn_seconds in the transcript's milliseconds
    stream: fairness.FairStream = field(init=False)

    def __post_init__(self) -> None:
        if self.version not in FAIRNESS_VERSIONS:
            raise ValueError(f"match {self.id}: unknown fairness version {self.version!r}")
        self.stream = fairness.FairStream(self.signature)
        if not self.transcript and self.version == 1:
            self.transcript = fairness.transcript_start(self.id)

    def _open_transcript(self) -> None:
        """v2: ``h_0`` and the first deadline (R3c), once the seats and the clock are known."""
        self.turn_ms = whole.millis(self.turn_seconds)
        start_ms = whole.millis(self.started)
        self.transcript = whole.match_start(
            self.id, self.commitment, self.client_seeds, self.number, self.first_rule, self.join_order,
            self.turn_ms, start_ms, self.previous,
        )
        self.deadline_ms = start_ms + self.turn_ms

    # ----- derived ---------------------------------------------------------------------
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
        """Number of record actions so far; the next action's index."""
        # The packed array's length: len() of the history itself calls back into Python
        # (MatchHistory.__len__), and seq is read several times per action.
        return len(self.history._at)

    @property
    def actions(self) -> list[RecordEntry]:
        """The record actions as a new list of new dicts (``history[i]`` builds just one)."""
        return list(self.history)

    @property
    def salts(self) -> list[str]:
        """The plants' secret salts (hex), in plant order; revealed only after the end."""
        return self.history.salts()

    @property
    def commitments(self) -> list[str]:
        """R3b mine commitments (hex), in plant order."""
        return self.history.commitments()

    def record_seat(self, sid: int) -> int:
        return self.players.index(sid)

    # ----- starting ------------------------------------------------------------------------
    @classmethod
    def start(
        cls,
        *,
        match_id: str,
        number: int,
        seats_in_join_order: tuple[int, int],
        first_sid: int | None,
        server_seed: str,
        client_seeds: tuple[str, str],
        now: float,
        wall: float,
        turn_seconds: float,
        names_by_sid: dict[int, str] | None = None,
        previous: str | None = None,
        version: int | None = None,
    ) -> LiveMatch:
        """A new match; ``first_sid`` ``None`` draws the first player from the stream (O3).

        ``previous`` is the final transcript of the room's previous match for a rematch (O14),
        ``None`` otherwise; ``version`` defaults to :data:`NEW_MATCH_VERSION`. Version 2 starts
        the clock at ``now`` rounded to the millisecond and a turn of whole milliseconds.
        """
        version = NEW_MATCH_VERSION if version is None else version
        if version == 2:
            now, turn_seconds = round(now, 3), round(turn_seconds, 3)
        a, b = seats_in_join_order
        match = cls(
            id=match_id,
            number=number,
            players=(a, b),
            join_order=(0, 1),
            server_seed=server_seed,
            client_seeds=client_seeds,
            first_rule="draw" if first_sid is None else "swap",
            started=now,
            started_wall=wall,
            turn_seconds=turn_seconds,
            version=version,
            previous=previous if version == 2 else None,
        )
        if first_sid is None:
            first_sid = seats_in_join_order[draw_first(match.stream)]
        if first_sid == a:
            match.players, match.join_order = (a, b), (0, 1)
        else:
            match.players, match.join_order = (b, a), (1, 0)
        names = names_by_sid or {}
        match.names = (names.get(match.players[0], ""), names.get(match.players[1], ""))
        match.deadline = now + turn_seconds  # O4: the first opening action
        if version == 2:
            match._open_transcript()
        return match

    # ----- changing ------------------------------------------------------------------------
    def apply(
        self, action: Action, *, at: float, randbytes: RandBytes, auto: bool = False
    ) -> Refusal | list[RecordEntry]:
        """Validate and apply one action; the new record entries, or the refusal (no change)."""
        events = self.state.apply(action)
        if isinstance(events, Refusal):
            return events
        plant = None
        if self.version == 2:
            at = round(at, 3)  # the record's time: the transcript and the deadlines use it too
            seq = self.seq
            commitment = None
            if action.type is ActionType.PLANT:
                assert action.cell is not None
                salt = fairness.new_salt(randbytes)
                commitment = fairness.mine_commitment(salt, self.id, seq, action.seat, action.cell)
            transcript = self._fold(seq, action, events, at, auto, commitment)
            if commitment is not None:
                plant = (salt, commitment, transcript)
            return [self.history.add(action, at, auto, plant)]
        if action.type is ActionType.PLANT:  # version 1: the plant chain, deadlines from the unrounded time
            assert action.cell is not None
            salt = fairness.new_salt(randbytes)
            commitment = fairness.mine_commitment(salt, self.id, self.seq, action.seat, action.cell)
            self.transcript = fairness.chain(self.transcript, commitment)
            plant = (salt, commitment, self.transcript)
        entry = self.history.add(action, round(at, 3), auto, plant)
        if self.state.over:
            self.deadline = None
            self.ended = at
        elif restarts_deadline(events):
            self.deadline = at + self.turn_seconds  # O4 next opening step / O5 a new turn
        return [entry]

    def _fold(
        self, seq: int, action: Action, events: Events, at: float, auto: bool, commitment: str | None
    ) -> str:
        """v2 (R3c): the deadline after accepted action ``seq`` (at ``at``, already rounded), then
        ``h_(seq+1)``: the new transcript, also returned. One SHA3, nothing per seat."""
        at_ms = round(at * 1000)  # transcript.millis, inline: once per action
        if self.state.over:
            self.deadline = self.deadline_ms = None
            self.ended = at
        elif restarts_deadline(events):
            self.deadline = at + self.turn_seconds  # O4 next opening step / O5 a new turn
            self.deadline_ms = at_ms + self.turn_ms
        kind = action.type
        if commitment is not None:
            target = commitment
        elif kind in _CELL_TARGETED:
            assert action.cell is not None
            target = _TARGET_OF_CELL[action.cell]
        else:
            target = "-"
        self.transcript = transcript = whole.step(
            self.transcript, seq, action.seat, kind._value_, target, at_ms, auto, self.deadline_ms
        )
        return transcript

    def expire(self, at: float, randbytes: RandBytes) -> list[RecordEntry]:
        """O4/O5: the deadline at ``at`` ran out: timeout, and in the opening the auto-move."""
        seat = self.state.to_move
        assert seat is not None and not self.over
        opening = self.state.phase in OPENING
        entries = self._must(Action(seat, ActionType.TIMEOUT), at, randbytes, auto=True)
        if opening and not self.over:
            auto = self.state.opening_auto_action(self.stream)
            entries += self._must(auto, at, randbytes, auto=True)
        return entries  # apply() re-armed the deadline from ``at`` (O4 next step, O5 next turn)

    def end_by(self, kind: ActionType, seat: int, at: float, randbytes: RandBytes) -> list[RecordEntry]:
        """O11/O12: resign, disconnect or void."""
        return self._must(Action(seat, kind), at, randbytes, auto=kind is not ActionType.RESIGN)

    def _must(self, action: Action, at: float, randbytes: RandBytes, auto: bool) -> list[RecordEntry]:
        result = self.apply(action, at=at, randbytes=randbytes, auto=auto)
        if isinstance(result, Refusal):  # pragma: no cover - a server bug, never a user error
            raise AssertionError(f"server action {action} refused: {result}")
        return result

    # ----- the record ------------------------------------------------------------------------
    def fairness_json(self, *, reveal: bool) -> RecordJson:
        """RULES.md §9 data; secrets (server seed, salts) only when ``reveal`` (after the end)."""
        out: RecordJson = {
            "version": self.version,
            "commitment": self.commitment,
            "client_seeds": list(self.client_seeds),
            "nonce": self.number,
            "first_player": self.first_rule,
            "join_order": list(self.join_order),
            "mine_commitments": self.commitments,
        }
        if self.version == 2:
            out["previous_transcript"] = self.previous
        out["transcript"] = self.transcript
        if reveal:
            out["server_seed"] = self.server_seed
            out["signature"] = self.signature
            out["salts"] = self.salts
            out["stream_used"] = self.stream.consumed
        return out

    def record(self, *, room: str) -> RecordJson:
        """The full match record (RECORD.md) with ``fairness``, ``times`` and ``result``."""
        if not self.over:
            raise ValueError("a record is published only after the end (V4, R3)")
        assert self.ended is not None
        ended_wall = self.ended_wall if self.ended_wall is not None else self.started_wall + (self.ended - self.started)
        return {
            "format": FORMAT,
            "variant": "online",
            "match_id": self.id,
            "room": room,
            "players": [{"seat": s, "name": self.names[s]} for s in (0, 1)],
            "actions": [{k: v for k, v in a.items() if k not in ("commitment", "transcript")} for a in self.history],
            "fairness": self.fairness_json(reveal=True),
            "times": {
                "started": round(self.started_wall, 3),
                "ended": round(ended_wall, 3),
                "elapsed": round(self.ended - self.started, 3),
                "turns": self.state.turn,
                "clock_started": round(self.started, 3),
                "clock_ended": round(self.ended, 3),
                "turn_seconds": self.turn_seconds,
            },
            "result": result_json(self.state),
        }

    # ----- persistence -------------------------------------------------------------------------
    def to_blob(self) -> Blob:
        """The match's metadata for the room's blob; a version 1 match's blob is what an older
        server wrote (no ``version``), a version 2 one adds its version, previous and transcript."""
        blob: Blob = {
            "id": self.id,
            "number": self.number,
            "players": list(self.players),
            "join_order": list(self.join_order),
            "server_seed": self.server_seed,
            "client_seeds": list(self.client_seeds),
            "first": self.first_rule,
            "started": self.started,
            "started_wall": self.started_wall,
            "turn_seconds": self.turn_seconds,
            "names": list(self.names),
            "salts": self.salts,
            "deadline": self.deadline,
            "ended": self.ended,
            "ended_wall": self.ended_wall,
            "stream_used": self.stream.consumed,
        }
        if self.version != 1:
            blob["version"] = self.version
            blob["previous_transcript"] = self.previous
            blob["transcript"] = self.transcript  # at the blob's seq: checked on restore
        return blob

    def stored_rows(self, entries: list[RecordEntry], first: int | None = None) -> list[Blob]:
        """The last ``entries`` as storage rows: each plant with its salt, the last row with the
        match's clock state after them (``ROW_STATE``), so an action needs no room rewrite.

        Rows never reach a client (only storage reads them): a salt shown before the end would
        let the opponent find the mine's cell from its commitment.
        """
        if first is None:  # the seq of entries[0]; the caller usually has it already
            first = self.seq - len(entries)
        rows = []
        for offset, entry in enumerate(entries):
            row = dict(entry)
            if entry["type"] == "plant":
                row[ROW_SALT] = self.history.salt_at(first + offset)
            rows.append(row)
        if rows:
            state: Blob = {
                "deadline": self.deadline,
                "stream_used": self.stream.consumed,
                "ended": self.ended,
                "ended_wall": self.ended_wall,
            }
            if self.version != 1:
                state["transcript"] = self.transcript  # after the last row: checked on restore
            rows[-1][ROW_STATE] = state
        return rows

    @classmethod
    def from_blob(cls, blob: Blob, actions: list[Blob]) -> LiveMatch:
        """Rebuild a match by replaying its stored actions through the engine.

        ``actions`` are storage rows: record entries, plus (since group commit) each plant's
        salt and, on the last row of each commit, the clock state — newer than the blob's when
        the row is at or after the blob's ``seq``.

        A blob without ``version`` was written by a version 1 server: the match stays version 1.
        A version 2 match recomputes its transcript from ``h_0`` through every stored action (its
        ``at``, ``auto`` and the deadline the replay gives) and checks it against the hashes stored
        with the rows (each plant's, the clock state's) and the blob: a restart continues the very
        transcript the players were shown, or the match does not load.
        """
        from mineduel.shared.fairness.record import from_json

        salts_in_rows: dict[int, str] = {}
        state: Blob | None = None
        state_seq = -1
        if any(ROW_SALT in a or ROW_STATE in a for a in actions):
            cleaned = []
            for index, row in enumerate(actions):
                if ROW_SALT in row or ROW_STATE in row:
                    row = dict(row)
                    salt = row.pop(ROW_SALT, None)
                    if salt is not None:
                        salts_in_rows[index] = salt
                    found = row.pop(ROW_STATE, None)
                    if found is not None:
                        state, state_seq = found, index
                cleaned.append(row)
            actions = cleaned
        if state is not None and state_seq < blob.get("seq", 0):
            state = None  # the blob was written after that row: it is newer

        match = cls(
            id=blob["id"],
            number=blob["number"],
            players=tuple(blob["players"]),
            join_order=tuple(blob["join_order"]),
            server_seed=blob["server_seed"],
            client_seeds=tuple(blob["client_seeds"]),
            first_rule=blob["first"],
            started=blob["started"],
            started_wall=blob["started_wall"],
            turn_seconds=blob["turn_seconds"],
            names=tuple(blob.get("names", ("", ""))),
            version=blob.get("version", 1),
            previous=blob.get("previous_transcript"),
        )
        v2 = match.version == 2
        if v2:
            match._open_transcript()
        hashes = [match.transcript]  # v2: h_0 .. h_n, to compare with what was stored
        record = from_json({"format": FORMAT, "variant": "online", "actions": actions})
        salts = blob.get("salts", [])
        for index, action in enumerate(record.actions):
            events = match.state.apply(action)
            if isinstance(events, Refusal):
                raise ValueError(f"stored match {match.id}: action {index} is refused on replay")
            plant = None
            commitment = None
            if action.type is ActionType.PLANT:
                salt = salts_in_rows.get(index) or salts[match.history.plants]
                assert action.cell is not None
                commitment = fairness.mine_commitment(salt, match.id, index, action.seat, action.cell)
                if not v2:
                    match.transcript = fairness.chain(match.transcript, commitment)
                    plant = (salt, commitment, match.transcript)
            if v2:
                row = actions[index]
                hashes.append(match._fold(index, action, events, row["at"], row.get("auto") is True, commitment))
                if commitment is not None:
                    plant = (salt, commitment, match.transcript)
                    if row.get("transcript", match.transcript) != match.transcript:
                        raise ValueError(f"stored match {match.id}: plant {index} was shown another transcript")
            match.history.restore(action, actions[index], plant)
        if v2:
            for seq, stored in ((state_seq + 1, (state or {}).get("transcript")),
                                (blob.get("seq"), blob.get("transcript"))):
                if stored is not None and isinstance(seq, int) and 0 <= seq < len(hashes) and hashes[seq] != stored:
                    raise ValueError(f"stored match {match.id}: the transcript after {seq} actions differs from the stored one")
        clock = state if state is not None else blob
        match.deadline = clock["deadline"]
        match.ended = clock["ended"]
        match.ended_wall = clock.get("ended_wall")
        match.stream = advanced_stream(match.signature, clock["stream_used"])
        return match


def advanced_stream(signature: str, used: int) -> fairness.FairStream:
    """A stream that has already given ``used`` integers."""
    stream = fairness.FairStream(signature)
    for _ in range(used):
        stream.next_u32()
    return stream
