"""``live_rooms`` across a cluster (issue 21, PROTOCOL.md §16/§18, docs/CLUSTER.md "Live rooms").

A node holds only its own rooms in memory, so behind a load balancer a spectator asking any one
node would see a third of the matches. Each node therefore **shares** its own answer: every
:data:`SHARE_EVERY` seconds, on the server's clock, one statement writes this node's live rooms
(the §16 list it would answer, with each match's start) into its ``nodes`` row and reads those of
every other node whose lease is alive (``PostgresStorage.share_live``). A ``live_rooms`` request
is then answered from memory — this node's rooms as they are now, the others' as they last shared
them — so a flood of requests never puts a query on the database, and the database sees one small
statement per node every few seconds whoever asks.

Why a snapshot per node rather than a query over ``rooms``: the turn is not in a room's row (it
is the actions'), the spectator count is not stored anywhere (§16: nobody watches after a
restart), and filtering listed, watchable, playing rooms would parse every room's blob.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from twisted.internet.interfaces import IReactorTime
from twisted.internet.task import LoopingCall
from twisted.logger import Logger

from mineduel.server import presenter
from mineduel.server.room import Room
from mineduel.shared.wire import messages as m
from mineduel.shared.wire.names import LIVE_ROOMS_MAX

log = Logger(namespace="mineduel.cluster")

SHARE_EVERY = 2.0
"""Seconds between two shares: another node's rooms are at most about twice this old."""

Share = Callable[[list[dict[str, Any]]], Sequence[object]]
"""``PostgresStorage.share_live``: write this node's entries, return every other live node's."""


def entry(room: Room, live: m.LiveRoom) -> dict[str, Any]:
    """What a node shares of one live room: its §16 entry and when its match started (the order)."""
    assert room.match is not None
    return {**live.wire(), "started": room.match.started}


def read_entry(value: object) -> tuple[float, m.LiveRoom] | None:
    """A shared entry as ``(started, LiveRoom)``, or ``None`` if it is not one (checked as the wire
    reader checks a reply: another node's row is data, and a newer server may write more)."""
    if not isinstance(value, Mapping):
        return None
    started = value.get("started")
    if not isinstance(started, (int, float)) or isinstance(started, bool):
        return None
    try:
        return float(started), m.LiveRoom.parse(value)
    except m.BadMessage:
        return None


def merged(own: Sequence[tuple[float, m.LiveRoom]], others: Sequence[tuple[float, m.LiveRoom]], held: Callable[[str], bool],
           limit: int) -> list[m.LiveRoom]:
    """This node's live rooms and the others', the most recently started first (equal starts by
    code), each code once, at most ``limit``. A code this node holds is its own to describe (an
    older owner's last share of it is left out), and of two other nodes naming one code (a room
    taken over between two shares) the later turn is kept."""
    best: dict[str, tuple[float, m.LiveRoom]] = {}
    for started, live in others:
        if held(live.room):
            continue
        seen = best.get(live.room)
        if seen is None or live.turn > seen[1].turn:
            best[live.room] = (started, live)
    for started, live in own:
        best[live.room] = (started, live)
    ordered = sorted(best.values(), key=lambda pair: pair[1].room)
    ordered.sort(key=lambda pair: pair[0], reverse=True)
    return [live for _, live in ordered[:limit]]


class LiveShare:
    """One node's share of ``live_rooms`` (see the module docstring); ``elsewhere`` is what the
    other live nodes shared at the last successful share (empty before one and after a failure:
    the node then answers its own rooms, as a single server does)."""

    def __init__(self, share: Share, own: Callable[[], Sequence[Room]], clock: IReactorTime,
                 every: float = SHARE_EVERY) -> None:
        self.share = share
        self.own = own
        self.clock = clock
        self.every = every
        self.elsewhere: list[tuple[float, m.LiveRoom]] = []
        self.shares = 0  # successful shares (tests, logs)
        self._loop: LoopingCall | None = None

    def start(self) -> None:
        loop = LoopingCall(self.refresh)
        loop.clock = self.clock
        loop.start(self.every, now=True).addErrback(lambda f: log.failure("live rooms share failed", f))
        self._loop = loop

    def stop(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None

    def refresh(self) -> None:
        """Share this node's live rooms and keep the others'; a failure (the database gone) is
        logged and leaves only this node's rooms listed until a share succeeds again."""
        rooms = self.own()
        mine = [entry(room, live) for room, live in zip(rooms, presenter.live_rooms(rooms, None).rooms, strict=True)]
        try:
            rows = self.share(mine)
        except Exception as exc:  # noqa: BLE001 - the list is a convenience: the loop must go on
            log.warn("live_rooms_share_failed error={error!r}", error=str(exc))
            self.elsewhere = []
            return
        self.elsewhere = [e for e in map(read_entry, rows) if e is not None]
        self.shares += 1

    def reply(self, own: Sequence[Room], rid: m.RequestId | None, held: Callable[[str], bool]) -> m.LiveRooms:
        """The ``live_rooms`` reply of a node of a cluster: ``own`` (this node's live rooms, now)
        merged with what the other nodes last shared (:func:`merged`), from memory only."""
        mine = presenter.live_rooms(own, None).rooms
        pairs = [(room.match.started if room.match is not None else 0.0, live) for room, live in zip(own, mine, strict=True)]
        return m.LiveRooms(merged(pairs, self.elsewhere, held, LIVE_ROOMS_MAX), rid)
