"""The import arrows of STYLE.md, strict typing and the lint rules, checked on every run.

mypy --strict over shared/, server/ and client/ and ruff over the repository must find nothing:
there is no allowlist.
"""

from __future__ import annotations

import ast
import getpass
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STDLIB = sys.stdlib_module_names

# ----- what may import what ----------------------------------------------------------------------------

CLIENT_TWISTED_MODULES: frozenset[str] = frozenset({
    "client/net.py",  # the network/session layer
    "client/app.py",  # drives the frame loop from Twisted's reactor
})
"""The only client modules that may import Twisted."""

CLIENT_MAY_IMPORT_FROM_SERVER: frozenset[str] = frozenset({"mineduel.server.client"})
"""The one server module the client uses: the line client (docs: server/client.py)."""



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


# ----- typing ---------------------------------------------------------------------------------------

TYPED_FOLDERS = ("shared", "server", "client")
_MYPY_LINE = re.compile(r"^mineduel/(?P<path>[^:]+\.py):\d+(?::\d+)?: error: ")


@pytest.fixture(scope="module")
def mypy_errors(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """mypy --strict (pyproject's [tool.mypy]: the mypy-zope plugin) over shared/, server/ and client/
    together, once: ``path -> its error lines``.

    The editable install maps the packages with an import hook mypy cannot follow, so mypy checks a
    copy laid out as the installed package, all three packages in one run. The copy keeps the
    files' times and mypy sees relative paths, so the cache in the temp folder stays valid between runs.
    """
    stage = tmp_path_factory.mktemp("typecheck")
    for folder in TYPED_FOLDERS:
        shutil.copytree(ROOT / folder, stage / "mineduel" / folder, ignore=shutil.ignore_patterns("__pycache__"))
    cache = Path(tempfile.gettempdir()) / f"mineduel-mypy-cache-{getpass.getuser()}"
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(cache), "mineduel"],
        cwd=stage, capture_output=True, text=True, check=False,
    )
    # 0: clean, 1: errors were found; anything else (a syntax error, a crash) checked nothing.
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    errors: dict[str, list[str]] = defaultdict(list)
    for line in proc.stdout.splitlines():
        match = _MYPY_LINE.match(line)
        if match:
            errors[match["path"]].append(line)
    assert bool(errors) == (proc.returncode == 1), proc.stdout + proc.stderr
    return dict(errors)


@pytest.mark.parametrize("folder", TYPED_FOLDERS)
def test_strictly_typed(folder: str, mypy_errors: dict[str, list[str]]) -> None:
    """mypy --strict finds nothing in shared/, server/ or client/ (STYLE.md: full typing)."""
    found = [line for path, lines in sorted(mypy_errors.items()) if path.startswith(f"{folder}/") for line in lines]
    assert found == [], "\n".join(found)


# ----- lint ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ruff_findings() -> dict[str, list[str]]:
    """``ruff check`` over the repository (pyproject's [tool.ruff]): ``path -> its findings``."""
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "json", "."],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    findings: dict[str, list[str]] = defaultdict(list)
    for item in json.loads(proc.stdout):
        path = Path(item["filename"]).resolve().relative_to(ROOT).as_posix()
        findings[path].append(f"{path}:{item['location']['row']}: {item['code']} {item['message']}")
    return dict(findings)


def test_ruff_is_clean(ruff_findings: dict[str, list[str]]) -> None:
    """``ruff check`` over the repository finds nothing (pyproject's [tool.ruff], a reason per ignored rule)."""
    found = [line for _path, lines in sorted(ruff_findings.items()) for line in lines]
    assert found == [], "\n".join(found)


# ----- what the client may import --------------------------------------------------------------------

def imported_modules(path: Path) -> set[str]:
    """Every absolute import of ``path`` (in functions too), ``from package import module`` as the module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            submodules = {f"{node.module}.{alias.name}" for alias in node.names}
            ours = {name for name in submodules if _is_our_module(name)}
            names |= ours
            if len(ours) < len(submodules):  # a name defined in node.module itself
                names.add(node.module)
    return names


def _is_our_module(name: str) -> bool:
    """``mineduel.server.client`` and the like: a module (file or package) of this repository."""
    parts = name.split(".")
    if parts[0] != "mineduel" or len(parts) < 3:
        return False
    base = ROOT.joinpath(*parts[1:])
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def client_modules() -> list[Path]:
    return modules("client")


def test_only_the_network_layer_of_the_client_imports_twisted() -> None:
    """Twisted stays behind the client's network/session layer (client/net.py) and the module that
    runs the frame loop from the reactor (client/app.py); scenes, UI and matches never see it."""
    importing = {
        path.relative_to(ROOT).as_posix()
        for path in client_modules()
        if any(name.split(".")[0] == "twisted" for name in imported_modules(path))
    }
    assert importing - CLIENT_TWISTED_MODULES == set()
    assert {path for path in CLIENT_TWISTED_MODULES if not (ROOT / path).is_file()} == set()


def _client_server_imports() -> set[tuple[str, str]]:
    return {
        (path.relative_to(ROOT).as_posix(), name)
        for path in client_modules()
        for name in imported_modules(path)
        if name == "mineduel.server" or name.startswith("mineduel.server.")
    }


def test_the_client_imports_only_the_line_client_from_the_server() -> None:
    """From server/ the client uses the documented line-client module only (mineduel.server.client);
    ``from mineduel.server import client`` counts as that module, not as the package."""
    extra = {(path, name) for path, name in _client_server_imports() if name not in CLIENT_MAY_IMPORT_FROM_SERVER}
    assert extra == set()


# ----- class size --------------------------------------------------------------------------------------

MAX_METHODS = 25
"""More methods than this in one class is more than one idea (STYLE.md: no god objects): split it."""


def _method_count(cls: ast.ClassDef) -> int:
    """Functions defined in the class body (properties and static methods count; nested functions do not)."""
    return sum(isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) for item in cls.body)


def _methods_per_class(folder: str) -> dict[str, int]:
    """``path:Class -> functions defined in its body`` (properties and static methods count)."""
    counts: dict[str, int] = {}
    for path in modules(folder):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                counts[f"{path.relative_to(ROOT).as_posix()}:{node.name}"] = _method_count(node)
    return counts


@pytest.mark.parametrize("folder", ["server", "client"])
def test_no_class_has_more_than_25_methods(folder: str) -> None:
    """Every class in server/ and client/ has at most MAX_METHODS methods (a property's getter and
    setter count as two)."""
    big = {name: count for name, count in _methods_per_class(folder).items() if count > MAX_METHODS}
    assert big == {}


def test_the_method_count_sees_a_big_class() -> None:
    """The counter counts what the gate means: methods, properties and setters, not nested functions."""
    source = "class A:\n" + "".join(f"    def m{i}(self):\n        def inner(): pass\n" for i in range(3)) + (
        "    @property\n    def p(self): pass\n    @p.setter\n    def p(self, v): pass\n    async def a(self): pass\n")
    cls = ast.parse(source).body[0]
    assert isinstance(cls, ast.ClassDef)
    assert _method_count(cls) == 6
