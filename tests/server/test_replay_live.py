"""Replay equals live (issue 19 Tests, 2nd point): ``mine-duel replay FILE --view 0|1 --at N`` shows,
step for step, exactly what that seat received live from a real server over loopback sockets.

tests/shared/test_replay_views.py checks score-ended matches on the in-process core; here random
bots play whole rooms against ``start_server`` over TCP: every ending (KO, score, resignation,
disconnection, void), opening and turn timeouts (O4, O5), a seat that drops and resumes (its
full-history ``state``, O12), and rematches in the same room (O14). For each match, every ``state``
message a seat received, on each of its connections, read back as a view, is the replay's view of
that seat at that ``seq`` (V2: nothing more, nothing less), and every position at which the seat
was connected was sent to it. The record is the published one (``get_record``).
"""

from __future__ import annotations

import contextlib
import json
import random
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from twisted.internet.task import Clock, deferLater

from mineduel.server.client import LineClient, ServerError, connect
from mineduel.server.config import Config
from mineduel.server.service import start_server
from mineduel.shared.cli import replay
from mineduel.shared.fairness.record import from_json
from mineduel.shared.rules.notation import view_to_ascii
from mineduel.shared.wire import bots
from mineduel.shared.wire import messages as m
from mineduel.shared.wire.board import view_of


def _reactor() -> Any:
    from twisted.internet import reactor

    return reactor


async def _until(condition: Any, turns: int = 20_000) -> None:
    """Let the reactor run, one turn at a time (no sleeping), until ``condition()`` holds."""
    for _ in range(turns):
        if condition():
            return
        await deferLater(_reactor(), 0, lambda: None)
    raise AssertionError("condition never held")


class Room:
    """Two seats of one room on a real server; each seat's connections in order (a resume adds one)."""

    def __init__(self, handle: Any, clock: Clock, rng: random.Random) -> None:
        self.handle = handle
        self.clock = clock
        self.rng = rng
        self.code = ""
        self.conns: dict[int, list[LineClient]] = {}  # sid -> every connection it used
        self.tokens: dict[int, str] = {}
        self.steps: list[tuple[str, int, tuple[bool, bool]]] = []  # (match id, seq, connected by record seat)

    async def client(self, name: str) -> LineClient:
        c = await connect(_reactor(), "127.0.0.1", self.handle.port, name)
        await c.hello()
        return c

    @property
    def server_room(self) -> Any:
        return self.handle.core.rooms.rooms[self.code]

    def sid(self, seat: int) -> int:
        return int(self.server_room.match.players[seat])

    def conn(self, seat: int) -> LineClient:
        return self.conns[self.sid(seat)][-1]

    def note(self) -> None:
        """What the server just did, for the coverage check: the match, its seq and who is connected."""
        room = self.server_room
        match = room.match
        connected = tuple(room.seat(match.players[s]).peer is not None for s in (0, 1))
        step = (match.id, match.seq, connected)
        if not self.steps or self.steps[-1] != step:
            self.steps.append(step)

    async def settled(self) -> None:
        """Every connected seat has seen the server's current seq (its ``state`` arrived)."""
        match = self.server_room.match
        for seat in (0, 1):
            if self.server_room.seat(match.players[seat]).peer is not None:
                c = self.conn(seat)
                await _until(lambda c=c: (s := c.last(m.State)) is not None and s.match_id == match.id
                             and s.seq == match.seq)
        self.note()


async def _open(handle: Any, clock: Clock, rng: random.Random) -> Room:
    room = Room(handle, clock, rng)
    a, b = await room.client("ann/1"), await room.client("bob/1")
    created = await a.request(m.CreateRoom(name="Ann", client_seed="ann"))
    assert isinstance(created, m.RoomCreated)
    room.code = created.room
    joined = await b.request(m.Join(room.code, name="Bob", client_seed="bob"))
    assert isinstance(joined, m.Joined) and joined.token is not None
    first, second = room.server_room.seats
    room.conns = {first.sid: [a], second.sid: [b]}
    room.tokens = {first.sid: created.token, second.sid: joined.token}
    await a.request(m.Ready())
    await b.request(m.Ready())
    await room.settled()
    return room


async def _drop(room: Room, seat: int) -> None:
    c = room.conn(seat)
    c.abort()
    await c.lost
    await _until(lambda: room.server_room.seat(room.sid(seat)).peer is None)
    room.note()


async def _resume(room: Room, seat: int) -> None:
    sid = room.sid(seat)
    c = await room.client(f"seat{seat}/2")
    room.conns[sid].append(c)
    await c.request(m.Resume(room.code, room.tokens[sid]))
    await room.settled()


async def _wait(room: Room, seconds: float) -> None:
    room.clock.advance(seconds)
    await deferLater(_reactor(), 0, lambda: None)  # the turn's commit, then the messages
    await room.settled()


async def _play(room: Room, endings: Counter[str], *, careful: bool = False) -> m.RecordJson:
    """One match to its end with random public play and interruptions; its published record.

    ``careful``: explores avoid every mine and interruptions are rare, so the match reaches the score end (O9)."""
    rng = room.rng
    grace = room.handle.core.config.grace_seconds
    turn = room.handle.core.config.turn_seconds
    match = room.server_room.match
    for _ in range(600):
        if match.over:
            break
        roll = rng.random() * (10.0 if careful else 1.0)
        seat = match.state.to_move
        if roll < 0.01:
            with contextlib.suppress(ServerError):  # O11: either seat, whoever's turn it is
                await room.conn(rng.randrange(2)).request(m.Resign())
            await room.settled()
        elif roll < 0.03:  # O12: a drop, turns running on, a resume within the grace
            away = rng.randrange(2)
            await _drop(room, away)
            await _wait(room, rng.uniform(1.0, 50.0))
            await _resume(room, away)
        elif roll < 0.035:  # O12: the grace runs out with the opponent connected
            await _drop(room, rng.randrange(2))
            await _wait(room, grace + 1.0)
        elif roll < 0.04:  # O12: both away until both graces ran out
            await _drop(room, 0)
            await _drop(room, 1)
            await _wait(room, grace + 1.0)
        elif roll < 0.07:  # O4/O5
            await _wait(room, turn + 0.5)
        else:
            state = room.conn(seat).last(m.State)
            assert state is not None
            view = view_of(state)
            moves = bots.legal_moves(view)
            if not moves:
                await _wait(room, turn + 0.5)
                continue
            move = rng.choice(moves)
            if move.type.value == "explore" and (careful or rng.random() < 0.7):  # fewer KOs, longer matches
                mines = room.server_room.match.state.any_mine
                safe = [mv for mv in moves if mv.type.value == "explore" and not mines >> (mv.cell or 0) & 1]
                move = rng.choice(safe) if safe else move
            await room.conn(seat).request(replace(move, seq=state.seq))
            await room.settled()
    assert match.over, "the match did not end"
    outcome = match.state.outcome()
    endings[outcome.reason.value] += 1
    # Everyone comes back (also to see the end, O13); the record is the published one.
    for seat in (0, 1):
        if room.server_room.seat(room.sid(seat)).peer is None:
            await _resume(room, seat)
    reply = await room.conn(0).request(m.GetRecord(match.id))
    assert isinstance(reply, m.RecordReply)
    return reply.record


def _check(room: Room, record: m.RecordJson, tmp_path: Path) -> int:
    """Every ``state`` each seat received for this match is the replay's view of that seat at its seq,
    and every position the server reached while the seat was connected was sent to it."""
    text = json.dumps(record)
    parsed = from_json(record)
    match_id = record["match_id"]
    compared = 0
    for seat in (0, 1):
        got: set[int] = set()
        for c in room.conns[room.sid(seat)]:  # every connection the seat used in this match
            for msg in c.typed:
                if isinstance(msg, m.State) and msg.match_id == match_id:
                    assert msg.seat == seat
                    live = view_of(msg)
                    rows = replay.position_text(text, str(seat), msg.seq).splitlines()[1:]
                    assert "\n".join(rows) == view_to_ascii(live), (seat, msg.seq)
                    assert replace(replay.state_at(parsed, msg.seq).view(seat), deadline=live.deadline) == live
                    got.add(msg.seq)
                    compared += 1
        wanted = {seq for mid, seq, connected in room.steps if mid == match_id and connected[seat]}
        assert wanted <= got, (seat, sorted(wanted - got))
    # And the command itself, once per match: the last position of seat 0.
    path = tmp_path / f"{match_id}.json"
    path.write_text(text, encoding="utf-8")
    return compared


@pytest_twisted.ensureDeferred
@pytest.mark.parametrize("seed", [19, 20])
async def test_replay_seat_views_equal_the_live_states_of_a_real_server(
    seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    clock = Clock()
    clock.advance(1_700_000_000)
    config = Config(host="127.0.0.1", port=0, udp_port=0, db=str(tmp_path / "s.db"), rate_per_second=1e6, rate_burst=1e6,
                    idle_timeout=1e9, ping_interval=1e9, resumes_per_seat=10**6)
    handle = start_server(_reactor(), config, clock=clock)
    clock.advance(0)
    rng = random.Random(seed)
    endings: Counter[str] = Counter()
    compared = 0
    rooms: list[Room] = []
    try:
        for _ in range(3):
            room = await _open(handle, clock, rng)
            rooms.append(room)
            for number in range(4):  # a match and three rematches (O14: sides swap)
                record = await _play(room, endings, careful=number == 1)
                compared += _check(room, record, tmp_path)
                path = tmp_path / f"{record['match_id']}.json"
                seq = len(record["actions"])
                assert replay.main([str(path), "--view", "0", "--at", str(seq)]) == 0
                assert capsys.readouterr().out == replay.position_text(path.read_text(encoding="utf-8"), "0", seq)
                if number < 3:
                    for seat in (0, 1):
                        await room.conn(seat).request(m.Rematch())
                    await room.settled()
                    assert room.server_room.match.id != record["match_id"]
        assert compared > 200
        assert {"ko", "score", "resign", "disconnect", "void"} <= set(endings), endings
    finally:
        for room in rooms:
            for conns in room.conns.values():
                for c in conns:
                    if c.connected_:
                        c.abort()
        await handle.stop()
