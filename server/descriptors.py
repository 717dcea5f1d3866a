"""File descriptors: enough for ``--max-connections`` at start, a clean refusal when they run out.

Every connection holds one descriptor. At start (:func:`plan`) the server counts the
descriptors it already holds (database, listening sockets, the reactor's own), adds what it
still opens (discovery, a commit thread's database connection, the reserve below) and a margin,
raises its soft ``RLIMIT_NOFILE`` towards the hard limit until ``max_connections`` fit, and says
so in one log line. When even the hard limit cannot hold them, a dedicated server refuses to
start (``refuse``: an operator asked for that many) and a server a game hosts lowers
``max_connections`` to what fits (``lower``: two players need a handful). Then the 2001st
connection gets the core's ``too_many_connections`` long before ``accept`` can fail.

Descriptors may still run out (another process fills the system table, ``ENFILE``; an operator
lowers the limit of the running process). Twisted's ``tcp.Port`` then closes each connection it
cannot serve without a word and logs three lines per connection. :class:`AcceptGuard` stands in
for the listening socket Twisted accepts from: on ``EMFILE``/``ENFILE`` it closes a reserve
descriptor, accepts each waiting connection into the freed slot, writes it the
``too_many_connections`` line (nothing over TLS: it would not be read), closes it, re-opens the
reserve, and logs one line per interval however many it refused.
"""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from twisted.internet import tcp
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import Logger

from mineduel.shared.wire import codec
from mineduel.shared.wire import messages as m
from mineduel.shared.wire.names import ErrorCode

try:
    import resource
except ImportError:  # pragma: no cover - Windows: no descriptor limit of this kind
    resource = None  # type: ignore[assignment]

log = Logger(namespace="mineduel.descriptors")

MARGIN = 32
"""Descriptors kept free beyond the connections: SQLite's temporary files, a TLS handshake's
reads of nothing, DNS, log rotation, the moment a refused connection is still being closed."""

LOG_INTERVAL = 10.0
"""At most one ``out_of_descriptors`` line per this many seconds."""

ACCEPTS_PER_REFUSAL = 256
"""Connections accepted and refused per readable event (the rest wait for the next one)."""

Shortfall = Literal["refuse", "lower"]


class DescriptorLimitError(RuntimeError):
    """The open-file limit cannot hold ``max_connections`` (and the policy is ``refuse``)."""


@dataclass(frozen=True)
class Plan:
    """What :func:`plan` found and did. ``None`` fields: the platform has no such limit."""

    soft_before: int | None
    soft: int | None
    hard: int | None
    open_now: int
    needed: int  # descriptors for everything, max_connections included
    max_connections: int  # what the server will serve (lowered under ``lower`` when short)
    asked: int  # what it was asked to serve

    @property
    def lowered(self) -> bool:
        return self.max_connections < self.asked


def open_descriptors() -> int:
    """Descriptors this process holds now (``/proc/self/fd`` or ``/dev/fd``; a guess elsewhere)."""
    for folder in ("/proc/self/fd", "/dev/fd"):
        try:
            return max(0, len(os.listdir(folder)) - 1)  # listdir's own descriptor
        except OSError:
            continue
    return 16  # pragma: no cover - no descriptor folder: a typical small process


def _getrlimit() -> tuple[int, int]:
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def _setrlimit(soft: int, hard: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _unlimited(value: int) -> bool:
    return resource is not None and value == resource.RLIM_INFINITY


def plan(
    max_connections: int,
    *,
    extra: int,
    shortfall: Shortfall,
    getrlimit: Callable[[], tuple[int, int]] | None = None,
    setrlimit: Callable[[int, int], None] | None = None,
    open_now: int | None = None,
) -> Plan:
    """Raise the soft limit until ``max_connections`` fit (never past the hard limit).

    ``extra``: descriptors the server opens after this call besides connections. The limit
    functions and the count are injectable for tests. Raises :class:`DescriptorLimitError`
    under ``refuse`` when the hard limit is too low; under ``lower`` the plan's
    ``max_connections`` is what fits (at least 1).
    """
    held = open_descriptors() if open_now is None else open_now
    needed = held + extra + MARGIN + max_connections
    if getrlimit is None:
        if resource is None:  # pragma: no cover - Windows
            return Plan(None, None, None, held, needed, max_connections, max_connections)
        getrlimit = _getrlimit
    if setrlimit is None:
        setrlimit = _setrlimit
    soft_before, hard = getrlimit()
    soft = soft_before
    if not _unlimited(soft) and soft < needed:
        target = needed if _unlimited(hard) else min(hard, needed)
        if target > soft:
            try:
                setrlimit(target, hard)
                soft = target
            except (ValueError, OSError) as exc:  # e.g. macOS refuses more than OPEN_MAX
                log.warn("descriptors_raise_failed soft={soft} wanted={wanted} error={error!r}",
                         soft=soft, wanted=target, error=str(exc))
    fits = max_connections if _unlimited(soft) else soft - held - extra - MARGIN
    if fits >= max_connections:
        return Plan(soft_before, soft, hard, held, needed, max_connections, max_connections)
    limit = "unlimited" if _unlimited(hard) else str(hard)
    if shortfall == "refuse" or fits < 1:
        raise DescriptorLimitError(
            f"--max-connections {max_connections} needs about {needed} open files, but this process may open "
            f"only {soft} (hard limit {limit}; {held} already open, {extra + MARGIN} kept for the server itself). "
            f"Raise the limit (ulimit -n, systemd LimitNOFILE=, docs/HOSTING.md) or start with "
            f"--max-connections {max(fits, 0)} or less"
        )
    return Plan(soft_before, soft, hard, held, needed, fits, max_connections)


def describe(p: Plan) -> None:
    """The start's one log line about descriptors (and a warning when connections were lowered)."""
    log.info(
        "descriptors soft={soft} hard={hard} soft_was={before} open={open} needed={needed} "
        "max_connections={max_connections}",
        soft=p.soft, hard=p.hard, before=p.soft_before, open=p.open_now, needed=p.needed,
        max_connections=p.max_connections,
    )
    if p.lowered:
        log.warn(
            "descriptors_short max_connections={max_connections} asked={asked} hard={hard}: "
            "raise the open-file limit (ulimit -n, systemd LimitNOFILE=) to serve more",
            max_connections=p.max_connections, asked=p.asked, hard=p.hard,
        )


class Reserve:
    """One descriptor held open (``/dev/null``) to be closed when accept has none left."""

    def __init__(self) -> None:
        self.fd: int | None = None
        self.take()

    def take(self) -> bool:
        if self.fd is None:
            try:
                self.fd = os.open(os.devnull, os.O_RDONLY)
            except OSError:
                return False
        return True

    def release(self) -> bool:
        if self.fd is None:
            return False
        os.close(self.fd)
        self.fd = None
        return True

    def close(self) -> None:
        self.release()


class RefusalLog:
    """``out_of_descriptors`` at the first refusal, then at most one line per ``interval``
    with how many were refused since the previous line."""

    def __init__(self, clock: IReactorTime, interval: float = LOG_INTERVAL) -> None:
        self.clock = clock
        self.interval = interval
        self.pending = 0
        self.pauses = 0
        self.total = 0
        self.reason = ""
        self.call: IDelayedCall | None = None

    def refused(self, count: int, reason: str, *, paused: bool = False) -> None:
        """``count`` connections refused (``paused``: none could be, accepting pauses a second)."""
        self.total += count
        self.reason = reason
        self.pending += count
        self.pauses += paused
        if self.call is None:
            self._line()
            self.call = self.clock.callLater(self.interval, self._flush)

    def _flush(self) -> None:
        self.call = None
        if self.pending or self.pauses:
            self._line()
            self.call = self.clock.callLater(self.interval, self._flush)

    def _line(self) -> None:
        log.warn(
            "out_of_descriptors reason={reason} refused={count} paused={paused} total={total} "
            "interval={interval:g}s (new connections get too_many_connections until descriptors are free)",
            reason=self.reason, count=self.pending, paused=self.pauses, total=self.total, interval=self.interval,
        )
        self.pending = self.pauses = 0

    def stop(self) -> None:
        if self.call is not None and self.call.active():
            self.call.cancel()
        self.call = None


class AcceptGuard:
    """Stands in for a listening ``tcp.Port``'s socket: Twisted calls ``accept`` on it.

    Everything else is the real socket's. On ``EMFILE``/``ENFILE`` the waiting connections are
    accepted into the reserve's slot one by one, told ``too_many_connections`` (``refusal``;
    ``None`` on a TLS port) and closed; Twisted then hears "no more clients" (``EAGAIN``). When
    no slot can be freed, the port stops reading for a second, so a full backlog does not spin
    the loop.
    """

    def __init__(
        self, sock: socket.socket, port: Any, *, refusal: bytes | None, reserve: Reserve, report: RefusalLog,
        clock: IReactorTime,
    ) -> None:
        self._sock = sock
        self._port = port
        self._refusal = refusal
        self._reserve = reserve
        self._report = report
        self._clock = clock
        self._paused: IDelayedCall | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)

    def accept(self) -> tuple[socket.socket, Any]:
        try:
            return self._sock.accept()
        except OSError as exc:
            if exc.errno not in (errno.EMFILE, errno.ENFILE):
                raise
            self._refuse_waiting(errno.errorcode[exc.errno])
            raise BlockingIOError(errno.EAGAIN, "out of descriptors: waiting connections refused") from None

    def _refuse_waiting(self, reason: str) -> None:
        refused = 0
        if self._reserve.release():
            try:
                for _ in range(ACCEPTS_PER_REFUSAL):
                    try:
                        client, _address = self._sock.accept()
                    except OSError:
                        break  # EAGAIN: none left (or still none free)
                    refused += 1
                    self._tell_and_close(client)
            finally:
                self._reserve.take()
        self._report.refused(refused, reason, paused=not refused)
        if not refused:
            self._pause()

    def _tell_and_close(self, client: socket.socket) -> None:
        try:
            client.setblocking(False)
            if self._refusal is not None:
                client.send(self._refusal)  # a fresh connection's buffer takes one short line
            client.shutdown(socket.SHUT_WR)
            while client.recv(4096):  # what the client sent already: unread, close would reset
                pass
        except OSError:
            pass
        finally:
            client.close()

    def _pause(self) -> None:
        if self._paused is None and hasattr(self._port, "stopReading"):
            self._port.stopReading()
            self._paused = self._clock.callLater(1.0, self._resume)

    def _resume(self) -> None:
        self._paused = None
        if getattr(self._port, "connected", False) and not getattr(self._port, "disconnecting", False):
            self._port.startReading()


def refusal_line() -> bytes:
    return codec.encode_message(m.Error(
        ErrorCode.TOO_MANY_CONNECTIONS, "the server is out of file descriptors; try again later",
    ))


def guard(listener: Any, *, tls: bool, reserve: Reserve, report: RefusalLog, clock: IReactorTime) -> bool:
    """Put an :class:`AcceptGuard` in front of a listening port's socket (TCP, TLS over TCP, UNIX);
    ``False`` for a listener that is not one (nothing changed)."""
    sock = getattr(listener, "socket", None)
    if not isinstance(listener, tcp.Port) or not isinstance(sock, socket.socket):
        return False
    listener.socket = AcceptGuard(  # a stand-in: accept guarded, the rest delegated
        sock, listener, refusal=None if tls else refusal_line(), reserve=reserve, report=report, clock=clock,
    )
    return True
