"""The one interface between the screens and a match, whoever runs it (STYLE.md).

Scenes never know whether the match behind them is local (the CPU, :mod:`cpu_match`) or remote
(the online server, later). They only:

* read :meth:`MatchController.view` — the local seat's :class:`SeatView` (V2), nothing more;
* :meth:`~MatchController.submit` an engine :class:`Action` for the local seat — the answer comes
  back later as a :class:`Refused` or :class:`Applied` event (a remote server answers late);
* :meth:`~MatchController.poll` the events that happened since the last poll, in order;
* call :meth:`~MatchController.update` once per frame (a CPU step may be due, a message may have
  arrived) and ask :meth:`~MatchController.next_wakeup` when it next needs a frame;
* tell it when the player cannot follow (:meth:`~MatchController.set_paused`, AI6) — the CPU
  match pauses its countdown, an online match ignores it (U7: the server's deadlines run on);
* read the :class:`Timing` (E1) and, after the end, the record text (RECORD.md);
* read its :class:`Capabilities`: what this match offers beyond the common calls (ONLINE's
  deadline, the opponent's presence, the reveal at the end, rematch, verify, resign). Each is
  ``None`` when the match has none of it, so the screen shows a panel exactly when its source is
  there — it never asks what kind of controller it holds.

Events are *view-level*: the cell of an opponent's plant is never in them (V2, V4).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, runtime_checkable

from mineduel.client.witness import WitnessJson
from mineduel.shared.rules.bitboard import Cell, Mask
from mineduel.shared.rules.engine import Action, ActionType, Outcome, Refusal
from mineduel.shared.rules.views import FinalReveal, SeatView
from mineduel.shared.wire.messages import RecordJson


class OpponentKind(StrEnum):
    """Who sits opposite: the CPU, or another person (labels only — never rules)."""

    CPU = "cpu"
    HUMAN = "human"


@dataclass(frozen=True, slots=True)
class Applied:
    """``seat`` did ``kind`` (on ``cell``; ``None`` for end turn and for the opponent's plants).

    ``auto``: the server acted for a seat whose opening step ran out (O4).
    """

    seat: int
    kind: ActionType
    cell: int | None
    auto: bool = False


@dataclass(frozen=True, slots=True)
class Refused:
    """The local seat's ``action`` was refused with ``refusal``; nothing changed."""

    action: Action
    refusal: Refusal


@dataclass(frozen=True, slots=True)
class Ended:
    """The match ended (C4/O9–O12); ``turns`` and ``elapsed`` are fixed from now on (E1)."""

    outcome: Outcome
    turns: int
    elapsed: float
    ko_cell: int | None = None


@dataclass(frozen=True, slots=True)
class Notice:
    """Something to tell the player that is not a rule refusal (a server error code): a catalog key."""

    key: str
    params: tuple[tuple[str, str], ...] = ()


MatchEvent = Applied | Refused | Ended | Notice


@dataclass(frozen=True, slots=True)
class Timing:
    """E1: when the match started (wall clock, seconds since the epoch) and how long it has run.

    ``elapsed`` counts real time, pauses included, and stops at the end; ``turn`` is F3's number.
    """

    started_at: float
    elapsed: float
    turn: int
    finished: bool


# ----- capabilities: what a match may offer beyond the common calls ----------------------------


class DeadlineSource(Protocol):
    """U6: the seconds left on the current deadline (the server's; display only, O6)."""

    def seconds_left(self) -> float | None: ...


@dataclass(frozen=True, slots=True)
class PresenceInfo:
    """O12 as the players' cards and the banner show it."""

    connected: bool  # this client's own connection is open
    reconnecting: bool  # ... and, if not, it is trying again by itself
    retry_in: float | None  # seconds to the next attempt
    opponent_away: bool
    opponent_seconds: float | None  # the opponent's grace left
    opponent_gone: bool  # its grace ran out (it may watch only)
    spectators: int = 0  # issue 19: how many watch the room (the players see the count, PROTOCOL.md §16)
    moving: bool = False  # issue 21: reconnecting to another node of the cluster (a calm note, not an error)


class PresenceSource(Protocol):
    def presence(self) -> PresenceInfo: ...


@dataclass(frozen=True, slots=True)
class BoardReveal:
    """O13, seat-relative: every mine with its owner, overlaps, and each marker right or wrong."""

    my_mines: Mask
    opponent_mines: Mask
    overlaps: Mask
    my_markers: Mask
    opponent_markers: Mask
    right: Mask
    wrong: Mask
    ko_cell: Cell | None


def board_reveal_of(reveal: FinalReveal, me: int) -> BoardReveal:
    """The engine's O13 reveal as ``me`` sees it: the same masks the online ``match_end`` reveal
    becomes (``online_match.board_reveal`` of ``wire.board.reveal_of``; a test holds them equal)."""
    op = 1 - me
    mine_me, mine_op = reveal.mines[me], reveal.mines[op]
    marker_me = reveal.markers[me]
    marker_op = reveal.markers[op] & ~marker_me  # a cell shows its own seat's marker first
    right = (marker_me & reveal.correct_markers[me]) | (marker_op & reveal.correct_markers[op])
    return BoardReveal(
        my_mines=mine_me,
        opponent_mines=mine_op,
        overlaps=mine_me & mine_op,
        my_markers=marker_me,
        opponent_markers=marker_op,
        right=right,
        wrong=(marker_me | marker_op) & ~right,
        ko_cell=reveal.ko_cell,
    )


class RevealSource(Protocol):
    def reveal(self) -> BoardReveal | None:
        """``None`` before the end."""
        ...


@dataclass(frozen=True, slots=True)
class RematchInfo:
    """O14: who asked for a rematch, and whether one can happen (both seats connected)."""

    me: bool
    opponent: bool
    possible: bool


class RematchSource(Protocol):
    def rematch_info(self) -> RematchInfo: ...

    def request_rematch(self) -> None: ...


class VerifySource(Protocol):
    def record(self) -> RecordJson | None:
        """The finished match's record as the server sent it (checked like ``mine-duel verify``)."""
        ...

    def witness(self) -> WitnessJson | None:
        """What this client saw of the match live (``mine-duel-witness/1``), ``None`` when none was kept."""
        ...


@dataclass(frozen=True, slots=True)
class SeatRating:
    """A seat's rating as a card shows it (issue 20): ``1523`` or, while provisional, ``1500?``."""

    value: float
    provisional: bool


@dataclass(frozen=True, slots=True)
class RatingChange:
    """What a rated match did to my rating (``match_end.rating``; a void match: change 0)."""

    before: float
    after: float
    change: float
    provisional: bool
    unrated: str | None = None  # why nothing changed: "void", "pair_limit" (PROTOCOL.md §17)


@dataclass(frozen=True, slots=True)
class MatchRatings:
    """A rated match's ratings: both seats' before it (``None``: the server did not say) and mine after."""

    me: SeatRating | None
    opponent: SeatRating | None
    change: RatingChange | None


class RatingSource(Protocol):
    def ratings(self) -> MatchRatings: ...


@dataclass(frozen=True, slots=True)
class Capabilities:
    """Optional extras of a match; ``None``: not offered (the screen shows no panel for it)."""

    deadline: DeadlineSource | None = None
    presence: PresenceSource | None = None
    reveal: RevealSource | None = None
    # E2: ONLINE shows the O13 reveal at the end; the CPU keeps the human's own view and shows the
    # reveal only when the player asks for it (*Show everything*).
    reveal_on_request: bool = False
    rematch: RematchSource | None = None
    verify: VerifySource | None = None
    resign: Callable[[], None] | None = None  # O11
    rating: RatingSource | None = None  # a rated match (issue 20): ratings on the cards and the result


NO_CAPABILITIES = Capabilities()


@runtime_checkable
class MatchController(Protocol):
    """What a screen may ask of a match (see the module docstring)."""

    @property
    def seat(self) -> int:
        """The local player's seat (0 moves first)."""
        ...

    @property
    def opponent(self) -> OpponentKind: ...

    @property
    def capabilities(self) -> Capabilities:
        """What this match offers beyond the calls below (see :class:`Capabilities`)."""
        ...

    def view(self) -> SeatView:
        """The local seat's current view (V2)."""
        ...

    def submit(self, action: Action) -> None:
        """Ask for ``action``; its answer arrives as an event from :meth:`poll`."""
        ...

    def poll(self) -> list[MatchEvent]:
        """Events since the last poll, oldest first."""
        ...

    def update(self) -> None:
        """Advance time-driven work (a due CPU step, received messages)."""
        ...

    def next_wakeup(self) -> float | None:
        """The clock time the match next needs :meth:`update`, or ``None`` (waiting on the player)."""
        ...

    def set_paused(self, reason: str, paused: bool) -> None:
        """The player cannot follow for ``reason`` (popup, minimised, hidden, unfocused) — AI6."""
        ...

    @property
    def opponent_to_move(self) -> bool:
        """The match is running and waiting for the opponent."""
        ...

    @property
    def outcome(self) -> Outcome | None: ...

    def timing(self) -> Timing: ...

    def record_text(self) -> str | None:
        """The finished match's record (RECORD.md JSON), ``None`` before the end."""
        ...

    @property
    def record_name(self) -> str:
        """A file name stem for the record, e.g. ``cpu-20250101-120000``."""
        ...

    def close(self) -> None:
        """Stop everything the match runs (timers, connections)."""
        ...
