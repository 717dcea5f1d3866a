"""A whole server core on ``task.Clock`` with no sockets: genuine server lines without a network.

Screenshots (``client/online_screenshots.py``) and client tests connect the real
:class:`~mineduel.client.online_client.OnlineClient` to it through :meth:`InProcessServer.connector`
and script the other seat with :meth:`InProcessServer.peer`. Every message goes through the codec
both ways, exactly as the wire would carry it. A test double: it lives here, not in client/.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from typing import Any

from twisted.internet.task import Clock

from mineduel.client.online_client import LinkListener
from mineduel.server.config import Config
from mineduel.server.session import ServerCore
from mineduel.server.storage import MemoryStorage
from mineduel.shared.wire.codec import decode, decode_server, encode, encode_message
from mineduel.shared.wire.messages import ClientMessage, Hello, ServerMessage
from mineduel.shared.wire.names import DEFAULT_PORT, PROTOCOL_VERSION


class MemLink:
    """The client's end of one in-process connection."""

    def __init__(self, server: InProcessServer, pid: int, listener: LinkListener) -> None:
        self.server = server
        self.pid = pid
        self.listener = listener
        self.open = True

    def send(self, message: ClientMessage) -> None:
        if self.open:
            self.server.core.line_received(self.pid, encode_message(message)[:-1])
            self.server.end_turn()

    def close(self) -> None:
        if self.open:
            self.open = False
            self.server.core.connection_lost(self.pid)
            self.server.end_turn()


class Peer:
    """A bare scripted connection (the opponent in screenshots): JSON objects in, JSON objects out."""

    def __init__(self, server: InProcessServer, pid: int) -> None:
        self.server = server
        self.pid = pid
        self.messages: list[dict[str, Any]] = []

    def send(self, **message: Any) -> list[dict[str, Any]]:
        before = len(self.messages)
        self.server.core.line_received(self.pid, encode(message)[:-1])
        self.server.end_turn()
        return self.messages[before:]

    def last(self, kind: str) -> dict[str, Any]:
        return next(m for m in reversed(self.messages) if m["type"] == kind)

    def drop(self) -> None:
        self.server.core.connection_lost(self.pid)
        self.server.end_turn()


class InProcessServer:
    """The real server core on ``task.Clock`` with no sockets: links and scripted peers share it."""

    def __init__(self, seed: int = 1, **config: Any) -> None:
        self.clock = Clock()
        self.clock.advance(1_700_000_000.0)
        self._routes: dict[int, Callable[[bytes], None]] = {}
        self._closers: dict[int, Callable[[], None]] = {}
        self._links: dict[int, MemLink] = {}
        rng = random.Random(seed)
        settings = {"rate_per_second": 1e6, "rate_burst": 1e6, "idle_timeout": 1e9, "ping_interval": 5.0,
                    "public_host": "192.168.1.5", **config}
        self.core = ServerCore(clock=self.clock, randbytes=rng.randbytes, storage=MemoryStorage(), outbox=self,
                               config=Config(**settings))
        self.core.start()
        self._pids = itertools.count(1)

    # Outbox
    def send(self, peer: int, message: ServerMessage | dict[str, Any]) -> None:
        route = self._routes.get(peer)
        if route is not None:
            line = encode(message) if isinstance(message, dict) else encode_message(message)
            route(line[:-1])  # exactly what the wire would carry

    def close(self, peer: int) -> None:
        closer = self._closers.pop(peer, None)
        self._routes.pop(peer, None)
        if closer is not None:
            closer()

    # Connecting
    def connector(self) -> Any:
        """A :class:`~mineduel.client.online_client.Connector` onto this server."""

        def connect(host: str, port: int, listener: LinkListener, *, tls: bool = False, pin: str | None = None) -> MemLink:
            pid = next(self._pids)
            link = MemLink(self, pid, listener)
            self._links[pid] = link
            self._routes[pid] = lambda line: listener.link_message(link, decode_server(line))

            def closed() -> None:
                link.open = False
                listener.link_closed(link, "closed by the server")

            self._closers[pid] = closed
            self.core.connection_made(pid, "127.0.0.1", "192.168.1.5", DEFAULT_PORT)
            listener.link_open(link)
            return link

        return connect

    def peer(self, hello: bool = True) -> Peer:
        pid = next(self._pids)
        peer = Peer(self, pid)
        self._routes[pid] = lambda line: peer.messages.append(decode(line))
        self.core.connection_made(pid, "10.0.0.2", "192.168.1.5", DEFAULT_PORT)
        if hello:
            peer.send(**Hello(PROTOCOL_VERSION, "peer/1").wire())
        return peer

    def cut(self, link: MemLink) -> None:
        """The server side sees the connection drop and so does the client (a cut cable)."""
        for pid, known in self._links.items():
            if known is link and link.open:
                link.open = False
                self._routes.pop(pid, None)
                self._closers.pop(pid, None)
                self.core.connection_lost(pid)
                self.end_turn()
                link.listener.link_closed(link, "connection lost")

    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)

    def end_turn(self) -> None:
        """What the end of a reactor turn does: the group commit, then the held messages."""
        self.core.commits.flush()

    def room(self, code: str) -> Any:
        return self.core.rooms.rooms[code]

    def truth(self, code: str) -> Any:
        """The server's whole state of a room's match (screenshots set positions up with it)."""
        return self.core.rooms.rooms[code].match.state
