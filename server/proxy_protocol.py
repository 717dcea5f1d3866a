"""The PROXY protocol (v1 and v2) in front of a listener, so that behind a TCP load balancer the
per-address limits count each player's own address (docs/HOSTING.md "A cluster behind a load
balancer", SECURITY.md).

A balancer in TCP mode (HAProxy ``send-proxy``/``send-proxy-v2``) opens each connection to the
server with one header naming the client's address. ``--proxy-protocol`` (or a
``haproxy:``-prefixed ``--listen``) puts :class:`ProxyHeaderProtocol` in front of the listener:

* **the header is read before the game hears of the connection**: the server's protocol is only
  connected (and the connection counted against an address) once the header said whose it is.
  Twisted's own ``haproxy:`` endpoint (``twisted.protocols.haproxy.proxyEndpoint``) connects the
  wrapped protocol at once, so :meth:`getPeer` there still answers the balancer's address when
  the server asks at ``connectionMade``: every player would share the balancer's limits. Its
  parsers (``V1Parser``/``V2Parser``) are used here unchanged;
* **no valid header, no connection**: a connection whose first bytes are not a PROXY header, a
  garbled or oversized header, an address that is not an IP address, or no complete header
  within :data:`HEADER_TIMEOUT` seconds is closed without a word (logged, at most once per
  :data:`LOG_INTERVAL` with a count);
* a header without an address (v1 ``UNKNOWN``, v2 ``LOCAL``: the balancer's own health check)
  keeps the balancer's address, as the specification says;
* over TLS (``ssl:`` with the PROXY protocol) the header comes first, in clear, then the TLS
  handshake: the balancer passes TLS through, the header is its own.

It must only be enabled behind a balancer: the header is believed, so anyone else who can reach
the port could claim any address and step around every per-address limit.
"""

from __future__ import annotations

import socket
from typing import Any, cast

from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.interfaces import IAddress, IDelayedCall, IProtocol, IReactorTime
from twisted.internet.protocol import Protocol
from twisted.logger import Logger
from twisted.protocols import policies
from twisted.protocols.haproxy._exceptions import InvalidProxyHeader
from twisted.protocols.haproxy._v1parser import V1Parser
from twisted.protocols.haproxy._v2parser import V2Parser
from twisted.protocols.tls import TLSMemoryBIOFactory
from twisted.python.failure import Failure
from zope.interface import directlyProvides, providedBy

log = Logger(namespace="mineduel.proxy")

HEADER_TIMEOUT = 10.0
"""Seconds a connection has to send its whole PROXY header (a balancer sends it at once)."""

V1_MAX = 107
"""The longest v1 header, ``\\r\\n`` included (the specification's bound)."""

V2_MAX = 16 + 2048
"""The longest v2 header accepted: the addresses and a balancer's usual TLVs fit many times over;
a 64 KiB one (the format's limit) is no balancer's and is refused rather than buffered."""

LOG_INTERVAL = 10.0
"""At most one ``proxy_header_refused`` line per this many seconds (the rest are counted)."""

CLOSED = Failure(ConnectionError("closed"))

V1_PREFIX = b"PROXY "
V2_PREFIX = V2Parser.PREFIX


class BadHeader(ValueError):
    """What is wrong with a connection's first bytes (for the log)."""


def header_length(buffer: bytes) -> int | None:
    """How long the header at the start of ``buffer`` is, ``None`` while it may still be one;
    :class:`BadHeader` as soon as it cannot be."""
    if buffer[:1] == V2_PREFIX[:1]:
        head = buffer[: len(V2_PREFIX)]
        if head != V2_PREFIX[: len(head)]:
            raise BadHeader("not a PROXY header")
        if len(buffer) < 16:
            return None
        if buffer[12] & 0xF0 != 0x20:
            raise BadHeader("PROXY v2 with an unknown version")
        size = 16 + int.from_bytes(buffer[14:16], "big")
        if size > V2_MAX:
            raise BadHeader(f"PROXY v2 header of {size} bytes")
        return size if len(buffer) >= size else None
    head = buffer[: len(V1_PREFIX)]
    if head != V1_PREFIX[: len(head)]:
        raise BadHeader("not a PROXY header")
    end = buffer.find(b"\r\n", 0, V1_MAX)
    if end >= 0:
        return end + 2
    if len(buffer) >= V1_MAX:
        raise BadHeader("PROXY v1 header without its end")
    return None


def _checked(address: IAddress | None) -> IPv4Address | IPv6Address | None:
    """``address`` as a TCP address of its own IP family, written canonically, ``None`` when it is
    none; :class:`BadHeader` when it claims to be one and is not (Twisted checks no v1 address).
    ``inet_pton``/``inet_ntop``: a few µs, where ``ipaddress`` cost most of the header's time."""
    if not isinstance(address, (IPv4Address, IPv6Address)):
        return None
    family = socket.AF_INET if isinstance(address, IPv4Address) else socket.AF_INET6
    try:
        host = socket.inet_ntop(family, socket.inet_pton(family, address.host))
    except (OSError, ValueError, TypeError):
        raise BadHeader("a PROXY header whose address is not an IP address of its family") from None
    if not 0 <= address.port <= 65535:
        raise BadHeader("a PROXY header with a port out of range")
    return IPv4Address("TCP", host, address.port) if family == socket.AF_INET else IPv6Address("TCP", host, address.port)


def parse_header(header: bytes) -> tuple[IAddress | None, IAddress | None]:
    """The client's address and the one it dialled, as a whole header names them; ``(None, None)``
    when it names none (a health check: v1 ``UNKNOWN``, v2 ``LOCAL``, an unspecified or UNIX
    family); :class:`BadHeader` for anything else."""
    if header == b"PROXY UNKNOWN\r\n" or header.startswith(b"PROXY UNKNOWN "):
        return None, None  # valid v1 (the rest of the line is ignored), which Twisted's V1Parser refuses
    try:
        info = V2Parser.parse(header) if header.startswith(V2_PREFIX) else V1Parser.parse(header[:-2])
    except (InvalidProxyHeader, ValueError, KeyError, IndexError, UnicodeDecodeError) as exc:
        raise BadHeader(f"garbled PROXY header ({type(exc).__name__})") from None
    source = _checked(info.source)
    if source is None:
        return None, None  # the connection keeps the balancer's address
    return source, _checked(info.destination)


class ProxyHeaderProtocol(policies.ProtocolWrapper):
    """One connection: its PROXY header first, then the wrapped protocol with the named address."""

    factory: ProxyHeaderFactory

    def __init__(self, factory: ProxyHeaderFactory, wrappedProtocol: IProtocol) -> None:
        super().__init__(cast(Any, factory), wrappedProtocol)
        self._buffer = b""
        self._source: IAddress | None = None
        self._destination: IAddress | None = None
        self._ready = False
        self._refused = False
        self._timer: IDelayedCall | None = None

    def makeConnection(self, transport: Any) -> None:
        """Connect only this wrapper: the server's protocol waits for the header (module docstring)."""
        directlyProvides(self, providedBy(transport))
        cast(Any, Protocol.makeConnection)(self, transport)
        cast(Any, self.factory).registerProtocol(self)
        self._timer = self.factory.clock.callLater(self.factory.timeout, self._too_slow)

    def dataReceived(self, data: bytes) -> None:
        if self._ready:
            self.wrappedProtocol.dataReceived(data)
            return
        if self._refused:
            return
        self._buffer += data
        try:
            size = header_length(self._buffer)
            if size is None:
                return
            header, rest = self._buffer[:size], self._buffer[size:]
            self._source, self._destination = parse_header(header)
        except BadHeader as exc:
            self._refuse(str(exc))
            return
        self._buffer = b""
        self._ready = True
        self._cancel_timer()
        self.wrappedProtocol.makeConnection(cast(Any, self))
        if rest and not self.disconnecting:
            self.wrappedProtocol.dataReceived(rest)

    def getPeer(self) -> IAddress:
        if self._source is not None:
            return self._source
        assert self.transport is not None
        return self.transport.getPeer()

    def getHost(self) -> IAddress:
        """The address the client dialled (the balancer's), when the header says it."""
        if self._destination is not None:
            return self._destination
        assert self.transport is not None
        return self.transport.getHost()

    def connectionLost(self, reason: Failure = CLOSED) -> None:
        self._cancel_timer()
        cast(Any, self.factory).unregisterProtocol(self)
        wrapped: IProtocol | None = self.wrappedProtocol
        if self._ready and wrapped is not None:
            wrapped.connectionLost(reason)
        self.wrappedProtocol = cast(IProtocol, None)  # the reference cycle broken, as Twisted's wrapper does

    # ----- refusing --------------------------------------------------------------------------------------
    def _too_slow(self) -> None:
        self._timer = None
        if not self._ready:
            self._refuse(f"no PROXY header within {self.factory.timeout:g} s")

    def _refuse(self, why: str) -> None:
        self._refused = True
        self._cancel_timer()
        self._buffer = b""
        self.factory.refused(self.transport.getPeer() if self.transport is not None else None, why)
        if self.transport is not None:
            cast(Any, self.transport).abortConnection()

    def _cancel_timer(self) -> None:
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None


class ProxyHeaderFactory(policies.WrappingFactory):
    """Wraps a listener's factory: each connection reads its PROXY header first."""

    protocol = ProxyHeaderProtocol

    def __init__(self, wrapped: Any, *, clock: IReactorTime, timeout: float = HEADER_TIMEOUT) -> None:
        cast(Any, policies.WrappingFactory.__init__)(self, wrapped)
        self.clock = clock
        self.timeout = timeout
        self.refusals = 0  # in all (tests, the log)
        self._unlogged = 0
        self._logged_at: float | None = None

    def refused(self, peer: IAddress | None, why: str) -> None:
        """Count a refused connection; log it unless a line was written less than LOG_INTERVAL ago."""
        self.refusals += 1
        self._unlogged += 1
        now = self.clock.seconds()
        if self._logged_at is not None and now - self._logged_at < LOG_INTERVAL:
            return
        self._logged_at = now
        log.warn("proxy_header_refused peer={peer} why={why!r} count={count}",
                 peer=getattr(peer, "host", "?"), why=why, count=self._unlogged)
        self._unlogged = 0


class ProxyEndpoint:
    """A server endpoint whose connections start with a PROXY header (``--proxy-protocol``).

    Any stream endpoint is wrapped as is; an ``ssl:`` one listens on plain TCP with the header
    read first and TLS inside it (the balancer passes TLS through): Twisted's ``listenSSL`` would
    want the handshake first.
    """

    def __init__(self, reactor: Any, endpoint: Any, *, timeout: float = HEADER_TIMEOUT) -> None:
        self.reactor = reactor
        self.endpoint = endpoint
        self.timeout = timeout

    def listen(self, factory: Any) -> Any:
        from twisted.internet.defer import execute
        from twisted.internet.endpoints import SSL4ServerEndpoint

        if isinstance(self.endpoint, SSL4ServerEndpoint):
            e = self.endpoint
            inner = TLSMemoryBIOFactory(e._sslContextFactory, False, factory)  # the parsed ssl: string's parts
            wrapped = ProxyHeaderFactory(inner, clock=self.reactor, timeout=self.timeout)
            return execute(self.reactor.listenTCP, e._port, wrapped, backlog=e._backlog,
                           interface=e._interface)
        return self.endpoint.listen(ProxyHeaderFactory(factory, clock=self.reactor, timeout=self.timeout))
