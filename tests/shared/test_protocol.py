"""The wire pieces of docs/PROTOCOL.md: codec, field checks, links, a seat's ``state`` (V2, V4), bot moves.

The ``state`` a seat gets is built by the server's presenter from that seat's ``SeatView`` and read
back by a client with ``codec.decode_server`` and ``board.view_of``: the round trip is checked here
end to end, through the bytes.
"""

from __future__ import annotations

import pytest

from mineduel.server import presenter
from mineduel.server.match import LiveMatch
from mineduel.shared.rules.engine import Action, ActionType, GameState, Variant
from mineduel.shared.wire import board, bots, codec, links
from mineduel.shared.wire import messages as m
from mineduel.shared.wire.codec import ProtocolError
from mineduel.shared.wire.names import ErrorCode


def test_encode_is_one_compact_utf8_line_and_decode_reverses_it():
    """Framing: one JSON object per \\n-terminated UTF-8 line, non-ASCII kept as UTF-8."""
    line = codec.encode({"type": "hello", "client": "지뢰/1"})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert "지뢰".encode() in line
    assert codec.decode(line[:-1]) == {"type": "hello", "client": "지뢰/1"}
    assert codec.decode(line[:-1] + b"\r")["type"] == "hello"
    assert codec.encode_message(m.Hello(1, "지뢰/1")) == codec.encode({"type": "hello", "protocol": 1, "client": "지뢰/1"})


@pytest.mark.parametrize(
    ("line", "code"),
    [(b"\xff", "bad_json"), (b"nope", "bad_json"), (b"NaN", "bad_json"), (b"[]", "bad_json"),
     (b'{"a":1}', "bad_request"), (b'{"type":3}', "bad_request")],
)
def test_decode_rejects_with_the_documented_codes(line, code):
    """Errors: not UTF-8 JSON or not an object is bad_json; a missing/non-string type is bad_request."""
    with pytest.raises(ProtocolError) as info:
        codec.decode(line)
    assert info.value.code == code


def test_room_codes_are_case_insensitive_and_unknown_shapes_are_not_found():
    """O1: codes are read case-insensitively; a malformed code is simply a room that does not exist."""
    assert codec.room_code(" abc234 ") == "ABC234"
    for bad in ("ABC23", "ABC2340", "ABCDE0", "ABCDEI", 5):
        with pytest.raises(ProtocolError) as info:
            codec.room_code(bad)
        assert info.value.code in (ErrorCode.ROOM_NOT_FOUND, ErrorCode.BAD_REQUEST)


def test_invite_links_round_trip_including_ipv6():
    """O1: mineduel://HOST:PORT/join/CODE identifies the room only."""
    assert links.invite_link("10.0.0.2", 47650, "ABC234") == "mineduel://10.0.0.2:47650/join/ABC234"
    assert links.parse_invite("mineduel://[::1]:5/join/abc234") == ("::1", 5, "ABC234")
    with pytest.raises(ValueError, match="not an invite link"):
        links.parse_invite("https://x/join/ABC234")


def test_client_seed_rules():
    """R1: client seeds are up to 64 printable ASCII characters without ':' (seeds are joined with ':');
    the space is printable ASCII (§4)."""
    assert codec.client_seed({"client_seed": "abc-123_XYZ"}) == "abc-123_XYZ"
    assert codec.client_seed({"client_seed": " a b~ "}) == " a b~ "
    assert codec.client_seed({"client_seed": " " * 64}) == " " * 64
    assert codec.client_seed({}) is None
    for bad in ("a:b", "x" * 65, "é", 5, "a\tb", "\x7f", " " * 65):
        with pytest.raises(ProtocolError):
            codec.client_seed({"client_seed": bad})


def _played() -> GameState:
    s = GameState(Variant.ONLINE)
    for a in (Action(0, ActionType.EXPLORE, 0), Action(1, ActionType.EXPLORE, 63),
              Action(0, ActionType.PLANT, 9), Action(1, ActionType.PLANT, 9),
              Action(0, ActionType.EXPLORE, 2), Action(0, ActionType.FLAG, 20)):
        s.play(a)
    return s


def _match(state: GameState, deadline: float | None) -> LiveMatch:
    """A live match holding ``state`` (no history: the presenter reads the state and the deadline)."""
    return LiveMatch(
        id="0" * 16, number=1, players=(0, 1), join_order=(0, 1), server_seed="s" * 64, client_seeds=("a", "b"),
        first_rule="draw", started=0.0, started_wall=0.0, turn_seconds=20.0, state=state, transcript="a" * 64,
        deadline=deadline,
    )


@pytest.mark.parametrize("seat", [0, 1])
def test_state_message_round_trips_to_the_same_seat_view(seat):
    """V2: the presenter's ``state`` for a seat, written and read back (decode_server, view_of),
    gives back the engine's SeatView exactly."""
    s = _played()
    msg = presenter.state(_match(s, 123.5), seat, 110.0, [])
    back = codec.decode_server(codec.encode_message(msg))
    assert isinstance(back, m.State) and codec.encode_message(back) == codec.encode_message(msg)
    assert board.view_of(back) == s.view(seat, 123.5)
    assert msg.wire()["deadline"] == {"at": 123.5, "left": 13.5}
    assert msg.to_move == ("me" if seat == 0 else "opponent")


def test_state_message_has_no_opponent_mines_v4():
    """V4: the seat-relative board has the viewer's mines only; the opponent's mine cells appear nowhere."""
    s = _played()
    s.play(Action(0, ActionType.PLANT, 40))  # only seat 0's
    msg = presenter.state(_match(s, None), 1, 0.0, [])
    assert msg.board.my_mines[5] == "........"  # cell 40 = row 5, col 0
    assert "x" not in msg.wire()["board"]["my_mines"][5]
    assert board.board_of(s.view(0)).my_mines[5] == "x......."  # seat 0 sees its own


def test_legal_moves_from_a_view_match_the_engine():
    """Bots: legal_moves(view) lists what the engine accepts for the seat to move (resign aside)."""
    s = _played()
    assert s.to_move is not None
    view = s.view(s.to_move)
    moves = {(r.type.value, r.cell) for r in bots.legal_moves(view)}
    engine = {(a.type.value, a.cell) for a in s.legal_actions()}
    # The view cannot know the opponent's mines, so explores may include them; everything else agrees.
    assert {x for x in moves if x[0] != "explore"} == {x for x in engine if x[0] != "explore"}
    assert {x for x in engine if x[0] == "explore"} <= moves


def test_error_code_list_is_unique():
    """Errors: every code is a distinct short string."""
    codes = [c.value for c in ErrorCode]
    assert len(codes) == len(set(codes)) and all(c.isidentifier() for c in codes)
