"""Lay the source folders out as the `mineduel` package for PyInstaller.

The project maps `client/`, `server/`, `shared/` to `mineduel.*` with setuptools' package-dir;
an editable install resolves that with an import hook PyInstaller cannot follow, so the specs
analyse a staged copy instead: `build/stage/mineduel/{client,server,shared}`.
"""

from __future__ import annotations

import os
import shutil

PACKAGES = ("client", "server", "shared")


def stage(root: str) -> str:
    """Copy the code packages under ``build/stage/mineduel`` and return the stage folder."""
    stage_dir = os.path.join(root, "build", "stage")
    package = os.path.join(stage_dir, "mineduel")
    shutil.rmtree(stage_dir, ignore_errors=True)
    os.makedirs(package)
    with open(os.path.join(package, "__init__.py"), "w", encoding="utf-8") as handle:
        handle.write('"""MINE DUEL (frozen build)."""\n')
    for name in PACKAGES:
        shutil.copytree(
            os.path.join(root, name),
            os.path.join(package, name),
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
        )
    return stage_dir
