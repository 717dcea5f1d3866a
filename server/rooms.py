"""The rooms' shell: runs the lobby's and the rooms' operations and performs their effects.

Injected, never global: a clock (``IReactorTime``: ``seconds`` and ``callLater``), a
``randbytes`` entropy source, a :class:`~mineduel.server.storage.Storage` and a
:class:`~mineduel.server.commits.CommitQueue` (wrapping an :class:`Outbox`). The rules live in
``room.py`` and ``lobby.py`` and return :class:`~mineduel.server.effects.Effects`; this module
is the only one that turns them into staged writes (``persistence.py``), held messages (the
commit queue) and timers. With ``task.Clock`` and a recording outbox every deadline rule is a
deterministic unit test; the Twisted protocol (``net.py``) only frames and forwards.

Every change is *staged* and committed with the rest of its reactor turn; every message is
held until then (``commits.py``). A refused request raises before anything changes; a failed
commit is undone by reloading the rooms it touched (:meth:`Rooms.reload_after_failure`).

Server clock: deadlines live on a *server clock* = reactor time − ``offset``. ``offset`` is 0
for a fresh database; after a restart it is chosen so the server clock resumes where it was
last written (``meta.clock``, written every second and at shutdown). Time while the server
was down therefore does not count against anyone: every deadline is re-armed with the time it
had left when the server went down (within the 1 s write interval).
"""

from __future__ import annotations

import gc
import json as _json
import time
from collections import deque
from collections.abc import Callable

from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from mineduel.server import presenter
from mineduel.server.commits import Batch, CommitQueue, Outbox
from mineduel.server.config import Config
from mineduel.server.effects import Effects, Env, RandBytes, StoreRoom, log_always
from mineduel.server.limits import RecordCaps
from mineduel.server.lobby import Lobby, PeerInfo, hash_token
from mineduel.server.persistence import Persistence
from mineduel.server.players import Players, check_name
from mineduel.server.room import EPS, Room, Seat
from mineduel.server.storage import Storage
from mineduel.shared.rules.engine import ActionType
from mineduel.shared.wire import messages as m
from mineduel.shared.wire.codec import ProtocolError
from mineduel.shared.wire.names import ClientType, ErrorCode

__all__ = ["PeerInfo", "Room", "Rooms", "Seat", "hash_token"]

log = Logger(namespace="mineduel.rooms")

ACTION_OF: dict[ClientType, ActionType] = {
    ClientType.EXPLORE: ActionType.EXPLORE, ClientType.PLANT: ActionType.PLANT, ClientType.FLAG: ActionType.FLAG,
    ClientType.UNFLAG: ActionType.UNFLAG, ClientType.END_TURN: ActionType.END_TURN,
}
"""A request's kind as the engine's action (enum to enum, never through its string)."""


class Rooms:
    """Every room of one server process: runs the operations and performs what they return."""

    def __init__(
        self,
        *,
        clock: IReactorTime,
        randbytes: RandBytes,
        storage: Storage,
        commits: CommitQueue,
        config: Config,
        wall: Callable[[], float] | None = None,
    ) -> None:
        self.clock = clock
        self.randbytes = randbytes
        self.storage = storage
        self.commits = commits
        self.outbox: Outbox = commits  # every message waits for the commit of what it shows
        self.config = config
        self.wall = wall if wall is not None else clock.seconds
        self.lobby = Lobby()
        count = getattr(storage, "result_count", None)  # optional in the Storage interface
        self.caps = RecordCaps(config, clock.seconds, count() if count is not None else 0)
        self.persistence = Persistence(storage, commits, self.lobby, self.caps)
        # The lobby's own tables (the same objects): what tests and the service read.
        self.rooms: dict[str, Room] = self.lobby.rooms
        self.peers: dict[int, PeerInfo] = self.lobby.peers
        self.peer_seat: dict[int, tuple[Room, Seat]] = self.lobby.peer_seat
        self.open_rooms = self.lobby.open_rooms
        saved = storage.meta("clock")
        self.offset = 0.0 if saved is None else clock.seconds() - float(saved)
        self.may_log: Callable[[str], bool] = log_always  # the session's log budget per address
        self.players = Players(storage, config)  # who each connection is, ratings (issue 20)

    # ----- time -------------------------------------------------------------------------------
    def now(self) -> float:
        """The server clock (see the module docstring)."""
        return self.clock.seconds() - self.offset

    def env(self, room: Room | None = None) -> Env:
        """The moment an operation runs in; on ``room``'s own clock when given (a room taken over
        from another node runs behind the server clock by the seconds it had no owner, its lag:
        PROTOCOL.md §18)."""
        now = self.clock.seconds() - self.offset
        if room is not None:
            now -= room.lag
        return Env(now, self.wall(), self.randbytes, self.config, self.may_log, self.players)

    # ----- performing effects --------------------------------------------------------------------
    def perform(self, fx: Effects) -> None:
        """Stage the writes, then hand over the messages (held until the commit), then re-arm timers."""
        if fx.writes or fx.touched:
            self.persistence.stage(fx.writes, fx.touched)
        outbox = self.outbox
        for peer, message in fx.out:
            if message is None:
                outbox.close(peer)
            else:
                outbox.send(peer, message)
        if fx.touched:  # PROTOCOL.md §16: after the players' messages, each changed room's spectators
            rooms = self.rooms
            for code in fx.touched:
                room = rooms.get(code)
                watching = room.spectators if room is not None else None
                if watching:
                    assert room is not None
                    # Once for all of them, on the room's clock (as ``env(room)``, without an Env).
                    message = presenter.spectate_state(room, self.clock.seconds() - self.offset - room.lag, fx)
                    for peer in watching:
                        outbox.send(peer, message)
        for room, not_before in fx.arm.values():
            self._arm(room, not_before)

    def _arm(self, room: Room, not_before: float | None = None) -> None:
        """Keep one timer per room at its next deadline (turn or grace); none for a room gone.

        A timer that must move later is ``reset`` rather than cancelled and re-created: Twisted
        re-sorts a later reset lazily, while every cancellation counts towards rebuilding its
        whole heap of timers (measured: a ~30 ms turn every ~12 s with 5,000 matches).
        """
        at = room.next_deadline() if self.rooms.get(room.code) is room else None
        call = room.call
        if at is None:
            if call is not None and call.active():
                call.cancel()
            room.call = None
            return
        if not_before is not None:
            at = max(at, not_before)
        delay = max(0.0, at - self.now() + room.lag)  # ``at`` is on the room's clock
        if call is not None and call.active():
            fires = call.getTime() - self.offset - room.lag
            if abs(fires - at) <= EPS:
                return
            if fires < at:
                call.reset(delay)
                return
            call.cancel()
        room.call = self.clock.callLater(delay, self._on_timer, room.code)

    def _on_timer(self, code: str) -> None:
        room = self.rooms.get(code)
        if room is None:
            return
        room.call = None
        self._settle(room, self.env(room))
        if room.call is None:
            self._arm(room)

    def _settle(self, room: Room, env: Env) -> None:
        """Settle due deadlines, store and announce them (before any request is looked at, O6)."""
        if room.due(env.now):
            self.perform(room.settle(env))

    def room(self, code: str) -> Room:
        """The room with ``code`` (restored from storage first if still pending)."""
        if code in self.lobby.pending:
            self._restore_room(code)
        elif code not in self.lobby.rooms and getattr(self.storage, "takes_over", False):
            # A database shared by several servers (PostgreSQL, docs/CLUSTER.md): a room another
            # node served until its lease ran out is taken over when a client names it.
            self._restore_room(code)
        return self.lobby.room(code)

    def _seated(self, peer: int) -> tuple[Room, Seat, Env]:
        """The caller's seat, after its room's due deadlines were settled."""
        room, seat = self.lobby.seated(peer)
        env = self.env(room)
        if room.due(env.now):  # _settle inlined: this runs before every seated request
            self.perform(room.settle(env))
        return room, seat, env

    # ----- requests (each raises ProtocolError and changes nothing, or succeeds) ------------------
    def create(self, peer: int, req: m.CreateRoom) -> None:
        if req.name and _may_sit(self.lobby, peer):  # a seat's name is shown to the opponent, spectators and
            check_name(req.name, self.config.name_deny)  # live_rooms: §17's rules (after §9 step 7's own)
        self.perform(self.lobby.create(self.env(), peer, req))

    def join(self, peer: int, code: str, req: m.Join | m.Spectate) -> None:
        """Take a seat (``join``) or a place to watch (``spectate``, PROTOCOL.md §16)."""
        room = self.room(code)
        env = self.env(room)
        if isinstance(req, m.Spectate):
            self._settle(room, env)
            self.perform(self.lobby.spectate(env, peer, room))
        else:
            free = len(room.seats) < 2 and _may_sit(self.lobby, peer)  # else the lobby's own refusal comes first (§9)
            if req.name and free:
                check_name(req.name, self.config.name_deny)
            if room.quick and room.match is None and room.seats and free:
                # A matched room is its two players' until their first match starts: a seat left
                # during the confirmation is not handed to whoever the leaver gives the code to.
                raise ProtocolError(ErrorCode.ROOM_FULL, "this quick-match room is for its matched players")
            self.perform(self.lobby.join(env, peer, room, req))

    def resume(self, peer: int, code: str, req: m.Resume) -> None:
        room = self.room(code)
        seat = self.lobby.seat_for(peer, room, req.token)
        env = self.env(room)
        self._settle(room, env)
        self.perform(self.lobby.resume(env, peer, room, seat, req.id))

    def ready(self, peer: int, req: m.Ready) -> None:
        room, seat, env = self._seated(peer)
        self.perform(room.ready(env, seat, ready=req.ready, seed=req.client_seed))

    def leave(self, peer: int) -> None:
        watched = self.lobby.unwatch(peer)
        if watched is not None:  # a spectator stops watching (§16): the players see the new count
            self.perform(presenter.count_updates(watched, self.env(watched)))
            return
        room, seat, env = self._seated(peer)
        fx = room.leave(env, seat)
        self.lobby.peer_seat.pop(peer, None)
        if not room.seats:
            self.lobby.close_for_spectators(room, fx, "deleted")
            self.lobby.forget(room)
        self.perform(fx)
        if room.seats and room.abandoned():  # §17: the other seat left before, disconnected
            _release(self, room, env)


    def act(self, peer: int, req: m.MatchAction) -> int:
        """A rules action (explore/plant/flag/unflag/end_turn); returns the new seq."""
        room, seat, env = self._seated(peer)
        self.perform(room.act(env, seat, ACTION_OF[req.type], req.cell, match_id=req.match_id, seq=req.seq))
        assert room.match is not None
        return room.match.seq

    def resign(self, peer: int, req: m.Resign) -> int:
        room, seat, env = self._seated(peer)
        self.perform(room.resign(env, seat, match_id=req.match_id))
        assert room.match is not None
        return room.match.seq

    def rematch(self, peer: int, req: m.Rematch) -> None:
        room, seat, env = self._seated(peer)
        self.perform(room.rematch(env, seat, seed=req.client_seed))

    def get_record(self, peer: int, req: m.GetRecord) -> None:
        text = self.storage.load_result(req.match_id)
        if text is None:
            if self.lobby.running(req.match_id):
                raise ProtocolError(ErrorCode.NOT_FINISHED, "the record is published after the end")
            raise ProtocolError(ErrorCode.NOT_FOUND, f"no finished match {req.match_id} (kept 24 h)")
        self.outbox.send(peer, m.RecordReply(req.match_id, _json.loads(text), req.id))

    def peer_lost(self, peer: int) -> None:
        """O12: the connection is gone (clean close at once, silent drop by the idle timeout)."""
        self.lobby.peers.pop(peer, None)
        watched = self.lobby.unwatch(peer)
        if watched is not None:  # a spectator gone (§16): the players see the new count
            self.perform(presenter.count_updates(watched, self.env(watched)))
            return
        found = self.lobby.peer_seat.get(peer)
        if found is None:
            return
        room, seat = found
        env = self.env(room)
        self._settle(room, env)  # while this seat still counts as connected
        self.lobby.peer_seat.pop(peer, None)
        if seat.peer != peer:
            return  # pragma: no cover - the seat moved on (resume) and the index was stale
        self.perform(room.peer_lost(env, seat))
        if room.abandoned():
            _release(self, room, env)

    # ----- housekeeping -------------------------------------------------------------------------
    def sweep(self) -> int:
        """O15: drop expired rooms and results; rooms with a match in progress never expire."""
        env = self.env()
        if not self.commits.pending:  # a staged player is not forgotten before its commit
            self.players.sweep(env.now)
        before = len(self.rooms)
        fx = self.lobby.expire(env)
        out, fx.out = fx.out, []
        for peer, message in out:  # told before the deletion is staged, as ever
            if message is not None:
                self.outbox.send(peer, message)
        self.perform(fx)
        gone = before - len(self.rooms)
        self.commits.stage_purge(env.now - self.config.result_ttl)
        self.caps.forget_old()
        count = getattr(self.storage, "result_count", None)
        if count is not None:
            self.caps.stored = count()  # as committed so far: the purge staged now comes off later
        if gone:
            log.info("rooms_expired count={count}", count=gone)
        return gone

    def tick(self) -> None:
        """Write the server clock (every ``clock_interval``; every commit writes it too)."""
        self.commits.stage_meta("clock", repr(self.now()))

    def shutdown(self) -> None:
        """Cancel timers, commit what is staged and write the clock one last time."""
        for room in self.rooms.values():
            if room.call is not None and room.call.active():
                room.call.cancel()
            room.call = None
        self.tick()
        self.commits.drain()

    def reload_after_failure(self, batch: Batch) -> set[int]:
        """A batch's commit failed: reload the rooms it touched; the connections to close."""
        self.players.reload(batch.players)  # first: the rooms' restore reads them
        peers, fx = self.persistence.reload_after_failure(batch, self.env())
        self.perform(fx)
        return peers

    def _restore_room(self, code: str) -> None:
        self.perform(self.persistence.restore(code, self.env()))

    def restore_all(self) -> Deferred[int]:
        """Bring back every stored room in slices of at most ``restore_slice`` seconds of work.

        A request naming a room that is still pending restores it on the spot.
        """
        codes = self.storage.room_codes()
        self.lobby.pending.update(codes)
        owners = getattr(self.storage, "room_owners", None)  # optional in the Storage interface
        if owners is not None:
            # Counted against their addresses before they are restored (limits on rooms per address).
            for code, owner in owners().items():
                self.lobby.own(code, owner)
        queue = deque(codes)
        done: Deferred[int] = Deferred()
        count = [0]
        # Restored rooms are long-lived and make no reference cycles, yet each one adds to the
        # heap a full collection must walk: measured, those collections were the restore's
        # longest stalls (benchmarks/bench_server.py --mode restore). So no automatic collection
        # while restoring, and the restored heap is frozen out of later full collections.
        collecting = gc.isenabled()
        gc.disable()

        def step() -> None:
            # A slice of restoring in one reactor turn, its commit in the next (the restored
            # rooms are serialised then, as they are at that commit), the next slice after that.
            started = time.perf_counter()
            try:
                while queue and time.perf_counter() - started < self.config.restore_slice:
                    code = queue.popleft()
                    if code in self.lobby.pending:
                        self._restore_room(code)
                        count[0] += 1
            except BaseException:
                if collecting:
                    gc.enable()  # a failed restore must not leave the process without collection
                raise
            self.clock.callLater(0, commit_then_step)

        def commit_then_step() -> None:
            if self.commits.pending:
                self.commits.flush()
            if queue:
                self.clock.callLater(0, step)
            else:
                gc.freeze()
                if collecting:
                    gc.enable()
                log.info("restore_done rooms={count}", count=count[0])
                done.callback(count[0])

        self.clock.callLater(0, step)
        return done


def _may_sit(lobby: Lobby, peer: int) -> bool:
    """Whether the lobby would let this connection take a seat (neither seated nor watching)."""
    return peer not in lobby.peer_seat and peer not in lobby.peer_watch


def _release(rooms: Rooms, room: Room, env: Env) -> None:
    """§17: a finished quick room nobody is connected to goes at once (its result stays, O15), so it
    no longer counts against its address's rooms; its tokens then answer ``room_not_found``."""
    fx = Effects()
    fx.touch(room)
    rooms.lobby.close_for_spectators(room, fx, "deleted")
    room.delete(fx)
    rooms.lobby.forget(room)
    if env.may_log(room.owner):
        log.info("quick_room_released room={room}", room=room.code)
    rooms.perform(fx)


def set_spectators(rooms: Rooms, peer: int, req: m.SetSpectators) -> None:
    """§16: the room's creator lets others watch it, or not (the room's ``watchable``, stored).

    Only the creator (seat 0, while it sits there): its choice made the room, and the joiner
    came in knowing it. Never in a quick-match room (``not_host``): there it is both players'
    choice at once (§17), and neither may overrule the other. Off is taken at any moment
    (privacy first: the ones watching get ``room_closed`` ``spectating_off`` and stop, the
    players see the count go); on only while no match runs (``match_running``): a match both
    started unwatched stays unwatched. Asking for what already holds is ``ok`` and changes nothing.
    """
    room, seat, env = rooms._seated(peer)
    if room.quick:
        raise ProtocolError(
            ErrorCode.NOT_HOST, "a quick-match room is watchable only if both players allowed it; it cannot change",
        )
    if seat.sid != 0:
        raise ProtocolError(ErrorCode.NOT_HOST, f"only the player who created room {room.code} chooses who may watch")
    if req.allowed and room.match is not None and not room.match.over:
        raise ProtocolError(ErrorCode.MATCH_RUNNING, "watching can be turned on before or between matches only")
    if room.watchable is req.allowed:
        return
    fx = Effects()
    fx.touch(room)
    room.watchable = req.allowed
    fx.writes.append(StoreRoom(room.code, room))
    if not req.allowed:
        rooms.lobby.close_for_spectators(room, fx, "spectating_off")
    presenter.room_updates(room, env, fx)
    if env.may_log(room.owner):
        log.info("room_spectators room={room} allowed={allowed}", room=room.code, allowed=req.allowed)
    rooms.perform(fx)
