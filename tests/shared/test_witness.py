"""The player's witness, ``mine-duel-witness/1`` (RECORD.md; shared/fairness/witness.py): strict reading."""

from __future__ import annotations

import copy
import json
import math

import pytest
from support import fair_records as fr

from mineduel.shared.fairness import witness as wf
from mineduel.shared.wire.messages import Result, Reveal


@pytest.fixture(scope="module")
def honest():
    return fr.honest_room(3, 2)


def test_an_honest_witness_reads_and_writes_back_the_same(honest):
    """R3c: a witness as the client keeps it parses; to_json gives the same JSON object back."""
    for match in honest:
        for data in match.witnesses:
            w = wf.parse(data)
            assert w.to_json() == data
            assert wf.loads(json.dumps(data)) == w == wf.loads(w.dumps().encode("utf-8"))
            assert w.match_id == match.params.match_id and w.seat in (0, 1)
    rematch = wf.parse(honest[1].witnesses[0])
    assert rematch.previous is not None and rematch.previous.transcript == honest[0].record["fairness"]["transcript"]
    assert wf.parse(honest[0].witnesses[1]).previous is None


def test_unknown_keys_are_ignored_and_the_unknowns_may_be_null(honest):
    """RECORD.md: a client that does not know the seed it sent (resumed elsewhere), its name, or has seen
    no state yet writes null; extra keys of another client are ignored."""
    data = copy.deepcopy(honest[0].witnesses[0])
    data.update(client_seed=None, commitment_before_ready=None, transcript=None, end=None, extra={"x": 1})
    data["names"]["me"] = None
    w = wf.parse(data)
    assert (w.client_seed, w.commitment_before_ready, w.transcript, w.end, w.name_me) == (None, None, None, None, None)


def _set(data, path, value):
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is _DROP:
        del target[path[-1]]
    else:
        target[path[-1]] = value


_DROP = object()

BAD_FIELDS = [
    (("format",), "mine-duel-witness/2", "witness.format"),
    (("format",), _DROP, "witness.format"),
    (("match_id",), "", "witness.match_id"),
    (("match_id",), 5, "witness.match_id"),
    (("room",), None, "witness.room"),
    (("server",), _DROP, "witness.server"),
    (("seat",), True, "witness.seat"),
    (("seat",), 2, "witness.seat"),
    (("seat",), 0.0, "witness.seat"),
    (("seed_index",), -1, "witness.seed_index"),
    (("client_seed",), 7, "witness.client_seed"),
    (("commitment_before_ready",), "AB" * 32, "witness.commitment_before_ready"),
    (("commitment_before_ready",), "ab" * 31, "witness.commitment_before_ready"),
    (("commitment_before_ready",), "g" * 64, "witness.commitment_before_ready"),
    (("names",), ["Ann", "Bob"], "witness.names"),
    (("names", "opponent"), None, "witness.names.opponent"),
    (("names", "me"), _DROP, "witness.names.me"),
    (("match_start",), None, "witness.match_start"),
    (("match_start", "commitment"), "0" * 65, "witness.match_start.commitment"),
    (("match_start", "client_seeds"), ["a"], "witness.match_start.client_seeds"),
    (("match_start", "client_seeds"), ["a", 1], "witness.match_start.client_seeds[1]"),
    (("match_start", "nonce"), "1", "witness.match_start.nonce"),
    (("match_start", "nonce"), False, "witness.match_start.nonce"),
    (("match_start", "first_player_rule"), "coin", "witness.match_start.first_player_rule"),
    (("match_start", "first"), 0, "witness.match_start.first"),
    (("match_start", "turn_seconds"), math.nan, "witness.match_start.turn_seconds"),
    (("match_start", "turn_seconds"), "20", "witness.match_start.turn_seconds"),
    (("match_start", "started"), math.inf, "witness.match_start.started"),
    (("match_start", "started"), 10**400, "witness.match_start.started"),
    (("match_start", "turn_seconds"), 1.7e308, "witness.match_start.turn_seconds"),
    (("previous",), "abc", "witness.previous"),
    (("previous",), {"match_id": "x", "transcript": "zz"}, "witness.previous.transcript"),
    (("previous",), {"transcript": "0" * 64}, "witness.previous.match_id"),
    (("plants",), {}, "witness.plants"),
    (("plants",), [{"seq": -1, "commitment": "0" * 64}], "witness.plants[0].seq"),
    (("plants",), [{"seq": True, "commitment": "0" * 64}], "witness.plants[0].seq"),
    (("plants",), [{"seq": 3, "commitment": "0" * 64}, {"seq": 3, "commitment": "1" * 64}], "witness.plants[1].seq"),
    (("plants",), [{"seq": 3, "commitment": None}], "witness.plants[0].commitment"),
    (("plants",), [7], "witness.plants[0]"),
    (("transcript",), {"seq": 1.5, "hash": "0" * 64}, "witness.transcript.seq"),
    (("transcript",), {"seq": -3, "hash": "0" * 64}, "witness.transcript.seq"),
    (("transcript",), {"seq": 3, "hash": 0}, "witness.transcript.hash"),
    (("transcript",), _DROP, "witness.transcript"),
    (("end",), [], "witness.end"),
    (("end", "turns"), -1, "witness.end.turns"),
    (("end", "turns"), "2", "witness.end.turns"),
    (("end", "elapsed"), None, "witness.end.elapsed"),
    (("end", "result"), {"outcome": "won"}, "witness.end.result"),
    (("end", "result"), "win", "witness.end.result"),
    (("end", "reveal"), {"mines": ["........"] * 7}, "witness.end.reveal"),
    (("end", "reveal", "ko_cell"), [9, 9], "witness.end.reveal"),
]


@pytest.mark.parametrize(("path", "value", "named"), BAD_FIELDS, ids=[f"{'.'.join(p)}={v!r:.20}" for p, v, _ in BAD_FIELDS])
def test_every_field_is_checked_and_the_message_names_it(honest, path, value, named):
    """parse is strict: a wrong type, a bad hex, a negative seq, a bool for an int or an unknown format
    raises InvalidWitness naming the field."""
    data = copy.deepcopy(honest[1].witnesses[0])
    assert data["end"] is not None
    _set(data, path, value)
    with pytest.raises(wf.InvalidWitness) as caught:
        wf.parse(data)
    assert named in str(caught.value)
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize("text", ["", "{", "[]", "null", '"x"', "NaN", '{"format": NaN}', "[" * 100_000, b"\xff\xfe"])
def test_loads_refuses_what_is_not_a_witness(text):
    """loads: not JSON, not an object, NaN, nesting, bad UTF-8 — InvalidWitness, never another error."""
    with pytest.raises(wf.InvalidWitness):
        wf.loads(text)


def test_with_state_and_with_end_keep_what_a_client_saw(honest):
    """The pure helpers a client may use: plants are merged by seq, the transcript never goes back."""
    data = copy.deepcopy(honest[0].witnesses[0])
    data.update(plants=[], transcript=None, end=None)
    w = wf.parse(data)
    a, b = "a" * 64, "b" * 64
    w = w.with_state(3, a, [(2, b)]).with_state(5, b, [(4, a), (2, b)]).with_state(4, a)  # the last is older
    assert [p.seq for p in w.plants] == [2, 4] and w.transcript == wf.TranscriptSeen(5, b)
    result = Result("win", "me", "ko", None)
    reveal = Reveal(["........"] * 8, ["........"] * 8, ["........"] * 8, None)
    w = w.with_end(result, reveal, 3, 12.5)
    assert wf.parse(w.to_json()) == w
    with pytest.raises(wf.InvalidWitness):
        w.with_state(-1, a)
