"""What a bot may send (docs/PROTOCOL.md §14): its legal requests from its own view, and ``hello``.

The cells come from :meth:`~mineduel.shared.rules.views.SeatView.targets`, the one definition of
each input mode's legal cells. An explore may still end in a KO: the view has no opponent mines.
"""

from __future__ import annotations

from mineduel.shared.rules.bitboard import cells
from mineduel.shared.rules.engine import ActionType, Phase
from mineduel.shared.rules.views import SeatView
from mineduel.shared.wire.messages import Hello, MatchAction
from mineduel.shared.wire.names import PROTOCOL_VERSION, ClientType

_MODES = (
    (ActionType.EXPLORE, ClientType.EXPLORE),
    (ActionType.PLANT, ClientType.PLANT),
    (ActionType.FLAG, ClientType.FLAG),
    (ActionType.UNFLAG, ClientType.UNFLAG),
)


def legal_moves(view: SeatView) -> list[MatchAction]:
    """Every request the rules allow ``view``'s seat right now, from its view alone, cells ascending."""
    if view.to_move != view.seat:
        return []
    out = [MatchAction(kind, cell) for action, kind in _MODES for cell in cells(view.targets(action))]
    if view.phase is Phase.END_WAIT:
        out.append(MatchAction(ClientType.END_TURN))
    return out


def hello(client: str = "mineduel-bot/1") -> Hello:
    """The first message a client sends."""
    return Hello(PROTOCOL_VERSION, client)
