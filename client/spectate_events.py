"""What a spectator is told happened (issue 19): two public views compared, named as events.

A spectator receives no action list, only the room's public view after every change
(``spectate_state``, PROTOCOL.md §16). This module compares the view it last showed with the new
one and names what changed — an explore (and how many cells it opened), a plant *somewhere hidden*
(seen only as the phase moving on: the view has no mine layer, V2), a flag placed or taken back, a
turn ended or timed out (O5), the server's move in the opening (O4), a player away or back (O12),
the end (O11, O13) and the next match (O14). It is pure (no pygame, no clock): the screen words the
events in the player's language with the player names it has at that moment.

A view that covers several actions (a slow spectator is sent only the newest, §8) still yields every
reveal and marker change; only the order of events inside one turn is then the rules' order
(explore, plant, markers, end), not necessarily the players'.
"""

from __future__ import annotations

from dataclasses import dataclass

from mineduel.shared.wire import board as wire_board
from mineduel.shared.wire.messages import SpectateState

__all__ = ["WatchEvent", "changes", "winner_seat"]

#: A view this close to (or past) the last deadline came from the deadline, not from the player (O4, O5).
DEADLINE_SLACK = 0.05


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One thing that happened: ``key`` under ``watch.event.``; ``seat`` who did it (its name is
    ``name`` in the text), ``cell`` where (``cell`` in the text), ``count`` how many cells."""

    key: str
    seat: int | None = None
    cell: int | None = None
    count: int = 0


def winner_seat(state: SpectateState) -> int | None:
    """The winning seat of a finished match: ``result`` is spelled as seat 0 reads it (§16)."""
    result = state.result
    if result is None or result.winner is None:
        return None
    return 0 if result.winner == "me" else 1


def _timed_out(prev: SpectateState, new: SpectateState) -> bool:
    deadline = prev.deadline
    return deadline is not None and new.server_time >= deadline.at - DEADLINE_SLACK


def _cells(mask: int) -> list[int]:
    return [c for c in range(64) if mask >> c & 1]


def changes(prev: SpectateState | None, new: SpectateState) -> list[WatchEvent]:
    """The events between the view ``prev`` (``None``: the first one) and ``new``, oldest first."""
    if prev is None:
        return [WatchEvent("watching")]
    events: list[WatchEvent] = []
    for seat, (before, after) in enumerate(zip(prev.players, new.players, strict=False)):
        if prev.match_id == new.match_id and before.name == after.name and before.connected != after.connected:
            events.append(WatchEvent("back" if after.connected else "away", seat))
    if new.match_id != prev.match_id:
        if new.match_id is not None:
            events.append(WatchEvent("match_start", new.to_move, count=new.number))
        return events
    if new.board is None or prev.board is None or (new.seq == prev.seq and new.result == prev.result):
        return events
    events += _moves(prev, new)
    if new.result is not None and prev.result is None:
        reason = new.result.reason
        winner = winner_seat(new)
        loser = None if winner is None else 1 - winner
        ko = None if new.reveal is None or new.reveal.ko_cell is None else new.reveal.ko_cell[0] * 8 + new.reveal.ko_cell[1]
        if reason == "ko":
            events.append(WatchEvent("end.ko", loser, ko))
        elif reason in ("resign", "disconnect"):
            events.append(WatchEvent(f"end.{reason}", loser))
        elif reason == "void":
            events.append(WatchEvent("end.void"))
        else:  # O9: nothing safe left, the markers decide
            events.append(WatchEvent("end.score", winner))
    return events


def _moves(prev: SpectateState, new: SpectateState) -> list[WatchEvent]:
    """Reveals, plants, markers and the turn passing between two views of one match."""
    assert prev.board is not None and new.board is not None
    mask = wire_board.mask_of
    events: list[WatchEvent] = []
    mover = prev.to_move
    order = [0, 1] if mover in (None, 0) else [1, 0]  # the seat that was to move acted first
    timed_out = _timed_out(prev, new)
    numbers = wire_board.numbers_of(new.board.numbers)
    for seat in order:
        letter = "m" if seat == 0 else "o"
        opened = mask(new.board.opened_by, letter) & ~mask(prev.board.opened_by, letter)
        if opened:
            cells = _cells(opened)
            start = next((c for c in cells if numbers[c] == 0), cells[0]) if len(cells) > 1 else cells[0]
            auto = seat == mover and prev.phase == "open_explore" and timed_out
            key = "auto_explored" if auto else "explored" if len(cells) == 1 else "explored_many"
            events.append(WatchEvent(key, seat, start, len(cells)))
        if seat == mover:
            events += _plant(prev, new, seat, timed_out)
        placed = mask(new.board.markers, letter) & ~mask(prev.board.markers, letter)
        removed = mask(prev.board.markers, letter) & ~mask(new.board.markers, letter) & ~mask(new.board.numbers, "012345678")
        events += [WatchEvent("flagged", seat, c) for c in _cells(placed)]
        events += [WatchEvent("unflagged", seat, c) for c in _cells(removed)]
        passed = new.to_move != seat or new.turn != prev.turn
        if seat == mover and new.result is None and prev.phase in ("explore", "plant", "end_wait") and passed:
            events.append(WatchEvent("timeout" if timed_out else "ended", seat))
    return events


def _plant(prev: SpectateState, new: SpectateState, seat: int, timed_out: bool) -> list[WatchEvent]:
    """A plant is never seen, only the phase moving past it: the opening's plant step (O4: the server
    plants when the time runs out), or a normal turn going from plant on to the markers (F2)."""
    if new.result is not None and new.result.reason in ("resign", "disconnect", "void"):
        return []
    if prev.phase == "open_plant" and (new.phase != "open_plant" or new.to_move != seat):
        return [WatchEvent("auto_planted" if timed_out else "planted", seat)]
    if prev.phase in ("explore", "plant"):
        same_turn = new.to_move == seat and new.turn == prev.turn
        if same_turn and new.phase == "end_wait":
            return [WatchEvent("planted", seat)]
        if not same_turn and not timed_out and new.phase != "over":
            return [WatchEvent("planted", seat)]  # ended by the player: end turn needs the plant first (F2)
    return []
