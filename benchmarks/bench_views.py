"""The per-action view cost of the server: ``GameState.view`` and the presenter's ``state`` message.

Run: ``python benchmarks/bench_views.py [--runs 7] [--games 120] [--seed 3]``.

After every accepted action the server builds, for each seat, ``presenter.state(match, seat, ...)``
— ``state.view(seat, deadline)``, then the typed ``State`` with ``board_of(view)`` — and writes it
with ``codec.encode_message``. This benchmark times each step on a fixed list of positions — the state after every action of
``--games`` seeded random games (half of them "careful": they avoid exploring the opponent's
mines, so boards fill up) — for the current code and for a copy of the code it replaced
(``old_*`` below), and prints µs per call (median of ``--runs`` passes) and old/new.

Both seats are handled in turn for each position, as the server does, so the second seat
finds the numbers (``GameState.numbers``) and their rows (``board_of``) remembered
from the first. The positions are timed in a shuffled order, as in a busy server where other
matches' actions come in between: an action never finds the previous action's numbers.
``--ideas`` also times each idea on its own.

The old column is the dict-building code the typed messages replaced (its bytes are checked equal
to the new ones before anything is timed); its per-action row is ``encode(old_state_message(...))``
and the new one ``encode_message(presenter.state(...))``, so the figures stay comparable with the
ones in docs/PERFORMANCE.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from mineduel.server import presenter
from mineduel.shared.ai.randomplay import random_legal_action
from mineduel.shared.rules.bitboard import BYTE_BITS, CELLS, COLS, NEIGHBOURS, ROWS, cells
from mineduel.shared.rules.engine import (
    Action,
    ActionType,
    GameState,
    Outcome,
    Variant,
)
from mineduel.shared.rules.views import SeatView
from mineduel.shared.wire import board as wire_board
from mineduel.shared.wire import codec
from mineduel.shared.wire import messages as m
from mineduel.shared.wire.board import board_of, reveal_of
from mineduel.shared.wire.names import ServerType

# ----- the replaced implementation (verbatim copies, for the comparison) -------------------------


def old_numbers(state: GameState) -> tuple[int, ...]:
    mines = state.mines[0] | state.mines[1]
    out = [-1] * CELLS
    for c in cells(state.revealed):
        out[c] = (NEIGHBOURS[c] & mines).bit_count()
    return tuple(out)


def old_view(state: GameState, seat: int, deadline: float | None = None) -> SeatView:
    other = 1 - seat
    by_me = state.revealed_by0 if seat == 0 else state.revealed & ~state.revealed_by0
    return SeatView(
        seat=seat,
        variant=state.variant,
        phase=state.phase,
        to_move=state.to_move,
        turn=state.turn,
        revealed=state.revealed,
        revealed_by_me=by_me,
        numbers=old_numbers(state),
        my_mines=state.mines[seat],
        my_markers=state.markers[seat],
        opponent_markers=state.markers[other],
        quota_left=state.quota_left if state.to_move == seat else 0,
        outcome=state.outcome(),
        deadline=deadline,
    )


def _old_rows(chars: list[str]) -> list[str]:
    return ["".join(chars[r * COLS : (r + 1) * COLS]) for r in range(ROWS)]


def _old_layer(mask: int, yes: str = "x") -> list[str]:
    return _old_rows([yes if mask >> c & 1 else "." for c in range(CELLS)])


def old_board_json(view: SeatView) -> dict[str, list[str]]:
    numbers = ["." if n < 0 else str(n) for n in view.numbers]
    opened = []
    markers = []
    for c in range(CELLS):
        b = 1 << c
        opened.append("." if not view.revealed & b else "m" if view.revealed_by_me & b else "o")
        markers.append("m" if view.my_markers & b else "o" if view.opponent_markers & b else ".")
    return {
        "numbers": _old_rows(numbers),
        "opened_by": _old_rows(opened),
        "markers": _old_rows(markers),
        "my_mines": _old_layer(view.my_mines),
    }


def _old_relative_seat(seat: int | None, me: int) -> str | None:
    if seat is None:
        return None
    return "me" if seat == me else "opponent"


def _old_outcome_json(outcome: Outcome | None, me: int) -> dict[str, Any] | None:
    if outcome is None:
        return None
    if outcome.reason.value == "void":
        result = "void"
    elif outcome.winner is None:
        result = "draw"
    else:
        result = "win" if outcome.winner == me else "loss"
    scores = None
    if outcome.scores is not None:
        scores = {"me": outcome.scores[me], "opponent": outcome.scores[1 - me]}
    return {
        "outcome": result,
        "winner": _old_relative_seat(outcome.winner, me),
        "reason": outcome.reason.value,
        "scores": scores,
    }


def _old_deadline_json(deadline: float | None, now: float) -> dict[str, float] | None:
    if deadline is None:
        return None
    return {"at": round(deadline, 3), "left": round(max(0.0, deadline - now), 3)}


def old_state_message(
    view: SeatView, *, match_id: str, seq: int, now: float, transcript: str, events: list[dict[str, Any]]
) -> dict[str, Any]:
    me = view.seat
    return {
        "type": ServerType.STATE.value,
        "match_id": match_id,
        "seq": seq,
        "seat": me,
        "phase": view.phase.value,
        "to_move": _old_relative_seat(view.to_move, me),
        "turn": view.turn,
        "quota_left": view.quota_left,
        "deadline": _old_deadline_json(view.deadline, now),
        "server_time": round(now, 3),
        "board": old_board_json(view),
        "transcript": transcript,
        "events": events,
        "result": _old_outcome_json(view.outcome, me),
    }


def old_reveal_json(reveal: Any, me: int) -> dict[str, Any]:
    mines, markers, correct = [], [], []
    mine_me, mine_op = reveal.mines[me], reveal.mines[1 - me]
    for c in range(CELLS):
        b = 1 << c
        mines.append("x" if mine_me & mine_op & b else "m" if mine_me & b else "o" if mine_op & b else ".")
        if reveal.markers[me] & b:
            markers.append("m")
            correct.append("y" if reveal.correct_markers[me] & b else "n")
        elif reveal.markers[1 - me] & b:
            markers.append("o")
            correct.append("y" if reveal.correct_markers[1 - me] & b else "n")
        else:
            markers.append(".")
            correct.append(".")
    return {
        "mines": _old_rows(mines),
        "markers": _old_rows(markers),
        "marker_correct": _old_rows(correct),
        "ko_cell": list(divmod(reveal.ko_cell, COLS)) if reveal.ko_cell is not None else None,
    }


# ----- the ideas one at a time (``--ideas``) -------------------------------------------------------


def numbers_by_bytes(state: GameState) -> tuple[int, ...]:
    """The new numbers() loop without its memo: a byte of ``revealed`` at a time."""
    mines = state.mines[0] | state.mines[1]
    out = [-1] * CELLS
    rest, base = state.revealed, 0
    while rest:
        for i in BYTE_BITS[rest & 0xFF]:
            c = base + i
            out[c] = (NEIGHBOURS[c] & mines).bit_count()
        rest >>= 8
        base += 8
    return tuple(out)


def view_with(numbers: Callable[[GameState], tuple[int, ...]], slots: bool) -> Callable[..., SeatView]:
    """A view built with the given numbers and either the dataclass constructor or the slot setters."""
    set_slots = [getattr(SeatView, f.name).__set__ for f in dataclasses.fields(SeatView)]

    def make(state: GameState, seat: int, deadline: float | None = None) -> SeatView:
        values = (
            seat, state.variant, state.phase, state.to_move, state.turn, state.revealed,
            state.revealed_by0 if seat == 0 else state.revealed & ~state.revealed_by0, numbers(state),
            state.mines[seat], state.markers[seat], state.markers[1 - seat],
            state.quota_left if state.to_move == seat else 0, state.outcome(), deadline,
        )
        if not slots:
            return SeatView(*values)
        view = object.__new__(SeatView)
        for setter, value in zip(set_slots, values, strict=True):
            setter(view, value)
        return view
    return make


def board_comprehension(view: SeatView) -> dict[str, list[str]]:
    """Byte tables with the two-mask layers as a comprehension over the rows, numbers not remembered."""
    def mo(mm: int, o: int) -> list[str]:
        row, m3, o3 = wire_board._ROW_MO, wire_board._BASE3_TWICE, wire_board._BASE3
        return [row[m3[mm >> s & 255] + o3[o >> s & 255]] for s in (0, 8, 16, 24, 32, 40, 48, 56)]
    text = wire_board._NUMBER_BYTES.pack(*view.numbers).translate(wire_board._NUMBER_CHARS).decode("ascii")
    revealed = view.revealed
    by_me = view.revealed_by_me & revealed
    mine = view.my_markers
    return {
        "numbers": wire_board._rows(text),
        "opened_by": mo(by_me, revealed & ~by_me),
        "markers": mo(mine, view.opponent_markers & ~mine),
        "my_mines": wire_board._layer(view.my_mines),
    }


def board_unremembered(view: SeatView) -> m.Board:
    """The current board_of with its numbers memo emptied before each call."""
    wire_board._numbers_memo = ((), [])
    return board_of(view)


def numbers_joined(view: SeatView) -> list[str]:
    """Numbers rows by a join over a 10-entry tuple (``NUM[-1]`` is ``.``) instead of struct."""
    text = "".join(map(_DIGITS.__getitem__, view.numbers))
    return wire_board._rows(text)


_DIGITS = ("0", "1", "2", "3", "4", "5", "6", "7", "8", "9", ".")


# ----- the presenter's input ------------------------------------------------------------------------


class _Position:
    """What ``presenter.state`` reads of a live match: its id, seq, transcript, state and deadline."""

    __slots__ = ("deadline", "id", "seq", "state", "transcript")

    def __init__(self, state: Any, deadline: float | None) -> None:
        self.state, self.deadline = state, deadline
        self.id, self.seq, self.transcript = "0123456789abcdef", 17, "ab" * 32


class _Given:
    """A state whose view is the one given: the presenter timed on a ready view, like old_state_message."""

    __slots__ = ("_view",)

    def __init__(self, view: SeatView) -> None:
        self._view = view

    def view(self, seat: int, deadline: float | None = None) -> SeatView:
        return self._view


def new_state_message(view: SeatView, *, now: float, **_: Any) -> m.State:
    """``presenter.state`` for a ready view (the match fields as in ``kw``)."""
    return presenter.state(_Position(_Given(view), view.deadline), view.seat, now, [])  # type: ignore[arg-type]


# ----- positions ---------------------------------------------------------------------------------


def positions(seed: int, games: int) -> list[GameState]:
    """A copy of the ONLINE state after every action of ``games`` seeded random games."""
    rng = random.Random(seed)
    out: list[GameState] = []
    for game in range(games):
        state = GameState(Variant.ONLINE)
        careful = game % 2 == 0
        while not state.over:
            seat = state.to_move
            assert seat is not None
            if rng.random() < 0.03:
                state.apply(Action(seat, ActionType.TIMEOUT))
                continue  # the copy after the auto-move (O4) is enough
            action = random_legal_action(state, rng)
            for _ in range(50 if careful else 0):  # draw again while it would explode
                if action.type is not ActionType.EXPLORE or not state.mines[1 - seat] >> (action.cell or 0) & 1:
                    break
                action = random_legal_action(state, rng)
            state.apply(action)
            out.append(state.copy())
    return out


# ----- timing ------------------------------------------------------------------------------------


def per_call(fn: Callable[[], int], runs: int) -> float:
    """Median over ``runs`` passes of µs per call; ``fn`` runs one pass and returns its call count."""
    samples = []
    for _ in range(runs):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            calls = fn()
            samples.append((time.perf_counter() - start) / calls * 1e6)
        finally:
            gc.enable()
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--games", type=int, default=120)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--ideas", action="store_true", help="also time each idea on its own")
    args = parser.parse_args()

    base = positions(args.seed, args.games)
    deadline, now = 1_700_000_020.123456, 1_700_000_003.5
    kw: dict[str, Any] = {"match_id": "0123456789abcdef", "seq": 17, "now": now, "transcript": "ab" * 32, "events": []}
    # The same values before timing anything: views, board layers, messages, bytes, reveals.
    for state in base:
        for seat in (0, 1):
            new, old = state.view(seat, deadline), old_view(state, seat, deadline)
            assert new == old
            assert board_of(new).wire() == old_board_json(old)
            new_msg, old_msg = new_state_message(new, **kw), old_state_message(old, **kw)
            built = presenter.state(_Position(state, deadline), seat, now, [])  # type: ignore[arg-type]
            assert codec.encode_message(new_msg) == codec.encode_message(built) == codec.encode(old_msg)
            if state.over:
                assert reveal_of(state.reveal(), seat).wire() == old_reveal_json(state.reveal(), seat)
    revealed = [s.revealed.bit_count() for s in base]
    print(
        f"{len(base)} positions from {args.games} games (seed {args.seed}): revealed cells "
        f"mean {statistics.mean(revealed):.1f}, max {max(revealed)}; median of {args.runs} passes; "
        f"Python {sys.version.split()[0]}, encode via {codec.CODEC}"
    )

    timed = base.copy()
    random.Random(args.seed).shuffle(timed)
    views = [s.view(seat, deadline) for s in timed for seat in (0, 1)]

    def view_pairs(make: Callable[[GameState, int, float | None], SeatView]) -> Callable[[], int]:
        def run() -> int:
            for s in timed:
                make(s, 0, deadline)
                make(s, 1, deadline)
            return 2 * len(timed)
        return run

    def each_view(fn: Callable[[SeatView], object]) -> Callable[[], int]:
        def run() -> int:
            for v in views:
                fn(v)
            return len(views)
        return run

    def message(fn: Callable[..., object]) -> Callable[[SeatView], object]:
        return lambda v: fn(v, match_id="0123456789abcdef", seq=17, now=now, transcript="ab" * 32, events=[])

    def old_action() -> int:  # everything the server did for both seats after one action
        encode = codec.encode
        for s in timed:
            for seat in (0, 1):
                encode(old_state_message(old_view(s, seat, deadline), match_id="0123456789abcdef", seq=17, now=now,
                                         transcript="ab" * 32, events=[]))
        return len(timed)

    matches = [_Position(s, deadline) for s in timed]

    def new_action() -> int:  # everything the server does: presenter.state (view + State) and encode_message
        encode, state = codec.encode_message, presenter.state
        for match in matches:
            encode(state(match, 0, now, []))  # type: ignore[arg-type]
            encode(state(match, 1, now, []))  # type: ignore[arg-type]
        return len(matches)

    old_messages = [old_state_message(v, **kw) for v in views]
    new_messages = [new_state_message(v, **kw) for v in views]
    ended = [(s.reveal(), seat) for s in timed if s.over for seat in (0, 1)]
    rows: list[tuple[str, float, float]] = []
    r = args.runs
    rows.append(("view (per seat)", per_call(view_pairs(old_view), r),
                 per_call(view_pairs(GameState.view), r)))
    rows.append(("board_json / board_of", per_call(each_view(old_board_json), r), per_call(each_view(board_of), r)))
    rows.append(("state message (incl. board)", per_call(each_view(message(old_state_message)), r),
                 per_call(each_view(message(new_state_message)), r)))
    rows.append(("encode / encode_message",
                 per_call(lambda: sum(1 for msg in old_messages if codec.encode(msg)), r),
                 per_call(lambda: sum(1 for msg in new_messages if codec.encode_message(msg)), r)))
    rows.append(("reveal_json / reveal_of (end of match)",
                 per_call(lambda: sum(1 for rv, seat in ended if old_reveal_json(rv, seat)), r),
                 per_call(lambda: sum(1 for rv, seat in ended if reveal_of(rv, seat)), r)))
    rows.append(("per action: 2 x (view+message+encode)", per_call(old_action, r), per_call(new_action, r)))
    print(f"{'µs per call':40s} {'old':>8s} {'new':>8s} {'old/new':>8s}")
    for name, old, new in rows:
        print(f"{name:40s} {old:8.2f} {new:8.2f} {old / new:7.1f}x")
    print("(both columns write the same bytes; new: the typed State, written through wire() by encode_message)")
    if not args.ideas:
        return

    def each_state(fn: Callable[[GameState], object]) -> Callable[[], int]:
        def run() -> int:
            for st in timed:
                fn(st)
            return len(timed)
        return run

    for v in views:
        assert board_comprehension(v) == board_unremembered(v).wire() == old_board_json(v)
        assert numbers_joined(v) == old_board_json(v)["numbers"]
    ideas = [
        ("numbers(): cells() generator", per_call(each_state(old_numbers), r)),
        ("numbers(): a byte at a time, no memo", per_call(each_state(numbers_by_bytes), r)),
        ("view: dataclass(**kw), old numbers", per_call(view_pairs(old_view), r)),
        ("view: dataclass(*args), old numbers", per_call(view_pairs(view_with(old_numbers, False)), r)),
        ("view: slot setters (loop), old numbers", per_call(view_pairs(view_with(old_numbers, True)), r)),
        ("view: dataclass(*args), remembered numbers", per_call(view_pairs(view_with(GameState.numbers, False)), r)),
        ("view: current (setters written out + memo)", per_call(view_pairs(GameState.view), r)),
        ("board: per-cell loops (old)", per_call(each_view(old_board_json), r)),
        ("board: tables, comprehension rows, no memo", per_call(each_view(board_comprehension), r)),
        ("board: tables written out, no memo", per_call(each_view(board_unremembered), r)),
        ("board: current (numbers remembered)", per_call(each_view(board_of), r)),
        ("numbers rows: join + slices", per_call(each_view(numbers_joined), r)),
        ("numbers rows: struct + translate, no memo",
         per_call(each_view(lambda v: (setattr(wire_board, "_numbers_memo", ((), [])), wire_board._number_rows(v.numbers))), r)),
        ("  (emptying the memo alone)", per_call(each_view(lambda v: setattr(wire_board, "_numbers_memo", ((), []))), r)),
        ("numbers rows: current", per_call(each_view(lambda v: wire_board._number_rows(v.numbers)), r)),
    ]
    print(f"\n{'ideas, µs per call':52s}")
    for name, us in ideas:
        print(f"{name:52s} {us:8.2f}")


if __name__ == "__main__":
    main()
