"""The MINE DUEL rules engine (RULES.md §1–7 and the engine side of §10).

Pure: no I/O, no clock, no global random. Time and randomness arrive as arguments; the CPU
client, the server, the simulator and ``mine-duel replay`` all drive this one state machine.

Seat ``0`` is always the first player (V1); the server maps people to seats.
``apply`` validates an :class:`Action` and either changes the state or returns a
:class:`Refusal` and leaves the state exactly as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import fields
from typing import Any, Protocol

from mineduel.shared.rules import events as ev
from mineduel.shared.rules.bitboard import BYTE_BITS, CELLS, FULL, NEIGHBOURS, Cell, Mask, cells, nth_cell
from mineduel.shared.rules.events import Event, Events, MatchEnded
from mineduel.shared.rules.views import FinalReveal, SeatView
from mineduel.shared.rules.vocabulary import (
    CELL_ACTIONS,
    NORMAL_PHASES,
    ONLINE_ONLY_ACTIONS,
    OPENING_PHASES,
    Action,
    ActionType,
    Outcome,
    Phase,
    Reason,
    Refusal,
    Variant,
)

__all__ = [  # the vocabulary is re-exported: ``from ...engine import Phase`` keeps working
    "CELL_ACTIONS", "NORMAL_PHASES", "ONLINE_ONLY_ACTIONS", "OPENING_PHASES", "Action", "ActionType",
    "Event", "Events", "GameState", "IllegalAction", "Outcome", "Phase", "Picker", "Reason", "Refusal",
    "Variant",
]


_numbers_memo: tuple[int, int, tuple[int, ...]] = (0, 0, (-1,) * CELLS)
"""The last ``GameState.numbers()``: (revealed, all mines, numbers). Keyed by value, so it is
only a cache; one for the module rather than a slot per state, which would keep a 64-tuple
alive in every match the server holds."""


class Picker(Protocol):
    """A random source that picks uniformly among ``n`` options (R2); e.g. ``FairStream``."""

    def pick(self, n: int) -> int: ...


_VIEW_FIELDS = (
    "seat", "variant", "phase", "to_move", "turn", "revealed", "revealed_by_me", "numbers",
    "my_mines", "my_markers", "opponent_markers", "quota_left", "outcome", "deadline",
)
if tuple(f.name for f in fields(SeatView)) != _VIEW_FIELDS or hasattr(SeatView, "__post_init__"):
    raise RuntimeError("SeatView changed: update _VIEW_FIELDS and GameState.view")  # pragma: no cover
_new_view: Callable[[type[SeatView]], SeatView] = object.__new__
# The slot setters of SeatView. GameState.view fills a new SeatView through them: the frozen
# dataclass __init__ goes through object.__setattr__ once per field and costs twice as much
# (measured in benchmarks/bench_views.py), and the server builds two views per action. The
# check above keeps this in step with the dataclass (same fields, same order, no __post_init__).
_SET: tuple[Callable[[SeatView, Any], None], ...] = tuple(getattr(SeatView, n).__set__ for n in _VIEW_FIELDS)
(
    _set_seat, _set_variant, _set_phase, _set_to_move, _set_turn, _set_revealed, _set_revealed_by_me,
    _set_numbers, _set_my_mines, _set_my_markers, _set_opponent_markers, _set_quota_left,
    _set_outcome, _set_deadline,
) = _SET


# Every success answer that needs no MatchEnded, built once: apply returns these shared tuples
# (indexed [seat][cell] or [seat]) instead of building events per call (docs/ENGINE.md).
_EXPLORED = tuple(tuple((e,) for e in row) for row in ev.EXPLORED)
_PLANTED = tuple(tuple((e,) for e in row) for row in ev.PLANTED)
_FLAGGED = tuple(tuple((e,) for e in row) for row in ev.FLAGGED)
_UNFLAGGED = tuple(tuple((e,) for e in row) for row in ev.UNFLAGGED)
_NEXT_OPENING_STEP: tuple[tuple[Event, Event], tuple[Event, Event]] = (
    (ev.OPENING_STEP[Phase.OPEN_EXPLORE][1], ev.OPENING_STEP[Phase.OPEN_PLANT][1]),  # F1 steps 2, 4
    (ev.OPENING_STEP[Phase.OPEN_PLANT][0], ev.TURN_STARTED[0]),  # F1 step 3, F2 the first turn
)
"""After an opening explore / plant of ``seat``: ``_NEXT_OPENING_STEP[seat][0 or 1]``."""
_OPEN_EXPLORED = tuple(tuple((e, _NEXT_OPENING_STEP[s][0]) for e in ev.EXPLORED[s]) for s in ev.SEATS)
_OPEN_PLANTED = tuple(tuple((e, _NEXT_OPENING_STEP[s][1]) for e in ev.PLANTED[s]) for s in ev.SEATS)
_END_TURN = tuple((ev.TURN_ENDED[s], ev.TURN_STARTED[1 - s]) for s in ev.SEATS)
_TIMEOUT_TURN = tuple((ev.TIMED_OUT[s], ev.TURN_STARTED[1 - s]) for s in ev.SEATS)
_TIMED_OUT = tuple((ev.TIMED_OUT[s],) for s in ev.SEATS)
_RESIGNED = tuple((ev.RESIGNED[s],) for s in ev.SEATS)
_DISCONNECTED = tuple((ev.DISCONNECTED[s],) for s in ev.SEATS)
_VOIDED: Events = (ev.VOIDED,)


class GameState:
    """A whole match as bitboards: revealed, revealed-by-seat-0, each seat's mines and markers.

    Everything else (numbers, S1–S3, scores) is computed from these masks when asked.
    """

    __slots__ = (
        "_outcome",
        "ko_cell",
        "marker_used",
        "markers",
        "mines",
        "phase",
        "revealed",
        "revealed_by0",
        "to_move",
        "turn",
        "variant",
    )

    def __init__(self, variant: Variant | str = Variant.CPU) -> None:
        self.variant = Variant(variant)
        self.revealed: Mask = 0
        self.revealed_by0: Mask = 0
        self.mines: list[Mask] = [0, 0]
        self.markers: list[Mask] = [0, 0]
        self.phase = Phase.OPEN_EXPLORE
        self.to_move: int | None = 0
        self.turn = 0
        self.marker_used = False
        self._outcome: Outcome | None = None
        self.ko_cell: Cell | None = None

    # ----- copying and comparing --------------------------------------------------------
    def copy(self) -> GameState:
        other = GameState.__new__(GameState)
        for name in GameState.__slots__:
            setattr(other, name, getattr(self, name))
        other.mines = list(self.mines)
        other.markers = list(self.markers)
        return other

    def snapshot(self) -> tuple[object, ...]:
        """Every field as a tuple: two states are the same match position iff equal."""
        return (
            self.variant,
            self.revealed,
            self.revealed_by0,
            tuple(self.mines),
            tuple(self.markers),
            self.phase,
            self.to_move,
            self.turn,
            self.marker_used,
            self._outcome,
            self.ko_cell,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GameState) and self.snapshot() == other.snapshot()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        from mineduel.shared.rules.notation import to_ascii

        return f"<GameState {self.variant} {self.phase} to_move={self.to_move} turn={self.turn}>\n{to_ascii(self)}"

    # ----- derived facts (never stored) ---------------------------------------------------
    @property
    def over(self) -> bool:
        return self._outcome is not None

    def outcome(self) -> Outcome | None:
        """``None`` while the match goes on; the fixed result afterwards (C4, O9–O12)."""
        return self._outcome

    @property
    def any_mine(self) -> Mask:
        return self.mines[0] | self.mines[1]

    @property
    def any_marker(self) -> Mask:
        return self.markers[0] | self.markers[1]

    def number(self, cell: Cell) -> int:
        """B4: neighbouring cells holding at least one mine (an overlap counts once)."""
        return (NEIGHBOURS[cell] & (self.mines[0] | self.mines[1])).bit_count()

    def numbers(self) -> tuple[int, ...]:
        """Numbers of revealed cells, ``-1`` for the others (B4: only revealed cells show them).

        The last result (of any state) is kept with the masks it came from, so the server's
        two views after an action share one computation (see :data:`_numbers_memo`).
        """
        global _numbers_memo
        mines = self.mines[0] | self.mines[1]
        revealed = self.revealed
        memo = _numbers_memo
        if memo[0] == revealed and memo[1] == mines:
            return memo[2]
        out = [-1] * CELLS
        rest = revealed
        base = 0
        while rest:  # a byte (a row) at a time: no generator step per revealed cell
            for i in BYTE_BITS[rest & 0xFF]:
                c = base + i
                out[c] = (NEIGHBOURS[c] & mines).bit_count()
            rest >>= 8
            base += 8
        numbers = tuple(out)
        _numbers_memo = (revealed, mines, numbers)
        return numbers

    def revealer(self, cell: Cell) -> int | None:
        """B3: who revealed ``cell`` first, or ``None`` if it is closed."""
        if not self.revealed >> cell & 1:
            return None
        return 0 if self.revealed_by0 >> cell & 1 else 1

    def explorable(self, seat: int) -> Mask:
        """S1: unrevealed, no marker of anyone, no mine of ``seat``."""
        return FULL & ~(self.revealed | self.markers[0] | self.markers[1] | self.mines[seat])

    def recoverable(self, seat: int) -> Mask:
        """S2: unrevealed cells holding ``seat``'s own marker and no mine of ``seat``."""
        return self.markers[seat] & ~self.revealed & ~self.mines[seat]

    plantable = explorable
    """S3: the same cells as S1; the opponent's mines do not matter (V5)."""

    def scores(self) -> tuple[int, int]:
        """O10: correct − wrong among each seat's markers on the board (overlap counts correct)."""
        out = []
        for seat in (0, 1):
            mine = self.markers[seat]
            correct = (mine & self.mines[1 - seat]).bit_count()
            out.append(correct - (mine.bit_count() - correct))
        return out[0], out[1]

    @property
    def quota_left(self) -> int:
        """A3: new markers the seat to move may still place this turn (0 or 1)."""
        return 1 if self.phase in NORMAL_PHASES and not self.marker_used else 0

    # ----- the single entry point for change ---------------------------------------------
    def apply(self, action: Action) -> Refusal | Events:
        """Validate and perform ``action``: its events (never empty), or a refusal and nothing
        changes (F4, A1–A6, O4–O12). The events are shared instances (see ``events``)."""
        if self._outcome is not None:
            return Refusal.GAME_OVER
        kind = action.type
        seat = action.seat
        result: Refusal | Events
        if kind in ONLINE_ONLY_ACTIONS:
            if self.variant is not Variant.ONLINE:
                return Refusal.NOT_ONLINE
            result = self._apply_online_only(seat, kind)
            if self._outcome is None or type(result) is not tuple:
                return result
        else:
            if seat != self.to_move:
                return Refusal.NOT_YOUR_TURN
            cell = action.cell
            phase = self.phase
            if kind is ActionType.EXPLORE:
                result = self._explore(seat, cell, phase)  # type: ignore[arg-type]
            elif kind is ActionType.PLANT:
                result = self._plant(seat, cell, phase)  # type: ignore[arg-type]
            elif kind is ActionType.FLAG:
                result = self._flag(seat, cell, phase)  # type: ignore[arg-type]
            elif kind is ActionType.UNFLAG:
                result = self._unflag(seat, cell, phase)  # type: ignore[arg-type]
            else:  # END_TURN
                if phase is not Phase.END_WAIT:
                    return Refusal.WRONG_PHASE
                self._start_turn(1 - seat)
                result = _END_TURN[seat]
            if self._outcome is None:  # the common case, a refusal included: nothing more to add
                if self.variant is not Variant.ONLINE or type(result) is not tuple:
                    return result
                self._check_cannot_continue()  # O9
                if self._outcome is None:
                    return result
            elif type(result) is not tuple:  # pragma: no cover - a refusal never ends the match
                return result
        return (*result, MatchEnded(self._outcome))  # once per match: built, not shared

    def play(self, action: Action) -> Events:
        """``apply`` for trusted callers (tests, tools): a refusal raises :class:`IllegalAction`."""
        result = self.apply(action)
        if isinstance(result, Refusal):
            raise IllegalAction(result, action)
        return result

    # ----- the actions --------------------------------------------------------------------
    def _cell_refusal(self, seat: int, b: Mask) -> Refusal | None:
        if self.revealed & b:
            return Refusal.REVEALED
        if (self.markers[0] | self.markers[1]) & b:
            return Refusal.MARKED
        if self.mines[seat] & b:
            return Refusal.OWN_MINE
        return None

    def _explore(self, seat: int, cell: Cell, phase: Phase) -> Refusal | Events:
        if phase is not Phase.EXPLORE and phase is not Phase.OPEN_EXPLORE:
            return Refusal.WRONG_PHASE
        b = 1 << cell
        refusal = self._cell_refusal(seat, b)
        if refusal is not None:
            return refusal
        if self.mines[1 - seat] & b:  # A1/O8: the opponent's mine alone (own-mine was refused)
            self.ko_cell = cell
            self._finish(Outcome(1 - seat, Reason.KO))
            return _EXPLORED[seat][cell]
        self.revealed |= b
        if seat == 0:
            self.revealed_by0 |= b
        if phase is Phase.OPEN_EXPLORE:
            if seat == 0:
                self.to_move = 1  # F1 step 2
            else:
                self.phase = Phase.OPEN_PLANT  # F1 step 3
                self.to_move = 0
            return _OPEN_EXPLORED[seat][cell]
        self.phase = Phase.PLANT
        if self.variant is Variant.CPU:
            self._plant_check(seat)
        return _EXPLORED[seat][cell]

    def _plant(self, seat: int, cell: Cell, phase: Phase) -> Refusal | Events:
        if phase is not Phase.PLANT and phase is not Phase.OPEN_PLANT:
            return Refusal.WRONG_PHASE
        b = 1 << cell
        refusal = self._cell_refusal(seat, b)
        if refusal is not None:
            return refusal
        self.mines[seat] |= b  # A2: an overlap is allowed and answered the same way (V5)
        if phase is Phase.OPEN_PLANT:
            if seat == 0:
                self.to_move = 1  # F1 step 4
            else:
                self._start_turn(0)  # F2: the first normal turn
            return _OPEN_PLANTED[seat][cell]
        self.phase = Phase.END_WAIT
        return _PLANTED[seat][cell]

    def _flag(self, seat: int, cell: Cell, phase: Phase) -> Refusal | Events:
        if phase not in NORMAL_PHASES:
            return Refusal.WRONG_PHASE  # F1: no markers in the opening
        b = 1 << cell
        if self.revealed & b:
            return Refusal.REVEALED
        if (self.markers[0] | self.markers[1]) & b:
            return Refusal.MARKED
        if self.marker_used:
            return Refusal.QUOTA_USED  # A3: one new marker per turn
        self.markers[seat] |= b
        self.marker_used = True
        self._after_marker(seat, phase)
        return _FLAGGED[seat][cell]

    def _unflag(self, seat: int, cell: Cell, phase: Phase) -> Refusal | Events:
        if phase not in NORMAL_PHASES:
            return Refusal.WRONG_PHASE
        b = 1 << cell
        if not (self.markers[0] | self.markers[1]) & b:
            return Refusal.NO_MARKER
        if not self.markers[seat] & b:
            return Refusal.NOT_YOUR_MARKER  # A4
        self.markers[seat] &= ~b  # A3: the quota is not given back
        self._after_marker(seat, phase)
        return _UNFLAGGED[seat][cell]

    def _after_marker(self, seat: int, phase: Phase) -> None:
        if self.variant is Variant.CPU:
            if phase is Phase.EXPLORE:
                self._progress_check(seat)  # C1
            elif phase is Phase.PLANT:
                self._plant_check(seat)  # C2 (C2b: nothing in END_WAIT)

    def _apply_online_only(self, seat: int, kind: ActionType) -> Refusal | Events:
        if kind is ActionType.RESIGN:
            self._finish(Outcome(1 - seat, Reason.RESIGN))  # O11: any seat, any moment
            return _RESIGNED[seat]
        if kind is ActionType.DISCONNECT:
            self._finish(Outcome(1 - seat, Reason.DISCONNECT))  # O12
            return _DISCONNECTED[seat]
        if kind is ActionType.VOID:
            self._finish(Outcome(None, Reason.VOID))  # O12: both graces over
            return _VOIDED
        # TIMEOUT
        if seat != self.to_move:
            return Refusal.NOT_YOUR_TURN  # only the seat to move has a deadline
        result: Events
        if self.phase in NORMAL_PHASES:
            self._start_turn(1 - seat)  # O5: skip what is missing, pass the turn
            result = _TIMEOUT_TURN[seat]
        else:
            result = _TIMED_OUT[seat]  # O4: in the opening nothing changes; the auto-move follows
        self._check_cannot_continue()
        return result

    # ----- turn flow and checks -----------------------------------------------------------
    def _start_turn(self, seat: int) -> None:
        """F2/F3: a normal turn starts; the turn number goes up before C1 runs."""
        self.turn += 1
        self.to_move = seat
        self.phase = Phase.EXPLORE
        self.marker_used = False
        if self.variant is Variant.CPU:
            self._progress_check(seat)

    def _progress_check(self, seat: int) -> None:
        """C1: all flagged → draw; something explorable → go on; recoverable → hold; else draw."""
        unrevealed = FULL & ~self.revealed
        markers = self.markers[0] | self.markers[1]
        if not unrevealed & ~markers:
            self._finish(Outcome(None, Reason.ALL_FLAGGED))
        elif unrevealed & ~markers & ~self.mines[seat]:
            return
        elif self.markers[seat] & unrevealed & ~self.mines[seat]:
            return  # C1.3: keep turn and phase so the seat can remove its marker
        else:
            self._finish(Outcome(None, Reason.NO_EXPLORABLE))

    def _plant_check(self, seat: int) -> None:
        """C2: plantable → go on; recoverable → hold the phase; otherwise draw."""
        unrevealed = FULL & ~self.revealed
        if unrevealed & ~(self.markers[0] | self.markers[1]) & ~self.mines[seat]:
            return
        if self.markers[seat] & unrevealed & ~self.mines[seat]:
            return
        self._finish(Outcome(None, Reason.NO_PLANTABLE))

    def _check_cannot_continue(self) -> None:
        """O9: no unrevealed, unmarked cell without a mine → the match ends by score (O10)."""
        if self._outcome is not None:
            return
        safe = FULL & ~(
            self.revealed | self.markers[0] | self.markers[1] | self.mines[0] | self.mines[1]
        )
        if not safe:
            s0, s1 = self.scores()
            winner = None if s0 == s1 else (0 if s0 > s1 else 1)
            self._finish(Outcome(winner, Reason.SCORE, (s0, s1)))

    def _finish(self, outcome: Outcome) -> None:
        """C4/E1: the result is fixed once; turn stays as it was (F3)."""
        self._outcome = outcome
        self.phase = Phase.OVER
        self.to_move = None

    # ----- what the seats and tools may see -----------------------------------------------
    def view(self, seat: int, deadline: float | None = None) -> SeatView:
        """V2: the seat's own view; never the opponent's mines or whether a cell overlaps."""
        revealed = self.revealed
        to_move = self.to_move
        view = _new_view(SeatView)  # filled slot by slot: see _SET (the same object as SeatView(...))
        _set_seat(view, seat)
        _set_variant(view, self.variant)
        _set_phase(view, self.phase)
        _set_to_move(view, to_move)
        _set_turn(view, self.turn)
        _set_revealed(view, revealed)
        _set_revealed_by_me(view, self.revealed_by0 if seat == 0 else revealed & ~self.revealed_by0)
        _set_numbers(view, self.numbers())
        _set_my_mines(view, self.mines[seat])
        _set_my_markers(view, self.markers[seat])
        _set_opponent_markers(view, self.markers[1 - seat])
        _set_quota_left(view, self.quota_left if to_move == seat else 0)
        _set_outcome(view, self._outcome)
        _set_deadline(view, deadline)
        return view

    def reveal(self) -> FinalReveal:
        """O13: all mines with owners, overlaps, each marker right or wrong — only after the end."""
        if self._outcome is None:
            raise ValueError("the full reveal exists only after the end (V4, O13)")
        m0, m1 = self.mines
        k0, k1 = self.markers
        return FinalReveal(
            mines=(m0, m1),
            overlaps=m0 & m1,
            markers=(k0, k1),
            correct_markers=(k0 & m1, k1 & m0),
            wrong_markers=(k0 & ~m1, k1 & ~m0),
            ko_cell=self.ko_cell,
            outcome=self._outcome,
        )

    # ----- legal moves and automatic moves ------------------------------------------------
    def legal_actions(self) -> Iterator[Action]:
        """Every action the seat to move may take now, lazily (resign etc. not included)."""
        seat = self.to_move
        if seat is None:
            return
        phase = self.phase
        if phase is Phase.EXPLORE or phase is Phase.OPEN_EXPLORE:
            for c in cells(self.explorable(seat)):
                yield Action(seat, ActionType.EXPLORE, c)
        elif phase is Phase.PLANT or phase is Phase.OPEN_PLANT:
            for c in cells(self.plantable(seat)):
                yield Action(seat, ActionType.PLANT, c)
        if phase in NORMAL_PHASES:
            if not self.marker_used:
                for c in cells(FULL & ~self.revealed & ~self.any_marker):
                    yield Action(seat, ActionType.FLAG, c)
            for c in cells(self.markers[seat]):
                yield Action(seat, ActionType.UNFLAG, c)
            if phase is Phase.END_WAIT:
                yield Action(seat, ActionType.END_TURN)

    def opening_auto_action(self, rng: Picker) -> Action:
        """O4: the action the server takes when an opening deadline expires.

        A uniformly drawn valid cell (R2, canonical ascending order), under the same
        conditions as a manual action; an overlap is allowed for plants.
        """
        seat = self.to_move
        if seat is None or self.phase not in (Phase.OPEN_EXPLORE, Phase.OPEN_PLANT):
            raise ValueError("auto-moves exist only in the opening (O4)")
        options = self.explorable(seat)  # the same set as plantable (S1 = S3)
        n = options.bit_count()
        kind = ActionType.EXPLORE if self.phase is Phase.OPEN_EXPLORE else ActionType.PLANT
        return Action(seat, kind, nth_cell(options, rng.pick(n)))


class IllegalAction(ValueError):
    """A refused action where the caller promised a legal one."""

    def __init__(self, refusal: Refusal, action: Action) -> None:
        super().__init__(f"{action} refused: {refusal}")
        self.refusal = refusal
        self.action = action
