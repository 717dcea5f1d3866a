"""One node of several sharing a PostgreSQL database (issue 21, docs/CLUSTER.md, PROTOCOL.md §18).

Beside what the storage already guarantees (every commit fenced by room owner and epoch), the node:

* **renews its lease every second** on the server's clock abstraction (a ``LoopingCall``, so
  tests drive it with ``task.Clock``), whatever it commits; a node that could not renew for
  :data:`~mineduel.server.cluster.LOST_AFTER` seconds stops serving its rooms before anyone may
  take them (:data:`~mineduel.server.cluster.LEASE_SECONDS`): their connections get ``moved``
  naming the cluster's front address, or ``server_closing`` ``lease_lost``, and are closed. A
  renewal that succeeds after such a gap (the process was paused) asks which rooms it lost and
  drops those at once, instead of at their next commit.
* **sweeps**: after each renewal it claims a batch of the rooms of nodes whose lease ran out
  (``FOR UPDATE SKIP LOCKED``) and restores them in slices, as a restart does, so a room of a
  dead node is served again even before any of its players comes back (docs/CLUSTER.md "Takeover").
* **answers ``moved``** for a room another live node owns (the session asks, :meth:`moved`).
* **hands over** at a clean shutdown: the lease ends at once and every connection of a room
  gets ``moved`` naming the live node with the fewest rooms (:meth:`hand_over`).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from twisted.internet.interfaces import IReactorTime
from twisted.internet.task import LoopingCall
from twisted.logger import Logger

from mineduel.server.cluster import LOST_AFTER, RENEW_SECONDS, NodeAddress
from mineduel.server.effects import Effects
from mineduel.shared.wire import messages as m
from mineduel.shared.wire.codec import ProtocolError
from mineduel.shared.wire.names import ErrorCode

if TYPE_CHECKING:
    from mineduel.server.cluster_pg import PgNode
    from mineduel.server.session import ServerCore

log = Logger(namespace="mineduel.cluster")

SWEEP_BATCH = 64
"""Rooms claimed by one sweep (one short transaction); the next batch waits until these are restored."""

LEASE_LOST = "lease_lost"
"""``server_closing``'s reason when a node without a lease has no front address to send players to."""


class ClusterNode:
    """The node side of the cluster for one :class:`~mineduel.server.session.ServerCore`."""

    def __init__(
        self,
        core: ServerCore,
        rows: PgNode,
        clock: IReactorTime,
        *,
        advertise: NodeAddress,
        front: NodeAddress | None = None,
        renew_every: float = RENEW_SECONDS,
        lost_after: float = LOST_AFTER,
        sweep_batch: int = SWEEP_BATCH,
    ) -> None:
        self.core = core
        self.rows = rows
        self.clock = clock
        self.advertise = advertise
        self.front = front
        self.renew_every = renew_every
        self.lost_after = lost_after
        self.sweep_batch = sweep_batch
        self.renewed = clock.seconds()  # when the last successful renewal started (reactor time)
        self.renewed_clock: float | None = None  # the server clock then
        self.serving = True  # False from a lost lease until the next renewal
        self.swept = 0  # rooms claimed by sweeps so far (tests, logs)
        self._queue: deque[str] = deque()  # claimed rooms still to restore
        self._full = False  # the last sweep claimed a whole batch
        self._loop: LoopingCall | None = None

    # ----- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Say where clients reach this node, give the storage the server clock, start the beat."""
        self.rows.storage.clock = self.core.rooms.now
        self.rows.register(self.advertise)
        self.core.cluster = self
        self.renewed = self.clock.seconds()
        self.renewed_clock = self.core.rooms.now()
        loop = LoopingCall(self.beat)
        loop.clock = self.clock
        loop.start(self.renew_every, now=False).addErrback(lambda f: log.failure("cluster beat failed", f))
        self._loop = loop
        log.info("cluster_node node={node} advertise={host}:{port} front={front}", node=self.rows.storage.node,
                 host=self.advertise.host, port=self.advertise.port,
                 front=None if self.front is None else f"{self.front.host}:{self.front.port}")

    def stop(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None

    # ----- the beat: renew, notice a lost lease, sweep -----------------------------------------------
    def beat(self) -> None:
        """Once a second: renew the lease; without one for ``lost_after`` seconds stop serving."""
        if self.core.closing:
            return
        started = self.clock.seconds()
        now = self.core.rooms.now()
        try:
            self.rows.renew(now)
        except Exception as exc:  # noqa: BLE001 - any database failure is a missed renewal
            without = self.clock.seconds() - self.renewed  # the failed attempt's own wait included
            if self.serving and without >= self.lost_after:
                log.critical("lease_lost after_s={after:.1f} error={error!r}: dropping every room",
                             after=without, error=str(exc))
                self.serving = False
                self._drop(set(self.core.rooms.rooms) | set(self._queue), self._front_moved, pending=True)
            return
        gap, self.renewed, self.renewed_clock, self.serving = started - self.renewed, started, now, True
        if gap >= self.lost_after:
            # Renewed, but late (the process was paused, or the database away): rooms may have been taken.
            try:
                lost = self.rows.lost()
            except Exception:  # noqa: BLE001 - their next commit finds out all the same (the fence)
                log.failure("cluster could not check its rooms")
                lost = set()
            if lost:
                log.warn("rooms_lost_while_away rooms={count} gap_s={gap:.1f}", count=len(lost), gap=gap)
                self._drop(lost, self._owner_moved, pending=False)
        self.sweep()

    def sweep(self) -> int:
        """Claim a batch of rooms of expired leases (none while the last batch is being restored)."""
        if self._queue:
            return 0
        try:
            codes = self.rows.claim_expired(self.sweep_batch)
        except Exception:  # noqa: BLE001 - the next beat sweeps again
            log.failure("takeover sweep failed")
            return 0
        self._full = len(codes) >= self.sweep_batch
        stale = {code for code in codes if code in self.core.rooms.rooms}
        if stale:
            # Claimed from another node, yet still in memory: this node lost them once without
            # noticing (a pause whose check of what it lost failed). What memory holds is the past:
            # forgotten, its connections closed (they resume), so the room is rebuilt from its rows
            # and never served from two copies.
            log.warn("rooms_reclaimed_while_held rooms={count}: the copies in memory dropped", count=len(stale))
            self._evict(stale, lambda code: None)
        if codes:
            log.info("rooms_claimed count={count}", count=len(codes))
            self.swept += len(codes)
            self.core.rooms.lobby.pending.update(codes)
            self._queue.extend(codes)
            self.clock.callLater(0, self._restore_slice)
        return len(codes)

    def _restore_slice(self) -> None:
        """Claimed rooms restored as a restart restores them: a slice of work per reactor turn,
        its commit in the next (a request naming one restores it at once)."""
        rooms = self.core.rooms
        started = time.perf_counter()
        try:
            while self._queue and time.perf_counter() - started < rooms.config.restore_slice:
                code = self._queue.popleft()
                if code in rooms.lobby.pending:
                    try:
                        rooms.room(code)
                    except ProtocolError as exc:
                        if exc.code is not ErrorCode.ROOM_NOT_FOUND:
                            raise
                        # Taken by another node since the claim (this node's lease ran out meanwhile:
                        # a pause, a slow database): not this node's to serve, nothing lost.
                        log.info("takeover_gone room={room}: another node took it before its restore", room=code)
        except Exception:  # noqa: BLE001 - that room stays pending; a request restores it
            log.failure("takeover restore failed")
        if rooms.commits.pending:
            self.clock.callLater(0, rooms.commits.flush)
        if self._queue:
            self.clock.callLater(0, self._restore_slice)
        elif self._full and self.serving and not self.core.closing:
            # A full batch: more may wait. The next one at once, not at the next beat, so a dead
            # node's rooms come back at the restore's pace; nodes sweeping together still split
            # them batch by batch (SKIP LOCKED).
            self.clock.callLater(0, self.sweep)

    # ----- routing ------------------------------------------------------------------------------------
    def moved(self, code: str, request: str, rid: m.RequestId | None) -> m.Moved | None:
        """PROTOCOL.md §18: the ``moved`` for a room another live node owns, else None (not found)."""
        try:
            where = self.rows.locate(code)
        except Exception:  # noqa: BLE001 - cannot tell: the room is not found here, as before
            log.failure("cluster could not locate room={room}", room=code)
            return None
        return None if where is None else _moved(code, where, request, rid)

    def hand_over(self) -> Mapping[int, m.Moved]:
        """A clean shutdown (everything stored): end the lease, name the live node with the fewest rooms."""
        self.stop()
        self._queue.clear()  # claimed, not restored: with the lease ended the other nodes' sweeps take them
        try:
            targets = self.rows.live_nodes()
        except Exception:  # noqa: BLE001 - nobody to name: server_closing as on one server
            targets = []
        try:
            self.rows.release(self.core.rooms.now())
        except Exception:  # noqa: BLE001 - the lease runs out by itself within 5 s
            log.failure("cluster could not end its lease")
            return {}
        if not targets:
            return {}
        target = targets[0]
        log.info("hand_over to={node} rooms={count}", node=target.node, count=len(self.core.rooms.rooms))
        return {peer: _moved(code, target, None, None) for peer, code in self._connections(set(self.core.rooms.rooms))}

    # ----- dropping rooms -------------------------------------------------------------------------
    def _connections(self, codes: set[str]) -> list[tuple[int, str]]:
        """Each connection seated in or watching one of ``codes``, with that room."""
        found: list[tuple[int, str]] = []
        for code in sorted(codes):
            room = self.core.rooms.rooms.get(code)
            if room is not None:
                found.extend((seat.peer, code) for seat in room.seats if seat.peer is not None)
                found.extend((peer, code) for peer in room.spectators or ())
        return found

    def _front_moved(self, code: str) -> m.Moved | None:
        return None if self.front is None else _moved(code, self.front, None, None)

    def _owner_moved(self, code: str) -> m.Moved | None:
        try:
            where = self.rows.locate(code)
        except Exception:  # noqa: BLE001 - then the front, or server_closing
            where = None
        return _moved(code, where, None, None) if where is not None else self._front_moved(code)

    def _drop(self, codes: set[str], target: _Target, *, pending: bool) -> None:
        """Stop serving ``codes``: their connections told where to go (``moved``) or that this node
        closes for them (``server_closing``), and closed; the rooms forgotten, their timers off.
        ``pending``: this node may still own them (its lease lost): the first request naming one
        here restores it if it is still this node's by then."""
        self._evict(codes, lambda code: target(code) or m.ServerClosing(LEASE_LOST))
        self._queue = deque(code for code in self._queue if code not in codes)
        self.rows.forget(codes, self.renewed_clock)
        lobby = self.core.rooms.lobby
        if pending:
            lobby.pending.update(codes)
        else:
            lobby.pending.difference_update(codes)

    def _evict(self, codes: set[str], farewell: Callable[[str], m.ServerMessage | None]) -> None:
        """Forget ``codes`` in memory: each connection seated in or watching one gets ``farewell``
        (if any) and is closed; the rooms leave the lobby, their timers off."""
        rooms = self.core.rooms
        lobby = rooms.lobby
        outbox = rooms.outbox
        fx = Effects()
        for peer, code in self._connections(codes):
            message = farewell(code)
            if message is not None:
                outbox.send(peer, message)
            outbox.close(peer)
            lobby.detach(peer)
            lobby.unwatch(peer)
        for code in codes:
            room = lobby.rooms.get(code)
            if room is not None:
                lobby.forget(room)
                fx.rearm(room)  # cancels its timer: it is no longer in the lobby
            self.core.quick.confirms.pop(code, None)
        rooms.perform(fx)


def _moved(code: str, where: NodeAddress, request: str | None, rid: m.RequestId | None) -> m.Moved:
    return m.Moved(code, where.host, where.port, where.tls, where.pin if where.tls else None, request,
                   rid if request is not None else None)


if TYPE_CHECKING:
    _Target = Callable[[str], m.Moved | None]


__all__ = ["LEASE_LOST", "SWEEP_BATCH", "ClusterNode"]
