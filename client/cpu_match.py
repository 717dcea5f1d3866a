"""The CPU variant behind the :class:`~mineduel.client.controller.MatchController` interface.

The human is seat 0 and moves first, the CPU is seat 1 (V1). The CPU AI sees only
``state.view(1)`` (V3) and its random source is seeded explicitly (R4): the seed goes into the
saved record's ``players`` entry, so any match can be replayed exactly. CPU steps are paced by
a :class:`StepPacer` (AI6) on the injected clock.

After the end the engine's O13 reveal (``GameState.reveal``) is offered as the online one is
(``Capabilities.reveal``), marked *on request*: the screen keeps the human's view (E2) until the
player asks for *Show everything*.

What the screen hears of a step is the engine's own first event of ``GameState.apply``, as the
human may see it (``seen_by``: the CPU's plant has no cell, V2), and its ``MatchEnded`` — no rule
is worked out again here by comparing states.

Every level is a :class:`~mineduel.shared.ai.levels.CpuPlayer` (easy / normal / hard exactly as
AI3 specifies, and the expert of issue 18, which remembers its own earlier views). The human's own
memory of its views (``shared/ai/memory.py``) is kept too, one update per action — never per
frame — for the optional hint (issue 18 item 4): :meth:`CpuMatch.hint` gives the cells with the
lowest chance of a CPU mine from the human's view and memory only (V3), and each use goes into
the record's ``hints`` (RECORD.md).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mineduel.client.controller import Applied, BoardReveal, Capabilities, Refused, board_reveal_of
from mineduel.client.local_match import LOCAL_SEAT, OTHER_SEAT, LocalMatch
from mineduel.shared.ai import cpu as ai
from mineduel.shared.ai.analysis import hint as safest_cells
from mineduel.shared.ai.expert import seat_probabilities
from mineduel.shared.ai.levels import CpuPlayer, Level, specified
from mineduel.shared.ai.memory import Memory, remember
from mineduel.shared.fairness.record import dumps
from mineduel.shared.rules import events as ev
from mineduel.shared.rules.bitboard import COLS, Mask, cells
from mineduel.shared.rules.engine import Action, ActionType, GameState, Phase, Refusal, Variant
from mineduel.shared.rules.views import SeatView

HUMAN = LOCAL_SEAT
CPU = OTHER_SEAT

AiStep = Callable[[SeatView, ai.Difficulty, random.Random, int | None], ai.Decision]
"""A replacement for a specified level's AI (tests wrap ``ai.next_step`` to watch what the CPU sees)."""


@dataclass(frozen=True, slots=True)
class Hint:
    """One answer to *Hint*: the safest explorable cells now and their chance of a CPU mine (0–1)."""

    cells: Mask
    probability: float


def new_seed() -> int:
    """A fresh 63-bit seed for a match nobody asked to reproduce."""
    return random.SystemRandom().getrandbits(63)


class CpuMatch(LocalMatch):
    """A match against the CPU: engine state, the AI, its pacing, events and the record."""

    def __init__(
        self,
        *,
        difficulty: Level | str = Level.NORMAL,
        seed: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        step: AiStep | None = None,
        client_version: str = "",
        state: GameState | None = None,
    ) -> None:
        """``state``: start from a position instead of an empty board (tests, screenshots);
        ``step``: another AI for a specified level (the expert has no such replacement)."""
        self.difficulty = Level(difficulty)
        if step is not None and specified(self.difficulty) is None:
            raise ValueError("a replacement AI step is for the specified levels only")
        self.seed = new_seed() if seed is None else seed
        self._rng = random.Random(self.seed)
        self._step = step
        self._player = CpuPlayer(self.difficulty)
        self._client_version = client_version
        super().__init__(GameState(Variant.CPU) if state is None else state, clock=clock, wall_clock=wall_clock)
        if self.state.variant is not Variant.CPU:
            raise ValueError("a CPU match needs a CPU-variant state")
        if self.state.to_move == CPU:
            self.pacer.arm()
        self._actions: list[Action] = []
        self._last_human_safe: int | None = None  # AI4's "most recently explored safely"
        self._view_cache: SeatView | None = None
        self._capabilities = Capabilities(reveal=self, reveal_on_request=True)
        self._reveal: BoardReveal | None = None
        view = self.view()  # the human's memory of its own views (none needed for a finished position)
        self._memory: Memory | None = remember(None, view) if view.outcome is None else None
        self._hints: list[dict[str, Any]] = []  # RECORD.md "hints", one entry per position asked about
        self._last_hint: tuple[int, Hint] | None = None

    # ----- MatchController (the rest is LocalMatch's) -------------------------------------------
    @property
    def capabilities(self) -> Capabilities:
        """Of ONLINE's extras only the reveal after the end, on request (E2: *Show everything*);
        no deadline, presence, rematch, verify or resign."""
        return self._capabilities

    def reveal(self) -> BoardReveal | None:
        """O13's reveal from the engine's full state, as the human sees it — ``None`` before the end
        (V3: nothing of the CPU's shows while the match runs)."""
        if self.state.outcome() is None:
            return None
        if self._reveal is None:  # the final board never changes: made once, drawn every frame
            self._reveal = board_reveal_of(self.state.reveal(), HUMAN)
        return self._reveal

    def view(self) -> SeatView:
        if self._view_cache is None:
            self._view_cache = self.state.view(HUMAN)
        return self._view_cache

    def update(self) -> None:
        """Take the CPU's step when its 650 ms countdown has run out (AI6)."""
        if self.state.to_move != CPU:
            return
        if not self.pacer.armed:
            self.pacer.arm()
        if not self.pacer.due():
            return
        view = self.state.view(CPU)
        difficulty = specified(self.difficulty)
        if self._step is not None and difficulty is not None:
            decision = self._step(view, difficulty, self._rng, self._last_human_safe)
        else:
            decision = self._player.step(view, self._rng, self._last_human_safe)
        self._apply(decision.action)

    # ----- the hint (issue 18 item 4; the screen offers it only when the settings say so) ----------
    def hint_allowed(self) -> bool:
        """A hint is about an explore: only in the human's explore phase, with a cell to explore."""
        view = self.view()
        return (view.outcome is None and view.to_move == HUMAN and view.phase in (Phase.EXPLORE, Phase.OPEN_EXPLORE)
                and view.explorable != 0)

    def hint(self) -> Hint | None:
        """The explorable cells with the lowest chance of a CPU mine, from the human's view and its
        memory only (V3: nothing of the CPU's mines); ``None`` when :meth:`hint_allowed` says no.

        Counted once per position in the record (asking again before the next action shows the
        same cells and counts nothing more). Costs one or two probability counts, on request only."""
        if not self.hint_allowed():
            return None
        index = len(self._actions)
        if self._last_hint is not None and self._last_hint[0] == index:
            return self._last_hint[1]
        view = self.view()
        assert self._memory is not None  # kept for every running position
        mask = safest_cells(view, self._memory)
        probability = seat_probabilities(view, self._memory).p((mask & -mask).bit_length() - 1)
        found = Hint(mask, probability)
        self._last_hint = (index, found)
        self._hints.append({"seat": HUMAN, "before": index,
                            "cells": [list(divmod(cell, COLS)) for cell in cells(mask)]})
        return found

    @property
    def hints_used(self) -> int:
        """How many times the player asked for a hint (positions, see :meth:`hint`)."""
        return len(self._hints)

    def record_text(self) -> str | None:
        if self._elapsed is None or self._ended_at is None:
            return None
        outcome = self.state.outcome()
        assert outcome is not None
        extra: dict[str, Any] = {"hints": self._hints} if self._hints else {}
        return dumps(
            Variant.CPU,
            self._actions,
            times={
                "started": _iso(self._started_at),
                "ended": _iso(self._ended_at),
                "elapsed_seconds": round(self._elapsed, 3),
                "turns": self.state.turn,
            },
            players=[
                {"seat": HUMAN, "kind": "human"},
                {"seat": CPU, "kind": "cpu", "difficulty": str(self.difficulty), "seed": self.seed},
            ],
            result={
                "winner": outcome.winner,
                "reason": str(outcome.reason),
            },
            client={"name": "mine-duel", "version": self._client_version},
            **extra,
        )

    @property
    def record_name(self) -> str:
        stamp = datetime.fromtimestamp(self._started_at, UTC).strftime("%Y%m%d-%H%M%S")
        return f"cpu-{stamp}-{self.seed % 100000:05d}"

    # ----- the one place that changes the match --------------------------------------------
    def _apply(self, action: Action) -> None:
        state = self.state
        result = state.apply(action)
        if isinstance(result, Refusal):
            if action.seat == CPU:  # the AI promised a legal step: a bug, not a player error
                raise RuntimeError(f"the CPU AI chose a refused step {action}: {result}")
            self._events.append(Refused(action, result))
            return
        self._view_cache = None
        self._actions.append(action)
        if state.outcome() is None:  # once per action (shared/ai/memory.py); after the end nothing is hinted
            self._memory = remember(self._memory, self.view())
        ended = result[-1] if type(result[-1]) is ev.MatchEnded else None
        if action.type is ActionType.EXPLORE and action.seat == HUMAN and ended is None:
            self._last_human_safe = action.cell
        self._events.append(_applied(ev.seen_by(result[0], HUMAN), action.type))
        if ended is not None:
            self._finish(ended.outcome)
        elif state.to_move == CPU:
            self.pacer.arm()  # AI6: the next CPU step 650 ms after this action
        else:
            self.pacer.cancel()


def _applied(event: ev.Event, kind: ActionType) -> Applied:
    """The screen's account of an action's own event (already as the human may see it)."""
    match event:
        case ev.Explored(seat, cell) | ev.Flagged(seat, cell) | ev.Unflagged(seat, cell):
            return Applied(seat, kind, cell)
        case ev.Planted(seat, hidden_or_cell):
            return Applied(seat, kind, hidden_or_cell)
        case ev.TurnEnded(seat):
            return Applied(seat, kind, None)
    raise ValueError(f"not the event of a CPU-match action: {event!r}")


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
