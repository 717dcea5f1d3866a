"""Invite links (docs/PROTOCOL.md §2): ``mineduel://HOST:PORT/join/CODE`` and the TLS form with a pin.

A link identifies a room only (O1): it never carries a token.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mineduel.shared.wire.codec import ProtocolError, room_code
from mineduel.shared.wire.names import INVITE_SCHEME, INVITE_SCHEME_TLS


@dataclass(frozen=True)
class InviteLink:
    """A parsed link: where the server is, how to reach it, and the room (``None``: the server only)."""

    host: str
    port: int
    code: str | None = None
    tls: bool = False
    pin: str | None = None  # SHA-256 of the server's certificate, lowercase hex (TLS only)


_PIN = re.compile(r"[0-9a-f]{64}")
_LINK = re.compile(
    r"(mineduels?)://(\[[^\]/]+\]|[^/:\[\]?#]+):(\d{1,5})(?:/join/([A-Za-z0-9]+))?/?(?:\?pin=([0-9A-Fa-f:]+))?"
)


def normalise_pin(pin: str) -> str:
    """A certificate pin as links carry it: 64 lowercase hex digits (``AB:CD:…`` from openssl accepted)."""
    value = pin.replace(":", "").lower()
    if _PIN.fullmatch(value) is None:
        raise ValueError(f"a pin is the certificate's SHA-256 fingerprint (64 hex digits), not {pin!r}")
    return value


def invite_link(host: str, port: int, code: str | None, *, tls: bool = False, pin: str | None = None) -> str:
    """``mineduel://HOST:PORT/join/CODE`` (IPv6 hosts in brackets); never carries a token (O1).

    ``tls`` makes it ``mineduels://``, with ``?pin=`` when the certificate is pinned; without a
    ``code`` the link names the server only (``mineduels://HOST:PORT``).
    """
    if pin is not None and not tls:
        raise ValueError("a pinned link is a TLS link")
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    link = f"{INVITE_SCHEME_TLS if tls else INVITE_SCHEME}://{host}:{port}"
    if code is not None:
        link += f"/join/{code}"
    if pin is not None:
        link += f"?pin={normalise_pin(pin)}"
    return link


def parse_link(link: str) -> InviteLink:
    """Any MINE DUEL link, plain or TLS, with or without a room; ``ValueError`` if it is not one.

    A pin is only valid on a ``mineduels://`` link: a plain link never silently drops one.
    """
    m = _LINK.fullmatch(link.strip())
    if m is None:
        raise ValueError(f"not an invite link: {link!r}")
    scheme, host, port_text, code_text, pin_text = m.groups()
    host = host.strip("[]")
    port = int(port_text)
    if not 0 < port < 65536:
        raise ValueError(f"bad port in {link!r}")
    tls = scheme == INVITE_SCHEME_TLS
    if pin_text is not None and not tls:
        raise ValueError(f"a pin needs a {INVITE_SCHEME_TLS}:// link: {link!r}")
    code = None
    if code_text is not None:
        try:
            code = room_code(code_text)
        except ProtocolError as exc:
            raise ValueError(str(exc)) from None
    pin = None if pin_text is None else normalise_pin(pin_text)
    return InviteLink(host, port, code, tls, pin)


def parse_invite(link: str) -> tuple[str, int, str]:
    """``(host, port, code)`` of a plain invite link; ``ValueError`` if it is not one.

    A ``mineduels://`` link is refused here (its caller would connect without TLS): use :func:`parse_link`.
    """
    parsed = parse_link(link)
    if parsed.tls:
        raise ValueError(f"a {INVITE_SCHEME_TLS}:// link needs TLS: use parse_link: {link!r}")
    if parsed.code is None:
        raise ValueError(f"not an invite link (no room): {link!r}")
    return parsed.host, parsed.port, parsed.code
