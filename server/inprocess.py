"""A whole server core without sockets: genuine server lines, no network, no real time.

The real :class:`~mineduel.server.session.ServerCore` runs on a ``task.Clock`` with
:class:`~mineduel.server.storage.MemoryStorage`; nothing listens anywhere. It serves the game
client's screenshot tour (``mine-duel screenshots``, which must work from an installed wheel)
and tests. Clients reach it two ways, and both share the one core:

* :meth:`InProcessServer.connector` — a connector in the shape the game client's session uses
  (``connect(host, port, listener, *, tls=False, pin=None)``): the returned :class:`MemLink` sends
  typed requests, and the listener is told ``link_open`` / ``link_message`` / ``link_closed``;
* :meth:`InProcessServer.peer` — a bare scripted connection (the other seat): JSON objects in,
  JSON objects out.

Every message goes through the codec both ways, exactly as the wire would carry it, so what a
client is shown is what a real server would have sent. The invariant the class keeps: after any
call that hands the core a line or a loss, the end of a reactor turn is simulated (the group
commit is flushed), so nothing is held back that a real server would have sent by then. The
game client reaches this module only through the facade :func:`mineduel.server.client.in_process_server`.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from typing import Any, Protocol

from twisted.internet.task import Clock

from mineduel.server.config import Config
from mineduel.server.room import Room
from mineduel.server.session import ServerCore
from mineduel.server.storage import MemoryStorage
from mineduel.shared.rules.engine import GameState
from mineduel.shared.wire.codec import decode, decode_server, encode, encode_message
from mineduel.shared.wire.messages import ClientMessage, Hello, Json, ServerMessage
from mineduel.shared.wire.names import DEFAULT_PORT, PROTOCOL_VERSION

START_TIME = 1_700_000_000.0
"""Where the fake clock starts (a plausible date, so records and deadlines look real)."""

PUBLIC_HOST = "192.168.1.5"
"""The address the server says it is reached at (invite links in screenshots show it)."""

DEFAULTS: dict[str, object] = {
    "rate_per_second": 1e6, "rate_burst": 1e6, "idle_timeout": 1e9, "ping_interval": 5.0, "public_host": PUBLIC_HOST,
}
"""Config for scripted play: no rate limit or idle timeout gets in the way of a script."""


class LinkListener(Protocol):
    """Who hears a :class:`MemLink` (the game client's session has these and more)."""

    def link_open(self, link: MemLink) -> None: ...

    def link_message(self, link: MemLink, message: ServerMessage) -> None: ...

    def link_closed(self, link: MemLink, detail: str) -> None: ...


class MemConnector(Protocol):
    """``connect(host, port, listener, *, tls, pin)``; ``host``, ``port`` and TLS are ignored (one server)."""

    def __call__(self, host: str, port: int, listener: LinkListener, *, tls: bool = False,
                 pin: str | None = None) -> MemLink: ...


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
        self.messages: list[Json] = []

    def send(self, **message: Any) -> list[Json]:
        """Send ``message`` as one line; the messages it brought back, in order."""
        before = len(self.messages)
        self.server.core.line_received(self.pid, encode(message)[:-1])
        self.server.end_turn()
        return self.messages[before:]

    def last(self, kind: str) -> Json:
        return next(m for m in reversed(self.messages) if m["type"] == kind)

    def drop(self) -> None:
        self.server.core.connection_lost(self.pid)
        self.server.end_turn()


class InProcessServer:
    """The real server core on ``task.Clock`` with no sockets: links and scripted peers share it.

    ``config`` are :class:`~mineduel.server.config.Config` fields over :data:`DEFAULTS`; ``seed``
    makes the server's random bytes (room codes, tokens, boards) the same on every run.
    """


    def __init__(self, seed: int = 1, **config: Any) -> None:
        self.clock = Clock()
        self.clock.advance(START_TIME)
        self._routes: dict[int, Callable[[bytes], None]] = {}
        self._closers: dict[int, Callable[[], None]] = {}
        self._links: dict[int, MemLink] = {}
        rng = random.Random(seed)  # reproducible: the same room codes, tokens and boards on every run
        self.core = ServerCore(clock=self.clock, randbytes=rng.randbytes, storage=MemoryStorage(), outbox=self,
                               config=Config(**{**DEFAULTS, **config}))
        self.core.start()
        self._pids = itertools.count(1)

    # ----- Outbox (the core's edge) -------------------------------------------------------------
    def send(self, peer: int, message: ServerMessage) -> None:
        route = self._routes.get(peer)
        if route is not None:
            route(encode_message(message)[:-1])  # exactly what the wire would carry

    def close(self, peer: int) -> None:
        closer = self._closers.pop(peer, None)
        self._routes.pop(peer, None)
        if closer is not None:
            closer()

    # ----- connecting ---------------------------------------------------------------------------
    def connector(self) -> MemConnector:
        """A connector onto this server, in the shape of the game client's ``Connector``."""

        def connect(host: str, port: int, listener: LinkListener, *, tls: bool = False, pin: str | None = None) -> MemLink:
            pid = next(self._pids)
            link = MemLink(self, pid, listener)
            self._links[pid] = link
            self._routes[pid] = lambda line: listener.link_message(link, decode_server(line))

            def closed() -> None:
                link.open = False
                listener.link_closed(link, "closed by the server")

            self._closers[pid] = closed
            self.core.connection_made(pid, "127.0.0.1", PUBLIC_HOST, DEFAULT_PORT)
            listener.link_open(link)
            return link

        return connect

    def peer(self, hello: bool = True) -> Peer:
        """A scripted connection from another machine; with ``hello``, already welcomed."""
        pid = next(self._pids)
        peer = Peer(self, pid)
        self._routes[pid] = lambda line: peer.messages.append(decode(line))
        self.core.connection_made(pid, "10.0.0.2", PUBLIC_HOST, DEFAULT_PORT)
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

    # ----- time and inspection ------------------------------------------------------------------
    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)

    def end_turn(self) -> None:
        """What the end of a reactor turn does: the group commit, then the held messages."""
        self.core.commits.flush()

    def room(self, code: str) -> Room:
        return self.core.rooms.rooms[code]

    def truth(self, code: str) -> GameState:
        """The server's whole state of a room's match (screenshots set positions up with it)."""
        match = self.core.rooms.rooms[code].match
        if match is None:
            raise LookupError(f"room {code} has no match")
        return match.state
