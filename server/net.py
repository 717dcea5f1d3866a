"""Twisted adapter: frames lines, forwards them to :class:`ServerCore`, writes its messages.

Nothing here knows a rule. Shared state lives in the factory; a protocol instance is one
connection and has an integer id the core uses as its address.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
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
            proto.transport.write(protocol.encode(message))

    def close(self, peer: int) -> None:
        proto = self.protocols.get(peer)
        if proto is not None and proto.transport is not None:
            proto.transport.loseConnection()
