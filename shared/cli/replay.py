"""`mine-duel replay FILE|-`: run a match record through the rules and print what happened.

Contract: RECORD.md. Exit 0 with one JSON object on standard output; an invalid record
prints a message naming the problem on standard error and exits 2. With ``--view``/``--at`` it
prints one position as the ASCII board notation instead (docs/ENGINE.md), so a seat's view at
any moment is testable without a window (issue 19).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from mineduel.shared.cli.inputs import read_input
from mineduel.shared.fairness.record import InvalidRecord, Record, cells_json, loads, result_json, run
from mineduel.shared.rules.engine import GameState
from mineduel.shared.rules.notation import to_ascii, view_to_ascii

EXIT_INVALID = 2
VIEWS = ("0", "1", "full")


def replay_text(text: str | bytes) -> dict[str, object]:
    """The replay output object for a record's text; raises ``InvalidRecord``."""
    record = loads(text)
    state, steps = run(record)
    return {"steps": steps, "result": result_json(state), "cells": cells_json(state)}


def state_at(record: Record, at: int) -> GameState:
    """The engine's state after the first ``at`` actions (refused ones count and change nothing)."""
    if not 0 <= at <= len(record.actions):
        raise ValueError(f"--at {at} is outside 0..{len(record.actions)} (the record has {len(record.actions)} actions)")
    state = GameState(record.variant)
    for action in record.actions[:at]:
        state.apply(action)
    return state


def position_text(text: str | bytes, view: str, at: int | None) -> str:
    """``--view``/``--at``: a ``#`` header line, then the 8 notation rows.

    ``view`` is ``"0"``/``"1"`` (exactly that seat's ``GameState.view``, V2) or ``"full"`` (the
    whole truth); ``at`` defaults to every action. Raises ``InvalidRecord`` or ``ValueError``.
    """
    record = loads(text)
    if view not in VIEWS:
        raise ValueError(f"--view {view!r} is not one of 0, 1, full")
    n = len(record.actions) if at is None else at
    state = state_at(record, n)
    board = to_ascii(state) if view == "full" else view_to_ascii(state.view(int(view)))
    to_move = "-" if state.to_move is None else str(state.to_move)
    header = f"# view={view} at={n}/{len(record.actions)} phase={state.phase} to_move={to_move} turn={state.turn}"
    return header + "\n" + board + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="mine-duel replay",
        description="Replay a match record (mine-duel-record/1) and print each step, the result and the final board as JSON.",
    )
    parser.add_argument("file", help="the record file, or - for standard input")
    parser.add_argument(
        "--view",
        help="print one position as the ASCII board notation instead: 0 or 1 (what that seat saw) or full",
    )
    parser.add_argument("--at", help="with --view: the position after this many actions (default: all)")
    args = parser.parse_args(argv)
    try:
        data = read_input(args.file)
    except OSError as exc:
        print(f"mine-duel replay: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_INVALID
    if args.view is not None or args.at is not None:
        return _print_position(data, args.view or "full", args.at)
    try:
        output = replay_text(data)
    except InvalidRecord as exc:
        print(f"mine-duel replay: invalid record: {exc}", file=sys.stderr)
        return EXIT_INVALID
    json.dump(output, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")
    return 0


def _print_position(data: str | bytes, view: str, at_text: str | None) -> int:
    """The ``--view``/``--at`` mode; every bad input is a message and exit 2 (RECORD.md)."""
    at: int | None = None
    if at_text is not None:
        try:
            at = int(at_text, 10)
        except ValueError:
            print(f"mine-duel replay: --at {at_text!r} is not a whole number of actions", file=sys.stderr)
            return EXIT_INVALID
    try:
        text = position_text(data, view, at)
    except InvalidRecord as exc:
        print(f"mine-duel replay: invalid record: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except ValueError as exc:
        print(f"mine-duel replay: {exc}", file=sys.stderr)
        return EXIT_INVALID
    sys.stdout.write(text)
    return 0
