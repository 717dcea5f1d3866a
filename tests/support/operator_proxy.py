"""A dishonest operator between game clients and a server: a loopback line proxy that rewrites.

MINE DUEL's fairness proof must hold against the people who run the server (issue 14). This
proxy plays them: it listens on 127.0.0.1, connects every client it accepts to the real server,
and passes the newline-framed JSON lines (PROTOCOL.md §1) through one at a time, so a test can
rewrite any message the server sends (``match_end`` and its record, a ``get_record`` reply, a
``room``'s commitment, ...) before a real client sees it — which is exactly what an operator
who controls the server can do, whatever the server's own code says.

* ``down`` hooks (server → client) and ``up`` hooks (client → server) are per message type:
  ``hook(link, msg) -> None`` forwards the line byte for byte, a dict is sent instead (encoded
  again as one JSON line), :data:`DROP` swallows it. ``"*"`` hooks see every type, after the
  type's own hook.
* :meth:`OperatorProxy.retarget` points new connections at another port: a server restarted on
  a new port stays reachable at the address the clients know.
* :meth:`OperatorLink.abort` resets one client's connection (a cut cable).
* Every message seen is kept in :attr:`OperatorLink.heard` (direction, type, the message as it
  arrived), so a test can compare what the server said with what the client was shown.

Only Twisted, ``json`` and the standard library: the proxy knows MINE DUEL's framing, not its
rules (tests/support/forgeries.py builds the forged records).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal

from twisted.internet import defer
from twisted.internet.interfaces import IListeningPort
from twisted.internet.protocol import ClientFactory, Factory, Protocol
from twisted.python.failure import Failure

Direction = Literal["up", "down"]
"""``up``: client → server; ``down``: server → client."""


class _Drop:
    def __repr__(self) -> str:
        return "DROP"


DROP: Any = _Drop()
"""Returned by a hook: the message is not passed on."""

Hook = Callable[["OperatorLink", dict[str, Any]], Any]


def encode(msg: dict[str, Any]) -> bytes:
    """One JSON line, as a server writes it (compact, UTF-8)."""
    return json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


class _ClientEnd(Protocol):
    """The accepted socket: reads what the client sends."""

    def __init__(self, link: OperatorLink) -> None:
        self.link = link

    def connectionMade(self) -> None:
        self.transport.setTcpNoDelay(True)
        self.link.client_connected()

    def dataReceived(self, data: bytes) -> None:
        self.link.received("up", data)

    def connectionLost(self, reason: Failure = None) -> None:  # type: ignore[assignment]
        self.link.lost("up")


class _ServerEnd(Protocol):
    """Our socket to the server: reads what the server sends."""

    def __init__(self, link: OperatorLink) -> None:
        self.link = link

    def connectionMade(self) -> None:
        self.transport.setTcpNoDelay(True)
        self.link.server_connected(self)

    def dataReceived(self, data: bytes) -> None:
        self.link.received("down", data)

    def connectionLost(self, reason: Failure = None) -> None:  # type: ignore[assignment]
        self.link.lost("down")


class _ToServer(ClientFactory):
    def __init__(self, link: OperatorLink) -> None:
        self.link = link

    def buildProtocol(self, addr: Any) -> Protocol:
        return _ServerEnd(self.link)

    def clientConnectionFailed(self, connector: Any, reason: Failure) -> None:
        self.link.server_unreachable()


class OperatorLink:
    """One client connection through the proxy, with the lines seen in each direction."""

    def __init__(self, proxy: OperatorProxy) -> None:
        self.proxy = proxy
        self.client = _ClientEnd(self)
        self.server: _ServerEnd | None = None
        self._pending_up: list[bytes] = []  # client lines before the server socket is open
        self._partial = {"up": b"", "down": b""}
        self.heard: list[tuple[Direction, str, dict[str, Any]]] = []
        self.rewritten: list[tuple[Direction, str]] = []  # (direction, type) of each changed or dropped line
        self.seat: int | None = None  # the record seat, once a match_start or state names it
        self.gone = False
        self.closed: defer.Deferred[None] = defer.Deferred()

    # ----- what the link learnt ------------------------------------------------------------------
    def messages(self, kind: str, direction: Direction = "down") -> list[dict[str, Any]]:
        """Every message of ``kind`` seen in ``direction``, as it arrived (before any hook)."""
        return [msg for d, k, msg in self.heard if d == direction and k == kind]

    # ----- control -------------------------------------------------------------------------------
    def abort(self) -> None:
        """Reset both sockets (a path that failed loudly): the client reconnects by itself."""
        for end in (self.client, self.server):
            if end is not None and end.transport is not None:
                end.transport.abortConnection()

    # ----- plumbing ------------------------------------------------------------------------------
    def client_connected(self) -> None:
        host, port = self.proxy.target
        self.proxy.reactor.connectTCP(host, port, _ToServer(self), timeout=5)

    def server_connected(self, end: _ServerEnd) -> None:
        if self.gone:
            end.transport.loseConnection()
            return
        self.server = end
        pending, self._pending_up = self._pending_up, []
        for line in pending:
            end.transport.write(line)

    def server_unreachable(self) -> None:
        """No server at the target (it is restarting): the client sees its connection close."""
        if self.client.transport is not None:
            self.client.transport.loseConnection()

    def received(self, direction: Direction, data: bytes) -> None:
        buffer = self._partial[direction] + data
        *lines, rest = buffer.split(b"\n")
        self._partial[direction] = rest
        for line in lines:
            out = self._filter(direction, line + b"\n")
            if out is not None:
                self._write(direction, out)

    def _filter(self, direction: Direction, line: bytes) -> bytes | None:
        try:
            msg = json.loads(line)
        except ValueError:
            return line
        if not isinstance(msg, dict):
            return line
        kind = str(msg.get("type"))
        self.heard.append((direction, kind, json.loads(line)))  # a copy no hook can change
        if direction == "down" and kind in ("match_start", "state") and isinstance(msg.get("seat"), int):
            self.seat = msg["seat"]
        hooks = self.proxy.hooks[direction]
        changed = False
        for hook in (hooks.get(kind), hooks.get("*")):
            if hook is None:
                continue
            result = hook(self, msg)
            if result is DROP:
                self.rewritten.append((direction, kind))
                return None
            if result is not None:
                msg, changed = result, True
        if not changed:
            return line
        self.rewritten.append((direction, kind))
        return encode(msg)

    def _write(self, direction: Direction, line: bytes) -> None:
        if direction == "up":
            if self.server is None:
                self._pending_up.append(line)
            elif self.server.transport is not None:
                self.server.transport.write(line)
        elif self.client.transport is not None:
            self.client.transport.write(line)

    def lost(self, direction: Direction) -> None:
        """One socket closed: close the other after what it still has to write."""
        self.gone = True
        other = self.server if direction == "up" else self.client
        if other is not None and other.transport is not None:
            other.transport.loseConnection()
        if not self.closed.called:
            self.closed.callback(None)


class _Accepting(Factory):
    def __init__(self, proxy: OperatorProxy) -> None:
        self.proxy = proxy

    def buildProtocol(self, addr: Any) -> Protocol:
        link = OperatorLink(self.proxy)
        self.proxy.links.append(link)
        return link.client


class OperatorProxy:
    """Listens on 127.0.0.1 and forwards each connection, line by line, to ``target``.

    ``hooks["down"][type]`` / ``hooks["up"][type]`` rewrite messages (see the module docstring);
    :meth:`on` adds one.
    """

    def __init__(self, reactor: Any, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.reactor = reactor
        self.target = (target_host, target_port)
        self.hooks: dict[str, dict[str, Hook]] = {"up": {}, "down": {}}
        self.links: list[OperatorLink] = []
        self._port: IListeningPort | None = None

    def on(self, kind: str, hook: Hook, direction: Direction = "down") -> None:
        """Rewrite every ``kind`` message in ``direction`` with ``hook`` (``"*"``: every type)."""
        self.hooks[direction][kind] = hook

    def start(self) -> int:
        """Start listening on 127.0.0.1; returns the proxy's port."""
        self._port = self.reactor.listenTCP(0, _Accepting(self), interface="127.0.0.1")
        return self.port

    @property
    def port(self) -> int:
        assert self._port is not None, "start() first"
        return int(self._port.getHost().port)

    @property
    def address(self) -> str:
        """``127.0.0.1:port``: what a client types into Connect to..."""
        return f"127.0.0.1:{self.port}"

    def retarget(self, port: int, host: str = "127.0.0.1") -> None:
        """New connections go to ``host:port`` (a restarted server); open links stay as they are."""
        self.target = (host, port)

    def live(self) -> list[OperatorLink]:
        return [link for link in self.links if not link.gone]

    def heard(self, kind: str, direction: Direction = "down") -> list[dict[str, Any]]:
        """Every ``kind`` message seen on any link, in order of links then arrival."""
        return [msg for link in self.links for msg in link.messages(kind, direction)]

    def stop(self) -> defer.Deferred[Any]:
        """Stop listening and reset every link."""
        for link in self.links:
            link.abort()
        if self._port is None:
            return defer.succeed(None)
        port, self._port = self._port, None
        return defer.maybeDeferred(port.stopListening)
