"""Rooms to and from storage: staging effects for the group commit, restoring, undoing a failed commit.

The one module of the room logic that holds the :class:`~mineduel.server.storage.Storage` and
the :class:`~mineduel.server.commits.CommitQueue`: the shell hands it the writes of every
operation (:meth:`Persistence.stage`), and it rebuilds rooms from their blobs and stored actions
as after a restart (O12: every seat counts as away, its grace starting now).
"""

from __future__ import annotations

from twisted.logger import Logger

from mineduel.server.commits import Batch, CommitQueue
from mineduel.server.effects import DropActions, Effects, Env, StoreActions, StoreResult, StoreRoom, Write
from mineduel.server.lobby import Lobby
from mineduel.server.match import LiveMatch
from mineduel.server.room import Room, Seat
from mineduel.server.storage import Storage

log = Logger(namespace="mineduel.rooms")


class Persistence:
    """Stages what operations wrote and restores what a restart or a failed commit lost."""

    def __init__(self, storage: Storage, commits: CommitQueue, lobby: Lobby) -> None:
        self.storage = storage
        self.commits = commits
        self.lobby = lobby

    def stage(self, writes: list[Write], touched: dict[str, dict[int, int | None]]) -> None:
        """Stage an operation's writes (in its order) on the open batch."""
        commits = self.commits
        if touched:
            noted = commits.batch.touched
            for code, seats in touched.items():
                noted.setdefault(code, seats)
        for w in writes:
            if type(w) is StoreActions:
                commits.stage_actions(w.match_id, w.first_seq, w.rows)
            elif type(w) is StoreRoom:
                commits.stage_room(w.code, w.room)
            elif type(w) is DropActions:
                commits.stage_drop(w.match_id)
            elif type(w) is StoreResult:
                commits.stage_result(w.match_id, w.room, w.ended, w.record)

    def restore(self, code: str, env: Env, *, stage: bool = True, not_before: float | None = None) -> Effects:
        """Rebuild a stored room (replaying its match) as after a restart (O12: seats away).

        ``stage`` writes the restart's adjustments back; after a failed commit they are not
        written (they are derived again by the next restore), so a failing disk sees no retry loop.
        """
        fx = Effects()
        self.lobby.pending.discard(code)
        loaded = self.storage.load_room(code)
        if loaded is None:
            return fx
        blob, actions = loaded
        room = Room(
            code=blob["code"], created=blob["created"], next_seed=blob["next_seed"],
            seats=[Seat(**s) for s in blob["seats"]], next_sid=blob["next_sid"], number=blob["number"],
        )
        if blob["match"] is not None:
            room.match = LiveMatch.from_blob(blob["match"], actions)
        self.lobby.rooms[code] = room
        now = env.now
        if room.status == "playing" and room.match_seats() is not None:
            for seat in room.seats:
                if seat.away_since is None and seat.expired is None:
                    # Connected when the server went down: the drop is detected now (O12).
                    seat.away_since = now
                    seat.grace = now + env.config.grace_seconds
        else:
            for seat in room.seats:
                seat.ready = seat.rematch = False
        if stage:
            fx.writes.append(StoreRoom(code, room))
        fx.rearm(room, not_before)
        return fx

    def reload_after_failure(self, batch: Batch, env: Env) -> tuple[set[int], Effects]:
        """A batch's commit failed: put every room it touched back as the database has it.

        Returns the connections seated in those rooms before or after the batch: they may have
        been shown nothing uncommitted (their messages were held), but their seats' connection
        state no longer matches, so the caller closes them and they resume with their tokens
        (O12), exactly as after a restart. The rooms are restored the way a restart restores
        them, and their timers wait at least a second so a failing disk is not hammered.
        """
        lobby = self.lobby
        touched: dict[str, dict[int, int | None]] = batch.touched
        codes = set(batch.rooms) | set(touched)
        peers: set[int] = set()
        fx = Effects()
        for code in sorted(codes):
            peers.update(p for p in touched.get(code, {}).values() if p is not None)
            room = lobby.rooms.get(code)
            if room is not None:
                for seat in room.seats:
                    if seat.peer is not None:
                        peers.add(seat.peer)
                        lobby.detach(seat.peer)
                lobby.forget(room)
                fx.rearm(room)  # cancels its timer: it is no longer in the lobby
            fx.extend(self.restore(code, env, stage=False, not_before=env.now + 1.0))
        for peer in peers:
            lobby.detach(peer)
        log.warn("rooms_reloaded count={count} connections={peers}", count=len(codes), peers=len(peers))
        return peers, fx
