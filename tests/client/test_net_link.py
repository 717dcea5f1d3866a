"""client/net.py's link over loopback: the server package's LineClient under the session's listener.

A scripted server writes given bytes once the client connects and records what it receives; the
link must turn them into the session's ``link_*`` calls exactly as before it used the line client.
"""

from __future__ import annotations

from typing import Any

import pytest_twisted
from twisted.internet import defer
from twisted.internet import protocol as tprotocol
from twisted.internet.task import deferLater

from mineduel.client.net import MAX_LINE, TcpLink, tcp_connector
from mineduel.shared.wire.codec import encode_message
from mineduel.shared.wire.messages import Hello, Ping, Welcome
from mineduel.shared.wire.names import PROTOCOL_VERSION

WELCOME = encode_message(Welcome(PROTOCOL_VERSION, "srv", "1", 0.0, 8192, 20.0, 40.0, 5.0, 15.0, 20.0, 120.0))


def _reactor() -> Any:
    from twisted.internet import reactor

    return reactor


class _Scripted(tprotocol.Protocol):
    def __init__(self, reply: bytes, received: list[bytes]) -> None:
        self.reply = reply
        self.received = received

    def connectionMade(self) -> None:
        self.transport.write(self.reply)

    def dataReceived(self, data: bytes) -> None:
        self.received.append(data)


class _Listener:
    """The session's side of a link: what happened, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def link_open(self, link: Any) -> None:
        self.events.append(("open", None))

    def link_message(self, link: Any, message: Any) -> None:
        self.events.append(("message", message.TYPE.value))

    def link_garbage(self, link: Any, detail: str) -> None:
        self.events.append(("garbage", detail))

    def link_failed(self, link: Any, detail: str) -> None:
        self.events.append(("failed", detail))

    def link_closed(self, link: Any, detail: str) -> None:
        self.events.append(("closed", None))

    def link_refused(self, link: Any, detail: str) -> None:
        self.events.append(("refused", detail))

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.events]


async def _run(reply: bytes, until: str) -> tuple[_Listener, list[bytes], TcpLink]:
    received: list[bytes] = []
    port = _reactor().listenTCP(0, tprotocol.Factory.forProtocol(lambda: _Scripted(reply, received)), interface="127.0.0.1")
    listener = _Listener()
    try:
        link = tcp_connector(_reactor())("127.0.0.1", port.getHost().port, listener)
        for _ in range(2000):
            if until in listener.kinds():
                break
            await deferLater(_reactor(), 0.001, lambda: None)
        else:
            raise AssertionError(f"never {until}: {listener.events}")
        return listener, received, link
    finally:
        await defer.maybeDeferred(port.stopListening)


@pytest_twisted.ensureDeferred
async def test_a_message_type_from_a_newer_server_is_skipped_and_the_link_lives_on() -> None:
    """An unknown type is skipped; the messages around it arrive typed, and the link stays open."""
    listener, _, link = await _run(b'{"type": "from_the_future", "x": 1}\n' + WELCOME, "message")
    assert listener.events == [("open", None), ("message", "welcome")]
    link.close()


@pytest_twisted.ensureDeferred
async def test_garbage_drops_the_link_as_a_bad_server_and_nothing_after_it_is_heard() -> None:
    """A line that is not the protocol is link_garbage once, then the link closes; the welcome after it is not heard."""
    listener, _, _ = await _run(b"\x00not json at all\n" + WELCOME, "closed")
    assert listener.kinds() == ["open", "garbage", "closed"]


@pytest_twisted.ensureDeferred
async def test_a_known_type_with_bad_fields_is_garbage() -> None:
    """A welcome whose fields break the protocol is garbage (not a newer server's message)."""
    listener, _, _ = await _run(b'{"type": "welcome", "protocol": "one"}\n', "closed")
    assert listener.kinds() == ["open", "garbage", "closed"]


@pytest_twisted.ensureDeferred
async def test_a_line_too_long_is_garbage() -> None:
    """A server line over MAX_LINE bytes (no newline in sight) ends the link as garbage."""
    listener, _, _ = await _run(b"x" * (MAX_LINE + 10), "closed")
    assert listener.kinds() == ["open", "garbage", "closed"]


@pytest_twisted.ensureDeferred
async def test_a_ping_is_left_to_the_session() -> None:
    """The link answers no ping: the session hears it and answers from the frame loop (issue 15: a window
    whose loop stopped must not look alive to the server)."""
    listener, received, link = await _run(encode_message(Ping(1.0)), "message")
    link.send(Hello(PROTOCOL_VERSION, "game/1"))
    for _ in range(2000):
        if b"hello" in b"".join(received):
            break
        await deferLater(_reactor(), 0.001, lambda: None)
    sent = b"".join(received)
    assert sent.startswith(b'{"type":"hello"') and b'"pong"' not in sent
    assert listener.events == [("open", None), ("message", "ping")]
    link.close()
