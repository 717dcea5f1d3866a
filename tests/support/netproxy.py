"""A loopback TCP proxy for fault injection: a network path that can go silent without closing.

Tests put it between a client and a server on 127.0.0.1 to make the faults a real network
makes and a clean ``close()`` never shows: a Wi-Fi that drops out, a NAT that forgets the
connection, a phone whose app is frozen in the background. Each proxied connection is a
:class:`Link`; :meth:`Link.block` stops forwarding in one direction or both **without closing
either socket** (a black hole): neither end sees an error, a FIN or a reset.

A blocked direction is not read at all, the way a TCP path that stopped delivering behaves:
the bytes wait in the kernel's buffers (and then in the sender's own buffer, so a server that
keeps writing to a peer that never reads sees its output pile up), nothing is lost or
reordered, and :meth:`Link.unblock` delivers them in order, as TCP would after a partition
heals (if neither end has given up by then). A close from one end is not seen through a
blocked direction either; once unblocked, it is passed on after the data before it.

Only Twisted and the standard library: the proxy knows nothing about MINE DUEL.
"""

from __future__ import annotations

import socket
from typing import Any, Literal

from twisted.internet import defer
from twisted.internet.interfaces import IListeningPort
from twisted.internet.protocol import Factory, Protocol
from twisted.python.failure import Failure

Direction = Literal["up", "down", "both"]
"""``up``: client → server; ``down``: server → client; ``both``."""


class _End(Protocol):
    """One of the two sockets of a :class:`Link` (``up`` reads the client, ``down`` the server)."""

    def __init__(self, link: Link, reads: Literal["up", "down"]) -> None:
        self.link = link
        self.reads = reads  # the direction whose bytes this socket receives
        self.gone = False

    def connectionMade(self) -> None:
        self.transport.setTcpNoDelay(True)  # forward each write at once: the proxy adds no delay
        if self.reads in self.link.blocked:
            self.transport.pauseProducing()

    def dataReceived(self, data: bytes) -> None:
        self.link.forward(self.reads, data)

    def connectionLost(self, reason: Failure = None) -> None:  # type: ignore[assignment]
        self.gone = True
        self.link.end_lost(self.reads)


class Link:
    """One client connection through the proxy: the client's socket and ours to the server."""

    def __init__(self, proxy: Proxy) -> None:
        self.proxy = proxy
        self.blocked: set[str] = set()
        self.client_end = _End(self, "up")  # the accepted socket: reads what the client sends
        self.server_end = _End(self, "down")  # our socket to the server: reads what it sends
        self.forwarded = {"up": 0, "down": 0}  # bytes passed on, per direction
        self.closed: defer.Deferred[None] = defer.Deferred()

    # ----- control -----------------------------------------------------------------------------
    def block(self, direction: Direction = "both") -> None:
        """Stop forwarding ``direction``: its bytes (and a close) wait, no socket is closed."""
        for d in _directions(direction):
            if d not in self.blocked:
                self.blocked.add(d)
                end = self._reader(d)
                if end.transport is not None and not end.gone:
                    end.transport.pauseProducing()

    def unblock(self, direction: Direction = "both") -> None:
        """Forward ``direction`` again: what waited arrives first, in order."""
        for d in _directions(direction):
            if d in self.blocked:
                self.blocked.discard(d)
                end = self._reader(d)
                if end.transport is not None and not end.gone:
                    end.transport.resumeProducing()

    def abort(self) -> None:
        """Reset both sockets (a path that failed loudly)."""
        for end in (self.client_end, self.server_end):
            if end.transport is not None and not end.gone:
                end.transport.abortConnection()

    @property
    def client_port(self) -> int:
        """The client's local port, as the proxy sees it (to find a client's link)."""
        return int(self.client_end.transport.getPeer().port)

    # ----- forwarding ---------------------------------------------------------------------------
    def _reader(self, direction: str) -> _End:
        return self.client_end if direction == "up" else self.server_end

    def _writer(self, direction: str) -> _End:
        return self.server_end if direction == "up" else self.client_end

    def forward(self, direction: str, data: bytes) -> None:
        target = self._writer(direction)
        if target.transport is not None and not target.gone:
            target.transport.write(data)
            self.forwarded[direction] += len(data)

    def end_lost(self, direction: str) -> None:
        """One socket closed: close the other after what it still has to write (a FIN goes through)."""
        other = self._writer(direction)
        if other.transport is not None and not other.gone:
            other.transport.loseConnection()
        if self.client_end.gone and self.server_end.gone and not self.closed.called:
            self.closed.callback(None)


def _directions(direction: Direction) -> tuple[str, ...]:
    if direction == "both":
        return ("up", "down")
    if direction not in ("up", "down"):
        raise ValueError(f"direction must be 'up', 'down' or 'both', not {direction!r}")
    return (direction,)


class _Accepting(Factory):
    def __init__(self, proxy: Proxy) -> None:
        self.proxy = proxy

    def buildProtocol(self, addr: Any) -> Protocol:
        return self.proxy._accepted()


class Proxy:
    """Listens on 127.0.0.1 and forwards each connection to ``target_host:target_port``.

    Loopback is far roomier than a real path: a 64 KiB segment size, and kernel send buffers
    that grow to megabytes. ``server_rcvbuf`` (bytes) shrinks the receive buffer of the proxy's
    sockets to the server and ``server_mss`` announces a real network's segment size (e.g.
    1400) to it, which keeps the server's kernel send buffer near its initial tens of
    kilobytes: a blocked ``down`` direction then fills up as it would over the Internet, and
    the server soon sees output it cannot deliver.
    """

    def __init__(
        self, reactor: Any, target_host: str, target_port: int, *,
        server_rcvbuf: int | None = None, server_mss: int | None = None,
    ) -> None:
        self.reactor = reactor
        self.target = (target_host, target_port)
        self.server_rcvbuf = server_rcvbuf
        self.server_mss = server_mss
        self.links: list[Link] = []
        self._port: IListeningPort | None = None
        self._waiting: list[tuple[int, defer.Deferred[Link]]] = []

    def start(self) -> int:
        """Start listening; returns the proxy's port."""
        self._port = self.reactor.listenTCP(0, _Accepting(self), interface="127.0.0.1")
        return int(self._port.getHost().port)

    @property
    def port(self) -> int:
        assert self._port is not None, "start() first"
        return int(self._port.getHost().port)

    def _accepted(self) -> Protocol:
        """A client connected: connect to the server now (loopback connects at once) and pair them."""
        link = Link(self)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            if self.server_rcvbuf is not None:  # before connect, so the advertised window is small too
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.server_rcvbuf)
            if self.server_mss is not None:  # before connect: the SYN announces it
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, self.server_mss)
            sock.connect(self.target)  # blocking, but a loopback listener completes it in the kernel
            sock.setblocking(False)
            self.reactor.adoptStreamConnection(sock.fileno(), socket.AF_INET, _Pairing(link.server_end))
        finally:
            sock.close()  # the reactor holds its own duplicate of the descriptor
        self.links.append(link)
        # Tell waiters once the accepted socket has its transport (after buildProtocol returns).
        self.reactor.callLater(0, self._announce, link)
        return link.client_end

    def _announce(self, link: Link) -> None:
        port = link.client_port
        for item in list(self._waiting):
            wanted, d = item
            if wanted == port:
                self._waiting.remove(item)
                d.callback(link)

    def link_for(self, client_transport: Any) -> defer.Deferred[Link]:
        """The link of a client connected through the proxy (by its local port), now or once accepted."""
        port = int(client_transport.getHost().port)
        for link in self.links:
            if link.client_end.transport is not None and link.client_port == port:
                return defer.succeed(link)
        d: defer.Deferred[Link] = defer.Deferred()
        self._waiting.append((port, d))
        return d

    def stop(self) -> defer.Deferred[Any]:
        """Stop listening and reset every link."""
        for link in self.links:
            link.unblock()
            link.abort()
        if self._port is None:
            return defer.succeed(None)
        port, self._port = self._port, None
        return defer.maybeDeferred(port.stopListening)


class _Pairing(Factory):
    """Hands the adopted server-side socket its already-built protocol."""

    def __init__(self, end: _End) -> None:
        self.end = end

    def buildProtocol(self, addr: Any) -> Protocol:
        return self.end
