"""No leak of hidden state, as properties over many random matches (V2, V4, V5, R3b).

Matches are played through ``ServerCore`` with random legal moves, random timeouts and
resignations; every byte sent to a seat before the end is checked against the server's truth.
"""

from __future__ import annotations

import json
import random
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from mineduel.server.testing import Harness
from mineduel.shared.bitboard import NEIGHBOURS
from mineduel.shared.engine import Action, ActionType, Phase

SECRETS = (b"server_seed", b"salt", b'"reveal"', b'"record"', b'"mines"', b"overlap")
_HASHES = re.compile(rb'"(commitment|transcript)":"[0-9a-f]{64}"')


def _play(h: Harness, rng: random.Random, exclude: frozenset[int] = frozenset(), script=None, max_steps: int = 400):
    """Play one match to its end (or ``max_steps``) with random legal moves; ``script`` may force some."""
    first, second = h.start()
    match = h.match(first)
    clients = {first.seat: first, second.seat: second}
    scripted_done = script is None
    for _ in range(max_steps):
        if match.over:
            break
        state = match.state
        forced = script(match) if script is not None else None
        if forced is not None:
            reply = clients[forced.seat].send(type=forced.type.value, cell=list(divmod(forced.cell, 8)))
            assert reply[-1]["type"] == "ok", reply
            continue
        if not scripted_done:
            scripted_done = script.done(match)
        roll = rng.random()
        if roll < 0.04 and script is None:
            h.advance(20)  # a timeout (O4 auto-move or O5 pass)
            continue
        if roll < 0.045 and scripted_done:
            clients[rng.choice((0, 1))].send(type="resign")
            continue
        options = [a for a in state.legal_actions() if a.cell is None or a.cell not in exclude]
        if script is not None:
            options = [a for a in options if a.type is not ActionType.PLANT or a.cell not in exclude]
            hidden = script.explore_exclude(match)
            options = [a for a in options if a.type is not ActionType.EXPLORE or a.cell not in hidden]
        if not options:
            h.advance(20)  # nothing allowed by the exclusions: let the turn time out (O5)
            continue
        action = rng.choice(options)
        msg = {"type": action.type.value}
        if action.cell is not None:
            msg["cell"] = list(divmod(action.cell, 8))
        clients[action.seat].send(**msg)
    return first, second, match


def _lines_before_end(client) -> list[bytes]:
    lines = client.h.out.lines[client.pid]
    for i, line in enumerate(lines):
        if line.startswith(b'{"type":"match_end"'):
            return lines[:i]
    return list(lines)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.integers(0, 2**32 - 1))
def test_v4_no_message_before_the_end_holds_the_opponents_mines(seed):
    """V4: before the end no message to a seat names an opponent mine cell or an ownership bit; secrets stay home."""
    rng = random.Random(seed)
    h = Harness(seed=seed)
    first, second, match = _play(h, rng)
    truth = match.state.mines
    ko = match.state.ko_cell
    for client in (first, second):
        me = client.seat
        for line in _lines_before_end(client):
            for secret in SECRETS:
                assert secret not in line, (secret, line)
            msg = json.loads(line)
            if msg["type"] != "state":
                continue
            own = {r * 8 + c for r, row in enumerate(msg["board"]["my_mines"]) for c, ch in enumerate(row) if ch == "x"}
            assert own <= {c for c in range(64) if truth[me] >> c & 1}
            for event in msg["events"]:
                if event["by"] == "opponent" and event["action"] == "plant":
                    assert "cell" not in event
                if "cell" in event and event["action"] == "explore":
                    cell = event["cell"][0] * 8 + event["cell"][1]
                    # An explored cell is public; only the final KO cell may hold the opponent's mine.
                    assert not (truth[1 - me] >> cell & 1) or cell == ko


def _counterfactual(seed: int, world: int) -> tuple[list[bytes], bool]:
    """One match where seat 0's initial mine is on c (world 1) or d (world 2); seat 1 plants c then d."""
    rng = random.Random(seed)
    cells = rng.sample(range(64), 2)
    c, d = cells
    x_mine = c if world == 1 else d

    class Script:
        def __call__(self, match):
            s = match.state
            if s.phase is Phase.OPEN_PLANT and s.to_move == 0:
                return Action(0, ActionType.PLANT, x_mine)
            if s.phase is Phase.OPEN_PLANT and s.to_move == 1:
                return Action(1, ActionType.PLANT, c)
            if s.phase is Phase.PLANT and s.to_move == 1 and not s.mines[1] >> d & 1:
                return Action(1, ActionType.PLANT, d)
            return None

        def done(self, match):
            return bool(match.state.mines[1] >> d & 1)

        def explore_exclude(self, match):
            # Until seat 1 has planted d the two worlds' mine unions differ ({c} vs {d}): keep
            # explores away from both neighbourhoods so B4 numbers cannot differ meanwhile.
            if self.done(match):
                return ()
            return {n for cell in (c, d) for n in range(64) if NEIGHBOURS[cell] >> n & 1}

    h = Harness(seed=seed)
    _, y, match = _play(h, random.Random(seed + 1), exclude=frozenset(cells), script=Script())
    overlapped = bool(match.state.mines[0] & match.state.mines[1])
    lines = [_HASHES.sub(rb'"\1":"*"', line) for line in h.out.lines[y.pid] if not line.startswith(b'{"type":"match_end"')]
    return lines, overlapped


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.integers(0, 2**32 - 1))
def test_v5_a_seats_messages_are_byte_identical_whether_or_not_its_plant_overlapped(seed):
    """V5/V4: seat 1's plant on c overlaps seat 0's mine in world 1 and not in world 2 (where d's does); seat 1's bytes are identical.

    Seat 1 plants c in the opening and d in its first turn; seat 0's initial mine is on c
    (world 1) or on d (world 2), so the mine union is the same once d is planted and explores
    stay away from c and d until then. Every other choice is random and the same in both worlds.

    (Mine commitments and the transcript are masked: they are salted hashes of different cells
    and look random either way; everything else, numbers and timing included, is the same.)
    """
    one, overlapped_1 = _counterfactual(seed, 1)
    two, overlapped_2 = _counterfactual(seed, 2)
    assert overlapped_1 and overlapped_2  # on c in world 1, on d in world 2
    assert one == two
