"""Leak property (issue 19, PROTOCOL.md §16): a spectator learns nothing hidden before the end.

Two worlds run in lockstep on the same server seed, client seeds and clock: the same public
action stream (explores, markers, end turns, resigns, timeouts, drops and resumes, rematches),
but the plants of one seat (either, drawn per match) differ. While the worlds' *public* state is
the same (computed here from the engine's state without any mine), every byte sent to a spectator
in one world must equal the byte sent in the other. The first public difference (a number that
counts a different mine, a KO in one world only, an O9 score end in one world only) ends the
comparison of that room: from there the worlds may legitimately differ. The public play avoids
such differences where it can (it never explores next to a mine the worlds disagree on), so most
matches are compared to their end.

Every ending of RULES.md is reached with the worlds still publicly equal, in both of its
variants (:data:`VARIANTS`): a KO by either seat (A1, O8), the score end (O9/O10) won by either
seat or drawn, a resignation by the seat to move or by the other one (O11, F4), the timeout paths
(an opening auto-move, O4; a normal turn skipped, O5), a disconnection lost with the opponent
connected or after both were away and the opponent came back (O12), a void match whichever seat
dropped first (O12); and players who drop and resume mid-match (O12), a seat that resumes after
the end, and rematches (O14) — several matches in one room. Fixed seeds, no sleeps; a planted
leak (one mine bit in the spectator's board) is caught by the same function.

``MINEDUEL_LEAK_PAIRS`` runs more world pairs than the default :data:`PAIRS` (e.g. 20000).
"""

from __future__ import annotations

import dataclasses
import os
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest

from mineduel.server import presenter
from mineduel.server.room import Room
from mineduel.shared.rules.bitboard import cells, neighbourhood
from mineduel.shared.rules.engine import ActionType, Phase
from mineduel.shared.rules.views import SeatView
from mineduel.shared.wire import codec
from mineduel.shared.wire.board import spectator_board
from mineduel.shared.wire.messages import SpectateBoard
from tests.support.harness import Harness

PAIRS = int(os.environ.get("MINEDUEL_LEAK_PAIRS", "400"))
"""World pairs (each a room with a match and up to four rematches): about 1,100 matches, 15-30 s on
the project machine as loaded as it gets; ``MINEDUEL_LEAK_PAIRS=5000`` ran 14,284 matches (566,345
spectator lines compared, every variant thousands of times but the score ones hundreds) in 313 s."""

VARIANTS = (
    "ko/0", "ko/1",  # A1/O8: the explorer (seat 0 or 1) hit the opponent's mine
    "score/0", "score/1", "score/draw",  # O9/O10
    "resign/to_move", "resign/waiting",  # O11: either seat, also when it is not its turn (F4)
    "timeout/opening", "timeout/turn",  # O4 auto-move, O5 skipped turn
    "disconnect/opponent_connected", "disconnect/opponent_returned",  # O12
    "void/0_first", "void/1_first",  # O12: both graces ran out
    "resume/mid_match", "resume/after_end", "rematch",
)
"""What every run must reach with the worlds still publicly equal (both variants of each ending)."""

ADDRESSES = ("10.0.0.1", "10.0.0.2")


def _line(**msg: Any) -> bytes:
    return codec.encode(msg)[:-1]


RESIGN = _line(type="resign")
END_TURN = _line(type="end_turn")
REMATCH = _line(type="rematch")


@dataclass
class World:
    """One server with one room, its two players (by seat id) and one spectator."""

    h: Harness
    code: str
    tokens: dict[int, str]  # seat id -> session token
    viewer: int
    read: int = 0
    secret: dict[str, int] = field(default_factory=dict)

    @property
    def room(self) -> Room:
        return self.h.rooms.rooms[self.code]

    def state(self) -> Any:
        match = self.room.match
        assert match is not None
        return match.state

    def sid(self, seat: int) -> int:
        match = self.room.match
        assert match is not None
        return match.players[seat]

    def peer(self, seat: int) -> int | None:
        return self.room.seat(self.sid(seat)).peer

    def send(self, peer: int | None, line: bytes) -> None:
        """One line from ``peer`` (a connection), through the whole server, then the turn's commit."""
        assert peer is not None
        self.h.core.line_received(peer, line)
        self.h.turn()

    def act(self, seat: int, line: bytes) -> None:
        self.send(self.peer(seat), line)

    def drop(self, seat: int) -> None:
        peer = self.peer(seat)
        if peer is not None:
            self.h.core.connection_lost(peer)
            self.h.turn()

    def resume(self, seat: int) -> None:
        """The seat comes back on a new connection with its token (O12)."""
        client = self.h.connect(ADDRESSES[seat])
        self.send(client.pid, _line(type="resume", room=self.code, token=self.tokens[self.sid(seat)]))
        assert self.peer(seat) == client.pid

    def wait(self, seconds: float) -> None:
        self.h.advance(seconds)
        self.h.turn()

    def new_lines(self) -> list[bytes]:
        lines = self.h.out.lines[self.viewer]
        out = lines[self.read :]
        self.read = len(lines)
        return out


def _world(seed: int) -> World:
    h = Harness(seed=seed)
    a, b = h.pair()
    a.send(type="ready")
    b.send(type="ready")
    assert a.room is not None and a.token is not None and b.token is not None
    room = h.rooms.rooms[a.room]
    tokens = {room.seats[0].sid: a.token, room.seats[1].sid: b.token}
    viewer = h.connect("10.0.9.9")
    viewer.send(type="spectate", room=a.room)
    return World(h, a.room, tokens, viewer.pid)


def _public(w: World) -> tuple[object, ...]:
    """What anyone may know: never ``state.mines`` (the two worlds differ only there)."""
    room = w.room
    match = room.match
    assert match is not None
    s = match.state
    numbers = s.numbers()  # -1 for closed cells: only revealed cells show theirs (B4)
    seats = tuple((seat.sid, seat.peer is None, seat.grace, seat.expired, seat.rematch) for seat in room.seats)
    return (match.id, match.seq, s.phase, s.to_move, s.turn, s.revealed, s.revealed_by0, numbers,
            tuple(s.markers), s.over, match.deadline, seats, len(room.spectators or ()))


def _cell(mask: int, rng: random.Random) -> int | None:
    options = list(cells(mask))
    return rng.choice(options) if options else None


def _msg(kind: ActionType, cell: int | None = None) -> bytes:
    out: dict[str, Any] = {"type": kind.value}
    if cell is not None:
        out["cell"] = list(divmod(cell, 8))
    return codec.encode(out)[:-1]


def _both(a: World, b: World, what: str, *args: Any) -> None:
    for w in (a, b):
        getattr(w, what)(*args)


def _interrupt(a: World, b: World, pub: random.Random, roll: float, seen: Counter[str]) -> bool:
    """A resignation, a timeout or drops (O11, O4/O5, O12) instead of an action, by ``roll``."""
    sa = a.state()
    grace = a.h.config.grace_seconds
    if roll < 0.010:  # O11: either seat, whoever's turn it is (F4's one exception)
        seat = pub.randrange(2)
        a.secret["resigner_moved"] = int(seat == sa.to_move)
        _both(a, b, "act", seat, RESIGN)
    elif roll < 0.030:  # O12: a drop and a resume within the grace (turns run on meanwhile, O5)
        seat = pub.randrange(2)
        _both(a, b, "drop", seat)
        _both(a, b, "wait", pub.uniform(0.0, grace - 1.0))
        if not a.state().over and not b.state().over:
            _both(a, b, "resume", seat)
            seen["resume/mid_match"] += 1
    elif roll < 0.034:  # O12: the grace runs out while the opponent is connected
        seat = pub.randrange(2)
        _both(a, b, "drop", seat)
        _both(a, b, "wait", grace + 1.0)
    elif roll < 0.038:  # O12: both away; the first one's grace runs out; the other comes back in time
        seat = pub.randrange(2)
        first = pub.uniform(5.0, 60.0)
        _both(a, b, "drop", seat)
        _both(a, b, "wait", first)
        _both(a, b, "drop", 1 - seat)
        _both(a, b, "wait", grace - first + 1.0)
        if not a.state().over and not b.state().over:
            a.secret["returned"] = 1
            _both(a, b, "resume", 1 - seat)
    elif roll < 0.042:  # O12: both graces run out: void
        seat = pub.randrange(2)
        a.secret["first_away"] = seat
        _both(a, b, "drop", seat)
        _both(a, b, "wait", pub.uniform(0.0, 60.0))
        _both(a, b, "drop", 1 - seat)
        _both(a, b, "wait", grace + 1.0)
    elif roll < 0.060:  # O4/O5: the deadline passes
        seen["timeout/opening" if sa.phase in (Phase.OPEN_EXPLORE, Phase.OPEN_PLANT) else "timeout/turn"] += 1
        _both(a, b, "wait", a.h.config.turn_seconds + 0.5)
    else:
        return False
    return True


def _steps(a: World, b: World, pub: random.Random, hidden: random.Random, secret_seat: int, safe: bool,
           seen: Counter[str]) -> Iterator[None]:
    """Play one match in both worlds; yields after each step, returns once either is over."""
    for _ in range(400):
        sa, sb = a.state(), b.state()
        if sa.over or sb.over:
            return
        seat = sa.to_move
        roll = pub.random() * (8.0 if safe else 1.0)  # a safe match rarely stops early
        if _interrupt(a, b, pub, roll, seen):
            yield
            continue
        va: SeatView = sa.view(seat)
        vb: SeatView = sb.view(seat)
        if sa.phase in (Phase.OPEN_PLANT, Phase.PLANT):
            # The hidden part: the secret seat plants where each world likes; the other the same cell.
            plant_a, plant_b = va.targets(ActionType.PLANT), vb.targets(ActionType.PLANT)
            if seat == secret_seat:
                # Away from open cells where it can, so their numbers (public, B4) stay the same.
                quiet = ~neighbourhood(sa.revealed)
                ca = _cell(plant_a & quiet or plant_a, hidden)
                cb = _cell(plant_b & quiet or plant_b, hidden)
            else:
                ca = cb = _cell(plant_a & plant_b, pub)
            a.act(seat, _msg(ActionType.PLANT, ca))
            b.act(seat, _msg(ActionType.PLANT, cb))
        else:
            explore = va.targets(ActionType.EXPLORE) & vb.targets(ActionType.EXPLORE)
            differ = sa.any_mine ^ sb.any_mine
            # Never where the worlds disagree: a KO in one only, or a number counting another mine.
            explore &= ~(differ | neighbourhood(differ))
            if safe:  # no KO at all: long matches that reach the score end (O9)
                explore &= ~(sa.any_mine | sb.any_mine)
            flag = va.targets(ActionType.FLAG) & vb.targets(ActionType.FLAG)
            pick = pub.random()
            if explore and (pick < 0.8 or not flag):
                msg = _msg(ActionType.EXPLORE, _cell(explore, pub))
            # (safe matches flag less: more drawn scores, O10)
            elif flag and (pick < (0.84 if safe else 0.95) or sa.phase is not Phase.END_WAIT):
                msg = _msg(ActionType.FLAG, _cell(flag, pub))
            elif sa.phase is Phase.END_WAIT:
                msg = END_TURN
            else:  # nowhere to explore that the worlds agree on: the turn runs out (O5)
                seen["timeout/turn"] += 1
                _both(a, b, "wait", a.h.config.turn_seconds + 0.5)
                yield
                continue
            _both(a, b, "act", seat, msg)
        yield


def _before_end(lines: list[bytes]) -> list[bytes]:
    """The lines sent before the match's end (the first one with the result ends them)."""
    for i, line in enumerate(lines):
        if b'"result":{' in line:
            return lines[:i]
    return lines


def _open_lines(lines: list[bytes]) -> list[bytes]:
    """The spectator lines of a match not over (no result yet)."""
    return [line for line in lines if orjson.loads(line).get("result", True) is None]


def _ending(a: World, seen: Counter[str]) -> None:
    """Count the ending world ``a`` reached (the worlds are publicly equal) by its variant."""
    outcome = a.state().outcome()
    assert outcome is not None
    reason = outcome.reason.value
    if reason == "ko":  # the winner is the seat that did not explore
        assert outcome.winner is not None
        seen[f"ko/{1 - outcome.winner}"] += 1
    elif reason == "score":
        seen[f"score/{'draw' if outcome.winner is None else outcome.winner}"] += 1
    elif reason == "resign":
        seen["resign/to_move" if a.secret.get("resigner_moved") else "resign/waiting"] += 1
    elif reason == "disconnect":
        seen["disconnect/opponent_returned" if "returned" in a.secret else "disconnect/opponent_connected"] += 1
    elif reason == "void":
        seen[f"void/{a.secret.get('first_away', 0)}_first"] += 1
    else:  # pragma: no cover - a new ending needs its variants here
        seen[reason] += 1


def check_worlds(pairs: int, seed: int, *, rematches: int = 4) -> tuple[int, int, Counter[str]]:
    """Run ``pairs`` world pairs; raise AssertionError at the first spectator byte that differs
    while the public state agrees. Returns (matches, compared spectator lines, what was reached
    with the worlds still publicly equal: :data:`VARIANTS` and the bare ending reasons)."""
    matches = compared = 0
    seen: Counter[str] = Counter()
    for n in range(pairs):
        pub = random.Random(seed * 100_003 + n)
        hidden = random.Random(seed * 7_919 + n)
        server_seed = pub.randrange(1 << 30)
        a, b = _world(server_seed), _world(server_seed)
        for _ in range(1 + rematches):  # a match and its rematches, in one room
            matches += 1
            a.secret.clear()
            secret_seat = pub.randrange(2)
            safe = pub.random() < 0.12  # long matches that can reach the score ending (O9)
            diverged = False
            for _step in _steps(a, b, pub, hidden, secret_seat, safe, seen):
                # Lines from the end on show the O13 reveal: different by design, not compared.
                la, lb = _before_end(a.new_lines()), _before_end(b.new_lines())
                if _public(a) != _public(b):
                    diverged = True  # public play differs from here: nothing more to compare
                    break
                assert la == lb, f"pair {n}: spectator bytes differ while the public state agrees:\n{la}\n{lb}"
                compared += len(la)
            if diverged or not a.state().over:
                break
            _ending(a, seen)
            if pub.random() < 0.25:
                break
            # O14 needs both players connected: an absent seat resumes after the end first (O13).
            for seat in (0, 1):
                if a.peer(seat) is None:
                    _both(a, b, "resume", seat)
                    seen["resume/after_end"] += 1
            first_a, first_b = a.room.match, b.room.match
            for seat in (0, 1):
                _both(a, b, "act", seat, REMATCH)
            if a.room.match is first_a or b.room.match is first_b:
                break
            # The lines of the rematch wishes still show the finished match (its reveal): only
            # the new match's lines are compared.
            la, lb = _open_lines(a.new_lines()), _open_lines(b.new_lines())
            assert la and la == lb, f"pair {n}: the rematch's first spectator bytes differ"
            seen["rematch"] += 1
    return matches, compared, seen


def test_spectator_bytes_never_depend_on_hidden_mines() -> None:
    matches, compared, seen = check_worlds(PAIRS, seed=19)
    assert matches >= 2 * PAIRS and compared > 20 * PAIRS, (matches, compared)
    # Every ending a spectator can watch was reached, in both variants, with the worlds still
    # publicly equal (and resumes and rematches).
    missing = [v for v in VARIANTS if seen[v] == 0]
    assert missing == [], seen


def test_a_planted_leak_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seat 0's lowest mine shown as a marker in the spectator's board: caught."""

    def leaky(view: SeatView) -> SpectateBoard:
        board = spectator_board(view)
        mine = next(iter(cells(view.my_mines)), None)  # seat 0's lowest mine: one hidden bit
        if mine is None:
            return board
        row, col = divmod(mine, 8)
        markers = list(board.markers)
        markers[row] = markers[row][:col] + "m" + markers[row][col + 1 :]
        return SpectateBoard(board.numbers, board.opened_by, markers)

    monkeypatch.setattr(presenter, "spectator_board", leaky)
    with pytest.raises(AssertionError, match="spectator bytes differ"):
        check_worlds(PAIRS, seed=19)


def test_a_planted_leak_of_the_second_seat_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """One bit of seat 1's mines (their row parity) in a field far from the board: caught too."""
    real = presenter.spectate_state

    def leaky(room: Room, now: float, fx: Any = None) -> Any:
        message = real(room, now, fx)
        if room.match is None or room.match.over:
            return message
        parity = sum(c // 8 for c in cells(room.match.state.mines[1])) % 2
        return dataclasses.replace(message, server_time=message.server_time + parity)

    monkeypatch.setattr(presenter, "spectate_state", leaky)
    with pytest.raises(AssertionError, match="spectator bytes differ"):
        check_worlds(PAIRS, seed=19)


def test_a_planted_leak_through_seat_0s_board_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The spectators' board reuses the public layers of the ``state`` just built for seat 0
    (presenter._board0): a mine of seat 0 slipped into that board's markers layer is caught."""
    real = presenter.board_of

    def leaky(view: SeatView) -> Any:
        board = real(view)
        mine = next(iter(cells(view.my_mines)), None)
        if view.seat != 0 or mine is None:
            return board
        row, col = divmod(mine, 8)
        markers = list(board.markers)
        markers[row] = markers[row][:col] + "m" + markers[row][col + 1 :]
        return dataclasses.replace(board, markers=markers)

    monkeypatch.setattr(presenter, "board_of", leaky)
    with pytest.raises(AssertionError, match="spectator bytes differ"):
        check_worlds(PAIRS, seed=19)


def test_every_line_a_spectator_gets_is_the_plain_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real server writes a ``spectate_state`` through ``net.line`` (its head spliced in,
    net.spectate_line), the recording outbox through ``codec.encode_message``: over random
    matches of every ending, drops, resumes and rematches, each view is the same bytes both ways,
    so the leak property above holds for the bytes the server really sends."""
    from mineduel.server import net
    from mineduel.shared.wire.messages import SpectateState
    from tests.support.harness import RecordingOutbox

    checked: Counter[str] = Counter()
    record = RecordingOutbox.send

    def send(self: RecordingOutbox, peer: int, message: Any) -> None:
        if isinstance(message, SpectateState):
            assert net.line(message) == codec.encode_message(message), message
            checked["spliced" if message.board is not None and message.result is None else "plain"] += 1
        record(self, peer, message)

    monkeypatch.setattr(RecordingOutbox, "send", send)
    check_worlds(60, seed=23)
    assert checked["spliced"] > 1000 and checked["plain"] > 50, checked
