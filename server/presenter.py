"""Every message a seat is shown, built in one place from what that seat may see (V2, V4, V5).

A seat's board comes from its :class:`~mineduel.shared.rules.views.SeatView`
(``GameState.view``) and, after the end, the :class:`~mineduel.shared.rules.views.FinalReveal`;
record actions from ``MatchHistory.seen`` (the opponent's plant without its cell,
``shows_cell``); results from ``seat_result``. Everything else is room data (names, flags,
deadlines, commitments). Functions only: no state, no I/O; the room operations call them and put
the messages in their :class:`~mineduel.server.effects.Effects`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mineduel.server.effects import Effects, Env
from mineduel.server.match import LiveMatch
from mineduel.shared.fairness import commitments as fairness
from mineduel.shared.rules.engine import Outcome
from mineduel.shared.wire import messages as m
from mineduel.shared.wire.board import board_of, result_of, reveal_of, spectator_board
from mineduel.shared.wire.links import invite_link

if TYPE_CHECKING:
    from mineduel.server.room import Room, Seat


def result(outcome: Outcome, me: int) -> m.Result:
    """The seat-relative result (C4, O9–O12): ``board.result_of``, shared with the verifier."""
    return result_of(outcome, me)


def seat_info(seat: Seat | None, now: float) -> m.SeatInfo | None:
    if seat is None:
        return None
    expired = seat.expired is not None
    if seat.display is None:
        return m.SeatInfo(
            seat.name, seat.peer is not None, seat.ready, seat.rematch,
            None if expired else m.Deadline.of(seat.grace, now), expired,
        )
    return m.SeatInfo(  # §17: an identified seat's name#tag and rating
        seat.name, seat.peer is not None, seat.ready, seat.rematch,
        None if expired else m.Deadline.of(seat.grace, now), expired,
        seat.display, seat.rating, seat.provisional,
    )


def room(room: Room, seat: Seat, env: Env) -> m.Room:
    """The room as ``seat`` sees it: both seats, the status, the next match's commitment (R1)."""
    now = env.now
    match = room.match
    expires = room.expires(env.config)
    info = seat_info(seat, now)
    assert info is not None
    return m.Room(
        room.code, room.status, info, seat_info(room.other(seat), now),
        match.id if match is not None else None, fairness.commitment(room.next_seed),
        None if expires is None else round(expires, 3), round(now, 3), len(room.spectators or ()), room.rated,
        room.watchable,
    )


def room_updates(room_: Room, env: Env, fx: Effects) -> None:
    """A ``room`` message to every connected seat."""
    for seat in room_.seats:
        if seat.peer is not None:
            fx.send(seat.peer, room(room_, seat, env))


def room_info(room: Room, rid: m.RequestId | None) -> m.RoomInfo:
    return m.RoomInfo(
        room.code, room.status, len(room.seats), len(room.seats) < 2, fairness.commitment(room.next_seed), rid,
        room.watchable,  # §16: on the wire only when false (watch-privacy)
    )


def invite(code: str, host: str, port: int, *, tls: bool, pin: str | None) -> str:
    """O1: the link names the server and the room, never a token."""
    if tls:
        return invite_link(host, port, code, tls=True, pin=pin)
    return invite_link(host, port, code)


def presence(seat: Seat, now: float) -> m.Presence:
    """``seat`` as its opponent sees its connection (O12)."""
    connected = seat.peer is not None
    expired = seat.expired is not None
    return m.Presence(
        connected, None if connected or expired else m.Deadline.of(seat.grace, now), expired, round(now, 3)
    )


def rematch_status(room: Room, seat: Seat) -> m.RematchStatus:
    other = room.other(seat)
    return m.RematchStatus(seat.rematch, bool(other and other.rematch))


def match_start(room: Room, me: int) -> m.MatchStart:
    match = room.match
    assert match is not None
    return m.MatchStart(
        room.code, match.id, me, "me" if me == 0 else "opponent", match.first_rule, match.commitment,
        list(match.client_seeds), match.join_order.index(me), match.number, match.turn_seconds,
        match.names[1 - me], round(match.started, 3),
    )


def state(match: LiveMatch, me: int, now: float, events: Sequence[m.SeenAction]) -> m.State:
    """Seat ``me``'s whole view after a change, from its ``SeatView`` only."""
    deadline = match.deadline
    return _state(match, me, match.seq, _deadline(deadline, now), round(now, 3), events)


def _deadline(deadline: float | None, now: float) -> m.Deadline | None:
    """``Deadline.of``: the time and the seconds left (never negative), rounded as the wire shows them."""
    if deadline is None:
        return None
    left = deadline - now
    return m.Deadline(round(deadline, 3), round(left, 3) if left > 0.0 else 0.0)


def _state(
    match: LiveMatch, me: int, seq: int, deadline: m.Deadline | None, server_time: float,
    events: Sequence[m.SeenAction],
) -> m.State:
    """``state`` with what both seats' messages share given (two per action: lean).

    ``deadline`` is ``match.deadline`` as the wire shows it (the view's own ``deadline``).
    """
    global _board0
    view = match.state.view(me, match.deadline)
    to_move = view.to_move
    outcome = view.outcome
    board = board_of(view)
    if me == 0:  # its public layers are the spectators' board of this position (spectate_state)
        _board0 = (match, seq, board)
    # Positional, in the field order of m.State (match_id, seq, seat, phase, to_move, turn,
    # quota_left, deadline, server_time, board, transcript, events, result): a keyword call costs
    # more, twice per action.
    return m.State(
        match.id, seq, me, view.phase._value_,
        None if to_move is None else "me" if to_move == me else "opponent",
        view.turn, view.quota_left, deadline, server_time, board, match.transcript, events,
        None if outcome is None else result(outcome, me),
    )


_timing0: tuple[Effects | None, LiveMatch | None, int, float | None, m.Deadline | None, float] = (None, None, -1, None, None, 0.0)
"""The deadline and server time the players' ``state`` of the last :func:`match_update` showed,
with its Effects, match, ``seq`` and the match's deadline: the spectators' view of that change,
built when the same Effects are performed (PROTOCOL.md §16), shows the same two instead of
rounding them again (``round(x, 3)`` is a decimal conversion: two of them cost about as much as
the rest of the view's fields)."""

_board0: tuple[LiveMatch | None, int, m.Board] = (None, -1, m.Board((), (), (), ()))
"""The board of the last ``state`` built for seat 0, with its match and ``seq``: the spectators'
view of the same position (built right after the players' messages, §16) takes its three public
layers instead of building them again. A cache only: compared by the match object and ``seq``."""


def match_end(room: Room, me: int, record: m.RecordJson | None) -> m.MatchEnd:
    """O13: the result, the full reveal and the record (built once per end when ``record`` is given)."""
    match = room.match
    assert match is not None and match.over and match.ended is not None
    if record is None or record["match_id"] != match.id:
        record = match.record(room=room.code)
    outcome = match.state.outcome()
    assert outcome is not None
    ratings = room.ratings
    return m.MatchEnd(
        match.id, me, result(outcome, me), reveal_of(match.state.reveal(), me), match.state.turn,
        round(match.ended - match.started, 3), record, fairness.commitment(room.next_seed),
        None if ratings is None else ratings.get(me),
    )


def match_update(
    room_: Room, count: int, env: Env, fx: Effects, record: m.RecordJson | None, *, shown: int | None = None,
) -> None:
    """Each seat its own ``state`` after the last ``count`` record actions, and the end once over (V2, O13).

    ``shown``: a connection that was just sent the whole history, these actions included (a
    resume that decided the match): it gets no second ``state`` of the same ``seq``.
    """
    match = room_.match
    pair = room_.match_seats()
    if match is None or pair is None or not count:
        return
    global _timing0
    seq = match.seq
    seen = match.history.seen
    # Built once for both seats (the same values): the deadline, the server time; and for the
    # spectators' view of the same change (spectate_state).
    now = env.now
    deadline = _deadline(match.deadline, now)
    server_time = round(now, 3)
    _timing0 = (fx, match, seq, match.deadline, deadline, server_time)
    first = seq - count
    for rs in (0, 1):
        peer = pair[rs].peer
        if peer is not None and peer != shown:
            events = [seen(first, rs)] if count == 1 else [seen(i, rs) for i in range(first, seq)]
            fx.send(peer, _state(match, rs, seq, deadline, server_time, events))
    if match.state.over:
        for rs in (0, 1):
            peer = pair[rs].peer
            if peer is not None:
                fx.send(peer, match_end(room_, rs, record))
        room_updates(room_, env, fx)


# ----- spectators (PROTOCOL.md §16) -----------------------------------------------------------------


def spectate_state(room: Room, now: float, fx: Effects | None = None) -> m.SpectateState:
    """What every spectator of ``room`` sees now (``now``: the room's clock): public information only (§16).

    ``fx``: the Effects of the change being performed; when their :func:`match_update` built the
    players' ``state`` of this position, the view shows its deadline and server time (:data:`_timing0`).

    Built once per change for all of the room's spectators. Before the end it reads only the
    room's names and presence, the position's phase, seat to move and turn, and the public layers
    of seat 0's board — through :func:`spectator_board` from seat 0's ``SeatView`` (which never
    reads the view's mines), or the same three layers of the ``state`` just built for seat 0
    (:data:`_board0`: its ``numbers``, ``opened_by``, ``markers``, never ``my_mines``). The
    result and the O13 reveal are added once the match is over.
    """
    match = room.match
    if match is None:
        players = [m.SpectatePlayer(s.name, s.peer is not None, None) for s in room.seats]
        return m.SpectateState(
            room.code, room.status, len(room.spectators or ()), players, None, room.number, 0, None, None, 0, None,
            round(now, 3), None, None, None,
        )
    state = match.state
    over = state.over
    seq = match.seq  # a property, as is over: read once
    at = match.deadline
    players = _spectate_players(room, match, over, now)
    known, known_seq, board0 = _board0
    if known is match and known_seq == seq:
        board = m.SpectateBoard(board0.numbers, board0.opened_by, board0.markers)
    else:
        board = spectator_board(state.view(0, at))
    result = reveal = None
    if over:
        outcome = state.outcome()
        assert outcome is not None
        result = result_of(outcome, 0)
        reveal = reveal_of(state.reveal(), 0)
    timing = _timing0
    if fx is not None and timing[0] is fx and timing[1] is match and timing[2] == seq and timing[3] == at:
        deadline, server_time = timing[4], timing[5]
    else:
        deadline, server_time = _deadline(at, now), round(now, 3)
    # Positional, in the field order of m.SpectateState: built once per action of a watched room.
    return m.SpectateState(
        room.code, "finished" if over else "playing", len(room.spectators or ()), players, match.id, match.number,
        seq, state.phase._value_, state.to_move, state.turn, None if over else deadline,
        server_time, board, result, reveal,
    )


def _spectate_players(room: Room, match: LiveMatch, over: bool, now: float) -> list[m.SpectatePlayer]:
    """Both match seats as spectators see them, by match seat.

    While both seats of the room are connected the list depends on nothing that changes with a
    move (the record names, both connected, no grace), so the same list (the same objects) is
    kept on the room (``Room.spectate_players``) and handed to every view until a seat, a
    connection or the match changes: ``net.line`` then reuses the encoded players too.
    """
    seats = room.seats
    if len(seats) == 2:
        first, second = seats
        if first.peer is not None and second.peer is not None:
            kept = room.spectate_players
            if kept is not None and kept[0] is match and kept[1] is first and kept[2] is second:
                return kept[3]
            names, sids = match.names, match.players
            players = [_spectate_player(room, sids[0], names[0], over, now), _spectate_player(room, sids[1], names[1], over, now)]
            room.spectate_players = (match, first, second, players)
            return players
    names, sids = match.names, match.players
    return [_spectate_player(room, sids[0], names[0], over, now), _spectate_player(room, sids[1], names[1], over, now)]


def _spectate_player(room: Room, sid: int, name: str, over: bool, now: float) -> m.SpectatePlayer:
    """One match seat as spectators see it: its record name, connected or not, the O12 grace while away."""
    for seat in room.seats:
        if seat.sid == sid:
            if seat.peer is not None:
                return m.SpectatePlayer(name, True, None)
            if over or seat.expired is not None:
                return m.SpectatePlayer(name, False, None)
            return m.SpectatePlayer(name, False, m.Deadline.of(seat.grace, now))
    return m.SpectatePlayer(name, False, None)  # left after the end (O13): the record's name, not connected


def live_rooms(rooms: Sequence[Room], rid: m.RequestId | None) -> m.LiveRooms:
    """The ``live_rooms`` reply (§16): each room's public facts only — its code, the players' names
    by match seat, the match number, the turn and how many watch (what its ``spectate_state`` shows)."""
    listed = []
    for room in rooms:
        match = room.match
        assert match is not None
        listed.append(m.LiveRoom(room.code, tuple(match.names), match.number, match.state.turn, len(room.spectators or ())))
    return m.LiveRooms(listed, rid)


def spectator_updates(room: Room, env: Env, fx: Effects) -> None:
    """One ``spectate_state`` (built once) to every spectator of ``room``."""
    watching = room.spectators
    if watching:
        message = spectate_state(room, env.now)
        for peer in watching:
            fx.send(peer, message)


def count_updates(room: Room, env: Env) -> Effects:
    """A spectator stopped watching: the players' ``room`` and the others' view show the new count."""
    fx = Effects()
    room_updates(room, env, fx)
    spectator_updates(room, env, fx)
    return fx
