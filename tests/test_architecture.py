"""The import arrows of STYLE.md, and strict typing of the pure code, checked on every run."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STDLIB = sys.stdlib_module_names


def top_level_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def modules(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("path", modules("shared"), ids=lambda p: p.name)
def test_shared_imports_only_the_standard_library_and_itself(path: Path) -> None:
    """The rules engine is pure: shared/ imports the standard library and mineduel.shared only
    (orjson is an optional speed-up with a standard-library fallback; the simulator's chart
    imports the optional ``chart`` extra, matplotlib, only when asked for)."""
    optional = {"orjson"} | ({"matplotlib"} if path.name == "simulate.py" else set())
    foreign = {
        name
        for name in top_level_imports(path)
        if name.split(".")[0] not in STDLIB | optional and not name.startswith("mineduel.shared")
    }
    assert foreign == set()


@pytest.mark.parametrize("path", modules("server"), ids=lambda p: p.name)
def test_server_never_imports_pygame_or_the_client(path: Path) -> None:
    """The server is a thin Twisted shell around shared/: no pygame, no client code."""
    bad = {n for n in top_level_imports(path) if n.split(".")[0] in ("pygame", "pygame_gui") or n.startswith("mineduel.client")}
    assert bad == set()


def test_shared_is_strictly_typed(tmp_path: Path) -> None:
    """mypy --strict finds nothing in the pure code (STYLE.md: full typing on pure code)."""
    # The editable install maps mineduel.shared with an import hook mypy cannot follow, so check
    # a copy laid out as the installed package.
    stage = tmp_path / "mineduel"
    shutil.copytree(ROOT / "shared", stage / "shared", ignore=shutil.ignore_patterns("__pycache__"))
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--explicit-package-bases", "--namespace-packages",
         "--cache-dir", str(tmp_path / ".mypy_cache"), "mineduel/shared"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
