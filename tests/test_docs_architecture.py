"""docs/ARCHITECTURE.md names every module of the three packages, and no module that is gone."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ARCHITECTURE.md"


def _modules() -> set[str]:
    return {
        p.relative_to(ROOT).as_posix()
        for folder in ("shared", "server", "client")
        for p in (ROOT / folder).rglob("*.py")
        if p.name != "__init__.py"
    }


def test_architecture_names_every_module() -> None:
    """A new module needs its line in docs/ARCHITECTURE.md (one idea per module, said once)."""
    named = set(re.findall(r"`((?:shared|server|client)/[\w/]+\.py)`", DOC.read_text(encoding="utf-8")))
    assert sorted(_modules() - named) == []


def test_architecture_names_no_module_that_is_gone() -> None:
    named = set(re.findall(r"`((?:shared|server|client)/[\w/]+\.py)`", DOC.read_text(encoding="utf-8")))
    assert sorted(named - _modules()) == []
