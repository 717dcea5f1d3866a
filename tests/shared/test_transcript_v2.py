"""R3c: the version 2 whole-match transcript against test vectors made by a second implementation.

The vectors (``tests/support/vectors/transcript_v2.json``) are NOT computed with
``shared/fairness/transcript.py``: :func:`ref_h0`, :func:`ref_step` and :func:`ref_hashes` below
are a plain re-reading of the documented text (RECORD.md "Fairness data", the module docstring of
``transcript.py``) — string concatenation and ``hashlib`` — and :func:`ref_hashes` follows the
deadlines with the independent rules oracle (``support/reference_rules.py``), not the engine's
``restarts_deadline``. The tests check that the file is what
this reference gives, and that ``transcript.py`` and the verifier agree with it.
To write the vectors again: ``PYTHONPATH=tests .venv/bin/python tests/shared/test_transcript_v2.py``.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

import pytest
from support import fair_records as fr
from support.reference_rules import RefMatch

from mineduel.shared.fairness import transcript
from mineduel.shared.fairness.verify import verify_record

VECTORS = Path(__file__).resolve().parents[1] / "support" / "vectors" / "transcript_v2.json"


# ----- the reference: the documented text, hashed ------------------------------------------------------------


def _sha3(text: str) -> str:
    return hashlib.sha3_256(text.encode("utf-8")).hexdigest()


def ref_h0_text(match_id: str, commitment: str, seeds: list[str], nonce: int, first_player: str,
                join_order: list[int], turn_ms: int, start_ms: int, previous: str | None) -> str:
    fields = [
        "mine-duel/match/2", match_id, commitment, seeds[0], seeds[1], str(nonce), first_player,
        str(join_order[0]) + "," + str(join_order[1]), str(turn_ms), str(start_ms), "-" if previous is None else previous,
    ]
    return "|".join(fields)


def ref_step_text(h: str, i: int, seat: int, kind: str, target: str, at_ms: int, auto: bool, deadline_ms: int | None) -> str:
    fields = ["mine-duel/step/2", h, str(i), str(seat), kind, target, str(at_ms), "1" if auto else "0",
              "-" if deadline_ms is None else str(deadline_ms)]
    return "|".join(fields)


def ref_h0(**inputs: Any) -> str:
    return _sha3(ref_h0_text(**inputs))


def ref_step(**inputs: Any) -> str:
    return _sha3(ref_step_text(**inputs))


def ref_target(action: dict[str, Any], commitment: str | None) -> str:
    if action["type"] == "plant":
        assert commitment is not None
        return commitment
    if action["type"] in ("explore", "flag", "unflag"):
        return f"{action['cell'][0]},{action['cell'][1]}"
    return "-"


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def ref_hashes(record: dict[str, Any]) -> list[str]:
    """h_0 … h_n of a version 2 record, read from the documentation and the rules oracle.

    The deadline restarts after an action that starts the next opening step (the phase or the seat
    to move changes while the opening goes on, or the first turn starts) or a new normal turn (the
    turn number goes up), unless the match is over (then ``-``).
    """
    fair, times = record["fairness"], record["times"]
    turn_ms, start_ms = _ms(times["turn_seconds"]), _ms(times["clock_started"])
    h = ref_h0(match_id=record["match_id"], commitment=fair["commitment"], seeds=fair["client_seeds"],
               nonce=fair["nonce"], first_player=fair["first_player"], join_order=fair["join_order"],
               turn_ms=turn_ms, start_ms=start_ms, previous=fair["previous_transcript"])
    out = [h]
    oracle = RefMatch("online")
    deadline: int | None = start_ms + turn_ms
    plants = 0
    for i, action in enumerate(record["actions"]):
        before = (oracle.phase, oracle.to_move, oracle.turn)
        cell = tuple(action["cell"]) if "cell" in action else None
        refused = oracle.act(action["seat"], action["type"], cell)
        at_ms = _ms(action["at"])
        if refused is None:
            if oracle.over:
                deadline = None
            else:
                new_turn = oracle.turn > before[2]
                next_step = before[0] in ("open_explore", "open_plant") and (oracle.phase, oracle.to_move) != before[:2]
                if new_turn or next_step:
                    deadline = at_ms + turn_ms
        commitment = None
        if action["type"] == "plant":
            commitment = fair["mine_commitments"][plants]
            plants += 1
        h = ref_step(h=h, i=i, seat=action["seat"], kind=action["type"], target=ref_target(action, commitment),
                     at_ms=at_ms, auto=action.get("auto", False) is True, deadline_ms=deadline)
        out.append(h)
    return out


# ----- the vectors -----------------------------------------------------------------------------------------------

_C = hashlib.sha3_256(b"server seed for the vectors").hexdigest()
_PREV = hashlib.sha3_256(b"the previous match").hexdigest()
_MINE = hashlib.sha3_256(b"a mine commitment").hexdigest()

H0_CASES: list[dict[str, Any]] = [
    {"match_id": "b048f279829caa65", "commitment": _C, "seeds": ["ann-42", "bob-7"], "nonce": 1,
     "first_player": "draw", "join_order": [0, 1], "turn_ms": 20000, "start_ms": 1700000000000, "previous": None},
    {"match_id": "b048f279829caa65", "commitment": _C, "seeds": ["ann-42", "bob-7"], "nonce": 1,
     "first_player": "draw", "join_order": [1, 0], "turn_ms": 20000, "start_ms": 1700000000000, "previous": None},
    {"match_id": "0c1d2e3f40516273", "commitment": _C, "seeds": ["bob-7", "ann-42"], "nonce": 2,
     "first_player": "swap", "join_order": [1, 0], "turn_ms": 7500, "start_ms": 1700000123457, "previous": _PREV},
    {"match_id": "a|b", "commitment": _C, "seeds": ["", "日本語 ñ"], "nonce": 9007199254740991,
     "first_player": "swap", "join_order": [0, 1], "turn_ms": 1, "start_ms": -5, "previous": _PREV},
]

STEP_CASES: list[dict[str, Any]] = [
    {"h": _PREV, "i": 0, "seat": 0, "kind": "explore", "target": "3,4", "at_ms": 1700000001234, "auto": False,
     "deadline_ms": 1700000021234},
    {"h": _PREV, "i": 1, "seat": 1, "kind": "timeout", "target": "-", "at_ms": 1700000041234, "auto": True,
     "deadline_ms": 1700000041234},
    {"h": _PREV, "i": 2, "seat": 1, "kind": "explore", "target": "0,0", "at_ms": 1700000041234, "auto": True,
     "deadline_ms": 1700000061234},
    {"h": _PREV, "i": 3, "seat": 0, "kind": "plant", "target": _MINE, "at_ms": 1700000050000, "auto": False,
     "deadline_ms": 1700000070000},
    {"h": _PREV, "i": 10, "seat": 0, "kind": "flag", "target": "7,7", "at_ms": 1700000080001, "auto": False,
     "deadline_ms": 1700000090000},
    {"h": _PREV, "i": 11, "seat": 0, "kind": "unflag", "target": "7,7", "at_ms": 1700000080002, "auto": False,
     "deadline_ms": 1700000090000},
    {"h": _PREV, "i": 12, "seat": 0, "kind": "end_turn", "target": "-", "at_ms": 1700000080003, "auto": False,
     "deadline_ms": 1700000100003},
    {"h": _PREV, "i": 13, "seat": 1, "kind": "resign", "target": "-", "at_ms": 1700000080004, "auto": False,
     "deadline_ms": None},
    {"h": _PREV, "i": 14, "seat": 0, "kind": "disconnect", "target": "-", "at_ms": 1700000080004, "auto": True,
     "deadline_ms": None},
    {"h": _PREV, "i": 15, "seat": 1, "kind": "void", "target": "-", "at_ms": 0, "auto": True, "deadline_ms": None},
]


def _match_cases() -> list[dict[str, Any]]:
    """Small honest matches (a first match, its rematch, one with opening timeouts), with every h_seq."""
    room = fr.honest_room(20240614, 2, endings=0.0, max_actions=24)
    timeouts = fr.honest_match(7, timeouts=0.6, endings=0.0, max_actions=16)
    out = []
    for name, match in (("first match", room[0]), ("its rematch", room[1]), ("opening timeouts", timeouts)):
        out.append({"name": name, "record": match.record, "hashes": ref_hashes(match.record)})
    return out


def make_vectors() -> dict[str, Any]:
    return {
        "about": "Test vectors of the fairness version 2 whole-match transcript (RULES.md R3c, docs/RECORD.md). "
                 "Each h0/step case gives its inputs, the exact UTF-8 text hashed and its SHA3-256 hex digest; each "
                 "match gives a version 2 record and h_0 .. h_n after each of its actions. Made by "
                 "tests/shared/test_transcript_v2.py's plain reference (hashlib on the documented text), not by "
                 "shared/fairness/transcript.py.",
        "h0": [{**case, "text": ref_h0_text(**case), "hash": ref_h0(**case)} for case in H0_CASES],
        "step": [{**case, "text": ref_step_text(**case), "hash": ref_step(**case)} for case in STEP_CASES],
        "matches": _match_cases(),
    }


@pytest.fixture(scope="module")
def vectors() -> dict[str, Any]:
    return json.loads(VECTORS.read_text(encoding="utf-8"))


def test_r3c_the_vectors_file_is_what_the_plain_reference_gives(vectors):
    """R3c: the stored vectors are the reference's (regenerate them by running this file).

    The matches' records are stored as made; their hashes are recomputed from the stored record, so
    the file does not depend on how ``fair_records`` plays a match today.
    """
    fresh = json.loads(json.dumps(make_vectors()))
    assert vectors["h0"] == fresh["h0"] and vectors["step"] == fresh["step"]
    for match in vectors["matches"]:
        assert match["hashes"] == ref_hashes(match["record"]), match["name"]


def test_r3c_h0_matches_the_vectors(vectors):
    """R3c: ``transcript.match_start`` hashes exactly the documented h_0 text."""
    for case in vectors["h0"]:
        got = transcript.match_start(case["match_id"], case["commitment"], case["seeds"], case["nonce"],
                                     case["first_player"], case["join_order"], case["turn_ms"], case["start_ms"],
                                     case["previous"])
        assert got == case["hash"] == _sha3(case["text"]), case


def test_r3c_step_matches_the_vectors(vectors):
    """R3c: ``transcript.step`` hashes exactly the documented step text (target, auto, deadline ``-``)."""
    for case in vectors["step"]:
        got = transcript.step(case["h"], case["i"], case["seat"], case["kind"], case["target"], case["at_ms"],
                              case["auto"], case["deadline_ms"])
        assert got == case["hash"] == _sha3(case["text"]), case


def test_r3c_target_of_each_action_type():
    """R3c: a cell action's target is ``row,col``, a plant's its mine commitment (never its cell), else ``-``."""
    assert transcript.target_of("explore", 8 * 3 + 4, None) == "3,4"
    assert transcript.target_of("flag", 63, None) == "7,7" and transcript.target_of("unflag", 0, None) == "0,0"
    assert transcript.target_of("plant", 5, _MINE) == _MINE
    for kind in ("end_turn", "timeout", "resign", "disconnect", "void"):
        assert transcript.target_of(kind, None, None) == "-"
    with pytest.raises(ValueError):
        transcript.target_of("plant", 5, None)
    assert transcript.millis(1700000000.0005) in (1700000000000, 1700000000001)
    assert transcript.millis(20.0) == 20000 and transcript.millis(1700000041.234) == 1700000041234


def test_r3c_whole_matches_recompute_to_the_vectors(vectors):
    """R3c: every h_seq of the vector matches; the record's transcript is h_n and it verifies (version 2)."""
    assert {m["name"] for m in vectors["matches"]} == {"first match", "its rematch", "opening timeouts"}
    for match in vectors["matches"]:
        record, hashes = match["record"], match["hashes"]
        assert len(hashes) == len(record["actions"]) + 1
        assert record["fairness"]["transcript"] == hashes[-1]
        assert ref_hashes(record) == hashes
        report = verify_record(record)
        assert report.ok and report.version == 2, report.text()
    auto = [a for m in vectors["matches"] for a in m["record"]["actions"] if a.get("auto")]
    assert {"timeout", "explore"} <= {a["type"] for a in auto}  # the vectors cover the opening's auto-moves


def test_r3c_the_rematch_vector_links_the_first_match(vectors):
    """O14/R3c: a rematch's h_0 folds in the previous match's final hash."""
    first, rematch = vectors["matches"][0]["record"], vectors["matches"][1]["record"]
    assert rematch["fairness"]["previous_transcript"] == first["fairness"]["transcript"]
    assert rematch["fairness"]["first_player"] == "swap" and rematch["fairness"]["nonce"] == 2


def test_r3c_the_transcript_changes_with_every_field():
    """R3c: each field of h_0 and of a step changes the hash (nothing in them is decorative)."""
    base = H0_CASES[2]
    seen = {ref_h0(**base)}
    for key, other in [("match_id", "x"), ("commitment", _MINE), ("seeds", ["ann-42", "bob-7"]), ("nonce", 3),
                       ("first_player", "draw"), ("join_order", [0, 1]), ("turn_ms", 7501), ("start_ms", 1),
                       ("previous", None)]:
        value = transcript.match_start(**{**_positional_h0(base), **_positional_h0({**base, key: other})})
        assert value not in seen, key
        seen.add(value)
    step = STEP_CASES[0]
    seen = {ref_step(**step)}
    for key, other in [("h", _C), ("i", 1), ("seat", 1), ("kind", "flag"), ("target", "3,5"), ("at_ms", 1700000001235),
                       ("auto", True), ("deadline_ms", None)]:
        case = {**step, key: other}
        value = transcript.step(case["h"], case["i"], case["seat"], case["kind"], case["target"], case["at_ms"],
                                case["auto"], case["deadline_ms"])
        assert value not in seen, key
        seen.add(value)


def _positional_h0(case: dict[str, Any]) -> dict[str, Any]:
    return {"match_id": case["match_id"], "commitment": case["commitment"], "client_seeds": case["seeds"],
            "nonce": case["nonce"], "first_player": case["first_player"], "join_order": case["join_order"],
            "turn_ms": case["turn_ms"], "start_ms": case["start_ms"], "previous": case["previous"]}


def test_r3c_reference_and_module_agree_on_random_honest_matches():
    """R3c: over many honest matches, the plain reference and the module (through the records) agree."""
    for seed in random.Random(14).sample(range(10_000), 25):
        match = fr.honest_match(seed)
        assert ref_hashes(match.record)[-1] == match.record["fairness"]["transcript"], seed


if __name__ == "__main__":
    VECTORS.write_text(json.dumps(make_vectors(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {VECTORS}")
