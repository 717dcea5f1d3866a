"""`mine-duel replay FILE|-`: run a match record through the rules and print what happened.

Contract: RECORD.md. Exit 0 with one JSON object on standard output; an invalid record
prints a message naming the problem on standard error and exits 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from mineduel.shared.cli.inputs import read_input
from mineduel.shared.fairness.record import InvalidRecord, cells_json, loads, result_json, run

EXIT_INVALID = 2


def replay_text(text: str | bytes) -> dict[str, object]:
    """The replay output object for a record's text; raises ``InvalidRecord``."""
    record = loads(text)
    state, steps = run(record)
    return {"steps": steps, "result": result_json(state), "cells": cells_json(state)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="mine-duel replay",
        description="Replay a match record (mine-duel-record/1) and print each step, the result and the final board as JSON.",
    )
    parser.add_argument("file", help="the record file, or - for standard input")
    args = parser.parse_args(argv)
    try:
        data = read_input(args.file)
    except OSError as exc:
        print(f"mine-duel replay: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_INVALID
    try:
        output = replay_text(data)
    except InvalidRecord as exc:
        print(f"mine-duel replay: invalid record: {exc}", file=sys.stderr)
        return EXIT_INVALID
    json.dump(output, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")
    return 0
