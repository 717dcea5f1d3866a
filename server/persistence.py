"""Rooms to and from storage: staging effects for the group commit, restoring, undoing a failed commit.

The one module of the room logic that holds the :class:`~mineduel.server.storage.Storage` and
the :class:`~mineduel.server.commits.CommitQueue`: the shell hands it the writes of every
operation (:meth:`Persistence.stage`), and it rebuilds rooms from their blobs and stored actions
as after a restart (O12: every seat counts as away, its grace starting now).
"""

from __future__ import annotations

from twisted.logger import Logger

from mineduel.server.commits import Batch, CommitQueue
from mineduel.server.effects import DropActions, Effects, Env, StoreActions, StorePlayers, StoreResult, StoreRoom, Write
from mineduel.server.limits import RecordCaps
from mineduel.server.lobby import Lobby
from mineduel.server.match import LiveMatch
from mineduel.server.room import Room, Seat
from mineduel.server.storage import Storage
from mineduel.shared.wire import messages as m

log = Logger(namespace="mineduel.rooms")


class Persistence:
    """Stages what operations wrote and restores what a restart or a failed commit lost."""

    def __init__(self, storage: Storage, commits: CommitQueue, lobby: Lobby, caps: RecordCaps | None = None) -> None:
        self.storage = storage
        self.commits = commits
        self.lobby = lobby
        self.caps = caps  # None: every record is kept (until the retention sweep)

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
                self._stage_result(w)
            elif type(w) is StorePlayers:  # after its match's result: in the same commit (issue 20)
                for player in w.players:
                    commits.stage_player(player.key_hash, player)
                for result in w.results:
                    commits.stage_rated_result(result)

    def _stage_result(self, w: StoreResult) -> None:
        """A finished match's record, unless a record cap says no (its players have it from
        ``match_end`` all the same); past the store's bound the oldest records go."""
        caps = self.caps
        if caps is None:
            self.commits.stage_result(w.match_id, w.room, w.ended, w.record)
            return
        room = self.lobby.rooms.get(w.room)
        players = room.match.players if room is not None and room.match is not None else ()
        refused = caps.keep(s.owner for s in (room.seats if room is not None else ()) if s.sid in players)
        if refused is not None:
            cap, first = refused
            if first:
                log.info("record_cap_reached cap={cap} room={room} match={match}: records beyond it are not kept",
                         cap=cap, room=w.room, match=w.match_id)
            return
        self.commits.stage_result(w.match_id, w.room, w.ended, w.record)
        keep = caps.trim_to()
        if keep is not None:
            self.commits.stage_trim_results(keep)

    def restore(self, code: str, env: Env, *, stage: bool = True, not_before: float | None = None) -> Effects:
        """Rebuild a stored room (replaying its match) as after a restart (O12: seats away).

        ``stage`` writes the restart's adjustments back; after a failed commit they are not
        written (they are derived again by the next restore), so a failing disk sees no retry loop.
        """
        fx = Effects()
        self.lobby.pending.discard(code)
        loaded = self.storage.load_room(code)
        if loaded is None:
            self.lobby.disown(code)
            return fx
        blob, actions = loaded
        room = Room(
            code=blob["code"], created=blob["created"], next_seed=blob["next_seed"],
            seats=[Seat(**s) for s in blob["seats"]], next_sid=blob["next_sid"], number=blob["number"],
            owner=blob.get("owner", ""), listed=blob.get("listed", False) is True,
            watchable=blob.get("watchable", True) is not False,
            rated=blob.get("rated", False) is True, quick=blob.get("quick", False) is True,
            lag=float(blob.get("lag") or 0.0),  # PROTOCOL.md §18: its time without an owner
        )
        ratings = blob.get("ratings")
        if isinstance(ratings, dict):
            room.ratings = {int(rs): m.RatingChange.parse(c) for rs, c in ratings.items()}
        if blob["match"] is not None:
            room.match = LiveMatch.from_blob(blob["match"], actions)
        self.lobby.rooms[code] = room
        self.lobby.disown(code)  # as indexed while pending, if it was: the blob says
        self.lobby.own(code, room.owner)
        now = env.now - room.lag  # the room's own clock
        if not_before is not None:
            not_before -= room.lag
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
                # Its spectators may hold views of the undone change: closed too (PROTOCOL.md §16).
                for peer in list(room.spectators or ()):
                    peers.add(peer)
                    lobby.unwatch(peer)
                lobby.forget(room)
                fx.rearm(room)  # cancels its timer: it is no longer in the lobby
            try:
                fx.extend(self.restore(code, env, stage=False, not_before=env.now + 1.0))
            except Exception:  # noqa: BLE001 - the database cannot even be read (a lost PostgreSQL)
                # Left pending: the first request naming it restores it, once it can be read.
                log.failure("room_not_reloaded room={room}", room=code)
                lobby.pending.add(code)
        for peer in peers:
            lobby.detach(peer)
        log.warn("rooms_reloaded count={count} connections={peers}", count=len(codes), peers=len(peers))
        return peers, fx
