"""Every CPU level behind one name: the three specified ones (AI1–AI5) and ``expert`` (issue 18).

:class:`~mineduel.shared.ai.cpu.Difficulty` stays the specified three (RULES.md AI3, and the tests
that pin them); :class:`Level` adds ``expert``, which needs the seat's memory of its earlier views
and so a per-match :class:`CpuPlayer`. The simulator, the balance report and (later) the client's
difficulty popup take a :class:`Level`.
"""

from __future__ import annotations

import random
from enum import StrEnum
from typing import Final

from mineduel.shared.ai.cpu import Decision, Difficulty, next_step
from mineduel.shared.ai.expert import expert_step
from mineduel.shared.ai.memory import Memory
from mineduel.shared.rules.views import SeatView

__all__ = ["LEVELS", "CpuPlayer", "Level", "specified"]


class Level(StrEnum):
    """A CPU level: the specified difficulties (AI3) and the expert."""

    EASY = "easy"
    NORMAL = "normal"
    HARD = "hard"
    EXPERT = "expert"


LEVELS: Final = tuple(Level)

_SPECIFIED: Final = {Level.EASY: Difficulty.EASY, Level.NORMAL: Difficulty.NORMAL, Level.HARD: Difficulty.HARD}


def specified(level: Level | str) -> Difficulty | None:
    """The AI3 difficulty of a specified level; ``None`` for the expert."""
    return _SPECIFIED.get(Level(level))


class CpuPlayer:
    """One CPU seat for one match: the level, plus the expert's memory of its own views.

    ``step`` must see every view the seat decides in, in order (the expert reads number changes
    between them); the specified levels keep nothing (AI1: no memory of past numbers).
    """

    __slots__ = ("difficulty", "level", "memory")

    def __init__(self, level: Level | str) -> None:
        self.level = Level(level)
        self.difficulty = specified(self.level)
        self.memory: Memory | None = None

    def step(self, view: SeatView, rng: random.Random, last_opponent_safe_cell: int | None) -> Decision:
        """The seat's next step (V3: from its view only)."""
        if self.difficulty is not None:
            return next_step(view, self.difficulty, rng, last_opponent_safe_cell)
        taken = expert_step(view, self.memory, rng)
        self.memory = taken.memory
        return taken.decision
