"""A seat's view read back from a ``state`` message as tests hold it (the JSON object a harness or
a raw wire recorded), and a bot's request spelled as a JSON object with extra fields.

Thin on purpose: the reading is ``messages.State.parse`` + ``board.view_of`` (what every client
does), so a test that plays from a recorded ``state`` checks the real client path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mineduel.shared.rules.views import SeatView
from mineduel.shared.wire import board, bots, messages


def view_of_state(state: Mapping[str, Any]) -> SeatView:
    """The :class:`SeatView` a client rebuilds from one ``state`` JSON object."""
    return board.view_of(messages.State.parse(state))


def legal_moves_of(state: Mapping[str, Any]) -> list[messages.MatchAction]:
    """``bots.legal_moves`` for the seat that received ``state``: cells ascending, per mode."""
    return bots.legal_moves(view_of_state(state))


def move_json(move: messages.MatchAction, **extra: Any) -> dict[str, Any]:
    """``move`` as its JSON object, then ``extra`` in the order given (the old ``Move.message``)."""
    return {**move.wire(), **extra}
