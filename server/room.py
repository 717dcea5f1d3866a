"""One room: its seats, its match and the rules that move them (RULES.md §7 O1–O16).

Every operation takes an :class:`~mineduel.server.effects.Env` (the time, entropy and config
it runs with) and *returns* its :class:`~mineduel.server.effects.Effects`: the messages for each
seat (built by ``presenter.py``), the rows to stage and the timers to re-arm. It changes only
the room; the shell (``rooms.py``) performs the effects. A request checks everything before it
changes anything: a refusal raises ``ProtocolError`` and has no effects. Due deadlines are
settled (:meth:`Room.settle`) by the shell before any request looks at the room (O6).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import orjson
from twisted.internet.interfaces import IDelayedCall
from twisted.logger import Logger

from mineduel.server import presenter
from mineduel.server.config import Config
from mineduel.server.effects import DropActions, Effects, Env, StoreActions, StorePlayers, StoreResult, StoreRoom
from mineduel.server.match import LiveMatch, RecordEntry
from mineduel.server.storage import Blob
from mineduel.shared.rules.engine import Action, ActionType, Outcome, Refusal
from mineduel.shared.rules.vocabulary import Reason
from mineduel.shared.wire import messages as m
from mineduel.shared.wire.codec import ProtocolError
from mineduel.shared.wire.messages import RecordJson
from mineduel.shared.wire.names import ErrorCode

log = Logger(namespace="mineduel.rooms")

EPS = 1e-6
"""Float slack when a timer fires exactly at a deadline."""

BLOB_VERSION = 1


@dataclass
class Seat:
    """A seat in a room; ``sid`` is stable, ``peer`` is the live connection (not stored)."""

    sid: int
    token_hash: str
    name: str = ""
    seed: str = ""  # latest client seed (R1); empty if the client never sent one
    ready: bool = False
    rematch: bool = False
    away_since: float | None = None  # O12: when the drop was detected, during a match
    grace: float | None = None  # O12: away_since + grace_seconds
    expired: float | None = None  # O12: when the grace ran out while the opponent was away too
    owner: str = ""  # owner tag of the address that last took the seat (server/limits.py: record caps)
    # Issue 20 (PROTOCOL.md §17): the seat's player once identified (public id, name#tag) and its
    # rating as last seen (refreshed when a rated match of this room ends).
    player: str | None = None
    display: str | None = None
    rating: float | None = None
    provisional: bool | None = None
    peer: int | None = None
    # Not stored: the resume bucket (Lobby.resume), full again after a restart.
    resumes: float | None = None
    resumed_at: float = 0.0

    def to_blob(self) -> Blob:
        return {
            "sid": self.sid, "token_hash": self.token_hash, "name": self.name, "seed": self.seed,
            "ready": self.ready, "rematch": self.rematch, "away_since": self.away_since,
            "grace": self.grace, "expired": self.expired, "owner": self.owner,
            "player": self.player, "display": self.display, "rating": self.rating, "provisional": self.provisional,
        }

    def clear_away(self) -> None:
        self.away_since = self.grace = self.expired = None


@dataclass
class Room:
    code: str
    created: float
    next_seed: str  # server seed of the next match; its commitment is published in advance
    seats: list[Seat] = field(default_factory=list)  # in join order
    next_sid: int = 0
    number: int = 0  # matches started in this room (R1 nonce of the last one)
    match: LiveMatch | None = None
    call: IDelayedCall | None = None  # the room's one timer (armed by the shell only)
    owner: str = ""  # owner tag of the address that created it: its rooms are counted (server/limits.py)
    listed: bool = False  # its creator asked LAN discovery to name it while it waits (PROTOCOL.md §12)
    watchable: bool = True  # its creator let spectators watch it (PROTOCOL.md §16; stored)
    rated: bool = False  # issue 20: its matches change both players' ratings (PROTOCOL.md §17; stored)
    quick: bool = False  # made by the quick match (server/quickmatch.py; stored)
    # Seconds of server clock the room spent without an owner (taken over from another node,
    # PROTOCOL.md §18): its own clock runs this far behind, so that time is given back (stored).
    lag: float = 0.0
    # The last match's rating change per record seat (§17 match_end.rating; stored, shown again on resume).
    ratings: dict[int, m.RatingChange] | None = None
    # Not stored: the connections watching it (PROTOCOL.md §16), each with its address's owner tag;
    # ``None`` while nobody watches (no dict per room: 5,000 rooms, test_server_commits).
    spectators: dict[int, str] | None = None
    # Not stored: a cache of ``presenter._spectate_players`` (the match and both seats it was made
    # for, and the list), so every view of a watched room shares one players list while both are there.
    spectate_players: tuple[LiveMatch, Seat, Seat, list[m.SpectatePlayer]] | None = field(default=None, repr=False, compare=False)

    # ----- queries -----------------------------------------------------------------------------
    @property
    def status(self) -> str:
        if self.match is None:
            return "waiting"
        return "finished" if self.match.over else "playing"

    def expires(self, config: Config) -> float | None:
        """O15: waiting rooms 24 h after creation, results 24 h after the end, play never."""
        if self.match is None:
            return self.created + config.room_ttl
        if not self.match.over:
            return None
        assert self.match.ended is not None
        return self.match.ended + config.result_ttl

    def abandoned(self) -> bool:
        """A finished quick-match room nobody is connected to any more (PROTOCOL.md §17): released at
        once, as if both had sent ``leave`` (strangers rematch only while both are there)."""
        return self.quick and self.status == "finished" and all(s.peer is None for s in self.seats)

    def seat(self, sid: int) -> Seat:
        for seat in self.seats:
            if seat.sid == sid:
                return seat
        raise KeyError(sid)

    def other(self, seat: Seat) -> Seat | None:
        for s in self.seats:
            if s is not seat:
                return s
        return None

    def match_seats(self) -> tuple[Seat, Seat] | None:
        """The seats of the current match, by record seat, if both are still seated."""
        if self.match is None:
            return None
        # One pass over the (at most two) seats: this runs twice per action (timer, messages).
        first, second = self.match.players
        a = b = None
        for seat in self.seats:
            if seat.sid == first:
                a = seat
            elif seat.sid == second:
                b = seat
        if a is None or b is None:
            return None
        return a, b

    def room_seat(self, record_seat: int) -> Seat:
        assert self.match is not None
        return self.seat(self.match.players[record_seat])

    def same_pair(self) -> bool:
        return (
            self.match is not None
            and len(self.seats) == 2
            and set(self.match.players) == {s.sid for s in self.seats}
        )

    def next_deadline(self) -> float | None:
        """The room's next deadline (turn or grace), if its match runs."""
        match = self.match
        if match is None or match.state.over or self.match_seats() is None:
            return None
        at = match.deadline
        for seat in self.seats:
            grace = seat.grace
            if grace is not None and seat.expired is None and (at is None or grace < at):
                at = grace
        return at

    def due(self, now: float) -> bool:
        """Whether any deadline of the match is due by ``now`` (cheap: before every request)."""
        match = self.match
        if match is None or match.state.over:
            return False
        by = now + EPS
        deadline = match.deadline
        if deadline is not None and deadline <= by:
            return True
        # A loop, not any() over a generator (its own frame): this runs before every request.
        for s in self.seats:  # noqa: SIM110
            if s.grace is not None and s.expired is None and s.grace <= by:
                return True
        return False

    def to_blob(self) -> Blob:  # serialised at the commit
        return {
            "v": BLOB_VERSION, "code": self.code, "created": self.created, "next_seed": self.next_seed,
            "next_sid": self.next_sid, "number": self.number, "seats": [s.to_blob() for s in self.seats],
            "owner": self.owner, "listed": self.listed, "watchable": self.watchable,
            "rated": self.rated, "quick": self.quick,
            "ratings": None if self.ratings is None else {str(rs): c.wire() for rs, c in self.ratings.items()},
            "match": None if self.match is None else {**self.match.to_blob(), "seq": self.match.seq},
            **({"lag": self.lag} if self.lag else {}),  # only a room taken over: the same bytes otherwise
        }

    # ----- deadlines --------------------------------------------------------------------------------
    def settle(self, env: Env) -> Effects:
        """O6: every deadline due by ``env.now``, in time order: turn timeouts and ran-out graces."""
        fx = Effects()
        if not self.due(env.now):
            return fx
        fx.touch(self)
        match, pair = self.match, self.match_seats()
        if match is None or pair is None:
            return fx
        now = env.now
        entries: list[RecordEntry] = []
        changed = seats = False
        while not match.over:
            due: list[tuple[float, int, int]] = []
            if match.deadline is not None and match.deadline <= now + EPS:
                due.append((match.deadline, 0, -1))
            for rs, seat in enumerate(pair):
                if seat.grace is not None and seat.expired is None and seat.grace <= now + EPS:
                    due.append((seat.grace, 1, rs))
            if not due:
                break
            changed = True
            at, kind, rs = min(due)
            if kind == 0:
                entries += match.expire(at, env.randbytes)  # O4/O5
                continue
            seat, other = pair[rs], pair[1 - rs]
            seat.expired = at
            seats = True
            if other.expired is not None:
                entries += match.end_by(ActionType.VOID, rs, at, env.randbytes)  # both graces over
            elif other.peer is not None:
                entries += match.end_by(ActionType.DISCONNECT, rs, at, env.randbytes)
            # else: the opponent is away too and still within its grace: wait (O12).
        if changed:
            record = self.store(env, fx, entries, seats_changed=seats)
            presenter.match_update(self, len(entries), env, fx, record)
        return fx

    # ----- requests of a seated connection -------------------------------------------------------------
    def resume(self, env: Env, seat: Seat, peer: int, reply: m.Joined) -> Effects:
        """O12: ``seat`` comes back on ``peer`` (its token was checked); the old connection is
        replaced. It sees the room, the match so far and, if that ended it, the end."""
        fx = Effects()
        fx.touch(self)
        entries: list[RecordEntry] = []
        match = self.match
        running = match is not None and not match.over and self.match_seats() is not None
        if running and seat.expired is None:
            assert match is not None
            seat.away_since = seat.grace = None
            other = self.other(seat)
            if other is not None and other.expired is not None:
                # O12: this seat came back within its grace; the one that ran out first loses.
                entries = match.end_by(ActionType.DISCONNECT, match.record_seat(other.sid), env.now, env.randbytes)
        record = self.store(env, fx, entries)
        old = seat.peer
        was_away = old is None
        if old is not None and old != peer:
            fx.send(old, m.Error(ErrorCode.REPLACED, "this seat was resumed on another connection"))
            fx.close(old)
        seat.peer = peer
        if env.may_log(seat.owner):
            log.info("seat_resumed room={room} sid={sid} peer={peer}", room=self.code, sid=seat.sid, peer=peer)
        fx.send(peer, reply)
        fx.send(peer, presenter.room(self, seat, env))
        if match is not None and seat.sid in match.players:
            # Also after the opponent left a finished match (O13): its end stays visible.
            me = match.record_seat(seat.sid)
            fx.send(peer, presenter.match_start(self, me))
            seen = match.history.seen
            fx.send(peer, presenter.state(match, me, env.now, [seen(i, me) for i in range(match.seq)]))
            if match.over and not entries:
                fx.send(peer, presenter.match_end(self, me, None))
        other = self.other(seat)
        if other is not None and other.peer is not None and was_away:
            # Resumed over a connection that was still open (the same or another one): the
            # opponent saw it connected all along, so nothing it sees changed (§5 presence).
            if running:
                fx.send(other.peer, presenter.presence(seat, env.now))
            fx.send(other.peer, presenter.room(self, other, env))
        # The full history above already holds what the resume decided: no second state (§4).
        presenter.match_update(self, len(entries), env, fx, record, shown=peer)
        return fx

    def ready(self, env: Env, seat: Seat, *, ready: bool, seed: str | None) -> Effects:
        if self.status == "playing":
            raise ProtocolError(ErrorCode.MATCH_RUNNING, "a match is in progress")
        if self.status == "finished" and self.same_pair():
            # After a finished match of the same two seats ``ready`` is ``rematch`` (O14), and
            # ``ready:false`` takes the wish back.
            return self.rematch(env, seat, seed=seed, wanted=ready)
        fx = Effects()
        fx.touch(self)
        seat.ready = ready
        if seed is not None:
            seat.seed = seed
        if len(self.seats) == 2 and all(s.ready and s.peer is not None for s in self.seats):
            self._start(env, fx, first_sid=None)
        else:
            self.store(env, fx)
            presenter.room_updates(self, env, fx)
        return fx

    def leave(self, env: Env, seat: Seat) -> Effects:
        """The seat goes (not during its match, O11: resign first); an empty room is deleted."""
        if self.status == "playing" and self.match is not None and seat.sid in self.match.players:
            raise ProtocolError(ErrorCode.MATCH_RUNNING, "a match is in progress: resign first")
        fx = Effects()
        fx.touch(self)
        self.seats.remove(seat)
        seat.peer = None
        for s in self.seats:
            s.ready = s.rematch = False
        if self.seats:
            self.store(env, fx)
        else:
            self.delete(fx)
        if env.may_log(seat.owner):
            log.info("seat_left room={room} sid={sid}", room=self.code, sid=seat.sid)
        presenter.room_updates(self, env, fx)
        return fx

    def act(self, env: Env, seat: Seat, kind: ActionType, cell: int | None, *,
            match_id: str | None, seq: int | None) -> Effects:
        """A rules action (explore/plant/flag/unflag/end_turn): the checks of PROTOCOL.md §9, then the engine."""
        match, me = self._match_for(seat, match_id)
        if seat.expired is not None:
            raise ProtocolError(ErrorCode.GRACE_EXPIRED, "your reconnection grace ran out (O12)")
        if match.state.to_move != me:
            raise ProtocolError(ErrorCode.NOT_YOUR_TURN, "it is not your turn")
        if seq is not None and seq != match.seq:
            raise ProtocolError(ErrorCode.STALE_STATE, f"the match is at seq {match.seq}, not {seq}")
        result = match.apply(Action(me, kind, cell), at=env.now, randbytes=env.randbytes)
        if isinstance(result, Refusal):  # the engine changed nothing (A1-A6)
            raise ProtocolError(result.value, _REFUSAL_TEXT.get(result, str(result)))
        fx = Effects()
        fx.touch(self)
        record = self.store(env, fx, result, seats_changed=False)
        presenter.match_update(self, len(result), env, fx, record)
        return fx

    def resign(self, env: Env, seat: Seat, *, match_id: str | None) -> Effects:
        match, me = self._match_for(seat, match_id)
        fx = Effects()
        fx.touch(self)
        entries = match.end_by(ActionType.RESIGN, me, env.now, env.randbytes)
        record = self.store(env, fx, entries)
        presenter.match_update(self, len(entries), env, fx, record)
        return fx

    def rematch(self, env: Env, seat: Seat, *, seed: str | None, wanted: bool = True) -> Effects:
        """O14: once both seats asked, the same two play again with the sides swapped.

        Until then both connected seats get ``rematch`` and ``room`` (its flags changed, §5).
        """
        if self.match is None:
            raise ProtocolError(ErrorCode.NO_MATCH, "no match has been played in this room")
        if not self.match.over:
            raise ProtocolError(ErrorCode.NOT_FINISHED, "the match is still in progress")
        if not self.same_pair():
            raise ProtocolError(ErrorCode.OPPONENT_MISSING, "the previous opponent has left: a new opponent plays after ready")
        fx = Effects()
        fx.touch(self)
        seat.rematch = wanted
        if seed is not None:
            seat.seed = seed
        a, b = self.seats
        if a.rematch and b.rematch and a.peer is not None and b.peer is not None:
            self._start(env, fx, first_sid=self.match.players[1])  # O14: sides swap
        else:
            self.store(env, fx)
            for s in self.seats:
                if s.peer is not None:
                    fx.send(s.peer, presenter.rematch_status(self, s))
                    fx.send(s.peer, presenter.room(self, s, env))
        return fx

    def peer_lost(self, env: Env, seat: Seat) -> Effects:
        """O12: the seat's connection is gone; during its match its grace starts."""
        fx = Effects()
        fx.touch(self)
        seat.peer = None
        playing = self.status == "playing" and self.match is not None and seat.sid in self.match.players
        if playing:
            if seat.expired is None:
                seat.away_since = env.now
                seat.grace = env.now + env.config.grace_seconds
        else:
            seat.ready = seat.rematch = False
        self.store(env, fx)
        if env.may_log(seat.owner):
            log.info("seat_away room={room} sid={sid}", room=self.code, sid=seat.sid)
        other = self.other(seat)
        if other is not None and other.peer is not None:
            if self.status == "playing":
                fx.send(other.peer, presenter.presence(seat, env.now))
            fx.send(other.peer, presenter.room(self, other, env))
        return fx

    # ----- inside ------------------------------------------------------------------------------------
    def _match_for(self, seat: Seat, match_id: str | None) -> tuple[LiveMatch, int]:
        """The checks every match request shares (documented order)."""
        match = self.match
        if match is None or seat.sid not in match.players:
            raise ProtocolError(ErrorCode.NO_MATCH, "no match of yours in this room")
        if match_id is not None and match_id != match.id:
            raise ProtocolError(ErrorCode.WRONG_MATCH, f"the current match is {match.id}")
        if match.over:
            raise ProtocolError(ErrorCode.GAME_OVER, "the match is over")
        return match, match.record_seat(seat.sid)

    def _start(self, env: Env, fx: Effects, *, first_sid: int | None) -> None:
        a, b = self.seats
        previous = self.match
        match = LiveMatch.start(
            match_id=env.randbytes(8).hex(),
            number=self.number + 1,
            seats_in_join_order=(a.sid, b.sid),
            first_sid=first_sid,
            server_seed=self.next_seed,
            client_seeds=(a.seed, b.seed),
            now=env.now,
            wall=env.wall,
            turn_seconds=env.config.turn_seconds,
            names_by_sid={a.sid: a.name, b.sid: b.name},
            # R3c/O14: a rematch continues the room's previous match; a room's first match (or one
            # with a new opponent, who never saw the previous one) starts from nothing.
            previous=previous.transcript if previous is not None and first_sid is not None else None,
        )
        self.match = match
        self.number += 1
        self.ratings = None
        self.next_seed = env.randbytes(32).hex()
        for s in self.seats:
            s.ready = s.rematch = False
            s.clear_away()
        self.store(env, fx, drop=[previous.id] if previous is not None else [])
        if env.may_log(self.owner):
            log.info(
                "match_started room={room} match={match} first={first} rule={rule}",
                room=self.code, match=match.id, first=match.players[0], rule=match.first_rule,
            )
        for rs in (0, 1):
            peer = self.room_seat(rs).peer
            if peer is not None:
                fx.send(peer, presenter.match_start(self, rs))
                fx.send(peer, presenter.state(match, rs, env.now, []))
        presenter.room_updates(self, env, fx)

    def store(
        self,
        env: Env,
        fx: Effects,
        entries: list[RecordEntry] | None = None,
        *,
        drop: list[str] | None = None,
        seats_changed: bool = True,
    ) -> RecordJson | None:
        """Stage the room and its new record rows; they commit with this turn's batch.

        ``seats_changed=False`` (an action or a timeout: only the match moved) stores the new
        rows alone: they carry the match's clock state (``LiveMatch.stored_rows``), so the room's
        blob is not rewritten for every action. Returns the record once the match ended (for
        storage and both ``match_end`` messages; kept, it would be ~15 KB per room).
        """
        match = self.match
        record = None
        writes = fx.writes
        over = match is not None and match.state.over  # read once: nothing below ends the match
        if entries and over:
            assert match is not None
            match.ended_wall = env.wall
            for s in self.seats:
                s.clear_away()
            seats_changed = True
        if drop:
            for match_id in drop:
                writes.append(DropActions(match_id))
        if seats_changed or not entries or match is None:
            writes.append(StoreRoom(self.code, self))
        if entries and match is not None:
            first = match.seq - len(entries)
            writes.append(StoreActions(match.id, first, match.stored_rows(entries, first)))
            if over:
                record = match.record(room=self.code)
                fx.writes.append(StoreResult(match.id, self.code, match.ended or env.now, orjson.dumps(record).decode()))
                outcome = match.state.outcome()
                assert outcome is not None
                if self.rated and env.players is not None:
                    self._rate(env, fx, match, outcome)
                if env.may_log(self.owner):
                    log.info(
                        "match_ended room={room} match={match} reason={reason} winner={winner}",
                        room=self.code, match=match.id, reason=outcome.reason.value, winner=outcome.winner,
                    )
        fx.rearm(self)
        return record

    def _rate(self, env: Env, fx: Effects, match: LiveMatch, outcome: Outcome) -> None:
        """Issue 20: both players' ratings after a rated match, staged with its result (same commit)."""
        assert env.players is not None
        pair = self.match_seats()
        if pair is None or pair[0].player is None or pair[1].player is None:
            return
        ids = (pair[0].player, pair[1].player)
        if self.quick and outcome.reason is Reason.DISCONNECT and outcome.winner is not None:
            loser = 1 - outcome.winner  # left a quick-match game
            env.players.quick_leavers.append((ids[loser], pair[loser].owner))
        elif self.quick and outcome.reason is Reason.VOID:  # both left it: both are leavers
            env.players.quick_leavers.extend((ids[rs], pair[rs].owner) for rs in (0, 1))
        same = bool(pair[0].owner) and pair[0].owner == pair[1].owner and not env.config.pairing.allow_same_address
        rated = env.players.rate(match.id, ids, outcome, env.wall, same_address=same)
        if rated is None:
            return
        self.ratings = {0: rated.changes[0], 1: rated.changes[1]}
        for seat, change in zip(pair, rated.changes, strict=True):
            seat.rating = change.after
            seat.provisional = change.provisional
        if rated.players:
            fx.writes.append(StorePlayers(rated.players, rated.results))
        if env.may_log(self.owner):
            log.info("match_rated room={room} match={match} change={change}", room=self.code, match=match.id,
                     change=rated.changes[0].unrated or rated.changes[0].change)

    def delete(self, fx: Effects) -> None:
        """Stage the room's removal (and its match's actions)."""
        fx.writes.append(StoreRoom(self.code, None))
        if self.match is not None:
            fx.writes.append(DropActions(self.match.id))
        fx.rearm(self)  # cancels its timer once the room is gone from the lobby


_REFUSAL_TEXT = {
    Refusal.GAME_OVER: "the match is over",
    Refusal.NOT_YOUR_TURN: "it is not your turn",
    Refusal.WRONG_PHASE: "that action is not allowed in this phase",
    Refusal.REVEALED: "that cell is already open",
    Refusal.MARKED: "a marker blocks that cell",
    Refusal.OWN_MINE: "your own mine is on that cell",
    Refusal.NO_MARKER: "there is no marker on that cell",
    Refusal.NOT_YOUR_MARKER: "that marker is the opponent's",
    Refusal.QUOTA_USED: "you already placed a marker this turn",
}
