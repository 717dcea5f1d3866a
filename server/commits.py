"""Group commit: one database transaction per reactor turn, nothing shown before it is on disk.

Every change the room logic accepts is *staged* here instead of being committed on the spot;
the first staged change of a turn schedules :meth:`CommitQueue.flush` with ``callLater(0)``,
which Twisted runs after every line read in that turn has been handled and before it polls
again. The flush writes everything staged in one transaction, so one fsync serves every
player who acted in that turn (measured: 1,423 → 3,199 actions/s on its own,
docs/PERFORMANCE.md).

The promise of issue 5 ("an accepted action is on disk before it is acknowledged") is kept by
*holding* messages: from the first staged change of a batch until its commit, everything the
server sends (and every connection it closes) waits in the batch and goes out, in order, only
after the commit. Messages sent while nothing is staged go out at once: they cannot depend on
anything uncommitted. ``ping``/``pong``/``welcome`` (:meth:`CommitQueue.send_now`) show no state
and only wait behind messages already held for their connection.

Rooms are staged by reference and serialised at flush time, so a room changed five times in a
turn is written once, as it is at the commit (this is also what keeps a restore slice's write
from ever replacing a newer one).

With a :class:`ThreadedWriter` (``--commit-thread``, for slow disks) the commit's sync runs on a
worker thread while the loop goes on: SQLite releases the GIL while it syncs, so an fsync no
longer stops the loop. One commit is in flight at a time; the next batch forms meanwhile and
goes when it lands. While anything is staged or in flight, every message is held, so even a
refusal never reflects state that is not on disk yet. Measured on a normal disk it costs more
CPU per action than committing on the loop (the threads hand the GIL back and forth), so it is
not the default.

If a commit fails, the batch's holder (``on_failure``) decides what to undo; the held
messages are handed to it rather than sent (see ``ServerCore._commit_failed``). A batch formed
while a failed one was in flight was built on top of it, so it is undone with it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import Logger

from mineduel.server.cluster import OwnershipLost
from mineduel.server.storage import Blob, PlayerRow, RatedResult, Storage, Write
from mineduel.shared.wire.messages import ServerMessage

if TYPE_CHECKING:
    from twisted.python.failure import Failure

log = Logger(namespace="mineduel.commits")

SLOW_COMMIT = 0.05
"""A commit slower than this (seconds) is logged: a sick disk shows in the log before players notice."""


class Outbox(Protocol):
    """Where typed messages go: the commit queue (for the room logic), then the transport's
    edge (the Twisted factory in production, a recorder in tests), which encodes each one once
    with :func:`~mineduel.shared.wire.codec.encode_message`."""

    def send(self, peer: int, message: ServerMessage) -> None: ...

    def close(self, peer: int) -> None: ...


class Storable(Protocol):
    """A room as the queue needs it: serialised only when its batch is written."""

    def to_blob(self) -> Blob: ...


class StorablePlayer(Protocol):
    """A player as the queue needs it (``server/players.py``): its row taken at the commit."""

    def to_row(self) -> PlayerRow: ...


@dataclass(eq=False, slots=True)
class Request:
    """One client request being handled; ``staged`` once it changed something."""

    peer: int
    rid: Any
    kind: str
    staged: bool = False


@dataclass(slots=True)
class Held:
    """A message (``None``: close the connection) waiting for its batch's commit."""

    peer: int
    message: ServerMessage | None
    request: Request | None


@dataclass
class Batch:
    """Everything staged in one reactor turn."""

    rooms: dict[str, Storable | None] = field(default_factory=dict)
    actions: list[tuple[str, int, Blob]] = field(default_factory=list)
    drop_actions: list[str] = field(default_factory=list)
    results: list[tuple[str, str, float, str]] = field(default_factory=list)
    meta: dict[str, str] = field(default_factory=dict)
    purge_before: float | None = None
    keep_results: int | None = None  # the store's bound: keep the newest this many results
    players: dict[str, StorablePlayer] = field(default_factory=dict)  # by key hash (issue 20)
    rated_results: list[RatedResult] = field(default_factory=list)
    held: list[Held] = field(default_factory=list)
    held_peers: set[int] = field(default_factory=set)
    requests: list[Request] = field(default_factory=list)
    # Per room code, what the room logic noted before its first change in this batch (who sat
    # where): what it needs to undo the batch if its commit fails.
    touched: dict[str, dict[int, int | None]] = field(default_factory=dict)  # room -> {seat id: peer} before the batch

    def __bool__(self) -> bool:
        return bool(
            self.rooms or self.actions or self.drop_actions or self.results or self.meta
            or self.purge_before is not None or self.keep_results is not None
            or self.players or self.rated_results
        )

    def absorb(self, later: Batch) -> None:
        """Take a later batch in (both are undone together after a failed commit)."""
        self.rooms.update(later.rooms)
        self.players.update(later.players)
        self.held += later.held
        self.held_peers |= later.held_peers
        self.requests += later.requests
        for code, noted in later.touched.items():
            self.touched.setdefault(code, noted)

    def to_write(self) -> Write:
        """The batch as one storage write; rooms serialised now, as they are at the commit."""
        rooms = self.rooms
        return Write(
            # Most batches hold actions only: no comprehension (its own frame) for no rooms.
            rooms={code: None if room is None else room.to_blob() for code, room in rooms.items()} if rooms else {},
            actions=self.actions,
            drop_actions=self.drop_actions,
            results=self.results,
            meta=self.meta,
            purge_results_before=self.purge_before,
            keep_results=self.keep_results,
            players=[p.to_row() for p in self.players.values()] if self.players else [],
            rated_results=self.rated_results,
        )


class Writer(Protocol):
    """Runs storage commits off the caller's turn; ``done`` is called back on the reactor thread."""

    def submit(self, write: Write, done: Callable[[BaseException | None], object]) -> None: ...

    def commit_now(self, write: Write) -> BaseException | None:
        """Commit and wait (shutdown); the result, not a later ``done``."""

    def wait(self) -> BaseException | None:
        """Block until the submitted commit has landed; its result."""

    def close(self) -> None: ...


class ThreadedWriter:
    """The sync of each commit on one worker thread.

    A storage with ``prepare``/``finish`` (SQLite) writes the batch into its transaction on the
    loop's thread and only the ``COMMIT`` — the fsync, during which SQLite releases the GIL —
    runs on the worker: measured, running the whole transaction there cost more CPU per action
    than it saved (the two threads handed the GIL back and forth for every statement). Other
    storages commit entirely on the worker.
    """

    def __init__(self, storage: Storage, reactor: Any) -> None:
        self.storage = storage
        self.reactor = reactor
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mineduel-commit")
        self._future: Future[None] | None = None

    def submit(self, write: Write, done: Callable[[BaseException | None], object]) -> None:
        prepare = getattr(self.storage, "prepare", None)
        finish = getattr(self.storage, "finish", None)
        if prepare is not None and finish is not None:
            try:
                prepare(write)
            except Exception as exc:  # noqa: BLE001 - reported like any failed commit
                done(exc)
                return
            future = self._pool.submit(finish)
        else:
            future = self._pool.submit(self.storage.commit, write)
        self._future = future
        future.add_done_callback(lambda f: self.reactor.callFromThread(done, f.exception()))

    def commit_now(self, write: Write) -> BaseException | None:
        return self._pool.submit(self.storage.commit, write).exception()

    def wait(self) -> BaseException | None:
        return None if self._future is None else self._future.exception()

    def close(self) -> None:
        """Stop the worker (the storage belongs to whoever opened it)."""
        self._pool.shutdown(wait=True)


class CommitQueue:
    """Stages writes, holds messages, and commits once per reactor turn.

    It is also the :class:`Outbox` the room logic and the session layer write to.
    """

    def __init__(
        self,
        *,
        storage: Storage,
        clock: IReactorTime,
        outbox: Outbox,
        on_failure: Callable[[Batch], None] | None = None,
        meta: Callable[[], dict[str, str]] | None = None,
        writer: Writer | None = None,
    ) -> None:
        self.storage = storage
        self.clock = clock
        self.outbox = outbox
        self.on_failure = on_failure
        self.meta = meta  # written with every commit (the server clock)
        self.writer = writer  # None: commit on the loop's thread (tests, ":memory:")
        self.batch = Batch()
        self.inflight: Batch | None = None
        self._inflight_started = 0.0
        self.request: Request | None = None
        self._call: IDelayedCall | None = None
        self.commits = 0
        self.failures = 0
        # False from a failed commit until the next one lands (the clock is written every second,
        # so that is the probe): meanwhile requests that would store something are refused at
        # once (``storage_unavailable``) instead of being accepted and then undone.
        self.healthy = True
        self._unhealthy_since = 0.0

    # ----- requests --------------------------------------------------------------------------
    def begin_request(self, peer: int, rid: Any, kind: str) -> Request:
        """Messages and writes from now on belong to this request (until :meth:`end_request`)."""
        request = Request(peer, rid, kind)
        self.request = request
        return request

    def end_request(self) -> None:
        request = self.request
        self.request = None
        if request is not None and request.staged:
            self.batch.requests.append(request)

    # ----- staging --------------------------------------------------------------------------------
    @property
    def pending(self) -> bool:
        """Whether anything is staged or being committed."""
        return bool(self.batch) or self.inflight is not None

    def stage_room(self, code: str, room: Storable | None) -> None:
        """``room`` is stored as it is at the commit; ``None`` deletes it."""
        self._staging().rooms[code] = room

    def stage_actions(self, match_id: str, first_seq: int, entries: list[Blob]) -> None:
        actions = self._staging().actions
        for entry in entries:  # a loop, not extend() over a generator: usually one entry, per action
            actions.append((match_id, first_seq, entry))
            first_seq += 1

    def stage_drop(self, match_id: str) -> None:
        """Forget a match's actions; any of them still waiting in this batch go too."""
        batch = self._staging()
        batch.drop_actions.append(match_id)
        if any(m == match_id for m, _, _ in batch.actions):
            batch.actions = [a for a in batch.actions if a[0] != match_id]

    def stage_result(self, match_id: str, room: str, ended: float, record: str) -> None:
        self._staging().results.append((match_id, room, ended, record))

    def stage_trim_results(self, keep: int) -> None:
        """Past the store's bound: only the newest ``keep`` results stay (oldest first out)."""
        self._staging().keep_results = keep

    def stage_player(self, key_hash: str, player: StorablePlayer) -> None:
        """A player row (issue 20), taken as the player is at the commit."""
        self._staging().players[key_hash] = player

    def stage_rated_result(self, result: RatedResult) -> None:
        self._staging().rated_results.append(result)

    def stage_meta(self, key: str, value: str) -> None:
        self._staging().meta[key] = value

    def stage_purge(self, ended_before: float) -> None:
        """O15: results that ended before this server time go with the batch."""
        self._staging().purge_before = ended_before

    def _staging(self) -> Batch:
        if self.request is not None:
            self.request.staged = True
        if self._call is None:
            self._call = self.clock.callLater(0, self._scheduled_flush)
        return self.batch

    # ----- output (the Outbox interface) -------------------------------------------------------
    def send(self, peer: int, message: ServerMessage) -> None:
        batch = self.batch
        # ``held`` first: once one message waits, the rest of the turn's do without Batch.__bool__.
        if batch.held or self.inflight is not None or batch:
            self._hold(peer, message)
        else:
            self.outbox.send(peer, message)

    def send_now(self, peer: int, message: ServerMessage) -> None:
        """A message that shows no game state (``ping``, ``pong``, ``welcome``): it waits only
        behind messages already held for the same connection, never for a commit."""
        inflight = self.inflight
        if peer in self.batch.held_peers or (inflight is not None and peer in inflight.held_peers):
            self._hold(peer, message)
        else:
            self.outbox.send(peer, message)

    def close(self, peer: int) -> None:
        if self.batch or self.inflight is not None or self.batch.held:
            self._hold(peer, None)
        else:
            self.outbox.close(peer)

    def _hold(self, peer: int, message: ServerMessage | None) -> None:
        batch = self.batch
        batch.held.append(Held(peer, message, self.request))
        batch.held_peers.add(peer)

    def deliver(self, held: list[Held]) -> None:
        """Send held messages now, in order (also used by ``on_failure`` for the ones it keeps)."""
        out = self.outbox
        send_all = getattr(out, "send_all", None)
        if send_all is not None:  # the Twisted factory: one write per connection
            send_all([(item.peer, item.message) for item in held])
            return
        for item in held:
            if item.message is None:
                out.close(item.peer)
            else:
                out.send(item.peer, item.message)

    # ----- committing ---------------------------------------------------------------------------------
    def flush(self, *, wait: bool = False) -> bool:
        """Commit the batch, then release its messages; ``False`` if a commit failed.

        With a writer, the commit is only started here (``True``) unless ``wait``; a batch
        formed while another is in flight waits for it to land.
        """
        call, self._call = self._call, None
        if call is not None and call.active():
            call.cancel()  # flushed early (shutdown, restore, tests): the end-of-turn one is moot
        if self.inflight is not None:
            return True
        batch = self.batch
        self.batch = Batch()
        if not batch:
            self.deliver(batch.held)
            return True
        write = self._write(batch)
        self.inflight = batch
        self._inflight_started = time.perf_counter()
        if self.writer is None:
            return self._landed(batch, _commit(self.storage, write))
        if wait:
            return self._landed(batch, self.writer.commit_now(write))
        self.writer.submit(write, lambda error: self._landed(batch, error))
        return True

    def _scheduled_flush(self) -> None:
        self._call = None
        self.flush()

    def drain(self) -> bool:
        """Commit everything now, waiting for the writer (shutdown); ``False`` if a commit failed."""
        ok = True
        while True:
            if self.inflight is not None and self.writer is not None:
                ok = self._landed(self.inflight, self.writer.wait()) and ok
            elif self.batch or self.batch.held:
                ok = self.flush(wait=True) and ok
            else:
                return ok

    def _write(self, batch: Batch) -> Write:
        if self.meta is not None:
            # As it is now: a value staged earlier in the batch (the 1 s clock tick) may be older
            # than the actions it commits, and a restart must not resume behind them.
            batch.meta.update(self.meta())
        return batch.to_write()

    def _landed(self, batch: Batch, error: BaseException | None) -> bool:
        """A commit finished (on the reactor thread): release its messages, or undo it."""
        if self.inflight is not batch:
            return True  # already handled by drain()
        self.inflight = None
        took = time.perf_counter() - self._inflight_started
        if error is not None:
            self.failures += 1
            if isinstance(error, OwnershipLost):
                # Not a sick database: another node took these rooms (docs/CLUSTER.md). The batch
                # is undone and the rooms dropped; requests go on being served.
                log.warn("rooms_taken_over rooms={rooms} batch_rooms={count}: the batch is undone, those rooms dropped",
                         rooms=",".join(sorted(error.rooms)), count=len(batch.rooms))
            elif self.healthy:
                self.healthy = False
                self._unhealthy_since = time.monotonic()
                log.failure(
                    "commit_failed rooms={rooms} actions={actions} requests={requests}",
                    _failure_of(error), rooms=len(batch.rooms), actions=len(batch.actions),
                    requests=len(batch.requests),
                )
                log.critical(
                    "storage_unavailable error={error!r}: refusing requests that store something until a commit succeeds",
                    error=str(error),
                )
            else:  # the once-a-second probe (the clock) failing again: one line, no traceback
                log.warn("commit_failed_again error={error!r} rooms={rooms} actions={actions}",
                         error=str(error), rooms=len(batch.rooms), actions=len(batch.actions))
            later, self.batch = self.batch, Batch()
            batch.absorb(later)  # built on the failed batch: undone with it
            if self.on_failure is not None:
                self.on_failure(batch)
            return False
        self.commits += 1
        if not self.healthy:
            self.healthy = True
            log.warn("storage_recovered after_s={after:.1f}", after=time.monotonic() - self._unhealthy_since)
        if took > SLOW_COMMIT:
            log.warn("slow_commit ms={ms:.1f} rooms={rooms} actions={actions}",
                     ms=took * 1000, rooms=len(batch.rooms), actions=len(batch.actions))
        self.deliver(batch.held)
        if self.writer is not None and (self.batch or self.batch.held):
            self.flush()  # the batch that formed meanwhile
        return True


def _commit(storage: Storage, write: Write) -> BaseException | None:
    try:
        storage.commit(write)
    except Exception as exc:  # noqa: BLE001 - any storage failure: undo the batch, never crash the loop
        return exc
    return None


def _failure_of(error: BaseException) -> Failure:
    from twisted.python.failure import Failure

    return Failure(error, type(error), error.__traceback__)


__all__ = [
    "Batch", "CommitQueue", "Held", "Outbox", "Request", "Storable", "StorablePlayer", "ThreadedWriter", "Writer",
]
