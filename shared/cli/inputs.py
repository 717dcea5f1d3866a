"""Where a sub-command's record comes from: a file, or ``-`` for standard input."""

from __future__ import annotations

import sys


def read_input(path: str) -> bytes:
    """The bytes of ``path`` (``-``: all of standard input); ``OSError`` when it cannot be read."""
    if path == "-":
        return sys.stdin.buffer.read()
    with open(path, "rb") as handle:
        return handle.read()
