"""The quick match in the running server (issue 20, PROTOCOL.md §17): the queue, its timers, the rooms.

Who plays whom is decided by the pure :class:`~mineduel.server.matchmaking.QuickMatchQueue`
(ratings-core); this module drives it with the reactor's clock (a ``LoopingCall`` every
``quick_pair_interval`` seconds, and once right after each join), turns each pair into a rated
room with both players seated, and runs the confirmation: both must send ``ready`` within
``quick_confirm_seconds``. If one does not, the room is dissolved: the one who confirmed goes back
in the queue with its waiting time kept, the other is out (``queue`` ``left``/``not_ready``) and
penalised (the queue's policy: each repeat waits longer). A player whose quick-match game ends
by its disconnection (O12) is penalised the same way.

A waiter is known to the queue by its public player id, its rating and its address's *owner tag*
(``server/limits.py``: a keyed hash, never the address), and a ``matched`` tells each player only
the other's ``display`` and rating: no key, key hash, token or address of anyone else is ever
sent (tests/server/test_quick_match.py checks the bytes).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.internet.task import LoopingCall
from twisted.logger import Logger

from mineduel.server import glicko2, presenter
from mineduel.server.effects import Effects, StoreRoom
from mineduel.server.lobby import hash_token
from mineduel.server.matchmaking import QuickMatchQueue, Waiting
from mineduel.server.players import Player, sit
from mineduel.server.room import Room, Seat
from mineduel.server.rooms import Rooms
from mineduel.shared.wire import messages as m
from mineduel.shared.wire.codec import ProtocolError
from mineduel.shared.wire.names import ErrorCode

log = Logger(namespace="mineduel.quickmatch")


@dataclass
class Confirm:
    """A matched pair's room waiting for both ``ready`` (by join order: seat ids 0 and 1)."""

    code: str
    waiting: tuple[Waiting, Waiting]
    call: IDelayedCall


class QuickMatch:
    """The server's quick-match queue: who waits on which connection, the pairing loop, the confirmations."""

    def __init__(self, rooms: Rooms, clock: IReactorTime, owner_of: Callable[[int], str]) -> None:
        self.rooms = rooms
        self.clock = clock
        self.config = rooms.config
        self.owner_of = owner_of  # a connection's address owner tag (what the queue compares)
        self.queue = QuickMatchQueue(rooms.config.pairing)
        self.peer_of: dict[str, int] = {}  # waiting player id -> its connection
        self.player_of: dict[int, str] = {}  # and back
        self.confirms: dict[str, Confirm] = {}
        # Offences per address owner tag (count decayed as the queue's, when last): the queue counts
        # them per player, and a new key's first offence is free, so without this one address
        # rotating keys would never wait (red-team). A join waits for the later of both.
        self._by_address: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._loop: LoopingCall | None = None
        self._soon: IDelayedCall | None = None

    # ----- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        loop = LoopingCall(self._tick)
        loop.clock = self.clock
        loop.start(self.config.quick_pair_interval, now=False).addErrback(lambda f: log.failure("pairing failed", f))
        self._loop = loop

    def stop(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None
        for call in [self._soon, *(c.call for c in self.confirms.values())]:
            if call is not None and call.active():
                call.cancel()
        self._soon = None

    # ----- requests ---------------------------------------------------------------------------------
    def queued(self, peer: int) -> bool:
        return peer in self.player_of

    def join(self, peer: int, *, spectators: bool = True) -> None:
        """``quick_match``: the checks of §17 in order, then ``queue`` (waiting) to this connection.

        ``spectators``: whether this player lets others watch (a matched room is watchable only if
        both players do, PROTOCOL.md §17)."""
        rooms = self.rooms
        player = rooms.players.of(peer)
        if player is None:
            raise ProtocolError(ErrorCode.IDENTIFY_REQUIRED, "identify first: the quick match is rated")
        lobby = rooms.lobby
        if peer in lobby.peer_watch:
            raise ProtocolError(ErrorCode.SPECTATOR, "this connection is watching a room: leave first")
        if peer in lobby.peer_seat:
            raise ProtocolError(ErrorCode.ALREADY_SEATED, "this connection holds a seat: leave it first")
        held, _ = lobby.rooms_of(self.owner_of(peer))
        if held >= self.config.max_rooms_per_address:
            # A matched room counts against its longer waiter's address like a created one: without
            # it, quick matches whose players drop both (void, nobody penalised) filled the server's
            # room limit from two addresses (red-team).
            raise ProtocolError(
                ErrorCode.TOO_MANY_ROOMS,
                f"your address already holds {held} rooms (waiting, playing or finished); leave one first",
            )
        if peer in self.player_of or player.player in self.peer_of or self._confirming(player.player):
            # Also while matched on another connection (its confirmation running): one player is
            # paired once at a time (red-team: a second connection of one key was matched twice).
            raise ProtocolError(ErrorCode.ALREADY_QUEUED, "this player is already waiting for a quick match")
        commits = rooms.commits
        inflight = commits.inflight
        if player.key_hash in commits.batch.players or (inflight is not None and player.key_hash in inflight.players):
            # The player (new, or renamed) is not stored yet: this join stands on that commit, so it
            # is staged with it: if the commit fails, the join is undone too (internal_error, its
            # queue reply never shown) instead of a waiter the server no longer knows (red-team).
            commits.stage_player(player.key_hash, player)
        now = rooms.now()
        self._enter(peer, player, now, watch=spectators)
        self._pair_soon()

    def _confirming(self, player: str) -> bool:
        """Whether ``player`` still sits in a matched room whose confirmation runs (a ``leave`` frees it)."""
        for confirm in self.confirms.values():
            room = self.rooms.rooms.get(confirm.code)
            if room is not None and room.match is None and any(s.player == player for s in room.seats):
                return True
        return False

    def _enter(self, peer: int, player: Player, since: float, *, watch: bool = True) -> None:
        r = player.rating
        owner = self.owner_of(peer)
        self.queue.join(Waiting(player.player, r.value, r.deviation, owner, since, self._address_wait(owner), watch))
        self.peer_of[player.player] = peer
        self.player_of[peer] = player.player
        self.rooms.outbox.send(peer, m.QueueStatus("waiting", round(since, 3), round(self.rooms.now(), 3)))

    def leave(self, peer: int) -> None:
        """``leave_queue``: out of the queue (``not_queued`` if it was not in it)."""
        if not self._out(peer):
            raise ProtocolError(ErrorCode.NOT_QUEUED, "this connection is not waiting for a quick match")
        self.rooms.outbox.send(peer, m.QueueStatus("left", reason="cancelled"))

    def _out(self, peer: int) -> bool:
        player = self.player_of.pop(peer, None)
        if player is None:
            return False
        self.peer_of.pop(player, None)
        self.queue.leave(player)
        return True

    def penalise(self, player: str, address: str, now: float) -> None:
        """Count an offence of ``player`` (the queue's record) and of its address (ours)."""
        self.queue.penalise(player, now)
        if not address:
            return
        policy = self.config.pairing
        count, at = self._by_address.pop(address, (0.0, now))
        earlier = count * math.pow(0.5, max(now - at, 0.0) / policy.penalty_half_life)
        self._by_address[address] = (earlier + 1.0, now)
        while len(self._by_address) > policy.memory:
            self._by_address.popitem(last=False)

    def _address_wait(self, address: str) -> float:
        """Until when a join from this address waits (0: not at all), as the queue's rule for a player."""
        found = self._by_address.get(address)
        if found is None:
            return 0.0
        count, at = found
        return at + self.config.pairing.penalty(count - 1.0)

    def undo(self, joined: Iterable[int]) -> None:
        """After a failed commit: the ``quick_match`` requests of the batch (``joined``: their
        connections, told ``internal_error``) are undone, and a waiter whose connection is no
        longer that player (its identify was undone) leaves the queue too."""
        for peer in joined:
            self._out(peer)
        for peer, player in list(self.player_of.items()):
            who = self.rooms.players.of(peer)
            if who is None or who.player != player:
                self._out(peer)

    def peer_lost(self, peer: int) -> None:
        """Closing the connection while queued leaves the queue (nobody is told)."""
        self._out(peer)

    # ----- pairing -------------------------------------------------------------------------------------
    def _pair_soon(self) -> None:
        if self._soon is None or not self._soon.active():
            self._soon = self.clock.callLater(0, self._tick)

    def _tick(self) -> None:
        try:
            self.pair_now()
        except Exception:  # noqa: BLE001 - logged; the pairing loop must go on
            log.failure("quick-match pairing failed")

    def pair_now(self) -> None:
        """Pair whoever may meet now; each pair gets its rated room (and penalties due are counted)."""
        now = self.rooms.now()
        leavers = self.rooms.players.quick_leavers
        while leavers:
            player, address = leavers.pop()
            self.penalise(player, address, now)
        if len(self.queue) < 2 or not self.rooms.commits.healthy:
            # While the database fails (§9 step 11) a matched room could not be stored: the pair
            # would be closed with internal_error and lose its place. The waiters wait on, their
            # time kept, and are paired at the first tick after a commit lands (red-team).
            return
        for a, b in self.queue.pair(now):
            self._match(a, b, now)

    def _match(self, a: Waiting, b: Waiting, now: float) -> None:
        rooms = self.rooms
        lobby = rooms.lobby
        peers = (self.peer_of.pop(a.player), self.peer_of.pop(b.player))
        for peer in peers:
            self.player_of.pop(peer, None)
        first, second = rooms.players.of(peers[0]), rooms.players.of(peers[1])
        env = rooms.env()
        if first is None or second is None or len(lobby.rooms) + len(lobby.pending) >= env.config.max_rooms:
            # A connection no longer identified (a failed commit undid it), or the server full: the
            # others wait on, their time kept.
            for who, peer, player in zip((a, b), peers, (first, second), strict=True):
                if player is not None:
                    self.queue.join(who)
                    self.peer_of[who.player] = peer
                    self.player_of[peer] = who.player
            return
        players = (first, second)
        owner = self.owner_of(peers[0])
        # Watchable only if both players let others watch (their quick_match's ``spectators``, §17).
        room = Room(code=lobby._new_code(env), created=env.now, next_seed=env.randbytes(32).hex(), owner=owner,
                    rated=True, quick=True, watchable=a.watch and b.watch)
        fx = Effects()
        tokens = []
        for sid, (peer, player) in enumerate(zip(peers, players, strict=True)):
            token = env.randbytes(32).hex()
            tokens.append(token)
            seat = Seat(sid=sid, token_hash=hash_token(token), name=player.name, owner=self.owner_of(peer))
            sit(seat, player)
            room.seats.append(seat)
        room.next_sid = 2
        lobby.rooms[room.code] = room
        lobby.own(room.code, owner)
        for peer, seat in zip(peers, room.seats, strict=True):
            lobby.attach(peer, room, seat)
        fx.writes.append(StoreRoom(room.code, room))
        confirm_at = env.now + env.config.quick_confirm_seconds
        deadline = m.Deadline.of(confirm_at, env.now)
        assert deadline is not None
        for sid in (0, 1):
            other = players[1 - sid]
            r = other.rating
            opponent = m.MatchedOpponent(other.display, round(r.value, 1), glicko2.provisional(r))
            fx.send(peers[sid], m.Matched(room.code, tokens[sid], sid, opponent, True, deadline))
            fx.send(peers[sid], presenter.room(room, room.seats[sid], env))
        rooms.perform(fx)  # (pair() recorded the address pair for the no-back-to-back rule)
        call = self.clock.callLater(env.config.quick_confirm_seconds, self._confirm_timer, room.code)
        self.confirms[room.code] = Confirm(room.code, (a, b), call)
        if env.may_log(""):
            log.info("quick_matched room={room} gap={gap:.0f} waited={waited:.1f}", room=room.code,
                     gap=abs(a.rating - b.rating), waited=now - a.since)

    def _confirm_timer(self, code: str) -> None:
        try:
            self._confirm_due(code)
        except Exception:  # noqa: BLE001 - logged; a timer must not take the reactor's error path
            log.failure("quick-match confirmation failed room={room}", room=code)

    def _confirm_due(self, code: str) -> None:
        """The confirmation ran out: a room whose match did not start is dissolved (§17)."""
        confirm = self.confirms.pop(code, None)
        rooms = self.rooms
        room = rooms.rooms.get(code)
        if confirm is None or room is None or room.match is not None:
            return  # the match started (or the room went): an ordinary rated room now
        env = rooms.env()
        lobby = rooms.lobby
        fx = Effects()
        fx.touch(room)
        back: list[tuple[Waiting, int]] = []
        out: list[int] = []
        for sid, who in enumerate(confirm.waiting):
            seat = next((s for s in room.seats if s.sid == sid), None)
            holder = None if seat is None or seat.peer is None else rooms.players.of(seat.peer)
            if seat is not None and seat.ready and seat.peer is not None and holder is not None and holder.player == who.player:
                back.append((who, seat.peer))
            else:
                # A seat resumed by a connection that is not this player (unidentified, or another
                # key) does not put that connection in the queue as this player (red-team).
                if seat is None or not seat.ready:
                    self.penalise(who.player, who.address, env.now)
                if seat is not None and seat.peer is not None:
                    out.append(seat.peer)
        for seat in room.seats:
            if seat.peer is not None:
                fx.send(seat.peer, m.RoomClosed(room.code, "not_ready"))
                lobby.detach(seat.peer)
        lobby.close_for_spectators(room, fx, "not_ready")
        room.delete(fx)
        lobby.forget(room)
        for peer in out:
            fx.send(peer, m.QueueStatus("left", reason="not_ready"))
        rooms.perform(fx)
        for who, peer in back:
            self.queue.join(who)  # its waiting time kept (``since``)
            self.peer_of[who.player] = peer
            self.player_of[peer] = who.player
            rooms.outbox.send(peer, m.QueueStatus("waiting", round(who.since, 3), round(env.now, 3)))
        if back:
            self._pair_soon()
        if env.may_log(""):
            log.info("quick_not_ready room={room} requeued={back} out={out}", room=code, back=len(back), out=len(out))
