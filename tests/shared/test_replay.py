"""`mine-duel replay` against RECORD.md: the differential test, the CLI contract, round trips.

The differential test replays thousands of generated records (``strategies.py``) through the
engine (``replay_text``) and through the independent oracle (``reference_rules.py``) and compares
the two outputs field by field. RECORD.md lets tools compare only *whether* a step was refused;
the error codes are compared too, and the only tolerated differences are the ones listed in
``reference_rules.CODE_DIFFERENCES``.
"""

from __future__ import annotations

import functools
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from support import reference_rules as ref
from support.strategies import RandomChooser, draw_style, legal_move, random_records, records

from mineduel.shared.cli.replay import replay_text
from mineduel.shared.fairness import record
from mineduel.shared.fairness.record import InvalidRecord, cells_json, result_json
from mineduel.shared.rules.engine import Action, ActionType, GameState, Refusal, Variant

FORMAT = "mine-duel-record/1"
STEP_KEYS = {"ok", "phase", "to_move", "turn"}
RESULT_KEYS = {"over", "winner", "reason", "scores"}
CELL_KEYS = {"revealed", "by", "number", "marker", "mines"}
PHASES = {"open_explore", "open_plant", "explore", "plant", "end_wait", "over"}
REASONS = {"ko", "all_flagged", "no_explorable", "no_plantable", "score", "resign", "disconnect", "void"}

EXAMPLE_RECORD = {
    "format": "mine-duel-record/1",
    "variant": "online",
    "actions": [
        {"seat": 0, "type": "explore", "cell": [3, 4]},
        {"seat": 1, "type": "timeout"},
        {"seat": 1, "type": "explore", "cell": [0, 0], "auto": True},
        {"seat": 0, "type": "plant", "cell": [2, 2]},
        {"seat": 1, "type": "plant", "cell": [2, 2]},
        {"seat": 0, "type": "flag", "cell": [7, 7]},
        {"seat": 0, "type": "explore", "cell": [5, 5]},
        {"seat": 0, "type": "plant", "cell": [6, 1]},
        {"seat": 0, "type": "unflag", "cell": [7, 7]},
        {"seat": 0, "type": "end_turn"},
        {"seat": 1, "type": "timeout"},
        {"seat": 0, "type": "resign"},
    ],
}


# ----- comparing two replay outputs -----------------------------------------------------------
def same(a: Any, b: Any) -> bool:
    """Equal values of the same JSON type (``true`` is not ``1``, ``1`` is not ``1.0``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def differences(engine: dict[str, Any], oracle: dict[str, Any]) -> tuple[list[str], set[tuple[str, str]]]:
    """Field-by-field differences, and the (engine, oracle) pairs of differing refusal codes."""
    engine = json.loads(json.dumps(engine))  # compare what the CLI would print
    problems: list[str] = []
    codes: set[tuple[str, str]] = set()
    if set(engine) != {"steps", "result", "cells"}:
        problems.append(f"top-level keys {sorted(engine)}")
        return problems, codes
    e_steps, o_steps = engine["steps"], oracle["steps"]
    if len(e_steps) != len(o_steps):
        problems.append(f"{len(e_steps)} steps, expected {len(o_steps)}")
    for i, (e, o) in enumerate(zip(e_steps, o_steps, strict=False)):  # a length difference is reported above
        expected_keys = STEP_KEYS | ({"error"} if not o["ok"] else set())
        if set(e) != expected_keys:
            problems.append(f"step {i}: keys {sorted(e)}, expected {sorted(expected_keys)}")
        if e.get("phase") not in PHASES:
            problems.append(f"step {i}: phase {e.get('phase')!r} is not one of RECORD.md's")
        for key in ("ok", "phase", "to_move", "turn"):
            if not same(e.get(key), o[key]):
                problems.append(f"step {i}: {key} {e.get(key)!r}, oracle {o[key]!r}")
        if not o["ok"] and "error" in e:
            if not (isinstance(e["error"], str) and e["error"]):
                problems.append(f"step {i}: error {e['error']!r} is not a non-empty code")
            elif e["error"] != o["error"]:
                codes.add((e["error"], o["error"]))
    for key in ("over", "winner", "reason", "scores"):
        if not same(engine["result"].get(key), oracle["result"][key]):
            problems.append(f"result {key} {engine['result'].get(key)!r}, oracle {oracle['result'][key]!r}")
    if engine["result"].get("reason") not in REASONS | {None}:
        problems.append(f"result reason {engine['result'].get('reason')!r} is not one of RECORD.md's")
    if set(engine["result"]) != RESULT_KEYS:
        problems.append(f"result keys {sorted(engine['result'])}")
    if len(engine["cells"]) != 64:
        problems.append(f"{len(engine['cells'])} cells")
    for i, (e, o) in enumerate(zip(engine["cells"], oracle["cells"], strict=False)):  # counted above
        if set(e) != CELL_KEYS:
            problems.append(f"cell {divmod(i, 8)}: keys {sorted(e)}")
        for key in ("revealed", "by", "number", "marker", "mines"):
            if not same(e.get(key), o[key]):
                problems.append(f"cell {divmod(i, 8)}: {key} {e.get(key)!r}, oracle {o[key]!r}")
    return problems, codes


def shortest_failing_prefix(rec: dict[str, Any]) -> dict[str, Any]:
    """The shortest prefix of ``rec``'s actions on which engine and oracle already disagree."""
    for n in range(len(rec["actions"]) + 1):
        prefix = {**rec, "actions": rec["actions"][:n]}
        if differences(replay_text(json.dumps(prefix)), ref.replay_record(prefix))[0]:
            return prefix
    return rec


def assert_agree(rec: dict[str, Any], observed_codes: set[tuple[str, str]] | None = None) -> None:
    engine = replay_text(json.dumps(rec))
    oracle = ref.replay_record(rec)
    problems, codes = differences(engine, oracle)
    if problems:
        minimal = shortest_failing_prefix(rec)
        pytest.fail(
            "engine and oracle disagree:\n  "
            + "\n  ".join(problems[:10])
            + f"\nminimal record: {json.dumps(minimal)}"
        )
    unexplained = codes - ref.CODE_DIFFERENCES
    assert not unexplained, f"undocumented refusal-code differences {unexplained} in {json.dumps(rec)}"
    if observed_codes is not None:
        observed_codes |= codes


# ----- the differential test ----------------------------------------------------------------------
SEED = 20240611
COUNT = 2000


@functools.cache
def seeded_records() -> list[dict[str, Any]]:
    """2,000 records from a fixed seed: the same corpus every run."""
    return random_records(seed=SEED, count=COUNT)


@functools.cache
def oracle_corpus() -> tuple[list[dict[str, Any]], frozenset[str]]:
    """The oracle's replay of every seeded record, and which CPU holds (C1.3, C2) were reached."""
    outputs = []
    held: set[str] = set()
    for rec in seeded_records():
        variant, actions = ref.check_record(rec)
        m = ref.RefMatch(variant)
        steps = []
        for action in actions:
            error = m.act(*action)
            step: dict[str, Any] = {"ok": error is None}
            if error is not None:
                step["error"] = error
            step.update(phase=m.phase, to_move=m.to_move, turn=m.turn)
            steps.append(step)
            if m.phase == "explore" and not m.explorable(m.to_move):  # type: ignore[arg-type]
                held.add("C1.3")
            if m.phase == "plant" and not m.plantable(m.to_move):  # type: ignore[arg-type]
                held.add("C2")
        outputs.append({"steps": steps, "result": m.result_json(), "cells": m.cells_json()})
    return outputs, frozenset(held)


def test_differences_detects_every_kind_of_mismatch() -> None:
    """The comparison itself can fail: a changed number, a bool for an int, an extra error key, a code."""
    rec = seeded_records()[0]
    good = ref.replay_record(rec)
    assert differences(good, good) == ([], set())
    bad = json.loads(json.dumps(good))
    first_revealed = next(i for i, c in enumerate(bad["cells"]) if c["revealed"])
    bad["cells"][first_revealed]["number"] += 1
    assert differences(bad, good)[0]
    bad = json.loads(json.dumps(good))
    bad["steps"][0]["turn"] = False  # 0 and false are different JSON
    assert differences(bad, good)[0]
    bad = json.loads(json.dumps(good))
    bad["steps"][0]["error"] = None
    assert differences(bad, good)[0]
    refused = {**rec, "actions": [{"seat": 1, "type": "end_turn"}]}
    out = ref.replay_record(refused)
    other = json.loads(json.dumps(out))
    other["steps"][0]["error"] = "something_else"
    assert differences(other, out) == ([], {("something_else", "not_your_turn")})


def test_oracle_corpus_pass_matches_plain_oracle_replay() -> None:
    """The step-by-step oracle pass used below equals reference_rules.replay_record on a sample."""
    outputs, _ = oracle_corpus()
    for rec, out in list(zip(seeded_records(), outputs, strict=True))[::50]:
        assert out == ref.replay_record(rec)


def test_differential_seeded_records_agree_field_by_field() -> None:
    """2,000 seeded records (both variants, refusals, every ending) replay identically in engine and oracle."""
    observed: set[tuple[str, str]] = set()
    outputs, _ = oracle_corpus()
    for rec, oracle in zip(seeded_records(), outputs, strict=True):
        engine = replay_text(json.dumps(rec))
        problems, codes = differences(engine, oracle)
        if problems:
            pytest.fail(
                "engine and oracle disagree:\n  "
                + "\n  ".join(problems[:10])
                + f"\nminimal record: {json.dumps(shortest_failing_prefix(rec))}"
            )
        observed |= codes
    assert observed <= ref.CODE_DIFFERENCES, observed - ref.CODE_DIFFERENCES


def test_differential_corpus_covers_every_ending_and_refusal() -> None:
    """The seeded corpus holds every RECORD.md reason, unfinished matches, and every kind of refusal."""
    reasons: set[tuple[str, str | None]] = set()
    errors: set[str] = set()
    for rec, out in zip(seeded_records(), oracle_corpus()[0], strict=True):
        reasons.add((rec["variant"], out["result"]["reason"]))
        errors |= {step["error"] for step in out["steps"] if not step["ok"]}
    expected = {("cpu", r) for r in ("ko", "all_flagged", "no_explorable", "no_plantable", None)}
    expected |= {("online", r) for r in ("ko", "score", "resign", "disconnect", "void", None)}
    assert expected <= reasons
    assert {str(r) for r in Refusal} <= errors


def test_differential_corpus_holds_c1_3_and_c2_holds() -> None:
    """The seeded corpus reaches C1.3 (explore held) and C2 (plant held) positions in CPU matches."""
    assert oracle_corpus()[1] == {"C1.3", "C2"}


@settings(derandomize=True, max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records())
def test_differential_hypothesis_records_agree(rec: dict[str, Any]) -> None:
    """Hypothesis-generated records (shrinkable) replay identically in engine and oracle."""
    assert_agree(rec)


# ----- invalid records: engine and oracle agree on the verdict --------------------------------
def _mutations(rng: random.Random, rec: dict[str, Any]) -> dict[str, Any] | list[Any] | str:
    rec = json.loads(json.dumps(rec))
    actions = rec["actions"]
    i = rng.randrange(len(actions)) if actions else None
    choice = rng.randrange(9)
    if choice == 0:
        del rec[rng.choice(["format", "variant", "actions"])]
    elif choice == 1:
        rec[rng.choice(["format", "variant", "actions"])] = rng.choice(
            [None, 1, "cpu", "online", FORMAT, [], {}, "mine-duel-record/2", True]
        )
    elif choice == 2 and i is not None:
        actions[i] = rng.choice([None, 1, "explore", [0, "explore"], True])
    elif choice == 3 and i is not None:
        actions[i]["seat"] = rng.choice([True, False, 1.0, 0.0, 2, -1, "0", None, [0]])
    elif choice == 4 and i is not None:
        actions[i].pop(rng.choice(["seat", "type", "cell"]), None)
    elif choice == 5 and i is not None:
        actions[i]["type"] = rng.choice(["jump", "EXPLORE", "", None, 3, ["explore"], "pass"])
    elif choice == 6 and i is not None:
        actions[i]["cell"] = rng.choice(
            [None, [1], [1, 2, 3], [1.0, 2], [True, 0], "a1", {"row": 1}, [-1, 0], [0, 8], [8, 0], [0, 1.5]]
        )
    elif choice == 7:
        return rng.choice([[], "record", 3, None, [rec]])
    else:
        rec["extra_key"] = {"nested": [1, 2, {"x": None}]}  # still valid: unknown keys are ignored
    return rec


def test_invalid_record_verdicts_agree_with_oracle() -> None:
    """Randomly broken records are invalid (or valid) for the engine exactly when they are for the oracle."""
    rng = random.Random(7)
    kinds = {True: 0, False: 0}
    for rec in seeded_records()[:800]:
        mutated = _mutations(rng, rec)
        text = json.dumps(mutated)
        try:
            ref.replay_text(text)
            oracle_invalid = False
        except ref.RefInvalid:
            oracle_invalid = True
        try:
            replay_text(text)
            engine_invalid = False
        except InvalidRecord:
            engine_invalid = True
        assert engine_invalid == oracle_invalid, text[:400]
        kinds[oracle_invalid] += 1
    assert kinds[True] > 300 and kinds[False] > 50


# ----- RECORD.md's own examples -----------------------------------------------------------------
def test_record_md_example_record_replays_as_the_rules_say() -> None:
    """RECORD.md's example record: every step accepted, seat 0's resignation ends it at turn 3 (F3, O5, O11)."""
    out = replay_text(json.dumps(EXAMPLE_RECORD))
    expected_steps = [
        ("open_explore", 1, 0),
        ("open_explore", 1, 0),  # O4: the timeout alone changes nothing
        ("open_plant", 0, 0),  # the auto-move follows
        ("open_plant", 1, 0),
        ("explore", 0, 1),  # overlapping initial mines are allowed (F1)
        ("explore", 0, 1),
        ("plant", 0, 1),
        ("end_wait", 0, 1),
        ("end_wait", 0, 1),
        ("explore", 1, 2),
        ("explore", 0, 3),  # O5: the timeout passes the turn and starts turn 3
        ("over", None, 3),
    ]
    assert [(s["ok"], s["phase"], s["to_move"], s["turn"]) for s in out["steps"]] == [
        (True, *e) for e in expected_steps
    ]
    assert all("error" not in s for s in out["steps"])
    assert out["result"] == {"over": True, "winner": 1, "reason": "resign", "scores": None}
    cells = out["cells"]
    assert cells[3 * 8 + 4] == {"revealed": True, "by": 0, "number": 0, "marker": None, "mines": []}
    assert cells[0] == {"revealed": True, "by": 1, "number": 0, "marker": None, "mines": []}
    assert cells[5 * 8 + 5]["by"] == 0
    assert cells[2 * 8 + 2]["mines"] == [0, 1]
    assert cells[6 * 8 + 1]["mines"] == [0]
    assert cells[7 * 8 + 7]["marker"] is None
    assert sum(c["revealed"] for c in cells) == 3
    assert differences(out, ref.replay_record(EXAMPLE_RECORD))[0] == []


def test_record_md_output_example_two_explores_by_seat_0() -> None:
    """RECORD.md's output example: a second explore by seat 0 is refused not_your_turn, nothing else moves."""
    rec = {
        "format": FORMAT,
        "variant": "cpu",
        "actions": [
            {"seat": 0, "type": "explore", "cell": [0, 0]},
            {"seat": 0, "type": "explore", "cell": [0, 1]},
        ],
    }
    out = replay_text(json.dumps(rec))
    assert out["steps"] == [
        {"ok": True, "phase": "open_explore", "to_move": 1, "turn": 0},
        {"ok": False, "error": "not_your_turn", "phase": "open_explore", "to_move": 1, "turn": 0},
    ]
    assert out["result"] == {"over": False, "winner": None, "reason": None, "scores": None}
    assert out["cells"][0] == {"revealed": True, "by": 0, "number": 0, "marker": None, "mines": []}
    assert out["cells"][1]["revealed"] is False


def test_refused_steps_are_reported_and_replay_goes_on() -> None:
    """A refused action keeps the record valid; the replay reports it and applies the later actions."""
    rec = {
        "format": FORMAT,
        "variant": "cpu",
        "actions": [
            {"seat": 1, "type": "explore", "cell": [0, 0]},  # not seat 1's turn
            {"seat": 0, "type": "plant", "cell": [0, 0]},  # wrong phase
            {"seat": 0, "type": "resign"},  # ONLINE only
            {"seat": 0, "type": "explore", "cell": [0, 0]},
            {"seat": 1, "type": "explore", "cell": [0, 0]},  # revealed
            {"seat": 1, "type": "explore", "cell": [7, 7]},
        ],
    }
    out = replay_text(json.dumps(rec))
    assert [s["ok"] for s in out["steps"]] == [False, False, False, True, False, True]
    assert [s.get("error") for s in out["steps"]] == [
        "not_your_turn",
        "wrong_phase",
        "not_online",
        None,
        "revealed",
        None,
    ]
    assert out["steps"][-1]["phase"] == "open_plant"


def test_every_refusal_code_is_a_documented_engine_code() -> None:
    """Every error printed by replay for the seeded corpus is one of the engine's Refusal codes."""
    vocabulary = {str(r) for r in Refusal}
    seen = set()
    for rec in seeded_records()[:500]:
        for step in replay_text(json.dumps(rec))["steps"]:
            if not step["ok"]:
                seen.add(step["error"])
    assert seen and seen <= vocabulary


# ----- round trip: record.dumps of a live match ----------------------------------------------------
def _live_match(seed: int, variant: str) -> tuple[GameState, list[Action], list[bool], list[dict[str, Any]]]:
    """Play a live engine match by legal moves (chosen by the oracle) mixed with refused ones."""
    rng = random.Random(seed)
    ch = RandomChooser(rng)
    style = draw_style(ch, variant)
    state = GameState(variant)
    shadow = ref.RefMatch(variant)
    actions: list[Action] = []
    oks: list[bool] = []
    steps: list[dict[str, Any]] = []
    while not state.over and len(actions) < 400:
        if rng.random() < 0.1:
            seat = rng.randrange(2)
            kind = rng.choice(list(ActionType))
            cell = (
                rng.randrange(64)
                if kind in (ActionType.EXPLORE, ActionType.PLANT, ActionType.FLAG, ActionType.UNFLAG)
                else None
            )
            action = Action(seat, kind, cell)
        else:
            seat, kind_name, rc = legal_move(ch, shadow, style)
            action = Action(seat, ActionType(kind_name), rc[0] * 8 + rc[1] if rc else None)
        refusal = state.apply(action)
        shadow.act(action.seat, str(action.type), divmod(action.cell, 8) if action.cell is not None else None)
        actions.append(action)
        oks.append(not isinstance(refusal, Refusal))
        steps.append({"phase": str(state.phase), "to_move": state.to_move, "turn": state.turn})
    return state, actions, oks, steps


@pytest.mark.parametrize("variant", ["cpu", "online"])
@pytest.mark.parametrize("seed", range(25))
def test_round_trip_dumps_replays_to_the_live_result(variant: str, seed: int) -> None:
    """A record written by record.dumps from a live match replays to the live state's steps, result and cells."""
    state, actions, oks, steps = _live_match(seed, variant)
    text = record.dumps(variant, actions, players=["p", "q"])
    out = replay_text(text)
    assert [s["ok"] for s in out["steps"]] == oks
    assert [{k: s[k] for k in ("phase", "to_move", "turn")} for s in out["steps"]] == steps
    assert out["result"] == result_json(state)
    assert out["cells"] == cells_json(state)
    assert record.loads(text).actions == tuple(actions)


def test_round_trip_keeps_auto_and_unknown_keys_harmless() -> None:
    """Optional keys (auto, at, fairness, times) written by dumps are ignored by replay."""
    plain = [Action(0, ActionType.EXPLORE, 0), Action(1, ActionType.TIMEOUT)]
    auto = record.action_json(Action(1, ActionType.EXPLORE, 63), auto=True, at=12.5)
    text = record.dumps(Variant.ONLINE, [*plain, auto], fairness={"nonce": 1}, times={"start": 0})
    out = replay_text(text)
    assert [s["ok"] for s in out["steps"]] == [True, True, True]
    assert out["steps"][-1]["phase"] == "open_plant"
    assert out["cells"][63]["by"] == 1


# ----- the CLI contract -------------------------------------------------------------------------------
def run_cli(arg: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "mineduel.client", "replay", arg],
        input=stdin,
        capture_output=True,
        timeout=60,
        check=False,
    )


def _valid_text() -> str:
    return json.dumps(EXAMPLE_RECORD)


@pytest.mark.parametrize("how", ["file", "stdin"])
def test_cli_valid_record_exits_0_with_one_json_object(how: str, tmp_path: Path) -> None:
    """`mine-duel replay FILE` and `mine-duel replay -` print the replay JSON object and exit 0."""
    data = _valid_text().encode()
    if how == "file":
        path = tmp_path / "match.json"
        path.write_bytes(data)
        proc = run_cli(str(path))
    else:
        proc = run_cli("-", stdin=data)
    assert proc.returncode == 0, proc.stderr
    output = json.loads(proc.stdout)
    assert isinstance(output, dict)
    assert output == json.loads(json.dumps(replay_text(data)))
    assert output["result"]["reason"] == "resign"


def test_cli_refused_steps_have_error_only_when_refused(tmp_path: Path) -> None:
    """On stdout, `error` is present on refused steps and absent (not null) on accepted ones."""
    rec = {
        **EXAMPLE_RECORD,
        "actions": [*EXAMPLE_RECORD["actions"][:2], {"seat": 0, "type": "explore", "cell": [1, 1]}],
    }
    path = tmp_path / "r.json"
    path.write_text(json.dumps(rec), encoding="utf-8")
    proc = run_cli(str(path))
    assert proc.returncode == 0
    steps = json.loads(proc.stdout)["steps"]
    assert [("error" in s) for s in steps] == [False, False, True]
    assert steps[2]["error"] == "not_your_turn"
    assert b'"error":null' not in proc.stdout.replace(b" ", b"")


def _record_with(**changes: Any) -> dict[str, Any]:
    rec = json.loads(json.dumps(EXAMPLE_RECORD))
    for key, value in changes.items():
        if value is KeyError:
            del rec[key]
        else:
            rec[key] = value
    return rec


def _record_with_action(action: Any) -> dict[str, Any]:
    rec = json.loads(json.dumps(EXAMPLE_RECORD))
    rec["actions"][1] = action
    return rec


INVALID_CASES: list[tuple[str, bytes, str]] = [
    ("not JSON", b'{"format": "mine-duel-record/1", ', "json"),
    ("empty file", b"", "json"),
    ("not UTF-8", b"\xff\xfe\xfa", "json"),
    ("UTF-16 with BOM", json.dumps(EXAMPLE_RECORD).encode("utf-16"), "json"),
    ("UTF-16 without BOM", json.dumps(EXAMPLE_RECORD).encode("utf-16-le"), "json"),
    ("UTF-32", json.dumps(EXAMPLE_RECORD).encode("utf-32"), "json"),
    ("not an object (list)", b"[]", "object"),
    ("not an object (string)", b'"mine-duel-record/1"', "object"),
    ("not an object (null)", b"null", "object"),
    ("format missing", json.dumps(_record_with(format=KeyError)).encode(), "format"),
    ("format wrong", json.dumps(_record_with(format="mine-duel-record/2")).encode(), "format"),
    ("format not a string", json.dumps(_record_with(format=1)).encode(), "format"),
    ("variant wrong", json.dumps(_record_with(variant="CPU")).encode(), "variant"),
    ("variant missing", json.dumps(_record_with(variant=KeyError)).encode(), "variant"),
    ("actions missing", json.dumps(_record_with(actions=KeyError)).encode(), "actions"),
    ("actions not a list", json.dumps(_record_with(actions={"0": {}})).encode(), "actions"),
    ("action not an object", json.dumps(_record_with_action(["seat", 1])).encode(), "action 1"),
    ("seat true", json.dumps(_record_with_action({"seat": True, "type": "timeout"})).encode(), "seat"),
    ("seat false", json.dumps(_record_with_action({"seat": False, "type": "timeout"})).encode(), "seat"),
    ("seat 1.0", json.dumps(_record_with_action({"seat": 1.0, "type": "timeout"})).encode(), "seat"),
    ("seat 2", json.dumps(_record_with_action({"seat": 2, "type": "timeout"})).encode(), "seat"),
    ("seat '0'", json.dumps(_record_with_action({"seat": "0", "type": "timeout"})).encode(), "seat"),
    ("seat missing", json.dumps(_record_with_action({"type": "timeout"})).encode(), "seat"),
    ("unknown type", json.dumps(_record_with_action({"seat": 1, "type": "pass"})).encode(), "type"),
    ("type missing", json.dumps(_record_with_action({"seat": 1})).encode(), "type"),
    ("cell missing", json.dumps(_record_with_action({"seat": 1, "type": "flag"})).encode(), "cell"),
    (
        "cell too short",
        json.dumps(_record_with_action({"seat": 1, "type": "flag", "cell": [1]})).encode(),
        "cell",
    ),
    (
        "cell too long",
        json.dumps(_record_with_action({"seat": 1, "type": "flag", "cell": [1, 2, 3]})).encode(),
        "cell",
    ),
    (
        "cell floats",
        json.dumps(_record_with_action({"seat": 1, "type": "flag", "cell": [1.0, 2]})).encode(),
        "cell",
    ),
    (
        "cell booleans",
        json.dumps(_record_with_action({"seat": 1, "type": "flag", "cell": [True, 0]})).encode(),
        "cell",
    ),
    (
        "cell string",
        json.dumps(_record_with_action({"seat": 1, "type": "flag", "cell": "b3"})).encode(),
        "cell",
    ),
    (
        "cell object",
        json.dumps(_record_with_action({"seat": 1, "type": "flag", "cell": {"row": 1, "col": 2}})).encode(),
        "cell",
    ),
    (
        "cell off board row",
        json.dumps(_record_with_action({"seat": 1, "type": "explore", "cell": [8, 0]})).encode(),
        "off",
    ),
    (
        "cell off board col",
        json.dumps(_record_with_action({"seat": 1, "type": "plant", "cell": [0, 8]})).encode(),
        "off",
    ),
    (
        "cell negative",
        json.dumps(_record_with_action({"seat": 1, "type": "unflag", "cell": [-1, 3]})).encode(),
        "off",
    ),
    (
        "NaN seat",
        _valid_text().replace('"seat": 1, "type": "timeout"', '"seat": NaN, "type": "timeout"', 1).encode(),
        "nan",
    ),
    ("NaN anywhere", _valid_text().replace("{", '{"at": NaN, ', 1).encode(), "nan"),
    ("Infinity", _valid_text().replace("{", '{"at": Infinity, ', 1).encode(), "infinity"),
]


@pytest.mark.parametrize(("name", "data", "keyword"), INVALID_CASES, ids=[c[0] for c in INVALID_CASES])
def test_cli_invalid_record_exits_2_naming_the_problem(
    name: str, data: bytes, keyword: str, tmp_path: Path
) -> None:
    """Every RECORD.md invalid-record case exits 2 with a message naming the problem on stderr, nothing on stdout."""
    with pytest.raises(ref.RefInvalid):  # the oracle agrees the case is invalid
        ref.replay_text(data)
    path = tmp_path / "bad.json"
    path.write_bytes(data)
    proc = run_cli(str(path))
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stdout == b""
    message = proc.stderr.decode("utf-8", "replace")
    assert keyword.lower() in message.lower(), message
    assert "Traceback" not in message


@pytest.mark.parametrize(
    ("name", "data", "keyword"), INVALID_CASES[::6], ids=[c[0] for c in INVALID_CASES[::6]]
)
def test_cli_invalid_record_on_stdin_exits_2(name: str, data: bytes, keyword: str) -> None:
    """`mine-duel replay -` treats an invalid record on standard input the same way."""
    proc = run_cli("-", stdin=data)
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert keyword.lower() in proc.stderr.decode("utf-8", "replace").lower()


def test_cli_utf8_record_with_non_ascii_keys_replays(tmp_path: Path) -> None:
    """RECORD.md: a UTF-8 record may carry non-ASCII text in keys replay ignores (players' names)."""
    rec = {**EXAMPLE_RECORD, "players": ["김민수", "田中", "Zoë"]}
    path = tmp_path / "names.json"
    path.write_bytes(json.dumps(rec, ensure_ascii=False).encode("utf-8"))
    proc = run_cli(str(path))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["result"]["reason"] == "resign"


def test_cli_missing_file_exits_2() -> None:
    """A file that cannot be read is reported on stderr with exit status 2."""
    proc = run_cli("/nonexistent/record.json")
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert b"record.json" in proc.stderr


@pytest.mark.parametrize(
    "action",
    [
        {"seat": 0, "type": "end_turn", "cell": "junk"},
        {"seat": 0, "type": "timeout", "cell": [99, 99]},
        {"seat": 0, "type": "resign", "auto": True, "at": 3.5, "note": {"x": [1]}},
    ],
)
def test_cell_on_non_cell_actions_and_unknown_keys_are_ignored(action: dict[str, Any]) -> None:
    """RECORD.md: `cell` is ignored on non-cell actions and unknown keys are ignored: the record stays valid."""
    rec = {"format": FORMAT, "variant": "online", "actions": [action]}
    out = replay_text(json.dumps(rec))
    assert len(out["steps"]) == 1
    assert differences(out, ref.replay_record(rec))[0] == []


# ----- deep nesting: once a RecursionError traceback with exit 1 (fixed in 0900d10) -----------------
DEEP = 100_000


def test_cli_deeply_nested_non_object_exits_2_not_a_traceback(tmp_path: Path) -> None:
    """A deeply nested JSON array is 'not an object': exit 2 with a message, never a traceback and exit 1."""
    path = tmp_path / "deep.json"
    path.write_bytes(b"[" * DEEP + b"]" * DEEP)
    proc = run_cli(str(path))
    assert proc.returncode == 2, proc.stderr[-300:]
    assert proc.stdout == b""
    assert proc.stderr.strip() and b"Traceback" not in proc.stderr


def test_cli_deeply_nested_unknown_key_never_crashes(tmp_path: Path) -> None:
    """A record whose unknown key holds deeply nested JSON either replays (exit 0) or is refused (exit 2) — no crash."""
    text = json.dumps({"format": FORMAT, "variant": "cpu", "actions": []})
    data = text[:-1].encode() + b', "x": ' + b"[" * DEEP + b"]" * DEEP + b"}"
    path = tmp_path / "deep.json"
    path.write_bytes(data)
    proc = run_cli(str(path))
    assert proc.returncode in (0, 2)
    assert b"Traceback" not in proc.stderr
