"""The client's networking: the only client module besides the entry point that imports Twisted.

It gives the :class:`~mineduel.client.online_client.OnlineClient` what it needs from the outside
world, all on the one reactor that also drives the frames (STYLE.md):

* :func:`tcp_connector` — a :class:`~mineduel.client.online_link.Connector` over TCP: the one line
  client of the server package (:class:`mineduel.server.client.LineClient`: newline-framed JSON
  lines, docs/PROTOCOL.md §1, each read once into its typed class, no history kept; a ``ping`` is
  answered by the session from the frame loop, so a window whose loop stopped answers none), the
  session hearing it through :class:`TcpLink`; with ``tls=True`` over TLS, the link opening only
  once the server's certificate passed its check;
* :func:`start_host` — "Host on this computer": the real server (``mineduel.server``) started inside
  this process and reactor, its database in the user's data folder, LAN discovery on;
* :func:`discover_servers` — "Find games on this network": UDP discovery (§12);
* :func:`make_services` — the three above plus the token store, as the app hands them to the screens.

Each line is decoded once, by the line client, and handed inward as a typed message; a line that
breaks the protocol (or is longer than :data:`MAX_LINE`) ends the link as *garbage* (a hostile
server never crashes or freezes the client); a message type this client does not know (a newer
server) is skipped. Of the server package only :mod:`mineduel.server.client` is imported.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from twisted.internet.abstract import isIPAddress, isIPv6Address
from twisted.internet.defer import Deferred
from twisted.internet.endpoints import HostnameEndpoint, TCP4ClientEndpoint, TCP6ClientEndpoint, connectProtocol
from twisted.internet.interfaces import IReactorCore, IStreamClientEndpoint
from twisted.python.failure import Failure

from mineduel.client.lan_address import LanAddresses, lan_addresses
from mineduel.client.online_client import FoundServer, HostInfo, LanRoom, OnlineServices
from mineduel.client.online_link import CONNECT_TIMEOUT, Connector, LinkListener
from mineduel.client.tokens import TokenStore
from mineduel.server import client as server_client
from mineduel.shared.wire import codec
from mineduel.shared.wire.messages import SERVER_MESSAGES, ClientMessage, ServerMessage
from mineduel.shared.wire.names import DEFAULT_PORT, DEFAULT_UDP_PORT

log = logging.getLogger(__name__)

MAX_LINE = 1 << 20  # server lines can be long (a match_end carries the whole record)
SERVER_DB = "mineduel-server.sqlite3"
CLIENT_NAME = "mine-duel"  # the line client's own name (the session sends its own hello)
CLOSED = Failure(ConnectionError("closed"))  # a connection lost without a reason given


# ----- TCP -----------------------------------------------------------------------------------------------------


def _newer_type(line: bytes) -> bool:
    """Whether a line the line client could not read is a well-formed message of a type this client
    does not know (a newer server: skipped), rather than garbage (read again only in that case)."""
    try:
        obj = codec.decode(line)
    except codec.ProtocolError:
        return False
    return obj.get("type") not in SERVER_MESSAGES


class TcpLink:
    """One TCP connection (or an attempt at one), as the session holds it; also the line client's
    :class:`~mineduel.server.client.Listener`, which turns its typed messages and malformed lines
    into the session's :class:`~mineduel.client.online_link.LinkListener` calls."""

    def __init__(self, listener: LinkListener) -> None:
        self.listener = listener
        self.proto: _LineLink | None = None
        self.attempt: Deferred[_LineLink] | None = None
        self.closed = False
        self.garbage = False  # the server broke the protocol: nothing more is heard from this link

    # ----- the session's side ------------------------------------------------------------------------
    def send(self, message: ClientMessage) -> None:
        if self.proto is not None and self.proto.transport is not None:
            self.proto.send(message)

    def close(self) -> None:
        self.closed = True
        if self.proto is not None and self.proto.transport is not None:
            self.proto.close()
        elif self.attempt is not None and not self.attempt.called:
            self.attempt.cancel()

    def abort(self) -> None:
        """Drop the connection without a goodbye (tests: a cut cable)."""
        if self.proto is not None and self.proto.transport is not None:
            self.proto.abort()

    # ----- server_client.Listener (the line client's side) --------------------------------------
    def message_received(self, message: ServerMessage) -> None:
        """A checked message (a ping too: the session answers it on its next frame)."""
        if not self.garbage:
            self.listener.link_message(self, message)

    def malformed_line(self, line: bytes, problem: str) -> None:
        """A newer server's message type is skipped; anything else (and a line too long) is garbage:
        the link is dropped and the lobby says *bad server*."""
        if self.garbage:
            return
        if _newer_type(line):
            log.info("online: skipping a message this client does not know: %s", problem)
            return
        self.garbage = True
        self.listener.link_garbage(self, problem)
        if self.proto is not None and self.proto.transport is not None:
            self.proto.close()


class _LineLink(server_client.LineClient):
    """The line client (framing, one decode per line; pings left to the session) plus when the session hears
    that the link opened or ended: over TLS only once the certificate passed, and a handshake
    that failed its check is ``link_refused``, never retried in plaintext."""

    MAX_LENGTH = MAX_LINE

    def __init__(self, handle: TcpLink, tls: bool = False) -> None:
        super().__init__(CLIENT_NAME, auto_pong=False, listener=handle, keep=False)
        self.handle = handle
        self.tls = tls
        self._secured = False

    def connectionMade(self) -> None:
        super().connectionMade()
        if not self.tls:  # over TLS the link opens once the certificate passed (handshakeCompleted)
            self.handle.listener.link_open(self.handle)

    def handshakeCompleted(self) -> None:
        super().handshakeCompleted()
        self._secured = True
        self.handle.listener.link_open(self.handle)

    def connectionLost(self, reason: Failure = CLOSED) -> None:
        super().connectionLost(reason)
        handle = self.handle
        handle.proto = None
        detail = reason.getErrorMessage()
        if self.tls and not self._secured:
            if not handle.closed:
                if server_client.is_tls_refusal(reason):
                    handle.listener.link_refused(handle, detail)
                else:
                    handle.listener.link_failed(handle, detail)
            return
        handle.listener.link_closed(handle, detail)


def tcp_connector(reactor: IReactorCore) -> Connector:
    """Connect with ``HostnameEndpoint`` (names, IPv4 and IPv6); outcomes go to the listener.

    ``tls``: TLS on top, the certificate checked against ``pin`` (its SHA-256) or else the system
    trust store and the host name (``mineduel.server.tls``); a failed check is ``link_refused``.
    """

    def connect(host: str, port: int, listener: LinkListener, *, tls: bool = False, pin: str | None = None) -> TcpLink:
        link = TcpLink(listener)
        endpoint: IStreamClientEndpoint
        if isIPAddress(host):
            endpoint = TCP4ClientEndpoint(reactor, host, port, timeout=CONNECT_TIMEOUT)
        elif isIPv6Address(host):
            endpoint = TCP6ClientEndpoint(reactor, host, port, timeout=CONNECT_TIMEOUT)
        else:  # a name: resolved off the reactor thread, every address tried
            name = host.encode("idna") if not host.isascii() else host
            endpoint = HostnameEndpoint(reactor, name, port, timeout=CONNECT_TIMEOUT)
        if tls:
            endpoint = server_client.secure_endpoint(endpoint, host, pin)
        proto = _LineLink(link, tls)

        def connected(p: _LineLink) -> None:
            link.proto = p
            if link.closed:
                p.close()

        def failed(failure: Failure) -> None:
            if not link.closed:
                listener.link_failed(link, failure.getErrorMessage())

        link.attempt = connectProtocol(endpoint, proto)
        link.attempt.addCallbacks(connected, failed)
        return link

    return connect


# ----- hosting and discovery ---------------------------------------------------------------------------------


def lan_address() -> str:
    """This machine's best address as others on the LAN would dial it (``client/lan_address.py``:
    from the interfaces, not a hostname lookup that may answer loopback; no packet is sent)."""
    return lan_addresses().best


def start_host(reactor: IReactorCore, folder: Path, *, port: int = DEFAULT_PORT, udp_port: int | None = DEFAULT_UDP_PORT,
               interface: str = "0.0.0.0", public_host: str | None = None) -> HostInfo:  # a LAN host listens on all interfaces
    """Start the server in this reactor (Host on this computer); the database lives in ``folder``.

    If the default port is taken (another server on this machine), any free port is used.
    """
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)  # a new folder is its owner's only (the DB holds live mines)
    found = lan_addresses() if public_host is None else LanAddresses((public_host,), False)
    if ":" not in interface:  # an IPv4 listener: an IPv6 address in a link would reach nothing
        v4 = tuple(a for a in found.addresses if ":" not in a)
        found = LanAddresses(v4, not v4)
    public = found.best
    handle = server_client.host_server(reactor, host=interface, port=port, udp_port=udp_port, db=str(folder / SERVER_DB),
                                       public_host=public, name=f"MINE DUEL ({socket.gethostname()[:40]})")
    return HostInfo(handle.port, public, handle.stop, handle.udp_port, found.addresses, found.only_loopback)


Discover = Callable[[Callable[[list[FoundServer]], None]], None]
"""Ask the LAN for servers; the callback gets what answered (an empty list when nothing could be asked)."""


def discover_servers(reactor: IReactorCore, *, port: int = DEFAULT_UDP_PORT, timeout: float = 1.0,
                     targets: tuple[str, ...] = ("255.255.255.255", "127.0.0.1")) -> Discover:
    """A function that asks the LAN for servers and calls back with what answered."""
    def run(done: Callable[[list[FoundServer]], None]) -> None:
        try:
            d = server_client.discover(reactor, port, timeout, targets)
        except Exception as exc:  # noqa: BLE001 - no UDP at all: an empty list, not a crash
            log.warning("discovery failed: %s", exc)
            done([])
            return
        d.addCallbacks(
            lambda found: done([f for f in map(listed, found) if f is not None]),
            lambda failure: done([]),
        )

    return run


def listed(s: Any) -> FoundServer | None:
    """A discovery answer as the home page lists it, or ``None``: anyone on the LAN may answer, so its
    name is cut to 40 printable characters (pygame cannot draw a NUL) and its numbers must make sense."""
    if not (type(s.port) is int and 0 < s.port < 65536 and type(s.open_rooms) is int and 0 <= s.open_rooms <= 1_000_000
            and type(s.protocol) is int and isinstance(s.host, str) and 0 < len(s.host) <= 255):
        return None
    name = "".join(c for c in str(s.name)[:40] if c.isprintable())
    rooms = tuple(LanRoom(r.room, "".join(c for c in str(r.host)[:32] if c.isprintable()),
                          getattr(r, "watchable", True) is not False)  # issue 19: a Watch greyed out, not refused
                  for r in tuple(getattr(s, "rooms", ()))[:8] if isinstance(r.room, str))
    instance = getattr(s, "instance", None)
    via = getattr(s, "via", None)  # a cluster node's answer: host and port are its front, checked (discovery.front_address)
    return FoundServer(s.host, s.port, name, s.open_rooms, s.protocol, s.tls is True, s.pin,
                       instance if isinstance(instance, str) else None, rooms, via if isinstance(via, str) else None)


def make_services(reactor: IReactorCore, data_dir: Path, *, client_name: str, clipboard: Callable[[str], bool]) -> OnlineServices:
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
