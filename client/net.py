"""The client's networking: the only client module besides the entry point that imports Twisted.

It gives the :class:`~mineduel.client.online_client.OnlineClient` what it needs from the outside
world, all on the one reactor that also drives the frames (STYLE.md):

* :func:`tcp_connector` — a :data:`~mineduel.client.online_client.Connector` over TCP: newline-framed
  JSON lines (docs/PROTOCOL.md §1), ``pong`` answered at once, undecodable lines reported as garbage;
  with ``tls=True`` over TLS, the link opening only once the server's certificate passed its check;
* :func:`start_host` — "Host on this computer": the real server (``mineduel.server``) started inside
  this process and reactor, its database in the user's data folder, LAN discovery on;
* :func:`discover_servers` — "Find games on this network": UDP discovery (§12);
* :func:`make_services` — the three above plus the token store, as the app hands them to the screens;
* :class:`InProcessServer` — a whole server core on a fake clock with no sockets, for screenshots
  and tests that need genuine server messages without the network.
"""

from __future__ import annotations

import itertools
import logging
import socket
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from twisted.internet.abstract import isIPAddress, isIPv6Address
from twisted.internet.endpoints import HostnameEndpoint, TCP4ClientEndpoint, TCP6ClientEndpoint, connectProtocol
from twisted.internet.error import CannotListenError
from twisted.internet.interfaces import IHandshakeListener
from twisted.protocols.basic import LineOnlyReceiver
from twisted.python.failure import Failure
from zope.interface import implementer

from mineduel.client.online_client import CONNECT_TIMEOUT, Connector, FoundServer, HostInfo, LinkListener, OnlineServices
from mineduel.client.tokens import TokenStore
from mineduel.shared.wire import protocol
log = logging.getLogger(__name__)

MAX_LINE = 1 << 20  # server lines can be long (a match_end carries the whole record)
SERVER_DB = "mineduel-server.sqlite3"


# ----- TCP -----------------------------------------------------------------------------------------------------


@implementer(IHandshakeListener)
class _LineLink(LineOnlyReceiver):
    delimiter = b"\n"
    MAX_LENGTH = MAX_LINE

    def __init__(self, listener: LinkListener, handle: TcpLink, tls: bool = False) -> None:
        self.listener = listener
        self.handle = handle
        self.tls = tls
        self._secured = False
        self._garbage = False

    def connectionMade(self) -> None:
        if not self.tls:  # over TLS the link opens once the certificate passed (handshakeCompleted)
            self.listener.link_open(self.handle)

    def handshakeCompleted(self) -> None:
        self._secured = True
        self.listener.link_open(self.handle)

    def lineReceived(self, line: bytes) -> None:
        if self._garbage:
            return
        try:
            msg = protocol.decode(line)
        except protocol.ProtocolError as exc:
            self._garbage = True
            self.listener.link_garbage(self.handle, exc.message)
            self.transport.loseConnection()
            return
        if msg.get("type") == "ping":
            self.transport.write(protocol.encode({"type": "pong"}))  # at once, whatever the frame does
        self.listener.link_message(self.handle, msg)

    def lineLengthExceeded(self, line: bytes) -> None:
        self._garbage = True
        self.listener.link_garbage(self.handle, "line too long")
        self.transport.loseConnection()

    def connectionLost(self, reason: Failure = None) -> None:  # type: ignore[assignment]
        self.handle.proto = None
        detail = reason.getErrorMessage() if reason is not None else "closed"
        if self.tls and not self._secured:
            from mineduel.server.tls import is_tls_refusal

            if not self.handle.closed:
                if is_tls_refusal(reason):
                    self.listener.link_refused(self.handle, detail)
                else:
                    self.listener.link_failed(self.handle, detail)
            return
        self.listener.link_closed(self.handle, detail)


class TcpLink:
    """One TCP connection (or an attempt at one)."""

    def __init__(self) -> None:
        self.proto: _LineLink | None = None
        self.attempt: Any = None
        self.closed = False

    def send(self, message: Mapping[str, Any]) -> None:
        if self.proto is not None and self.proto.transport is not None:
            self.proto.transport.write(protocol.encode(message))

    def close(self) -> None:
        self.closed = True
        if self.proto is not None and self.proto.transport is not None:
            self.proto.transport.loseConnection()
        elif self.attempt is not None and not self.attempt.called:
            self.attempt.cancel()

    def abort(self) -> None:
        """Drop the connection without a goodbye (tests: a cut cable)."""
        if self.proto is not None and self.proto.transport is not None:
            self.proto.transport.abortConnection()


def tcp_connector(reactor: Any) -> Connector:
    """Connect with ``HostnameEndpoint`` (names, IPv4 and IPv6); outcomes go to the listener.

    ``tls``: TLS on top, the certificate checked against ``pin`` (its SHA-256) or else the system
    trust store and the host name (``mineduel.server.tls``); a failed check is ``link_refused``.
    """

    def connect(host: str, port: int, listener: LinkListener, *, tls: bool = False, pin: str | None = None) -> TcpLink:
        link = TcpLink()
        endpoint: Any
        if isIPAddress(host):
            endpoint = TCP4ClientEndpoint(reactor, host, port, timeout=CONNECT_TIMEOUT)
        elif isIPv6Address(host):
            endpoint = TCP6ClientEndpoint(reactor, host, port, timeout=CONNECT_TIMEOUT)
        else:  # a name: resolved off the reactor thread, every address tried
            endpoint = HostnameEndpoint(reactor, host.encode("idna") if not host.isascii() else host, port, timeout=CONNECT_TIMEOUT)
        if tls:
            from mineduel.server.tls import wrap_client_endpoint

            endpoint = wrap_client_endpoint(endpoint, host, pin)
        proto = _LineLink(listener, link, tls)

        def connected(p: _LineLink) -> None:
            link.proto = p
            if link.closed:
                p.transport.loseConnection()

        def failed(failure: Failure) -> None:
            if not link.closed:
                listener.link_failed(link, failure.getErrorMessage())

        link.attempt = connectProtocol(endpoint, proto)
        link.attempt.addCallbacks(connected, failed)
        return link

    return connect


# ----- hosting and discovery ---------------------------------------------------------------------------------


def lan_address() -> str:
    """This machine's address as others on the LAN would dial it (no packet is sent to find it)."""
    try:
        candidates = socket.gethostbyname_ex(socket.gethostname())[2]
    except OSError:
        candidates = []
    for address in candidates:
        if not address.startswith("127."):
            return address
    return "127.0.0.1"


def start_host(reactor: Any, folder: Path, *, port: int = protocol.DEFAULT_PORT, udp_port: int | None = protocol.DEFAULT_UDP_PORT,
               interface: str = "0.0.0.0", public_host: str | None = None) -> HostInfo:
    """Start the server in this reactor (Host on this computer); the database lives in ``folder``.

    If the default port is taken (another server on this machine), any free port is used.
    """
    from mineduel.server.config import Config
    from mineduel.server.service import open_storage, start_server

    folder.mkdir(parents=True, exist_ok=True)
    public = public_host or lan_address()
    config = Config(host=interface, port=port, udp_port=udp_port, db=str(folder / SERVER_DB), public_host=public,
                    name=f"MINE DUEL ({socket.gethostname()[:40]})")
    storage = open_storage(config)
    try:
        handle = start_server(reactor, config, storage=storage)
    except CannotListenError:
        log.info("host: port %s is taken; using any free port", port)
        handle = start_server(reactor, config.with_(port=0), storage=storage)
    return HostInfo(handle.port, public, handle.stop, handle.udp_port)


def discover_servers(reactor: Any, *, port: int = protocol.DEFAULT_UDP_PORT, timeout: float = 1.0,
                     targets: tuple[str, ...] = ("255.255.255.255", "127.0.0.1")) -> Callable[[Callable[[list[FoundServer]], None]], None]:
    """A function that asks the LAN for servers and calls back with what answered."""
    from mineduel.server.discovery import discover

    def run(done: Callable[[list[FoundServer]], None]) -> None:
        try:
            d = discover(reactor, port, timeout, targets)
        except Exception as exc:  # noqa: BLE001 - no UDP at all: an empty list, not a crash
            log.warning("discovery failed: %s", exc)
            done([])
            return
        d.addCallbacks(
            lambda found: done([FoundServer(s.host, s.port, s.name, s.open_rooms, s.protocol, s.tls, s.pin) for s in found]),
            lambda failure: done([]),
        )

    return run


def make_services(reactor: Any, data_dir: Path, *, client_name: str, clipboard: Callable[[str], bool]) -> OnlineServices:
    """Everything the online screens use, on ``reactor``, storing files in ``data_dir``."""
    services = OnlineServices(
        connect=tcp_connector(reactor),
        tokens=TokenStore(data_dir),
        discover=discover_servers(reactor),
        clipboard=clipboard,
        client_name=client_name,
    )

    def host() -> HostInfo:
        if services.host is None:
            services.host = start_host(reactor, data_dir)
        return services.host

    services.start_host = host
    return services


# ----- an in-process server (no sockets, fake clock) -------------------------------------------------------------


class _MemLink:
    def __init__(self, server: InProcessServer, pid: int, listener: LinkListener) -> None:
        self.server = server
        self.pid = pid
        self.listener = listener
        self.open = True

    def send(self, message: Mapping[str, Any]) -> None:
        if self.open:
            self.server.core.line_received(self.pid, protocol.encode(message)[:-1])
            self.server.end_turn()

    def close(self) -> None:
        if self.open:
            self.open = False
            self.server.core.connection_lost(self.pid)
            self.server.end_turn()


class _Peer:
    """A bare scripted connection (the opponent in screenshots)."""

    def __init__(self, server: InProcessServer, pid: int) -> None:
        self.server = server
        self.pid = pid
        self.messages: list[dict[str, Any]] = []

    def send(self, **message: Any) -> list[dict[str, Any]]:
        before = len(self.messages)
        self.server.core.line_received(self.pid, protocol.encode(message)[:-1])
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
        import random

        from twisted.internet.task import Clock

        from mineduel.server.config import Config
        from mineduel.server.session import ServerCore
        from mineduel.server.storage import MemoryStorage

        self.clock = Clock()
        self.clock.advance(1_700_000_000.0)
        self._routes: dict[int, Callable[[dict[str, Any]], None]] = {}
        self._closers: dict[int, Callable[[], None]] = {}
        self._links: dict[int, _MemLink] = {}
        rng = random.Random(seed)
        settings = {"rate_per_second": 1e6, "rate_burst": 1e6, "idle_timeout": 1e9, "ping_interval": 5.0,
                    "public_host": "192.168.1.5", **config}
        self.core = ServerCore(clock=self.clock, randbytes=rng.randbytes, storage=MemoryStorage(), outbox=self,
                               config=Config(**settings))
        self.core.start()
        self._pids = itertools.count(1)

    # Outbox
    def send(self, peer: int, message: Mapping[str, Any]) -> None:
        route = self._routes.get(peer)
        if route is not None:
            route(protocol.decode(protocol.encode(message)[:-1]))  # exactly what the wire would carry

    def close(self, peer: int) -> None:
        closer = self._closers.pop(peer, None)
        self._routes.pop(peer, None)
        if closer is not None:
            closer()

    # Connecting
    def connector(self) -> Connector:
        def connect(host: str, port: int, listener: LinkListener) -> _MemLink:
            pid = next(self._pids)
            link = _MemLink(self, pid, listener)
            self._links[pid] = link
            self._routes[pid] = lambda msg: listener.link_message(link, msg)

            def closed() -> None:
                link.open = False
                listener.link_closed(link, "closed by the server")

            self._closers[pid] = closed
            self.core.connection_made(pid, "127.0.0.1", "192.168.1.5", protocol.DEFAULT_PORT)
            listener.link_open(link)
            return link

        return connect

    def peer(self, hello: bool = True) -> _Peer:
        pid = next(self._pids)
        peer = _Peer(self, pid)
        self._routes[pid] = peer.messages.append
        self.core.connection_made(pid, "10.0.0.2", "192.168.1.5", protocol.DEFAULT_PORT)
        if hello:
            peer.send(**protocol.hello("peer/1"))
        return peer

    def cut(self, link: Any) -> None:
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
