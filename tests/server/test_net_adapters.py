"""The two line adapters without sockets or real time: the server's ``LineProtocol`` (server/net.py)
and the shared ``LineClient`` (server/client.py), on Twisted's ``StringTransport`` and ``task.Clock``.

Nothing here knows a rule: framing, limits, backpressure, pings and reply matching are all the
adapters do, so that is all these tests look at (STYLE.md: the Twisted test standard).
"""

from __future__ import annotations

from typing import Any

import pytest
from twisted.internet.defer import Deferred, ensureDeferred
from twisted.internet.error import ConnectionDone
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.python.failure import Failure

from mineduel.server.client import LineClient, ServerError
from mineduel.server.config import Config
from mineduel.server.net import LineProtocol, ServerFactory
from mineduel.shared.wire import codec
from mineduel.shared.wire import messages as m

TOKEN = "ab" * 32


class _Core:
    """Stands in for ``ServerCore``: records what the adapter forwards, and has its config."""

    def __init__(self, **config: Any) -> None:
        self.config = Config(**config)
        self.calls: list[tuple[Any, ...]] = []

    def connection_made(self, pid: int, peer: str, host: str, port: int, **tags: Any) -> None:
        self.calls.append(("made", pid, peer))

    def line_received(self, pid: int, line: bytes) -> None:
        self.calls.append(("line", pid, line))

    def line_too_long(self, pid: int) -> None:
        self.calls.append(("too_long", pid))

    def connection_lost(self, pid: int) -> None:
        self.calls.append(("lost", pid))


def _server(**config: Any) -> tuple[LineProtocol, StringTransport, _Core, Clock, ServerFactory]:
    clock = Clock()
    factory = ServerFactory(clock=clock)
    core = _Core(**config)
    factory.core = core  # type: ignore[assignment]  # the stand-in has what the adapter uses
    proto = factory.buildProtocol(None)
    transport = StringTransport()
    proto.makeConnection(transport)
    return proto, transport, core, clock, factory


# ----- the server's LineProtocol ------------------------------------------------------------------


def test_server_frames_lines_across_reads() -> None:
    """A line split over reads reaches the core once, whole, without its newline; two in one read are two."""
    proto, _, core, _, _ = _server()
    proto.dataReceived(b'{"type":"ping"}\n{"type":')
    proto.dataReceived(b'"pong"}\n{"type":"bye"}\n')
    assert core.calls == [
        ("made", 1, "192.168.1.1"),
        ("line", 1, b'{"type":"ping"}'),
        ("line", 1, b'{"type":"pong"}'),
        ("line", 1, b'{"type":"bye"}'),
    ]


def test_server_reports_a_line_over_the_limit() -> None:
    """A line longer than ``max_line`` is not forwarded: the core hears ``line_too_long`` instead."""
    proto, _, core, _, _ = _server(max_line=64)
    proto.dataReceived(b"x" * 65)
    assert core.calls[1:] == [("too_long", 1)]


def test_server_cuts_a_peer_that_stops_reading_after_send_stall() -> None:
    """Backpressure: a paused peer stops being read; at ``send_stall`` seconds (not before) it is cut."""
    proto, transport, _, clock, _ = _server(send_stall=15.0)
    proto.pauseProducing()  # what Twisted calls when the send buffer is full
    assert transport.producerState == "paused"
    clock.advance(14.9)
    assert not transport.disconnecting
    clock.advance(0.1)
    assert transport.disconnecting and proto.cut


def test_server_forgives_a_peer_that_reads_again_in_time() -> None:
    """A peer that drains its buffer before ``send_stall`` is read again and never cut."""
    proto, transport, _, clock, _ = _server(send_stall=15.0)
    proto.pauseProducing()
    clock.advance(10)
    proto.resumeProducing()
    clock.advance(60)
    assert transport.producerState == "producing" and not transport.disconnecting and not proto.cut


def test_server_outbox_encodes_each_typed_message_once_at_the_edge() -> None:
    """The factory writes a typed message as its line; held messages go out in one write, closes after."""
    proto, transport, _, _, factory = _server()
    ping, pong = m.Ping(12.5), m.Pong(12.5, "p")
    factory.send(proto.pid, ping)
    factory.send_all([(proto.pid, pong), (proto.pid, ping), (proto.pid, None)])
    assert transport.value() == b'{"type":"ping","server_time":12.5}\n' + codec.encode_message(pong) + codec.encode_message(ping)
    assert transport.disconnecting


def test_server_lost_connection_stops_its_stall_timer() -> None:
    """A connection lost by the peer stops the stall timer and tells the core once."""
    proto, _, core, clock, _ = _server()
    proto.pauseProducing()
    proto.connectionLost(Failure(ConnectionDone()))
    clock.advance(3600)
    assert core.calls[-1] == ("lost", 1) and not proto.cut and clock.getDelayedCalls() == []


# ----- the shared LineClient ---------------------------------------------------------------------------


class _Listener:
    def __init__(self) -> None:
        self.heard: list[m.ServerMessage] = []
        self.bad: list[tuple[bytes, str]] = []

    def message_received(self, message: m.ServerMessage) -> None:
        self.heard.append(message)

    def malformed_line(self, line: bytes, problem: str) -> None:
        self.bad.append((line, problem))


def _client(**options: Any) -> tuple[LineClient, StringTransport, _Listener]:
    listener = _Listener()
    client = LineClient("unit/1", listener=listener, **options)
    transport = StringTransport()
    client.makeConnection(transport)
    return client, transport, listener


def _sent(transport: StringTransport) -> list[dict[str, Any]]:
    return [codec.decode(line) for line in transport.value().splitlines()]


def test_client_frames_and_types_each_line_once() -> None:
    """Lines split over reads arrive whole, as their typed classes, kept with their JSON objects."""
    client, _, listener = _client()
    line = codec.encode_message(m.Pong(3.0, id=7))
    client.dataReceived(line[:5])
    client.dataReceived(line[5:] + codec.encode_message(m.RematchStatus(True, False)))
    assert listener.heard == [m.Pong(3.0, id=7), m.RematchStatus(True, False)]
    assert client.typed == listener.heard and client.messages[0] == {"type": "pong", "server_time": 3.0, "id": 7}


@pytest.mark.parametrize("line", [
    b"not json",
    b"[1, 2]",
    b'{"type": "state", "seq": 1}',  # a known type without its fields
    b'{"type": "from_the_future"}',  # a type this client does not know
    b'{"type": "ok", "request": "ready", "id": {"nested": true}}',
])
def test_client_skips_a_malformed_server_line_and_goes_on(line: bytes) -> None:
    """A hostile server's bad line is counted and reported, never raised; the next line is read."""
    client, transport, listener = _client()
    client.dataReceived(line + b"\n" + codec.encode_message(m.RematchStatus(False, True)))
    assert client.malformed_count == 1 and listener.bad[0][0] == line
    assert listener.heard == [m.RematchStatus(False, True)] and not transport.disconnecting


def test_client_drops_a_server_line_over_its_limit() -> None:
    """A line over ``MAX_LENGTH`` is no protocol line: reported and the connection closed."""
    client, transport, listener = _client()
    client.MAX_LENGTH = 32
    client.dataReceived(b"x" * 40)
    assert len(listener.bad) == 1 and transport.disconnecting


def test_client_answers_ping_with_pong() -> None:
    """A server ping gets a pong at once, and still reaches the listener."""
    client, transport, listener = _client()
    client.dataReceived(codec.encode_message(m.Ping(1.0)))
    assert _sent(transport) == [{"type": "pong"}] and listener.heard == [m.Ping(1.0)]


def test_client_matches_replies_by_id() -> None:
    """A typed request gets a fresh id; only the reply with that id answers it, as its typed class."""
    client, transport, _ = _client()
    reply: Deferred[m.ServerMessage] = ensureDeferred(client.request(m.CreateRoom(name="Ann")))
    [sent] = _sent(transport)
    assert sent == {"type": "create_room", "name": "Ann", "id": "c1"}
    client.dataReceived(codec.encode_message(m.Ok("ready", id="other")))
    assert not reply.called
    created = m.RoomCreated("ABCDEF", "mineduel://h:1/join/ABCDEF", TOKEN, id="c1")
    client.dataReceived(codec.encode_message(created))
    assert reply.result == created


def test_client_raises_an_error_reply_and_gives_scripts_json() -> None:
    """A script's request (type and fields) gets JSON back; an ``error`` reply raises ``ServerError``."""
    client, transport, _ = _client()
    ok = ensureDeferred(client.request("ready", ready=True))
    client.dataReceived(codec.encode_message(m.Ok("ready", id="c1")))
    assert ok.result == {"type": "ok", "request": "ready", "id": "c1"}
    refused = ensureDeferred(client.request("join", room="ZZZZZZ"))
    client.dataReceived(codec.encode_message(m.Error("room_not_found", "no such room", "join", id="c2")))
    failure = refused.result
    refused.addErrback(lambda _: None)
    assert isinstance(failure, Failure) and isinstance(failure.value, ServerError)
    assert failure.value.code == "room_not_found" and failure.value.reply["request"] == "join"


def test_client_wait_for_hands_out_each_message_once() -> None:
    """``wait_for`` finds an earlier message first, then waits for the next one of its kind."""
    client, _, _ = _client()
    client.dataReceived(codec.encode_message(m.RematchStatus(True, False)))
    first = client.wait_for(m.RematchStatus)
    second = client.wait_for(m.RematchStatus)
    assert first.result == m.RematchStatus(True, False) and not second.called
    client.dataReceived(codec.encode_message(m.RematchStatus(True, True)))
    assert second.result == m.RematchStatus(True, True)


def test_client_connection_lost_fails_its_waiters() -> None:
    """Nobody waits forever: a lost connection fails every waiter and pending request, and later waits."""
    client, _, _ = _client()
    waiting = client.wait_for("state")
    pending = ensureDeferred(client.request(m.Ready()))
    client.connectionLost(Failure(ConnectionDone()))
    for d in (waiting, pending, client.wait_for(m.State)):
        failure = d.result
        d.addErrback(lambda _: None)
        assert isinstance(failure, Failure) and failure.check(ConnectionError)
    assert client.lost.called
