#!/usr/bin/env python3
"""Regenerate the figures table of docs/RELIABILITY.md from the adversarial suites.

    .venv/bin/python tools/reliability_report.py              # scale 10 (~10 minutes)
    .venv/bin/python tools/reliability_report.py --scale 1    # what CI runs (~1 minute)

It runs every test marked ``reliability`` (fuzzing, abuse, faults, crashes, silent drops, leak
audit, TLS) with ``MINEDUEL_RELIABILITY_SCALE`` times the CI amount of work, collects what each
suite says it tried (``tests/support/reliability.py``: ``record_figure``), and rewrites the part of
docs/RELIABILITY.md between the ``figures`` markers. If any test fails the document is left
alone and the exit status is 1: a report is only published from a green run.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEGIN = "<!-- figures:begin (tools/reliability_report.py writes this part) -->"
END = "<!-- figures:end -->"


def run_suites(scale: int, extra: list[str]) -> tuple[dict[str, int], list[dict[str, object]], float]:
    """Run the marked tests; their outcome counts, the recorded figures and the wall time."""
    with tempfile.TemporaryDirectory() as tmp:
        figures = Path(tmp) / "figures.jsonl"
        junit = Path(tmp) / "junit.xml"
        env = dict(os.environ, MINEDUEL_RELIABILITY_SCALE=str(scale), MINEDUEL_FIGURES=str(figures),
                   SDL_VIDEODRIVER="dummy", SDL_AUDIODRIVER="dummy", PYGAME_HIDE_SUPPORT_PROMPT="1")
        command = [sys.executable, "-m", "pytest", "-m", "reliability", "-p", "no:cacheprovider",
                   f"--junitxml={junit}", *extra]
        started = time.monotonic()
        subprocess.run(command, cwd=ROOT, env=env, check=False)
        took = time.monotonic() - started
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        if junit.exists():
            for suite in ET.parse(junit).getroot().iter("testsuite"):
                for key in counts:
                    counts[key] += int(suite.get(key, "0"))
        else:
            counts["errors"] = 1
        rows = [json.loads(line) for line in figures.read_text(encoding="utf-8").splitlines()] if figures.exists() else []
    return counts, rows, took


def aggregate(rows: list[dict[str, object]]) -> dict[str, list[tuple[str, float, str]]]:
    """Sum each (suite, figure); a unit starting with ``max`` keeps the largest value."""
    totals: dict[tuple[str, str, str], float] = defaultdict(float)
    for row in rows:
        key = (str(row["suite"]), str(row["figure"]), str(row.get("unit", "")))
        value = float(row["value"])  # type: ignore[arg-type]
        totals[key] = max(totals[key], value) if key[2].startswith("max") else totals[key] + value
    by_suite: dict[str, list[tuple[str, float, str]]] = defaultdict(list)
    for (suite, figure, unit), value in sorted(totals.items()):
        by_suite[suite].append((figure, value, unit))
    return by_suite


def _number(value: float) -> str:
    return f"{int(value):,}" if value == int(value) else f"{value:,.2f}"


def render(scale: int, counts: dict[str, int], by_suite: dict[str, list[tuple[str, float, str]]], took: float) -> str:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    today = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d")
    passed = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    lines = [
        BEGIN,
        "",
        f"Generated {today} at commit `{commit or 'unknown'}` by "
        f"`.venv/bin/python tools/reliability_report.py --scale {scale}` in {took / 60:.1f} min: "
        f"{passed} tests passed, {counts['failures'] + counts['errors']} failed, {counts['skipped']} skipped "
        f"(CI runs the same tests at scale 1).",
        "",
        "| suite | what | figure |",
        "| --- | --- | ---: |",
    ]
    for suite, figures in by_suite.items():
        for figure, value, unit in figures:
            label = unit.removeprefix("max").strip()
            shown = _number(value) + (f" {label}" if label else "")
            lines.append(f"| {suite} | {figure} | {shown} |")
    lines += ["", END]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=int, default=10, help="times the CI amount of work (default 10)")
    parser.add_argument("--doc", type=Path, default=ROOT / "docs" / "RELIABILITY.md")
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest (e.g. -x, a test file)")
    args = parser.parse_args(argv)
    counts, rows, took = run_suites(args.scale, args.pytest_args)
    by_suite = aggregate(rows)
    table = render(args.scale, counts, by_suite, took)
    print(table)
    if counts["failures"] or counts["errors"] or not counts["tests"]:
        print("reliability_report: tests failed or none ran; docs left unchanged", file=sys.stderr)
        return 1
    text = args.doc.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        print(f"reliability_report: {args.doc} has no figures markers", file=sys.stderr)
        return 1
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    args.doc.write_text(head + table + tail, encoding="utf-8")
    print(f"reliability_report: {args.doc} updated", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
