"""Fairness version 2 (RULES.md §9 R1–R3c, O3–O6, O14): every check of ``mine-duel verify`` by name.

Honest records and witnesses come from ``support/fair_records.py`` (the pure engine, the R1 stream
and ``shared/fairness/transcript.py``, no server). Issue 14's forgery classes 1–7 are built as a
careful operator would — everything recomputable recomputed (``Honest.forged``) — and each is
caught by the check the design names: on the record alone where the record cannot tell the story
consistently, with the player's witness where only what the player saw can tell.
"""

from __future__ import annotations

import copy
import json

import pytest
from support import fair_records as fr

from mineduel.shared.cli.verify import main
from mineduel.shared.fairness.verify import (
    CHECK_NAMES,
    INTERNAL_ERROR,
    NO_WITNESS,
    RECORD_CHECKS,
    VERSION_1_NOTE,
    WITNESS_CHECKS,
    verify,
    verify_record,
)
from mineduel.shared.rules.bitboard import COLS
from mineduel.shared.rules.engine import Action, ActionType, GameState, Refusal, Variant


def _replays(entries) -> GameState | None:
    """The engine's final state if every entry is accepted, else None."""
    state = GameState(Variant.ONLINE)
    for e in entries:
        cell = e.get("cell")
        if isinstance(state.apply(Action(e["seat"], ActionType(e["type"]), None if cell is None else cell[0] * COLS + cell[1])),
                      Refusal):
            return None
    return state


def _failed(report, name):
    assert not report.ok, report.text()
    assert report.check(name).ok is False, report.text()
    return report.check(name).detail


@pytest.fixture(scope="module")
def match():
    return fr.find_match(lambda m: len(m.entries) > 30 and m.record["fairness"]["mine_commitments"]
                         and any(e.get("auto") and e["type"] == "explore" for e in m.entries))


@pytest.fixture(scope="module")
def room():
    return fr.honest_room(11, 3)


# ----- honest records -----------------------------------------------------------------------------------------


def test_r3c_honest_records_pass_every_check_with_and_without_witness(room):
    """R3c: an honest version 2 record passes every applicable check; with either seat's witness too."""
    for seed in range(1, 30):
        m = fr.honest_match(seed)
        alone = verify_record(m.record)
        assert alone.ok and alone.valid and alone.version == 2, alone.text()
        assert [c.name for c in alone.checks] == list(CHECK_NAMES)
        assert all(c.ok is None for c in alone.checks if c.name in WITNESS_CHECKS)
        for w in m.witnesses:
            report = verify_record(m.record, w)
            assert report.ok and report.witnessed, report.text()
            assert all(report.check(n).ok is not False for n in CHECK_NAMES)
            assert report.check("transcript_seen").ok and report.check("end_shown").ok
    whole = verify([h.record for h in room], room[2].witnesses[1])
    assert whole.ok, whole.text()
    assert [r.check("rematches").ok for r in whole.reports] == [None, True, True]
    assert whole.reports[2].check("previous_match").ok is True


def test_no_witness_says_plainly_what_was_checked(match):
    """R3: without a witness the report says that only the record's own consistency was checked."""
    report = verify_record(match.record)
    assert NO_WITNESS in report.text()
    assert report.check("witness").ok is None
    assert NO_WITNESS not in verify_record(match.record, match.witnesses[0]).text()


def test_version_1_records_still_verify_and_say_they_are_version_1(match):
    """R3b: a version 1 record (plant chain only) verifies as before and says what version 1 does not commit."""
    record = fr.build(match.params, match.entries, version=1)
    report = verify_record(record)
    assert report.ok and report.version == 1, report.text()
    assert report.check("version").detail == VERSION_1_NOTE
    assert VERSION_1_NOTE in report.text()
    witness = fr.witness_of(match.params, match.entries, 0, version=1)
    with_witness = verify_record(record, witness)
    assert with_witness.ok, with_witness.text()
    assert with_witness.check("transcript_seen").ok is True  # v1: the plant chain up to the witness's seq
    assert with_witness.check("previous_match").ok is None
    # A version 2 witness's hash is not a version 1 chain.
    _failed(verify_record(record, match.witnesses[0]), "transcript_seen")


def test_a_witness_of_a_match_in_progress_verifies_its_prefix(match):
    """R3c: a client that saw only the first k actions (disconnected) holds the record to h_k."""
    for k in (0, 1, len(match.entries) // 2):
        witness = fr.witness_of(match.params, match.entries, 1, upto=k)
        report = verify_record(match.record, witness)
        assert report.ok, report.text()
        assert report.check("end_shown").ok is None and report.check("transcript_seen").ok is True


# ----- issue 14, forgery 1: a new server seed ground after seeing the client seeds (O3, R1) -----------------------


def test_forgery1_new_server_seed_is_caught_by_commitment_shown():
    """O3/R1, forgery 1: the draw re-ground with a new seed passes on its own, fails commitment_shown."""
    m = fr.find_match(lambda h: not any(e.get("auto") for e in h.entries if e["type"] in ("explore", "plant")),
                      timeouts=0.0)
    want = m.params.join_order[::-1]
    seed = next(f"ground-{i}" for i in range(10_000)
                if fr.draw_join_order(f"ground-{i}", m.params.seeds_by_join, 1) == want)
    forged = m.forged(server_seed=seed, join_order=want)
    assert forged["fairness"]["commitment"] != m.record["fairness"]["commitment"]
    assert verify_record(forged).ok  # the record alone cannot tell
    for seat in (0, 1):
        report = verify_record(forged, m.witnesses[seat])
        assert "shown before Ready" in _failed(report, "commitment_shown")


# ----- forgery 2: the other person made first player, fairness unchanged ----------------------------------------


def test_forgery2_other_person_first_is_caught_by_seat_and_seed(match):
    """O3, forgery 2: the names swapped between the seats (fairness block unchanged) fail seat_and_seed."""
    forged = copy.deepcopy(match.record)
    forged["players"] = [{"seat": 0, "name": match.params.name_of(1)}, {"seat": 1, "name": match.params.name_of(0)}]
    assert verify_record(forged).ok  # nothing in the record binds a person to a seat
    for seat in (0, 1):
        _failed(verify_record(forged, match.witnesses[seat]), "seat_and_seed")


def test_forgery2_with_the_join_order_swapped_fails_the_draw_on_the_record_alone(match):
    """O3, forgery 2: swapping the join order too contradicts the stream's draw: first_player fails."""
    forged = match.forged(join_order=match.params.join_order[::-1])
    _failed(verify_record(forged), "first_player")
    _failed(verify_record(forged, match.witnesses[0]), "seat_and_seed")


# ----- forgery 3: a room's first match labelled swap -----------------------------------------------------------


def test_forgery3_first_match_labelled_swap_fails_first_player(match):
    """O3/O14, forgery 3: nonce 1 with first_player 'swap' (stream count and transcript recomputed) fails."""
    forged = match.forged(first_player="swap")
    assert "labelled 'swap'" in _failed(verify_record(forged), "first_player")


def test_forgery3_dressed_as_a_rematch_is_caught_by_the_witness(match):
    """O3/O14, forgery 3: also a nonce 2 and a made-up previous match: the record alone cannot tell, the
    witness's match_start can (seat_and_seed) and its transcript (transcript_seen)."""
    forged = match.forged(first_player="swap", nonce=2, previous="ab" * 32)
    assert verify_record(forged).check("first_player").ok is None
    report = verify_record(forged, match.witnesses[0])
    _failed(report, "seat_and_seed")
    _failed(report, "transcript_seen")


def test_o3_a_first_match_must_not_have_a_previous_transcript(match):
    """O3/O14: previous_transcript null <=> nonce 1 <=> 'draw'."""
    record = copy.deepcopy(match.record)
    record["fairness"]["previous_transcript"] = "cd" * 32
    _failed(verify_record(record), "first_player")


# ----- forgery 4: the opponent's mine moved onto a cell the victim explored safely ---------------------------------


def _moved_mine_forgery():
    """A match where the opponent's plant p can be moved to cell x that the victim explored safely later."""
    for seed in range(1, 400):
        m = fr.honest_match(seed)
        entries = m.entries
        for j, e in enumerate(entries):
            if e["type"] != "explore":
                continue
            victim, x = e["seat"], e["cell"]
            for p in range(j):
                plant = entries[p]
                if plant["type"] != "plant" or plant["seat"] == victim or plant["cell"] == x:
                    continue
                forged = [dict(a) for a in entries[: j + 1]]
                forged[p]["cell"] = list(x)
                state = _replays(forged)
                if state is not None and state.over and state.outcome().reason == "ko":
                    return m, forged, victim
    raise AssertionError("no match to forge")


def test_forgery4_moved_mine_is_caught_by_plants_seen():
    """R3b, forgery 4: a KO made by moving the opponent's plant (its commitment recomputed from the revealed
    salt, the transcript recomputed) verifies on its own, fails plants_seen against the victim's witness."""
    m, entries, victim = _moved_mine_forgery()
    forged = m.forged(entries)
    assert forged["result"]["reason"] == "ko" and forged["result"]["winner"] != victim
    assert verify_record(forged).ok  # a careful operator's record agrees with itself
    report = verify_record(forged, m.witnesses[victim])
    assert "the mine was moved" in _failed(report, "plants_seen")
    _failed(report, "end_shown")


# ----- forgery 5: an opening auto-move chosen by the operator ---------------------------------------------------------


def _auto_move_forgery(drop_timeout: bool):
    for seed in range(1, 400):
        m = fr.honest_match(seed)
        autos = [i for i, e in enumerate(m.entries) if e.get("auto") and e["type"] in ("explore", "plant")]
        if not autos:
            continue
        i = autos[-1]  # the last stream pick: the ones before it keep their places in the stream
        for row in range(8):
            for col in range(8):
                if [row, col] == m.entries[i]["cell"]:
                    continue
                entries = [dict(e) for e in m.entries]
                entries[i]["cell"] = [row, col]
                del entries[i]["auto"]
                if drop_timeout:
                    del entries[i - 1]
                if _replays(entries) is not None:
                    return m, entries
    raise AssertionError("no match to forge")


def test_forgery5_chosen_auto_move_without_its_flag_fails_auto_moves():
    """O4/R2, forgery 5: the operator's cell, ``auto`` dropped, ``stream_used`` adjusted: the timeout is no
    longer followed by its automatic move."""
    m, entries = _auto_move_forgery(drop_timeout=False)
    forged = m.forged(entries)
    assert forged["fairness"]["stream_used"] == m.record["fairness"]["stream_used"] - 1
    assert "not followed at once by its automatic move" in _failed(verify_record(forged), "auto_moves")


def test_forgery5_with_the_timeout_dropped_too_is_caught_by_the_witness():
    """O4, forgery 5: dropping the timeout as well leaves a manual move at the deadline: only the witness
    (its transcript) can tell."""
    m, entries = _auto_move_forgery(drop_timeout=True)
    forged = m.forged(entries)
    assert verify_record(forged).ok
    _failed(verify_record(forged, m.witnesses[0]), "transcript_seen")


# ----- forgery 6: explored cells and flags rewritten ---------------------------------------------------------------


def _rewritten_cells(match, kind):
    last_pick = max((i for i, e in enumerate(match.entries) if e.get("auto") and "cell" in e), default=-1)
    for i, e in enumerate(match.entries):
        if e["type"] != kind or i <= last_pick:  # the stream's picks depend on the cells open before them
            continue
        for cell in ([r, c] for r in range(8) for c in range(8)):
            if cell == e["cell"]:
                continue
            entries = [dict(a) for a in match.entries]
            entries[i]["cell"] = cell
            state = _replays(entries)
            if state is not None and state.over:
                return entries
    raise AssertionError(f"no {kind} to rewrite")


@pytest.mark.parametrize("kind", ["explore", "flag"])
def test_forgery6_rewritten_cells_fail_the_transcript_or_the_witness(kind):
    """R3c, forgery 6: a rewritten explore or flag breaks the whole-match transcript; a forger who
    recomputes it is caught by the transcript the player saw."""
    m = fr.find_match(lambda h: sum(e["type"] == "flag" for e in h.entries) >= 2 and len(h.entries) > 20)
    entries = _rewritten_cells(m, kind)
    naive = copy.deepcopy(m.record)
    naive["actions"] = fr.build(m.params, entries)["actions"]
    naive["result"] = fr.build(m.params, entries)["result"]
    naive["times"] = fr.build(m.params, entries)["times"]
    assert "not the match that was committed" in _failed(verify_record(naive), "transcript")
    careful = m.forged(entries)
    assert verify_record(careful).ok
    for seat in (0, 1):
        _failed(verify_record(careful, m.witnesses[seat]), "transcript_seen")


# ----- forgery 7: impossible matches (record alone) ------------------------------------------------------------------


def test_forgery7_times_going_backwards_fail_times(match):
    """E1/O6, forgery 7: an action earlier than the one before it."""
    entries = [dict(e) for e in match.entries]
    k = next(i for i in range(1, len(entries)) if entries[i]["at_ms"] > entries[i - 1]["at_ms"])
    entries[k]["at_ms"] = entries[k - 1]["at_ms"] - 1500
    assert "time went backwards" in _failed(verify_record(match.forged(entries)), "times")


def test_forgery7_a_900_second_turn_without_timeout_fails_deadlines(match):
    """O5/O6, forgery 7: every action from a normal-turn move on 900 s later, no timeout."""
    entries = [dict(e) for e in match.entries]
    k = next(i for i, e in enumerate(entries) if i > 6 and e["type"] in ("explore", "flag", "end_turn"))
    for e in entries[k:]:
        e["at_ms"] += 900_000
    detail = _failed(verify_record(match.forged(entries)), "deadlines")
    assert f"action {k}" in detail and "with no timeout" in detail


def test_o4_a_timeout_must_be_at_its_deadline(match):
    """O4/O5: a timeout before its deadline (the operator cutting a player's time short) fails deadlines."""
    m = fr.find_match(lambda h: any(e["type"] == "timeout" for e in h.entries[4:]))
    entries = [dict(e) for e in m.entries]
    k = next(i for i, e in enumerate(entries) if i >= 4 and e["type"] == "timeout")
    shift = entries[k]["at_ms"] - max(entries[k - 1]["at_ms"], entries[k]["at_ms"] - 5000)
    for e in entries[k:]:
        e["at_ms"] -= shift
    assert "timed out" in _failed(verify_record(m.forged(entries)), "deadlines")


def test_forgery7_negative_elapsed_fails_times(match):
    """E1, forgery 7: a negative elapsed time."""
    record = copy.deepcopy(match.record)
    record["times"]["elapsed"] = -record["times"]["elapsed"] - 1
    assert "negative" in _failed(verify_record(record), "times")


def test_forgery7_four_opening_timeouts_before_one_auto_move_fail_auto_moves(match):
    """O4, forgery 7: four opening timeouts, then one automatic move."""
    entries = [dict(e) for e in match.entries]
    i = next(i for i, e in enumerate(entries) if e.get("auto") and e["type"] == "explore")
    extra = [dict(entries[i - 1]) for _ in range(3)]
    forged = match.forged(entries[: i - 1] + extra + entries[i - 1:])
    assert "not followed at once" in _failed(verify_record(forged), "auto_moves")


def test_forgery7_a_seed_with_a_colon_fails_seeds(match):
    """R1, forgery 7: 'a:b' and 'c' sign like 'a' and 'b:c': no seed may contain ':'."""
    seeds = ("ann:7", match.params.seeds_by_join[1])
    forged = match.forged(seeds_by_join=seeds, join_order=fr.draw_join_order(match.params.server_seed, seeds, 1))
    assert "contains ':'" in _failed(verify_record(forged), "seeds")


def test_forgery7_a_string_nonce_fails_seeds(match):
    """R1, forgery 7: the nonce "1" is not the integer 1."""
    record = copy.deepcopy(match.record)
    record["fairness"]["nonce"] = "1"
    record["fairness"].pop("signature")
    report = verify_record(record)
    assert "not an integer" in _failed(report, "seeds")
    assert report.valid


def test_r1_a_version_2_match_has_two_seeds(match):
    """R1: version 2 binds both seeds (h_0): one seed is refused."""
    record = copy.deepcopy(match.record)
    record["fairness"]["client_seeds"] = record["fairness"]["client_seeds"][:1]
    record["fairness"].pop("signature")
    _failed(verify_record(record), "seeds")


@pytest.mark.parametrize("version", [3, "2", True, None])
def test_an_unknown_version_fails_the_version_check(match, version):
    """R3c: only versions 1 and 2 are known (a bool is not the integer 1)."""
    record = copy.deepcopy(match.record)
    if version is None:
        del record["fairness"]["version"]
    else:
        record["fairness"]["version"] = version
    report = verify_record(record)
    _failed(report, "version")
    assert report.valid


# ----- O4 details, players, rematches --------------------------------------------------------------------------------


def test_o4_auto_flags_belong_to_the_server_actions_only(match):
    """O4/R3c: a timeout is the server's (auto), an end of turn a player's (never auto)."""
    record = copy.deepcopy(match.record)
    k = next(i for i, a in enumerate(record["actions"]) if a["type"] == "timeout")
    del record["actions"][k]["auto"]
    _failed(verify_record(record), "auto_moves")
    record = copy.deepcopy(match.record)
    k = next(i for i, a in enumerate(record["actions"]) if a["type"] == "end_turn")
    record["actions"][k]["auto"] = True
    _failed(verify_record(record), "auto_moves")


@pytest.mark.parametrize("how", ["one player", "same seat twice", "no room", "empty room", "name not a string"])
def test_players_and_room_are_checked(match, how):
    """RECORD.md: two players, seats 0 and 1, and a room code."""
    record = copy.deepcopy(match.record)
    if how == "one player":
        record["players"] = record["players"][:1]
    elif how == "same seat twice":
        record["players"][1]["seat"] = 0
    elif how == "no room":
        del record["room"]
    elif how == "empty room":
        record["room"] = ""
    else:
        record["players"][0]["name"] = 5
    _failed(verify_record(record), "players")


@pytest.mark.parametrize("how", ["order", "room", "names", "nonce", "draw", "join_order", "previous"])
def test_o14_rematches_follow_the_match_before(room, how):
    """O14: same room, same people per join position, consecutive nonces, 'swap', swapped join order,
    previous_transcript the match before's transcript."""
    records = [copy.deepcopy(h.record) for h in room]
    later = room[1]
    if how == "order":
        records = [records[1], records[0], records[2]]
    elif how == "room":
        records[1] = later.forged(room="OTHER1")
    elif how == "names":
        records[1] = later.forged(names_by_join=("Eve", "Bob"))
    elif how == "nonce":
        records[1] = later.forged(nonce=5)
    elif how == "draw":
        records[1] = later.forged(first_player="draw", previous=None,
                                  join_order=fr.draw_join_order(later.params.server_seed, later.params.seeds_by_join, 2))
    elif how == "join_order":
        records[1] = later.forged(join_order=later.params.join_order[::-1])
    else:
        records[1] = later.forged(previous="ef" * 32)
    result = verify(records)
    assert not result.ok
    assert any(r.check("rematches").ok is False for r in result.reports if r.valid), result.text()


def test_o14_previous_match_is_held_to_the_witness(room):
    """O14/R3c: the rematch's previous_transcript is the last hash this player saw of the match before."""
    later = room[1]
    forged = later.forged(previous="ef" * 32)
    report = verify_record(forged, later.witnesses[0])
    _failed(report, "previous_match")


# ----- the witness checks one by one -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "value", "check"),
    [
        (("match_id",), "0" * 16, "witness"),
        (("room",), "ZZZZZZ", "witness"),
        (("commitment_before_ready",), "0" * 64, "commitment_shown"),
        (("match_start", "commitment"), "0" * 64, "commitment_shown"),
        (("seat",), "flip", "seat_and_seed"),
        (("seed_index",), "flip", "seat_and_seed"),
        (("client_seed",), "someone-else", "seat_and_seed"),
        (("names", "me"), "Mallory", "seat_and_seed"),
        (("names", "opponent"), "Mallory", "seat_and_seed"),
        (("match_start", "nonce"), 2, "seat_and_seed"),
        (("match_start", "first"), "flip", "seat_and_seed"),
        (("match_start", "first_player_rule"), "swap", "seat_and_seed"),
        (("match_start", "turn_seconds"), 19.999, "seat_and_seed"),
        (("match_start", "started"), "+1ms", "seat_and_seed"),
        (("match_start", "client_seeds"), ["x", "y"], "seat_and_seed"),
        (("plants", 0, "commitment"), "0" * 64, "plants_seen"),
        (("plants", -1, "seq"), "+1", "plants_seen"),
        (("transcript", "hash"), "0" * 64, "transcript_seen"),
        (("transcript", "seq"), "-1", "transcript_seen"),
        (("transcript", "seq"), "+1", "transcript_seen"),
        (("end", "turns"), "+1", "end_shown"),
        (("end", "elapsed"), "+1ms", "end_shown"),
        (("end", "result"), "flip", "end_shown"),
        (("end", "reveal", "mines", 0), "mmmmmmmm", "end_shown"),
        (("end", "reveal", "ko_cell"), [7, 7], "end_shown"),
    ],
)
def test_each_witness_field_is_held_to_the_record(match, path, value, check):
    """R3c: a witness that differs from the record in one field fails the check that compares it."""
    w = copy.deepcopy(match.witnesses[0])
    target = w
    for key in path[:-1]:
        target = target[key]
    old = target[path[-1]]
    if value == "flip" and path[-1] == "result":  # the other seat's result, consistent in itself
        value = {**old, "outcome": {"win": "loss", "loss": "win"}[old["outcome"]],
                 "winner": {"me": "opponent", "opponent": "me"}[old["winner"]]}
    elif value == "flip":
        value = {0: 1, 1: 0, "me": "opponent", "opponent": "me"}[old]
    elif value == "+1":
        value = old + 1
    elif value == "-1":
        value = old - 1
    elif value == "+1ms":
        value = round(old + 0.001, 3)
    elif value == old:
        value = [0, 0] if path[-1] == "ko_cell" else "........"
    target[path[-1]] = value
    _failed(verify_record(match.record, w), check)


def test_a_witness_for_another_match_fails_witness_only(match, room):
    """The witness names its match: one for another match fails ``witness``; the rest is n/a."""
    report = verify_record(match.record, room[0].witnesses[0])
    _failed(report, "witness")
    assert all(report.check(n).ok is None for n in WITNESS_CHECKS[1:])
    assert all(report.check(n).ok is not False for n in RECORD_CHECKS)


def test_a_witness_applies_to_its_own_record_among_several(room):
    """``verify R1 R2 R3 --witness W``: W's checks run on its match; the others say it is not theirs."""
    result = verify([h.record for h in room], room[1].witnesses[1])
    assert result.ok, result.text()
    assert [r.witnessed for r in result.reports] == [False, True, False]
    assert "is for match" in result.reports[0].check("witness").detail
    none = verify([h.record for h in room[:2]], room[2].witnesses[0])
    assert not none.ok and all(r.check("witness").ok is False for r in none.reports)


def test_an_invalid_witness_is_invalid_input(match):
    """A witness that is not mine-duel-witness/1 makes the input invalid (exit 2), naming the field."""
    w = copy.deepcopy(match.witnesses[0])
    w["transcript"]["hash"] = "XYZ"
    report = verify_record(match.record, w)
    assert not report.valid and not report.ok
    assert "witness.transcript.hash" in report.check("witness").detail
    assert all(report.check(n).ok is not False for n in RECORD_CHECKS)  # the record itself was still checked


def test_unknown_parts_of_the_witness_are_not_applicable(match):
    """A witness that does not know the seed or the commitment it was shown before Ready (resumed from
    another computer) checks the rest; what it lacks is n/a, never passed."""
    w = copy.deepcopy(match.witnesses[0])
    w["commitment_before_ready"] = None
    w["client_seed"] = None
    w["transcript"] = None
    report = verify_record(match.record, w)
    assert report.ok, report.text()
    assert report.check("commitment_shown").ok is None and report.check("transcript_seen").ok is None
    assert "not known" in report.check("seat_and_seed").detail


# ----- invalid input ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("fairness", "mine_commitments", 0), "not hex"),
        (("fairness", "mine_commitments", 0), "AB" * 32),
        (("fairness", "mine_commitments"), "abc"),
        (("fairness", "commitment"), 7),
        (("fairness", "previous_transcript"), "x"),
        (("fairness", "stream_used"), "5"),
        (("fairness", "stream_used"), True),
        (("fairness", "nonce"), True),
        (("fairness", "nonce"), 1.0),
        (("fairness", "nonce"), 10**400),
        (("times",), None),
        (("times", "turn_seconds"), float("nan")),
        (("times", "clock_started"), float("inf")),
        (("times", "elapsed"), 10**400),
        (("times", "clock_ended"), 1.7e308),
        (("actions", 0, "at"), -1e300),
        (("times", "turns"), -1),
        (("actions", 0, "at"), "soon"),
        (("actions", 0, "at"), None),
        (("actions", 0, "auto"), 1),
        (("result",), [1]),
        (("result", "scores"), {"a": {"b": 1}}),
        (("match_id",), ""),
    ],
)
def test_malformed_records_are_invalid_input_not_tracebacks(match, path, value):
    """A record of the wrong shape (a mine commitment that is not 64 hex digits included) is invalid input:
    valid=False with the reason, exit 2 — never a traceback."""
    record = copy.deepcopy(match.record)
    if "mine_commitments" in path:
        assert record["fairness"]["mine_commitments"]
    target = record
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    report = verify_record(record)
    assert not report.valid and report.check("record").ok is False, report.text()
    assert INTERNAL_ERROR not in report.check("record").detail


# ----- the command ---------------------------------------------------------------------------------------------------


def _write(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return str(path)


def test_cli_several_records_and_a_witness(room, tmp_path, capsys):
    """``mine-duel verify R1 R2 R3 --witness W``: exit 0; --json gives every record's report."""
    paths = [_write(tmp_path, f"r{i}.json", h.record) for i, h in enumerate(room)]
    witness = _write(tmp_path, "w.json", room[2].witnesses[0])
    assert main([*paths, "--witness", witness]) == 0
    out = capsys.readouterr().out
    assert "3 of 3 records verify." in out and "PASS  rematches" in out
    assert main([*paths, "--witness", witness, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] and [r["witnessed"] for r in data["records"]] == [False, False, True]


def test_cli_exit_codes(room, match, tmp_path, capsys):
    """Exit 0 all hold, 1 a check failed, 2 invalid input (unreadable, not JSON, malformed record or witness)."""
    good = _write(tmp_path, "good.json", match.record)
    w = _write(tmp_path, "w.json", match.witnesses[1])
    other = _write(tmp_path, "other.json", room[0].witnesses[0])
    forged = copy.deepcopy(match.record)
    forged["players"] = [{"seat": 0, "name": match.params.name_of(1)}, {"seat": 1, "name": match.params.name_of(0)}]
    forged_path = _write(tmp_path, "forged.json", forged)
    bad_mine = copy.deepcopy(match.record)
    bad_mine["fairness"]["mine_commitments"][0] = "zz"
    cases = [
        ([good], 0),
        ([good, "--witness", w], 0),
        ([forged_path], 0),  # the record alone agrees with itself ...
        ([forged_path, "--witness", w], 1),  # ... the witness does not
        ([good, "--witness", other], 1),  # a witness for none of the records fails the witness check
        ([_write(tmp_path, "junk.json", "{")], 2),
        ([_write(tmp_path, "nan.json", '{"format": NaN}')], 2),
        ([_write(tmp_path, "mine.json", bad_mine)], 2),
        ([str(tmp_path / "missing.json")], 2),
        ([good, "--witness", str(tmp_path / "missing-witness.json")], 2),
        ([good, "--witness", _write(tmp_path, "bad-w.json", "[1, 2]")], 2),
        ([good, "--witness", _write(tmp_path, "bad-w2.json", {**match.witnesses[1], "seat": True})], 2),
    ]
    for argv, code in cases:
        assert main(argv) == code, (argv, capsys.readouterr())
    err = capsys.readouterr().err
    assert "Traceback" not in err and "invalid record" in err and "invalid witness" in err


def test_cli_help_describes_it(capsys):
    """``mine-duel verify --help``: records, several in order, the witness, the exit codes."""
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for words in ("RECORD [RECORD ...]", "--witness FILE", "--json", "rematches", "mine-duel-witness/1",
                  "0 every check holds", "2 invalid input"):
        assert words in out, words


def test_cli_reads_standard_input_once(match, monkeypatch, capsys, tmp_path):
    """``-`` reads a record from standard input, at most once."""
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(match.record).encode())))
    assert main(["-"]) == 0
    with pytest.raises(SystemExit) as done:
        main(["-", "-"])
    assert done.value.code == 2


def test_o14_the_witness_names_the_match_before(room):
    """O14: given the room's records, the witness's previous match is the record given before its own."""
    w = copy.deepcopy(room[2].witnesses[0])
    w["previous"]["match_id"] = room[0].params.match_id
    result = verify([h.record for h in room], w)
    assert "record given before this one" in _failed(result.reports[2], "previous_match")
    assert verify_record(room[2].record, w).ok  # alone, the record does not name the match before it
