"""Putting the server together: ``start_server`` for a running reactor, ``make_service`` for
Twisted's service framework. The game client's "Host on this computer" uses ``start_server``
in its own reactor.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

from twisted.application import service
from twisted.internet.defer import Deferred, DeferredList, maybeDeferred, succeed
from twisted.internet.interfaces import IListeningPort, IReactorTime
from twisted.logger import Logger

from mineduel.server.commits import ThreadedWriter
from mineduel.server.config import Config, default_db_path
from mineduel.server.discovery import DiscoveryServer
from mineduel.server.match import RandBytes
from mineduel.server.net import ServerFactory
from mineduel.server.session import ServerCore
from mineduel.server.storage import SQLiteStorage, Storage


log = Logger(namespace="mineduel.service")


@dataclass
class ServerHandle:
    """A running server: ``port``/``udp_port`` are the bound ports, ``stop()`` ends it cleanly."""

    core: ServerCore
    factory: ServerFactory
    storage: Storage
    tcp: IListeningPort
    udp: IListeningPort | None
    restored: Deferred[int]
    _stopping: Deferred[None] | None = field(default=None, repr=False)

    @property
    def port(self) -> int:
        return self.tcp.getHost().port

    @property
    def udp_port(self) -> int | None:
        return None if self.udp is None else self.udp.getHost().port

    def stop(self, reason: str = "shutdown") -> Deferred[None]:
        """Tell clients (``server_closing``), write the clock, close sockets and the database."""
        if self._stopping is not None:
            return self._stopping
        self.core.stop(reason)
        waits = [maybeDeferred(self.tcp.stopListening)]
        if self.udp is not None:
            waits.append(maybeDeferred(self.udp.stopListening))

        def close(_: Any) -> None:
            writer = self.core.commits.writer
            if writer is not None:
                writer.close()
            self.storage.close()

        self._stopping = DeferredList(waits, consumeErrors=True).addCallback(close)
        return self._stopping


def open_storage(config: Config) -> Storage:
    path = config.db if config.db is not None else default_db_path()
    return SQLiteStorage(path, synchronous=config.db_sync)


def start_server(
    reactor: Any,
    config: Config,
    *,
    clock: IReactorTime | None = None,
    randbytes: RandBytes | None = None,
    storage: Storage | None = None,
) -> ServerHandle:
    """Listen on TCP (and UDP for discovery), restore stored rooms in slices, return a handle.

    ``clock`` defaults to ``reactor``; tests pass a ``task.Clock`` to drive deadlines while the
    sockets stay real.
    """
    writer = None
    if storage is None:
        storage = open_storage(config)
        if config.commit_thread and isinstance(storage, SQLiteStorage) and storage.path != ":memory:":
            # Commits run on a worker thread with a second connection (server/commits.py).
            writer = ThreadedWriter(storage, reactor)
    factory = ServerFactory()
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
    tcp = reactor.listenTCP(config.port, factory, backlog=config.listen_backlog, interface=config.host)
    udp = None
    if config.udp_port is not None:

        def describe() -> dict[str, Any]:
            return {
                "name": config.name,
                "version": config.version,
                "port": tcp.getHost().port,
                "open_rooms": core.rooms.open_rooms(),
            }

        try:
            udp = reactor.listenUDP(config.udp_port, DiscoveryServer(describe), interface=config.host)
        except Exception as exc:  # discovery is optional: the game works without it
            log.warn("discovery_unavailable port={port} error={error!r}", port=config.udp_port, error=str(exc))
    restored = core.rooms.restore_all()
    core.start()
    handle = ServerHandle(core, factory, storage, tcp, udp, restored)
    log.info(
        "listening tcp={tcp} udp={udp} host={host} name={name!r} db={db}",
        tcp=handle.port, udp=handle.udp_port, host=config.host, name=config.name,
        db=getattr(storage, "path", type(storage).__name__),
    )
    return handle


class GameService(service.Service):
    """The server as a Twisted service (for ``twistd``-style deployment)."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.handle: ServerHandle | None = None

    def startService(self) -> None:
        from twisted.internet import reactor

        super().startService()
        self.handle = start_server(reactor, self.config)

    def stopService(self) -> Deferred[None]:
        super().stopService()
        if self.handle is None:
            return succeed(None)
        return self.handle.stop()


def make_service(config: Config) -> service.MultiService:
    """A MultiService holding the game server; start it with an application or ``startService``."""
    top = service.MultiService()
    GameService(config).setServiceParent(top)
    return top
