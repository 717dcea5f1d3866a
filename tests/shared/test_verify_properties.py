"""Properties of the verifier (R1–R3c, O3–O6, O14): every meaningful single change is detected, and no
input whatever makes it raise.

Deterministic: Hypothesis runs derandomized with a bounded number of examples; the honest matches
come from ``support/fair_records.py`` with fixed seeds.
"""

from __future__ import annotations

import copy
import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import fair_records as fr

from mineduel.shared.cli.verify import main
from mineduel.shared.fairness.verify import INTERNAL_ERROR, VerifyReport, verify, verify_record

PROPERTY = settings(derandomize=True, max_examples=300, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FUZZ = settings(derandomize=True, max_examples=300, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

_MATCHES = [
    fr.honest_match(2),
    fr.honest_match(3, timeouts=0.4),
    *fr.honest_room(9, 2),
    fr.find_match(lambda m: m.record["result"]["reason"] == "score"),
    fr.find_match(lambda m: m.record["result"]["reason"] == "void"),
]
"""Honest matches to change: short and long, many timeouts, a rematch, a score ending, a void."""

CELL_TYPES = ("explore", "plant", "flag", "unflag")
TYPES = (*CELL_TYPES, "end_turn", "timeout", "resign", "disconnect", "void")


def _other_hex(value: str, position: int) -> str:
    digits = "0123456789abcdef"
    i = position % len(value)
    return value[:i] + digits[(digits.index(value[i]) + 1) % 16] + value[i + 1:]


def _other_cell(cell: list[int], shift: int) -> list[int]:
    index = (cell[0] * 8 + cell[1] + 1 + shift % 63) % 64
    return [index // 8, index % 8]


def _change_record(record: dict, data: st.DataObject) -> str:
    """One meaningful change to the record; returns what was changed (for the failure message)."""
    actions, fair, times = record["actions"], record["fairness"], record["times"]
    n = len(actions)
    kind = data.draw(st.sampled_from([
        "cell", "seat", "type", "at", "auto", "drop", "insert", "server_seed", "client_seed", "commitment",
        "mine_commitment", "salt", "nonce", "first_player", "join_order", "previous", "stream_used", "signature",
        "version", "clock_started", "clock_ended", "elapsed", "turn_seconds", "turns", "result", "transcript",
    ]), label="record change")
    i = data.draw(st.integers(0, n - 1), label="action")
    shift = data.draw(st.integers(0, 10_000), label="shift")
    action = actions[i]
    if kind == "cell":
        cells = [k for k, a in enumerate(actions) if "cell" in a]
        action = actions[cells[i % len(cells)]]
        action["cell"] = _other_cell(action["cell"], shift)
    elif kind == "seat":
        action["seat"] = 1 - action["seat"]
    elif kind == "type":
        new = TYPES[(TYPES.index(action["type"]) + 1 + shift % (len(TYPES) - 1)) % len(TYPES)]
        action["type"] = new
        if new in CELL_TYPES and "cell" not in action:
            action["cell"] = [shift % 8, shift // 8 % 8]
        elif new not in CELL_TYPES:
            action.pop("cell", None)
    elif kind == "at":
        action["at"] = round(action["at"] + (1 + shift % 5000) / 1000 * (1 if shift % 2 else -1), 3)
    elif kind == "auto":
        if action.get("auto"):
            del action["auto"]
        else:
            action["auto"] = True
    elif kind == "drop":
        del actions[i]
    elif kind == "insert":
        new_type = TYPES[shift % len(TYPES)]
        new = {"seat": shift // 9 % 2, "type": new_type}
        if new_type in CELL_TYPES:
            new["cell"] = [shift // 18 % 8, shift // 144 % 8]
        new["at"] = actions[i]["at"]
        if shift // 1152 % 2:
            new["auto"] = True
        actions.insert(i + shift // 2304 % 2, new)
    elif kind == "server_seed":
        fair["server_seed"] += "x"
    elif kind == "client_seed":
        fair["client_seeds"][shift % 2] += "x"
    elif kind == "commitment":
        fair["commitment"] = _other_hex(fair["commitment"], shift)
    elif kind == "mine_commitment":
        k = shift % len(fair["mine_commitments"])
        fair["mine_commitments"][k] = _other_hex(fair["mine_commitments"][k], shift // 64)
    elif kind == "salt":
        k = shift % len(fair["salts"])
        fair["salts"][k] = _other_hex(fair["salts"][k], shift // 64)
    elif kind == "nonce":
        fair["nonce"] += 1 + shift % 3
    elif kind == "first_player":
        fair["first_player"] = "swap" if fair["first_player"] == "draw" else "draw"
    elif kind == "join_order":
        fair["join_order"].reverse()
    elif kind == "previous":
        previous = fair["previous_transcript"]
        fair["previous_transcript"] = "ab" * 32 if previous is None else (None if shift % 2 else _other_hex(previous, shift))
    elif kind == "stream_used":
        fair["stream_used"] = max(0, fair["stream_used"] + (1 if shift % 2 else -1))
        if fair["stream_used"] == record["_honest_stream_used"]:
            fair["stream_used"] += 2
    elif kind == "signature":
        fair["signature"] = _other_hex(fair["signature"], shift)
    elif kind == "version":
        fair["version"] = 1 if shift % 2 else 3
    elif kind == "transcript":
        fair["transcript"] = _other_hex(fair["transcript"], shift)
    elif kind == "turns":
        times["turns"] += 1 + shift % 3
    elif kind == "result":
        result = record["result"]
        key = ("winner", "reason", "over")[shift % 3]
        result[key] = {"winner": {0: 1, 1: None, None: 0}, "reason": {"ko": "score"}, "over": {True: False}}[key].get(
            result[key], "ko")
    else:  # one of the clock's times, by 1 ms or more
        times[kind] = round(times[kind] + (1 + shift % 3000) / 1000 * (1 if shift % 2 else -1), 3)
        if kind == "turn_seconds" and times[kind] <= 0:
            times[kind] = 1.0
    return f"{kind} (action {i}, shift {shift})"


def _change_witness(witness: dict, data: st.DataObject) -> str:
    """One meaningful change to the witness."""
    kind = data.draw(st.sampled_from([
        "hash", "seq", "plant_commitment", "plant_seq", "seat", "seed_index", "client_seed", "commitment_before_ready",
        "match_start_commitment", "match_start_seeds", "nonce", "rule", "first", "turn_seconds", "started",
        "name_me", "name_opponent", "room", "match_id", "end_result", "end_reveal", "end_turns", "end_elapsed",
    ]), label="witness change")
    shift = data.draw(st.integers(0, 10_000), label="shift")
    start = witness["match_start"]
    if kind == "hash":
        witness["transcript"]["hash"] = _other_hex(witness["transcript"]["hash"], shift)
    elif kind == "seq":
        seq = witness["transcript"]["seq"]
        witness["transcript"]["seq"] = seq - 1 - shift % max(1, seq) if shift % 2 and seq else seq + 1 + shift % 5
    elif kind in ("plant_commitment", "plant_seq"):
        plants = witness["plants"]
        k = shift % len(plants)
        if kind == "plant_commitment":
            plants[k]["commitment"] = _other_hex(plants[k]["commitment"], shift // 64)
        else:  # to a seq that is not a plant's, or is another plant's (whose commitment differs)
            taken = {p["seq"] for p in plants}
            low = plants[k - 1]["seq"] + 1 if k else 0
            high = plants[k + 1]["seq"] - 1 if k + 1 < len(plants) else plants[k]["seq"] + 50
            choices = [s for s in range(low, high + 1) if s not in taken]
            if not choices:
                plants[k]["commitment"] = _other_hex(plants[k]["commitment"], shift)
            else:
                plants[k]["seq"] = choices[shift % len(choices)]
    elif kind in ("seat", "seed_index"):
        witness[kind] = 1 - witness[kind]
    elif kind == "client_seed":
        witness["client_seed"] += "x"
    elif kind == "commitment_before_ready":
        witness[kind] = _other_hex(witness[kind], shift)
    elif kind == "match_start_commitment":
        start["commitment"] = _other_hex(start["commitment"], shift)
    elif kind == "match_start_seeds":
        start["client_seeds"][shift % 2] += "x"
    elif kind == "nonce":
        start["nonce"] += 1 + shift % 3
    elif kind == "rule":
        start["first_player_rule"] = "swap" if start["first_player_rule"] == "draw" else "draw"
    elif kind == "first":
        start["first"] = "me" if start["first"] == "opponent" else "opponent"
    elif kind in ("turn_seconds", "started"):
        start[kind] = round(start[kind] + (1 + shift % 999) / 1000, 3)
    elif kind == "name_me":
        witness["names"]["me"] += "x"
    elif kind == "name_opponent":
        witness["names"]["opponent"] += "x"
    elif kind == "room":
        witness["room"] += "X"
    elif kind == "match_id":
        witness["match_id"] = _other_hex(witness["match_id"], shift)
    elif kind == "end_result":
        result = witness["end"]["result"]
        if result["winner"] is not None:
            result.update(outcome={"win": "loss", "loss": "win"}[result["outcome"]],
                          winner={"me": "opponent", "opponent": "me"}[result["winner"]])
        else:
            result["reason"] = "ko" if result["reason"] != "ko" else "score"
    elif kind == "end_reveal":
        layer = ("mines", "markers", "marker_correct")[shift % 3]
        alphabet = {"mines": ".mox", "markers": ".mo", "marker_correct": ".ny"}[layer]
        row, col = shift // 3 % 8, shift // 24 % 8
        text = witness["end"]["reveal"][layer][row]
        char = alphabet[(alphabet.index(text[col]) + 1) % len(alphabet)]
        witness["end"]["reveal"][layer][row] = text[:col] + char + text[col + 1:]
    elif kind == "end_turns":
        witness["end"]["turns"] += 1 + shift % 3
    else:
        witness["end"]["elapsed"] = round(witness["end"]["elapsed"] + (1 + shift % 999) / 1000, 3)
    return kind


@PROPERTY
@given(st.data())
def test_r3c_any_single_change_to_a_record_is_detected(data):
    """R1–R3c, O3–O6, O14: change a cell, a seat, a type, a time, a seed, a commitment, the auto flag, drop or
    insert an action, ... — verification (with the player's witness) no longer holds."""
    match = data.draw(st.sampled_from(_MATCHES), label="match")
    seat = data.draw(st.integers(0, 1), label="seat")
    record = copy.deepcopy(match.record)
    record["_honest_stream_used"] = record["fairness"]["stream_used"]
    what = _change_record(record, data)
    del record["_honest_stream_used"]
    assert record != match.record, what
    report = verify_record(record, match.witnesses[seat])
    assert not report.ok, f"{what} was not detected:\n{report.text()}"
    assert all(INTERNAL_ERROR not in c.detail for c in report.checks), report.text()


@PROPERTY
@given(st.data())
def test_r3c_any_single_change_to_a_witness_is_detected(data):
    """R3c: change the witness's hash, seq, a plant, the seed, the seat, the match start or the end —
    the honest record no longer verifies against it."""
    match = data.draw(st.sampled_from(_MATCHES), label="match")
    seat = data.draw(st.integers(0, 1), label="seat")
    witness = copy.deepcopy(match.witnesses[seat])
    what = _change_witness(witness, data)
    assert witness != match.witnesses[seat], what
    report = verify_record(match.record, witness)
    assert not report.ok, f"{what} was not detected:\n{report.text()}"
    assert all(INTERNAL_ERROR not in c.detail for c in report.checks), report.text()


def test_the_honest_matches_of_the_properties_verify():
    """The baseline of both properties: unchanged, every match verifies with each witness."""
    assert {m.record["result"]["reason"] for m in _MATCHES} >= {"score", "void"}
    for match in _MATCHES:
        for witness in match.witnesses:
            report = verify_record(match.record, witness)
            assert report.ok and report.witnessed, report.text()
        assert match.witnesses[0]["plants"] and match.witnesses[0]["end"] is not None


# ----- never raises ---------------------------------------------------------------------------------------------------

_SCALARS = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=70) | st.sampled_from([10**400, -(10**400), 2**63, 2**53, -1, 0, 1, math.nan, math.inf, 1.7e308, "",
                                            "0" * 64, "f" * 64, "F" * 64])
)
GARBAGE = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=25,
)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


def _replace(value, path, new):
    if not path:
        return new
    target = value
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = new
    return value


def _never_raises(report: VerifyReport) -> None:
    assert isinstance(report, VerifyReport)
    assert report.checks and all(INTERNAL_ERROR not in c.detail for c in report.checks), report.text()
    report.text()
    json.dumps(report.to_json())


@FUZZ
@given(GARBAGE, GARBAGE)
def test_verify_never_raises_on_garbage(record, witness):
    """Any JSON-shaped garbage (wrong types, NaN, inf, huge numbers, nesting) as record or witness is
    reported, never raised, and is never a passing record."""
    report = verify_record(record, witness)
    _never_raises(report)
    assert not report.ok
    _never_raises(verify_record(json.dumps(record, allow_nan=True)))


@FUZZ
@given(st.data(), GARBAGE)
def test_verify_never_raises_on_a_record_or_witness_with_one_part_replaced_by_garbage(data, garbage):
    """An honest record or witness with any one value (or object, or list) replaced by garbage: a report,
    never an exception."""
    match = data.draw(st.sampled_from(_MATCHES), label="match")
    record, witness = copy.deepcopy(match.record), copy.deepcopy(match.witnesses[0])
    if data.draw(st.booleans(), label="in the witness"):
        paths = list(_paths(witness))
        witness = _replace(witness, data.draw(st.sampled_from(paths), label="path"), garbage)
    else:
        paths = list(_paths(record))
        record = _replace(record, data.draw(st.sampled_from(paths), label="path"), garbage)
    _never_raises(verify_record(record, witness))
    for report in verify([record, match.record], witness).reports:
        _never_raises(report)


@pytest.mark.parametrize("depth", [50, 5_000, 200_000])
def test_verify_never_raises_on_deep_nesting(match_depth_record, depth):
    """Nesting deeper than any parser allows, as text or as objects, anywhere: a report."""
    deep: object = 1
    for _ in range(depth):
        deep = [deep]
    text = "[" * depth + "]" * depth
    for record in (text, deep, {**match_depth_record, "result": deep}, {**match_depth_record, "players": deep}):
        _never_raises(verify_record(record, deep))
        _never_raises(verify_record(match_depth_record, text))


@pytest.fixture
def match_depth_record():
    return copy.deepcopy(_MATCHES[0].record)


@FUZZ
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_the_command_never_shows_a_traceback(tmp_path_factory, raw):
    """``mine-duel verify FILE``: any bytes give exit 1 or 2, never a traceback."""
    folder = tmp_path_factory.mktemp("fuzz")
    path = folder / "r.json"
    path.write_bytes(raw)
    witness = folder / "w.json"
    witness.write_bytes(raw)
    assert main([str(path)]) in (1, 2)
    assert main([str(path), "--witness", str(witness)]) in (1, 2)
