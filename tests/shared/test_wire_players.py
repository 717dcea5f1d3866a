"""The typed messages of PROTOCOL.md §17 (players, quick match, ratings): each server message reads
back to the same bytes, the documented JSON is what they write, a malformed one is refused, and
each request reads back from its own wire form (bad fields: ``bad_request``)."""

from __future__ import annotations

import pytest

from mineduel.shared.wire import codec
from mineduel.shared.wire import messages as m

KEY = "A" * 42 + "E"
RATING = m.RatingInfo(1500.0, 500.0, True)

DOCUMENTED = [
    '{"type":"player","player":"3f9c0a1b2c3d4e5f","name":"Ann","tag":"3f9c","display":"Ann#3f9c",'
    '"rating":{"value":1500.0,"deviation":500.0,"provisional":true},"games":0,"wins":0,"losses":0,"draws":0}',
    '{"type":"queue","status":"waiting","since":1700000000.0,"server_time":1700000001.5}',
    '{"type":"queue","status":"left","reason":"cancelled"}',
    '{"type":"queue","status":"left","reason":"not_ready"}',
    '{"type":"matched","room":"NYTF23","token":"' + "a" * 64 + '","seat":0,'
    '"opponent":{"display":"Bob#77aa","rating":1523.4,"provisional":false},"rated":true,'
    '"confirm":{"at":1700000010.0,"left":10.0}}',
    '{"type":"profile","player":"3f9c0a1b2c3d4e5f","display":"Ann#3f9c",'
    '"rating":{"value":1562.3,"deviation":290.3,"provisional":true},"games":1,"wins":1,"losses":0,"draws":0,'
    '"recent":[{"match_id":"b048f279829caa65","opponent":"Bob#77aa","result":"win","change":62.3,"at":1700000100.0}],"id":4}',
    '{"type":"leaderboard","top":[{"rank":1,"player":"3f9c0a1b2c3d4e5f","display":"Ann#3f9c","rating":1890.2,"games":40}],'
    '"me":{"rank":57,"rating":1600.0}}',
    '{"type":"leaderboard","top":[],"me":null,"id":"x"}',
]


@pytest.mark.parametrize("line", DOCUMENTED, ids=lambda line: line[9:24])
def test_the_documented_lines_read_and_write_back_identically(line: str) -> None:
    message = codec.decode_server(line)
    assert type(message).TYPE.value == codec.decode(line)["type"]
    assert codec.encode_message(message) == line.encode() + b"\n"


def test_room_and_match_end_carry_the_rating_fields_only_when_set() -> None:
    """Additive (§17): an unrated room and an unidentified seat are the same bytes as before."""
    seat = m.SeatInfo("Ann", True, False, False, None, False)
    rated_seat = m.SeatInfo("Ann", True, False, False, None, False, "Ann#3f9c", 1500.0, True)
    plain = m.Room("NYTF23", "waiting", seat, None, None, "0" * 64, None, 1.0)
    assert "rated" not in plain.wire() and "display" not in plain.wire()["me"]
    rated = m.Room("NYTF23", "waiting", rated_seat, seat, None, "0" * 64, None, 1.0, 0, True)
    wire = rated.wire()
    assert wire["rated"] is True
    assert wire["me"]["display"] == "Ann#3f9c" and wire["me"]["rating"] == 1500.0
    assert m.Room.parse(wire) == rated
    change = m.RatingChange(1500.0, 1562.3, 62.3, 290.3, True)
    assert change.wire() == {"before": 1500.0, "after": 1562.3, "change": 62.3, "deviation": 290.3, "provisional": True}
    unrated = m.RatingChange(1500.0, 1500.0, 0.0, 500.0, True, "pair_limit")
    assert m.RatingChange.parse(unrated.wire()) == unrated


@pytest.mark.parametrize(
    "line",
    [
        '{"type":"queue","status":"gone","reason":"x"}',
        '{"type":"queue","status":"waiting"}',
        '{"type":"matched","room":"NYTF23","token":"short","seat":0,"opponent":{"display":"B#1","rating":1,'
        '"provisional":false},"rated":true,"confirm":{"at":1,"left":1}}',
        '{"type":"player","player":"3f9c","name":"Ann","tag":"3f9c","display":"Ann#3f9c",'
        '"rating":{"value":1500.0,"deviation":500.0,"provisional":true},"games":0,"wins":0,"losses":0,"draws":0}',
        '{"type":"leaderboard","top":[{"rank":0,"player":"3f9c0a1b2c3d4e5f","display":"A","rating":1,"games":1}],"me":null}',
        '{"type":"profile","player":"3f9c0a1b2c3d4e5f","display":"A\\u0000","rating":{"value":1,"deviation":1,'
        '"provisional":true},"games":0,"wins":0,"losses":0,"draws":0,"recent":[]}',
    ],
)
def test_a_malformed_player_message_is_refused(line: str) -> None:
    with pytest.raises(m.BadMessage):
        codec.decode_server(line)


REQUESTS: list[m.ClientMessage] = [
    m.Identify(KEY, "Ann", 1), m.Rename("Bob"), m.QuickMatch(2), m.LeaveQueue(), m.GetProfile(),
    m.GetProfile("3f9c0a1b2c3d4e5f", 3), m.GetLeaderboard("l"), m.CreateRoom("Ann", None, None, False, True, True),
]


@pytest.mark.parametrize("request_", REQUESTS, ids=lambda r: type(r).__name__)
def test_a_player_request_reads_back_from_its_own_wire_form(request_: m.ClientMessage) -> None:
    obj = codec.decode(codec.encode_message(request_)[:-1])
    assert codec.parse_request(codec.request_kind(obj), obj) == request_


@pytest.mark.parametrize(
    "obj",
    [
        {"type": "identify", "key": "A" * 42, "name": "Ann"},  # 42 characters
        {"type": "identify", "key": "A" * 42 + "=", "name": "Ann"},  # padding is not URL-safe base64 here
        {"type": "identify", "key": KEY, "name": 5},
        {"type": "identify", "name": "Ann"},
        {"type": "rename"},
        {"type": "get_profile", "player": "3F9C0A1B2C3D4E5F"},
        {"type": "create_room", "rated": 1},
    ],
)
def test_malformed_player_requests_are_bad_request(obj: dict[str, object]) -> None:
    with pytest.raises(codec.ProtocolError) as caught:
        codec.parse_request(codec.request_kind(obj), obj)
    assert caught.value.code == "bad_request"
