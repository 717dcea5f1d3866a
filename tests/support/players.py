"""Players for the server tests of issue 20 (PROTOCOL.md §17): well-formed keys and ``identify``."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from support.harness import Client


def key(n: int) -> str:
    """A well-formed player key (43 URL-safe base64 characters of 32 bytes), one per ``n``."""
    return base64.urlsafe_b64encode(hashlib.sha256(f"key{n}".encode()).digest()).rstrip(b"=").decode()


def identify(c: Client, n: int, name: str) -> dict[str, Any]:
    """``identify`` with key ``n``: the ``player`` reply (after checking it is player, then ok)."""
    replies = c.send(type="identify", key=key(n), name=name, id=n)
    assert [r["type"] for r in replies] == ["player", "ok"], replies
    assert replies[1]["id"] == n
    return replies[0]
