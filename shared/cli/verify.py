"""``mine-duel verify RECORD [RECORD ...] [--witness FILE] [--json]``: read records (and a witness), run the
pure verifier, print its report, set the exit code (0 all hold, 1 a check failed, 2 invalid input)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from mineduel.shared.cli.inputs import read_input
from mineduel.shared.fairness.verify import EXIT_FAILED, EXIT_INVALID, EXIT_OK, VerifyReport, verify

DESCRIPTION = """\
Check ONLINE match records (RULES.md §9, docs/RECORD.md). Every check is printed by name as PASS,
FAIL (with what differs) or n/a.

On the record alone: its structure and fairness version, the seed commitment and round signature,
the first-player draw, the client seeds and nonce, every action, the automatic opening moves, the
times and deadlines, the mine commitments, the transcript (version 2: the whole match), the result
and the players. Several RECORDs are one room's matches in order: each must follow the one before it
(rematches). This shows only that a record agrees with itself: a dishonest server could have
rewritten the match.

With --witness, the mine-duel-witness/1 file the game keeps of what this player saw live: the
commitment shown before Ready, the seat and seed sent, every plant commitment seen, the transcript
at the latest state seen, the previous match, and what the end screen showed must all be the
record's. The witness applies to the RECORD with its match id.
"""

EPILOG = """\
exit status: 0 every check holds, 1 a check failed, 2 invalid input (a file that cannot be read,
is not JSON, or is not a record or a witness).
"""


def _unwrap(text: bytes) -> Any:
    """The record in ``text``: a bare record, or a saved server message that carries one
    (``{"type": "record", "record": {...}}``, ``match_end``); undecodable text is passed on as is."""
    try:
        parsed = json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return text  # the verifier says what is wrong with it
    if isinstance(parsed, dict) and "format" not in parsed and isinstance(parsed.get("record"), dict):
        return parsed["record"]
    return parsed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="mine-duel verify", description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("records", nargs="+", metavar="RECORD",
                        help="a record file (JSON), or - for standard input; several: one room's matches in order")
    parser.add_argument("--witness", metavar="FILE",
                        help="this player's mine-duel-witness/1 file of one of the matches (the game keeps it "
                             "in its data folder, witnesses/<match_id>.json)")
    parser.add_argument("--json", action="store_true",
                        help="print the report as one JSON object (several records: {ok, valid, records: [...]})")
    args = parser.parse_args(argv)
    if args.records.count("-") > 1:
        parser.error("standard input (-) can be read only once")
    records = []
    for path in args.records:
        try:
            records.append(_unwrap(read_input(path)))
        except OSError as exc:
            print(f"mine-duel verify: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_INVALID
    witness: bytes | None = None
    if args.witness is not None:
        try:
            witness = read_input(args.witness)
        except OSError as exc:
            print(f"mine-duel verify: cannot read the witness {args.witness}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_INVALID
    room = verify(records, witness)
    if args.json:
        out = room.reports[0].to_json() if len(room.reports) == 1 else room.to_json()
        json.dump(out, sys.stdout, separators=(",", ":"))
        sys.stdout.write("\n")
    else:
        print(room.text())
    if not room.valid:
        for path, report in zip(args.records, room.reports, strict=True):
            if not report.valid:
                print(f"mine-duel verify: {path}: {_invalid_reason(report)}", file=sys.stderr)
        return EXIT_INVALID
    return EXIT_OK if room.ok else EXIT_FAILED


def _invalid_reason(report: VerifyReport) -> str:
    first = report.checks[0]
    if first.ok is False:
        return f"invalid record: {first.detail}"
    return f"invalid witness: {report.check('witness').detail}"
