"""The lobby's and the rooms' operations are plain functions of a room and an ``Env``: they
return their effects (messages per connection, writes, timers) and touch no outbox, storage or
clock — so every rule here is checked without a server around it (issue 13, the shape of
boardgame.io's master). The shell that performs effects is covered by test_server_rooms.py.
"""

from __future__ import annotations

import random

import pytest

from mineduel.server.config import Config
from mineduel.server.effects import Effects, Env, StoreActions, StoreRoom
from mineduel.server.lobby import Lobby, PeerInfo
from mineduel.server.room import Room
from mineduel.shared.rules.bitboard import cells
from mineduel.shared.rules.engine import ActionType, Phase
from mineduel.shared.wire import messages as m
from mineduel.shared.wire.codec import ProtocolError

START = 1_700_000_000.0


class World:
    """A lobby with two seated connections (1 and 2) and a seeded entropy source, no server."""

    def __init__(self, seed: int = 3) -> None:
        self.rng = random.Random(seed)
        self.now = START
        self.config = Config()
        self.lobby = Lobby()
        for peer in (1, 2):
            self.lobby.peers[peer] = PeerInfo(peer, f"10.0.0.{peer}")

    def env(self) -> Env:
        return Env(self.now, self.now, self.rng.randbytes, self.config)

    def seated(self) -> Room:
        self.lobby.create(self.env(), 1, m.CreateRoom("Ann", "a"))
        room, _ = self.lobby.seated(1)
        self.lobby.join(self.env(), 2, room, m.Join(room.code, "Bob", "b"))
        return room

    def started(self) -> Room:
        room = self.seated()
        for peer in (1, 2):
            _, seat = self.lobby.seated(peer)
            room.ready(self.env(), seat, ready=True, seed=None)
        assert room.match is not None
        return room

    def peer_of(self, room: Room, record_seat: int) -> int:
        peer = room.room_seat(record_seat).peer
        assert peer is not None
        return peer


def sent(fx: Effects) -> list[tuple[int, str]]:
    return [(peer, "close" if msg is None else msg.TYPE.value) for peer, msg in fx.out]


def test_o1_create_returns_the_creators_messages_and_one_room_write() -> None:
    """O1: creating a room says so to its creator only, stages the room and nothing else."""
    world = World()
    fx = world.lobby.create(world.env(), 1, m.CreateRoom("Ann", "seed-a", "c1"))
    assert sent(fx) == [(1, "room_created"), (1, "room")]
    created = fx.out[0][1]
    assert isinstance(created, m.RoomCreated) and created.id == "c1" and len(created.token) == 64
    assert [type(w) for w in fx.writes] == [StoreRoom]
    assert fx.arm == {}


def test_o2_join_tells_both_seats_and_stages_the_room() -> None:
    world = World()
    world.lobby.create(world.env(), 1, m.CreateRoom("Ann"))
    room, _ = world.lobby.seated(1)
    fx = world.lobby.join(world.env(), 2, room, m.Join(room.code, "Bob"))
    assert sent(fx) == [(2, "joined"), (1, "room"), (2, "room")]
    assert [type(w) for w in fx.writes] == [StoreRoom] and list(fx.touched) == [room.code]


def test_o3_both_ready_start_a_match_with_a_start_and_a_state_for_each_seat() -> None:
    """O3: the second ready starts the match: match_start and state to each seat, the turn timer armed."""
    world = World()
    room = world.seated()
    _, first = world.lobby.seated(1)
    assert sent(room.ready(world.env(), first, ready=True, seed="s1")) == [(1, "room"), (2, "room")]
    _, second = world.lobby.seated(2)
    fx = room.ready(world.env(), second, ready=True, seed=None)
    kinds = sent(fx)
    for peer in (1, 2):
        assert [k for p, k in kinds if p == peer] == ["match_start", "state", "room"]
    assert list(fx.arm.values()) == [(room, None)]
    match = room.match
    assert match is not None and match.deadline == START + world.config.turn_seconds  # O4


def test_a1_an_action_returns_each_seats_state_and_its_record_row_only() -> None:
    """A1, V2: an accepted explore gives both seats a state built from their own view, and stages
    the new record row without rewriting the room."""
    world = World()
    room = world.started()
    match = room.match
    assert match is not None
    mover = world.peer_of(room, 0)
    _, seat = world.lobby.seated(mover)
    safe = next(cells(match.state.explorable(0) & ~match.state.any_mine))
    fx = room.act(world.env(), seat, ActionType.EXPLORE, safe, match_id=None, seq=None)
    assert sorted(sent(fx)) == [(1, "state"), (2, "state")]
    assert [type(w) for w in fx.writes] == [StoreActions]
    states = {peer: msg for peer, msg in fx.out if isinstance(msg, m.State)}
    assert {s.seat for s in states.values()} == {0, 1}
    assert all(list(s.events[0].cell or ()) == list(divmod(safe, 8)) for s in states.values())  # explores are public


def test_v5_the_opponents_plant_reaches_a_seat_without_its_cell() -> None:
    """V5: in the opening, seat 0's plant shows its cell to seat 0 and not to seat 1."""
    world = World()
    room = world.started()
    match = room.match
    assert match is not None
    for _ in range(2):  # F1 steps 1 and 2: both explore a safe cell
        rs = match.state.to_move
        assert rs is not None
        _, seat = world.lobby.seated(world.peer_of(room, rs))
        safe = next(cells(match.state.explorable(rs) & ~match.state.any_mine))
        room.act(world.env(), seat, ActionType.EXPLORE, safe, match_id=None, seq=None)
    assert match.state.phase is Phase.OPEN_PLANT and match.state.to_move == 0
    _, seat = world.lobby.seated(world.peer_of(room, 0))
    fx = room.act(world.env(), seat, ActionType.PLANT, 9, match_id=None, seq=None)
    seen = {msg.seat: msg.events[0] for _, msg in fx.out if isinstance(msg, m.State)}
    assert list(seen[0].cell or ()) == [1, 1] and seen[1].cell is None
    assert seen[0].commitment == seen[1].commitment is not None  # R3b: both see the commitment


def test_f4_a_refused_action_raises_and_changes_nothing() -> None:
    """F4: the seat not to move is refused before anything changes: no effects exist, the room's blob is the same."""
    world = World()
    room = world.started()
    before = room.to_blob()
    _, waiting = world.lobby.seated(world.peer_of(room, 1))
    with pytest.raises(ProtocolError) as refused:
        room.act(world.env(), waiting, ActionType.EXPLORE, 0, match_id=None, seq=None)
    assert refused.value.code == "not_your_turn"
    assert room.to_blob() == before


def test_o4_settle_takes_the_opening_auto_move_when_the_deadline_is_due() -> None:
    """O4, O6: settling at the deadline records the timeout and the auto-move, and each seat is told."""
    world = World()
    room = world.started()
    match = room.match
    assert match is not None
    world.now = START + world.config.turn_seconds
    fx = room.settle(world.env())
    assert sorted(sent(fx)) == [(1, "state"), (2, "state")]
    actions = [e.action for e in next(msg for _, msg in fx.out if isinstance(msg, m.State)).events]
    assert actions == ["timeout", "explore"] and match.state.to_move == 1
    assert match.deadline == world.now + world.config.turn_seconds


def test_o6_settle_before_any_deadline_has_no_effects() -> None:
    world = World()
    room = world.started()
    world.now = START + 5.0
    fx = room.settle(world.env())
    assert fx.out == [] and fx.writes == [] and fx.arm == {}
