"""PROTOCOL.md §12 (issue 16 item 5): LAN discovery names the rooms waiting for a player, one
entry per server. A room is listed only if its creator asked (``create_room`` ``listed``), only
while its one player is connected and no match exists; the answer stays small and bounded."""

from __future__ import annotations

import json

import pytest
import pytest_twisted
from twisted.internet import defer

from mineduel.server.config import Config
from mineduel.server.discovery import (
    AMPLIFICATION,
    MAX_LISTED,
    MAX_REPLY,
    REQUEST_SIZE,
    DiscoveryServer,
    FoundServer,
    ListedRoom,
    discover,
    is_discover_request,
    listed_rooms,
    merge,
    reply_datagram,
    request_datagram,
)
from mineduel.server.inprocess import InProcessServer
from mineduel.server.service import start_server
from mineduel.shared.wire.messages import CreateRoom


def _server() -> InProcessServer:
    return InProcessServer(max_open_rooms_per_address=100, max_rooms_per_address=100)


def _create(server: InProcessServer, name: str, **extra: object):
    peer = server.peer()
    reply = peer.send(type="create_room", name=name, **extra)
    return peer, reply[0]["room"]


def _listed(server: InProcessServer) -> list[tuple[str, str]]:
    return server.core.rooms.lobby.listed_rooms(MAX_LISTED)


def test_a_room_is_listed_only_if_its_creator_asked():
    server = _server()
    _, shown = _create(server, "Ann", listed=True)
    _create(server, "Bob")  # a dedicated server's client: not listed by default
    _create(server, "Cy", listed=False)
    assert _listed(server) == [(shown, "Ann")]


def test_listed_must_be_a_boolean():
    server = _server()
    peer = server.peer()
    (error,) = peer.send(type="create_room", listed="yes")
    assert error["type"] == "error" and error["code"] == "bad_request"
    assert server.core.rooms.rooms == {}


def test_the_wire_form_says_listed_only_when_true():
    assert "listed" not in CreateRoom(name="a").wire()
    assert CreateRoom(name="a", listed=True).wire()["listed"] is True


def test_a_full_room_is_never_listed_and_a_room_in_a_match_neither():
    server = _server()
    host, code = _create(server, "Ann", listed=True)
    guest = server.peer()
    guest.send(type="join", room=code, name="Bob")
    assert _listed(server) == []  # full
    host.send(type="ready")
    guest.send(type="ready")
    assert server.room(code).match is not None
    guest.send(type="resign")
    guest.send(type="leave")
    assert len(server.room(code).seats) == 1
    assert _listed(server) == []  # a match exists (over): the room is not waiting for a new player's first match


def test_a_guest_who_left_before_any_match_lists_the_room_again():
    server = _server()
    _, code = _create(server, "Ann", listed=True)
    guest = server.peer()
    guest.send(type="join", room=code)
    guest.send(type="leave")
    assert _listed(server) == [(code, "Ann")]


def test_a_room_whose_player_is_not_connected_is_not_listed():
    server = _server()
    host, code = _create(server, "Ann", listed=True)
    host.drop()
    assert code in server.core.rooms.rooms and _listed(server) == []


def test_at_most_eight_newest_first():
    server = _server()
    codes = []
    for i in range(10):
        codes.append(_create(server, f"P{i}", listed=True)[1])
        server.advance(1)
    assert _listed(server) == [(c, f"P{i}") for i, c in reversed(list(enumerate(codes)))][:MAX_LISTED]


def test_listed_survives_a_restart_of_the_room():
    server = _server()
    _, code = _create(server, "Ann", listed=True)
    blob = server.room(code).to_blob()
    assert blob["listed"] is True


# ----- the datagram ----------------------------------------------------------------------------------


def _answer(rooms: list[dict[str, str]]) -> dict[str, object]:
    return {"type": "server", "protocol": 1, "name": f"MINE DUEL ({'h' * 40})", "version": "0.2.0", "port": 47650,
            "open_rooms": len(rooms), "tls": False, "id": "0123456789abcdef", "rooms": rooms}


def test_the_padded_request_is_still_the_documented_request():
    data = request_datagram()
    assert len(data) == REQUEST_SIZE
    assert is_discover_request(json.loads(data))
    assert json.loads(request_datagram(pad=False)) == {"type": "discover", "protocol": 1}


def test_an_unpadded_request_gets_no_rooms_and_a_padded_one_gets_them():
    rooms = [{"room": "ABC234", "host": "Ann"}, {"room": "XYZ789", "host": "Bob"}]
    small = json.loads(reply_datagram(_answer(rooms), len(request_datagram(pad=False))))
    assert small["rooms"] == [] and small["id"] == "0123456789abcdef"
    big = json.loads(reply_datagram(_answer(rooms), REQUEST_SIZE))
    assert big["rooms"] == rooms


def test_eight_rooms_with_the_longest_korean_names_fit():
    rooms = [{"room": "ABC23" + c, "host": "가" * 32} for c in "23456789"]
    assert json.loads(reply_datagram(_answer(rooms), REQUEST_SIZE))["rooms"] == rooms


def test_the_answer_is_bounded_even_with_eight_names_of_four_byte_characters():
    rooms = [{"room": "ABC23" + c, "host": "𝔸" * 32} for c in "23456789"]
    data = reply_datagram(_answer(rooms), REQUEST_SIZE)
    assert len(data) <= min(MAX_REPLY, AMPLIFICATION * REQUEST_SIZE)
    kept = json.loads(data)["rooms"]
    assert 0 < len(kept) < 8 and kept == rooms[: len(kept)]  # the newest kept, the oldest dropped
    ten = [{"room": "ABC23" + c, "host": "A"} for c in "2345678923"]
    assert len(json.loads(reply_datagram(_answer(ten), REQUEST_SIZE))["rooms"]) == MAX_LISTED


class _Transport:
    def __init__(self) -> None:
        self.sent: list[tuple[bytes, tuple[str, int]]] = []

    def write(self, data: bytes, addr: tuple[str, int]) -> None:
        self.sent.append((data, addr))


def test_the_discovery_server_answers_within_three_times_the_request():
    rooms = [{"room": "ABC23" + c, "host": "名前" * 16} for c in "23456789"]
    proto = DiscoveryServer(lambda: {k: v for k, v in _answer(rooms).items() if k not in ("type", "protocol")})
    proto.transport = _Transport()  # type: ignore[assignment]
    for request in (request_datagram(pad=False), request_datagram()):
        proto.datagramReceived(request, ("10.0.0.9", 5000))
    (small, _), (big, _) = proto.transport.sent  # type: ignore[attr-defined]
    assert json.loads(small)["rooms"] == []
    assert len(big) <= AMPLIFICATION * len(request_datagram()) and json.loads(big)["rooms"]


# ----- the client half -------------------------------------------------------------------------------


def _found(host: str, instance: str | None, name: str = "MINE DUEL (laptop)", port: int = 47650) -> FoundServer:
    return FoundServer(host, port, name, "0.2.0", 1, 1, instance=instance)


def test_one_entry_per_server_by_instance_the_lan_address_kept():
    one = merge([_found("127.0.0.1", "aaaaaaaaaaaaaaaa"), _found("192.168.1.5", "aaaaaaaaaaaaaaaa"),
                 _found("192.168.1.9", "bbbbbbbbbbbbbbbb")])
    assert [(s.host, s.instance) for s in one] == [("192.168.1.5", "aaaaaaaaaaaaaaaa"), ("192.168.1.9", "bbbbbbbbbbbbbbbb")]


def test_without_an_instance_name_and_port_merge_only_with_a_loopback_answer():
    same_machine = merge([_found("192.168.1.5", None), _found("127.0.0.1", None)])
    assert [s.host for s in same_machine] == ["192.168.1.5"]
    two_machines = merge([_found("192.168.1.5", None), _found("192.168.1.6", None)])
    assert [s.host for s in two_machines] == ["192.168.1.5", "192.168.1.6"]  # same default name: still two servers
    other_port = merge([_found("192.168.1.5", None), _found("127.0.0.1", None, port=47660)])
    assert len(other_port) == 2


def test_rooms_from_an_answer_are_checked_one_by_one():
    value = [{"room": "abc234", "host": "Ann"}, {"room": "BAD", "host": "x"}, {"room": "XYZ789", "host": "a\x00b"},
             {"room": "XYZ789", "host": "n" * 33}, "junk", {"room": "QRS234"}] + [{"room": "ABC234", "host": ""}] * 10
    rooms = listed_rooms(value)
    assert rooms[0] == ListedRoom("ABC234", "Ann") and rooms[1] == ListedRoom("QRS234", "")
    assert len(rooms) == 4  # only the first eight entries are read, four of them well-formed
    assert listed_rooms({"room": "ABC234"}) == ()


# ----- over a real socket --------------------------------------------------------------------------------


def _reactor():
    from twisted.internet import reactor

    return reactor


def _sleep(seconds: float) -> defer.Deferred[None]:
    d: defer.Deferred[None] = defer.Deferred()
    _reactor().callLater(seconds, d.callback, None)
    return d


@pytest_twisted.ensureDeferred
async def test_discovery_over_udp_names_listed_rooms_and_the_instance(tmp_path):
    from mineduel.server.client import connect

    reactor = _reactor()
    handle = start_server(reactor, Config(host="127.0.0.1", port=0, udp_port=0, db=str(tmp_path / "d.db"), name="Laptop"))
    try:
        host = await connect(reactor, "127.0.0.1", handle.port, "t/1")
        await host.hello()
        created = await host.request("create_room", name="Ann", listed=True)
        other = await connect(reactor, "127.0.0.1", handle.port, "t/2")
        await other.hello()
        await other.request("create_room", name="Bob")
        found = await discover(reactor, handle.udp_port, 0.3, ("127.0.0.1", "127.0.0.1"))
        (server,) = found
        assert server.rooms == (ListedRoom(created["room"], "Ann"),)
        assert server.instance is not None and len(server.instance) == 16 and server.open_rooms == 2
        await host.close()
        await other.close()
    finally:
        await handle.stop()


@pytest_twisted.ensureDeferred
async def test_a_server_heard_over_loopback_and_the_lan_is_listed_once(tmp_path):
    """Issue 16 item 1: Find games listed this machine's server twice (127.0.0.1 and its LAN address)."""
    from mineduel.client.lan_address import lan_addresses

    v4 = [a for a in lan_addresses().addresses if ":" not in a]
    if not v4:
        pytest.skip("this machine has no IPv4 LAN address")
    reactor = _reactor()
    handle = start_server(reactor, Config(host="0.0.0.0", port=0, udp_port=0, db=str(tmp_path / "d.db"), name="Laptop"))
    try:
        found = await discover(reactor, handle.udp_port, 0.3, ("127.0.0.1", v4[0]))
        assert [(s.host, s.port) for s in found] == [(v4[0], handle.port)]
    finally:
        await handle.stop()


@pytest.mark.parametrize("value", [True, False])
def test_create_room_listed_parses(value):
    from mineduel.shared.wire.codec import parse_request
    from mineduel.shared.wire.names import ClientType

    assert parse_request(ClientType.CREATE, {"type": "create_room", "listed": value}).listed is value
    assert parse_request(ClientType.CREATE, {"type": "create_room"}).listed is False
