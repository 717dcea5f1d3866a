"""The lobby: every room by code, who sits where, new rooms and seats, tokens and codes (O1, O15, O16).

In-memory bookkeeping and the requests that find or make a seat (create, peek, join, resume);
like a room's operations they return :class:`~mineduel.server.effects.Effects` and never touch
the outbox, the storage or the clock. Rooms still waiting to be restored after a restart are
named in :attr:`Lobby.pending`; the shell restores one before a request looks it up.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from dataclasses import dataclass

from twisted.logger import Logger

from mineduel.server import players, presenter
from mineduel.server.effects import Effects, Env, StoreRoom
from mineduel.server.room import Room, Seat
from mineduel.shared.wire import messages as m
from mineduel.shared.wire.codec import ProtocolError
from mineduel.shared.wire.names import DEFAULT_PORT, ROOM_CODE_ALPHABET, ROOM_CODE_LENGTH, ErrorCode

log = Logger(namespace="mineduel.rooms")


@dataclass
class PeerInfo:
    """One connection as the room logic sees it."""

    id: int
    address: str  # the remote IP (limits)
    host: str = "127.0.0.1"  # the local address the client dialled (invite links)
    port: int = DEFAULT_PORT
    tls: bool = False  # came in over TLS: invite links are mineduels:// (with the certificate pin)
    pin: str | None = None
    owner: str = ""  # its address's owner tag (server/limits.py): rooms and seats it takes are counted against it


def hash_token(token: str) -> str:
    """O16: only SHA-256 of a session token is ever stored."""
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def live_rooms(rooms: Iterable[Room], limit: int) -> list[Room]:
    """The rooms ``live_rooms`` names (PROTOCOL.md §16): created ``listed``, spectators allowed and
    a match in progress, the most recently started first (then by code), at most ``limit``. A room
    created without ``listed`` is never named: its code stays its players' to give.

    One pass over the rooms (``listed`` tested first: most rooms are not), about 0.1 ms for 10,000,
    which each connection's rate limit bounds."""
    live = [r for r in rooms if r.listed and r.watchable and r.match is not None and not r.match.over]
    live.sort(key=lambda r: r.code)
    live.sort(key=lambda r: r.match.started if r.match is not None else 0.0, reverse=True)
    return live[:limit]


class Lobby:
    """Every room of one server process by code, and the seat each connection holds."""

    def __init__(self) -> None:
        self.rooms: dict[str, Room] = {}
        self.peers: dict[int, PeerInfo] = {}
        self.peer_seat: dict[int, tuple[Room, Seat]] = {}
        self.pending: set[str] = set()  # stored rooms not restored yet
        # Rooms (restored or pending) by the owner tag of the address that created them, and back.
        self.owned: dict[str, set[str]] = {}
        self.owner_of: dict[str, str] = {}
        # Spectators (PROTOCOL.md §16): the room each watching connection watches (by code: a room
        # reloaded after a failed commit keeps them), and how many rooms each owner tag watches.
        self.peer_watch: dict[int, tuple[str, str]] = {}  # connection -> (room code, owner tag)
        self.watching: dict[str, int] = {}

    # ----- lookups ------------------------------------------------------------------------------
    def room(self, code: str) -> Room:
        room = self.rooms.get(code)
        if room is None:
            raise ProtocolError(ErrorCode.ROOM_NOT_FOUND, f"no room {code}")
        return room

    def seated(self, peer: int) -> tuple[Room, Seat]:
        found = self.peer_seat.get(peer)
        if found is None:
            if peer in self.peer_watch:
                raise ProtocolError(ErrorCode.SPECTATOR, "this connection is watching a room: a spectator cannot act")
            raise ProtocolError(ErrorCode.NOT_SEATED, "this connection holds no seat: create, join or resume first")
        return found

    def open_rooms(self) -> int:
        """Rooms someone could join now (LAN discovery)."""
        return sum(1 for r in self.rooms.values() if len(r.seats) < 2 and r.status != "playing")

    def listed_rooms(self, limit: int) -> list[tuple[str, str]]:
        """Rooms LAN discovery names (PROTOCOL.md §12), newest first, at most ``limit``: ``(code, the
        creator's name)`` of each room created ``listed`` whose one seat is connected, with no match
        yet — never a full room, one in a match or one whose player is not there to play."""
        waiting = [r for r in self.rooms.values()
                   if r.listed and r.match is None and len(r.seats) == 1 and r.seats[0].peer is not None]
        waiting.sort(key=lambda r: r.created, reverse=True)
        return [(r.code, r.seats[0].name) for r in waiting[:limit]]

    def rooms_of(self, owner: str) -> tuple[int, int]:
        """The rooms an address created that still exist (pending ones too), and how many of
        them still wait for an opponent (a free seat, no match yet)."""
        codes = self.owned.get(owner, ())
        waiting = 0
        for code in codes:
            room = self.rooms.get(code)
            if room is not None and len(room.seats) < 2 and room.match is None:
                waiting += 1
        return len(codes), waiting

    def own(self, code: str, owner: str) -> None:
        """Count the room ``code`` against ``owner`` (an empty tag: a room stored before tags were)."""
        if owner:
            self.owner_of[code] = owner
            self.owned.setdefault(owner, set()).add(code)

    def disown(self, code: str) -> None:
        owner = self.owner_of.pop(code, None)
        if owner is not None:
            codes = self.owned[owner]
            codes.discard(code)
            if not codes:
                del self.owned[owner]

    def running(self, match_id: str) -> bool:
        """Whether a match with this id is still being played (its record is not public yet)."""
        return any(r.match is not None and r.match.id == match_id and not r.match.over for r in self.rooms.values())

    # ----- seats --------------------------------------------------------------------------------
    def attach(self, peer: int, room: Room, seat: Seat) -> None:
        seat.peer = peer
        self.peer_seat[peer] = (room, seat)

    def detach(self, peer: int) -> None:
        found = self.peer_seat.pop(peer, None)
        if found is not None and found[1].peer == peer:
            found[1].peer = None

    def forget(self, room: Room) -> None:
        """The room is gone from memory (deleted, expired or about to be reloaded)."""
        self.rooms.pop(room.code, None)
        self.disown(room.code)

    # ----- requests that find or make a seat ---------------------------------------------------------
    def not_watching(self, peer: int) -> None:
        """A watching connection takes no seat (§16): it sends ``leave`` first."""
        if peer in self.peer_watch:
            raise ProtocolError(ErrorCode.SPECTATOR, "this connection is watching a room: leave first to take a seat")

    def create(self, env: Env, peer: int, req: m.CreateRoom) -> Effects:
        self.not_watching(peer)
        if peer in self.peer_seat:
            raise ProtocolError(ErrorCode.ALREADY_SEATED, "this connection already holds a seat")
        if len(self.rooms) + len(self.pending) >= env.config.max_rooms:
            raise ProtocolError(ErrorCode.TOO_MANY_ROOMS, "the server has no room for more rooms")
        player = players.seating(env, peer, rated=req.rated)  # §17: a rated room needs identify
        token = env.randbytes(32).hex()
        owner = self._owner(peer)
        room = Room(code=self._new_code(env), created=env.now, next_seed=env.randbytes(32).hex(), owner=owner,
                    listed=req.listed, watchable=req.spectators, rated=req.rated)
        seat = Seat(sid=0, token_hash=hash_token(token), name=req.name, seed=req.client_seed or "", owner=owner)
        players.sit(seat, player)
        room.seats.append(seat)
        room.next_sid = 1
        fx = Effects()
        fx.writes.append(StoreRoom(room.code, room))
        self.rooms[room.code] = room
        self.own(room.code, owner)
        self.attach(peer, room, seat)
        if env.may_log(owner):
            log.info("room_created room={room} peer={peer}", room=room.code, peer=peer)
        fx.send(peer, m.RoomCreated(room.code, self.invite(env, peer, room), token, req.id))
        fx.send(peer, presenter.room(room, seat, env))
        return fx

    def peek(self, peer: int, room: Room, rid: m.RequestId | None) -> Effects:
        fx = Effects()
        fx.send(peer, presenter.room_info(room, rid))
        return fx

    def join(self, env: Env, peer: int, room: Room, req: m.Join) -> Effects:
        self.not_watching(peer)
        if peer in self.peer_seat:
            raise ProtocolError(ErrorCode.ALREADY_SEATED, "this connection already holds a seat")
        if len(room.seats) >= 2:
            raise ProtocolError(ErrorCode.ROOM_FULL, f"room {room.code} has two players")
        player = players.seating(env, peer, rated=room.rated, against=room.seats)  # §17
        token = env.randbytes(32).hex()
        seat = Seat(
            sid=room.next_sid, token_hash=hash_token(token), name=req.name, seed=req.client_seed or "",
            owner=self._owner(peer),
        )
        players.sit(seat, player)
        fx = Effects()
        fx.touch(room)
        room.seats.append(seat)
        room.next_sid += 1
        room.store(env, fx)
        self.attach(peer, room, seat)
        if env.may_log(seat.owner):
            log.info("room_joined room={room} peer={peer}", room=room.code, peer=peer)
        fx.send(peer, m.Joined(room.code, self.invite(env, peer, room), token, False, req.id))
        presenter.room_updates(room, env, fx)
        return fx

    def seat_for(self, peer: int, room: Room, token: str) -> Seat:
        """The seat of ``room`` whose token this is (O16: compared in constant time), or a refusal."""
        self.not_watching(peer)
        wanted = hash_token(token)
        seat = None
        for s in room.seats:
            if hmac.compare_digest(s.token_hash, wanted):
                seat = s
        if seat is None:
            raise ProtocolError(ErrorCode.BAD_TOKEN, "no seat of this room has that token")
        current = self.peer_seat.get(peer)
        if current is not None and current[1] is not seat:
            raise ProtocolError(ErrorCode.ALREADY_SEATED, "this connection already holds another seat")
        return seat

    def resume(self, env: Env, peer: int, room: Room, seat: Seat, rid: m.RequestId | None) -> Effects:
        """O12: the seat (found by :meth:`seat_for`) moves to ``peer``; the old connection is let go.

        At most ``resumes_per_seat`` resumes per ``resume_window`` (a token bucket on the seat): each
        one tells the opponent (``presence``, ``room``) and writes the room, so resuming in a loop
        must not be a way to flood the other seat or the disk.
        """
        config = env.config
        tokens = seat.resumes if seat.resumes is not None else float(config.resumes_per_seat)
        tokens = min(float(config.resumes_per_seat),
                     tokens + (env.now - seat.resumed_at) * config.resumes_per_seat / config.resume_window)
        seat.resumed_at = env.now
        seat.resumes = tokens
        if tokens < 1.0:
            wait = (1.0 - tokens) * config.resume_window / config.resumes_per_seat
            raise ProtocolError(
                ErrorCode.TOO_MANY_ATTEMPTS,
                f"this seat was resumed too often (at most {config.resumes_per_seat} times per "
                f"{config.resume_window:g} s); try again in {wait:.0f} s",
            )
        seat.resumes = tokens - 1.0
        owner = self._owner(peer)
        if owner:
            seat.owner = owner
        old = seat.peer
        fx = room.resume(env, seat, peer, m.Joined(room.code, self.invite(env, peer, room), None, True, rid))
        if old is not None and old != peer:
            self.peer_seat.pop(old, None)
        self.peer_seat[peer] = (room, seat)
        return fx

    # ----- spectators (PROTOCOL.md §16) -------------------------------------------------------------
    def spectate(self, env: Env, peer: int, room: Room) -> Effects:
        """Watch ``room`` without a seat: the checks of §16 in order, then the public view to every
        spectator and the new count to the players (their ``room``)."""
        if peer in self.peer_seat:
            raise ProtocolError(ErrorCode.ALREADY_SEATED, "this connection holds a seat: a player does not spectate")
        self.not_watching(peer)
        if not room.watchable:
            raise ProtocolError(ErrorCode.SPECTATING_OFF, f"the host of room {room.code} turned spectating off")
        config = env.config
        watching = room.spectators or {}
        if len(watching) >= config.max_spectators_per_room:
            raise ProtocolError(
                ErrorCode.TOO_MANY_SPECTATORS, f"room {room.code} already has {len(watching)} spectators",
            )
        owner = self._owner(peer)
        if self.watching.get(owner, 0) >= config.max_spectating_per_address:
            raise ProtocolError(
                ErrorCode.TOO_MANY_SPECTATORS,
                f"your address already watches {config.max_spectating_per_address} rooms; leave one first",
            )
        watching[peer] = owner
        room.spectators = watching
        self.peer_watch[peer] = (room.code, owner)
        self.watching[owner] = self.watching.get(owner, 0) + 1
        if env.may_log(owner):
            log.info("spectator_joined room={room} peer={peer}", room=room.code, peer=peer)
        fx = Effects()
        presenter.spectator_updates(room, env, fx)
        presenter.room_updates(room, env, fx)
        return fx

    def unwatch(self, peer: int) -> Room | None:
        """The connection stops watching (``leave``, a disconnect or its room gone); its room, if still there."""
        found = self.peer_watch.pop(peer, None)
        if found is None:
            return None
        code, owner = found
        room = self.rooms.get(code)
        if room is not None and room.spectators is not None:
            room.spectators.pop(peer, None)
            if not room.spectators:
                room.spectators = None  # no dict kept for a room nobody watches
        left = self.watching.get(owner, 0) - 1
        if left > 0:
            self.watching[owner] = left
        else:
            self.watching.pop(owner, None)
        return room

    def close_for_spectators(self, room: Room, fx: Effects, reason: str) -> None:
        """The room is going: each spectator is told (``room_closed``) and stops watching."""
        for peer in list(room.spectators or ()):
            fx.send(peer, m.RoomClosed(room.code, reason))
            self.unwatch(peer)

    def expire(self, env: Env) -> Effects:
        """O15: drop expired rooms; rooms with a match in progress never expire."""
        fx = Effects()
        for room in list(self.rooms.values()):
            expires = room.expires(env.config)
            if expires is None or expires > env.now:
                continue
            fx.touch(room)
            for seat in room.seats:
                if seat.peer is not None:
                    fx.send(seat.peer, m.RoomClosed(room.code, "expired"))
                    self.detach(seat.peer)
            self.close_for_spectators(room, fx, "expired")
            room.delete(fx)
            self.forget(room)
            fx.rearm(room)  # its timer goes with it (it is no longer in the lobby)
        return fx

    # ----- inside -----------------------------------------------------------------------------------
    def _owner(self, peer: int) -> str:
        info = self.peers.get(peer)
        return info.owner if info is not None else ""

    def invite(self, env: Env, peer: int, room: Room) -> str:
        info = self.peers.get(peer)
        host = env.config.public_host or (info.host if info else "127.0.0.1")
        port = info.port if info else env.config.port
        if env.config.front is not None:  # a cluster's front address (its load balancer, PROTOCOL.md §18)
            host, port = env.config.front
        return presenter.invite(room.code, host, port, tls=info is not None and info.tls, pin=info.pin if info else None)

    def _new_code(self, env: Env) -> str:
        alphabet = ROOM_CODE_ALPHABET
        limit = 256 - 256 % len(alphabet)
        while True:
            chars: list[str] = []
            while len(chars) < ROOM_CODE_LENGTH:
                for b in env.randbytes(ROOM_CODE_LENGTH):
                    if b < limit and len(chars) < ROOM_CODE_LENGTH:
                        chars.append(alphabet[b % len(alphabet)])
            code = "".join(chars)
            if code not in self.rooms and code not in self.pending:
                return code
