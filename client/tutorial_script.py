"""The interactive tutorial as data: one fixed position, the steps, and every scripted move.

Invariant: the tutorial never pretends. Every number the player sees comes from the real rules
engine (``shared/rules``) playing the moves below from :data:`START`; the tests replay the whole
script through ``GameState.apply`` and check that every move is legal and every number is the one
the coach text talks about. This module imports no pygame, so that check needs no window.

The match is a real CPU-variant match at turn 3 (the opening and one turn each are behind it):
the player (seat 0, blue) has two mines, the scripted opponent (seat 1, pink) two, and four cells
are open. Each step teaches one rule by having the player do it:

1. ``explore`` — open the ringed cell (A1); it shows 1.
2. ``numbers`` — that 1 is the player's own mine next to it (B4: numbers count every mine).
3. ``plant`` — plant beside the 1 (A2); it becomes 2.
4. ``flag`` — the pink 1 in the corner touches one closed cell only: flag that cell (A3).
5. ``end_turn`` — a flag blocks its cell for both players (A6), one new flag a turn; end the turn (A5).
6. ``watch`` — the opponent explores and plants where the player cannot see (V2).
7. ``explore_again`` — open a cell next to the opponent's new mine: it shows 1.
8. ``overlap`` — plant on that same cell (the coach says what is there): the 1 stays 1 (B4, V5).
9. ``overlap_seen`` — two mines on one cell count once; only the end shows it (O13).
10. ``end_again`` — end the turn;
11. ``watch_again`` — the opponent opens the player's mine (A1: KO);
12. ``ko`` — stepping on the other player's mine loses at once (C4).
13. ``reveal`` — the end reveal: every mine with its owner, the overlap, the flag judged.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum

from mineduel.shared.rules.bitboard import cell_of
from mineduel.shared.rules.engine import Action, ActionType, GameState, Phase
from mineduel.shared.rules.notation import from_ascii

PLAYER = 0
OPPONENT = 1

# The position at the tutorial's start (shared/rules/notation.py): turn 3, the player to explore.
START = """
.. .. .. .. .. .. x1 x1
.. .. .. .. .. .. B. o1
.. .. A. .. .. .. .. ..
.. .. .. .. .. .. .. ..
.. .. .. .. .. .. .. ..
.. .. .. .. .. .. .. ..
.. .. o1 .. .. .. .. ..
A. .. .. B. .. .. .. ..
"""
START_TURN = 3

OWN_MINE = cell_of(2, 2)  # the player's mine that the first number counts
FIRST = cell_of(3, 3)  # explored first: 1 (OWN_MINE)
PLANTED = cell_of(4, 4)  # the player's plant beside FIRST: FIRST becomes 2; later the opponent's KO
CORNER = cell_of(0, 7)  # the opponent's 1 whose only closed neighbour is PROVEN
PROVEN = cell_of(1, 6)  # holds the opponent's mine: the player flags it (right at the end)
OPPONENT_OPENS = cell_of(6, 1)  # the opponent's explore in its turn
OVERLAP = cell_of(5, 5)  # the opponent plants here, then the player does too
SECOND = cell_of(5, 6)  # explored second, next to OVERLAP: 1, and still 1 after the overlap


class Kind(StrEnum):
    """What a step waits for."""

    CELL = "cell"  # the player's action on a cell (the ringed one)
    BUTTON = "button"  # a button of the match screen (End turn)
    NEXT = "next"  # the coach card's Next (or Finish): a step that only explains
    WATCH = "watch"  # the scripted opponent's moves


@dataclass(frozen=True, slots=True)
class Step:
    """One step: its catalog text ``tutorial.step.<name>``, what it waits for and what it rings.

    ``action`` is the player's move that ends a CELL or BUTTON step; ``mode`` the input mode a
    CELL step needs (the player picks it on the mode bar, or it is already on); ``ring`` the cells
    the coach points at; ``opponent`` the moves the scripted opponent plays after the step.
    """

    name: str
    kind: Kind
    action: Action | None = None
    mode: str | None = None
    button: str | None = None
    ring: tuple[int, ...] = ()
    opponent: tuple[Action, ...] = ()

    @property
    def text_key(self) -> str:
        return f"tutorial.step.{self.name}"


def _me(kind: ActionType, cell: int | None = None) -> Action:
    return Action(PLAYER, kind, cell)


def _them(kind: ActionType, cell: int | None = None) -> Action:
    return Action(OPPONENT, kind, cell)


STEPS: tuple[Step, ...] = (
    Step("explore", Kind.CELL, _me(ActionType.EXPLORE, FIRST), mode="explore", ring=(FIRST,)),
    Step("numbers", Kind.NEXT, ring=(FIRST, OWN_MINE)),
    Step("plant", Kind.CELL, _me(ActionType.PLANT, PLANTED), mode="mine", ring=(PLANTED,)),
    Step("flag", Kind.CELL, _me(ActionType.FLAG, PROVEN), mode="flag", ring=(PROVEN,)),
    Step("end_turn", Kind.BUTTON, _me(ActionType.END_TURN), button="end_turn", opponent=(
        _them(ActionType.EXPLORE, OPPONENT_OPENS), _them(ActionType.PLANT, OVERLAP), _them(ActionType.END_TURN))),
    Step("watch", Kind.WATCH),
    Step("explore_again", Kind.CELL, _me(ActionType.EXPLORE, SECOND), mode="explore", ring=(SECOND,)),
    Step("overlap", Kind.CELL, _me(ActionType.PLANT, OVERLAP), mode="mine", ring=(OVERLAP,)),
    Step("overlap_seen", Kind.NEXT, ring=(SECOND, OVERLAP)),
    Step("end_again", Kind.BUTTON, _me(ActionType.END_TURN), button="end_turn", opponent=(
        _them(ActionType.EXPLORE, PLANTED),)),
    Step("watch_again", Kind.WATCH),
    Step("ko", Kind.NEXT, ring=(PLANTED,)),
    Step("reveal", Kind.NEXT),
)


def step_index(name: str) -> int:
    """The position of the step called ``name`` (tests and screenshots)."""
    for i, step in enumerate(STEPS):
        if step.name == name:
            return i
    raise KeyError(name)


def start_state() -> GameState:
    """A fresh copy of the position every tutorial starts from."""
    return from_ascii(START, phase=Phase.EXPLORE, to_move=PLAYER, turn=START_TURN)


def moves_before(index: int) -> Iterator[Action]:
    """Every move (the player's and the opponent's) played before step ``index`` starts."""
    for step in STEPS[:index]:
        if step.action is not None:
            yield step.action
        yield from step.opponent


def state_at(index: int) -> GameState:
    """The engine state when step ``index`` starts (resuming there: the moves before it, replayed)."""
    if not 0 <= index < len(STEPS):
        raise ValueError(f"the tutorial has steps 0..{len(STEPS) - 1}, not {index}")
    state = start_state()
    for action in moves_before(index):
        state.play(action)  # IllegalAction if the script and the rules ever disagree
    return state


def resume_point(index: int) -> int:
    """Where a tutorial left at step ``index`` starts again: a WATCH step has nothing to do once
    its moves are replayed, so resuming there starts at the step after it."""
    index = max(0, min(index, len(STEPS) - 1))
    while STEPS[index].kind is Kind.WATCH and index + 1 < len(STEPS):
        index += 1
    return index


# ----- progress as the settings keep it (``Settings.tutorial``) ---------------------------------

def progress_value(index: int) -> str:
    """``step-N`` (1-based, as people count) for the step the player is at."""
    return f"step-{index + 1}"


def parse_progress(value: str) -> int | None:
    """The step index a saved ``step-N`` resumes at; ``None`` for unseen / skipped / done / nonsense."""
    prefix, _, number = value.partition("-")
    if prefix != "step" or not number.isdigit():
        return None
    n = int(number)
    if not 1 <= n <= len(STEPS):
        return None
    return resume_point(n - 1)
