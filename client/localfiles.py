"""Reading the client's own JSON files (settings, the saved online seat, ...) without ever raising.

A file on the player's disk may be anything: cut short by a crash, edited by hand, overwritten with
binary garbage, nested 100,000 levels deep, holding ``1e400`` or a 5,000-digit number (issue 15).
:func:`read_json` turns every such file into :data:`NOTHING` with exactly one warning in the log,
and a missing file into :data:`NOTHING` with none; anything else it returns is plain JSON (no
``NaN``, no infinity; ``null`` is ``None``), for the caller to check field by field (:func:`text`,
:func:`integer`, :func:`number`, :func:`flag`).
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MAX_BYTES = 1 << 20
"""Larger than any file the client writes (a few hundred bytes) by far: bigger is not one of ours."""


class _NotJson(ValueError):
    pass


class _Nothing:
    def __repr__(self) -> str:
        return "NOTHING"


NOTHING: Any = _Nothing()
"""What :func:`read_json` returns for a missing or unusable file (``None`` is a file holding ``null``)."""


def _no_constant(name: str) -> Any:
    raise _NotJson(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotJson(f"{text[:20]} is out of range")
    return value


def read_json(path: Path, what: str) -> Any:
    """The JSON value in ``path``, or :data:`NOTHING`: missing (silently), or unreadable, too large, not
    UTF-8, not JSON, nested too deep, or holding a number JSON cannot carry (one warning, naming ``what``)."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except FileNotFoundError:
        return NOTHING
    except OSError as exc:
        log.warning("%s: cannot read %s (%s)", what, path, exc.strerror or exc)
        return NOTHING
    if len(raw) > MAX_BYTES:
        log.warning("%s: %s is larger than %d KiB, not one of ours; ignored", what, path, MAX_BYTES // 1024)
        return NOTHING
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_no_constant, parse_float=_finite)
    except UnicodeDecodeError:
        log.warning("%s: %s is not UTF-8 text; ignored", what, path)
    except RecursionError:
        log.warning("%s: %s is nested too deep; ignored", what, path)
    except ValueError as exc:  # not JSON, NaN or 1e400, an integer of more than 4300 digits
        log.warning("%s: %s is not valid JSON (%s); ignored", what, path, str(exc)[:120])
    return NOTHING


# ----- checking what was read (each raises ValueError: the caller logs once) ---------------------


def preview(value: Any) -> str:
    """A value for a log line: a string's first 40 characters, else only its type (a deep list's
    ``repr`` could itself overflow the stack inside logging)."""
    return repr(value[:40]) if isinstance(value, str) else type(value).__name__


def text(data: dict[str, Any], key: str, *, limit: int = 256, default: str | None = None) -> str:
    """A string of at most ``limit`` printable characters (``default`` when the key is absent)."""
    value = data.get(key, default)
    if not isinstance(value, str) or len(value) > limit or not value.isprintable():
        raise ValueError(f"{key!r} is not a short string")
    return value


def integer(data: dict[str, Any], key: str, low: int, high: int) -> int:
    value = data.get(key)
    if type(value) is not int or not low <= value <= high:
        raise ValueError(f"{key!r} is not an integer from {low} to {high}")
    return value


def number(data: dict[str, Any], key: str, default: float) -> float:
    value = data.get(key, default)
    if type(value) not in (int, float) or not math.isfinite(value):
        raise ValueError(f"{key!r} is not a number")
    return float(value)


def flag(data: dict[str, Any], key: str, default: bool) -> bool:
    value = data.get(key, default)
    if type(value) is not bool:
        raise ValueError(f"{key!r} is not true or false")
    return value
