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
* read the :class:`Timing` (E1) and, after the end, the record text (RECORD.md).

Events are *view-level*: the cell of an opponent's plant is never in them (V2, V4).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, runtime_checkable

from mineduel.shared.rules.engine import Action, ActionType, Outcome, Refusal
from mineduel.shared.rules.views import SeatView


class OpponentKind(StrEnum):
    """Who sits opposite: the CPU, or another person (labels only — never rules)."""

    CPU = "cpu"
    HUMAN = "human"


@dataclass(frozen=True, slots=True)
class Applied:
    """``seat`` did ``kind`` (on ``cell``; ``None`` for end turn and for the opponent's plants)."""

    seat: int
    kind: ActionType
    cell: int | None


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


MatchEvent = Applied | Refused | Ended


@dataclass(frozen=True, slots=True)
class Timing:
    """E1: when the match started (wall clock, seconds since the epoch) and how long it has run.

    ``elapsed`` counts real time, pauses included, and stops at the end; ``turn`` is F3's number.
    """

    started_at: float
    elapsed: float
    turn: int
    finished: bool


@runtime_checkable
class MatchController(Protocol):
    """What a screen may ask of a match (see the module docstring)."""

    @property
    def seat(self) -> int:
        """The local player's seat (0 moves first)."""
        ...

    @property
    def opponent(self) -> OpponentKind: ...

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
