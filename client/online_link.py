"""The session's one connection at a time: the link, its queued events, and its clocks.

A :class:`Connection` opens links through the injected connector, hears them as their
:class:`LinkListener` (each call only queues, so the network never
runs session code in the middle of a frame), and keeps the times that decide what a frame must do
next: the connect timeout, the reconnection backoff, the heartbeat and the silence limit. It knows
nothing of rooms or requests: the :class:`~mineduel.client.online_client.OnlineClient` asks it
:meth:`Connection.due` each frame and decides.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal, Protocol

from mineduel.shared.wire.messages import ClientMessage, ServerMessage

log = logging.getLogger(__name__)

BACKOFF = (0.5, 1.0, 2.0, 4.0, 8.0)  # seconds between reconnection attempts, then 8 s each
HEARTBEAT = 5.0  # send something at least this often (the server closes a connection silent for 15 s)
SILENCE = 20.0  # nothing received this long (the server pings every 5 s): the connection is dead
CONNECT_TIMEOUT = 10.0
MAX_MOVES = 3  # ``moved`` followed in a row without a request succeeding, then a clear error (PROTOCOL.md §18)

Due = Literal["retry", "timeout", "silent", "heartbeat"]
"""What a frame must do about the connection (see :meth:`Connection.due`)."""


class Link(Protocol):
    """One connection, as the session sees it."""

    def send(self, message: ClientMessage) -> None: ...

    def close(self) -> None: ...


class LinkListener(Protocol):
    def link_open(self, link: Link) -> None: ...

    def link_message(self, link: Link, message: ServerMessage) -> None: ...

    def link_garbage(self, link: Link, detail: str) -> None: ...

    def link_failed(self, link: Link, detail: str) -> None: ...

    def link_closed(self, link: Link, detail: str) -> None: ...

    def link_refused(self, link: Link, detail: str) -> None: ...


class Connector(Protocol):
    """``connect(host, port, listener)``; over TLS ``connect(host, port, listener, tls=True, pin=PIN_OR_NONE)``.

    ``link_refused`` (TLS only) says the server's certificate failed its check: nothing was sent on it.
    """

    def __call__(self, host: str, port: int, listener: LinkListener, *, tls: bool = False, pin: str | None = None) -> Link: ...


@dataclass(frozen=True, slots=True)
class LinkChange:
    """Something that happened to a link other than a message."""

    kind: Literal["open", "garbage", "failed", "closed", "refused"]
    detail: str = ""


class Connection:
    """The current link (or none), what arrived on it, and when the next connection step is due."""

    def __init__(self, connect: Callable[[], Connector], clock: Callable[[], float]) -> None:
        self._connect = connect  # read at each attempt: tests and screenshots swap the connector
        self.clock = clock
        self.link: Link | None = None
        self._inbox: deque[tuple[Link, ServerMessage | LinkChange]] = deque()
        self.retry_at: float | None = None
        self.attempt = 0
        self.deadline: float | None = None  # the connect (or welcome) timeout
        self.last_received = 0.0
        self.last_sent = 0.0

    # ----- LinkListener (called by the connector; only queues) ----------------------------------------
    def link_open(self, link: Link) -> None:
        self._inbox.append((link, LinkChange("open")))

    def link_message(self, link: Link, message: ServerMessage) -> None:
        self._inbox.append((link, message))

    def link_garbage(self, link: Link, detail: str) -> None:
        self._inbox.append((link, LinkChange("garbage", detail)))

    def link_failed(self, link: Link, detail: str) -> None:
        self._inbox.append((link, LinkChange("failed", detail)))

    def link_closed(self, link: Link, detail: str) -> None:
        self._inbox.append((link, LinkChange("closed", detail)))

    def link_refused(self, link: Link, detail: str) -> None:
        self._inbox.append((link, LinkChange("refused", detail)))

    # ----- the session's side --------------------------------------------------------------------------
    def arrived(self) -> Iterator[ServerMessage | LinkChange]:
        """What arrived on the current link, oldest first (an old link's leftovers are dropped)."""
        while self._inbox:
            link, item = self._inbox.popleft()
            if link is not self.link:
                continue  # an old connection
            if not isinstance(item, LinkChange):
                self.last_received = self.clock()
            yield item

    def open(self, host: str, port: int, *, tls: bool, pin: str | None) -> bool:
        """A new attempt, with its timeout; ``False`` when the connector refused at once (a bad address)."""
        self.deadline = self.clock() + CONNECT_TIMEOUT
        connect = self._connect()
        try:
            self.link = connect(host, port, self, tls=True, pin=pin) if tls else connect(host, port, self)
        except Exception as exc:  # noqa: BLE001 - a bad address must become a message, not a crash
            log.warning("online: cannot connect to %s:%s: %s", host, port, exc)
            self.link = None
            return False
        return True

    def drop(self) -> None:
        """Close the current link (if any); nothing more is heard from it."""
        link, self.link = self.link, None
        self.deadline = None
        if link is not None:
            try:
                link.close()
            except Exception:  # a dead link's close must not fail the session
                log.debug("online: closing a dead link failed", exc_info=True)

    def send(self, message: ClientMessage) -> None:
        if self.link is None:
            return
        self.last_sent = self.clock()
        try:
            self.link.send(message)
        except Exception as exc:  # noqa: BLE001 - a dying transport: the loss is reported by the link
            log.warning("online: send failed: %s", exc)

    def opened(self) -> None:
        """The link is open: the welcome must come within the timeout; silence counts from now."""
        self.deadline = self.clock() + CONNECT_TIMEOUT
        self.last_received = self.clock()

    def welcomed(self) -> None:
        self.deadline = None
        self.attempt = 0

    def back_off(self) -> None:
        """Schedule the next attempt: exponential backoff, then every 8 s."""
        delay = BACKOFF[min(self.attempt, len(BACKOFF) - 1)]
        self.attempt += 1
        self.retry_at = self.clock() + delay

    def retry_in(self) -> float | None:
        return None if self.retry_at is None else max(0.0, self.retry_at - self.clock())

    def due(self, *, connecting: bool, retrying: bool, open_: bool) -> Due | None:
        """What is due now: a retry, a connect timeout, a silent link, or a heartbeat to send."""
        now = self.clock()
        if retrying and self.retry_at is not None and now >= self.retry_at:
            self.retry_at = None
            return "retry"
        if connecting and self.deadline is not None and now >= self.deadline:
            self.deadline = None
            return "timeout"
        if open_ and self.link is not None:
            if now - self.last_received > SILENCE:
                log.info("online: nothing heard for %.0f s; reconnecting", now - self.last_received)
                return "silent"
            if now - self.last_sent > HEARTBEAT:
                return "heartbeat"
        return None

    def wakeups(self, *, open_: bool) -> list[float]:
        """When :meth:`due` may next have something to say."""
        times = [t for t in (self.retry_at, self.deadline) if t is not None]
        if open_:
            times.append(min(self.last_sent + HEARTBEAT, self.last_received + SILENCE) + 0.01)
        return times
