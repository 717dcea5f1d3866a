"""Seeded server sessions whose every sent byte is compared with a stored capture.

The capture (``tests/support/data/wire_golden.json.gz``) was written by the server as it was
before the typed-vocabulary rewrite (issue 13), and rewritten for fairness version 2 (issue 14:
only transcript hashes and the records' fairness version/previous_transcript changed) and for
issue 15's protocol loose ends (a ``room`` after each ``rematch`` status; no ``presence``/``room``
for a seat resumed over its still-open connection);
``test_wire_golden.py`` replays the same scenarios against today's server and requires
byte-identical output, peer by peer. Each scenario drives the
in-process ``Harness`` on ``task.Clock`` with seeded entropy, so nothing in it depends on time.

    python tests/support/wire_scenarios.py --write   # only when a wire change is intended and documented
"""

from __future__ import annotations

import gzip
import json
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mineduel.shared.rules.bitboard import cells
from mineduel.shared.wire import bots
from support.harness import Client, Harness, oracle_message, play_to_score_end
from support.wire_views import move_json, view_of_state

GOLDEN = Path(__file__).resolve().parent / "data" / "wire_golden.json.gz"

Capture = dict[str, list[str]]
"""Per connection id (as text), every line the server sent it, decoded as UTF-8 text."""


def _capture(h: Harness) -> Capture:
    return {str(pid): [line.decode("utf-8") for line in lines] for pid, lines in sorted(h.out.lines.items())}


def _cell(c: int) -> list[int]:
    return list(divmod(c, 8))


def _opening(h: Harness, a: Client, b: Client) -> None:
    """F1 with the oracle: both explore safe cells, both plant."""
    by_seat = {a.seat: a, b.seat: b}
    for _ in range(4):
        state = h.match(a).state
        by_seat[state.to_move].send(**oracle_message(state))


def _ko(h: Harness, first: Client, second: Client, loser_seat: int) -> None:
    """Play normal turns until the seat ``loser_seat`` can explore an opponent mine, then it does."""
    _opening(h, first, second)
    by_seat = {first.seat: first, second.seat: second}
    for _ in range(200):
        state = h.match(first).state
        if state.over:
            return
        seat = state.to_move
        if seat == loser_seat and state.phase.value == "explore":
            target = state.mines[1 - seat] & ~state.mines[seat] & ~state.any_marker
            if target:
                by_seat[seat].send(type="explore", cell=_cell(next(cells(target))))
                return
        by_seat[seat].send(**oracle_message(state))
    raise AssertionError("no KO reached")


def scenario_ko(loser_seat: int) -> Callable[[], Capture]:
    def run() -> Capture:
        h = Harness(seed=11 + loser_seat)
        first, second = h.start()
        _ko(h, first, second, loser_seat)
        for c in (first, second):
            c.send(type="get_record", match_id=h.match(first).id, id="rec")
        # rematch with sides swapped, then the other seat resigns at once
        first.send(type="rematch", client_seed="again-1")
        second.send(type="ready", client_seed="again-2")
        by_seat = {c.seat: c for c in (first, second)}
        by_seat[loser_seat].send(type="resign", id=7)
        return _capture(h)

    return run


def scenario_score() -> Capture:
    h = Harness(seed=21)
    first, second = h.start(("s-one", "s-two"))
    play_to_score_end(h, first, second)
    first.send(type="get_record", match_id=h.match(first).id)
    first.send(type="leave")
    second.send(type="rematch")
    second.send(type="leave")
    return _capture(h)


def scenario_resign(seat: int) -> Callable[[], Capture]:
    def run() -> Capture:
        h = Harness(seed=31 + seat)
        first, second = h.start()
        _opening(h, first, second)
        (first if first.seat == seat else second).send(type="resign", match_id=h.match(first).id)
        first.send(type="explore", cell=[0, 0])  # game_over
        return _capture(h)

    return run


def scenario_disconnect_and_void() -> Capture:
    h = Harness(seed=41)
    first, second = h.start()
    _opening(h, first, second)
    second.drop()
    h.advance(30)
    h.turn()
    # resume within the grace on a new connection
    again = h.connect("10.0.0.2")
    again.send(type="resume", room=first.room, token=second.token, id="r1")
    again.room, again.token = first.room, second.token
    h.advance(5)
    h.turn()
    again.drop()
    h.advance(121)
    h.turn()  # disconnect ending
    first.send(type="get_record", match_id=h.match(first).id)
    # a second room where both go away: void
    h2a, h2b = h.pair(("v-1", "v-2"))
    h2a.send(type="ready")
    h2b.send(type="ready")
    h2a.drop()
    h.advance(10)
    h2b.drop()
    h.advance(200)
    h.turn()
    late = h.connect("10.0.0.9")
    late.send(type="resume", room=h2a.room, token=h2a.token)
    return _capture(h)


def scenario_timeouts() -> Capture:
    h = Harness(seed=51)
    first, second = h.start()
    h.advance(20.0)  # O4: opening auto-move
    h.turn()
    h.advance(20.0)
    h.turn()
    h.advance(45.0)  # several auto-moves in one settle
    h.turn()
    by_seat = {first.seat: first, second.seat: second}
    for _ in range(6):
        state = h.match(first).state
        if state.over:
            break
        by_seat[state.to_move].send(**oracle_message(state))
    h.advance(20.0)  # O5: a normal turn times out
    h.turn()
    h.advance(61.0)
    h.turn()
    first.send(type="ping", id="p")
    return _capture(h)


def scenario_refusals() -> Capture:
    h = Harness(seed=61)
    stranger = h.connect("10.0.0.7", hello=False)
    for raw in (b"not json", b"[1,2]", b'{"type": 5}', b'{"type":"nope","id":"x"}', b'{"type":"create_room"}',
                b'{"type":"hello","protocol":2}', b'{"type":"ping","id":3}'):
        stranger.send_raw(raw)
    a = h.connect("10.0.0.1")
    a.send(**bots.hello("again").wire())
    a.send(type="ready")
    a.send(type="join", room="ZZZZZZ")
    a.send(type="join", room="bad code!")
    a.send(type="peek", room="ZZZZZZ", id="p")
    a.send(type="create_room", name="x" * 40)
    a.send(type="create_room", name="Ann", client_seed="bad:seed")
    created = a.send(type="create_room", name="Ann", client_seed="ok", id="c")
    code = created[0]["room"]
    a.token = created[0]["token"]
    a.room = code
    a.send(type="create_room")
    b = h.connect("10.0.0.2")
    b.send(type="peek", room=code.lower(), id=9)
    b.send(type="resume", room=code, token="0" * 64)
    b.send(type="resume", room=code, token="nothex")
    b.send(type="join", room=code, name="Bob")
    b.token = None
    c = h.connect("10.0.0.3")
    c.send(type="join", room=code)
    a.send(type="ready", ready="yes")
    a.send(type="explore", cell=[0, 0])
    a.send(type="rematch")
    a.send(type="ready", client_seed="a-seed")
    a.send(type="ready", ready=False)
    a.send(type="ready")
    b.room = code
    b.send(type="ready", client_seed="b-seed")
    first, second = (a, b) if a.last("match_start")["seat"] == 0 else (b, a)
    mid = h.match(a).id
    second.send(type="explore", cell=[0, 0])
    first.send(type="plant", cell=[0, 0])
    first.send(type="explore", cell=[9, 0])
    first.send(type="explore", cell="a1")
    first.send(type="explore", cell=[0, 0], match_id="0" * 16)
    first.send(type="explore", cell=[0, 0], match_id="nothex")
    first.send(type="explore", cell=[0, 0], seq=99)
    first.send(type="explore", cell=[0, 0], seq=-1)
    first.send(type="flag", cell=[0, 0])
    first.send(type="leave")
    first.send(type="get_record", match_id=mid)
    first.send(type="get_record", match_id="f" * 16)
    _opening(h, first, second)
    state = h.match(a).state
    by_seat = {first.seat: first, second.seat: second}
    mover = by_seat[state.to_move]
    opened = next(cells(state.revealed))
    mover.send(type="explore", cell=_cell(opened))  # revealed
    own = next(cells(state.mines[state.to_move]))
    mover.send(type="explore", cell=_cell(own))  # own_mine
    mover.send(type="unflag", cell=_cell(own))  # no_marker
    mover.send(type="end_turn")  # wrong_phase
    free = state.explorable(state.to_move) & ~state.any_mine
    f1, f2 = list(cells(free))[:2]
    mover.send(type="flag", cell=_cell(f1), id="f")
    mover.send(type="flag", cell=_cell(f2))  # quota_used
    mover.send(type="explore", cell=_cell(f1))  # marked
    other = by_seat[1 - state.to_move]
    other.send(type="unflag", cell=_cell(f1))  # not_your_turn
    mover.send(type="unflag", cell=_cell(f1), seq=h.match(a).seq)
    mover.send(type="bye")
    h.advance(1.0)
    h.turn()
    return _capture(h)


def scenario_random_walks(seed: int) -> Callable[[], Capture]:
    """Seeded random play from each seat's own view, legal and illegal requests mixed."""

    def run() -> Capture:
        rng = random.Random(seed)
        h = Harness(seed=seed)
        first, second = h.start((f"w{seed}a", f"w{seed}b"))
        for _match in range(2):
            by_seat = {first.seat: first, second.seat: second}
            for _ in range(400):
                live = h.match(first)
                if live.over:
                    break
                seat = live.state.to_move
                client = by_seat[seat]
                view = view_of_state(client.last("state"))
                roll = rng.random()
                if roll < 0.05:
                    h.advance(rng.choice((5.0, 19.0, 21.0)))
                    h.turn()
                    continue
                if roll < 0.12:
                    kind = rng.choice(("explore", "plant", "flag", "unflag", "end_turn"))
                    msg: dict[str, Any] = {"type": kind}
                    if kind != "end_turn":
                        msg["cell"] = [rng.randrange(8), rng.randrange(8)]
                    by_seat[rng.randrange(2)].send(**msg, seq=rng.choice((None, live.seq)))
                    continue
                moves = bots.legal_moves(view)
                if not moves:
                    h.advance(21.0)
                    h.turn()
                    continue
                move = rng.choice(moves)
                client.send(**move_json(move, seq=live.seq, id=rng.randrange(1000)))
            else:
                first.send(type="resign")
            first.send(type="rematch", client_seed=f"r{seed}")
            second.send(type="rematch")
            if h.match(first).over:
                break
        return _capture(h)

    return run


def scenario_lifecycle() -> Capture:
    h = Harness(seed=71)
    a, b = h.pair(("l-1", "l-2"))
    b.send(type="leave")
    c = h.connect("10.0.0.3")
    c.send(type="join", room=a.room, name="Cy")
    c.drop()
    lonely = h.connect("10.0.0.4")
    lonely.send(type="create_room", name="Lone")
    h.advance(24 * 3600 + 700)
    h.core.rooms.sweep()
    h.turn()
    h.core.stop("shutdown")
    h.turn()
    return _capture(h)


def scenario_score_win() -> Capture:
    """O9/O10 with a winner: the first player flags an opponent mine once, then safe play to the end."""
    h = Harness(seed=22)
    first, second = h.start(("w-one", "w-two"))
    _opening(h, first, second)
    by_seat = {first.seat: first, second.seat: second}
    flagged = False
    for _ in range(500):
        state = h.match(first).state
        if state.over:
            break
        seat = state.to_move
        if seat == 0 and not flagged and state.phase.value == "end_wait":
            target = state.mines[1] & ~state.mines[0] & ~state.any_marker & ~state.revealed
            if target:
                by_seat[0].send(type="flag", cell=_cell(next(cells(target))))
                flagged = True
        by_seat[state.to_move].send(**oracle_message(h.match(first).state))
    return _capture(h)


def scenario_expired_and_replaced() -> Capture:
    """O12: a seat replaced by its own resume, a grace that runs out while the opponent is away too."""
    h = Harness(seed=81)
    first, second = h.start()
    _opening(h, first, second)
    twin = h.connect("10.0.0.1")
    twin.send(type="resume", room=first.room, token=first.token)  # the old connection is replaced
    twin.room, twin.token = first.room, first.token
    twin.drop()
    h.advance(10)
    second.drop()
    h.advance(115)
    h.turn()  # the first grace ran out; the opponent is still within its own
    back = h.connect("10.0.0.1")
    back.send(type="resume", room=first.room, token=first.token)
    back.send(type="end_turn")
    back.send(type="resign")
    other = h.connect("10.0.0.2")
    other.send(type="resume", room=first.room, token=second.token)  # the seat that ran out loses
    return _capture(h)


def scenario_limits() -> Capture:
    h = Harness(
        seed=91, rate_per_second=1.0, rate_burst=3.0, max_line=200, idle_timeout=15.0,
        max_connections_per_address=2, max_rooms=2,
    )
    a = h.connect("10.1.0.1")
    for _ in range(5):
        a.send(type="ping")
    h.advance(10)
    a.send_raw(b'{"type":"ping","pad":"' + b"x" * 300 + b'"}')
    b = h.connect("10.1.0.2")
    b.send(type="create_room", name="B")
    c = h.connect("10.1.0.3")
    c.send(type="create_room", name="C")
    d = h.connect("10.1.0.4")
    d.send(type="create_room", name="D")
    h.connect("10.1.0.4", hello=False)
    h.core.connection_made(next(h.pids), "10.1.0.4", "192.168.1.5", 47650)
    h.turn()
    h.advance(16)
    h.turn()
    return _capture(h)


SCENARIOS: dict[str, Callable[[], Capture]] = {
    "score_win": scenario_score_win,
    "expired_and_replaced": scenario_expired_and_replaced,
    "limits": scenario_limits,
    "ko_seat0_loses": scenario_ko(0),
    "ko_seat1_loses": scenario_ko(1),
    "score": scenario_score,
    "resign_seat0": scenario_resign(0),
    "resign_seat1": scenario_resign(1),
    "disconnect_and_void": scenario_disconnect_and_void,
    "timeouts": scenario_timeouts,
    "refusals": scenario_refusals,
    "lifecycle": scenario_lifecycle,
    **{f"random_walk_{s}": scenario_random_walks(s) for s in (101, 202, 303, 404, 505, 606)},
}


def run_all() -> dict[str, Capture]:
    return {name: run() for name, run in SCENARIOS.items()}


def load_golden() -> dict[str, Capture]:
    with gzip.open(GOLDEN, "rt", encoding="utf-8") as f:
        data: dict[str, Capture] = json.load(f)
    return data


def write_golden() -> None:
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    data = run_all()
    with gzip.GzipFile(GOLDEN, "wb", mtime=0) as f:
        f.write(json.dumps(data, ensure_ascii=False, indent=0, sort_keys=True).encode("utf-8"))
    lines = sum(len(v) for cap in data.values() for v in cap.values())
    print(f"wrote {GOLDEN}: {len(data)} scenarios, {lines} lines")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write_golden()
    else:
        print(__doc__)
