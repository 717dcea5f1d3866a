"""A second, deliberately plain implementation of RULES.md §1–7 and RECORD.md's replay: a test oracle.

Written from RULES.md and RECORD.md only — not from ``mineduel.shared.rules.engine`` — so that the
differential test (``test_replay.py``) compares two readings of the rule book. Everything is a
list of ``Square`` objects indexed by ``(row, col)``; every set of RULES.md §3 is recomputed by
a loop over the 64 cells each time it is needed. Speed and elegance are not goals: obviousness is.

Refusal codes follow the words of the rule that refuses (A1 names "own-mine cell, revealed
cell, marked cell" in that order, so an explore checks them in that order). RECORD.md asks tools
to compare only *whether* a step was refused; the codes are compared too and the differences are
listed in ``CODE_DIFFERENCES`` below.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any

ROWS = 8
COLS = 8
ALL_CELLS: tuple[tuple[int, int], ...] = tuple((r, c) for r in range(ROWS) for c in range(COLS))

CELL_TYPES = ("explore", "plant", "flag", "unflag")
CORE_TYPES = (*CELL_TYPES, "end_turn")
ONLINE_ONLY_TYPES = ("timeout", "resign", "disconnect", "void")
ALL_TYPES = CORE_TYPES + ONLINE_ONLY_TYPES
NORMAL_PHASES = ("explore", "plant", "end_wait")
OPENING_PHASES = ("open_explore", "open_plant")

FORMAT = "mine-duel-record/1"

# (engine code, oracle code) pairs that are the same refusal for a different first reason. Both
# are allowed by RECORD.md ("tools compare only whether a step was refused").
CODE_DIFFERENCES: frozenset[tuple[str, str]] = frozenset(
    {
        # Explore on one's own mine under a marker (a bluff, A3): A1 lists own-mine first, the
        # engine reports the marker first.
        ("marked", "own_mine"),
    }
)


class RefInvalid(ValueError):
    """The record breaks RECORD.md's structure (replay must exit 2)."""


@functools.cache
def neighbours(row: int, col: int) -> tuple[tuple[int, int], ...]:
    """B2: the up-to-8 cells around ``(row, col)`` (cached: the board never changes shape)."""
    out = []
    for r in (row - 1, row, row + 1):
        for c in (col - 1, col, col + 1):
            if (r, c) != (row, col) and 0 <= r < ROWS and 0 <= c < COLS:
                out.append((r, c))
    return tuple(out)


@dataclass
class Square:
    """B3: one cell — revealed, first revealer, one mine flag per seat, at most one marker."""

    cell: tuple[int, int]
    revealed: bool = False
    by: int | None = None
    mine: list[bool] = field(default_factory=lambda: [False, False])
    marker: int | None = None


class RefMatch:
    """One match, RULES.md §1–7, both variants."""

    def __init__(self, variant: str) -> None:
        assert variant in ("cpu", "online")
        self.variant = variant
        self.squares = [Square(cell) for cell in ALL_CELLS]  # row*8+col order (B1)
        self.phase = "open_explore"  # F1 step 1
        self.to_move: int | None = 0  # V1: seat 0 is the first player
        self.turn = 0  # F3: 0 during the opening
        self.placed_marker_this_turn = False  # A3
        self.over = False
        self.winner: int | None = None
        self.reason: str | None = None
        self.scores: list[int] | None = None
        self.ko_cell: tuple[int, int] | None = None

    # ----- looking at the board ------------------------------------------------------------
    def square(self, cell: tuple[int, int]) -> Square:
        return self.squares[cell[0] * COLS + cell[1]]

    def has_any_mine(self, cell: tuple[int, int]) -> bool:
        return self.square(cell).mine[0] or self.square(cell).mine[1]

    def number(self, cell: tuple[int, int]) -> int:
        """B4: neighbours holding at least one mine; an overlap counts once."""
        return sum(1 for n in neighbours(*cell) if self.has_any_mine(n))

    def explorable(self, seat: int) -> list[tuple[int, int]]:
        """S1."""
        out = []
        for sq in self.squares:
            if not sq.revealed and sq.marker is None and not sq.mine[seat]:
                out.append(sq.cell)
        return out

    def recoverable(self, seat: int) -> list[tuple[int, int]]:
        """S2."""
        out = []
        for sq in self.squares:
            if not sq.revealed and sq.marker == seat and not sq.mine[seat]:
                out.append(sq.cell)
        return out

    def plantable(self, seat: int) -> list[tuple[int, int]]:
        """S3 (the same cells as S1, written out again on purpose)."""
        out = []
        for sq in self.squares:
            if sq.revealed:
                continue
            if sq.marker is not None:
                continue
            if sq.mine[seat]:
                continue
            out.append(sq.cell)
        return out

    def score(self, seat: int) -> int:
        """O10: +1 per marker on a cell holding the opponent's mine, −1 for any other marker."""
        total = 0
        for sq in self.squares:
            if sq.marker == seat:
                total += 1 if sq.mine[1 - seat] else -1
        return total

    def quota_left(self) -> int:
        """A3: one new marker per normal turn."""
        if self.phase in NORMAL_PHASES and not self.placed_marker_this_turn:
            return 1
        return 0

    # ----- ending and turn flow ------------------------------------------------------------
    def end(self, winner: int | None, reason: str, scores: list[int] | None = None) -> None:
        """C4 / O9–O12: the result is fixed once; the turn number stays (F3)."""
        self.over = True
        self.winner = winner
        self.reason = reason
        self.scores = scores
        self.phase = "over"
        self.to_move = None

    def start_normal_turn(self, seat: int) -> None:
        """F2/F3: the turn number goes up first, then (CPU) the C1 check runs."""
        self.turn += 1
        self.to_move = seat
        self.phase = "explore"
        self.placed_marker_this_turn = False
        if self.variant == "cpu":
            self.progress_check(seat)

    def progress_check(self, seat: int) -> None:
        """C1 (CPU)."""
        unrevealed = [sq for sq in self.squares if not sq.revealed]
        if all(sq.marker is not None for sq in unrevealed):
            self.end(None, "all_flagged")  # C1.1
        elif self.explorable(seat):
            pass  # C1.2
        elif self.recoverable(seat):
            pass  # C1.3: keep turn and phase
        else:
            self.end(None, "no_explorable")  # C1.4

    def plant_check(self, seat: int) -> None:
        """C2 (CPU): no all-flagged test here."""
        if self.plantable(seat):
            return
        if self.recoverable(seat):
            return
        self.end(None, "no_plantable")

    def cannot_continue_check(self) -> None:
        """O9 (ONLINE): no unrevealed, unmarked cell without a mine → the end by score (O10)."""
        if self.over:
            return
        safe = [
            sq.cell
            for sq in self.squares
            if not sq.revealed and sq.marker is None and not (sq.mine[0] or sq.mine[1])
        ]
        if safe:
            return
        s0, s1 = self.score(0), self.score(1)
        if s0 > s1:
            winner: int | None = 0
        elif s1 > s0:
            winner = 1
        else:
            winner = None
        self.end(winner, "score", [s0, s1])

    # ----- actions ---------------------------------------------------------------------------
    def act(self, seat: int, kind: str, cell: tuple[int, int] | None = None) -> str | None:
        """Apply one action; return a refusal code (and change nothing) or ``None``."""
        if self.over:
            return "game_over"  # RECORD.md: any action after the end
        if kind in ONLINE_ONLY_TYPES:
            if self.variant != "online":
                return "not_online"  # RECORD.md: ONLINE-only in a CPU record
            return self.act_online_only(seat, kind)
        if seat != self.to_move:
            return "not_your_turn"  # F4
        if kind == "explore":
            error = self.explore(seat, cell)  # type: ignore[arg-type]
        elif kind == "plant":
            error = self.plant(seat, cell)  # type: ignore[arg-type]
        elif kind == "flag":
            error = self.flag(seat, cell)  # type: ignore[arg-type]
        elif kind == "unflag":
            error = self.unflag(seat, cell)  # type: ignore[arg-type]
        elif kind == "end_turn":
            error = self.end_turn(seat)
        else:
            raise AssertionError(kind)
        if error is None and self.variant == "online":
            self.cannot_continue_check()  # O7/O9: after every applied action
        return error

    def act_online_only(self, seat: int, kind: str) -> str | None:
        if kind == "resign":
            self.end(1 - seat, "resign")  # O11: either seat, any moment
            return None
        if kind == "disconnect":
            self.end(1 - seat, "disconnect")  # O12
            return None
        if kind == "void":
            self.end(None, "void")  # O12
            return None
        # timeout: only the seat to move has a deadline (RECORD.md)
        if seat != self.to_move:
            return "not_your_turn"
        if self.phase in NORMAL_PHASES:
            self.start_normal_turn(1 - seat)  # O5: skip what is missing, pass the turn
        # O4: in the opening the timeout itself changes nothing.
        self.cannot_continue_check()
        return None

    def explore(self, seat: int, cell: tuple[int, int]) -> str | None:
        """A1 (and F1 steps 1–2, O8)."""
        if self.phase not in ("explore", "open_explore"):
            return "wrong_phase"
        sq = self.square(cell)
        if sq.mine[seat]:
            return "own_mine"  # A1 / O8 (an overlap holds one's own mine too)
        if sq.revealed:
            return "revealed"
        if sq.marker is not None:
            return "marked"  # A6
        if sq.mine[1 - seat]:
            self.ko_cell = cell  # the cell stays closed
            self.end(1 - seat, "ko")
            return None
        sq.revealed = True
        sq.by = seat
        if self.phase == "open_explore":
            if seat == 0:
                self.to_move = 1  # F1 step 2
            else:
                self.phase = "open_plant"  # F1 step 3
                self.to_move = 0
        else:
            self.phase = "plant"
            if self.variant == "cpu":
                self.plant_check(seat)  # C2 on entering PLANT
        return None

    def plant(self, seat: int, cell: tuple[int, int]) -> str | None:
        """A2 (and F1 steps 3–4)."""
        if self.phase not in ("plant", "open_plant"):
            return "wrong_phase"
        sq = self.square(cell)
        if sq.revealed:
            return "revealed"  # B6
        if sq.marker is not None:
            return "marked"  # A6
        if sq.mine[seat]:
            return "own_mine"
        sq.mine[seat] = True  # V5: an overlap is answered like any other plant
        if self.phase == "open_plant":
            if seat == 0:
                self.to_move = 1  # F1 step 4
            else:
                self.start_normal_turn(0)  # F2: the first player starts
        else:
            self.phase = "end_wait"
        return None

    def flag(self, seat: int, cell: tuple[int, int]) -> str | None:
        """A3."""
        if self.phase not in NORMAL_PHASES:
            return "wrong_phase"  # F1: no markers in the opening
        sq = self.square(cell)
        if sq.revealed:
            return "revealed"
        if sq.marker is not None:
            return "marked"
        if self.placed_marker_this_turn:
            return "quota_used"
        sq.marker = seat
        self.placed_marker_this_turn = True
        self.after_marker_work(seat)
        return None

    def unflag(self, seat: int, cell: tuple[int, int]) -> str | None:
        """A4: only one's own marker; the quota is not given back (A3)."""
        if self.phase not in NORMAL_PHASES:
            return "wrong_phase"
        sq = self.square(cell)
        if sq.marker is None:
            return "no_marker"
        if sq.marker != seat:
            return "not_your_marker"
        sq.marker = None
        self.after_marker_work(seat)
        return None

    def after_marker_work(self, seat: int) -> None:
        """C1 again in EXPLORE, C2 again in PLANT, nothing in END_WAIT (C2b); CPU only."""
        if self.variant != "cpu":
            return
        if self.phase == "explore":
            self.progress_check(seat)
        elif self.phase == "plant":
            self.plant_check(seat)

    def end_turn(self, seat: int) -> str | None:
        """A5."""
        if self.phase != "end_wait":
            return "wrong_phase"
        self.start_normal_turn(1 - seat)
        return None

    # ----- what a tool or a seat sees --------------------------------------------------------
    def legal_actions(self) -> list[tuple[int, str, tuple[int, int] | None]]:
        """Every core action the seat to move may take now (no ONLINE-only actions)."""
        if self.over or self.to_move is None:
            return []
        seat = self.to_move
        out: list[tuple[int, str, tuple[int, int] | None]] = []
        if self.phase in ("explore", "open_explore"):
            out += [(seat, "explore", cell) for cell in self.explorable(seat)]
        if self.phase in ("plant", "open_plant"):
            out += [(seat, "plant", cell) for cell in self.plantable(seat)]
        if self.phase in NORMAL_PHASES:
            if not self.placed_marker_this_turn:
                for sq in self.squares:
                    if not sq.revealed and sq.marker is None:
                        out.append((seat, "flag", sq.cell))
            for sq in self.squares:
                if sq.marker == seat:
                    out.append((seat, "unflag", sq.cell))
        if self.phase == "end_wait":
            out.append((seat, "end_turn", None))
        return out

    def result_json(self) -> dict[str, Any]:
        return {"over": self.over, "winner": self.winner, "reason": self.reason, "scores": self.scores}

    def cells_json(self) -> list[dict[str, Any]]:
        out = []
        for sq in self.squares:
            out.append(
                {
                    "revealed": sq.revealed,
                    "by": sq.by,
                    "number": self.number(sq.cell) if sq.revealed else None,
                    "marker": sq.marker,
                    "mines": [seat for seat in (0, 1) if sq.mine[seat]],
                }
            )
        return out

    def view(self, seat: int) -> dict[str, Any]:
        """V2 as plain data: only what ``seat`` may know."""
        return {
            "seat": seat,
            "phase": self.phase,
            "to_move": self.to_move,
            "turn": self.turn,
            "revealed": {sq.cell: (sq.by, self.number(sq.cell)) for sq in self.squares if sq.revealed},
            "markers": {sq.cell: sq.marker for sq in self.squares if sq.marker is not None},
            "my_mines": {sq.cell for sq in self.squares if sq.mine[seat]},
            "quota_left": self.quota_left() if self.to_move == seat else 0,
        }


# ----- records ---------------------------------------------------------------------------------
def _is_int(value: Any) -> bool:
    return type(value) is int


def check_record(data: Any) -> tuple[str, list[tuple[int, str, tuple[int, int] | None]]]:
    """RECORD.md "Invalid record": return (variant, actions) or raise :class:`RefInvalid`."""
    if type(data) is not dict:
        raise RefInvalid("not an object")
    if "format" not in data:
        raise RefInvalid("format missing")
    if not (type(data["format"]) is str and data["format"] == FORMAT):
        raise RefInvalid("format wrong")
    variant = data.get("variant")
    if not (type(variant) is str and variant in ("cpu", "online")):
        raise RefInvalid("variant wrong")
    if "actions" not in data:
        raise RefInvalid("actions missing")
    if type(data["actions"]) is not list:
        raise RefInvalid("actions not a list")
    actions = []
    for raw in data["actions"]:
        if type(raw) is not dict:
            raise RefInvalid("action not an object")
        seat = raw.get("seat")
        if not (_is_int(seat) and seat in (0, 1)):
            raise RefInvalid("seat")
        kind = raw.get("type")
        if not (type(kind) is str and kind in ALL_TYPES):
            raise RefInvalid("type")
        cell = None
        if kind in CELL_TYPES:
            raw_cell = raw.get("cell")
            if not (type(raw_cell) is list and len(raw_cell) == 2):
                raise RefInvalid("cell shape")
            if not (_is_int(raw_cell[0]) and _is_int(raw_cell[1])):
                raise RefInvalid("cell not integers")
            if not (0 <= raw_cell[0] < ROWS and 0 <= raw_cell[1] < COLS):
                raise RefInvalid("cell off the board")
            cell = (raw_cell[0], raw_cell[1])
        actions.append((seat, kind, cell))
    return variant, actions


def _reject(name: str) -> Any:
    raise RefInvalid(f"{name} is not JSON")


def parse_record_text(text: str | bytes) -> tuple[str, list[tuple[int, str, tuple[int, int] | None]]]:
    """Decode UTF-8 JSON (RECORD.md; NaN/Infinity are not JSON) and check the structure."""
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")  # not json.loads(bytes): it would guess UTF-16/32
        data = json.loads(text, parse_constant=_reject)
    except RefInvalid:
        raise
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise RefInvalid(f"not JSON: {exc}") from None
    return check_record(data)


def replay_actions(
    variant: str, actions: list[tuple[int, str, tuple[int, int] | None]]
) -> tuple[RefMatch, dict[str, Any]]:
    """RECORD.md's replay output for already-checked actions."""
    match = RefMatch(variant)
    steps = []
    for seat, kind, cell in actions:
        error = match.act(seat, kind, cell)
        step: dict[str, Any] = {"ok": error is None}
        if error is not None:
            step["error"] = error
        step["phase"] = match.phase
        step["to_move"] = match.to_move
        step["turn"] = match.turn
        steps.append(step)
    return match, {"steps": steps, "result": match.result_json(), "cells": match.cells_json()}


def replay_record(data: Any) -> dict[str, Any]:
    """The replay output for a decoded record (raises :class:`RefInvalid`)."""
    variant, actions = check_record(data)
    return replay_actions(variant, actions)[1]


def replay_text(text: str | bytes) -> dict[str, Any]:
    """The replay output for a record's text (raises :class:`RefInvalid`)."""
    variant, actions = parse_record_text(text)
    return replay_actions(variant, actions)[1]
