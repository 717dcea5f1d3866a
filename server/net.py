"""Twisted adapter: frames lines, forwards them to :class:`ServerCore`, writes its messages.

Nothing here knows a rule. Shared state lives in the factory; a protocol instance is one
connection and has an integer id the core uses as its address.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from twisted.internet.protocol import Factory
from twisted.protocols.basic import LineOnlyReceiver
from twisted.python.failure import Failure

from mineduel.server.session import ServerCore
from mineduel.shared import protocol


class LineProtocol(LineOnlyReceiver):
    """One client connection: ``\\n``-terminated JSON lines."""

    delimiter = b"\n"
    factory: ServerFactory

    def __init__(self) -> None:
        self.pid = 0

    def connectionMade(self) -> None:
        self.MAX_LENGTH = self.factory.core.config.max_line
        self.pid = next(self.factory.ids)
        self.factory.protocols[self.pid] = self
        peer = self.transport.getPeer()
        host = self.transport.getHost()
        self.factory.core.connection_made(
            self.pid, getattr(peer, "host", "?"), getattr(host, "host", "127.0.0.1"), getattr(host, "port", 0)
        )

    def lineReceived(self, line: bytes) -> None:
        self.factory.core.line_received(self.pid, line)

    def lineLengthExceeded(self, line: bytes) -> None:
        self.factory.core.line_too_long(self.pid)

    def connectionLost(self, reason: Failure = Failure(ConnectionError())) -> None:  # noqa: B008
        self.factory.protocols.pop(self.pid, None)
        self.factory.core.connection_lost(self.pid)


def write_now(transport: Any, data: bytes) -> None:
    """Send at once when nothing is queued, else queue behind what is.

    Twisted queues every write and sends it on the next poll, which costs two ``epoll_ctl`` calls
    and a write event per connection per turn (measured: about a tenth of the server's time at
    saturation). Nearly always the socket takes a whole message at once: then it goes now.
    """
    sock = getattr(transport, "socket", None)
    if (
        sock is None
        or not getattr(transport, "connected", False)
        or getattr(transport, "disconnecting", True)
        or getattr(transport, "_tempDataBuffer", True)
        or getattr(transport, "offset", 0) != len(getattr(transport, "dataBuffer", b""))
    ):
        transport.write(data)
        return
    try:
        sent = sock.send(data)
    except BlockingIOError:
        sent = 0
    except OSError:
        transport.write(data)  # Twisted finds the broken connection and reports it as usual
        return
    if sent < len(data):
        transport.write(data[sent:])


class ServerFactory(Factory):
    """Builds :class:`LineProtocol`s and is the core's outbox."""

    protocol = LineProtocol

    def __init__(self) -> None:
        self.core: ServerCore = None  # type: ignore[assignment]  # set by service.py
        self.protocols: dict[int, LineProtocol] = {}
        self.ids = itertools.count(1)

    # Outbox
    def send(self, peer: int, message: Mapping[str, Any]) -> None:
        proto = self.protocols.get(peer)
        if proto is not None and proto.transport is not None:
            write_now(proto.transport, protocol.encode(message))

    def send_all(self, items: Sequence[tuple[int, Mapping[str, Any] | None]]) -> None:
        """Messages (``None``: close) in order: one write per connection, closes after its data."""
        lines: dict[int, list[bytes]] = {}
        closing: list[int] = []
        for peer, message in items:
            if message is None:
                closing.append(peer)
            else:
                lines.setdefault(peer, []).append(protocol.encode(message))
        for peer, chunks in lines.items():
            proto = self.protocols.get(peer)
            if proto is not None and proto.transport is not None:
                write_now(proto.transport, b"".join(chunks))
        for peer in closing:
            self.close(peer)

    def close(self, peer: int) -> None:
        proto = self.protocols.get(peer)
        if proto is not None and proto.transport is not None:
            proto.transport.loseConnection()
