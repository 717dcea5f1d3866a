"""Putting the server together: ``start_server`` for a running reactor, ``make_service`` for
Twisted's service framework. The game client's "Host on this computer" uses ``start_server``
in its own reactor.
"""

from __future__ import annotations

import secrets
import socket
from dataclasses import dataclass, field
from typing import Any

from twisted.application import service
from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.defer import Deferred, DeferredList, maybeDeferred, succeed
from twisted.internet.interfaces import IListeningPort, IReactorTime
from twisted.logger import Logger
from twisted.python.failure import Failure

from mineduel.server import descriptors
from mineduel.server.cluster import NodeAddress, is_postgres_dsn
from mineduel.server.commits import ThreadedWriter
from mineduel.server.config import Config, default_db_path
from mineduel.server.discovery import MAX_LISTED, DiscoveryServer
from mineduel.server.match import RandBytes
from mineduel.server.net import ListenerFactory, ServerFactory
from mineduel.server.room import Room
from mineduel.server.session import ServerCore
from mineduel.server.storage import SQLiteStorage, Storage
from mineduel.server.tls import ListenError, ListenSpec, listen_spec, make_endpoint
from mineduel.shared.wire import links

log = Logger(namespace="mineduel.service")


def bound_port(listener: IListeningPort) -> int | None:
    """The port ``listener`` is bound to; None for one without a port (a ``unix:`` socket)."""
    address = listener.getHost()
    return address.port if isinstance(address, IPv4Address | IPv6Address) else None


def _tcp_port(listener: IListeningPort) -> int:
    port = bound_port(listener)
    if port is None:
        raise ValueError(f"{listener!r} is not bound to a TCP port")
    return port


@dataclass
class ServerHandle:
    """A running server: ``port``/``udp_port`` are the bound ports, ``stop()`` ends it cleanly.

    ``listeners[i]`` listens on ``specs[i]`` (``--listen``, in order); ``port``, ``tls`` and
    ``pin`` describe the first, the one LAN discovery advertises.
    """

    core: ServerCore
    factory: ServerFactory
    storage: Storage
    listeners: list[IListeningPort]
    udp: IListeningPort | None
    restored: Deferred[int]
    specs: list[ListenSpec] = field(default_factory=list)
    fds: descriptors.Plan | None = None  # what the start found and did about open files
    reserve: descriptors.Reserve | None = field(default=None, repr=False)
    refusals: descriptors.RefusalLog | None = field(default=None, repr=False)
    _stopping: Deferred[None] | None = field(default=None, repr=False)

    @property
    def tcp(self) -> IListeningPort:
        return self.listeners[0]

    @property
    def port(self) -> int:
        return _tcp_port(self.tcp)

    @property
    def ports(self) -> list[int]:
        return [_tcp_port(listener) for listener in self.listeners]

    @property
    def tls(self) -> bool:
        return bool(self.specs) and self.specs[0].tls

    @property
    def pin(self) -> str | None:
        """The first listener's certificate fingerprint (TLS), as pinned links carry it."""
        return self.specs[0].pin if self.specs else None

    @property
    def udp_port(self) -> int | None:
        return None if self.udp is None else bound_port(self.udp)

    def listening(self) -> dict[str, Any]:
        """The bound ports as the command-line server prints them, one JSON object (HOSTING.md):
        ``{"event":"listening","tcp":N,"udp":M|null,"endpoints":[{"endpoint","port","tls"}, …]}``."""
        return {
            "event": "listening",
            "tcp": bound_port(self.tcp),
            "udp": self.udp_port,
            "endpoints": [
                {"endpoint": spec.description, "port": bound_port(listener), "tls": spec.tls}
                for spec, listener in zip(self.specs, self.listeners, strict=True)
            ],
        }

    def stop(self, reason: str = "shutdown") -> Deferred[None]:
        """Tell clients (``server_closing``), write the clock, close sockets and the database."""
        if self._stopping is not None:
            return self._stopping
        self.core.stop(reason)
        waits = [maybeDeferred(listener.stopListening) for listener in self.listeners]
        if self.udp is not None:
            waits.append(maybeDeferred(self.udp.stopListening))

        def close(_: Any) -> None:
            writer = self.core.commits.writer
            if writer is not None:
                writer.close()
            self.storage.close()
            if self.refusals is not None:
                self.refusals.stop()
            if self.reserve is not None:
                self.reserve.close()

        self._stopping = DeferredList(waits, consumeErrors=True).addCallback(close)
        return self._stopping


def _listen_now(endpoint: Any, factory: ServerFactory, spec: ListenSpec) -> IListeningPort:
    """Listen on ``endpoint`` before returning (TCP, TLS and UNIX endpoints do it at once)."""
    outcome: list[Any] = []
    pending = endpoint.listen(ListenerFactory(factory, tls=spec.tls, pin=spec.pin))
    pending.addBoth(outcome.append)
    if not outcome:
        pending.cancel()
        raise ListenError(f"--listen {spec.description!r} does not start listening at once: not supported")
    result = outcome[0]
    if isinstance(result, Failure):
        result.raiseException()
    return result  # type: ignore[no-any-return]


def advertised(config: Config, listener: IListeningPort, spec: ListenSpec) -> NodeAddress:
    """Where clients reach this node (``--advertise``, else ``--public-host``/``--host`` if it names
    one address, else the machine's name; the first listener's port, TLS and pin)."""
    if config.advertise is not None:
        host, port = config.advertise
    else:
        host = config.public_host or (config.host if config.host not in ("", "0.0.0.0", "::") else socket.gethostname())
        port = _tcp_port(listener)
    return NodeAddress(host, port, spec.tls, spec.pin, config.node or "")


def open_storage(config: Config) -> Storage:
    path = config.db if config.db is not None else default_db_path()
    if is_postgres_dsn(path):  # issue 21: docs/CLUSTER.md
        try:
            from mineduel.server.storage_pg import PostgresStorage
        except ImportError as exc:
            raise RuntimeError(f"--db postgresql://… needs psycopg: pip install 'mine-duel[postgres]' ({exc})") from exc
        return PostgresStorage(path, node=config.node)
    return SQLiteStorage(path, synchronous=config.db_sync)


def start_server(
    reactor: Any,
    config: Config,
    *,
    clock: IReactorTime | None = None,
    randbytes: RandBytes | None = None,
    storage: Storage | None = None,
    fd_shortfall: descriptors.Shortfall = "lower",
    fd_log_interval: float = descriptors.LOG_INTERVAL,
) -> ServerHandle:
    """Listen on every endpoint (and UDP for discovery), restore stored rooms in slices, return a handle.

    ``clock`` defaults to ``reactor``; tests pass a ``task.Clock`` to drive deadlines while the
    sockets stay real. A bad endpoint string or an unreadable certificate raises
    :class:`~mineduel.server.tls.ListenError` before anything is opened; a port in use raises
    ``CannotListenError`` with nothing left listening.

    Open files (``server/descriptors.py``): the soft limit is raised until ``max_connections``
    fit; when the hard limit cannot hold them, ``fd_shortfall="refuse"`` (the command-line
    server) raises :class:`~mineduel.server.descriptors.DescriptorLimitError` with nothing left
    open, ``"lower"`` (a game hosting) serves fewer connections. Each listening socket is guarded
    so that connections the process has no descriptor for get ``too_many_connections``.
    """
    specs = [listen_spec(description, config.listen_backlog) for description in config.endpoints()]
    endpoints = [make_endpoint(reactor, spec) for spec in specs]
    factory = ServerFactory()
    listeners: list[IListeningPort] = []
    try:
        for spec, endpoint in zip(specs, endpoints, strict=True):
            listeners.append(_listen_now(endpoint, factory, spec))
    except BaseException:
        for listener in listeners:
            listener.stopListening()
        raise
    writer = None
    opened = storage is None
    if storage is None:
        try:
            storage = open_storage(config)
        except BaseException:
            for listener in listeners:
                listener.stopListening()
            raise
        if config.commit_thread and isinstance(storage, SQLiteStorage) and storage.path != ":memory:":
            # Commits run on a worker thread with a second connection (server/commits.py).
            writer = ThreadedWriter(storage, reactor)
    # Still to open besides connections: the discovery socket, a commit thread's database
    # connection and its WAL files, the accept reserve.
    extra = (config.udp_port is not None) + (3 if writer is not None else 0) + 1
    try:
        fds = descriptors.plan(config.max_connections, extra=extra, shortfall=fd_shortfall)
    except descriptors.DescriptorLimitError:
        for listener in listeners:
            listener.stopListening()
        if writer is not None:
            writer.close()
        if opened:
            storage.close()
        raise
    if fds.lowered:
        config = config.with_(max_connections=fds.max_connections)
    descriptors.describe(fds)
    core = ServerCore(
        clock=clock or reactor,
        randbytes=randbytes or secrets.token_bytes,
        storage=storage,
        outbox=factory,
        config=config,
        turns=reactor,
        writer=writer,
    )
    factory.core = core
    first, first_spec = listeners[0], specs[0]
    first_pin = first_spec.pin
    udp = None
    if config.udp_port is not None:
        instance = secrets.token_hex(8)  # one per start: a client lists it once (not randbytes: codes stay as seeded)

        def describe() -> dict[str, Any]:
            answer: dict[str, Any] = {
                "name": config.name,
                "version": config.version,
                "port": bound_port(first),
                "open_rooms": core.rooms.open_rooms(),
                "tls": first_spec.tls,
                "id": instance,
                "rooms": [_listed(core.rooms.rooms, code, name) for code, name in core.rooms.lobby.listed_rooms(MAX_LISTED)],
            }
            if first_pin is not None:
                answer["pin"] = first_pin
            if config.front is not None:  # a cluster node: players dial the front (PROTOCOL.md §12, issue 21)
                answer["front"] = {"host": config.front[0], "port": config.front[1], "tls": first_spec.tls,
                                   "pin": first_pin}
            return answer

        try:
            udp = reactor.listenUDP(config.udp_port, DiscoveryServer(describe), interface=config.host)
        except Exception as exc:  # noqa: BLE001 - discovery is optional: the game works without it
            log.warn("discovery_unavailable port={port} error={error!r}", port=config.udp_port, error=str(exc))
    reserve = descriptors.Reserve()
    refusals = descriptors.RefusalLog(reactor, fd_log_interval)
    for spec, listener in zip(specs, listeners, strict=True):
        descriptors.guard(listener, tls=spec.tls, reserve=reserve, report=refusals, clock=reactor)
    cluster = getattr(storage, "cluster", None)  # PostgreSQL: this server is a node (docs/CLUSTER.md)
    if cluster is not None:
        from mineduel.server.cluster_node import ClusterNode

        # Started before the restore: a room of its previous run comes back with its time given back.
        ClusterNode(core, cluster, clock or reactor, advertise=advertised(config, first, first_spec),
                    front=None if config.front is None else NodeAddress(*config.front, first_spec.tls, first_spec.pin),
                    ).start()
    restored = core.rooms.restore_all()
    core.start()
    handle = ServerHandle(core, factory, storage, listeners, udp, restored, specs, fds, reserve, refusals)
    log.info(
        "listening tcp={tcp} udp={udp} host={host} name={name!r} db={db}",
        tcp=bound_port(first), udp=handle.udp_port, host=config.host, name=config.name,
        db=getattr(storage, "path", type(storage).__name__),
    )
    for spec, listener in zip(specs, listeners, strict=True):
        port = bound_port(listener)  # None for a unix: socket
        log.info("endpoint {endpoint} port={port} tls={tls}", endpoint=spec.description, port=port, tls=spec.tls)
        if spec.pin is not None and port is not None:  # a pin comes with ssl:, always a TCP port
            # What a host shares for a self-signed certificate: the pinned link (docs/HOSTING.md).
            example = links.invite_link(config.public_host or "HOST", port, "CODE", tls=True, pin=spec.pin)
            log.info("tls_certificate port={port} sha256={pin} pinned_link={link}", port=port, pin=spec.pin, link=example)
    return handle


class GameService(service.Service):
    """The server as a Twisted service (for ``twistd``-style deployment)."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.handle: ServerHandle | None = None

    def startService(self) -> None:
        from twisted.internet import reactor

        super().startService()  # type: ignore[no-untyped-call]  # Twisted's Service is unannotated
        self.handle = start_server(reactor, self.config)

    def stopService(self) -> Deferred[None]:
        super().stopService()  # type: ignore[no-untyped-call]  # Twisted's Service is unannotated
        if self.handle is None:
            return succeed(None)
        return self.handle.stop()


def make_service(config: Config) -> service.MultiService:
    """A MultiService holding the game server; start it with an application or ``startService``."""
    top = service.MultiService()
    GameService(config).setServiceParent(top)  # type: ignore[no-untyped-call]  # Twisted's Service is unannotated
    return top


def _listed(rooms: dict[str, Room], code: str, name: str) -> dict[str, Any]:
    """A LAN room entry (PROTOCOL.md §12): ``watchable`` only as false, for a room that refuses
    spectators (so a client greys its Watch out); otherwise the same bytes as before."""
    room = rooms.get(code)
    if room is not None and not room.watchable:
        return {"room": code, "host": name, "watchable": False}
    return {"room": code, "host": name}
