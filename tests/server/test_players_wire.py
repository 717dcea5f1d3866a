"""The bytes of PROTOCOL.md §17 in one seeded session, compared with a capture
(``tests/support/data/players_golden.json``): identify, the queue, a match whose confirmation
runs out (the confirmer back in with its time, the other out), a second match played and resigned
with both ratings changed, a profile, the leaderboard and a rename. ``match_end`` is compared by
its ``rating`` only (its record is §10's, pinned by test_wire_golden.py).

To refresh the capture after an intended change of these bytes, write ``session()``'s lines to the
file and say in the commit what changed.
"""

from __future__ import annotations

import json
from pathlib import Path

from support.harness import Harness
from support.players import key

from mineduel.shared.wire import codec

CAPTURE = Path(__file__).resolve().parents[1] / "support" / "data" / "players_golden.json"
KEEP = {"player", "queue", "matched", "room", "profile", "leaderboard", "error", "ok", "room_closed"}


def session() -> list[str]:
    h = Harness(seed=20)
    a, b = h.connect("10.0.0.1"), h.connect("10.0.0.2")
    a.send(type="identify", key=key(1), name="Ann", id=1)
    b.send(type="identify", key=key(2), name="Bob", id=2)
    a.send(type="quick_match", id=3)
    b.send(type="quick_match", id=4)
    h.advance(0)
    h.turn()
    a.room = b.room = a.last("matched")["room"]
    a.send(type="ready", client_seed="ann", id=5)
    h.advance(10)  # Bob never confirms
    h.turn()
    b.send(type="quick_match", id=6)
    h.advance(0)
    h.turn()
    a.send(type="ready", client_seed="ann2", id=7)
    b.send(type="ready", client_seed="bob2", id=8)
    first = a if a.last("match_start")["seat"] == 0 else b
    first.send(type="resign", id=9)
    a.send(type="get_profile", id=10)
    b.send(type="get_leaderboard", id=11)
    b.send(type="rename", name="Robert", id=12)
    out = []
    for c in (a, b):
        for line in h.out.lines[c.pid]:
            msg = codec.decode(line[:-1])
            if msg["type"] == "match_end":
                out.append(codec.encode({"type": "match_end", "rating": msg["rating"]}).decode().rstrip("\n"))
            elif msg["type"] in KEEP:
                out.append(line.decode().rstrip("\n"))
    return out


def test_the_player_messages_are_the_captured_bytes() -> None:
    expected = json.loads(CAPTURE.read_text(encoding="utf-8"))
    got = session()
    assert len(got) == len(expected)
    for i, (e, g) in enumerate(zip(expected, got, strict=True)):
        assert g == e, f"line {i}"


def test_every_captured_line_reads_back_through_the_typed_classes() -> None:
    """The client's strict reader takes every line the server wrote (match_end aside: cut here)."""
    for line in json.loads(CAPTURE.read_text(encoding="utf-8")):
        if '"type":"match_end"' in line:
            continue
        assert codec.encode_message(codec.decode_server(line)) == line.encode() + b"\n"
