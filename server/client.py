"""A small Twisted client for the MINE DUEL protocol: tests, bots and benchmarks build on it.

    client = await connect(reactor, "127.0.0.1", 47650)
    await client.hello()
    created = await client.request("create_room", name="Bot")
    ...
    state = await client.wait_for("state")
    view = protocol.view_from_state(state)
    move = random.choice(protocol.legal_moves(view))
    await client.request(**move.message())

Every received message is kept in ``messages``; :meth:`wait_for` hands out each one once,
in arrival order, so a script never misses a message that arrived before it asked.

Over TLS: ``connect(reactor, host, port, tls=True)`` checks the certificate against the system's
trust store and ``host``; ``pin=`` (the SHA-256 a ``mineduels://…?pin=`` link carries) accepts
that one certificate instead. Either way ``connect`` returns only after the handshake passed,
and raises :class:`TLSRefused` when it did not.

This is the one server module a client may import (tests/test_architecture.py checks it): it
also offers what the game client needs of the server package besides talking to one —
:func:`secure_endpoint` and :func:`is_tls_refusal` for its own links, :func:`discover` for LAN
discovery, :func:`host_server` for *Host on this computer*, and :func:`install_steady_clock`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from twisted.internet.abstract import isIPv6Address
from twisted.internet.defer import Deferred
from twisted.internet.endpoints import TCP4ClientEndpoint, TCP6ClientEndpoint, connectProtocol
from twisted.internet.interfaces import IHandshakeListener
from twisted.protocols.basic import LineOnlyReceiver
from twisted.python.failure import Failure
from zope.interface import implementer

from mineduel.shared.wire import protocol
Predicate = Callable[[dict[str, Any]], bool]


UNPARSED_ERRORS = ("rate_limited", "line_too_long")
"""Errors about a line the server did not parse, so they cannot carry its ``id``."""


class ServerError(Exception):
    """The server answered a request with ``error``; ``code`` is its error code."""

    def __init__(self, message: dict[str, Any]) -> None:
        super().__init__(f"{message.get('code')}: {message.get('message')}")
        self.code = message.get("code")
        self.reply = message


class TLSRefused(ConnectionError):
    """The TLS handshake failed: the certificate did not match the pin or the trust store, or no TLS server."""


@implementer(IHandshakeListener)
class LineClient(LineOnlyReceiver):
    """One connection to a server; replies ``pong`` to the server's pings automatically."""

    delimiter = b"\n"
    MAX_LENGTH = 1 << 20

    def __init__(self, name: str = "mineduel-client/1", auto_pong: bool = True) -> None:
        self.name = name
        self.auto_pong = auto_pong
        self.messages: list[dict[str, Any]] = []
        self._taken: set[int] = set()
        self._waiters: list[tuple[Predicate, Deferred[dict[str, Any]]]] = []
        self._ids = itertools.count(1)
        self.lost: Deferred[None] = Deferred()
        self.secured: Deferred[None] | None = None  # set by connect(tls=True): fires once the handshake passed
        self.connected_ = False

    # ----- Twisted -------------------------------------------------------------------------
    def connectionMade(self) -> None:
        self.connected_ = True

    def lineReceived(self, line: bytes) -> None:
        msg = protocol.decode(line)
        if msg["type"] == "ping" and self.auto_pong:
            self.send(type="pong")
        index = len(self.messages)
        self.messages.append(msg)
        for i, (pred, d) in enumerate(self._waiters):
            if pred(msg):
                del self._waiters[i]
                self._taken.add(index)
                d.callback(msg)
                return

    def handshakeCompleted(self) -> None:
        if self.secured is not None and not self.secured.called:
            self.secured.callback(None)

    def connectionLost(self, reason: Failure = None) -> None:  # type: ignore[assignment]
        self.connected_ = False
        if self.secured is not None and not self.secured.called:
            detail = reason.getErrorMessage() if reason is not None else "closed"
            self.secured.errback(TLSRefused(f"TLS handshake failed: {detail}"))
        waiters, self._waiters = self._waiters, []
        for _, d in waiters:
            d.errback(ConnectionError("connection closed"))
        if not self.lost.called:
            self.lost.callback(None)

    # ----- sending and waiting ---------------------------------------------------------------
    def send(self, **message: Any) -> None:
        self.transport.write(protocol.encode(message))

    def wait_for(self, kind: str | None = None, pred: Predicate | None = None) -> Deferred[dict[str, Any]]:
        """The first not-yet-taken message of type ``kind`` (and matching ``pred``), now or later."""

        def match(msg: dict[str, Any]) -> bool:
            return (kind is None or msg["type"] == kind) and (pred is None or pred(msg))

        for index, msg in enumerate(self.messages):
            if index not in self._taken and match(msg):
                self._taken.add(index)
                d: Deferred[dict[str, Any]] = Deferred()
                d.callback(msg)
                return d
        d = Deferred()
        if not self.connected_:
            d.errback(ConnectionError("connection closed"))
            return d
        self._waiters.append((match, d))
        return d

    def last(self, kind: str) -> dict[str, Any] | None:
        """The most recent message of type ``kind`` (taken or not)."""
        for msg in reversed(self.messages):
            if msg["type"] == kind:
                return msg
        return None

    async def request(self, type: str, **fields: Any) -> dict[str, Any]:  # noqa: A002
        """Send a request with a fresh ``id``; its reply (``error`` raises :class:`ServerError`)."""
        rid = f"c{next(self._ids)}"
        after = len(self.messages)

        def answers(m: dict[str, Any]) -> bool:
            # A line refused before it was parsed (rate, length) gets an error without its id;
            # it answers the request that was waiting when it came (PROTOCOL.md §9).
            return m.get("id") == rid or (
                m["type"] == "error" and "id" not in m and m.get("code") in UNPARSED_ERRORS
                and any(x is m for x in self.messages[after:])
            )

        reply = self.wait_for(pred=answers)
        self.send(type=type, id=rid, **fields)
        msg = await reply
        if msg["type"] == "error":
            raise ServerError(msg)
        return msg

    async def hello(self) -> dict[str, Any]:
        return await self.request(**protocol.hello(self.name))

    def close(self) -> Deferred[None]:
        self.transport.loseConnection()
        return self.lost

    def abort(self) -> Deferred[None]:
        """Drop the connection without a goodbye (like a crashed client)."""
        self.transport.abortConnection()
        return self.lost


async def connect(
    reactor: Any, host: str, port: int, name: str = "mineduel-client/1", *, tls: bool = False, pin: str | None = None
) -> LineClient:
    """Connect and return the client (``hello`` not sent yet); with ``tls``, once the handshake passed.

    ``pin`` (TLS only) is the server certificate's SHA-256 fingerprint: that certificate and no
    other is accepted. Without it the system trust store and the host name decide.
    """
    if pin is not None and not tls:
        raise ValueError("a pinned connection is a TLS connection")
    endpoint: Any = (TCP6ClientEndpoint if isIPv6Address(host) else TCP4ClientEndpoint)(reactor, host, port, timeout=10)
    client = LineClient(name)
    if tls:
        from mineduel.server.tls import wrap_client_endpoint

        endpoint = wrap_client_endpoint(endpoint, host, pin)
        client.secured = Deferred()
    await connectProtocol(endpoint, client)
    if client.secured is not None:
        await client.secured
    return client


# ----- what a game client needs of the server package (the only module it imports) -----------


def secure_endpoint(endpoint: Any, host: str, pin: str | None) -> Any:
    """``endpoint`` wrapped in TLS, checked by the trust store and ``host``, or by ``pin`` alone."""
    from mineduel.server.tls import wrap_client_endpoint

    return wrap_client_endpoint(endpoint, host, pin)


def is_tls_refusal(reason: Failure) -> bool:
    """Whether a lost connection was a refused TLS handshake (final: never retried in plaintext)."""
    from mineduel.server.tls import is_tls_refusal as refused

    return refused(reason)


def discover(reactor: Any, port: int, timeout: float, targets: tuple[str, ...]) -> Deferred[list[Any]]:
    """Ask the LAN for servers (docs/PROTOCOL.md §12); fires with the ``FoundServer``s that answered."""
    from mineduel.server.discovery import discover as ask

    return ask(reactor, port, timeout, targets)


def host_server(reactor: Any, **config: Any) -> Any:
    """Start a whole server in this reactor (*Host on this computer*); returns its ``ServerHandle``.

    ``config`` are :class:`~mineduel.server.config.Config` fields. If ``port`` is taken, any free
    port is used instead (another server on this machine).
    """
    from twisted.internet.error import CannotListenError

    from mineduel.server.config import Config
    from mineduel.server.service import open_storage, start_server

    settings = Config(**config)
    storage = open_storage(settings)
    try:
        return start_server(reactor, settings, storage=storage)
    except CannotListenError:
        return start_server(reactor, settings.with_(port=0), storage=storage)


def install_steady_clock(reactor: Any) -> Any:
    """Make the reactor's clock monotonic (see ``server/clock.py``): deadlines ignore clock jumps."""
    from mineduel.server.clock import install_steady_clock as install

    return install(reactor)
