"""The online session: one connection to a server, the room, the match, reconnection (O1–O16).

Pure logic on an injected clock, with no socket and no Twisted: a *connector* (``client/net.py``
for TCP, or an in-process server for screenshots) opens a :class:`Link` and reports what happens
on it through the :class:`LinkListener` methods. Those only queue; :meth:`OnlineClient.update`,
called once per frame, handles the queue — so the frame never waits on the network, and a slow or
broken server can only ever change what the screens show.

What it does with the messages (docs/PROTOCOL.md):

* ``hello`` on connect; a server speaking another protocol version is refused clearly;
* create / peek / join / resume / ready / leave / rematch / resign as requests with ids, whose
  refusals become a message key for the screen (``online.error.*``);
* the session token from ``room_created`` / ``joined`` is stored at once (O12, O16) with the server
  address and room, and marked *playing* while a match runs, so a restarted client resumes by itself;
* a lost connection while seated → *reconnecting*: new attempts with exponential backoff, then
  ``hello`` + ``resume`` with the token; silence longer than the server's idle timeout counts as lost;
* a new ``match_id`` replaces the match object (O14: the previous board and result are dropped).

Anything malformed from the server (not JSON, a message missing what it must have) ends the
session with ``online.error.bad_server`` instead of a traceback.
"""

from __future__ import annotations

import itertools
import logging
import secrets
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from mineduel.client.online_match import OnlineMatch
from mineduel.client.tokens import SavedSession, TokenStore
from mineduel.shared.wire import protocol
log = logging.getLogger(__name__)

BACKOFF = (0.5, 1.0, 2.0, 4.0, 8.0)  # seconds between reconnection attempts, then 8 s each
HEARTBEAT = 5.0  # send something at least this often (the server closes a connection silent for 15 s)
SILENCE = 20.0  # nothing received this long (the server pings every 5 s): the connection is dead
CONNECT_TIMEOUT = 10.0

# Server error codes with their own wording; any other code gets online.error.other.
ERROR_KEYS = {
    "room_not_found": "online.room_not_found",
    "room_full": "online.room_full",
    "unsupported_protocol": "online.protocol_mismatch",
    "too_many_attempts": "online.error.too_many_attempts",
    "too_many_rooms": "online.error.too_many_rooms",
    "too_many_connections": "online.error.too_many_connections",
    "bad_token": "online.error.bad_token",
    "opponent_missing": "online.error.opponent_missing",
    "grace_expired": "online.error.grace_expired",
    "rate_limited": "online.error.rate_limited",
    "internal_error": "online.error.internal_error",
    "storage_unavailable": "online.error.storage_unavailable",
    "replaced": "online.error.replaced",
    "match_running": "online.error.match_running",
}


def error_key(code: str) -> str:
    return ERROR_KEYS.get(code, "online.error.other")


class Link(Protocol):
    """One connection, as the session sees it."""

    def send(self, message: Mapping[str, Any]) -> None: ...

    def close(self) -> None: ...


class LinkListener(Protocol):
    def link_open(self, link: Link) -> None: ...

    def link_message(self, link: Link, message: dict[str, Any]) -> None: ...

    def link_garbage(self, link: Link, detail: str) -> None: ...

    def link_failed(self, link: Link, detail: str) -> None: ...

    def link_closed(self, link: Link, detail: str) -> None: ...

    def link_refused(self, link: Link, detail: str) -> None: ...


Connector = Callable[..., Link]
"""``connect(host, port, listener)``; over TLS ``connect(host, port, listener, tls=True, pin=PIN_OR_NONE)``.

``link_refused`` (TLS only) says the server's certificate failed its check: nothing was sent on it.
"""


@dataclass(frozen=True, slots=True)
class FoundServer:
    """A server that answered LAN discovery."""

    host: str
    port: int
    name: str
    open_rooms: int
    protocol: int = protocol.PROTOCOL_VERSION
    tls: bool = False  # the server speaks TLS (PROTOCOL.md §12) ...
    pin: str | None = None  # ... with this certificate


@dataclass(frozen=True, slots=True)
class HostInfo:
    """The server this client started (Host on this computer)."""

    port: int
    public_host: str
    stop: Callable[[], object]
    udp_port: int | None = None  # LAN discovery, when it could listen


@dataclass
class OnlineServices:
    """What the online screens need from outside: made by the app (``net.py``) or by tests."""

    connect: Connector
    tokens: TokenStore
    start_host: Callable[[], HostInfo] | None = None
    discover: Callable[[Callable[[list[FoundServer]], None]], None] | None = None
    clipboard: Callable[[str], bool] = lambda text: False
    wall_clock: Callable[[], float] = time.time
    client_name: str = "mine-duel/0.1.0"
    client_seed: Callable[[], str] = lambda: secrets.token_hex(8)  # R1: this seat's contribution to the draw
    host: HostInfo | None = field(default=None)  # the hosted server, once started


class Conn:
    IDLE = "idle"
    CONNECTING = "connecting"
    OPEN = "open"
    RECONNECTING = "reconnecting"
    FAILED = "failed"


class OnlineClient:
    """See the module docstring. Screens read its attributes and call its methods."""

    def __init__(self, services: OnlineServices, clock: Callable[[], float]) -> None:
        self.services = services
        self.clock = clock
        self.conn = Conn.IDLE
        self.error: str | None = None  # a catalog key: why the session stopped
        self.notice: tuple[str, dict[str, object]] | None = None  # the last refusal, for the screen
        self.address: tuple[str, int] | None = None
        self.tls = False  # the connection to ``address`` is TLS ...
        self.pin: str | None = None  # ... accepting only this certificate (else the system trust store)
        self.welcome: dict[str, Any] | None = None
        self.room_info: dict[str, Any] | None = None
        self.room: dict[str, Any] | None = None
        self.room_code: str | None = None
        self.invite: str | None = None
        self.token: str | None = None
        self.token_saved = True
        self.match: OnlineMatch | None = None
        self.rematch_state: dict[str, bool] = {"me": False, "opponent": False}
        self.opponent_away_until: float | None = None  # local clock: when the opponent's grace ends
        self.opponent_grace_expired = False
        self.server_closing = False
        self.busy: str | None = None  # a request the screen waits for (create/join/peek/...)
        self.version = 0  # bumped on every change the screens may show
        self._link: Link | None = None
        self._inbox: deque[tuple[Link, str, Any]] = deque()
        self._pending: dict[str, tuple[str, Callable[[dict[str, Any]], None] | None, Callable[[str], None] | None]] = {}
        self._ids = itertools.count(1)
        self._after_welcome: Callable[[], None] | None = None
        self._retry_at: float | None = None
        self._attempt = 0
        self._connect_deadline: float | None = None
        self._last_received = 0.0
        self._last_sent = 0.0
        self._seed = ""

    # ----- LinkListener (called by the connector; only queues) ------------------------------------------
    def link_open(self, link: Link) -> None:
        self._inbox.append((link, "open", None))

    def link_message(self, link: Link, message: dict[str, Any]) -> None:
        self._inbox.append((link, "message", message))

    def link_garbage(self, link: Link, detail: str) -> None:
        self._inbox.append((link, "garbage", detail))

    def link_failed(self, link: Link, detail: str) -> None:
        self._inbox.append((link, "failed", detail))

    def link_closed(self, link: Link, detail: str) -> None:
        self._inbox.append((link, "closed", detail))

    def link_refused(self, link: Link, detail: str) -> None:
        self._inbox.append((link, "refused", detail))

    # ----- state the screens ask about ---------------------------------------------------------------
    @property
    def seated(self) -> bool:
        return self.room_code is not None and self.token is not None

    @property
    def connected(self) -> bool:
        return self.conn == Conn.OPEN

    def opponent_seconds_left(self) -> float | None:
        if self.opponent_away_until is None:
            return None
        return max(0.0, self.opponent_away_until - self.clock())

    def next_retry_in(self) -> float | None:
        return None if self._retry_at is None else max(0.0, self._retry_at - self.clock())

    # ----- commands ----------------------------------------------------------------------------------------
    def connect(self, host: str, port: int, then: Callable[[], None] | None = None, *, tls: bool = False,
                pin: str | None = None) -> None:
        """Open a connection to ``host:port``; ``then`` runs once the server has said welcome.

        ``tls`` (a ``mineduels://`` link, a server that says ``tls``): only over TLS, the certificate
        checked against ``pin`` or else the system trust store; a failed check is final, never plaintext.
        """
        self._drop_link()
        self.forget_room()
        self.address = (host, port)
        self.tls = tls
        self.pin = pin if tls else None
        self.error = None
        self.notice = None
        self.server_closing = False
        self._after_welcome = then
        self._attempt = 0
        self._retry_at = None
        self._open(Conn.CONNECTING)

    def resume_saved(self, saved: SavedSession) -> None:
        """Come back to a stored seat (O12): connect, then ``resume`` with the token."""
        self.connect(saved.host, saved.port, tls=saved.tls, pin=saved.pin)
        self.room_code = saved.room
        self.token = saved.token
        self.busy = "resume"

    def peek(self, code: str) -> None:
        self.room_info = None
        self.busy = "peek"
        self._request("peek", {"room": code}, on_ok=self._peeked)

    def create_room(self) -> None:
        if not self._can_store():
            return
        self.busy = "create"
        self._seed = self.services.client_seed()
        self._request("create_room", {"client_seed": self._seed}, on_ok=self._seated)

    def join(self, code: str) -> None:
        """O1: only this seats anyone (opening a link only peeks)."""
        if not self._can_store():
            return
        self.busy = "join"
        self._seed = self.services.client_seed()
        self._request("join", {"room": code, "client_seed": self._seed}, on_ok=self._seated)

    def ready(self, ready: bool = True) -> None:
        fields: dict[str, Any] = {"ready": ready}
        if ready:
            fields["client_seed"] = self.services.client_seed()  # sent after the room's next_commitment was seen (R1)
        self._request("ready", fields)

    def rematch(self) -> None:
        self._request("rematch", {"client_seed": self.services.client_seed()})

    def leave(self) -> None:
        """Give the seat up (outside a match); the token is forgotten."""
        self._request("leave", {}, on_ok=lambda _msg: self._left())

    def resign(self) -> None:
        if self.match is not None:
            self.match.resign()

    def close(self) -> None:
        """Stop: close the connection, keep the token (the seat may be resumed later)."""
        self._drop_link()
        self.conn = Conn.IDLE
        self._retry_at = None
        self._bump()

    def forget_room(self) -> None:
        if self.match is not None:
            self.match.close()
        self.room_info = None
        self.room = None
        self.room_code = None
        self.invite = None
        self.token = None
        self.match = None
        self.rematch_state = {"me": False, "opponent": False}
        self.opponent_away_until = None
        self.opponent_grace_expired = False
        self.busy = None
        self._bump()

    # ----- the frame -----------------------------------------------------------------------------------------
    def update(self) -> None:
        """Handle everything that arrived, retry a lost connection when due, keep the heartbeat."""
        while self._inbox:
            link, kind, payload = self._inbox.popleft()
            if link is not self._link:
                continue  # an old connection
            try:
                self._handle(kind, payload)
            except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
                log.warning("online: malformed %s from the server: %r", kind, exc)
                self._fail("online.error.bad_server")
        now = self.clock()
        if self.conn == Conn.RECONNECTING and self._retry_at is not None and now >= self._retry_at:
            self._retry_at = None
            self._open(Conn.RECONNECTING)
        elif self.conn in (Conn.CONNECTING, Conn.RECONNECTING) and self._connect_deadline is not None and now >= self._connect_deadline:
            self._connect_deadline = None
            self._lost("timeout")
        elif self.conn == Conn.OPEN and self._link is not None:
            if now - self._last_received > SILENCE:
                log.info("online: nothing heard for %.0f s; reconnecting", now - self._last_received)
                self._lost("silent")
            elif now - self._last_sent > HEARTBEAT:
                self._send({"type": "ping"})

    def next_wakeup(self) -> float | None:
        times = []
        if self._retry_at is not None:
            times.append(self._retry_at)
        if self._connect_deadline is not None:
            times.append(self._connect_deadline)
        if self.conn == Conn.OPEN:
            times.append(min(self._last_sent + HEARTBEAT, self._last_received + SILENCE) + 0.01)
        if self.opponent_away_until is not None:
            left = self.opponent_away_until - self.clock()
            if left > 0:
                frac = left - int(left)
                times.append(self.clock() + (frac if frac > 1e-3 else 1.0))
        return min(times) if times else None

    # ----- internals -----------------------------------------------------------------------------------------
    def _bump(self) -> None:
        self.version += 1

    def _can_store(self) -> bool:
        if not self.services.tokens.available():
            self.notice = ("online.token_unavailable", {})
            self._bump()
            return False
        return True

    def _open(self, state: str) -> None:
        assert self.address is not None
        self.conn = state
        self._connect_deadline = self.clock() + CONNECT_TIMEOUT
        self._bump()
        host, port = self.address
        try:
            if self.tls:
                self._link = self.services.connect(host, port, self, tls=True, pin=self.pin)
            else:
                self._link = self.services.connect(host, port, self)
        except Exception as exc:  # noqa: BLE001 - a bad address must become a message, not a crash
            log.warning("online: cannot connect to %s:%s: %s", host, port, exc)
            self._link = None
            self._lost("unreachable")

    def _drop_link(self) -> None:
        link, self._link = self._link, None
        self._pending.clear()
        self._connect_deadline = None
        if link is not None:
            try:
                link.close()
            except Exception:  # noqa: BLE001 - closing a dead link must not fail
                pass

    def _send(self, message: Mapping[str, Any]) -> None:
        if self._link is None:
            return
        self._last_sent = self.clock()
        try:
            self._link.send(message)
        except Exception as exc:  # noqa: BLE001
            log.warning("online: send failed: %s", exc)

    def _request(self, kind: str, fields: Mapping[str, Any], *, on_ok: Callable[[dict[str, Any]], None] | None = None,
                 on_error: Callable[[str], None] | None = None) -> None:
        if self.conn != Conn.OPEN or self._link is None:
            if on_error is not None:
                on_error("not_connected")
            else:
                self.notice = ("online.connection_lost", {})
                self.busy = None
                self._bump()
            return
        rid = f"m{next(self._ids)}"
        self._pending[rid] = (kind, on_ok, on_error)
        self._send({"type": kind, "id": rid, **fields})

    def send_action(self, message: dict[str, Any], on_error: Callable[[str], None]) -> None:
        """The match's way to send an action; a refusal comes back through ``on_error``."""
        self._request(message["type"], {k: v for k, v in message.items() if k != "type"}, on_error=on_error)

    def _lost(self, why: str) -> None:
        """The connection is gone (or never came): retry if we hold a seat, else stop with a message."""
        was = self.conn
        self._drop_link()
        if self.conn == Conn.FAILED:
            return
        if self.seated and self.error is None:
            self.conn = Conn.RECONNECTING
            delay = BACKOFF[min(self._attempt, len(BACKOFF) - 1)]
            self._attempt += 1
            self._retry_at = self.clock() + delay
            self._bump()
            return
        if was == Conn.CONNECTING or why in ("unreachable", "timeout"):
            self._fail("online.server_unreachable")
        else:
            self._fail("online.server_closed" if self.server_closing else "online.connection_lost")

    def _fail(self, key: str) -> None:
        self._drop_link()
        self.conn = Conn.FAILED
        self.error = key
        self._retry_at = None
        self.busy = None
        self._bump()

    def _handle(self, kind: str, payload: Any) -> None:
        if kind == "open":
            self._connect_deadline = self.clock() + CONNECT_TIMEOUT
            self._last_received = self.clock()
            self._send(protocol.hello(self.services.client_name))
        elif kind == "message":
            self._last_received = self.clock()
            self._message(payload)
        elif kind == "garbage":
            log.warning("online: the server sent something that is not the protocol: %s", payload)
            self._fail("online.error.bad_server")
        elif kind == "failed":
            self._lost("unreachable")
        elif kind == "closed":
            self._lost("closed")
        elif kind == "refused":  # a certificate that fails its check: never retried, never plaintext
            log.warning("online: TLS refused by %s:%s: %s", *(self.address or ("?", 0)), payload)
            self._fail("online.error.tls_refused")
        self._bump()

    def _message(self, msg: dict[str, Any]) -> None:
        kind = msg["type"]
        if not isinstance(kind, str):
            raise ValueError("type")
        rid = msg.get("id")
        pending = self._pending.pop(rid, None) if isinstance(rid, str) else None
        handler = getattr(self, f"_on_{kind}", None)
        if handler is not None:
            handler(msg)
        elif kind not in ("ok", "error", "pong", "record"):
            log.info("online: ignoring a %r message", kind)
        if pending is not None:
            request, on_ok, on_error = pending
            if kind == "error":
                self.busy = None
                if on_error is not None:
                    on_error(str(msg.get("code")))
                else:
                    self._refused(request, str(msg.get("code")))
            elif on_ok is not None:
                on_ok(msg)
        elif kind == "error":
            self._unsolicited_error(str(msg.get("code")))

    # Replies and pushes ------------------------------------------------------------------------------------------
    def _on_welcome(self, msg: dict[str, Any]) -> None:
        if msg.get("protocol") != protocol.PROTOCOL_VERSION:
            self._fail("online.protocol_mismatch")
            return
        self.welcome = msg
        self.conn = Conn.OPEN
        self._connect_deadline = None
        self._attempt = 0
        self.server_closing = False
        if self.seated:
            assert self.room_code is not None and self.token is not None
            self._request("resume", {"room": self.room_code, "token": self.token}, on_error=self._resume_refused)
        elif self._after_welcome is not None:
            then, self._after_welcome = self._after_welcome, None
            then()

    def _resume_refused(self, code: str) -> None:
        """The server no longer knows this seat (room expired, token unknown): forget it."""
        if code in ("bad_token", "room_not_found"):
            self.services.tokens.clear()
            self.forget_room()
            self.notice = ("online.error.session_gone", {})
        elif code in ("too_many_attempts", "storage_unavailable", "internal_error"):
            # Not a verdict on the seat: keep the token and try again after the usual backoff.
            self.notice = (error_key(code), {})
            self._lost("closed")
        else:
            self._refused("resume", code)

    def _peeked(self, msg: dict[str, Any]) -> None:
        self.busy = None

    def _on_room_info(self, msg: dict[str, Any]) -> None:
        protocol.room_code(msg["room"])
        self.room_info = msg
        self.busy = None

    def _seated(self, msg: dict[str, Any]) -> None:
        self.busy = None

    def _on_room_created(self, msg: dict[str, Any]) -> None:
        self._take_seat(msg, fresh=True)

    def _on_joined(self, msg: dict[str, Any]) -> None:
        self._take_seat(msg, fresh=not msg.get("resumed"))

    def _take_seat(self, msg: dict[str, Any], *, fresh: bool) -> None:
        self.room_code = protocol.room_code(msg["room"])
        self.invite = self._as_reached(str(msg.get("invite") or ""))
        if fresh:
            self.token = protocol.token(msg["token"])
            self.rematch_state = {"me": False, "opponent": False}
        self.busy = None
        self._save_token(playing=self.match is not None and self.match.outcome is None)

    def _as_reached(self, invite: str) -> str:
        """The server's invite, over TLS as this client reached it: a plain ``mineduel://`` link from a
        server behind TLS would send a friend there in plaintext, which the TLS port cannot answer."""
        if not self.tls or not invite:
            return invite
        try:
            link = protocol.parse_link(invite)
        except ValueError:
            return invite
        if link.tls or link.code is None:
            return invite
        return protocol.invite_link(link.host, link.port, link.code, tls=True, pin=self.pin)

    def _save_token(self, *, playing: bool) -> None:
        if self.address is None or self.room_code is None or self.token is None:
            return
        host, port = self.address
        saved = SavedSession(host, port, self.room_code, self.token, playing, self.services.wall_clock(), self.tls, self.pin)
        self.token_saved = self.services.tokens.save(saved)
        if not self.token_saved:
            self.notice = ("online.token_unavailable", {})

    def _on_room(self, msg: dict[str, Any]) -> None:
        protocol.room_code(msg["room"])
        self.room = msg
        opponent = msg.get("opponent")
        server_time = float(msg["server_time"])
        if isinstance(opponent, dict):
            grace = opponent.get("grace")
            self.opponent_grace_expired = bool(opponent.get("grace_expired"))
            if grace is not None and not opponent.get("connected"):
                self.opponent_away_until = self.clock() + max(0.0, float(grace["at"]) - server_time)
            elif opponent.get("connected"):
                self.opponent_away_until = None
            for key in ("me", "opponent"):
                side = msg[key]
                if isinstance(side, dict) and "rematch" in side:
                    self.rematch_state[key] = bool(side["rematch"])
        else:
            self.opponent_away_until = None

    def _on_presence(self, msg: dict[str, Any]) -> None:
        self.opponent_grace_expired = bool(msg.get("grace_expired"))
        if msg.get("connected"):
            self.opponent_away_until = None
        else:
            deadline = msg.get("deadline")
            if deadline is None:
                self.opponent_away_until = self.clock()
            else:
                self.opponent_away_until = self.clock() + max(0.0, float(deadline["at"]) - float(msg["server_time"]))

    def _on_match_start(self, msg: dict[str, Any]) -> None:
        match_id = protocol.match_id(msg["match_id"])
        if self.match is not None and self.match.match_id == match_id:
            return  # a resume repeats the start of the match we already show
        if self.match is not None:
            self.match.close()
        self.match = OnlineMatch(msg, clock=self.clock, send=self.send_action)  # O14: a new id drops the old match
        self.rematch_state = {"me": False, "opponent": False}
        self._save_token(playing=True)

    def _on_state(self, msg: dict[str, Any]) -> None:
        if self.match is not None and msg["match_id"] == self.match.match_id:
            self.match.apply_state(msg)

    def _on_match_end(self, msg: dict[str, Any]) -> None:
        if self.match is not None and msg["match_id"] == self.match.match_id:
            self.match.apply_end(msg)
            self.opponent_away_until = None
            self._save_token(playing=False)

    def _on_rematch(self, msg: dict[str, Any]) -> None:
        self.rematch_state = {"me": bool(msg["me"]), "opponent": bool(msg["opponent"])}

    def _on_room_closed(self, msg: dict[str, Any]) -> None:
        self.services.tokens.clear()
        self.forget_room()
        self.notice = ("online.error.room_closed", {})

    def _on_server_closing(self, msg: dict[str, Any]) -> None:
        self.server_closing = True

    def _on_ping(self, msg: dict[str, Any]) -> None:
        """The connector answers pings itself; nothing else to do."""

    def _left(self) -> None:
        self.services.tokens.clear()
        self.forget_room()

    def _refused(self, request: str, code: str) -> None:
        if request == "resume" and code in ("bad_token", "room_not_found"):
            self._resume_refused(code)
            return
        self.notice = (error_key(code), {"detail": code})

    def _unsolicited_error(self, code: str) -> None:
        if code == "unsupported_protocol":
            self._fail("online.protocol_mismatch")
        elif code == "replaced":
            self._fail("online.error.replaced")
        elif code in ("too_many_connections",):
            self._fail(error_key(code))
        elif code in ("bad_json", "bad_request", "unknown_type", "hello_required", "line_too_long"):
            log.warning("online: the server did not understand us (%s)", code)
            self.notice = ("online.error.other", {"detail": code})
        # idle and others: the server closes the connection next; reconnection follows

