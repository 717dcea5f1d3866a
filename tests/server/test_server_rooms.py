"""Room and match logic without sockets or real time (RULES.md §7 O1–O16, §9 R1–R3b).

Every test drives ``ServerCore`` on ``task.Clock`` with a recording outbox (tests/support/harness.py).
"""

from __future__ import annotations

import hashlib
import json

import pytest
from support.harness import Harness, oracle_message, play_to_score_end

from mineduel.shared.fairness import commitments as fairness
from mineduel.shared.fairness import transcript as tx
from mineduel.shared.fairness.verify import verify_record
from mineduel.shared.rules.engine import Phase
from mineduel.shared.wire import links, names
from mineduel.shared.wire.messages import Ok


def opening(h: Harness, first, second) -> None:
    """Play the four opening steps by hand (F1) on cells far from each other."""
    first.send(type="explore", cell=[0, 0])
    second.send(type="explore", cell=[7, 7])
    first.send(type="plant", cell=[3, 3])
    second.send(type="plant", cell=[4, 4])


# ----- O1 rooms, O16 tokens ------------------------------------------------------------------


def test_o1_room_code_is_short_and_unambiguous_and_invite_carries_no_token():
    """O1: a created room has a 6-character code without 0/O/1/I/L and an invite link that names only the room."""
    h = Harness()
    a = h.connect()
    created = a.send(type="create_room", name="Ann")[0]
    code = created["room"]
    assert len(code) == 6 and set(code) <= set(names.ROOM_CODE_ALPHABET)
    assert not set(code) & set("0O1IL")
    assert created["invite"] == f"mineduel://192.168.1.5:47650/join/{code}"
    assert created["token"] not in created["invite"]
    assert links.parse_invite(created["invite"]) == ("192.168.1.5", 47650, code)


def test_o1_peek_seats_nobody_and_join_is_explicit():
    """O1: looking at a room (the invite link's Join screen) seats nobody; only join does."""
    h = Harness()
    a = h.connect()
    code = a.send(type="create_room")[0]["room"]
    b = h.connect("10.0.0.2")
    info = b.send(type="peek", room=code.lower())[0]
    assert info["type"] == "room_info" and info["open"] and info["seats"] == 1
    assert len(h.rooms.rooms[code].seats) == 1
    joined = b.send(type="join", room=code)[0]
    assert joined["type"] == "joined" and len(h.rooms.rooms[code].seats) == 2
    c = h.connect("10.0.0.3")
    assert c.send(type="join", room=code)[0]["code"] == "room_full"


def test_o16_only_token_hashes_are_stored_and_tokens_have_256_bits():
    """O16: the token is 64 hex digits (256 bits); storage holds its SHA-256 and never the token."""
    h = Harness()
    a, b = h.pair()
    assert len(a.token) == 64 and int(a.token, 16) >= 0
    stored = json.dumps(h.storage.rooms)
    assert a.token not in stored and b.token not in stored
    assert hashlib.sha256(a.token.encode()).hexdigest() in stored


def test_o16_resume_with_a_wrong_token_is_refused_and_changes_nothing():
    """O16: a token that matches no seat gets bad_token; the seat stays with its owner."""
    h = Harness()
    a, b = h.pair()
    c = h.connect("10.0.0.3")
    commits = h.storage.commits
    reply = c.send(type="resume", room=a.room, token="0" * 64)[0]
    assert reply["code"] == "bad_token"
    assert h.storage.commits == commits
    assert h.rooms.peer_seat[a.pid][1].peer == a.pid


def test_room_code_guessing_is_limited_per_address():
    """Limits: after 10 unknown room codes in a minute an address gets too_many_attempts, even for a real code."""
    h = Harness()
    a = h.connect()
    code = a.send(type="create_room")[0]["room"]
    guesser = h.connect("10.9.9.9")
    for _ in range(10):
        assert guesser.send(type="peek", room="ZZZZZZ")[0]["code"] == "room_not_found"
    assert guesser.send(type="peek", room=code)[0]["code"] == "too_many_attempts"
    h.advance(61)
    assert guesser.send(type="peek", room=code)[0]["type"] == "room_info"


# ----- O2, O3 start and first player ----------------------------------------------------------


def test_o2_match_starts_only_when_both_are_ready():
    """O2: one Ready starts nothing; the second starts the match for both."""
    h = Harness()
    a, b = h.pair()
    a.send(type="ready")
    assert not a.all("match_start") and h.rooms.rooms[a.room].match is None
    b.send(type="ready")
    assert a.last("match_start")["match_id"] == b.last("match_start")["match_id"]
    assert {a.seat, b.seat} == {0, 1}


@pytest.mark.parametrize("seeds", [("alpha", "beta"), ("x", "y"), ("", "zz"), ("same", "same")])
def test_o3_first_player_is_the_fair_stream_draw_over_both_client_seeds(seeds):
    """O3/R1/R2: the first player is join-order seat stream.pick(2) for SHA3(server:seedA:seedB:nonce)."""
    h = Harness(seed=hash(seeds) & 0xFFFF)
    a, b = h.pair(seeds)
    commitment = a.last("room")["next_commitment"]
    a.send(type="ready")
    b.send(type="ready", client_seed=seeds[1])
    match = h.match(a)
    assert fairness.commitment(match.server_seed) == commitment  # published before the seeds were final
    stream = fairness.FairStream.from_seeds(match.server_seed, list(seeds), 1)
    first = (a, b)[stream.pick(2)]
    assert first.last("match_start")["first"] == "me"
    assert first.seat == 0


def test_absent_client_seed_counts_as_empty_string():
    """R1 (documented): a seat that never sent a client seed contributes the empty string."""
    h = Harness()
    a = h.connect()
    room = a.send(type="create_room")[0]["room"]
    b = h.connect("10.0.0.2")
    b.send(type="join", room=room)
    a.send(type="ready")
    b.send(type="ready")
    assert a.last("match_start")["client_seeds"] == ["", ""]


# ----- O4 opening deadlines ---------------------------------------------------------------------


def test_o4_opening_deadline_fires_exactly_at_20_seconds():
    """O4: advance(19.9) changes nothing; advance(0.1) performs exactly one timeout + auto explore."""
    h = Harness()
    first, second = h.start()
    match = h.match(first)
    start = h.rooms.now()
    h.advance(19.9)
    assert match.seq == 0 and len(first.all("state")) == 1
    h.advance(0.1)
    assert [(e["type"], e.get("auto")) for e in match.actions] == [("timeout", True), ("explore", True)]
    assert all(e["at"] == start + 20 for e in match.actions)
    events = first.last("state")["events"]
    assert [e["action"] for e in events] == ["timeout", "explore"] and all(e["auto"] for e in events)
    h.advance(19.9)
    assert match.seq == 2
    h.advance(0.1)
    assert match.seq == 4 and match.state.phase is Phase.OPEN_PLANT


def test_o4_auto_moves_are_the_streams_uniform_picks():
    """O4/R2: each auto-move is opening_auto_action on the stream after the first-player draw."""
    h = Harness(seed=7)
    first, _ = h.start()
    match = h.match(first)
    for _ in range(4):
        h.advance(20)
    from mineduel.shared.fairness.record import from_json
    from mineduel.shared.rules.engine import GameState, Variant

    replay = GameState(Variant.ONLINE)
    stream = fairness.FairStream(match.signature)
    stream.pick(2)  # the first-player draw
    record = from_json({"format": "mine-duel-record/1", "variant": "online", "actions": match.actions})
    for action, raw in zip(record.actions, match.actions, strict=True):
        if raw["type"] in ("explore", "plant"):
            assert replay.opening_auto_action(stream) == action
        replay.play(action)
    assert match.state.phase is Phase.EXPLORE and match.state.turn == 1


def test_o4_manual_opening_action_starts_the_next_step_with_its_own_20_seconds():
    """O4: after a manual opening action at t=12 the next step's deadline is t=32."""
    h = Harness()
    first, second = h.start()
    h.advance(12)
    first.send(type="explore", cell=[0, 0])
    assert second.last("state")["deadline"]["left"] == 20.0
    h.advance(19.9)
    assert h.match(first).seq == 1
    h.advance(0.1)
    assert h.match(first).seq == 3


def test_r3b_plant_commitment_goes_to_both_seats_without_the_cell():
    """R3b/V4: a plant sends both seats the salted commitment and new transcript, and the cell only to the planter."""
    h = Harness()
    first, second = h.start()
    first.send(type="explore", cell=[0, 0])
    second.send(type="explore", cell=[7, 7])
    first.send(type="plant", cell=[3, 3])
    mine = first.last("state")["events"][0]
    theirs = second.last("state")["events"][0]
    assert mine["cell"] == [3, 3] and "cell" not in theirs
    assert mine["commitment"] == theirs["commitment"] and mine["transcript"] == theirs["transcript"]
    match = h.match(first)
    assert theirs["commitment"] == fairness.mine_commitment(match.salts[0], match.id, 2, 0, 27)
    # R3c: the transcript after the plant, hashed by hand from h_0 (all three at the start time,
    # each an opening step: the deadline moves to at + 20 s each time).
    at, deadline = 1_700_000_000_000, 1_700_000_020_000
    h = second.all("state")[0]["transcript"]
    h = tx.step(h, 0, 0, "explore", "0,0", at, False, deadline)
    h = tx.step(h, 1, 1, "explore", "7,7", at, False, deadline)
    h = tx.step(h, 2, 0, "plant", theirs["commitment"], at, False, deadline)
    assert second.last("state")["transcript"] == theirs["transcript"] == h == match.transcript


# ----- O5 normal-turn deadline ---------------------------------------------------------------------


def test_o5_valid_actions_do_not_reset_the_turn_clock_and_expiry_passes_the_turn():
    """O5: explore at 5 s and plant at 10 s keep the 20 s deadline; at 20 s the turn passes with no auto move."""
    h = Harness()
    first, second = h.start()
    opening(h, first, second)
    match = h.match(first)
    assert match.state.turn == 1 and match.state.to_move == 0
    h.advance(5)
    first.send(type="explore", cell=[0, 7])
    h.advance(5)
    first.send(type="plant", cell=[1, 7])
    assert first.last("state")["deadline"]["left"] == 10.0
    h.advance(9.9)
    assert match.state.to_move == 0
    h.advance(0.1)
    assert match.state.to_move == 1 and match.state.turn == 2
    assert match.actions[-1] == {"seat": 0, "type": "timeout", "at": match.actions[-1]["at"], "auto": True}
    assert second.last("state")["deadline"]["left"] == 20.0


def test_o5_expiry_skips_missing_mandatory_actions():
    """O5: a turn that never explored still passes at 20 s; nothing is explored or planted for it."""
    h = Harness()
    first, second = h.start()
    opening(h, first, second)
    match = h.match(first)
    revealed = match.state.revealed
    h.advance(20)
    assert match.state.revealed == revealed and match.state.to_move == 1
    assert [a["type"] for a in match.actions[-1:]] == ["timeout"]


def test_o6_a_late_action_after_expiry_is_refused_even_if_the_timer_has_not_run():
    """O6: with the clock past the deadline but its timer not yet run, the action settles the timeout first and is refused."""
    h = Harness()
    first, second = h.start()
    opening(h, first, second)
    h.clock.rightNow += 20.5  # time passes, no delayed call runs
    reply = first.send(type="explore", cell=[0, 7])
    assert reply[-1]["code"] == "not_your_turn"
    match = h.match(first)
    assert match.actions[-1]["type"] == "timeout" and match.state.to_move == 1
    assert match.actions[-1]["at"] == pytest.approx(names.TURN_SECONDS + match.actions[-2]["at"])


# ----- O7–O11 endings ----------------------------------------------------------------------------


def test_o7_o8_ko_ends_the_match_and_own_mine_is_refused():
    """O8: exploring one's own mine is refused; exploring the opponent's mine alone is a KO loss (O7)."""
    h = Harness()
    first, second = h.start()
    opening(h, first, second)
    assert first.send(type="explore", cell=[3, 3])[-1]["code"] == "own_mine"
    first.send(type="explore", cell=[4, 4])
    end = first.last("match_end")
    assert end["result"] == {"outcome": "loss", "winner": "opponent", "reason": "ko", "scores": None}
    assert second.last("match_end")["result"]["outcome"] == "win"
    assert end["reveal"]["ko_cell"] == [4, 4]
    assert first.send(type="explore", cell=[5, 5])[-1]["code"] == "game_over"


def test_o9_o10_cannot_continue_ends_by_score():
    """O9/O10: when no safe unmarked cell is left the match ends at once by score, seat-relative."""
    h = Harness()
    first, second = h.start()
    play_to_score_end(h, first, second)
    end = first.last("match_end")
    assert end["result"]["reason"] == "score" and end["result"]["scores"] == {"me": 0, "opponent": 0}
    assert end["result"]["outcome"] == "draw"
    assert verify_record(end["record"]).ok


def test_o11_resign_is_allowed_for_either_seat_any_time():
    """O11: the seat not to move may resign in the opening; it loses."""
    h = Harness()
    first, second = h.start()
    reply = second.send(type="resign")
    assert reply[-1] == {"type": "ok", "request": "resign", "seq": 1}
    assert second.last("match_end")["result"]["outcome"] == "loss"
    assert first.last("match_end")["result"] == {"outcome": "win", "winner": "me", "reason": "resign", "scores": None}


# ----- O12 presence -------------------------------------------------------------------------------


def test_o12_clean_close_tells_the_opponent_the_absolute_deadline_and_seconds_left():
    """O12: a closed socket is detected at once; the opponent learns 'disconnected, 120 s left' with the server deadline."""
    h = Harness()
    first, second = h.start()
    now = h.rooms.now()
    second.drop()
    presence = first.last("presence")
    assert presence["connected"] is False
    assert presence["deadline"] == {"at": now + 120, "left": 120.0}
    assert presence["server_time"] == now


def test_o12_grace_over_while_the_other_is_connected_loses():
    """O12: advance(119.9) after the drop changes nothing (turns keep running); at 120 s the absent seat loses."""
    h = Harness(turn_seconds=1000)
    first, second = h.start()
    second.drop()
    h.advance(119.9)
    assert not h.match(first).over
    h.advance(0.1)
    end = first.last("match_end")
    assert end["result"] == {"outcome": "win", "winner": "me", "reason": "disconnect", "scores": None}
    assert h.match(first).actions[-1]["type"] == "disconnect" and h.match(first).actions[-1]["auto"]


def test_o12_turns_keep_running_while_a_seat_is_away():
    """O12/O4: the absent seat's opening deadline still expires and its auto-move is made."""
    h = Harness()
    first, second = h.start()
    first.drop()
    h.advance(20)
    assert h.match(second).seq == 2 and h.match(second).state.to_move == 1


def test_o12_reconnect_within_grace_with_the_stored_token_continues():
    """O12: resuming on a new connection with the token restores the seat, its full view and history."""
    h = Harness()
    first, second = h.start()
    first.send(type="explore", cell=[0, 0])
    first.drop()
    h.advance(60)
    again = h.connect("10.0.0.7")
    reply = again.send(type="resume", room=first.room, token=first.token)
    kinds = [m["type"] for m in reply]
    assert kinds[:4] == ["joined", "room", "match_start", "state"]
    state = reply[3]
    assert state["events"][0]["action"] == "explore"
    assert state["board"]["opened_by"][0][0] == "m"
    assert second.last("presence")["connected"] is True
    h.advance(120)
    assert not h.match(first).over  # the grace was cancelled; only turn timeouts ran


def test_o12_resume_replaces_a_stale_connection():
    """O12: a restarted client resuming while its old socket is not yet detected takes over; the old one is closed."""
    h = Harness()
    first, second = h.start()
    again = h.connect("10.0.0.7")
    again.send(type="resume", room=first.room, token=first.token)
    assert first.last("error")["code"] == "replaced" and first.closed
    assert h.rooms.peer_seat[again.pid][1].peer == again.pid


def test_o12_silent_drop_is_detected_by_the_idle_timeout_within_15_seconds():
    """O12: a peer that sends nothing for 15 s is dropped; one that answers pings stays."""
    h = Harness(idle_timeout=15.0, ping_interval=5.0)
    h.core.start()
    first, second = h.start()
    for _ in range(3):
        h.advance(5)
        second.send(type="pong")
    assert first.closed and first.last("error")["code"] == "idle"
    assert not second.closed
    assert second.last("presence")["connected"] is False
    assert any(m["type"] == "ping" for m in second.messages)


def test_o12_both_absent_is_void_only_after_both_graces():
    """O12: both away → no result when the first grace ends; void when the second one ends too."""
    h = Harness(turn_seconds=10_000)
    first, second = h.start()
    first.drop()
    h.advance(30)
    second.drop()
    h.advance(90)  # first's grace is over, second still has 30 s
    match = h.match(first)
    assert not match.over
    h.advance(29.9)
    assert not match.over
    h.advance(0.1)
    assert match.over and match.state.outcome().reason.value == "void"
    assert match.actions[-1]["type"] == "void"


def test_o12_first_expired_loses_if_the_other_returns():
    """O12: one grace runs out while both are away; the other comes back in its grace; the first-expired seat loses."""
    h = Harness(turn_seconds=10_000)
    first, second = h.start()
    first.drop()
    h.advance(30)
    second.drop()
    h.advance(100)
    assert not h.match(first).over
    back = h.connect("10.0.0.9")
    back.send(type="resume", room=second.room, token=second.token)
    end = back.last("match_end")
    assert end["result"] == {"outcome": "win", "winner": "me", "reason": "disconnect", "scores": None}
    assert h.match(first).state.outcome().winner == second.seat


def test_o12_a_fixed_result_is_not_changed_by_a_later_disconnection():
    """O11/O12: after a resignation the other seat leaving changes nothing."""
    h = Harness()
    first, second = h.start()
    first.send(type="resign")
    second.drop()
    h.advance(500)
    assert h.match(first).state.outcome().reason.value == "resign"


# ----- O13–O15 after the end -----------------------------------------------------------------------


def test_o13_full_reveal_after_the_end_and_rejoin_shows_the_same_result():
    """O13: match_end reveals all mines with owners and overlaps; resuming later shows the same result."""
    h = Harness()
    first, second = h.start()
    first.send(type="explore", cell=[0, 0])
    second.send(type="explore", cell=[7, 7])
    first.send(type="plant", cell=[3, 3])
    second.send(type="plant", cell=[3, 3])  # overlap (V5)
    first.send(type="resign")
    end = first.last("match_end")
    assert end["reveal"]["mines"][3][3] == "x"
    again = h.connect("10.0.0.5")
    again.send(type="resume", room=first.room, token=first.token)
    assert again.last("match_end")["result"] == end["result"]
    assert again.last("match_end")["record"] == end["record"]


def test_o14_rematch_needs_both_and_swaps_sides_with_a_new_match_id():
    """O14: one consent starts nothing; both start a new match with a new id, previous second player first."""
    h = Harness()
    first, second = h.start()
    old = h.match(first).id
    first.send(type="resign")
    first.send(type="rematch")
    assert second.last("rematch") == {"type": "rematch", "me": False, "opponent": True}
    assert h.match(first).id == old
    second.send(type="rematch")
    start = second.last("match_start")
    assert start["match_id"] != old and start["first"] == "me" and start["first_player_rule"] == "swap"
    assert first.last("match_start")["first"] == "opponent"
    assert start["nonce"] == 2


def test_o14_rematch_needs_both_connected():
    """O14: a consent is withdrawn by disconnecting; the rematch waits for a fresh consent from the returned seat."""
    h = Harness()
    first, second = h.start()
    first.send(type="resign")
    second.send(type="rematch")
    second.drop()
    first.send(type="rematch")
    assert h.match(first).over
    back = h.connect("10.0.0.8")
    back.send(type="resume", room=second.room, token=second.token)
    assert h.match(first).over
    back.send(type="rematch")
    assert not h.match(first).over


def test_o15_waiting_rooms_expire_after_24_hours_matches_in_progress_never():
    """O15: a room nobody started is gone after 24 h; a room with a match in progress stays after 48 h."""
    h = Harness(turn_seconds=10**9)
    waiting = h.connect()
    code = waiting.send(type="create_room")[0]["room"]
    first, second = h.start()
    h.advance(24 * 3600 - 1)
    h.rooms.sweep()
    h.turn()
    assert code in h.rooms.rooms
    h.advance(2)
    h.rooms.sweep()
    h.turn()
    assert code not in h.rooms.rooms and code not in h.storage.rooms
    assert waiting.last("room_closed")["reason"] == "expired"
    h.advance(24 * 3600)
    h.rooms.sweep()
    h.turn()
    assert first.room in h.rooms.rooms


def test_o15_results_are_kept_24_hours_after_the_end():
    """O15: get_record works until 24 h after the end, then not_found."""
    h = Harness()
    first, second = h.start()
    match_id = h.match(first).id
    first.send(type="resign")
    h.advance(24 * 3600 - 1)
    h.rooms.sweep()
    h.turn()
    assert first.send(type="get_record", match_id=match_id)[0]["type"] == "record"
    h.advance(2)
    h.rooms.sweep()
    h.turn()
    assert first.send(type="get_record", match_id=match_id)[0]["code"] == "not_found"


# ----- records -----------------------------------------------------------------------------------


def test_every_state_change_is_in_the_record_with_at_and_auto():
    """E1/RECORD.md: timeouts and auto-moves carry auto and at; the published record verifies."""
    h = Harness()
    first, second = h.start()
    h.advance(20)
    second.send(type="explore", cell=[7, 7])
    h.advance(40)
    second.send(type="resign")
    record = first.last("match_end")["record"]
    assert all("at" in a for a in record["actions"])
    assert [a.get("auto", False) for a in record["actions"][:2]] == [True, True]
    assert record["times"]["turns"] == h.match(first).state.turn
    assert verify_record(record).ok, verify_record(record).text()


# ----- bad input changes nothing -----------------------------------------------------------------


BAD_LINES = [
    (b"not json", "bad_json"),
    (b"[1,2]", "bad_json"),
    (b'{"no":"type"}', "bad_request"),
    (b'{"type":"fly"}', "unknown_type"),
    (b'{"type":"explore"}', "bad_request"),
    (b'{"type":"explore","cell":[8,0]}', "bad_request"),
    (b'{"type":"explore","cell":[0,true]}', "bad_request"),
    (b'{"type":"explore","cell":[7,7]}', "not_your_turn"),
    (b'{"type":"plant","cell":[2,2]}', "wrong_phase"),
    (b'{"type":"explore","cell":[0,0],"match_id":"0000000000000000"}', "wrong_match"),
    (b'{"type":"explore","cell":[0,0],"seq":5}', "stale_state"),
    (b'{"type":"flag","cell":[2,2]}', "wrong_phase"),
    (b'{"type":"ready"}', "match_running"),
    (b'{"type":"leave"}', "match_running"),
    (b'{"type":"rematch"}', "not_finished"),
    (b'{"type":"create_room"}', "already_seated"),
    (b'{"type":"hello","protocol":1}', "already_greeted"),
    (b'{"type":"join","room":"ABCDEF","client_seed":"a:b"}', "bad_request"),
    (b'{"type":"get_record","match_id":"xyz"}', "bad_request"),
]


@pytest.mark.parametrize(("line", "code"), BAD_LINES)
def test_bad_input_gets_an_error_code_and_changes_nothing(line, code):
    """Every bad request gets an error with its code; storage and the match stay exactly as they were."""
    h = Harness()
    first, second = h.start()
    sender = second if b"7,7" in line else first  # [7,7]: the seat not to move tries to act
    match = h.match(first)
    before = (match.state.snapshot(), len(match.actions), h.storage.commits)
    reply = sender.send_raw(line)
    assert reply[-1]["type"] == "error" and reply[-1]["code"] == code, reply
    assert (match.state.snapshot(), len(match.actions), h.storage.commits) == before


def test_error_replies_echo_the_request_id():
    """Protocol: a request's id comes back on its error and on its ok."""
    h = Harness()
    first, second = h.start()
    assert first.send(type="explore", cell=[0, 0], id="r1")[-1] == {"type": "ok", "request": "explore", "id": "r1", "seq": 1}
    err = first.send(type="explore", cell=[0, 1], id=7)[-1]
    assert err["id"] == 7 and err["code"] == "not_your_turn"


def test_hello_is_required_and_another_protocol_is_refused_and_closed():
    """Protocol: requests before hello get hello_required; hello with protocol 2 gets unsupported_protocol and a close."""
    h = Harness()
    c = h.connect(hello=False)
    assert c.send(type="create_room")[0]["code"] == "hello_required"
    assert c.send(type="ping")[0]["type"] == "pong"
    assert c.send(type="hello", protocol=2, client="x")[0]["code"] == "unsupported_protocol"
    assert c.closed


def test_line_too_long_is_refused_and_closed():
    """Limits: a line over max_line bytes gets line_too_long and the connection is closed."""
    h = Harness(max_line=100)
    c = h.connect()
    assert c.send_raw(b"{" + b" " * 200 + b"}")[0]["code"] == "line_too_long"
    assert c.closed


def test_messages_per_second_are_limited():
    """Limits: beyond the burst a connection gets rate_limited until tokens refill."""
    h = Harness(rate_per_second=2.0, rate_burst=3.0)
    c = h.connect()  # hello used one token
    codes = [c.send(type="ping")[0]["type"] for _ in range(3)]
    assert codes == ["pong", "pong", "error"]
    assert c.last("error")["code"] == "rate_limited"
    h.advance(1)
    assert c.send(type="ping")[0]["type"] == "pong"


def test_connections_per_address_are_limited():
    """Limits: the 17th connection from one address is refused with too_many_connections."""
    h = Harness(max_connections_per_address=16)
    for _ in range(16):
        h.connect("10.1.1.1")
    extra = h.connect("10.1.1.1", hello=False)
    assert extra.messages[0]["code"] == "too_many_connections" and extra.closed
    assert h.connect("10.1.1.2").pid


def test_storage_failure_is_an_internal_error_and_nothing_changes():
    """Durability: if the turn's commit fails, the action is undone, shown to nobody, the request gets
    internal_error with its id, and both seats resume the match exactly as stored."""
    h = Harness()
    first, second = h.start()
    stored = dict(h.storage.rooms)
    seen = len(second.messages)
    h.storage.fail_next = True
    reply = first.send(type="explore", cell=[0, 0], id=7)
    assert reply[0]["code"] == "internal_error" and reply[0]["id"] == 7 and reply[0]["request"] == "explore"
    assert not any(m["type"] in ("ok", "state") for m in reply)
    assert not any(m["type"] == "state" for m in second.messages[seen:])
    assert first.closed and second.closed  # their seats' connection state is reloaded: they resume
    match = h.match(first)
    assert match.seq == 0 and match.state.revealed == 0
    assert h.storage.rooms == stored
    # Until a commit succeeds again (the clock is written every second), whatever would store
    # something is refused at once rather than accepted and undone.
    probe = h.connect("10.0.0.1")
    refused = probe.send(type="resume", room=first.room, token=first.token, id="r")
    assert refused[0]["code"] == "storage_unavailable" and refused[0]["id"] == "r"
    assert probe.send(type="create_room")[0]["code"] == "storage_unavailable"
    assert probe.send(type="peek", room=first.room)[0]["type"] == "room_info"  # reading still works
    h.rooms.tick()  # the once-a-second clock write (core.start() runs it; the harness does not)
    h.turn()
    assert h.core.commits.healthy
    again = {}
    for old, address in ((first, "10.0.0.1"), (second, "10.0.0.2")):
        c = h.connect(address)
        c.token, c.room = old.token, old.room
        assert c.send(type="resume", room=old.room, token=old.token)[0]["resumed"] is True
        assert c.last("state")["seq"] == 0
        again[old] = c
    assert again[first].send(type="explore", cell=[0, 0])[-1]["type"] == "ok"
    assert again[second].last("state")["seq"] == 1


def test_a_failed_commit_spares_requests_that_changed_nothing():
    """Durability: in a failed batch, a reply that depended on nothing staged (a pong) is still delivered."""
    h = Harness()
    first, second = h.start()
    bystander = h.connect("10.0.0.9")
    h.storage.fail_next = True
    h.core.line_received(first.pid, b'{"type":"explore","cell":[0,0],"id":1}')
    h.core.line_received(bystander.pid, b'{"type":"ping","id":2}')
    h.turn()
    assert [m["type"] for m in bystander.new()] == ["pong"] and not bystander.closed
    assert first.last("error")["code"] == "internal_error"


def test_an_accepted_action_is_stored_before_it_is_acknowledged():
    """Durability: when the ok is sent the action row and the room state are already committed."""
    h = Harness()
    first, second = h.start()
    original = h.out.send
    seen = []

    def spy(peer, message):
        if isinstance(message, Ok):
            seen.append(dict(h.storage.actions.get(h.match(first).id, {})))
        original(peer, message)

    h.out.send = spy
    first.send(type="explore", cell=[0, 0])
    assert seen and 0 in seen[0]


def test_oracle_plays_legal_moves():
    """tests/support/harness.py: the oracle's moves are accepted (used by the score-ending tests)."""
    h = Harness()
    first, second = h.start()
    msg = oracle_message(h.match(first).state)
    assert first.send(**msg)[-1]["type"] == "ok"


def test_stream_position_survives_rollback():
    """R3: after a failed commit the fair stream is back where it was, so the retried auto-move is the same."""
    reference = Harness()
    reference.start()
    h = Harness()
    first, second = h.start()
    used = h.match(first).stream.consumed
    h.storage.fail_next = True
    h.advance(20)  # O4: the opening deadline: timeout + auto-move, whose commit fails
    assert h.match(first).stream.consumed == used and h.match(first).seq == 0
    h.advance(1)  # the retry, a second later
    reference.advance(20)
    ref_room = next(iter(reference.rooms.rooms.values()))
    assert h.match(first).seq == 2
    assert h.match(first).actions[1]["cell"] == ref_room.match.actions[1]["cell"]
    assert h.match(first).stream.consumed == ref_room.match.stream.consumed > used


def test_o12_a_seat_whose_grace_ran_out_may_watch_but_not_act():
    """O12 [decision]: a seat that ran out of grace while the opponent was away too gets grace_expired;
    the match then ends void."""
    h = Harness(turn_seconds=10_000)
    first, second = h.start()
    first.drop()
    h.advance(30)
    second.drop()
    h.advance(91)  # first's grace ran out at 120 s; second still has 29 s
    late = h.connect("10.0.0.4")
    late.send(type="resume", room=first.room, token=first.token)
    assert late.last("state")["to_move"] == "me"
    assert late.send(type="explore", cell=[0, 0])[-1]["code"] == "grace_expired"
    h.advance(29)
    assert late.last("match_end")["result"]["outcome"] == "void"


def test_o14_ready_after_the_end_counts_as_rematch():
    """O14: after a finished match of the same two seats, ready is taken as rematch consent."""
    h = Harness()
    first, second = h.start()
    first.send(type="resign")
    first.send(type="ready")
    assert second.last("rematch")["opponent"] is True
    second.send(type="ready")
    assert second.last("match_start")["first_player_rule"] == "swap"


def test_leave_frees_the_seat_and_a_new_opponent_is_drawn_again():
    """O1/O3: after the end a player may leave; a newcomer joins and both ready start a drawn match."""
    h = Harness()
    first, second = h.start()
    first.send(type="resign")
    assert second.send(type="rematch")[-1]["type"] == "ok"
    assert first.send(type="leave")[-1]["type"] == "ok"
    assert second.send(type="rematch")[-1]["code"] == "opponent_missing"
    newcomer = h.connect("10.0.0.6")
    newcomer.send(type="join", room=second.room, client_seed="new")
    newcomer.send(type="ready")
    second.send(type="ready")
    assert newcomer.last("match_start")["first_player_rule"] == "draw"
