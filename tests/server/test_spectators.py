"""Spectators (PROTOCOL.md §16, issue 19): watch a room's matches without a seat, public view only.

Driven in-process on ``task.Clock`` with the recording outbox (tests/support/harness.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import pytest_twisted

from mineduel.server.config import Config
from mineduel.shared.wire import codec
from mineduel.shared.wire.messages import BadMessage, SpectateState
from tests.support.harness import Client, Harness, oracle_message, play_to_score_end


def _watch(h: Harness, code: str | None, address: str = "10.0.0.9") -> tuple[Client, list[dict[str, Any]]]:
    viewer = h.connect(address)
    return viewer, viewer.send(type="spectate", room=code, id=7)


def test_spectate_an_unknown_room_is_room_not_found() -> None:
    h = Harness()
    _, reply = _watch(h, "ZZZZZZ")
    assert reply[-1]["type"] == "error" and reply[-1]["code"] == "room_not_found"


def test_spectator_gets_public_state_and_players_see_the_count() -> None:
    h = Harness()
    a, b = h.start()
    viewer, reply = _watch(h, a.room)
    assert [r["type"] for r in reply] == ["spectate_state", "ok"]
    assert reply[-1]["id"] == 7
    state = reply[0]
    SpectateState.parse(state)  # the strict parser accepts what the server sends
    assert state["status"] == "playing" and state["spectators"] == 1
    assert {p["name"] for p in state["players"]} == {"Ann", "Bob"}
    assert "my_mines" not in state["board"] and state["reveal"] is None and state["result"] is None
    # The players see the count (an additive field of their room message).
    assert a.last("room")["spectators"] == 1 and b.last("room")["spectators"] == 1
    # A match action reaches the spectator after the players' messages.
    h.out.lines[viewer.pid].clear()
    viewer._decoded.clear()
    viewer.read = 0
    before = len(h.out.lines[a.pid])
    reply = a.send(**oracle_message(h.match(a).state))  # a is the first player
    assert reply[-1]["type"] == "ok", reply
    seen = viewer.new()
    assert [s["type"] for s in seen] == ["spectate_state"] and seen[0]["seq"] == h.match(a).seq
    assert len(h.out.lines[a.pid]) > before
    # Leaving: the count goes back to none (the field is absent when 0).
    assert viewer.send(type="leave")[-1]["type"] == "ok"
    assert "spectators" not in a.last("room")


def test_a_spectator_cannot_act_and_nothing_changes() -> None:
    h = Harness()
    a, b = h.start()
    viewer, _ = _watch(h, a.room)
    seq = h.match(a).seq
    for msg in ({"type": "explore", "cell": [0, 0]}, {"type": "end_turn"}, {"type": "resign"}, {"type": "ready"},
                {"type": "rematch"}, {"type": "join", "room": a.room, "name": "Eve"},
                {"type": "create_room", "name": "Eve"}, {"type": "resume", "room": a.room, "token": a.token},
                {"type": "spectate", "room": a.room}):
        reply = viewer.send(**msg)
        assert reply[-1]["type"] == "error" and reply[-1]["code"] == "spectator", (msg, reply)
    assert h.match(a).seq == seq and not h.match(a).over


def test_a_player_does_not_spectate() -> None:
    h = Harness()
    a, _ = h.start()
    reply = a.send(type="spectate", room=a.room)
    assert reply[-1]["code"] == "already_seated"


def test_spectating_turned_off_by_the_host() -> None:
    h = Harness()
    host = h.connect("10.0.0.1")
    created = host.send(type="create_room", name="Ann", spectators=False)
    code = created[0]["room"]
    _, reply = _watch(h, code)
    assert reply[-1]["code"] == "spectating_off"
    bad = h.connect("10.0.0.3").send(type="create_room", name="X", spectators="no")
    assert bad[-1]["code"] == "bad_request"


def test_limits_per_room_and_per_address() -> None:
    h = Harness(max_spectators_per_room=2, max_spectating_per_address=2)
    a, _ = h.start()
    _watch(h, a.room, "10.0.1.1")
    _watch(h, a.room, "10.0.1.2")
    _, reply = _watch(h, a.room, "10.0.1.3")
    assert reply[-1]["code"] == "too_many_spectators"
    c, _ = h.start()
    d, _ = h.start()
    e, _ = h.start()
    assert _watch(h, c.room, "10.0.2.1")[1][-1]["type"] == "ok"
    assert _watch(h, d.room, "10.0.2.1")[1][-1]["type"] == "ok"
    assert _watch(h, e.room, "10.0.2.1")[1][-1]["code"] == "too_many_spectators"
    # A disconnect frees the place.
    first, _ = _watch(h, e.room, "10.0.1.1")
    assert first.last("spectate_state")["spectators"] == 1


def test_disconnect_frees_the_room_limit() -> None:
    h = Harness(max_spectators_per_room=1)
    a, _ = h.start()
    viewer, _ = _watch(h, a.room)
    viewer.drop()
    assert "spectators" not in a.last("room")
    assert _watch(h, a.room, "10.0.3.3")[1][-1]["type"] == "ok"


def test_reveal_after_the_end_and_the_rematch_is_watched() -> None:
    h = Harness()
    a, b = h.start()
    viewer, _ = _watch(h, a.room)
    play_to_score_end(h, a, b)
    end = viewer.last("spectate_state")
    assert end["status"] == "finished" and end["result"]["reason"] == "score"
    assert end["reveal"] is not None and any("m" in row or "x" in row for row in end["reveal"]["mines"])
    SpectateState.parse(end)
    first_match = end["match_id"]
    a.send(type="rematch")
    b.send(type="rematch")
    nxt = viewer.last("spectate_state")
    assert nxt["status"] == "playing" and nxt["match_id"] != first_match and nxt["number"] == 2
    assert nxt["reveal"] is None and nxt["result"] is None


def test_room_deleted_closes_for_spectators() -> None:
    h = Harness()
    host = h.connect("10.0.0.1")
    code = host.send(type="create_room", name="Ann")[0]["room"]
    viewer, reply = _watch(h, code)
    assert reply[0]["status"] == "waiting" and reply[0]["board"] is None
    host.send(type="leave")
    assert viewer.last("room_closed")["reason"] == "deleted"
    assert viewer.send(type="leave")[-1]["code"] == "not_seated"


def test_strict_parser_refuses_a_mine_layer_and_an_early_reveal() -> None:
    h = Harness()
    a, _ = h.start()
    _, reply = _watch(h, a.room)
    state = dict(reply[0])
    board = dict(state["board"], my_mines=["........"] * 8)
    early = {"outcome": "void", "winner": None, "reason": "void", "scores": None}
    with pytest.raises(BadMessage, match="mine layer"):
        codec.parse_server({**state, "board": board})
    with pytest.raises(BadMessage, match="after the end"):
        codec.parse_server({**state, "result": early})
    # What the server sends reads back into the same bytes (one codec, both ways).
    assert codec.encode_message(codec.parse_server(state)) == codec.encode(state)


def test_a_slow_spectator_holds_one_view_and_is_cut_alone() -> None:
    """net.py: ``spectate_state`` is a snapshot (a newer one replaces one a paused spectator has not
    taken yet), encoded once for every spectator; a spectator that never reads is cut at
    ``send_stall`` while the player's connection goes on untouched."""
    from twisted.internet.task import Clock
    from twisted.internet.testing import StringTransport

    from mineduel.server import net

    clock = Clock()
    factory = net.ServerFactory(clock=clock)

    class _Core:
        config = Config(send_stall=15.0)

        def connection_made(self, *args: Any, **tags: Any) -> None: ...
        def line_received(self, pid: int, line: bytes) -> None: ...
        def line_too_long(self, pid: int) -> None: ...
        def connection_lost(self, pid: int) -> None: ...

    factory.core = _Core()  # type: ignore[assignment]  # the stand-in has what the adapter uses
    pair = []
    for _ in range(2):
        proto = factory.buildProtocol(None)
        transport = StringTransport()
        proto.makeConnection(transport)
        pair.append((proto, transport))
    (player, player_t), (viewer, viewer_t) = pair
    h = Harness()
    a, _ = h.start()
    _, reply = _watch(h, a.room)
    state = codec.parse_server(reply[0])
    assert isinstance(state, SpectateState)
    viewer.pauseProducing()  # its send buffer is full
    encoded: list[object] = []
    real = net.spectate_line

    def counting(message: Any) -> bytes:
        encoded.append(message)
        return real(message)

    net.spectate_line = counting  # type: ignore[assignment]
    try:
        views = [dataclasses.replace(state, seq=n) for n in range(3)]
        for view in views:
            factory.send_all([(player.pid, view), (viewer.pid, view)])  # the same object for both
    finally:
        net.spectate_line = real  # type: ignore[assignment]
    assert len(encoded) == 3  # once per view, not once per connection
    assert player_t.value().count(b"spectate_state") == 3
    assert viewer_t.value() == b""  # held: only the newest waits
    viewer.resumeProducing()
    assert viewer_t.value().count(b"spectate_state") == 1 and b'"seq":2' in viewer_t.value()
    viewer.pauseProducing()
    clock.advance(15.0)
    assert viewer.cut and not player.cut and not player_t.disconnecting


def test_spectating_off_survives_a_restart_and_nobody_watches_after_it() -> None:
    """A room's ``spectators:false`` is stored; the spectators themselves are not (§16)."""
    h = Harness()
    host = h.connect("10.0.0.1")
    closed = host.send(type="create_room", name="Ann", spectators=False)[0]["room"]
    other = h.connect("10.0.0.2")
    open_ = other.send(type="create_room", name="Bob")[0]["room"]
    _watch(h, open_)
    again = Harness(storage=h.storage, clock=h.clock)
    again.rooms.restore_all()
    again.advance(0)
    assert _watch(again, closed)[1][-1]["code"] == "spectating_off"
    assert again.rooms.rooms[open_].spectators is None
    assert _watch(again, open_)[1][-1]["type"] == "ok"


def test_the_spectators_view_goes_out_after_the_players_messages() -> None:
    """Spectators never delay the players (§16): in the server's send order, the one
    ``spectate_state`` of an action comes after every player message of that action."""
    h = Harness()
    a, b = h.start()
    viewer, _ = _watch(h, a.room)
    _watch(h, a.room, "10.0.0.8")
    order: list[tuple[int, str]] = []
    record = h.out.send

    def send(peer: int, message: Any) -> None:
        order.append((peer, type(message).__name__))
        record(peer, message)

    h.out.send = send  # type: ignore[method-assign]
    a.send(**oracle_message(h.match(a).state))
    spectator_at = [i for i, (peer, kind) in enumerate(order) if kind == "SpectateState"]
    player_at = [i for i, (peer, kind) in enumerate(order) if peer in (a.pid, b.pid) and kind == "State"]
    assert len(spectator_at) == 2 and len(player_at) == 2
    assert min(spectator_at) > max(player_at)
    assert viewer.last("spectate_state")["seq"] == h.match(a).seq


def test_an_expired_room_closes_for_its_spectators() -> None:
    """O15: a waiting room goes after its TTL; its spectators get ``room_closed`` and stop watching."""
    h = Harness()
    host = h.connect("10.0.0.1")
    code = host.send(type="create_room", name="Ann")[0]["room"]
    viewer, _ = _watch(h, code)
    h.advance(h.config.room_ttl + 1.0)
    h.rooms.sweep()  # what the server's sweep loop runs every sweep_interval
    h.turn()
    assert viewer.last("room_closed") == {"type": "room_closed", "room": code, "reason": "expired"}
    assert viewer.pid not in h.rooms.lobby.peer_watch and not h.rooms.lobby.watching


def test_a_failed_commit_shows_the_spectator_nothing_undone_and_closes_it() -> None:
    """§11/§16: an action whose commit fails is undone; its held spectator view is never sent
    (it would show the undone move) and the spectator is closed like the players, to watch again."""
    h = Harness()
    a, _ = h.start()
    viewer, _ = _watch(h, a.room)
    seen = len(viewer.all("spectate_state"))
    h.storage.fail_next = True
    reply = a.send(**oracle_message(h.match(a).state))
    assert reply[-1]["code"] == "internal_error" and h.match(a).seq == 0
    assert len(viewer.all("spectate_state")) == seen
    assert viewer.last("error")["code"] == "internal_error" and viewer.closed
    assert viewer.pid not in h.rooms.lobby.peer_watch
    assert _watch(h, a.room, "10.0.0.7")[1][-1]["type"] == "ok"


# ----- live_rooms (PROTOCOL.md §16, contract C1) -------------------------------------------------------


def _live(client: Client) -> list[dict[str, Any]]:
    reply = client.send(type="live_rooms", id=3)
    assert [r["type"] for r in reply] == ["live_rooms"] and reply[0]["id"] == 3, reply
    assert codec.encode_message(codec.parse_server(reply[0])) == codec.encode(reply[0])  # the strict reader agrees
    return list(reply[0]["rooms"])


def _room(h: Harness, *, listed: bool = True, spectators: bool = True, start: bool = True,
          names: tuple[str, str] = ("Ann", "Bob")) -> tuple[Client, Client]:
    """A room created with the given flags (each room from its own addresses), started or waiting."""
    n = len(h.rooms.rooms)
    a = h.connect(f"10.1.{n // 200}.{n % 200 + 1}")
    b = h.connect(f"10.2.{n // 200}.{n % 200 + 1}")
    created = a.send(type="create_room", name=names[0], listed=listed, spectators=spectators)
    a.room = b.room = created[0]["room"]
    b.send(type="join", room=a.room, name=names[1])
    if start:
        a.send(type="ready")
        b.send(type="ready")
    return a, b


def test_live_rooms_names_only_listed_watchable_playing_rooms() -> None:
    """C1: listed AND spectators allowed AND a match in progress; an unlisted room is never named."""
    h = Harness()
    asker = h.connect("10.0.0.9")
    assert _live(asker) == []
    live, _ = _room(h)
    unlisted, _ = _room(h, listed=False)
    closed, _ = _room(h, spectators=False)
    waiting, _ = _room(h, start=False)
    finished, finished_b = _room(h)
    play_to_score_end(h, *((finished, finished_b) if finished.seat == 0 else (finished_b, finished)))
    rooms = _live(asker)
    assert [r["room"] for r in rooms] == [live.room]
    match = h.match(live)
    assert rooms[0] == {"room": live.room, "players": list(match.names), "number": 1, "turn": match.state.turn,
                        "spectators": 0}
    text = b"".join(h.out.lines[asker.pid])
    for hidden in (unlisted, closed, waiting, finished):
        assert hidden.room is not None and hidden.room.encode() not in text


def test_live_rooms_follow_the_match_and_count_spectators() -> None:
    h = Harness()
    asker = h.connect("10.0.0.9")
    a, b = _room(h, names=("Kim", "Lee"))
    _watch(h, a.room, "10.0.5.1")
    _watch(h, a.room, "10.0.5.2")
    [entry] = _live(asker)
    assert entry["spectators"] == 2 and entry["number"] == 1
    assert entry["players"] == [h.match(a).names[0], h.match(a).names[1]] and set(entry["players"]) == {"Kim", "Lee"}
    first, second = (a, b) if a.seat == 0 else (b, a)
    play_to_score_end(h, first, second)
    assert _live(asker) == []  # finished: not live
    a.send(type="rematch")
    b.send(type="rematch")
    [entry] = _live(asker)  # the rematch is live again, with its own number
    assert entry["number"] == 2 and entry["turn"] == 0
    a.send(type="resign")
    assert _live(asker) == []


def test_live_rooms_newest_first_at_most_twenty() -> None:
    h = Harness()
    codes = []
    for _ in range(23):
        a, _ = _room(h)
        codes.append(a.room)
        h.advance(1.0)
    rooms = _live(h.connect("10.0.0.9"))
    assert [r["room"] for r in rooms] == list(reversed(codes))[:20]


def test_live_rooms_answer_a_player_and_a_spectator_and_nothing_changes() -> None:
    h = Harness()
    a, b = _room(h)
    viewer, _ = _watch(h, a.room)
    seq = h.match(a).seq
    before = {c.pid: len(h.out.lines[c.pid]) for c in (a, b, viewer)}
    assert [r["room"] for r in _live(a)] == [a.room]
    assert [r["room"] for r in _live(viewer)] == [a.room]
    assert h.match(a).seq == seq
    assert len(h.out.lines[b.pid]) == before[b.pid]  # the other player is told nothing
    assert len(h.out.lines[a.pid]) == before[a.pid] + 1 and len(h.out.lines[viewer.pid]) == before[viewer.pid] + 1


def test_live_rooms_needs_hello_and_is_answered_while_storage_fails() -> None:
    h = Harness()
    a, _ = _room(h)
    stranger = h.connect("10.0.0.9", hello=False)
    assert stranger.send(type="live_rooms")[-1]["code"] == "hello_required"
    h.storage.fail_next = True
    assert a.send(type="explore", cell=[0, 0])[-1]["code"] in ("internal_error", "not_your_turn", "own_mine")
    asker = h.connect("10.0.0.8")
    reply = asker.send(type="live_rooms")
    assert reply[-1]["type"] == "live_rooms"


def test_the_strict_reader_refuses_a_malformed_live_rooms() -> None:
    entry = {"room": "NYTF23", "players": ["Ann", "Bob"], "number": 1, "turn": 12, "spectators": 2}
    good = {"type": "live_rooms", "rooms": [entry], "id": 1}  # the id last, as in every reply
    assert codec.encode_message(codec.parse_server(good)) == codec.encode(good)
    for bad in ({**good, "rooms": [entry] * 21}, {**good, "rooms": [{**entry, "room": "nytf23"}]},
                {**good, "rooms": [{**entry, "players": ["Ann"]}]}, {**good, "rooms": [{**entry, "number": 0}]},
                {**good, "rooms": [{**entry, "turn": -1}]}, {**good, "rooms": {}}):
        with pytest.raises(BadMessage):
            codec.parse_server(bad)


@pytest_twisted.ensureDeferred
async def test_line_client_spectate_and_live_rooms_over_loopback(tmp_path: Any) -> None:
    """``LineClient.spectate(code)`` / ``live_rooms()`` (bots, benchmarks) against a real server."""
    from twisted.internet import reactor
    from twisted.internet.task import Clock

    from mineduel.server.client import ServerError, connect
    from mineduel.server.service import start_server
    from mineduel.shared.wire import messages as m

    clock = Clock()
    clock.advance(1_700_000_000)
    config = Config(host="127.0.0.1", port=0, udp_port=0, db=str(tmp_path / "s.db"), rate_per_second=1e6, rate_burst=1e6)
    handle = start_server(reactor, config, clock=clock)
    clock.advance(0)
    clients = []
    try:
        for name in ("ann", "bob", "eve"):
            c = await connect(reactor, "127.0.0.1", handle.port, name)
            await c.hello()
            clients.append(c)
        a, b, viewer = clients
        created = await a.request(m.CreateRoom(name="Ann", listed=True))
        assert isinstance(created, m.RoomCreated)
        await b.request(m.Join(created.room, name="Bob"))
        assert await viewer.live_rooms() == ()
        await a.request(m.Ready())
        await b.request(m.Ready())
        [live] = await viewer.live_rooms()
        assert live.room == created.room and set(live.players) == {"Ann", "Bob"} and live.spectators == 0
        first = await viewer.spectate(created.room.lower())
        assert first.room == created.room and first.status == "playing" and first.spectators == 1
        [live] = await a.live_rooms()  # a player may ask too
        assert live.spectators == 1
        with pytest.raises(ServerError) as refused:
            await viewer.spectate(created.room)
        assert refused.value.code == "spectator"
    finally:
        for c in clients:
            c.close()
        await handle.stop()


def test_two_views_of_one_turn_are_encoded_once_each_for_every_spectator() -> None:
    """A turn's delivery goes connection by connection: a room that changed twice in the turn hands
    each spectator both views in a row. Each view is still encoded once, not once per spectator."""
    from twisted.internet.task import Clock
    from twisted.internet.testing import StringTransport

    from mineduel.server import net

    class _Core:
        config = Config()

        def connection_made(self, *args: Any, **tags: Any) -> None: ...
        def connection_lost(self, pid: int) -> None: ...

    factory = net.ServerFactory(clock=Clock())
    factory.core = _Core()  # type: ignore[assignment]  # the stand-in has what the adapter uses
    viewers = []
    for _ in range(3):
        proto = factory.buildProtocol(None)
        transport = StringTransport()
        proto.makeConnection(transport)
        viewers.append((proto, transport))
    h = Harness()
    a, _ = h.start()
    _, reply = _watch(h, a.room)
    state = codec.parse_server(reply[0])
    assert isinstance(state, SpectateState)
    first, second = dataclasses.replace(state, seq=1), dataclasses.replace(state, seq=2)
    encoded: list[object] = []
    real = net.spectate_line

    def counting(message: Any) -> bytes:
        encoded.append(message)
        return real(message)

    net.spectate_line = counting  # type: ignore[assignment]
    try:
        factory.send_all([(p.pid, first) for p, _ in viewers] + [(p.pid, second) for p, _ in viewers])
    finally:
        net.spectate_line = real  # type: ignore[assignment]
    assert encoded == [first, second]
    for _, transport in viewers:
        assert transport.value() == codec.encode_message(first) + codec.encode_message(second)


def test_one_view_is_built_per_change_whatever_the_number_of_spectators(monkeypatch: pytest.MonkeyPatch) -> None:
    """§16: an action builds one ``spectate_state`` for all of its room's spectators (the same object
    to each), and a room nobody watches builds none."""
    from mineduel.server import presenter

    h = Harness()
    a, _ = h.start()
    quiet, _ = h.start()
    viewers = [_watch(h, a.room, f"10.0.4.{i}")[0] for i in range(3)]
    built: list[SpectateState] = []
    real = presenter.spectate_state

    def counting(room: Any, now: float, fx: Any = None) -> SpectateState:
        built.append(real(room, now, fx))
        return built[-1]

    monkeypatch.setattr(presenter, "spectate_state", counting)
    sent: list[Any] = []
    record = h.out.send

    def send(peer: int, message: Any) -> None:
        sent.append(message)
        record(peer, message)

    monkeypatch.setattr(h.out, "send", send)
    assert a.send(**oracle_message(h.match(a).state))[-1]["type"] == "ok"
    assert len(built) == 1
    views = [m for m in sent if isinstance(m, SpectateState)]
    assert len(views) == len(viewers) and all(v is built[0] for v in views)  # the same object: encoded once (net.line)
    assert quiet.send(**oracle_message(h.match(quiet).state))[-1]["type"] == "ok"
    assert len(built) == 1  # nobody watches that room


def test_a_spliced_view_is_the_plain_encoding_whatever_changes_in_its_head() -> None:
    """net.spectate_line: the encoded head (type to number) is kept per players list and its other
    fields; a view whose head fields differ from the kept ones (a new spectator count, status,
    match, number, room) gets a new head, and every line equals ``codec.encode_message``."""
    import random

    from mineduel.server import net
    from mineduel.shared.wire.messages import Deadline, SpectatePlayer

    h = Harness()
    a, _ = h.start()
    _, reply = _watch(h, a.room)
    base = codec.parse_server(reply[0])
    assert isinstance(base, SpectateState) and base.board is not None
    rng = random.Random(5)
    lists = [[SpectatePlayer("Ann", True, None), SpectatePlayer("Bob", True, None)],
             [SpectatePlayer("Ann", False, Deadline(1_700_000_100.5, 59.25)), SpectatePlayer("Bob 🙂", True, None)]]
    for _ in range(300):
        view = dataclasses.replace(
            base, players=rng.choice(lists), spectators=rng.randrange(3), status=rng.choice(["playing", "finished"]),
            match_id=rng.choice([base.match_id, "00000000000000ff"]), number=rng.randrange(1, 3),
            room=rng.choice([base.room, "ABCDEF"]), seq=rng.randrange(50), turn=rng.randrange(20),
            to_move=rng.choice([0, 1, None]), deadline=rng.choice([None, Deadline(1_700_000_010.125, rng.random() * 20)]),
            server_time=1_700_000_000 + rng.random() * 100,
        )
        assert net.spectate_line(view) == codec.encode_message(view), view
    assert any(kept[0] is lists[0] for kept in net._spectate_heads.values())


def test_a_room_keeps_one_players_list_while_both_are_connected() -> None:
    """presenter._spectate_players: the views of a watched room share one players list (so its
    encoded head is reused) until a player drops; the away player's grace is shown at once."""
    h = Harness()
    a, b = h.start()
    viewer, _ = _watch(h, a.room)
    room = h.rooms.rooms[a.room]
    from mineduel.server import presenter

    first = presenter.spectate_state(room, h.core.rooms.now())
    assert a.send(**oracle_message(h.match(a).state))[-1]["type"] == "ok"
    second = presenter.spectate_state(room, h.core.rooms.now())
    assert second.players is first.players and second.seq == first.seq + 1
    b.drop()
    h.turn()
    away = viewer.last("spectate_state")["players"]
    assert [p["connected"] for p in away].count(False) == 1 and any(p["grace"] is not None for p in away)
    assert presenter.spectate_state(room, h.core.rooms.now()).players is not first.players


def test_the_view_of_an_action_shows_the_players_deadline_and_server_time() -> None:
    """§16: the spectators' view built for the Effects of an action (presenter._timing0) shows the
    deadline and server time of the players' ``state`` of that action, even when the clock moved
    on before it was built; any other change (other Effects, or none) is timed when built."""
    from mineduel.server import presenter
    from mineduel.server.effects import Effects

    h = Harness()
    a, _ = h.start()
    _watch(h, a.room)
    assert a.send(**oracle_message(h.match(a).state))[-1]["type"] == "ok"  # one action in the record
    room = h.rooms.rooms[a.room]
    match = room.match
    assert match is not None
    env = h.rooms.env(room)
    fx = Effects()
    presenter.match_update(room, 1, env, fx, None)
    state = next(msg for _, msg in fx.out if msg is not None and msg.TYPE.value == "state")
    later = env.now + 0.4567
    view = presenter.spectate_state(room, later, fx)
    assert (view.server_time, view.deadline) == (state.server_time, state.deadline)  # type: ignore[union-attr]
    other = presenter.spectate_state(room, later, Effects())
    assert other.server_time == round(later, 3) != state.server_time  # type: ignore[union-attr]
    assert other.deadline is not None and other.deadline.left == round(match.deadline - later, 3)  # type: ignore[operator]
    assert presenter.spectate_state(room, later).server_time == round(later, 3)
