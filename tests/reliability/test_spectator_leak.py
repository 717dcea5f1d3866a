"""Leak property (issue 19, PROTOCOL.md §16): a spectator learns nothing hidden before the end.

Two worlds run in lockstep on the same server seed, client seeds and clock: the same public
action stream (explores, markers, end turns, resigns, timeouts, disconnects, rematches), but the
plants of one seat (either, by match) differ. While the worlds' *public* state is the same
(computed here from the engine's state without any mine), every byte sent to a spectator in one
world must equal the byte sent in the other. The first public difference (a number that counts a
different mine, a KO) ends the comparison of that match: from there the worlds may legitimately
differ. Fixed seeds, no sleeps; a planted leak (one mine bit in the spectator's board) is caught
by the same function.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from mineduel.server import presenter
from mineduel.shared.rules.bitboard import cells, neighbourhood
from mineduel.shared.rules.engine import ActionType, Phase
from mineduel.shared.rules.views import SeatView
from mineduel.shared.wire.board import spectator_board
from mineduel.shared.wire.messages import SpectateBoard
from tests.support.harness import Client, Harness

PAIRS = 400  # world pairs (each a room with one or more matches)


@dataclass
class World:
    h: Harness
    by_seat: dict[int, Client]
    viewer: Client
    read: int = 0

    def state(self) -> Any:
        return self.h.match(self.by_seat[0]).state

    def new_lines(self) -> list[bytes]:
        lines = self.h.out.lines[self.viewer.pid]
        out = lines[self.read :]
        self.read = len(lines)
        return out


def _world(seed: int) -> World:
    h = Harness(seed=seed)
    first, second = h.start()
    viewer = h.connect("10.0.9.9")
    viewer.send(type="spectate", room=first.room)
    return World(h, {0: first, 1: second}, viewer)


def _public(w: World) -> tuple[object, ...]:
    """What anyone may know: never ``state.mines`` (the two worlds differ only there)."""
    match = w.h.match(w.by_seat[0])
    s = match.state
    revealed = s.revealed
    numbers = s.numbers()
    shown = tuple(n if revealed >> c & 1 else -1 for c, n in enumerate(numbers))
    seats = tuple(c.pid in w.h.out.closed or w.h.rooms.lobby.peer_seat.get(c.pid) is None for c in w.by_seat.values())
    return (match.id, match.seq, s.phase, s.to_move, s.turn, revealed, s.revealed_by0, shown, tuple(s.markers),
            s.over, match.deadline, seats)


def _cell(mask: int, rng: random.Random) -> int | None:
    options = list(cells(mask))
    return rng.choice(options) if options else None


def _msg(kind: ActionType, cell: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": kind.value}
    if cell is not None:
        out["cell"] = list(divmod(cell, 8))
    return out


def _steps(a: World, b: World, pub: random.Random, hidden: random.Random, secret_seat: int, safe: bool) -> Iterator[str]:
    """Play one match in both worlds; yields after each step (``"end"`` once over)."""
    for _ in range(400):
        sa, sb = a.state(), b.state()
        if sa.over or sb.over:
            yield "end"
            return
        seat = sa.to_move
        va: SeatView = sa.view(seat)
        vb: SeatView = sb.view(seat)
        roll = pub.random() * (20.0 if safe else 1.0)  # a safe match rarely stops early
        if roll < 0.01:
            for w in (a, b):
                w.by_seat[seat].send(type="resign")
        elif roll < 0.015:  # the mover drops: the disconnect ending once its grace runs out (O12)
            for w in (a, b):
                w.by_seat[seat].drop()
                w.h.advance(w.h.config.grace_seconds + 1.0)
                w.h.turn()
        elif roll < 0.018:  # both drop: void (O12)
            for w in (a, b):
                w.by_seat[0].drop()
                w.by_seat[1].drop()
                w.h.advance(w.h.config.grace_seconds + 1.0)
                w.h.turn()
        elif roll < 0.03:  # a timeout (O4/O5)
            for w in (a, b):
                w.h.advance(w.h.config.turn_seconds + 0.5)
                w.h.turn()
        elif sa.phase in (Phase.OPEN_PLANT, Phase.PLANT):
            # The hidden part: the secret seat plants where each world likes; the other the same cell.
            plant_a, plant_b = va.targets(ActionType.PLANT), vb.targets(ActionType.PLANT)
            if seat == secret_seat:
                # Away from open cells where it can, so their numbers (public, B4) stay the same.
                quiet = ~neighbourhood(sa.revealed)
                ca = _cell(plant_a & quiet or plant_a, hidden)
                cb = _cell(plant_b & quiet or plant_b, hidden)
            else:
                ca = cb = _cell(plant_a & plant_b, pub)
            a.by_seat[seat].send(**_msg(ActionType.PLANT, ca))
            b.by_seat[seat].send(**_msg(ActionType.PLANT, cb))
        else:
            explore = va.targets(ActionType.EXPLORE) & vb.targets(ActionType.EXPLORE)
            if safe:  # no mine and no number that counts a mine the worlds disagree on
                explore &= ~(sa.any_mine | sb.any_mine | neighbourhood(sa.any_mine ^ sb.any_mine))
            flag = va.targets(ActionType.FLAG) & vb.targets(ActionType.FLAG)
            pick = pub.random()
            if explore and (pick < 0.8 or not flag):
                msg = _msg(ActionType.EXPLORE, _cell(explore, pub))
            elif flag and pick < 0.95:
                msg = _msg(ActionType.FLAG, _cell(flag, pub))
            else:
                msg = _msg(ActionType.END_TURN)
            for w in (a, b):
                w.by_seat[seat].send(**msg)
        yield "step"
    yield "end"


def _before_end(lines: list[bytes]) -> list[bytes]:
    """The lines sent before the match's end (the first one with the result ends them)."""
    for i, line in enumerate(lines):
        if orjson.loads(line).get("result") is not None:
            return lines[:i]
    return lines


def _open_lines(lines: list[bytes]) -> list[bytes]:
    """The spectator lines of a match not over (no result yet)."""
    return [line for line in lines if orjson.loads(line).get("result", True) is None]


def check_worlds(pairs: int, seed: int) -> tuple[int, int, Counter[str]]:
    """Run ``pairs`` world pairs; raise AssertionError at the first spectator byte that differs
    while the public state agrees. Returns (matches, compared spectator lines, the endings
    reached with the worlds still publicly equal, and ``rematch`` for each rematch played)."""
    matches = compared = 0
    seen: Counter[str] = Counter()
    for n in range(pairs):
        pub = random.Random(seed * 100_003 + n)
        hidden = random.Random(seed * 7_919 + n)
        server_seed = pub.randrange(1 << 30)
        a, b = _world(server_seed), _world(server_seed)
        for _ in range(3):  # a match and up to two rematches
            matches += 1
            secret_seat = pub.randrange(2)
            safe = pub.random() < 0.3  # long matches that can reach the score ending (O9)
            diverged = False
            for step in _steps(a, b, pub, hidden, secret_seat, safe):
                # Lines from the end on show the O13 reveal: different by design, not compared.
                la, lb = _before_end(a.new_lines()), _before_end(b.new_lines())
                pa, pb = _public(a), _public(b)
                if pa != pb:
                    diverged = True  # public play differs from here: nothing more to compare
                    break
                assert la == lb, f"pair {n}: spectator bytes differ while the public state agrees:\n{la}\n{lb}"
                compared += len(la)
                if step == "end" or a.state().over:
                    outcome = a.state().outcome()
                    if outcome is not None:
                        seen[outcome.reason.value] += 1
                    break
            gone = any(a.h.rooms.lobby.peer_seat.get(c.pid) is None for c in a.by_seat.values())
            if diverged or gone or pub.random() < 0.4:
                break
            ok = True
            for w in (a, b):
                for c in w.by_seat.values():
                    ok = c.send(type="rematch")[-1]["type"] == "ok" and ok
            if not ok or a.state().over or b.state().over:
                break
            # O14: sides swap; find who is which seat in the new match.
            for w in (a, b):
                clients = list(w.by_seat.values())
                w.by_seat = {c.seat: c for c in clients}
            # The lines of the rematch wishes still show the finished match (its reveal): only
            # the new match's lines are compared.
            la, lb = _open_lines(a.new_lines()), _open_lines(b.new_lines())
            assert la and la == lb, f"pair {n}: the rematch's first spectator bytes differ"
            seen["rematch"] += 1
    return matches, compared, seen


def test_spectator_bytes_never_depend_on_hidden_mines() -> None:
    matches, compared, seen = check_worlds(PAIRS, seed=19)
    assert matches >= PAIRS and compared > 5 * PAIRS
    # Every ending a spectator can watch was reached with the worlds still publicly equal.
    for reason in ("ko", "resign", "disconnect", "void", "score", "rematch"):
        assert seen[reason] > 0, seen


def test_a_planted_leak_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
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
