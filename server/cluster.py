"""What the room logic may learn from a shared database about room ownership (issue 21, docs/CLUSTER.md).

Kept apart from ``server/storage_pg.py`` so the server can recognise an ownership loss without
importing the PostgreSQL driver (an optional extra).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from mineduel.shared.wire import messages as m

LEASE_SECONDS = 5.0
"""A node's lease runs this long past its last renewal, on the database's clock (docs/CLUSTER.md)."""


RENEW_SECONDS = 1.0
"""A node renews its lease this often, whatever it commits (server/cluster_node.py)."""

LOST_AFTER = 4.0
"""A node that could not renew its lease for this long stops serving its rooms (before anyone may
take them at :data:`LEASE_SECONDS`), PROTOCOL.md §18."""


@dataclass(frozen=True)
class NodeAddress:
    """Where clients reach a node (``--advertise``, or the cluster's ``--front``): what ``moved`` names."""

    host: str
    port: int
    tls: bool = False
    pin: str | None = None
    node: str = ""  # the node's name (``--node``); empty for the front address
    rooms: int = 0  # how many rooms it owns (when read for a clean shutdown's choice)


class Routing(Protocol):
    """What the session asks of its node in a cluster (server/cluster_node.py; None on one server)."""

    def moved(self, code: str, request: str, rid: m.RequestId | None) -> m.Moved | None:
        """The ``moved`` answering ``request`` for room ``code`` if another live node owns it (§18)."""

    def hand_over(self) -> Mapping[int, m.Moved]:
        """A clean shutdown, everything stored: end the lease; the ``moved`` of each connection
        seated in or watching a room, naming the node that takes it (empty: none alive)."""


def parse_address(text: str, option: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` for IPv6) as ``--advertise``/``--front`` take it; ValueError if not."""
    host, sep, port = text.strip().rpartition(":")
    host = host.strip("[]") if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or ("[" in host or "]" in host) or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{option} takes HOST:PORT (IPv6 in brackets), not {text!r}")
    if len(host) > m.HOST_MAX or not all((c.isalnum() and c.isascii()) or c in ".-_:" for c in host):
        raise ValueError(f"{option}: {host!r} is not a host name or an IP address")
    return host, int(port)


class OwnershipLost(RuntimeError):
    """A commit touched rooms this node no longer owns (another node took them over, bumping the
    epoch): the whole commit was rolled back, nothing of it is stored or may be shown.

    ``rooms`` are the codes found taken. The commit queue handles it like any failed commit (the
    rooms are reloaded, their connections closed), and reloading a room owned by a live node
    finds nothing, so this node drops it; the other rooms of the batch come back as stored.
    """

    def __init__(self, rooms: frozenset[str]) -> None:
        super().__init__(f"rooms owned by another node now: {', '.join(sorted(rooms))}")
        self.rooms = rooms


def is_postgres_dsn(db: str) -> bool:
    """Whether ``--db`` names a PostgreSQL database (``postgresql://…``) rather than a SQLite file."""
    return db.startswith(("postgresql://", "postgres://"))


__all__ = [
    "LEASE_SECONDS", "LOST_AFTER", "RENEW_SECONDS", "NodeAddress", "OwnershipLost", "Routing", "is_postgres_dsn",
    "parse_address",
]
