"""``mine-duel verify RECORD``: read a record, run the pure verifier, print its report, set the exit code."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from mineduel.shared.cli.inputs import read_input
from mineduel.shared.fairness.verify import EXIT_FAILED, EXIT_INVALID, EXIT_OK, verify_record


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="mine-duel verify",
        description="Check an ONLINE match record: commitment, first-player draw, auto-moves, "
        "mine commitments, transcript and result (RULES.md §9). Exit 0 all hold, 1 a check failed, 2 invalid input.",
    )
    parser.add_argument("record", help="the record file (JSON), or - for standard input")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    args = parser.parse_args(argv)
    try:
        text = read_input(args.record)
    except OSError as exc:
        print(f"mine-duel verify: cannot read {args.record}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_INVALID
    data: Any = text
    try:
        parsed = json.loads(text)
        # A server reply ({"type": "record", "record": {...}}) or a match_end message also works.
        if isinstance(parsed, dict) and "format" not in parsed and isinstance(parsed.get("record"), dict):
            parsed = parsed["record"]
        data = parsed
    except (ValueError, UnicodeDecodeError):
        pass
    report = verify_record(data)
    if args.json:
        json.dump(report.to_json(), sys.stdout, separators=(",", ":"))
        sys.stdout.write("\n")
    else:
        print(report.text())
    if not report.valid:
        if not args.json:
            print(f"mine-duel verify: invalid record: {report.checks[0].detail}", file=sys.stderr)
        return EXIT_INVALID
    return EXIT_OK if report.ok else EXIT_FAILED
