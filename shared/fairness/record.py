"""Match records (RECORD.md, format ``mine-duel-record/1``): reading, checking, writing.

The reader is strict about structure (an invalid record names its first problem) and leaves
rule legality to the engine: a refused action keeps the record valid (RECORD.md).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from mineduel.shared.rules.bitboard import COLS, ROWS
from mineduel.shared.rules.engine import CELL_ACTIONS, Action, ActionType, GameState, Refusal, Variant

FORMAT = "mine-duel-record/1"


class InvalidRecord(ValueError):
    """The record breaks RECORD.md's structure; the message names what is wrong."""


@dataclass(frozen=True, slots=True)
class Record:
    """A parsed record: the variant, the actions in order, and every other key kept as is."""

    variant: Variant
    actions: tuple[Action, ...]
    extra: Mapping[str, Any] = field(default_factory=dict)
    action_extras: tuple[Mapping[str, Any], ...] = ()


def strict_json(text: str | bytes | bytearray, error: type[ValueError]) -> Any:
    """JSON as RECORD.md means it: UTF-8 only (``json.loads`` would guess UTF-16/32), no ``NaN`` or
    ``Infinity``, no nesting deep enough to exhaust the stack; anything else raises ``error``
    naming the problem. Records and witnesses are read through this one reader."""

    def reject_constant(name: str) -> Any:
        raise error(f"not JSON: {name} is not a JSON value")

    try:
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8")
        return json.loads(text, parse_constant=reject_constant)
    except error:
        raise
    except (ValueError, UnicodeDecodeError) as exc:
        raise error(f"not JSON: {exc}") from None
    except RecursionError:
        raise error("not JSON this reader accepts: nested too deeply") from None


def loads(text: str | bytes) -> Record:
    """Parse and check a record; raise :class:`InvalidRecord` naming the problem."""
    return from_json(strict_json(text, InvalidRecord))


def from_json(data: Any) -> Record:
    """Check an already-decoded record (see :func:`loads`)."""
    if not isinstance(data, dict):
        raise InvalidRecord("the record is not a JSON object")
    if "format" not in data:
        raise InvalidRecord(f"'format' is missing (expected {FORMAT!r})")
    if data["format"] != FORMAT:
        raise InvalidRecord(f"'format' is {data['format']!r}, expected exactly {FORMAT!r}")
    variant_name = data.get("variant")
    if variant_name not in ("cpu", "online"):
        raise InvalidRecord(f"'variant' is {variant_name!r}, expected 'cpu' or 'online'")
    if "actions" not in data:
        raise InvalidRecord("'actions' is missing")
    raw_actions = data["actions"]
    if not isinstance(raw_actions, list):
        raise InvalidRecord("'actions' is not a list")
    actions = []
    extras = []
    for index, raw in enumerate(raw_actions):
        actions.append(_action(index, raw))
        extras.append({k: v for k, v in raw.items() if k not in ("seat", "type", "cell")})
    rest = {k: v for k, v in data.items() if k not in ("format", "variant", "actions")}
    return Record(Variant(variant_name), tuple(actions), rest, tuple(extras))


def is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _action(index: int, raw: Any) -> Action:
    where = f"action {index}"
    if not isinstance(raw, dict):
        raise InvalidRecord(f"{where} is not an object")
    seat = raw.get("seat")
    if not is_int(seat) or seat not in (0, 1):
        raise InvalidRecord(f"{where}: 'seat' is {seat!r}, expected the integer 0 or 1")
    kind_name = raw.get("type")
    try:
        kind = ActionType(str(kind_name))
    except ValueError:
        raise InvalidRecord(f"{where}: unknown 'type' {kind_name!r}") from None
    if kind not in CELL_ACTIONS:
        return Action(seat, kind)
    cell = raw.get("cell")
    if not (isinstance(cell, list) and len(cell) == 2 and all(is_int(v) for v in cell)):
        raise InvalidRecord(f"{where}: '{kind}' needs 'cell' as [row, col] integers, got {cell!r}")
    row, col = cell
    if not (0 <= row < ROWS and 0 <= col < COLS):
        raise InvalidRecord(f"{where}: cell {cell} is off the 8x8 board")
    return Action(seat, kind, row * COLS + col)


def action_json(action: Action, **extra: Any) -> dict[str, Any]:
    """One record action; ``extra`` carries optional keys such as ``auto`` and ``at``."""
    out: dict[str, Any] = {"seat": action.seat, "type": str(action.type)}
    if action.cell is not None:
        out["cell"] = list(divmod(action.cell, COLS))
    out.update(extra)
    return out


def dumps(
    variant: Variant | str,
    actions: Iterable[Action | Mapping[str, Any]],
    **extra: Any,
) -> str:
    """A record as JSON text; actions may be :class:`Action`s or ready record dicts."""
    items = [a if isinstance(a, Mapping) else action_json(a) for a in actions]
    data: dict[str, Any] = {"format": FORMAT, "variant": str(Variant(variant)), "actions": items}
    data.update(extra)
    return json.dumps(data, ensure_ascii=False, indent=1)


def run(record: Record) -> tuple[GameState, list[dict[str, Any]]]:
    """Replay ``record`` through the engine; the steps as RECORD.md describes them."""
    state = GameState(record.variant)
    steps: list[dict[str, Any]] = []
    for action in record.actions:
        result = state.apply(action)
        step: dict[str, Any] = {"ok": not isinstance(result, Refusal)}
        if isinstance(result, Refusal):
            step["error"] = str(result)
        step["phase"] = str(state.phase)
        step["to_move"] = state.to_move
        step["turn"] = state.turn
        steps.append(step)
    return state, steps


def result_json(state: GameState) -> dict[str, Any]:
    """RECORD.md's ``result`` object."""
    outcome = state.outcome()
    if outcome is None:
        return {"over": False, "winner": None, "reason": None, "scores": None}
    return {
        "over": True,
        "winner": outcome.winner,
        "reason": str(outcome.reason),
        "scores": list(outcome.scores) if outcome.scores is not None else None,
    }


def cells_json(state: GameState) -> list[dict[str, Any]]:
    """RECORD.md's ``cells``: the whole truth, 64 entries in ``row*8+col`` order."""
    out = []
    for cell in range(ROWS * COLS):
        b = 1 << cell
        revealed = bool(state.revealed & b)
        out.append(
            {
                "revealed": revealed,
                "by": state.revealer(cell),
                "number": state.number(cell) if revealed else None,
                "marker": 0 if state.markers[0] & b else 1 if state.markers[1] & b else None,
                "mines": [s for s in (0, 1) if state.mines[s] & b],
            }
        )
    return out


def finite(value: float) -> bool:
    """True for a finite number (used by tools that check ``times``)."""
    return math.isfinite(value)
