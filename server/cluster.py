"""What the room logic may learn from a shared database about room ownership (issue 21, docs/CLUSTER.md).

Kept apart from ``server/storage_pg.py`` so the server can recognise an ownership loss without
importing the PostgreSQL driver (an optional extra).
"""

from __future__ import annotations

LEASE_SECONDS = 5.0
"""A node's lease runs this long past its last renewal, on the database's clock (docs/CLUSTER.md)."""


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


__all__ = ["LEASE_SECONDS", "OwnershipLost", "is_postgres_dsn"]
