"""A finished quick-match room is released once nobody is connected to it (PROTOCOL.md §17,
"After the match"): both `leave` (as any room), or one `leave`s / drops while the other is gone
already. Its result stays (O15: `get_record`), it stops counting against its address's rooms
(`too_many_rooms` for a player of many quick games a day), and a token of it then finds nothing.
A room by code, or a quick room with a seat still connected (a rematch may come), stays as before.
"""

from __future__ import annotations

from support.harness import Client, Harness
from support.players import identify

from mineduel.shared.wire import codec


def quick_game(h: Harness, n: int, address: str = "10.1.0.1") -> tuple[Client, Client, str]:
    """Two strangers matched, both ready, one resigns: a finished quick room (counted against
    ``address``, the longer waiter's)."""
    a, b = h.connect(address), h.connect(f"10.2.{n}.1")
    identify(a, n, f"A{n}")
    identify(b, n + 1, f"B{n}")
    a.send(type="quick_match")
    b.send(type="quick_match")
    h.advance(0)
    h.turn()
    code = a.last("matched")["room"]
    a.token, b.token = a.last("matched")["token"], b.last("matched")["token"]
    a.room = b.room = code
    a.send(type="ready", client_seed="a")
    b.send(type="ready", client_seed="b")
    a.send(type="resign")
    assert h.rooms.rooms[code].status == "finished"
    return a, b, code


def test_both_gone_after_the_end_releases_the_room_and_keeps_its_result() -> None:
    h = Harness()
    a, b, code = quick_game(h, 1)
    match_id = a.last("match_end")["match_id"]
    a.drop()
    assert code in h.rooms.rooms  # Bob is still there: a rematch may come
    b.send(type="leave")
    h.advance(0)
    assert code not in h.rooms.rooms and code not in h.storage.rooms
    back = h.connect("10.1.0.1")
    assert back.send(type="resume", room=code, token=a.token)[0]["code"] == "room_not_found"
    c = h.connect("10.3.0.1")
    record = c.send(type="get_record", match_id=match_id)[0]
    assert record["type"] == "record" and record["match_id"] == match_id  # O15: the result stays 24 h


def test_both_dropping_after_the_end_releases_it_too() -> None:
    h = Harness()
    a, b, code = quick_game(h, 1)
    b.drop()
    a.drop()
    assert code not in h.rooms.rooms


def test_a_player_of_many_quick_games_never_meets_too_many_rooms() -> None:
    """Before: each finished quick room lived 24 h against seat 0's address, so the 3rd game of
    two players who only ever went away after the end answered too_many_rooms (cap 2 here)."""
    h = Harness(max_rooms_per_address=2)
    for n in range(1, 12, 2):
        a, b, _ = quick_game(h, n)  # Ann's address waits first every time
        assert "too_many_rooms" not in [x.get("code") for x in a.messages]
        a.drop()
        b.drop()
    assert h.rooms.rooms == {}


def test_rooms_by_code_and_a_seat_still_there_stay() -> None:
    h = Harness()
    a, b = h.start()
    first = a if a.last("match_start")["seat"] == 0 else b
    first.send(type="resign")
    a.drop()
    b.drop()
    assert len(h.rooms.rooms) == 1  # a room by code keeps its finished match 24 h (O15), as before
    h2 = Harness()
    a, b, code = quick_game(h2, 1)
    a.drop()
    assert code in h2.rooms.rooms  # one seat still connected
    b.send(type="ready", client_seed="again")  # O14: a rematch request stays possible
    assert codec.room_code(code) in h2.rooms.rooms
