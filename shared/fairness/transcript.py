"""The whole-match transcript of fairness version 2 (RULES.md R3c; outside verifiers reimplement this).

Version 1 chained only the plants' commitments, so an operator could rewrite every explore,
marker, timeout or time of a finished match and the record would still agree with itself. In
version 2 every accepted record action, with its time and the deadline in force after it, is
folded into a running hash, and every ``state`` the server sends carries the hash at its ``seq``:
a player who keeps the last one (the witness, RECORD.md) holds the server to the whole match up
to that point.

Encoding (all text UTF-8, all hex lowercase, integers in plain decimal with a leading ``-`` only
if negative)::

    h_0     = hex(SHA3-256("mine-duel/match/2|{match_id}|{commitment}|{seed_first_joined}|{seed_second}"
                           "|{nonce}|{first_player}|{join_order_0},{join_order_1}|{turn_ms}|{start_ms}|{previous}"))
    h_(i+1) = hex(SHA3-256("mine-duel/step/2|{h_i}|{i}|{seat}|{type}|{target}|{at_ms}|{auto}|{deadline_ms}"))

``first_player`` is ``draw`` or ``swap``; ``join_order`` is the record's ``fairness.join_order``;
``previous`` is the final transcript hash of the room's previous match (a rematch, O14) or ``-``
for a room's first match. ``i`` is the action's index in the record (its ``seq``); ``seat`` 0/1
as in the record; ``type`` the record's action type; ``target`` is ``{row},{col}`` for
``explore``, ``flag`` and ``unflag``, the plant's 64-digit mine commitment (R3b) for ``plant`` —
never its cell — and ``-`` for every other type; ``auto`` is ``1`` for an automatic action
(record ``"auto": true``) else ``0``. Times are integer milliseconds of the server clock:
``at_ms`` = the action's ``at`` × 1000 rounded to the nearest integer, ``start_ms`` the same of
``times.clock_started`` and ``turn_ms`` of ``times.turn_seconds``. ``deadline_ms`` is the turn
deadline in force after the action, or ``-`` once the match is over: it starts at
``start_ms + turn_ms`` and becomes ``at_ms + turn_ms`` after every action that starts the next
opening step or a new normal turn (O4/O5, :func:`mineduel.shared.rules.events.restarts_deadline`);
other actions leave it unchanged.

Pure: hashing only, no clock, no I/O.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

__all__ = [
    "MATCH_DOMAIN",
    "STEP_DOMAIN",
    "VERSION",
    "match_start",
    "millis",
    "step",
    "target_of",
]

VERSION = 2
"""The fairness version whose transcript this module computes (records say ``fairness.version``)."""

MATCH_DOMAIN = "mine-duel/match/2"
STEP_DOMAIN = "mine-duel/step/2"

_CELL_TYPES = frozenset({"explore", "flag", "unflag"})


def millis(seconds: float) -> int:
    """Server-clock seconds as the transcript's integer milliseconds (nearest; records keep 3 decimals)."""
    return round(seconds * 1000)


def match_start(
    match_id: str,
    commitment: str,
    client_seeds: Sequence[str],
    nonce: int,
    first_player: str,
    join_order: Sequence[int],
    turn_ms: int,
    start_ms: int,
    previous: str | None,
) -> str:
    """``h_0``: binds the match to its seeds, its seat assignment, its clock and the room's previous match."""
    if len(client_seeds) != 2 or len(join_order) != 2:
        raise ValueError("a version 2 match has two client seeds and a join order of two seats")
    text = (
        f"{MATCH_DOMAIN}|{match_id}|{commitment}|{client_seeds[0]}|{client_seeds[1]}|{nonce}|{first_player}"
        f"|{join_order[0]},{join_order[1]}|{turn_ms}|{start_ms}|{'-' if previous is None else previous}"
    )
    return hashlib.sha3_256(text.encode("utf-8")).hexdigest()


def target_of(kind: str, cell: int | None, commitment: str | None) -> str:
    """The ``target`` field: the cell of a public cell action, a plant's commitment, else ``-``."""
    if kind == "plant":
        if commitment is None:
            raise ValueError("a plant is folded in by its commitment")
        return commitment
    if kind in _CELL_TYPES:
        if cell is None:
            raise ValueError(f"a {kind} has a cell")
        return f"{cell >> 3},{cell & 7}"
    return "-"


def step(
    previous: str, seq: int, seat: int, kind: str, target: str, at_ms: int, auto: bool, deadline_ms: int | None
) -> str:
    """``h_(i+1)`` from ``h_i`` and action ``i`` (see the module docstring for every field)."""
    text = (
        f"{STEP_DOMAIN}|{previous}|{seq}|{seat}|{kind}|{target}|{at_ms}|{1 if auto else 0}"
        f"|{'-' if deadline_ms is None else deadline_ms}"
    )
    return hashlib.sha3_256(text.encode("utf-8")).hexdigest()
