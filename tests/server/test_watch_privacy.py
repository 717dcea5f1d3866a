"""The player's choice about being watched, everywhere (issue 19, PROTOCOL.md §16/§17).

- A quick match carries each player's choice (``quick_match`` ``spectators``): the matched room is
  watchable only if both let others watch.
- ``set_spectators``: the room's creator changes its choice in the waiting room or between
  matches; off closes the watching connections (``room_closed`` ``spectating_off``), the players see
  the count go. Refused for the joiner and in a quick-match room (``not_host``).
- ``peek`` says whether a room takes spectators (``room_info`` ``watchable``).

Driven in-process on ``task.Clock`` with the recording outbox (tests/support/harness.py).
"""

from __future__ import annotations

from typing import Any

import pytest
import pytest_twisted
from support.players import identify

from mineduel.shared.wire import codec
from mineduel.shared.wire import messages as m
from tests.support.harness import Client, Harness, play_to_score_end


def _watch(h: Harness, code: str | None, address: str = "10.0.0.9") -> tuple[Client, list[dict[str, Any]]]:
    viewer = h.connect(address)
    return viewer, viewer.send(type="spectate", room=code, id=7)


def _matched(h: Harness, a_watch: bool | None, b_watch: bool | None) -> tuple[Client, Client, str]:
    """Two identified players queued (each with its ``spectators`` choice, ``None``: field left out) and paired."""
    clients = []
    for n, (name, watch) in enumerate((("Ann", a_watch), ("Bob", b_watch)), start=1):
        c = h.connect(f"10.0.0.{n}")
        identify(c, n, name)
        extra = {} if watch is None else {"spectators": watch}
        assert [r["type"] for r in c.send(type="quick_match", **extra)] == ["queue", "ok"]
        clients.append(c)
    h.advance(0)
    h.turn()
    a, b = clients
    code = a.last("matched")["room"]
    a.room = b.room = code
    return a, b, code


@pytest.mark.parametrize(("a_watch", "b_watch", "watchable"), [
    (None, None, True), (True, True, True), (False, True, False), (True, False, False), (False, False, False),
])
def test_a_quick_match_room_is_watchable_only_if_both_players_allow_it(
    a_watch: bool | None, b_watch: bool | None, watchable: bool,
) -> None:
    """§17: each ``quick_match`` carries its player's choice; the room takes the stricter one and
    says so in both players' ``room`` (``watchable`` false), and ``spectate`` is refused."""
    h = Harness()
    a, b, code = _matched(h, a_watch, b_watch)
    assert h.rooms.rooms[code].watchable is watchable
    for c in (a, b):
        assert c.last("room").get("watchable", True) is watchable
    _, reply = _watch(h, code)
    assert reply[-1]["type"] == ("ok" if watchable else "error")
    if not watchable:
        assert reply[-1]["code"] == "spectating_off"


def test_the_choice_goes_back_into_the_queue_with_the_confirmer() -> None:
    """A player back in the queue after its opponent did not confirm keeps its choice (its ``Waiting``)."""
    h = Harness()
    a, _, _ = _matched(h, False, True)
    a.send(type="ready")
    h.advance(10.1)
    h.turn()
    assert a.last("queue")["status"] == "waiting"
    c = h.connect("10.0.0.3")
    identify(c, 3, "Cy")
    c.send(type="quick_match")
    h.advance(0)
    h.turn()
    code = c.last("matched")["room"]
    assert a.last("matched")["room"] == code and h.rooms.rooms[code].watchable is False


def test_quick_match_spectators_must_be_a_boolean() -> None:
    h = Harness()
    c = h.connect()
    identify(c, 1, "Ann")
    reply = c.send(type="quick_match", spectators="no")
    assert reply[-1]["code"] == "bad_request" and "spectators" in reply[-1]["message"]
    assert not h.core.quick.queued(c.pid)


def test_the_wire_of_quick_match_and_set_spectators() -> None:
    """The default ``quick_match`` is the same bytes as before; the codec reads what it writes."""
    assert m.QuickMatch(3).wire() == {"type": "quick_match", "id": 3}
    assert m.QuickMatch(3, False).wire() == {"type": "quick_match", "spectators": False, "id": 3}
    for msg in (m.QuickMatch(None, False), m.SetSpectators(False, 4), m.SetSpectators(True)):
        wire = msg.wire()
        assert codec.parse_request(codec.request_kind(wire), wire) == msg


def test_the_host_turns_watching_off_and_the_spectators_are_told_and_leave() -> None:
    """§16: ``room`` to both seats (``watchable`` false, no count) then ``ok``; each spectator gets
    ``room_closed`` ``spectating_off`` and watches nothing more; a new ``spectate`` is refused."""
    h = Harness()
    a, b = h.pair()
    v1, _ = _watch(h, a.room, "10.0.0.8")
    v2, _ = _watch(h, a.room, "10.0.0.9")
    assert a.last("room")["spectators"] == 2
    reply = a.send(type="set_spectators", allowed=False, id=5)
    assert [r["type"] for r in reply] == ["room", "ok"] and reply[-1] == {"type": "ok", "request": "set_spectators", "id": 5}
    for c in (a, b):
        room = c.last("room")
        assert room["watchable"] is False and "spectators" not in room
    for v in (v1, v2):
        assert v.new()[-1] == {"type": "room_closed", "room": a.room, "reason": "spectating_off"}
        assert v.pid not in h.rooms.lobby.peer_watch
    assert h.rooms.rooms[a.room].spectators is None and h.rooms.lobby.watching == {}
    assert h.storage.rooms[a.room]  # stored with the room (a restart keeps it)
    assert _watch(h, a.room)[1][-1]["code"] == "spectating_off"
    # v1 holds nothing now: it may watch another room.
    other = h.connect("10.0.0.5").send(type="create_room", name="Cy")[0]["room"]
    assert v1.send(type="spectate", room=other)[-1]["type"] == "ok"


def test_the_host_turns_watching_back_on_and_it_survives_a_restart() -> None:
    h = Harness()
    host = h.connect("10.0.0.1")
    code = host.send(type="create_room", name="Ann", spectators=False)[0]["room"]
    host.room = code
    reply = host.send(type="set_spectators", allowed=True)
    assert [r["type"] for r in reply] == ["room", "ok"] and "watchable" not in reply[0]
    again = Harness(storage=h.storage, clock=h.clock)
    again.rooms.restore_all()
    again.advance(0)
    assert _watch(again, code)[1][-1]["type"] == "ok"


def test_asking_for_what_already_holds_is_ok_and_sends_nothing_else() -> None:
    h = Harness()
    a, b = h.pair()
    assert [r["type"] for r in a.send(type="set_spectators", allowed=True)] == ["ok"]
    assert b.new() == []


def test_who_may_set_spectators_and_when() -> None:
    """The joiner: ``not_host``; a spectator: ``spectator``; nobody seated: ``not_seated``; a bad
    ``allowed``: ``bad_request``; on during a match: ``match_running`` (off is taken at once, and
    between matches on again). Every refusal changes nothing."""
    h = Harness()
    a, b = h.pair()
    viewer, _ = _watch(h, a.room)
    assert b.send(type="set_spectators", allowed=False)[-1]["code"] == "not_host"
    assert viewer.send(type="set_spectators", allowed=False)[-1]["code"] == "spectator"
    assert h.connect("10.0.0.4").send(type="set_spectators", allowed=False)[-1]["code"] == "not_seated"
    for bad in ({}, {"allowed": "no"}, {"allowed": 0}):
        assert a.send(type="set_spectators", **bad)[-1]["code"] == "bad_request"
    assert h.rooms.rooms[a.room].watchable is True and h.rooms.rooms[a.room].spectators
    a.send(type="ready")
    b.send(type="ready")
    assert a.send(type="set_spectators", allowed=False)[-1]["type"] == "ok"  # privacy first: off at any time
    assert viewer.last("room_closed")["reason"] == "spectating_off"
    reply = a.send(type="set_spectators", allowed=True)
    assert reply[-1]["code"] == "match_running" and h.rooms.rooms[a.room].watchable is False
    first, second = (a, b) if a.seat == 0 else (b, a)
    play_to_score_end(h, first, second)
    assert a.send(type="set_spectators", allowed=True)[-1]["type"] == "ok"  # between matches
    assert _watch(h, a.room, "10.0.0.6")[1][-1]["type"] == "ok"


def test_a_quick_match_room_cannot_change_its_choice() -> None:
    h = Harness()
    a, b, code = _matched(h, True, False)
    for c in (a, b):
        assert c.send(type="set_spectators", allowed=True)[-1]["code"] == "not_host"
    assert h.rooms.rooms[code].watchable is False


def test_set_spectators_is_refused_while_storage_fails() -> None:
    h = Harness()
    a, _ = h.pair()
    h.core.commits.healthy = False
    try:
        reply = a.send(type="set_spectators", allowed=False)
    finally:
        h.core.commits.healthy = True
    assert reply[-1]["code"] == "storage_unavailable" and h.rooms.rooms[a.room].watchable is True


def test_peek_says_whether_a_room_takes_spectators() -> None:
    """``room_info`` carries ``watchable`` false for a room that refuses spectators; a watchable
    room's reply is the same bytes as before (the field absent)."""
    h = Harness()
    open_ = h.connect("10.0.0.1").send(type="create_room", name="Ann")[0]["room"]
    closed = h.connect("10.0.0.2").send(type="create_room", name="Bob", spectators=False)[0]["room"]
    asker = h.connect("10.0.0.3")
    info = asker.send(type="peek", room=open_)[-1]
    assert info["type"] == "room_info" and "watchable" not in info
    assert m.RoomInfo.parse(info).watchable is True
    info = asker.send(type="peek", room=closed)[-1]
    assert info["watchable"] is False and m.RoomInfo.parse(info).watchable is False
    with pytest.raises(m.BadMessage):
        m.RoomInfo.parse({**info, "watchable": "no"})


# ----- LAN discovery: a listed room that refuses spectators says so (PROTOCOL.md §12) -----------------


def test_a_lan_entry_says_watchable_false_only_for_a_room_that_refuses_spectators() -> None:
    from mineduel.server.service import _listed

    h = Harness()
    shut = h.connect("10.0.0.1").send(type="create_room", name="Ann", listed=True, spectators=False)[0]["room"]
    open_ = h.connect("10.0.0.2").send(type="create_room", name="Bob", listed=True)[0]["room"]
    rooms = h.rooms.rooms
    assert _listed(rooms, shut, "Ann") == {"room": shut, "host": "Ann", "watchable": False}
    assert _listed(rooms, open_, "Bob") == {"room": open_, "host": "Bob"}  # the same bytes as before


def test_the_client_reads_watchable_and_an_older_answer_is_watchable() -> None:
    from mineduel.server.discovery import ListedRoom, listed_rooms

    found = listed_rooms([{"room": "ABC234", "host": "Ann", "watchable": False}, {"room": "ABC235", "host": "Bob"},
                          {"room": "ABC236", "host": "Cy", "watchable": "no"}])
    assert found == (ListedRoom("ABC234", "Ann", False), ListedRoom("ABC235", "Bob"), ListedRoom("ABC236", "Cy"))


def test_eight_unwatchable_rooms_still_fit_the_amplification_bound() -> None:
    """19 more bytes per entry: the answer stays within 3 × the request (rooms dropped from the oldest)."""
    import json

    from mineduel.server.discovery import AMPLIFICATION, MAX_REPLY, REQUEST_SIZE, reply_datagram

    rooms = [{"room": "ABC23" + c, "host": "名前" * 16, "watchable": False} for c in "23456789"]
    answer = {"type": "server", "protocol": 1, "name": f"MINE DUEL ({'h' * 40})", "version": "0.2.0", "port": 47650,
              "open_rooms": 8, "tls": False, "id": "0123456789abcdef", "rooms": rooms}
    data = reply_datagram(answer, REQUEST_SIZE)
    assert len(data) <= min(MAX_REPLY, AMPLIFICATION * REQUEST_SIZE)
    kept = json.loads(data)["rooms"]
    assert kept and kept == rooms[: len(kept)]


@pytest_twisted.ensureDeferred
async def test_discovery_over_udp_says_which_listed_room_refuses_spectators(tmp_path: Any) -> None:
    from twisted.internet import reactor

    from mineduel.server.client import connect
    from mineduel.server.config import Config
    from mineduel.server.discovery import ListedRoom, discover
    from mineduel.server.service import start_server

    handle = start_server(reactor, Config(host="127.0.0.1", port=0, udp_port=0, db=str(tmp_path / "d.db"), name="Laptop"))
    try:
        host = await connect(reactor, "127.0.0.1", handle.port, "t/1")
        await host.hello()
        shut = await host.request("create_room", name="Ann", listed=True, spectators=False)
        (server,) = await discover(reactor, handle.udp_port, 0.3, ("127.0.0.1", "127.0.0.1"))
        assert server.rooms == (ListedRoom(shut["room"], "Ann", False),)
        await host.request("set_spectators", allowed=True)
        (server,) = await discover(reactor, handle.udp_port, 0.3, ("127.0.0.1", "127.0.0.1"))
        assert server.rooms == (ListedRoom(shut["room"], "Ann", True),)
        await host.close()
    finally:
        await handle.stop()
