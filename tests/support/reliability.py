"""Scale and figures for the adversarial suites (docs/RELIABILITY.md).

The same tests run in CI at scale 1 (seconds) and, for the published report, at a larger scale
(``tools/reliability_report.py --scale N``). Each suite states what it tried through
:func:`record_figure`; the report sums those figures into the table of docs/RELIABILITY.md.
Nothing here changes what a test checks, only how many cases it checks.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

SCALE_ENV = "MINEDUEL_RELIABILITY_SCALE"
FIGURES_ENV = "MINEDUEL_FIGURES"


def scale() -> int:
    """How many times the CI amount of work to do (1 unless the report asks for more)."""
    try:
        return max(1, int(os.environ.get(SCALE_ENV, "1")))
    except ValueError:
        return 1


def scaled(amount: int) -> int:
    """``amount`` cases at scale 1, ``amount * scale()`` in a report run."""
    return amount * scale()


def record_figure(suite: str, figure: str, value: float, unit: str = "") -> None:
    """Add ``value`` to ``figure`` of ``suite`` in the report (a no-op outside a report run).

    Counts add up across tests and runs (inputs tried, matches killed, leaks found); a figure
    whose unit starts with ``max`` keeps the largest value instead (e.g. ``max ms``).
    """
    path = os.environ.get(FIGURES_ENV)
    if not path:
        return
    line = json.dumps({"suite": suite, "figure": figure, "value": value, "unit": unit})
    with Path(path).open("a", encoding="utf-8") as out:
        out.write(line + "\n")
