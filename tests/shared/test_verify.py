"""``mine-duel verify`` and ``verify_record`` (RULES.md §9 R1–R3b, E1)."""

from __future__ import annotations

import copy
import json

import pytest
from support import view_oracle
from support.harness import Harness, play_to_score_end

from mineduel.shared.cli.verify import main
from mineduel.shared.fairness import commitments as fairness
from mineduel.shared.fairness.verify import CHECK_NAMES, verify_record


def _record(kind: str = "auto") -> dict:
    h = Harness(seed=11)
    first, second = h.start()
    if kind == "auto":
        for _ in range(4):
            h.advance(20)  # four automatic opening moves (O4)
        first.send(type="resign")
    elif kind == "score":
        play_to_score_end(h, first, second)
    elif kind == "rematch":
        first.send(type="resign")
        first.send(type="rematch")
        second.send(type="rematch")
        h.advance(80)
        first.send(type="resign")
    return first.last("match_end")["record"]


@pytest.fixture(scope="module")
def records() -> dict[str, dict]:
    return {k: _record(k) for k in ("auto", "score", "rematch")}


@pytest.mark.parametrize("kind", ["auto", "score", "rematch"])
def test_r3_good_records_pass_every_check(records, kind):
    """R3: a record straight from the server passes every applicable check."""
    report = verify_record(records[kind])
    assert report.ok, report.text()
    assert [c.name for c in report.checks] == list(CHECK_NAMES)


def test_r3_rematch_record_reports_first_player_as_not_applicable(records):
    """O14/R3: a rematch draws nobody; first_player is reported as not applicable, not passed."""
    assert verify_record(records["rematch"]).check("first_player").ok is None


def _mutate(record: dict, how: str) -> dict:
    r = copy.deepcopy(record)
    fair = r["fairness"]
    plants = [i for i, a in enumerate(r["actions"]) if a["type"] == "plant"]
    if how == "seed":
        fair["server_seed"] = "0" * 64
    elif how == "client_seed":
        fair["client_seeds"][0] += "x"
        fair.pop("signature")
    elif how == "mine":
        cell = r["actions"][plants[-1]]["cell"]
        r["actions"][plants[-1]]["cell"] = [cell[0], (cell[1] + 1) % 8]
    elif how == "salt":
        fair["salts"][0] = "00" + fair["salts"][0][2:]
    elif how == "result":
        r["result"]["winner"] = 1 - r["result"]["winner"]
    elif how == "reorder":
        r["actions"][0], r["actions"][1] = r["actions"][1], r["actions"][0]
    elif how == "auto":
        first_auto = next(i for i, a in enumerate(r["actions"]) if a.get("auto") and a["type"] == "explore")
        cell = r["actions"][first_auto]["cell"]
        r["actions"][first_auto]["cell"] = [cell[0], (cell[1] + 3) % 8]
    elif how == "commitment_list":
        fair["mine_commitments"].reverse()
    elif how == "drop_plant":
        fair["salts"].pop()
    return r


@pytest.mark.parametrize(
    ("how", "check"),
    [
        ("seed", "commitment"),
        ("client_seed", "first_player"),
        ("mine", "mine_commitments"),
        ("salt", "mine_commitments"),
        ("result", "result"),
        ("reorder", "actions"),
        ("auto", "auto_moves"),
        ("commitment_list", "transcript"),
        ("drop_plant", "mine_commitments"),
    ],
)
def test_r3_tampered_records_fail_naming_the_check(records, how, check):
    """R3/R3b: a changed seed, moved mine, altered salt, changed result or reordered actions fails the named check."""
    report = verify_record(_mutate(records["auto"], how))
    assert not report.ok
    assert report.check(check).ok is False, report.text()


def test_r3_the_client_seed_change_breaks_the_auto_moves_too(records):
    """R1: the client seeds feed the stream, so auto-moves cannot be replayed with another seed."""
    report = verify_record(_mutate(records["auto"], "client_seed"))
    assert report.check("auto_moves").ok is False or report.check("first_player").ok is False


@pytest.mark.parametrize(
    "data",
    ["not json", "[]", json.dumps({"format": "mine-duel-record/1", "variant": "online", "actions": []}),
     json.dumps({"format": "mine-duel-record/1", "variant": "cpu", "actions": []})],
)
def test_invalid_input_is_reported_not_raised(data):
    """verify_record never raises: unreadable input gives an invalid report naming the record check."""
    report = verify_record(data)
    assert not report.valid and not report.ok and report.checks[0].name == "record"


def test_cli_exit_codes_and_json(records, tmp_path, capsys):
    """mine-duel verify: exit 0 when all hold, 1 when a check fails, 2 for invalid input; --json prints the report."""
    good = tmp_path / "good.json"
    good.write_text(json.dumps(records["score"]))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_mutate(records["auto"], "salt")))
    junk = tmp_path / "junk.json"
    junk.write_text("{")
    assert main([str(good)]) == 0
    assert "All checks hold" in capsys.readouterr().out
    assert main([str(bad), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] is False
    assert {c["name"]: c["ok"] for c in out["checks"]}["mine_commitments"] is False
    assert main([str(junk)]) == 2
    assert main([str(tmp_path / "missing.json")]) == 2


def test_cli_accepts_the_servers_record_message(records, tmp_path):
    """mine-duel verify: a saved {"type":"record","record":{...}} reply verifies like the bare record."""
    path = tmp_path / "reply.json"
    path.write_text(json.dumps({"type": "record", "match_id": records["auto"]["match_id"], "record": records["auto"]}))
    assert main([str(path)]) == 0


def test_transcript_matches_the_fairness_module(records):
    """R3b/R3c: a new server record is version 2 and its transcript is the whole-match hash,
    rehashed from RECORD.md's words (view_oracle); version 1's plant chain is fairness.transcript_hash."""
    r = records["score"]
    assert r["fairness"]["version"] == 2
    assert view_oracle.record_differences(r) == []
    v1 = {**r, "fairness": {**r["fairness"], "version": 1}}
    assert view_oracle.record_differences(v1) != []  # the plant chain is not this hash
    assert fairness.transcript_hash(r["match_id"], r["fairness"]["mine_commitments"]) != r["fairness"]["transcript"]
