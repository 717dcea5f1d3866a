"""The one line client of the MINE DUEL protocol: tests, bots, benchmarks and tools share it.

This is the only server module a client may import (tests/test_architecture.py checks it). It
also offers what the game client needs of the server package besides talking to one —
:func:`secure_endpoint` and :func:`is_tls_refusal` for its own links, :func:`discover` for LAN
discovery, :func:`host_server` for *Host on this computer*, :func:`install_steady_clock`, and
:func:`in_process_server` (a whole server core without sockets: the screenshot tour, tests).

:class:`LineClient` frames lines, reads each server line once into its typed class
(:mod:`mineduel.shared.wire.messages`, checked field by field: a hostile server's malformed
line is counted in ``malformed`` and reported, never raised into the reactor), answers the
server's pings, and hands every message to a :class:`Listener` and to whoever waits for it.
Programs speak typed messages::

    client = await connect(reactor, "127.0.0.1", 47650)
    await client.hello()
    created = await client.request(m.CreateRoom(name="Bot"))     # -> m.RoomCreated
    start = await client.wait_for(m.MatchStart)                  # -> m.MatchStart

Scripts and tests may use the JSON spelling instead — a type name and fields in, the JSON
object as it arrived (already checked by its typed class) out — which also lets a test send
fields the typed requests cannot hold::

    created = await client.request("create_room", name="Bot")    # -> {"type": "room_created", ...}
    state = await client.wait_for("state")
    view = board.view_of(m.State.parse(state))                    # the typed class reads it again

Every received message is kept (``typed`` and, at the same index, ``messages``) unless the
client is built with ``keep=False`` (bots that only listen); :meth:`LineClient.wait_for` hands
out each one once, in arrival order, so a script never misses a message that arrived before it
asked.

Over TLS: ``connect(reactor, host, port, tls=True)`` checks the certificate against the system's
trust store and ``host``; ``pin=`` (the SHA-256 a ``mineduels://…?pin=`` link carries) accepts
that one certificate instead. Either way ``connect`` returns only after the handshake passed,
and raises :class:`TLSRefused` when it did not.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast, overload

from twisted.internet.abstract import isIPv6Address
from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.endpoints import TCP4ClientEndpoint, TCP6ClientEndpoint, connectProtocol
from twisted.internet.interfaces import IHandshakeListener, IStreamClientEndpoint, ITCPTransport
from twisted.logger import Logger
from twisted.protocols.basic import LineOnlyReceiver
from twisted.python.failure import Failure
from zope.interface import implementer

from mineduel.shared.wire import codec
from mineduel.shared.wire import messages as m
from mineduel.shared.wire.names import PROTOCOL_VERSION, ErrorCode

if TYPE_CHECKING:  # the in-process server's types, for annotations (the module loads only when asked for)
    from mineduel.server.inprocess import InProcessServer as InProcessServer
    from mineduel.server.inprocess import MemLink as MemLink
    from mineduel.server.inprocess import Peer as Peer

log = Logger(namespace="mineduel.client")

Json = m.Json
"""A server message as the JSON object it arrived as (the scripts' spelling)."""

T = TypeVar("T", bound=m.ServerMessage)

UNPARSED_ERRORS = (ErrorCode.RATE_LIMITED.value, ErrorCode.LINE_TOO_LONG.value)
"""Errors about a line the server did not parse, so they cannot carry its ``id``."""

MALFORMED_KEPT = 100
"""Malformed lines kept for inspection; a hostile server cannot grow the list past this."""


class ServerError(Exception):
    """The server answered a request with ``error``; ``code`` is its error code."""

    def __init__(self, error: m.Error, reply: Json | None = None) -> None:
        super().__init__(f"{error.code}: {error.message}")
        self.error = error
        self.code = error.code
        self.reply: Json = reply if reply is not None else error.wire()


class TLSRefused(ConnectionError):
    """The TLS handshake failed: the certificate did not match the pin or the trust store, or no TLS server."""


MAX_MOVES = 3
"""``moved`` followed in a row without a request succeeding, at most (PROTOCOL.md §18)."""


class MovedError(Exception):
    """A request was answered ``moved`` (PROTOCOL.md §18): another node serves the room; nothing changed.
    :func:`follow` reconnects there and asks again."""

    def __init__(self, moved: m.Moved) -> None:
        super().__init__(f"room {moved.room} is served by {moved.host}:{moved.port}")
        self.moved = moved


class BadMove(ConnectionError):
    """A ``moved`` this client will not follow: too many in a row, one that would leave TLS for
    plaintext (the token would travel in clear), or one naming another room or request."""


class Listener(Protocol):
    """Who hears every message of a :class:`LineClient` (the game client, a bot)."""

    def message_received(self, message: m.ServerMessage) -> None:
        """One checked message, in arrival order (after the client's own ping answer)."""

    def malformed_line(self, line: bytes, problem: str) -> None:
        """A line the protocol does not allow (or a type this client does not know): skipped."""


class _Waiter:
    """One pending :meth:`LineClient.wait_for`: its test and the deferred it fires."""

    __slots__ = ("as_json", "done", "test")

    def __init__(self, test: Callable[[m.ServerMessage, Json], bool], as_json: bool) -> None:
        self.test = test
        self.as_json = as_json
        self.done: Deferred[Any] = Deferred()


def _read(line: bytes) -> tuple[m.ServerMessage, Json]:
    """``codec.decode_server`` keeping the JSON object it read the message from (for scripts)."""
    try:
        obj = codec.decode(line)
    except codec.ProtocolError as exc:
        raise m.BadMessage(exc.message) from None
    return codec.parse_server(obj), obj


def _request_id(message: m.ServerMessage) -> m.RequestId | None:
    return getattr(message, "id", None)


def _matcher(
    kind: type[Any] | str | None, pred: Callable[[Any], bool] | None, as_json: bool
) -> Callable[[m.ServerMessage, Json], bool]:
    """What :meth:`LineClient.wait_for` waits for: a message of ``kind`` that ``pred`` accepts."""

    def test(message: m.ServerMessage, obj: Json) -> bool:
        if isinstance(kind, type):
            if not isinstance(message, kind):
                return False
        elif kind is not None and kind != message.TYPE:
            return False
        return pred is None or pred(obj if as_json else message)

    return test


@implementer(IHandshakeListener)
class LineClient(LineOnlyReceiver):
    """One connection to a server, speaking typed messages (or their JSON spelling, for scripts)."""

    delimiter = b"\n"
    MAX_LENGTH = 1 << 20

    def __init__(
        self, name: str = "mineduel-client/1", auto_pong: bool = True, *,
        listener: Listener | None = None, keep: bool = True,
    ) -> None:
        self.name = name
        self.auto_pong = auto_pong
        self.listener = listener
        self.keep = keep
        self.typed: list[m.ServerMessage] = []
        self.messages: list[Json] = []  # the same messages as JSON objects, index for index
        self.malformed: list[tuple[bytes, str]] = []
        self.malformed_count = 0
        self.welcome: m.Welcome | None = None
        self._taken: set[int] = set()
        self._waiters: list[_Waiter] = []
        self._ids = itertools.count(1)
        self.lost: Deferred[None] = Deferred()
        self.secured: Deferred[None] | None = None  # set by connect(tls=True): fires once the handshake passed
        self.connected_ = False
        # Where this connection goes, as connect() opened it (a moved is followed with the same settings).
        self.reactor: Any = None
        self.address: tuple[str, int] | None = None
        self.tls = False
        self.pin: str | None = None

    # ----- Twisted -------------------------------------------------------------------------
    def connectionMade(self) -> None:
        self.connected_ = True

    def lineReceived(self, line: bytes) -> None:
        try:
            message, obj = _read(line)
        except (ValueError, TypeError, KeyError, RecursionError) as exc:  # BadMessage, and a shape parse missed
            self._malformed(line, str(exc) or type(exc).__name__)
            return
        self.message_received(message, obj)

    def lineLengthExceeded(self, line: bytes) -> None:
        """A server line over ``MAX_LENGTH`` is no protocol line: reported, and the connection dropped."""
        self._malformed(line[:256], f"a line over {self.MAX_LENGTH} bytes")
        if self.transport is not None:
            self.transport.loseConnection()

    def handshakeCompleted(self) -> None:
        if self.secured is not None and not self.secured.called:
            self.secured.callback(None)

    def connectionLost(self, reason: Failure = Failure(ConnectionError("closed"))) -> None:  # noqa: B008
        self.connected_ = False
        if self.secured is not None and not self.secured.called:
            self.secured.errback(TLSRefused(f"TLS handshake failed: {reason.getErrorMessage()}"))
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter.done.errback(ConnectionError("connection closed"))
        if not self.lost.called:
            self.lost.callback(None)

    # ----- receiving -----------------------------------------------------------------------
    def message_received(self, message: m.ServerMessage, obj: Json) -> None:
        """Answer a ping, keep the message, tell the listener, then fire the first waiter it matches."""
        if self.auto_pong and isinstance(message, m.Ping):
            self.send(m.PongReply())
        index = len(self.typed)
        if self.keep:
            self.typed.append(message)
            self.messages.append(obj)
        if self.listener is not None:
            self.listener.message_received(message)
        for i, waiter in enumerate(self._waiters):
            if waiter.test(message, obj):
                del self._waiters[i]
                self._taken.add(index)
                waiter.done.callback(obj if waiter.as_json else message)
                return

    def _malformed(self, line: bytes, problem: str) -> None:
        self.malformed_count += 1
        if len(self.malformed) < MALFORMED_KEPT:
            self.malformed.append((line, problem))
        log.warn("malformed_server_line problem={problem} line={line!r}", problem=problem, line=line[:120])
        if self.listener is not None:
            self.listener.malformed_line(line, problem)

    # ----- sending -------------------------------------------------------------------------
    def send(self, type: m.ClientMessage | str, **fields: Any) -> None:  # noqa: A002 - ``send(**json)`` for scripts
        """One typed request as its line; or, for scripts and tests of refusals, the JSON object
        ``{"type": type, **fields}`` exactly as given."""
        if isinstance(type, str):
            self._wire().write(codec.encode({"type": type, **fields}))
        else:
            self._wire().write(codec.encode_message(type))

    def _wire(self) -> ITCPTransport:
        """The connection's transport (TCP, or TLS over it: both can abort)."""
        if self.transport is None:
            raise ConnectionError("not connected")
        return cast(ITCPTransport, self.transport)

    # ----- waiting -------------------------------------------------------------------------
    @overload
    def wait_for(self, kind: type[T], pred: Callable[[T], bool] | None = None) -> Deferred[T]: ...

    @overload
    def wait_for(self, kind: str | None = None, pred: Callable[[Json], bool] | None = None) -> Deferred[Json]: ...

    def wait_for(self, kind: type[T] | str | None = None, pred: Callable[[Any], bool] | None = None) -> Deferred[Any]:
        """The first not-yet-taken message of ``kind`` (a typed class, or a type name for the JSON
        spelling) that ``pred`` accepts, now or later; ``pred`` sees the same spelling."""
        as_json = not isinstance(kind, type)
        test = _matcher(kind, pred, as_json)
        for index, (message, obj) in enumerate(zip(self.typed, self.messages, strict=True)):
            if index not in self._taken and test(message, obj):
                self._taken.add(index)
                return succeed(obj if as_json else message)
        if not self.connected_:
            return fail(ConnectionError("connection closed"))
        waiter = _Waiter(test, as_json)
        self._waiters.append(waiter)
        return waiter.done

    @overload
    def last(self, kind: type[T]) -> T | None: ...

    @overload
    def last(self, kind: str) -> Json | None: ...

    def last(self, kind: type[T] | str) -> T | Json | None:
        """The most recent kept message of ``kind`` (taken or not), in the spelling ``kind`` asks for."""
        for message, obj in zip(reversed(self.typed), reversed(self.messages), strict=True):
            if isinstance(kind, type):
                if isinstance(message, kind):
                    return message
            elif kind == message.TYPE:
                return obj
        return None

    # ----- requests ------------------------------------------------------------------------
    @overload
    async def request(self, type: m.ClientMessage) -> m.ServerMessage: ...

    @overload
    async def request(self, type: str, **fields: Any) -> Json: ...

    async def request(self, type: m.ClientMessage | str, **fields: Any) -> m.ServerMessage | Json:  # noqa: A002
        """Send a request with a fresh ``id`` and await its reply (``error`` raises :class:`ServerError`,
        ``moved`` :class:`MovedError`: see :func:`follow`).

        A typed request gets the typed reply; a type name and fields (scripts) get the JSON object.
        """
        message = type  # named ``type`` so that ``request(**{"type": ..., ...})`` works for scripts
        rid = f"c{next(self._ids)}"
        after = len(self.typed)
        as_json = isinstance(message, str)

        def answers(reply: m.ServerMessage, obj: Json) -> bool:
            # A line refused before it was parsed (rate, length) gets an error without its id;
            # it answers the request that was waiting when it came (PROTOCOL.md §9).
            rid_of = _request_id(reply)
            return rid_of == rid or (
                isinstance(reply, m.Error) and rid_of is None and reply.code in UNPARSED_ERRORS
                and (not self.keep or any(x is reply for x in self.typed[after:]))
            )

        waiter = _Waiter(answers, as_json=False)
        if not self.connected_:
            raise ConnectionError("connection closed")
        self._waiters.append(waiter)
        if isinstance(message, str):
            self.send(message, id=rid, **fields)
        elif hasattr(message, "id"):
            self.send(dataclasses.replace(message, id=rid))  # type: ignore[arg-type]  # every class with an id field
        else:
            raise TypeError(f"{message.TYPE} gets no reply to wait for")
        reply: m.ServerMessage = await waiter.done
        obj = reply.wire() if as_json and not self.keep else self._json_of(reply)
        if isinstance(reply, m.Error):
            raise ServerError(reply, obj)
        if isinstance(reply, m.Moved):
            raise MovedError(reply)
        if isinstance(reply, m.Welcome):
            self.welcome = reply
        return obj if as_json else reply

    def _json_of(self, reply: m.ServerMessage) -> Json:
        for message, obj in zip(reversed(self.typed), reversed(self.messages), strict=True):
            if message is reply:
                return obj
        return reply.wire()

    async def hello(self) -> Json:
        """``hello`` with this client's name; the ``welcome`` (also kept typed in ``welcome``)."""
        return await self.request("hello", protocol=PROTOCOL_VERSION, client=self.name)

    async def spectate(self, code: str) -> m.SpectateState:
        """Watch room ``code`` (PROTOCOL.md §16): the room's first public view, once the ``ok`` came.

        Later views arrive as ``spectate_state`` messages (``wait_for(m.SpectateState)``, or the
        listener); a refusal raises :class:`ServerError` (``room_not_found``, ``spectating_off``, …).
        """
        earlier = [x for x in self.typed if isinstance(x, m.SpectateState)]  # views of an earlier watch
        first = self.wait_for(m.SpectateState, lambda s: not any(s is x for x in earlier))
        try:
            await self.request(m.Spectate(code))
        except BaseException:
            if not first.called:  # nothing will come for this request: forget the waiter quietly
                self._waiters = [w for w in self._waiters if w.done is not first]
            first.addErrback(lambda _: None)
            raise
        return await first

    async def live_rooms(self) -> Sequence[m.LiveRoom]:
        """The listed rooms with a match to watch now, most recently started first (PROTOCOL.md §16)."""
        reply = await self.request(m.LiveRoomsRequest())
        if not isinstance(reply, m.LiveRooms):
            raise m.BadMessage(f"live_rooms answered with {reply.TYPE}")
        return reply.rooms

    def close(self) -> Deferred[None]:
        self._wire().loseConnection()
        return self.lost

    def abort(self) -> Deferred[None]:
        """Drop the connection without a goodbye (like a crashed client)."""
        self._wire().abortConnection()
        return self.lost


async def connect(
    reactor: Any, host: str, port: int, name: str = "mineduel-client/1", *, tls: bool = False, pin: str | None = None,
    listener: Listener | None = None, keep: bool = True,
) -> LineClient:
    """Connect and return the client (``hello`` not sent yet); with ``tls``, once the handshake passed.

    ``pin`` (TLS only) is the server certificate's SHA-256 fingerprint: that certificate and no
    other is accepted. Without it the system trust store and the host name decide.
    """
    if pin is not None and not tls:
        raise ValueError("a pinned connection is a TLS connection")
    endpoint: IStreamClientEndpoint = (TCP6ClientEndpoint if isIPv6Address(host) else TCP4ClientEndpoint)(
        reactor, host, port, timeout=10
    )
    client = LineClient(name, listener=listener, keep=keep)
    client.reactor, client.address, client.tls, client.pin = reactor, (host, port), tls, pin
    if tls:
        from mineduel.server.tls import wrap_client_endpoint

        endpoint = wrap_client_endpoint(endpoint, host, pin)
        client.secured = Deferred()
    await connectProtocol(endpoint, client)
    if client.secured is not None:
        await client.secured
    return client


# ----- following moved (PROTOCOL.md §18) ------------------------------------------------------------


def check_move(client: LineClient, moved: m.Moved, request: m.ClientMessage, *, moves: int = 1,
               most: int = MAX_MOVES) -> None:
    """Refuse (:class:`BadMove`) a ``moved`` that ``request`` on ``client`` should not follow: the
    ``moves``-th in a row beyond ``most``, from TLS to plaintext, answering another request or room
    than ``request`` (a solicited ``moved``), or, unsolicited, followed by anything but ``resume``/``spectate``."""
    if moves > most:
        raise BadMove(f"moved {moves} times in a row without an answer: a broken or hostile cluster")
    if client.tls and not moved.tls:
        raise BadMove(f"moved from TLS to plaintext {moved.host}:{moved.port}: refused (the token would travel in clear)")
    kind = request.type.value if isinstance(request, m.MatchAction) else request.TYPE.value
    if moved.request is not None and moved.request != kind:
        raise BadMove(f"moved answers {moved.request!r}, not the {kind!r} sent")
    if moved.request is None and kind not in ("resume", "spectate"):
        raise BadMove(f"an unsolicited moved is followed by resume or spectate, not {kind!r}")
    room = getattr(request, "room", None)
    if not isinstance(room, str) or room.strip().upper() != moved.room:
        raise BadMove(f"moved names room {moved.room}, not {room!r}")


async def reconnect(client: LineClient, moved: m.Moved) -> LineClient:
    """Close ``client`` and connect to the node ``moved`` names (TLS with its pin when it says
    ``tls``), with the same name, listener and keeping; ``hello`` already answered."""
    if client.reactor is None:
        raise BadMove("this client was not opened by connect(): it cannot follow moved")
    if client.connected_:
        client.close()
    new = await connect(client.reactor, moved.host, moved.port, client.name, tls=moved.tls,
                        pin=moved.pin if moved.tls else None, listener=client.listener, keep=client.keep)
    await new.hello()
    return new


async def follow(client: LineClient, request: m.ClientMessage, *, moved: m.Moved | None = None,
                 most: int = MAX_MOVES) -> tuple[LineClient, m.ServerMessage]:
    """Send ``request`` and await its reply, following ``moved`` (PROTOCOL.md §18): close, connect
    to the node named, ``hello``, the same request again (a ``resume`` keeps its token: the token
    goes nowhere else). Returns the client that answered (``client`` itself when nobody moved) and
    the reply. ``moved``: an unsolicited one just received, followed first (``request`` is then
    ``resume`` or ``spectate``). More than ``most`` in a row, or one :func:`check_move` refuses:
    :class:`BadMove`, the last connection closed. A :class:`ServerError` is raised as by ``request``."""
    moves = 0
    while True:
        if moved is not None:
            moves += 1
            try:
                check_move(client, moved, request, moves=moves, most=most)
            except BadMove:
                if client.connected_:
                    client.close()
                raise
            client = await reconnect(client, moved)
            moved = None
        try:
            return client, await client.request(request)
        except MovedError as exc:
            moved = exc.moved


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
    port is used instead (another server on this machine). Its ``welcome`` says ``referee: "player"``
    (unless ``config`` says otherwise): the joining player is told that the host's computer referees.
    """
    from twisted.internet.error import CannotListenError

    from mineduel.server.config import Config
    from mineduel.server.service import open_storage, start_server

    settings = Config(**{"referee": "player", **config})
    storage = open_storage(settings)
    try:
        return start_server(reactor, settings, storage=storage)
    except CannotListenError:
        return start_server(reactor, settings.with_(port=0), storage=storage)


def install_steady_clock(reactor: Any) -> Any:
    """Make the reactor's clock monotonic (see ``server/clock.py``): deadlines ignore clock jumps."""
    from mineduel.server.clock import install_steady_clock as install

    return install(reactor)


def in_process_server(seed: int = 1, **config: Any) -> InProcessServer:
    """A whole server core without sockets, on a fake clock (``server/inprocess.py``): the game
    client's screenshot tour and tests connect to it; ``config`` are Config fields."""
    from mineduel.server.inprocess import InProcessServer

    return InProcessServer(seed=seed, **config)
