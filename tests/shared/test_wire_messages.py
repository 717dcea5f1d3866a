"""The typed messages of shared/wire read and write exactly the bytes of docs/PROTOCOL.md.

Every line of the captured sessions (tests/support/data, written by the server before the typed
rewrite) is read into its class and written again: the bytes must come back identical, which
pins each class's key order, its optional keys and its value types. Malformed server messages
are refused with ``BadMessage``, and each request reads back from its own wire form.
"""

from __future__ import annotations

import pytest
from support.wire_scenarios import load_golden

from mineduel.shared.wire import codec
from mineduel.shared.wire import messages as m
from mineduel.shared.wire.board import board_of, view_of
from mineduel.shared.wire.names import ClientType

LINES = sorted({line.rstrip("\n") for capture in load_golden().values() for lines in capture.values() for line in lines})


def test_the_capture_holds_every_server_message_type() -> None:
    kinds = {codec.decode(line)["type"] for line in LINES}
    # The heartbeat ``ping`` runs on its own loop, which the captured sessions never start; the
    # captured sessions have no spectator (``spectate_state``, ``live_rooms``: tests/server/test_spectators.py).
    # Nor players (§17: tests/shared/test_wire_players.py, tests/server/test_players.py).
    players = {"player", "queue", "matched", "profile", "leaderboard"}
    # Nor a cluster (§18 ``moved``: tests/shared/test_wire_moved.py, tests/server/test_cluster_node.py).
    assert kinds | {"ping", "spectate_state", "live_rooms", "moved"} | players == set(m.SERVER_MESSAGES)
    ping = '{"type":"ping","server_time":1.5}'
    assert codec.encode_message(codec.decode_server(ping)) == ping.encode() + b"\n"


@pytest.mark.parametrize("line", LINES[:: max(1, len(LINES) // 40)])
def test_each_captured_line_reads_and_writes_back_identically(line: str) -> None:
    message = codec.decode_server(line)
    assert type(message).TYPE.value == codec.decode(line)["type"]
    assert codec.encode_message(message) == line.encode("utf-8") + b"\n"


def test_every_captured_line_round_trips() -> None:
    """All of them at once (the parametrised test above names a sample)."""
    bad = [line for line in LINES if codec.encode_message(codec.decode_server(line)) != line.encode() + b"\n"]
    assert bad == []


def test_a_state_read_back_gives_the_same_board() -> None:
    """``view_of`` then ``board_of`` is the identity on every captured board."""
    for line in LINES:
        message = codec.decode_server(line)
        if isinstance(message, m.State):
            assert board_of(view_of(message)) == m.Board(*(list(rows) for rows in (
                message.board.numbers, message.board.opened_by, message.board.markers, message.board.my_mines)))


def _state_line() -> str:
    return next(line for line in LINES if '"type":"state"' in line and '"events":[{' in line)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('"seat":', '"seat":7,"x":'),
        ('"to_move":', '"to_move":"nobody","x":'),
        ('"numbers":["', '"numbers":["9'),
        ('"turn":', '"turn":1.5,"x":'),
        ('"board":{', '"board":{"numbers":1,"x":{'),
        ('"events":[', '"events":[1,'),
        ('"by":"', '"by":"x'),
    ],
)
def test_a_malformed_server_message_is_refused_not_half_read(old: str, new: str) -> None:
    line = _state_line().replace(old, new, 1)
    assert line != _state_line()
    with pytest.raises(m.BadMessage):
        codec.decode_server(line)


def test_an_unknown_server_message_type_is_its_own_refusal() -> None:
    with pytest.raises(codec.UnknownServerMessage):
        codec.decode_server('{"type":"from_the_future"}')
    with pytest.raises(m.BadMessage):
        codec.decode_server("not json")


REQUESTS: list[m.ClientMessage] = [
    m.PingRequest(3), m.PongReply(), m.Bye(), m.CreateRoom("Ann", "seed", "c1"), m.Peek("ABCDEF", 1),
    m.Join("ABCDEF", "Bob", None, "j"), m.Resume("ABCDEF", "a" * 64), m.Ready(False, "s"), m.Leave(),
    m.MatchAction(ClientType.EXPLORE, 9, "0123456789abcdef", 4, "e"), m.MatchAction(ClientType.END_TURN),
    m.Resign("0123456789abcdef"), m.Rematch("again"), m.GetRecord("0123456789abcdef", 2),
]


@pytest.mark.parametrize("request_", REQUESTS, ids=lambda r: type(r).__name__)
def test_a_request_reads_back_from_its_own_wire_form(request_: m.ClientMessage) -> None:
    obj = codec.decode(codec.encode_message(request_)[:-1])
    assert codec.parse_request(codec.request_kind(obj), obj) == request_


def test_hello_checks_the_version_before_its_fields() -> None:
    with pytest.raises(codec.ProtocolError) as caught:
        codec.hello_request({"type": "hello", "protocol": 2, "client": 5}, 1)
    assert caught.value.code == "unsupported_protocol"
    with pytest.raises(codec.ProtocolError) as caught:
        codec.hello_request({"type": "hello", "protocol": 1, "client": 5}, 1)
    assert caught.value.code == "bad_request"
    assert codec.hello_request({"type": "hello", "protocol": 1, "client": "x", "id": 4}, 1) == m.Hello(1, "x", 4)


def test_a_bots_legal_requests_are_the_engines_legal_actions() -> None:
    """bots.legal_moves from a seat's view alone lists exactly GameState.legal_actions (F4, A1–A5)."""
    import random

    from mineduel.shared.ai.randomplay import random_legal_action
    from mineduel.shared.rules.engine import GameState, Variant
    from mineduel.shared.wire import bots

    for seed in range(40):
        rng = random.Random(seed)
        state = GameState(Variant.ONLINE)
        while not state.over:
            seat = state.to_move
            assert seat is not None
            engine = [(a.type.value, a.cell) for a in state.legal_actions()]
            requests = [(r.type.value, r.cell) for r in bots.legal_moves(state.view(seat))]
            assert sorted(engine, key=str) == sorted(requests, key=str)
            assert bots.legal_moves(state.view(1 - seat)) == []
            state.apply(random_legal_action(state, rng))
