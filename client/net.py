"""The client's networking: the only client module besides the entry point that imports Twisted.

It gives the :class:`~mineduel.client.online_client.OnlineClient` what it needs from the outside
world, all on the one reactor that also drives the frames (STYLE.md):

* :func:`tcp_connector` — a :data:`~mineduel.client.online_client.Connector` over TCP: newline-framed
  JSON lines (docs/PROTOCOL.md §1), ``pong`` answered at once, undecodable lines reported as garbage;
  with ``tls=True`` over TLS, the link opening only once the server's certificate passed its check;
* :func:`start_host` — "Host on this computer": the real server (``mineduel.server``) started inside
  this process and reactor, its database in the user's data folder, LAN discovery on;
* :func:`discover_servers` — "Find games on this network": UDP discovery (§12);
* :func:`make_services` — the three above plus the token store, as the app hands them to the screens.

Each line is decoded once, here (``codec.decode_server``), and handed inward as a typed message;
a line that breaks the protocol ends the link as *garbage* (a hostile server never crashes or
freezes the client); a message type this client does not know (a newer server) is skipped. Of
the server package only :mod:`mineduel.server.client` is imported.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from pathlib import Path

from twisted.internet.abstract import isIPAddress, isIPv6Address
from twisted.internet.defer import Deferred
from twisted.internet.endpoints import HostnameEndpoint, TCP4ClientEndpoint, TCP6ClientEndpoint, connectProtocol
from twisted.internet.interfaces import IHandshakeListener, IReactorCore, IStreamClientEndpoint
from twisted.protocols.basic import LineOnlyReceiver
from twisted.python.failure import Failure
from zope.interface import implementer

from mineduel.client.online_client import CONNECT_TIMEOUT, Connector, FoundServer, HostInfo, LinkListener, OnlineServices
from mineduel.client.tokens import TokenStore
from mineduel.server import client as server_client
from mineduel.shared.wire.codec import UnknownServerMessage, decode_server, encode_message
from mineduel.shared.wire.messages import BadMessage, ClientMessage, Ping, PongReply
from mineduel.shared.wire.names import DEFAULT_PORT, DEFAULT_UDP_PORT

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
            msg = decode_server(line)
        except UnknownServerMessage as exc:
            log.info("online: skipping a message this client does not know: %s", exc)
            return
        except BadMessage as exc:
            self._garbage = True
            self.listener.link_garbage(self.handle, str(exc))
            self.transport.loseConnection()
            return
        if isinstance(msg, Ping):
            self.transport.write(encode_message(PongReply()))  # at once, whatever the frame does
        self.listener.link_message(self.handle, msg)

    def lineLengthExceeded(self, line: bytes) -> None:
        self._garbage = True
        self.listener.link_garbage(self.handle, "line too long")
        self.transport.loseConnection()

    def connectionLost(self, reason: Failure = None) -> None:  # type: ignore[assignment]
        self.handle.proto = None
        detail = reason.getErrorMessage() if reason is not None else "closed"
        if self.tls and not self._secured:
            if not self.handle.closed:
                if server_client.is_tls_refusal(reason):
                    self.listener.link_refused(self.handle, detail)
                else:
                    self.listener.link_failed(self.handle, detail)
            return
        self.listener.link_closed(self.handle, detail)


class TcpLink:
    """One TCP connection (or an attempt at one)."""

    def __init__(self) -> None:
        self.proto: _LineLink | None = None
        self.attempt: Deferred[_LineLink] | None = None
        self.closed = False

    def send(self, message: ClientMessage) -> None:
        if self.proto is not None and self.proto.transport is not None:
            self.proto.transport.write(encode_message(message))

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


def tcp_connector(reactor: IReactorCore) -> Connector:
    """Connect with ``HostnameEndpoint`` (names, IPv4 and IPv6); outcomes go to the listener.

    ``tls``: TLS on top, the certificate checked against ``pin`` (its SHA-256) or else the system
    trust store and the host name (``mineduel.server.tls``); a failed check is ``link_refused``.
    """

    def connect(host: str, port: int, listener: LinkListener, *, tls: bool = False, pin: str | None = None) -> TcpLink:
        link = TcpLink()
        endpoint: IStreamClientEndpoint
        if isIPAddress(host):
            endpoint = TCP4ClientEndpoint(reactor, host, port, timeout=CONNECT_TIMEOUT)
        elif isIPv6Address(host):
            endpoint = TCP6ClientEndpoint(reactor, host, port, timeout=CONNECT_TIMEOUT)
        else:  # a name: resolved off the reactor thread, every address tried
            endpoint = HostnameEndpoint(reactor, host.encode("idna") if not host.isascii() else host, port, timeout=CONNECT_TIMEOUT)
        if tls:
            endpoint = server_client.secure_endpoint(endpoint, host, pin)
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


def start_host(reactor: IReactorCore, folder: Path, *, port: int = DEFAULT_PORT, udp_port: int | None = DEFAULT_UDP_PORT,
               interface: str = "0.0.0.0", public_host: str | None = None) -> HostInfo:  # noqa: S104 - a LAN host listens on all interfaces
    """Start the server in this reactor (Host on this computer); the database lives in ``folder``.

    If the default port is taken (another server on this machine), any free port is used.
    """
    folder.mkdir(parents=True, exist_ok=True)
    public = public_host or lan_address()
    handle = server_client.host_server(reactor, host=interface, port=port, udp_port=udp_port, db=str(folder / SERVER_DB),
                                       public_host=public, name=f"MINE DUEL ({socket.gethostname()[:40]})")
    return HostInfo(handle.port, public, handle.stop, handle.udp_port)


def discover_servers(reactor: IReactorCore, *, port: int = DEFAULT_UDP_PORT, timeout: float = 1.0,
                     targets: tuple[str, ...] = ("255.255.255.255", "127.0.0.1")) -> Callable[[Callable[[list[FoundServer]], None]], None]:
    """A function that asks the LAN for servers and calls back with what answered."""
    def run(done: Callable[[list[FoundServer]], None]) -> None:
        try:
            d = server_client.discover(reactor, port, timeout, targets)
        except Exception as exc:  # noqa: BLE001 - no UDP at all: an empty list, not a crash
            log.warning("discovery failed: %s", exc)
            done([])
            return
        d.addCallbacks(
            lambda found: done([FoundServer(s.host, s.port, s.name, s.open_rooms, s.protocol, s.tls, s.pin) for s in found]),
            lambda failure: done([]),
        )

    return run


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
