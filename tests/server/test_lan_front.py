"""LAN discovery names a cluster's front address (issue 21, PROTOCOL.md §12 ``front``).

A node started with ``--front`` answers discovery with the front it sits behind; a client lists
the nodes of one cluster that answered as ONE server, dialled at the front, with the waiting rooms
of every node that answered. Anyone on the LAN may answer and name any host, so only a well-formed
single address is taken (docs/SECURITY.md "Transport", a LAN answer naming another host)."""

from __future__ import annotations

import json

import pytest
import pytest_twisted

from mineduel.server.config import Config
from mineduel.server.discovery import (
    AMPLIFICATION,
    MAX_LISTED,
    MAX_REPLY,
    DiscoveryServer,
    FoundServer,
    ListedRoom,
    _Collector,
    discover,
    front_address,
    merge,
    request_datagram,
)
from mineduel.server.service import start_server

PIN = "ab" * 32


class _Sent:
    """A transport that keeps what was written."""

    def __init__(self) -> None:
        self.sent: list[tuple[bytes, tuple[str, int]]] = []

    def write(self, data: bytes, addr: tuple[str, int]) -> None:
        self.sent.append((data, addr))


def _answer(describe, request: bytes) -> dict:
    server = DiscoveryServer(describe)
    server.transport = _Sent()  # type: ignore[assignment]
    server.datagramReceived(request, ("10.0.0.9", 5000))
    ((data, addr),) = server.transport.sent
    assert addr == ("10.0.0.9", 5000)
    return json.loads(data)


def _heard(answer: dict, sender: str = "10.0.0.7") -> FoundServer | None:
    collector = _Collector()
    collector.datagramReceived(json.dumps({"type": "server", "protocol": 1, **answer}).encode(), (sender, 47651))
    return next(iter(collector.found.values()), None)


def _node(front: dict | None, rooms: list[dict] | None = None, instance: str = "a" * 16) -> dict:
    out = {"name": "Club", "version": "0.2.0", "port": 47650, "open_rooms": 1, "tls": False, "id": instance,
           "rooms": rooms or []}
    if front is not None:
        out["front"] = front
    return out


# ----- the node's answer -----------------------------------------------------------------------------


@pytest.mark.parametrize("pad", [True, False])
def test_an_answer_with_a_front_is_bounded_like_any_other(pad):
    """The amplification rule holds: rooms are left out to fit 3 × the request (1400 bytes at most);
    the front, like the rest, is always sent."""
    rooms = [{"room": f"ABC2{a}{b}", "host": "W" * 32} for a in "345678" for b in "23"]
    front = {"host": "play." + "x" * 240 + ".org", "port": 47650, "tls": True, "pin": PIN}
    request = request_datagram(pad=pad)
    answer = _answer(lambda: {**_node(front, rooms), "tls": True, "pin": PIN}, request)
    assert answer["front"] == front
    size = len(json.dumps(answer, separators=(",", ":"), ensure_ascii=False).encode())
    assert size <= MAX_REPLY
    if answer["rooms"]:
        assert size <= AMPLIFICATION * len(request)
    assert (len(answer["rooms"]) > 0) is pad and len(answer["rooms"]) <= MAX_LISTED


@pytest_twisted.ensureDeferred
async def test_a_node_with_front_names_it_and_one_without_does_not(tmp_path):
    from twisted.internet import reactor

    plain = start_server(reactor, Config(host="127.0.0.1", port=0, udp_port=0, db=str(tmp_path / "a.db"), name="One"))
    node = start_server(reactor, Config(host="127.0.0.1", port=0, udp_port=0, db=str(tmp_path / "b.db"), name="Club",
                                        front=("play.example.org", 47650)))
    try:
        (alone,) = await discover(reactor, plain.udp_port, 0.3, ("127.0.0.1",))
        assert (alone.host, alone.port, alone.via) == ("127.0.0.1", plain.port, None)
        (club,) = await discover(reactor, node.udp_port, 0.3, ("127.0.0.1",))
        assert (club.host, club.port, club.tls, club.pin, club.via) == ("play.example.org", 47650, False, None, "127.0.0.1")
    finally:
        await plain.stop()
        await node.stop()


# ----- the client: one server per front --------------------------------------------------------------


def test_a_front_answer_is_dialled_at_the_front_with_its_tls_facts():
    found = _heard(_node({"host": "play.example.org", "port": 443, "tls": True, "pin": PIN.upper()}))
    assert found is not None
    assert (found.host, found.port, found.tls, found.pin, found.via) == ("play.example.org", 443, True, PIN, "10.0.0.7")
    older = _heard(_node(None))  # a server that names no front: dialled where it answered from, as before
    assert older is not None and (older.host, older.port, older.via) == ("10.0.0.7", 47650, None)


def test_three_nodes_of_one_cluster_are_one_server_with_every_nodes_rooms():
    front = {"host": "10.0.0.100", "port": 47650, "tls": False}
    answers = [
        _heard(_node(front, [{"room": "ABC234", "host": "Ann"}], "1" * 16), "10.0.0.1"),
        _heard(_node(front, [{"room": "XYZ789", "host": "Bob"}, {"room": "ABC234", "host": "Ann"}], "2" * 16), "10.0.0.2"),
        _heard(_node(front, [], "3" * 16), "10.0.0.3"),
        _heard(_node(None, [{"room": "QRS234", "host": "Cy"}], "4" * 16), "10.0.0.4"),  # a server of its own
        _heard(_node({**front, "port": 47700}, [], "5" * 16), "10.0.0.5"),  # another cluster (another front)
    ]
    servers = merge([a for a in answers if a is not None])
    assert [(s.host, s.port) for s in servers] == [("10.0.0.100", 47650), ("10.0.0.100", 47700), ("10.0.0.4", 47650)]
    club = servers[0]
    assert club.rooms == (ListedRoom("ABC234", "Ann"), ListedRoom("XYZ789", "Bob")) and club.open_rooms == 3


def test_one_node_heard_twice_is_counted_once():
    front = {"host": "10.0.0.100", "port": 47650}
    one = _heard(_node(front, [{"room": "ABC234", "host": "Ann"}]), "127.0.0.1")
    again = _heard(_node(front, [{"room": "ABC234", "host": "Ann"}]), "10.0.0.1")
    (server,) = merge([one, again])
    assert server.open_rooms == 1 and server.rooms == (ListedRoom("ABC234", "Ann"),)


def test_the_rooms_of_a_big_cluster_stay_within_the_cap():
    front = {"host": "10.0.0.100", "port": 47650}
    answers = [_heard(_node(front, [{"room": f"ABC2{i}{j}", "host": ""} for j in "23456789"], f"{i}" * 16), f"10.0.0.{i}")
               for i in "2345"]
    (server,) = merge(answers)
    assert len(server.rooms) == MAX_LISTED


@pytest.mark.parametrize("host", [
    "0.0.0.0", "::", "255.255.255.255", "224.0.0.1", "239.255.255.250", "ff02::1", "::ffff:224.0.0.1",
    "10.0.0.0/8", "10.0.0.*", "10.0.0.1-20", "a b", "http://x", "10.1", "1:2", "", "x" * 254, 7,
])
def test_a_front_that_is_not_one_machines_address_drops_the_answer(host):
    assert _heard(_node({"host": host, "port": 47650})) is None


@pytest.mark.parametrize("front", [
    {"host": "10.0.0.1", "port": 0}, {"host": "10.0.0.1", "port": 65536}, {"host": "10.0.0.1", "port": True},
    {"host": "10.0.0.1", "port": "47650"}, {"host": "10.0.0.1", "port": 1, "tls": "yes"},
    {"host": "10.0.0.1", "port": 1, "tls": False, "pin": PIN}, {"host": "10.0.0.1", "port": 1, "tls": True, "pin": "ab"},
    ["10.0.0.1", 47650], "10.0.0.1:47650",
])
def test_a_malformed_front_drops_the_answer(front):
    assert _heard(_node(front)) is None


def test_only_this_machine_may_name_a_loopback_front():
    """A LAN peer must not point players at a service of their own computer."""
    assert _heard(_node({"host": "127.0.0.1", "port": 47650}), "10.0.0.7") is None
    assert _heard(_node({"host": "::1", "port": 47650}), "10.0.0.7") is None
    assert _heard(_node({"host": "::ffff:127.0.0.1", "port": 47650}), "10.0.0.7") is None
    assert _heard(_node({"host": "LocalHost.", "port": 47650}), "10.0.0.7") is None
    local = _heard(_node({"host": "127.0.0.1", "port": 47650}), "127.0.0.1")
    assert local is not None and local.host == "127.0.0.1"


def test_a_host_name_and_ipv6_are_fronts():
    assert front_address({"host": "play.example.org", "port": 1}, "10.0.0.7") == ("play.example.org", 1, False, None)
    assert front_address({"host": "fd00::5", "port": 2, "tls": True}, "10.0.0.7") == ("fd00::5", 2, True, None)
    with pytest.raises(ValueError):
        front_address({"host": "fe80::1%eth0", "port": 2}, "10.0.0.7")  # a scope is not in the grammar
