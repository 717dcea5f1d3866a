"""Issue 15, "Protocol loose ends": each point an independent client found in PROTOCOL.md, settled
in the server and the document alike, one test (or a few) per point.

The in-process ``Harness`` drives the core on ``task.Clock``; discovery goes through a real UDP
socket on loopback.
"""

from __future__ import annotations

import json

import pytest
import pytest_twisted
from support.harness import Harness
from twisted.internet import defer
from twisted.internet.protocol import DatagramProtocol

from mineduel.server.config import Config
from mineduel.server.discovery import is_discover_request
from mineduel.server.service import start_server


def _reactor():
    from twisted.internet import reactor

    return reactor


# ----- §1: integer ids ------------------------------------------------------------------------------
@pytest.mark.parametrize("rid", [0, -1, 2**53, 2**53 + 1, -(2**53) - 1, 2**63, 2**64 - 1, -(2**63)])
def test_integer_ids_of_64_bits_are_echoed_exactly(rid):
    """§1: an integer id from -2^63 to 2^64-1 is echoed exactly, by a pong and by an error."""
    h = Harness()
    c = h.connect()
    (pong,) = c.send_raw(b'{"type":"ping","id":%d}' % rid)
    assert (pong["type"], pong["id"]) == ("pong", rid)
    (err,) = c.send_raw(b'{"type":"ready","id":%d}' % rid)
    assert (err["type"], err["code"], err["id"]) == ("error", "not_seated", rid)
    assert c.send_raw(b'{"type":"leave","id":%d}' % rid)[0]["id"] == rid


@pytest.mark.parametrize(
    "raw", [b"18446744073709551616", b"-9223372036854775809", b"123456789012345678901234567890", b"1.0", b"true"],
)
def test_other_numeric_ids_are_bad_request_without_an_id(raw):
    """§1: beyond 64 bits (read as a float), a float or a boolean: bad_request, and no id to echo."""
    h = Harness()
    c = h.connect()
    (err,) = c.send_raw(b'{"type":"ping","id":' + raw + b"}")
    assert (err["type"], err["code"], err["request"]) == ("error", "bad_request", "ping")
    assert "id" not in err


# ----- §4: client_seed ------------------------------------------------------------------------------
def test_a_client_seed_with_a_space_is_accepted_and_used():
    """§4: printable ASCII except ':' includes the space; the seed reaches match_start and the signature."""
    h = Harness()
    a, b = h.pair(seeds=("ann 42", " "))
    assert a.send(type="ready", client_seed="ann  42 ")[-1]["type"] == "ok"
    b.send(type="ready")
    start = a.last("match_start")
    assert start["client_seeds"] == ["ann  42 ", " "]
    (err,) = a.send(type="rematch", client_seed="a:b")
    assert err["code"] == "bad_request"


# ----- §3/§4: client in hello -----------------------------------------------------------------------
def test_hello_without_client_is_welcomed():
    """§3/§4: ``client`` is optional (default ""); a non-string or a long one is bad_request."""
    h = Harness()
    c = h.connect(hello=False)
    (err,) = c.send(type="hello", protocol=1, client=5, id="x")
    assert (err["code"], err["id"]) == ("bad_request", "x")
    (err,) = c.send(type="hello", protocol=1, client="c" * 65)
    assert err["code"] == "bad_request"
    (welcome,) = c.send(type="hello", protocol=1, id=7)
    assert (welcome["type"], welcome["id"]) == ("welcome", 7)


# ----- §12: LAN discovery answers only the documented datagram -----------------------------------------
@pytest.mark.parametrize(
    ("msg", "answered"),
    [
        ({"type": "discover", "protocol": 1}, True),
        ({"type": "discover", "protocol": 1, "extra": [1, 2]}, True),
        ({"type": "discover", "protocol": 2}, False),
        ({"type": "discover"}, False),
        ({"type": "discover", "protocol": "1"}, False),
        ({"type": "discover", "protocol": 1.0}, False),
        ({"type": "discover", "protocol": True}, False),
        ({"type": "discover", "protocol": None}, False),
        ({"type": "Discover", "protocol": 1}, False),
        ([{"type": "discover", "protocol": 1}], False),
    ],
)
def test_the_discovery_request_is_exactly_the_documented_one(msg, answered):
    assert is_discover_request(json.loads(json.dumps(msg))) is answered


class _Asker(DatagramProtocol):
    def __init__(self) -> None:
        self.answers: list[bytes] = []

    def datagramReceived(self, data: bytes, addr: object) -> None:
        self.answers.append(data)


@pytest_twisted.ensureDeferred
async def test_discovery_over_udp_answers_protocol_1_only(tmp_path):
    """§12: over a real socket, protocol 2, none and "1" get nothing; protocol 1 gets one answer."""
    reactor = _reactor()
    handle = start_server(reactor, Config(host="127.0.0.1", port=0, udp_port=0, db=str(tmp_path / "d.db")))
    asker = _Asker()
    udp = reactor.listenUDP(0, asker, interface="127.0.0.1")
    try:
        for body in (b'{"type":"discover","protocol":2}', b'{"type":"discover"}', b'{"type":"discover","protocol":"1"}'):
            udp.write(body, ("127.0.0.1", handle.udp_port))
        await _sleep(0.2)
        assert asker.answers == []
        udp.write(b'{"type":"discover","protocol":1}', ("127.0.0.1", handle.udp_port))
        await _sleep(0.2)
        (answer,) = asker.answers
        assert json.loads(answer)["type"] == "server" and json.loads(answer)["protocol"] == 1
    finally:
        await udp.stopListening()
        await handle.stop()


def _sleep(seconds: float) -> defer.Deferred[None]:
    d: defer.Deferred[None] = defer.Deferred()
    _reactor().callLater(seconds, d.callback, None)
    return d


# ----- §5: a room message whenever the consent after a match changes --------------------------------
def _finished(h: Harness):
    first, second = h.start()
    first.send(type="resign")
    second.new()
    return first, second


def test_rematch_consent_sends_room_to_both():
    """§5: room is sent whenever anything in it changes: a rematch wish shows as room.me.rematch."""
    h = Harness()
    first, second = _finished(h)
    replies = first.send(type="rematch")
    assert [m["type"] for m in replies] == ["rematch", "room", "ok"]
    assert replies[1]["me"]["rematch"] is True and replies[1]["opponent"]["rematch"] is False
    seen = second.new()
    assert [m["type"] for m in seen] == ["rematch", "room"]
    assert seen[1]["me"]["rematch"] is False and seen[1]["opponent"]["rematch"] is True


def test_ready_after_a_match_is_rematch_and_ready_false_takes_it_back():
    """§4: after a finished match of the same two, ready is rematch; ready:false withdraws the wish (room to both)."""
    h = Harness()
    first, second = _finished(h)
    assert [m["type"] for m in first.send(type="ready")] == ["rematch", "room", "ok"]
    assert second.new()[-1]["opponent"]["rematch"] is True
    replies = first.send(type="ready", ready=False)
    assert [m["type"] for m in replies] == ["rematch", "room", "ok"]
    assert replies[0] == {"type": "rematch", "me": False, "opponent": False}
    assert second.new()[-1]["opponent"]["rematch"] is False
    second.send(type="ready")
    assert first.new()[-1]["opponent"]["rematch"] is True
    assert first.send(type="ready")[0]["type"] == "match_start"  # both again: the rematch starts


# ----- §4/§6: a resume that decides the match shows the disconnect once ------------------------------
def test_a_resume_that_decides_the_match_sends_the_disconnect_once():
    """O12: both away, A's grace runs out, B comes back within its own: B's one state (the full
    history) holds the disconnect, then match_end and room; no second state with the same seq."""
    h = Harness()
    first, second = h.start()
    first.drop()
    h.advance(10)
    second.drop()
    h.advance(h.config.grace_seconds - 5)
    h.turn()  # the first grace ran out while the second seat was away too: nothing decided yet
    assert not h.match(first).over
    back = h.connect("10.0.0.2")
    replies = back.send(type="resume", room=second.room, token=second.token, id="r")
    assert [m["type"] for m in replies] == ["joined", "room", "match_start", "state", "match_end", "room"]
    (state,) = [m for m in replies if m["type"] == "state"]
    assert [e["action"] for e in state["events"]][-1] == "disconnect"
    assert state["seq"] == len(state["events"]) and state["phase"] == "over"
    assert sum(e["action"] == "disconnect" for m in replies if m["type"] == "state" for e in m["events"]) == 1
    end = replies[4]
    assert (end["result"]["outcome"], end["result"]["reason"]) == ("win", "disconnect")
    # The seat that ran out, watching from a new connection, gets the ending once as well.
    watcher = h.connect("10.0.0.1")
    again = watcher.send(type="resume", room=first.room, token=first.token)
    assert [m["type"] for m in again] == ["joined", "room", "match_start", "state", "match_end"]


# ----- §5: presence when a seat is resumed over its still-open connection ------------------------------
@pytest.mark.parametrize("same_connection", [False, True], ids=["another-connection", "same-connection"])
def test_resuming_a_seat_that_was_still_connected_tells_the_opponent_nothing(same_connection):
    """§5: the opponent saw the seat connected all along: no presence, no room; the old connection
    (if another) gets replaced and is closed."""
    h = Harness()
    first, second = h.start()
    second.new()
    target = first if same_connection else h.connect("10.0.0.1")
    replies = target.send(type="resume", room=first.room, token=first.token)
    assert [m["type"] for m in replies] == ["joined", "room", "match_start", "state"]
    assert second.new() == []
    if not same_connection:
        assert first.messages[-1]["code"] == "replaced" and first.closed
        target.send(type="explore", cell=[0, 0])
        assert [m["type"] for m in second.new()] == ["state"]
    # A seat that was away and comes back is announced as ever.
    target.drop()
    assert [m["type"] for m in second.new()] == ["presence", "room"]
    back = h.connect("10.0.0.1")
    back.send(type="resume", room=first.room, token=first.token)
    presence, room = second.new()
    assert (presence["type"], presence["connected"], room["type"], room["opponent"]["connected"]) == (
        "presence", True, "room", True,
    )


# ----- §1/§4: the order of a request's messages -------------------------------------------------------
def test_each_request_sends_its_messages_in_the_documented_order():
    """§1: ok comes after the request's effects; room_created and joined come first; §4's reply column."""
    h = Harness()
    a, b, c = h.connect("10.0.0.1"), h.connect("10.0.0.2"), h.connect("10.0.0.3")

    def kinds(replies):
        return [m["type"] for m in replies]

    created = a.send(type="create_room", id=1)
    assert kinds(created) == ["room_created", "room"] and created[0]["id"] == 1
    code = created[0]["room"]
    a.room = b.room = code
    assert kinds(c.send(type="peek", room=code)) == ["room_info"]
    assert kinds(b.send(type="join", room=code, id="j")) == ["joined", "room"]
    assert kinds(a.new()) == ["room"]
    assert kinds(a.send(type="ready")) == ["room", "ok"]
    assert kinds(b.new()) == ["room"]
    assert kinds(b.send(type="ready")) == ["match_start", "state", "room", "ok"]
    assert kinds(a.new()) == ["match_start", "state", "room"]
    first, second = (a, b) if a.seat == 0 else (b, a)
    assert kinds(first.send(type="explore", cell=[0, 0], id=2)) == ["state", "ok"]
    assert kinds(second.new()) == ["state"]
    assert kinds(first.send(type="resign")) == ["state", "match_end", "room", "ok"]
    assert kinds(second.new()) == ["state", "match_end", "room"]
    assert kinds(first.send(type="rematch")) == ["rematch", "room", "ok"]
    assert kinds(second.send(type="rematch")) == ["match_start", "state", "room", "ok"]
    twin = h.connect("10.0.0.1")
    assert kinds(twin.send(type="resume", room=code, token=created[0]["token"])) == [
        "joined", "room", "match_start", "state",
    ]
    (err,) = c.send(type="ready", id=3)
    assert (err["type"], err["id"]) == ("error", 3)


# ----- §10: the commitment hashes the seed's text ------------------------------------------------------
def test_the_commitment_is_sha3_of_the_seeds_hex_text():
    """§10: SHA3-256 over the 64 hex digits as text, not over the 32 bytes they spell."""
    import hashlib

    h = Harness()
    first, second = h.start()
    committed = first.last("match_start")["commitment"]
    first.send(type="resign")
    seed = first.last("match_end")["record"]["fairness"]["server_seed"]
    assert len(seed) == 64 and seed == seed.lower()
    assert committed == hashlib.sha3_256(seed.encode("ascii")).hexdigest()
    assert committed != hashlib.sha3_256(bytes.fromhex(seed)).hexdigest()


# ----- §10 / RECORD.md: the record's layout ------------------------------------------------------------
def test_the_record_layout_is_the_documented_one():
    """RECORD.md "The layout, key by key": players by record seat; mine_commitments and salts in
    plant order (auto-plants included), salts[i] opening mine_commitments[i]; stream_used counts draws."""
    from mineduel.shared.fairness.commitments import mine_commitment

    h = Harness()
    first, second = h.start(seeds=("ann 1", ""))
    first.send(type="explore", cell=[0, 0])
    second.send(type="explore", cell=[7, 7])
    first.send(type="plant", cell=[2, 2])
    h.advance(h.config.turn_seconds + 1)  # the second seat's opening plant times out: an auto-plant
    h.turn()
    first.send(type="resign")
    record = first.last("match_end")["record"]
    assert sorted(record) == ["actions", "fairness", "format", "match_id", "players", "result", "room", "times", "variant"]
    names = {first.seat: first.last("room")["me"]["name"], second.seat: second.last("room")["me"]["name"]}
    assert record["players"] == [{"seat": 0, "name": names[0]}, {"seat": 1, "name": names[1]}]
    fairness = record["fairness"]
    assert sorted(fairness) == sorted([
        "version", "commitment", "server_seed", "signature", "client_seeds", "nonce", "first_player",
        "join_order", "mine_commitments", "salts", "transcript", "stream_used", "previous_transcript",
    ])
    assert fairness["client_seeds"] == ["ann 1", ""]  # join order
    plants = [(i, a) for i, a in enumerate(record["actions"]) if a["type"] == "plant"]
    assert [a.get("auto", False) for _, a in plants] == [False, True]
    assert len(fairness["salts"]) == len(fairness["mine_commitments"]) == 2
    for (seq, action), salt, commitment in zip(plants, fairness["salts"], fairness["mine_commitments"], strict=True):
        assert len(salt) == 32 and int(salt, 16) >= 0
        row, col = action["cell"]
        assert mine_commitment(salt, record["match_id"], seq, action["seat"], row * 8 + col) == commitment
    # Two picks (the first-player draw and the auto-plant), each one draw here, none rejected.
    assert fairness["stream_used"] == 2


def test_stream_used_counts_the_draws_rejection_sampling_threw_away():
    """R2 (RECORD.md stream_used): a rejected draw is read from the stream, so it counts."""
    from mineduel.shared.fairness.commitments import FairStream, round_signature

    options = 2**31 + 1  # accepts only draws below 2^31 + 1: about half are rejected
    for nonce in range(1, 100):
        stream = FairStream(round_signature("0" * 64, ["a", "b"], nonce))
        probe = FairStream(stream.signature)
        if probe.next_u32() >= options:  # this stream's first draw is rejected
            stream.pick(options)
            assert stream.consumed >= 2
            return
    raise AssertionError("no stream with a rejected first draw among 99")


# ----- §6: the deadline after a manual opening step -----------------------------------------------------
def test_after_a_manual_opening_step_the_next_has_20_s_from_its_acceptance():
    """§6 O4: deadline.at = the step's at + turn_seconds, whatever time the step had left."""
    h = Harness()
    first, second = h.start()
    started = first.last("match_start")["started"]
    assert first.last("state")["deadline"]["at"] == started + h.config.turn_seconds
    h.advance(7.25)
    replies = first.send(type="explore", cell=[0, 0])
    state = replies[0]
    (event,) = state["events"]
    assert state["deadline"] == {"at": event["at"] + h.config.turn_seconds, "left": h.config.turn_seconds}
    assert event["at"] == started + 7.25


# ----- §5: grace and grace_expired after the end ---------------------------------------------------------
def test_grace_and_grace_expired_are_reset_when_the_match_ends():
    """§5: both belong to the running match: after the end every room shows grace null and
    grace_expired false; a drop after the end gets no grace and no presence."""
    h = Harness()
    first, second = h.start()
    first.drop()
    h.advance(10)
    second.drop()
    h.advance(h.config.grace_seconds - 5)
    h.turn()  # the first seat's grace ran out, the second is still within its own
    watcher = h.connect("10.0.0.1")
    room = watcher.send(type="resume", room=first.room, token=first.token)[1]
    assert room["me"]["grace_expired"] is True and room["me"]["grace"] is None
    assert room["opponent"]["grace"] is not None and room["opponent"]["connected"] is False
    back = h.connect("10.0.0.2")
    replies = back.send(type="resume", room=second.room, token=second.token)
    for room in [m for m in replies + watcher.new() if m["type"] == "room"][-2:]:
        assert room["status"] == "finished"
        for who in ("me", "opponent"):
            assert (room[who]["grace"], room[who]["grace_expired"]) == (None, False)
    back.drop()
    (room,) = watcher.new()
    assert room["type"] == "room" and room["opponent"]["connected"] is False
    assert (room["opponent"]["grace"], room["opponent"]["grace_expired"]) == (None, False)


# ----- HOSTING.md "Ports": the bound ports, machine-readable ---------------------------------------------
def _listening_line(proc, timeout: float = 30.0) -> dict:
    import selectors
    import time

    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    seen = []
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if sel.select(timeout=0.5):
            line = proc.stdout.readline()
            if not line:
                break
            seen.append(line)
            if line.startswith(b"{"):
                return json.loads(line)
    raise AssertionError(f"no listening line; got {b''.join(seen)!r}")


def test_port_0_prints_the_chosen_ports_as_one_json_line(tmp_path):
    """HOSTING.md: with --port 0 --udp-port 0 the server prints {"event":"listening","tcp":N,"udp":M,…}
    on standard output, the only line starting with "{"; both ports answer."""
    import os
    import signal
    import socket
    import subprocess
    import sys

    args = [sys.executable, "-m", "mineduel.server", "--host", "127.0.0.1", "--port", "0", "--udp-port", "0",
            "--db", str(tmp_path / "p.db")]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=dict(os.environ))
    try:
        event = _listening_line(proc)
        assert sorted(event) == ["endpoints", "event", "tcp", "udp"] and event["event"] == "listening"
        assert isinstance(event["tcp"], int) and isinstance(event["udp"], int) and event["tcp"] > 0 and event["udp"] > 0
        assert event["endpoints"] == [{"endpoint": event["endpoints"][0]["endpoint"], "port": event["tcp"], "tls": False}]
        with socket.create_connection(("127.0.0.1", event["tcp"]), timeout=10) as tcp:
            tcp.sendall(b'{"type":"hello","protocol":1}\n')
            assert json.loads(tcp.makefile("rb").readline())["type"] == "welcome"
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.settimeout(10)
            udp.sendto(b'{"type":"discover","protocol":1}', ("127.0.0.1", event["udp"]))
            answer = json.loads(udp.recvfrom(2048)[0])
            assert (answer["type"], answer["port"]) == ("server", event["tcp"])
    finally:
        proc.send_signal(signal.SIGTERM)
        rest = proc.communicate(timeout=30)[0]
    assert proc.returncode == 0
    assert not any(line.startswith(b"{") for line in rest.splitlines())


def test_without_discovery_udp_is_null(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    args = [sys.executable, "-m", "mineduel.server", "--host", "127.0.0.1", "--port", "0", "--no-discovery",
            "--db", str(tmp_path / "n.db")]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=dict(os.environ))
    try:
        event = _listening_line(proc)
        assert event["udp"] is None and event["tcp"] > 0
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
