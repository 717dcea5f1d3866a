"""A node's own rows in a shared PostgreSQL database (issue 21, docs/CLUSTER.md): its public
address, its lease renewals, where other nodes' rooms are, the takeover sweep's claim and the
clean shutdown's hand-over. Used by server/cluster_node.py through ``PostgresStorage.cluster``.

Kept apart from :class:`~mineduel.server.storage_pg.PostgresStorage` (the ``Storage`` interface)
because it is the cluster's business, not a store's; it shares that storage's connection, its
record of the rooms it holds and their epochs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mineduel.server.cluster import NodeAddress
from mineduel.server.storage import _dumps, _loads
from mineduel.shared.wire.names import LIVE_ROOMS_MAX

if TYPE_CHECKING:
    from mineduel.server.storage_pg import PostgresStorage


class PgNode:
    """What one node reads and writes about the cluster, beside the rooms it stores."""

    def __init__(self, storage: PostgresStorage) -> None:
        self.storage = storage

    def register(self, address: NodeAddress) -> None:
        """Write this node's public address into its ``nodes`` row (what other nodes' ``moved`` name)."""
        self.storage._connection().execute(
            "UPDATE nodes SET host = %s, port = %s, tls = %s, pin = %s WHERE node = %s",
            (address.host, address.port, address.tls, address.pin, self.storage.node),
        )

    def renew(self, clock: float | None) -> None:
        """Renew the lease ("now + 5 s" on the database clock) and note the server clock; raises if
        the database cannot be reached (the node counts the seconds without a renewal)."""
        if self.storage.released:
            raise RuntimeError("this node has ended its lease")
        self.storage._renew(self.storage._connection(), clock)

    def locate(self, code: str) -> NodeAddress | None:
        """The live node that owns room ``code`` if it is another one and says where it is."""
        rows = self.storage._read(
            "SELECT n.node, n.host, n.port, n.tls, n.pin FROM rooms r JOIN nodes n ON n.node = r.owner "
            "WHERE r.code = %s AND r.owner <> %s AND n.lease > now() AND n.host IS NOT NULL AND n.port IS NOT NULL",
            (code, self.storage.node),
        )
        return None if not rows else NodeAddress(rows[0][1], int(rows[0][2]), bool(rows[0][3]), rows[0][4], rows[0][0])

    def live_nodes(self) -> list[NodeAddress]:
        """The other live nodes that say where they are, fewest rooms first (a clean shutdown's choice)."""
        rows = self.storage._read(
            "SELECT n.node, n.host, n.port, n.tls, n.pin, (SELECT count(*) FROM rooms r WHERE r.owner = n.node) AS held "
            "FROM nodes n WHERE n.node <> %s AND n.lease > now() AND n.host IS NOT NULL AND n.port IS NOT NULL "
            "ORDER BY held, n.node COLLATE \"C\"",
            (self.storage.node,),
        )
        return [NodeAddress(host, int(port), bool(tls), pin, node, int(held)) for node, host, port, tls, pin, held in rows]

    def claim_expired(self, limit: int) -> list[str]:
        """The sweep's claim: at most ``limit`` rooms of nodes whose lease ran out become this
        node's (epoch + 1, their ownerless seconds added to their lag), in one statement;
        rooms another node is claiming at the same moment are skipped (``SKIP LOCKED``), never
        waited for. Their codes, to restore (:meth:`load_room` then only reads them)."""
        if self.storage.released:
            return []
        now = self.storage.clock() if self.storage.clock is not None else None
        # One statement in autocommit (atomic as the transaction it was), without a renewal of its
        # own: the beat renewed just before, and a claim that finds nothing writes nothing — no
        # WAL flush a second per node. The rooms found through ``rooms_owner`` from the expired
        # nodes, not by reading every room (what it did a second per node).
        rows = self.storage._connection().execute(
            "WITH claim AS (SELECT r.code, n.clock FROM rooms r JOIN nodes n ON n.node = r.owner "
            "WHERE r.owner IN (SELECT node FROM nodes WHERE lease <= now() AND node <> %(node)s) "
            "AND n.lease <= now() ORDER BY r.code COLLATE \"C\" LIMIT %(limit)s FOR UPDATE OF r SKIP LOCKED) "
            "UPDATE rooms SET owner = %(node)s, epoch = rooms.epoch + 1, "
            "lag = rooms.lag + coalesce(%(now)s::double precision - claim.clock, 0) "
            "FROM claim WHERE rooms.code = claim.code RETURNING rooms.code, rooms.epoch",
            {"node": self.storage.node, "limit": limit, "now": now},
        ).fetchall()
        for code, epoch in rows:
            self.storage._held[code] = int(epoch)
        return sorted(code for code, _ in rows)

    def lost(self) -> set[str]:
        """The rooms this node holds that the database says are no longer its own (taken over while
        it could not renew, or was paused): to be dropped at once, not at their next commit."""
        if not self.storage._held:
            return set()
        codes = sorted(self.storage._held)
        rows = self.storage._read(
            "SELECT h.code FROM unnest(%s::text[], %s::bigint[]) AS h(code, epoch) LEFT JOIN rooms r ON r.code = h.code "
            "WHERE r.code IS NULL OR r.owner IS DISTINCT FROM %s OR r.epoch <> h.epoch",
            (codes, [self.storage._held[c] for c in codes], self.storage.node),
        )
        return {code for (code,) in rows}

    def forget(self, codes: set[str] | frozenset[str], since: float | None) -> None:
        """This node stops serving ``codes`` (lease lost); ``since``: the server clock of its last
        renewal, from which their time without an owner counts if this node takes them back."""
        for code in codes:
            self.storage._held.pop(code, None)
            self.storage.dropped[code] = since

    def release(self, clock: float | None) -> None:
        """A clean shutdown's hand-over: end the lease now (other nodes take the rooms at once) and
        write the final clock; from then on this node stores nothing (a commit would renew it)."""
        self.storage.released = True
        self.storage._connection().execute(
            "UPDATE nodes SET lease = now(), clock = coalesce(%s, clock) WHERE node = %s", (clock, self.storage.node)
        )


    def share_live(self, entries: list[dict[str, Any]]) -> list[object]:
        """``live_rooms`` across the cluster (server/cluster_live.py, schema 6): one statement writes this
        node's live rooms into its ``nodes`` row (only when they changed: no write, no WAL flush,
        for a list that stayed the same) and returns the entries every *other* node with a live
        lease shared, at most ``LIVE_ROOMS_MAX`` of each (a row is data: it is checked by the caller)."""
        if self.storage.released:
            return []
        mine = _dumps(entries[:LIVE_ROOMS_MAX])
        rows = self.storage._connection().execute(
            "WITH mine AS (UPDATE nodes SET live = %(live)s WHERE node = %(node)s AND live IS DISTINCT FROM %(live)s) "
            "SELECT live FROM nodes WHERE node <> %(node)s AND lease > now() AND live IS NOT NULL ORDER BY node",
            {"live": mine, "node": self.storage.node},
        ).fetchall()
        found: list[object] = []
        for (text,) in rows:
            try:
                value = _loads(text)
            except ValueError:
                continue
            if isinstance(value, list):
                found.extend(value[:LIVE_ROOMS_MAX])
        return found


__all__ = ["PgNode"]
