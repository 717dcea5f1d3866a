"""Wire helpers in shared/protocol.py (docs/PROTOCOL.md; V2 seat-relative views)."""

from __future__ import annotations

import pytest

from mineduel.shared.wire import protocol
from mineduel.shared.rules.engine import Action, ActionType, GameState, Variant
from mineduel.shared.wire.protocol import ErrorCode, ProtocolError


def test_encode_is_one_compact_utf8_line_and_decode_reverses_it():
    """Framing: one JSON object per \\n-terminated UTF-8 line, non-ASCII kept as UTF-8."""
    line = protocol.encode({"type": "hello", "client": "지뢰/1"})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert "지뢰".encode() in line
    assert protocol.decode(line[:-1]) == {"type": "hello", "client": "지뢰/1"}
    assert protocol.decode(line[:-1] + b"\r")["type"] == "hello"


@pytest.mark.parametrize(
    ("line", "code"),
    [(b"\xff", "bad_json"), (b"nope", "bad_json"), (b"NaN", "bad_json"), (b"[]", "bad_json"),
     (b'{"a":1}', "bad_request"), (b'{"type":3}', "bad_request")],
)
def test_decode_rejects_with_the_documented_codes(line, code):
    """Errors: not UTF-8 JSON or not an object is bad_json; a missing/non-string type is bad_request."""
    with pytest.raises(ProtocolError) as info:
        protocol.decode(line)
    assert info.value.code == code


def test_room_codes_are_case_insensitive_and_unknown_shapes_are_not_found():
    """O1: codes are read case-insensitively; a malformed code is simply a room that does not exist."""
    assert protocol.room_code(" abc234 ") == "ABC234"
    for bad in ("ABC23", "ABC2340", "ABCDE0", "ABCDEI", 5):
        with pytest.raises(ProtocolError) as info:
            protocol.room_code(bad)
        assert info.value.code in (ErrorCode.ROOM_NOT_FOUND, ErrorCode.BAD_REQUEST)


def test_invite_links_round_trip_including_ipv6():
    """O1: mineduel://HOST:PORT/join/CODE identifies the room only."""
    assert protocol.invite_link("10.0.0.2", 47650, "ABC234") == "mineduel://10.0.0.2:47650/join/ABC234"
    assert protocol.parse_invite("mineduel://[::1]:5/join/abc234") == ("::1", 5, "ABC234")
    with pytest.raises(ValueError):
        protocol.parse_invite("https://x/join/ABC234")


def test_client_seed_rules():
    """R1: client seeds are up to 64 printable ASCII characters without ':' (seeds are joined with ':')."""
    assert protocol.client_seed({"client_seed": "abc-123_XYZ"}) == "abc-123_XYZ"
    assert protocol.client_seed({}) is None
    for bad in ("a:b", "x" * 65, "é", 5):
        with pytest.raises(ProtocolError):
            protocol.client_seed({"client_seed": bad})


def _played() -> GameState:
    s = GameState(Variant.ONLINE)
    for a in (Action(0, ActionType.EXPLORE, 0), Action(1, ActionType.EXPLORE, 63),
              Action(0, ActionType.PLANT, 9), Action(1, ActionType.PLANT, 9),
              Action(0, ActionType.EXPLORE, 2), Action(0, ActionType.FLAG, 20)):
        s.play(a)
    return s


@pytest.mark.parametrize("seat", [0, 1])
def test_state_message_round_trips_to_the_same_seat_view(seat):
    """V2: view_from_state(state_message(view)) gives back the engine's SeatView exactly."""
    s = _played()
    view = s.view(seat, 123.5)
    msg = protocol.state_message(view, match_id="0" * 16, seq=6, now=110.0, transcript="a" * 64, events=[])
    back = protocol.view_from_state(protocol.decode(protocol.encode(msg)[:-1]))
    assert back == view
    assert msg["deadline"] == {"at": 123.5, "left": 13.5}
    assert msg["to_move"] == ("me" if seat == 0 else "opponent")


def test_state_message_has_no_opponent_mines_v4():
    """V4: the seat-relative board has the viewer's mines only; the opponent's mine cells appear nowhere."""
    s = _played()
    s.play(Action(0, ActionType.PLANT, 40))  # only seat 0's
    msg = protocol.state_message(s.view(1), match_id="0" * 16, seq=7, now=0, transcript="a" * 64, events=[])
    assert msg["board"]["my_mines"][5] == "........"  # cell 40 = row 5, col 0
    assert "x" not in msg["board"]["my_mines"][5]


def test_legal_moves_from_a_view_match_the_engine():
    """Bots: legal_moves(view) lists what the engine accepts for the seat to move (resign aside)."""
    s = _played()
    view = s.view(s.to_move)
    moves = {(m.type, m.cell) for m in protocol.legal_moves(view)}
    engine = {(a.type.value, a.cell) for a in s.legal_actions()}
    # The view cannot know the opponent's mines, so explores may include them; everything else agrees.
    assert {m for m in moves if m[0] != "explore"} == {m for m in engine if m[0] != "explore"}
    assert {m for m in engine if m[0] == "explore"} <= moves


def test_error_code_list_is_unique():
    """Errors: every code is a distinct short string."""
    codes = [c.value for c in ErrorCode]
    assert len(codes) == len(set(codes)) and all(c.isidentifier() for c in codes)
