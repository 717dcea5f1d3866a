"""Taking a seat from the lobby (issue 16, "two clicks to a friend"): what the buttons of
:class:`~mineduel.client.scenes.online.OnlineScene` that seat the player do.

* every seat-taking command first asks the player's name once (``name_popup.py``), then goes on;
* *Host a game* starts the server inside this client and creates a **listed** room on it
  (PROTOCOL.md §12: LAN discovery names it while it waits);
* the LAN list: a scan when the home page opens and every :data:`SCAN_EVERY` seconds, rooms
  first (one click joins), then servers naming none;
* *Join with a link or code*: one field read by :func:`read_join_input`.

Kept apart from the scene (which is about pages and the session) as the painter is; like the
painter it works on the scene's own fields (``found``, ``searching``, ``next_scan``, ``hosting``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mineduel.client.online_client import FoundServer, LanRoom
from mineduel.client.scenes.name_popup import NamePopup, needs_name
from mineduel.shared.wire import codec
from mineduel.shared.wire.names import DEFAULT_PORT, INVITE_SCHEME, INVITE_SCHEME_TLS, PROTOCOL_VERSION

if TYPE_CHECKING:
    from mineduel.client.scenes.online import OnlineScene

log = logging.getLogger(__name__)

SCAN_EVERY = 4.0  # seconds between LAN scans while the home page shows
LIST_ROWS = 4  # rooms (then servers) the home page lists
SEPARATORS = " \t/"  # between an address and a room code in the one field


# ----- what was typed ------------------------------------------------------------------------------------


def is_link(text: str) -> bool:
    """``mineduel://…`` or ``mineduels://…`` (TLS)."""
    return text.strip().startswith((INVITE_SCHEME + "://", INVITE_SCHEME_TLS + "://"))


def parse_address(text: str) -> tuple[str, int] | None:
    """``host``, ``host:port`` or ``[v6]:port`` → (host, port); the default port when none is given."""
    text = text.strip()
    if not text:
        return None
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            return None
        host, rest = text[1:end], text[end + 1 :]
        port_text = rest[1:] if rest.startswith(":") else ("" if not rest else None)
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    elif ":" in text:
        host, port_text = text, ""  # a bare IPv6 address
    else:
        host, port_text = text, ""
    if port_text is None or not host or any(ch.isspace() for ch in host):
        return None
    if port_text == "":
        return host, DEFAULT_PORT
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return None
    return host, int(port_text)


def split_address_code(text: str) -> tuple[str, str] | None:
    """``host:port CODE`` (or ``host:port/CODE``) → the two parts; ``None`` when there are not two."""
    text = text.strip()
    for sep in SEPARATORS:
        if sep in text:
            head, _, tail = text.rpartition(sep)
            if head.strip() and tail.strip():
                return head.strip(), tail.strip()
    return None


def as_code(text: str) -> str | None:
    """``text`` as a room code, or ``None``."""
    try:
        return codec.room_code(text)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class JoinInput:
    """What the one field asks for: ``kind`` is ``link``, ``join`` (``host``, ``port``, ``code``),
    ``server`` (``host``, ``port``: its page), ``needs_address`` (a code, no server to try it on)
    or ``bad``."""

    kind: str
    host: str = ""
    port: int = DEFAULT_PORT
    code: str = ""
    server: FoundServer | None = None


def read_join_input(text: str, found: list[FoundServer]) -> JoinInput:
    """The one field: an invite link; ``host:port CODE``; a code alone — on the LAN server that lists
    it, else the only server found; ``host:port`` alone. Anything else is ``bad``."""
    text = text.strip()
    if is_link(text):
        return JoinInput("link")
    parts = split_address_code(text)
    if parts is not None:
        address, code = parse_address(parts[0]), as_code(parts[1])
        if address is not None and code is not None:
            return JoinInput("join", address[0], address[1], code)
    code = as_code(text)
    if code is not None:
        server = next((s for s in found for r in s.rooms if r.code == code), None)
        if server is None and len(found) == 1:
            server = found[0]
        if server is None:
            return JoinInput("needs_address", code=code)
        return JoinInput("join", server.host, server.port, code, server)
    address = parse_address(text)
    if address is None:
        return JoinInput("bad")
    return JoinInput("server", address[0], address[1])


def lan_entries(found: list[FoundServer] | None) -> list[tuple[FoundServer, LanRoom | None]]:
    """What the home page lists: every waiting room (newest first per server), then the servers
    that named none (a dedicated server: connect, then create or join there); at most :data:`LIST_ROWS`."""
    servers = found or []
    rooms: list[tuple[FoundServer, LanRoom | None]] = [(s, r) for s in servers for r in s.rooms]
    return [*rooms, *((s, None) for s in servers if not s.rooms)][:LIST_ROWS]


# ----- the commands ----------------------------------------------------------------------------------------


class Seats:
    """The lobby's seat-taking commands (see the module docstring)."""

    def __init__(self, lobby: OnlineScene) -> None:
        self.lobby = lobby

    def with_name(self, action: Callable[[], None]) -> None:
        """Take a seat: the first time, ask the player's name (``name_popup.py``), then go on with
        ``action`` either way; the name is what ``create_room`` / ``join`` send."""
        lobby = self.lobby
        client, services = lobby.client, lobby.services
        if client is None:
            return

        def go(_name: str = "") -> None:
            client.player_name = lobby.ctx.settings.player_name or ""
            action()

        if services is not None and needs_name(lobby.ctx, services.name_skipped):
            def skipped() -> None:
                services.name_skipped = True

            lobby.ctx.stack.open_popup(NamePopup(lobby.ctx, go, on_skip=skipped))
            return
        go()

    def host(self) -> None:
        """*Host a game*: start the server in this client (once), then a listed room on it."""
        lobby = self.lobby
        services, client = lobby.services, lobby.client
        if client is None or services is None or services.start_host is None:
            return
        start = services.start_host

        def run() -> None:
            try:
                info = start()
            except Exception:
                log.exception("could not host")
                lobby.local_notice = ("online.host_failed", {})
                lobby.relayout()
                return
            lobby.hosting = f"{info.public_host}:{info.port}"
            lobby.host_info = info
            client.connect("127.0.0.1", info.port,
                           then=lambda: client.create_room(listed=True, spectators=lobby.ctx.settings.allow_watch))

        self.with_name(run)

    def create(self) -> None:
        """The server page's Create room: on a server someone runs, not listed (PROTOCOL.md §12)."""
        lobby = self.lobby
        client = lobby.client
        if client is not None:
            self.with_name(lambda: client.create_room(spectators=lobby.ctx.settings.allow_watch))

    def join(self, code: str) -> None:
        """Join ``code`` on the server this client is connected to (the room page, the server page)."""
        client = self.lobby.client
        if client is not None:
            self.with_name(lambda: client.requests.join(code))

    def join_at(self, server: FoundServer | None, host: str, port: int, code: str) -> None:
        """One click on a waiting room (or a typed address and code): connect, then take the seat."""
        client = self.lobby.client
        if client is None:
            return
        tls, pin = (server.tls, server.pin) if server is not None else (False, None)
        self.with_name(lambda: client.connect(host, port, then=lambda: client.requests.join(code), tls=tls, pin=pin))

    def join_listed(self, server: FoundServer, room: LanRoom) -> None:
        self.join_at(server, server.host, server.port, room.code)

    def scan(self) -> None:
        """Ask the LAN (the home page does it by itself every :data:`SCAN_EVERY` s); what was found
        stays listed while the next scan runs."""
        lobby = self.lobby
        services = lobby.services
        if services is None or services.discover is None or lobby.searching:
            return
        lobby.searching = True

        def done(found: list[FoundServer]) -> None:
            lobby.searching = False
            lobby.found = [s for s in found if s.protocol == PROTOCOL_VERSION]
            lobby.next_scan = lobby.ctx.clock() + SCAN_EVERY
            if lobby.page == "home":
                lobby.relayout()

        services.discover(done)
        if lobby.page == "home":
            lobby.relayout()

    def typed(self, text: str) -> None:
        """The home page's one field (:func:`read_join_input`)."""
        lobby = self.lobby
        wanted = read_join_input(text, lobby.found or [])
        lobby.local_notice = None
        if wanted.kind == "link":
            lobby.open_link(text.strip())
        elif wanted.kind == "join":
            self.join_at(wanted.server, wanted.host, wanted.port, wanted.code)
        elif wanted.kind == "server":
            lobby.connect_to(wanted.host, wanted.port)
        else:
            lobby.local_notice = ("friend.code_needs_address" if wanted.kind == "needs_address" else "friend.bad_input", {})
            lobby.relayout()

    def code_typed(self, text: str) -> None:
        """The server page's field: a room code joins at once; a pasted invite link shows the room first (O1)."""
        lobby = self.lobby
        if lobby.client is None:
            return
        text = text.strip()
        if is_link(text):
            lobby.open_link(text)
            return
        code = as_code(text)
        if code is None:
            lobby.local_notice = ("online.bad_code", {})
            lobby.relayout()
            return
        lobby.local_notice = None
        self.join(code)
