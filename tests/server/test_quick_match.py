"""The quick match in the server (issue 20, PROTOCOL.md §17) on ``task.Clock``: joining and leaving
the queue, pairing through the server into a rated room, the 10 s confirmation, what happens to a
player who does not confirm (out, penalised: a repeat waits longer) and to the one who did (back in
with its waiting time), disconnecting while queued, and the leak rules: a queued player learns
nothing about another's key, key hash, address or address tag."""

from __future__ import annotations

import hashlib

from support.harness import Client, Harness
from support.players import identify, key

from mineduel.server import glicko2
from mineduel.shared.wire import codec


def queued(h: Harness, n: int, name: str, address: str) -> Client:
    c = h.connect(address)
    identify(c, n, name)
    replies = c.send(type="quick_match", id=f"q{n}")
    assert [r["type"] for r in replies] == ["queue", "ok"], replies
    assert replies[0] == {"type": "queue", "status": "waiting", "since": round(h.rooms.now(), 3),
                          "server_time": round(h.rooms.now(), 3)}
    return c


def test_joining_and_leaving_the_queue() -> None:
    h = Harness()
    c = h.connect()
    assert c.send(type="quick_match")[0]["code"] == "identify_required"
    identify(c, 1, "Ann")
    assert c.send(type="leave_queue")[0]["code"] == "not_queued"
    assert [r["type"] for r in c.send(type="quick_match")] == ["queue", "ok"]
    assert c.send(type="quick_match")[0]["code"] == "already_queued"
    assert c.send(type="create_room")[0]["code"] == "already_queued"  # waiting: no other room meanwhile
    twin = h.connect("10.0.0.7")
    identify(twin, 1, "Ann")
    assert twin.send(type="quick_match")[0]["code"] == "already_queued"  # one player waits once
    replies = c.send(type="leave_queue", id=5)
    assert replies == [{"type": "queue", "status": "left", "reason": "cancelled"},
                       {"type": "ok", "request": "leave_queue", "id": 5}]
    assert len(h.core.quick.queue) == 0
    seated, _ = h.pair()
    identify(seated, 3, "Cy")
    assert seated.send(type="quick_match")[0]["code"] == "already_seated"


def test_two_waiting_players_are_matched_into_a_rated_room() -> None:
    """Paired at the next pairing: each gets matched (token, seat, the opponent's display and
    rating, rated, the 10 s confirmation) then its room; both ready start the match as anywhere."""
    h = Harness()
    a = queued(h, 1, "Ann", "10.0.0.1")
    b = queued(h, 2, "Bob", "10.0.0.2")
    h.advance(0)  # the pairing right after a join
    h.turn()
    ma, mb = a.last("matched"), b.last("matched")
    assert ma["room"] == mb["room"] and {ma["seat"], mb["seat"]} == {0, 1}
    assert ma["rated"] is True and ma["confirm"] == {"at": round(h.rooms.now() + 10, 3), "left": 10.0}
    assert ma["opponent"] == {"display": identify(h.connect("10.0.0.9"), 2, "Bob")["display"], "rating": 1500.0,
                              "provisional": True}
    assert len(ma["token"]) == 64 and ma["token"] != mb["token"]
    assert [x["type"] for x in a.messages[-2:]] == ["matched", "room"]
    room = a.last("room")
    assert room["rated"] is True and room["opponent"]["display"] == ma["opponent"]["display"]
    a.room = b.room = ma["room"]
    a.send(type="ready")
    b.send(type="ready")
    assert a.last("match_start")["room"] == ma["room"]
    h.advance(10)
    h.turn()
    assert h.rooms.rooms[ma["room"]].match is not None  # a started match is never dissolved
    assert a.all("room_closed") == []


def test_the_matched_token_resumes_the_seat() -> None:
    h = Harness()
    a = queued(h, 1, "Ann", "10.0.0.1")
    queued(h, 2, "Bob", "10.0.0.2")
    h.advance(0)
    h.turn()
    matched = a.last("matched")
    a.drop()
    back = h.connect("10.0.0.1")
    replies = back.send(type="resume", room=matched["room"], token=matched["token"])
    assert replies[0]["type"] == "joined" and replies[0]["resumed"] is True


def test_not_ready_dissolves_the_room_requeues_the_confirmer_and_penalises() -> None:
    """§17: after 10 s without both ready the room goes; the one who confirmed is back in the queue
    with its waiting time kept, the other is out (not_ready) with room_closed; a second such
    offence makes that player's next join wait (the policy's penalty) before any pairing."""
    h = Harness()
    a = queued(h, 1, "Ann", "10.0.0.1")
    since = a.last("queue")["since"]
    h.advance(3)
    b = queued(h, 2, "Bob", "10.0.0.2")
    h.advance(0)
    h.turn()
    code = a.last("matched")["room"]
    a.send(type="ready")
    h.advance(9.9)
    h.turn()
    assert a.all("room_closed") == []
    h.advance(0.2)
    h.turn()
    assert [x["type"] for x in b.new()][-2:] == ["room_closed", "queue"]
    assert b.last("queue") == {"type": "queue", "status": "left", "reason": "not_ready"}
    assert b.last("room_closed") == {"type": "room_closed", "room": code, "reason": "not_ready"}
    assert [x["type"] for x in a.new()][-2:] == ["room_closed", "queue"]
    assert a.last("queue")["status"] == "waiting" and a.last("queue")["since"] == since
    assert code not in h.rooms.rooms and code not in h.storage.rooms
    assert h.core.quick.queued(a.pid) and not h.core.quick.queued(b.pid)
    assert b.send(type="leave")[0]["code"] == "not_seated"  # the seat is gone with the room
    # A second offence by Bob: his next join waits out the penalty (15 s with the defaults).
    b.send(type="quick_match")
    h.advance(0)
    h.turn()
    assert b.last("matched")["room"] != code
    a.send(type="ready")
    h.advance(10.1)
    h.turn()
    b.send(type="quick_match")
    h.advance(0)
    h.turn()
    policy = h.config.pairing
    h.advance(policy.penalty_base - 1)
    h.core.quick.pair_now()
    h.turn()
    assert len(b.all("matched")) == 2  # still waiting: penalised
    h.advance(1.5)
    h.core.quick.pair_now()
    h.turn()
    assert len(b.all("matched")) == 3


def test_closing_the_connection_leaves_the_queue() -> None:
    h = Harness()
    a = queued(h, 1, "Ann", "10.0.0.1")
    a.drop()
    assert len(h.core.quick.queue) == 0
    b = queued(h, 2, "Bob", "10.0.0.2")
    h.advance(0)
    h.turn()
    assert b.all("matched") == []


def test_no_pairing_of_one_address_with_itself() -> None:
    h = Harness()
    a = queued(h, 1, "Ann", "10.0.0.1")
    queued(h, 2, "Bob", "10.0.0.1")
    h.advance(120)
    h.core.quick.pair_now()
    h.turn()
    assert a.all("matched") == []


def test_a_quick_match_is_rated() -> None:
    h = Harness()
    a = queued(h, 1, "Ann", "10.0.0.1")
    b = queued(h, 2, "Bob", "10.0.0.2")
    h.advance(0)
    h.turn()
    a.room = b.room = a.last("matched")["room"]
    a.send(type="ready")
    b.send(type="ready")
    first = a if a.last("match_start")["seat"] == 0 else b
    first.send(type="resign")
    new = glicko2.update(glicko2.Rating(), [(glicko2.Rating(), 0.0)])
    assert first.last("match_end")["rating"]["after"] == round(new.value, 1)


def test_a_queued_player_learns_nothing_of_another_key_or_address() -> None:
    """Every byte sent to Ann while she waits, is matched, plays and sees her room: none holds Bob's
    key, the hash stored for it, his address or his address's owner tag (nor her own address's)."""
    h = Harness()
    a = queued(h, 1, "Ann", "10.0.0.1")
    b = queued(h, 2, "Bob", "10.77.0.2")
    h.advance(0)
    h.turn()
    a.room = b.room = a.last("matched")["room"]
    a.send(type="ready")
    b.send(type="ready")
    a.send(type="get_leaderboard")
    a.send(type="get_profile", player=b.last("player")["player"] if b.all("player") else identify(b, 2, "Bob")["player"])
    hashed = hashlib.sha256(key(2).encode()).hexdigest()
    owner = h.core.limits.owner("10.77.0.2")
    secrets = [key(2), hashed, "10.77.0.2", owner, b.last("matched")["token"]]
    sent = b"".join(h.out.lines[a.pid])
    for secret in secrets:
        assert secret.encode() not in sent, secret
    assert {codec.decode(line[:-1])["type"] for line in h.out.lines[a.pid]} >= {"queue", "matched", "room", "match_start"}


def test_dropping_out_of_a_quick_match_game_counts_as_leaving() -> None:
    """A quick-match game lost by disconnection (O12) is an offence of the leaver (the queue's
    penalty), counted at the next pairing."""
    h = Harness()
    a = queued(h, 1, "Ann", "10.0.0.1")
    b = queued(h, 2, "Bob", "10.0.0.2")
    h.advance(0)
    h.turn()
    a.room = b.room = a.last("matched")["room"]
    a.send(type="ready")
    b.send(type="ready")
    ann = a.last("player")["player"]
    a.drop()
    h.advance(h.config.grace_seconds + 1)
    h.turn()
    assert b.last("match_end")["result"]["reason"] == "disconnect"
    quick = h.core.quick
    leavers = h.rooms.players.quick_leavers
    assert [player for player, _ in leavers] == [ann]  # (with its seat's address tag)
    quick.pair_now()
    assert leavers == []
    now = h.rooms.now()
    assert quick.queue.penalise(ann, now) == now + h.config.pairing.penalty_base  # one offence was counted before



def test_the_pairing_loop_runs_on_the_clock_and_stops_with_the_server() -> None:
    """ServerCore.start pairs every 0.5 s on the injected clock (without the pairing a join
    schedules); stop cancels the loop and every confirmation timer."""
    h = Harness()
    a = h.connect("10.0.0.1")
    b = h.connect("10.0.0.2")
    identify(a, 1, "Ann")
    identify(b, 2, "Bob")
    quick = h.core.quick
    for c in (a, b):
        player = h.rooms.players.of(c.pid)
        assert player is not None
        quick._enter(c.pid, player, h.rooms.now())  # queued without the join's immediate pairing
    h.turn()
    h.core.start()
    h.advance(0.4)
    h.turn()
    assert a.all("matched") == []
    h.advance(0.1)
    h.turn()
    assert a.all("matched") and len(quick.confirms) == 1
    (confirm,) = quick.confirms.values()
    h.core.stop()
    assert not confirm.call.active() and quick._loop is None
    assert all(not call.active() for call in h.clock.getDelayedCalls())
