#!/usr/bin/env python3
"""Check that a built wheel and sdist hold every file of the source tree they were built from.

    python scripts/check_dist.py dist/mine_duel-0.2.0-py3-none-any.whl dist/mine_duel-0.2.0.tar.gz

The tree is what git tracks (plus new files not ignored, so a file added but not yet committed
counts too); without git, every file under the folder. Each file is looked for where it belongs:

- wheel: every file of ``client/``, ``server/``, ``shared/``, ``assets/``, ``locales/`` at
  ``mineduel/<folder>/…``, the licence files under ``*.dist-info/licenses/``, both console scripts,
  and nothing outside ``mineduel/`` and the ``.dist-info`` folder;
- sdist: every file at the same path under ``mine_duel-<version>/`` (except :data:`NOT_IN_SDIST`).

Prints what is missing and exits 1, so a new folder can never be left out silently (issue 17).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"client": "mineduel/client", "server": "mineduel/server", "shared": "mineduel/shared",
            "assets": "mineduel/assets", "locales": "mineduel/locales"}
LICENCE_FILES = ("LICENSE", "assets/fonts/OFL.txt")
SCRIPTS = ("mine-duel = mineduel.client.cli:main", "mine-duel-server = mineduel.server.cli:main")
NOT_IN_SDIST = {".gitignore"}  # git's own file; everything else a checkout has, the sdist has


def tree_files(root: Path) -> list[str]:
    """The tree's files, as POSIX paths relative to ``root``."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=root, capture_output=True, check=True,
        ).stdout.decode("utf-8")
        names = [n for n in out.split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        names = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()]
    skip = ("__pycache__/", ".pyc")
    return sorted(n for n in names if (root / n).is_file() and not any(s in n for s in skip))


def wheel_problems(wheel: Path, files: list[str]) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        members = set(archive.namelist())
        entry_points = next((archive.read(m).decode() for m in members if m.endswith(".dist-info/entry_points.txt")), "")
    problems = []
    for name in files:
        top, _, rest = name.partition("/")
        if top in PACKAGES and rest and f"{PACKAGES[top]}/{rest}" not in members:
            problems.append(f"wheel: {name} is missing (expected {PACKAGES[top]}/{rest})")
    for licence in LICENCE_FILES:
        if not any(m.endswith(f".dist-info/licenses/{licence}") for m in members):
            problems.append(f"wheel: licence file {licence} is missing from .dist-info/licenses/")
    for script in SCRIPTS:
        if script not in entry_points:
            problems.append(f"wheel: console script {script!r} is missing")
    for member in sorted(members):
        first = PurePosixPath(member).parts[0]
        if first != "mineduel" and not first.endswith(".dist-info"):
            problems.append(f"wheel: unexpected {member} (only mineduel/ and the .dist-info folder belong there)")
    return problems


def sdist_problems(sdist: Path, files: list[str]) -> list[str]:
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    prefix = names[0].split("/")[0] + "/"
    members = {n[len(prefix):] for n in names if n.startswith(prefix)}
    return [f"sdist: {name} is missing" for name in files if name not in NOT_IN_SDIST and name not in members]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", type=Path)
    parser.add_argument("sdist", type=Path)
    parser.add_argument("--root", type=Path, default=ROOT, help="the source tree (default: this checkout)")
    args = parser.parse_args(argv)
    files = tree_files(args.root)
    problems = wheel_problems(args.wheel, files) + sdist_problems(args.sdist, files)
    for problem in problems:
        print(f"check_dist: {problem}", file=sys.stderr)
    if problems:
        print(f"check_dist: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    packaged = sum(1 for f in files if f.partition("/")[0] in PACKAGES)
    print(f"check_dist: ok: {packaged} package files in {args.wheel.name}, {len(files)} tree files in {args.sdist.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
