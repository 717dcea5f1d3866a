"""Rooms, seats, deadlines and presence: the server's authority (RULES.md §7 O1–O16).

Injected, never global: a clock (``IReactorTime``: ``seconds`` and ``callLater``), a
``randbytes`` entropy source, a :class:`~mineduel.server.storage.Storage` and a
:class:`~mineduel.server.commits.CommitQueue` (wrapping an :class:`Outbox`). With
``twisted.internet.task.Clock`` and a recording outbox every deadline rule is a deterministic
unit test; the Twisted protocol (``net.py``) only frames and forwards.

Every change is *staged* on the commit queue and committed with the rest of its reactor turn;
every message is held until then (``commits.py``). Requests check everything before they
change anything, so a refused request changes nothing; a failed commit is undone by reloading
the rooms it touched from the database (:meth:`Rooms.reload_after_failure`).

Views are filtered here, at the boundary: a seat's messages are built from
``GameState.view(seat)`` and from record entries passed through :func:`event_json`, never from
the board itself (V2, V4, V5).

Server clock: deadlines live on a *server clock* = reactor time − ``offset``. ``offset`` is 0
for a fresh database; after a restart it is chosen so the server clock resumes where it was
last written (``meta.clock``, written every second and at shutdown). Time while the server
was down therefore does not count against anyone: every deadline is re-armed with the time it
had left when the server went down (within the 1 s write interval).
"""

from __future__ import annotations

import gc
import hashlib
import hmac
import json as _json
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import Logger

from mineduel.server.commits import Batch, CommitQueue, Outbox
from mineduel.server.config import Config
from mineduel.server.match import LiveMatch, RandBytes
from mineduel.server.storage import Storage
from mineduel.shared.fairness import commitments as fairness
from mineduel.shared.wire import protocol
from mineduel.shared.rules.engine import Action, ActionType, Refusal
from mineduel.shared.wire.protocol import ErrorCode, ProtocolError, ServerType


log = Logger(namespace="mineduel.rooms")

EPS = 1e-6
"""Float slack when a timer fires exactly at a deadline."""

BLOB_VERSION = 1


@dataclass
class PeerInfo:
    """One connection as the room logic sees it."""

    id: int
    address: str  # the remote IP (limits)
    host: str = "127.0.0.1"  # the local address the client dialled (invite links)
    port: int = protocol.DEFAULT_PORT
    tls: bool = False  # came in over TLS: invite links are mineduels:// (with the certificate pin)
    pin: str | None = None


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
    peer: int | None = None

    def to_blob(self) -> dict[str, Any]:
        return {
            "sid": self.sid,
            "token_hash": self.token_hash,
            "name": self.name,
            "seed": self.seed,
            "ready": self.ready,
            "rematch": self.rematch,
            "away_since": self.away_since,
            "grace": self.grace,
            "expired": self.expired,
        }

    @classmethod
    def from_blob(cls, blob: dict[str, Any]) -> Seat:
        return cls(**blob)


@dataclass
class Room:
    code: str
    created: float
    next_seed: str  # server seed of the next match; its commitment is published in advance
    seats: list[Seat] = field(default_factory=list)  # in join order
    next_sid: int = 0
    number: int = 0  # matches started in this room (R1 nonce of the last one)
    match: LiveMatch | None = None
    call: IDelayedCall | None = None
    # The ended match's record, built once for storage and both match_end messages of that turn,
    # then dropped: kept, it would be ~15 KB per room (measured: RSS 94 -> 173 MB in 10 min).
    final_record: dict[str, Any] | None = None

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
        try:
            return self.room_seat(0), self.room_seat(1)
        except KeyError:
            return None

    def room_seat(self, record_seat: int) -> Seat:
        assert self.match is not None
        return self.seat(self.match.players[record_seat])

    def to_blob(self) -> dict[str, Any]:
        return {
            "v": BLOB_VERSION,
            "code": self.code,
            "created": self.created,
            "next_seed": self.next_seed,
            "next_sid": self.next_sid,
            "number": self.number,
            "seats": [s.to_blob() for s in self.seats],
            "match": None if self.match is None else {**self.match.to_blob(), "seq": self.match.seq},
        }


def hash_token(token: str) -> str:
    """O16: only SHA-256 of a session token is ever stored."""
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def event_json(entry: Mapping[str, Any], seq: int, me: int) -> dict[str, Any]:
    """One record action as seat ``me`` may see it: the opponent's plant never shows its cell."""
    kind = entry["type"]
    seat = entry["seat"]
    out: dict[str, Any] = {"seq": seq, "by": "me" if seat == me else "opponent", "action": kind}
    if "cell" in entry and (kind != "plant" or seat == me):
        out["cell"] = entry["cell"]
    out["at"] = entry["at"]
    if entry.get("auto"):
        out["auto"] = True
    if kind == "plant":
        out["commitment"] = entry["commitment"]
        out["transcript"] = entry["transcript"]
    return out


class Rooms:
    """Every room of one server process and the rules that move them."""

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
        self.rooms: dict[str, Room] = {}
        self.peers: dict[int, PeerInfo] = {}
        self.peer_seat: dict[int, tuple[Room, Seat]] = {}
        self._pending: set[str] = set()
        saved = storage.meta("clock")
        self.offset = 0.0 if saved is None else clock.seconds() - float(saved)

    # ----- time and entropy ---------------------------------------------------------------
    def now(self) -> float:
        """The server clock (see the module docstring)."""
        return self.clock.seconds() - self.offset

    def _hex(self, nbytes: int) -> str:
        return self.randbytes(nbytes).hex()

    def _new_code(self) -> str:
        alphabet = protocol.ROOM_CODE_ALPHABET
        limit = 256 - 256 % len(alphabet)
        while True:
            chars: list[str] = []
            while len(chars) < protocol.ROOM_CODE_LENGTH:
                for b in self.randbytes(protocol.ROOM_CODE_LENGTH):
                    if b < limit and len(chars) < protocol.ROOM_CODE_LENGTH:
                        chars.append(alphabet[b % len(alphabet)])
            code = "".join(chars)
            if code not in self.rooms and code not in self._pending:
                return code

    # ----- lookups ------------------------------------------------------------------------------
    def room(self, code: str) -> Room:
        """The room with ``code`` (restored from storage first if still pending)."""
        if code in self._pending:
            self._restore_room(code)
        room = self.rooms.get(code)
        if room is None:
            raise ProtocolError(ErrorCode.ROOM_NOT_FOUND, f"no room {code}")
        return room

    def seated(self, peer: int) -> tuple[Room, Seat]:
        found = self.peer_seat.get(peer)
        if found is None:
            raise ProtocolError(ErrorCode.NOT_SEATED, "this connection holds no seat: create, join or resume first")
        return found

    def open_rooms(self) -> int:
        """Rooms someone could join now (LAN discovery)."""
        return sum(1 for r in self.rooms.values() if len(r.seats) < 2 and r.status != "playing")

    # ----- requests (each raises ProtocolError and changes nothing, or succeeds) ------------------
    def create(self, peer: int, *, name: str, seed: str | None, rid: Any = None) -> None:
        if peer in self.peer_seat:
            raise ProtocolError(ErrorCode.ALREADY_SEATED, "this connection already holds a seat")
        if len(self.rooms) + len(self._pending) >= self.config.max_rooms:
            raise ProtocolError(ErrorCode.TOO_MANY_ROOMS, "the server has no room for more rooms")
        token = self._hex(32)
        room = Room(code=self._new_code(), created=self.now(), next_seed=self._hex(32))
        seat = Seat(sid=0, token_hash=hash_token(token), name=name, seed=seed or "")
        room.seats.append(seat)
        room.next_sid = 1
        self.commits.stage_room(room.code, room)
        self.rooms[room.code] = room
        self._attach(peer, room, seat)
        log.info("room_created room={room} peer={peer}", room=room.code, peer=peer)
        self._send(
            peer,
            {
                "type": ServerType.ROOM_CREATED.value,
                "room": room.code,
                "invite": self._invite(peer, room),
                "token": token,
                **({"id": rid} if rid is not None else {}),
            },
        )
        self._send(peer, self._room_message(room, seat))

    def peek(self, peer: int, code: str, rid: Any = None) -> None:
        room = self.room(code)
        msg: dict[str, Any] = {
            "type": ServerType.ROOM_INFO.value,
            "room": room.code,
            "status": room.status,
            "seats": len(room.seats),
            "open": len(room.seats) < 2,
            "commitment": fairness.commitment(room.next_seed),
        }
        if rid is not None:
            msg["id"] = rid
        self._send(peer, msg)

    def join(self, peer: int, code: str, *, name: str, seed: str | None, rid: Any = None) -> None:
        if peer in self.peer_seat:
            raise ProtocolError(ErrorCode.ALREADY_SEATED, "this connection already holds a seat")
        room = self.room(code)
        if len(room.seats) >= 2:
            raise ProtocolError(ErrorCode.ROOM_FULL, f"room {code} has two players")
        token = self._hex(32)
        seat = Seat(sid=room.next_sid, token_hash=hash_token(token), name=name, seed=seed or "")
        self._touch(room)
        room.seats.append(seat)
        room.next_sid += 1
        self._commit_room(room)
        self._attach(peer, room, seat)
        log.info("room_joined room={room} peer={peer}", room=room.code, peer=peer)
        reply = {"type": ServerType.JOINED.value, "room": room.code, "token": token, "resumed": False,
                 "invite": self._invite(peer, room)}
        if rid is not None:
            reply["id"] = rid
        self._send(peer, reply)
        self._send_room(room)

    def resume(self, peer: int, code: str, token: str, rid: Any = None) -> None:
        room = self.room(code)
        wanted = hash_token(token)
        seat = None
        for s in room.seats:
            if hmac.compare_digest(s.token_hash, wanted):  # O16: constant-time comparison
                seat = s
        if seat is None:
            raise ProtocolError(ErrorCode.BAD_TOKEN, "no seat of this room has that token")
        current = self.peer_seat.get(peer)
        if current is not None and current[1] is not seat:
            raise ProtocolError(ErrorCode.ALREADY_SEATED, "this connection already holds another seat")
        self._settle_and_publish(room)
        self._touch(room)
        entries: list[dict[str, Any]] = []
        match = room.match
        running = match is not None and not match.over and room.match_seats() is not None
        if running and seat.expired is None:
            assert match is not None
            seat.away_since = None
            seat.grace = None
            other = room.other(seat)
            if other is not None and other.expired is not None:
                # O12: this seat came back within its grace; the one that ran out first loses.
                entries = match.end_by(ActionType.DISCONNECT, match.record_seat(other.sid), self.now(), self.randbytes)
        self._commit_room(room, entries)
        old = seat.peer
        if old is not None and old != peer:
            self._send(old, protocol.error(ErrorCode.REPLACED, "this seat was resumed on another connection"))
            self._detach(old)
            self.outbox.close(old)
        self._attach(peer, room, seat)
        log.info("seat_resumed room={room} sid={sid} peer={peer}", room=room.code, sid=seat.sid, peer=peer)
        reply = {"type": ServerType.JOINED.value, "room": room.code, "resumed": True, "invite": self._invite(peer, room)}
        if rid is not None:
            reply["id"] = rid
        self._send(peer, reply)
        self._send(peer, self._room_message(room, seat))
        if match is not None and seat.sid in match.players:
            # Also after the opponent left a finished match (O13): its end stays visible.
            me = match.record_seat(seat.sid)
            self._send(peer, self._match_start_message(room, me))
            history = [event_json(e, i, me) for i, e in enumerate(match.actions)]
            self._send(peer, self._state_message(match, me, history))
            if match.over and not entries:
                self._send(peer, self._match_end_message(room, me))
        other = room.other(seat)
        if other is not None and other.peer is not None:
            if running:
                self._send(other.peer, self._presence_message(seat))
            self._send(other.peer, self._room_message(room, other))
        if entries:
            self._notify_match(room, entries)

    def ready(self, peer: int, *, ready: bool, seed: str | None) -> None:
        room, seat = self.seated(peer)
        self._settle_and_publish(room)
        if room.status == "playing":
            raise ProtocolError(ErrorCode.MATCH_RUNNING, "a match is in progress")
        if room.status == "finished" and self._same_pair(room):
            # After a finished match of the same two seats, ready means rematch (O14).
            self.rematch(peer, seed=seed)
            return
        self._touch(room)
        seat.ready = ready
        if seed is not None:
            seat.seed = seed
        self._try_start(room)

    def leave(self, peer: int) -> None:
        room, seat = self.seated(peer)
        self._settle_and_publish(room)
        if room.status == "playing" and seat.sid in room.match.players:  # type: ignore[union-attr]
            raise ProtocolError(ErrorCode.MATCH_RUNNING, "a match is in progress: resign first")
        self._touch(room)
        room.seats.remove(seat)
        for s in room.seats:
            s.ready = False
            s.rematch = False
        if room.seats:
            self._commit_room(room)
        else:
            self._delete(room)
        self._detach(peer)
        log.info("seat_left room={room} sid={sid}", room=room.code, sid=seat.sid)
        self._send_room(room)

    def act(self, peer: int, kind: str, cell: int | None, *, match_id: str | None, seq: int | None) -> int:
        """A rules action (explore/plant/flag/unflag/end_turn); returns the new seq."""
        room, seat = self.seated(peer)
        match, me = self._match_for(room, seat, match_id)
        if seat.expired is not None:
            raise ProtocolError(ErrorCode.GRACE_EXPIRED, "your reconnection grace ran out (O12)")
        if match.state.to_move != me:
            raise ProtocolError(ErrorCode.NOT_YOUR_TURN, "it is not your turn")
        if seq is not None and seq != match.seq:
            raise ProtocolError(ErrorCode.STALE_STATE, f"the match is at seq {match.seq}, not {seq}")
        result = match.apply(Action(me, ActionType(kind), cell), at=self.now(), randbytes=self.randbytes)
        if isinstance(result, Refusal):  # the engine changed nothing (A1-A6)
            raise ProtocolError(result.value, _REFUSAL_TEXT.get(result, str(result)))
        self._touch(room)
        self._commit_room(room, result, seats_changed=False)
        self._notify_match(room, result)
        return match.seq

    def resign(self, peer: int, *, match_id: str | None) -> int:
        room, seat = self.seated(peer)
        match, me = self._match_for(room, seat, match_id)
        self._touch(room)
        entries = match.end_by(ActionType.RESIGN, me, self.now(), self.randbytes)
        self._commit_room(room, entries)
        self._notify_match(room, entries)
        return match.seq

    def rematch(self, peer: int, *, seed: str | None) -> None:
        room, seat = self.seated(peer)
        self._settle_and_publish(room)
        if room.match is None:
            raise ProtocolError(ErrorCode.NO_MATCH, "no match has been played in this room")
        if not room.match.over:
            raise ProtocolError(ErrorCode.NOT_FINISHED, "the match is still in progress")
        if not self._same_pair(room):
            raise ProtocolError(ErrorCode.OPPONENT_MISSING, "the previous opponent has left: a new opponent plays after ready")
        self._touch(room)
        seat.rematch = True
        if seed is not None:
            seat.seed = seed
        a, b = room.seats
        if a.rematch and b.rematch and a.peer is not None and b.peer is not None:
            self._start(room, first_sid=room.match.players[1])  # O14: sides swap
        else:
            self._commit_room(room)
            for s in room.seats:
                if s.peer is not None:
                    self._send(s.peer, self._rematch_message(room, s))

    def get_record(self, peer: int, match_id: str, rid: Any = None) -> None:
        text = self.storage.load_result(match_id)
        if text is None:
            for room in self.rooms.values():
                if room.match is not None and room.match.id == match_id and not room.match.over:
                    raise ProtocolError(ErrorCode.NOT_FINISHED, "the record is published after the end")
            raise ProtocolError(ErrorCode.NOT_FOUND, f"no finished match {match_id} (kept 24 h)")
        msg = {"type": ServerType.RECORD.value, "match_id": match_id, "record": _json.loads(text)}
        if rid is not None:
            msg["id"] = rid
        self._send(peer, msg)

    # ----- connections -------------------------------------------------------------------------
    def peer_lost(self, peer: int) -> None:
        """O12: the connection is gone (clean close at once, silent drop by the idle timeout)."""
        self.peers.pop(peer, None)
        found = self.peer_seat.get(peer)
        if found is None:
            return
        room, seat = found
        self._settle_and_publish(room)  # while this seat still counts as connected
        self._touch(room)
        self._detach(peer)
        now = self.now()
        if room.status == "playing" and seat.sid in room.match.players:  # type: ignore[union-attr]
            if seat.expired is None:
                seat.away_since = now
                seat.grace = now + self.config.grace_seconds
        else:
            seat.ready = False
            seat.rematch = False
        self._commit_room(room)
        log.info("seat_away room={room} sid={sid}", room=room.code, sid=seat.sid)
        other = room.other(seat)
        if other is not None and other.peer is not None:
            if room.status == "playing":
                self._send(other.peer, self._presence_message(seat))
            self._send(other.peer, self._room_message(room, other))

    # ----- the clock ------------------------------------------------------------------------------
    def _arm(self, room: Room, not_before: float | None = None) -> None:
        """Keep one timer per room at its next deadline (turn or grace).

        A timer that must move later is ``reset`` rather than cancelled and re-created: Twisted
        re-sorts a later reset lazily, while every cancellation counts towards rebuilding its
        whole heap of timers (measured: a ~30 ms turn every ~12 s with 5,000 matches).
        """
        match = room.match
        at: float | None = None
        if match is not None and not match.over and room.match_seats() is not None:
            at = match.deadline
            for seat in room.seats:
                if seat.grace is not None and seat.expired is None and (at is None or seat.grace < at):
                    at = seat.grace
        call = room.call
        if at is None:
            if call is not None and call.active():
                call.cancel()
            room.call = None
            return
        if not_before is not None:
            at = max(at, not_before)
        delay = max(0.0, at - self.now())
        if call is not None and call.active():
            fires = call.getTime() - self.offset
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
        self._settle_and_publish(room)
        if room.call is None:
            self._arm(room)

    def _due(self, room: Room, now: float) -> bool:
        """Whether any deadline of the room's match is due by ``now`` (cheap: before every request)."""
        match = room.match
        if match is None or match.over:
            return False
        if match.deadline is not None and match.deadline <= now + EPS:
            return True
        return any(s.grace is not None and s.expired is None and s.grace <= now + EPS for s in room.seats)

    def _settle(self, room: Room, now: float) -> tuple[list[dict[str, Any]], bool, bool]:
        """O6: every deadline due by ``now``, in time order: turn timeouts and ran-out graces.

        Returns the new record entries, whether anything changed (a grace can run out
        without an entry while the opponent is away too) and whether a seat changed.
        """
        match = room.match
        pair = room.match_seats()
        entries: list[dict[str, Any]] = []
        changed = seats = False
        if match is None or pair is None:
            return entries, changed, seats
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
                entries += match.expire(at, self.randbytes)  # O4/O5
                continue
            seat, other = pair[rs], pair[1 - rs]
            seat.expired = at
            seats = True
            if other.expired is not None:
                entries += match.end_by(ActionType.VOID, rs, at, self.randbytes)  # both graces over
            elif other.peer is not None:
                entries += match.end_by(ActionType.DISCONNECT, rs, at, self.randbytes)
            # else: the opponent is away too and still within its grace: wait (O12).
        return entries, changed, seats

    def _settle_and_publish(self, room: Room) -> None:
        """Settle due deadlines, store and announce them (before any request is looked at)."""
        now = self.now()
        if not self._due(room, now):
            return
        self._touch(room)
        entries, changed, seats = self._settle(room, now)
        if not changed:
            return
        self._commit_room(room, entries, seats_changed=seats)
        if entries:
            self._notify_match(room, entries)

    # ----- match start -------------------------------------------------------------------------------
    def _same_pair(self, room: Room) -> bool:
        return (
            room.match is not None
            and len(room.seats) == 2
            and set(room.match.players) == {s.sid for s in room.seats}
        )

    def _try_start(self, room: Room) -> None:
        if len(room.seats) == 2 and all(s.ready and s.peer is not None for s in room.seats):
            self._start(room, first_sid=None)
            return
        self._commit_room(room)
        self._send_room(room)

    def _start(self, room: Room, *, first_sid: int | None) -> None:
        a, b = room.seats
        previous = room.match
        match = LiveMatch.start(
            match_id=self._hex(8),
            number=room.number + 1,
            seats_in_join_order=(a.sid, b.sid),
            first_sid=first_sid,
            server_seed=room.next_seed,
            client_seeds=(a.seed, b.seed),
            now=self.now(),
            wall=self.wall(),
            turn_seconds=self.config.turn_seconds,
            names_by_sid={a.sid: a.name, b.sid: b.name},
        )
        room.match = match
        room.number += 1
        room.next_seed = self._hex(32)
        for s in room.seats:
            s.ready = s.rematch = False
            s.away_since = s.grace = s.expired = None
        drop = [previous.id] if previous is not None else []
        self._commit_room(room, drop=drop)
        log.info(
            "match_started room={room} match={match} first={first} rule={rule}",
            room=room.code, match=match.id, first=match.players[0], rule=match.first_rule,
        )
        for rs in (0, 1):
            peer = room.room_seat(rs).peer
            if peer is not None:
                self._send(peer, self._match_start_message(room, rs))
                self._send(peer, self._state_message(match, rs, []))
        self._send_room(room)

    def _match_for(self, room: Room, seat: Seat, match_id: str | None) -> tuple[LiveMatch, int]:
        """Settle, then the checks every match request shares (documented order)."""
        self._settle_and_publish(room)
        match = room.match
        if match is None or seat.sid not in match.players:
            raise ProtocolError(ErrorCode.NO_MATCH, "no match of yours in this room")
        if match_id is not None and match_id != match.id:
            raise ProtocolError(ErrorCode.WRONG_MATCH, f"the current match is {match.id}")
        if match.over:
            raise ProtocolError(ErrorCode.GAME_OVER, "the match is over")
        return match, match.record_seat(seat.sid)

    # ----- persistence -------------------------------------------------------------------------------
    def _touch(self, room: Room) -> None:
        """Note who sits in ``room`` before the open batch changes it (see ``reload_after_failure``)."""
        touched = self.commits.batch.touched
        if room.code not in touched:
            touched[room.code] = {s.sid: s.peer for s in room.seats}

    def _commit_room(
        self,
        room: Room,
        entries: list[dict[str, Any]] | None = None,
        *,
        drop: list[str] | None = None,
        seats_changed: bool = True,
    ) -> None:
        """Stage ``room`` and its new record entries; they commit together with this turn's batch.

        ``seats_changed=False`` (an action or a timeout: only the match moved) stores the new
        record rows alone: they carry the match's clock state (``LiveMatch.stored_rows``), so the
        room's blob is not rewritten for every action.
        """
        match = room.match
        commits = self.commits
        if entries and match is not None and match.over:
            match.ended_wall = self.wall()
            for s in room.seats:
                s.away_since = s.grace = s.expired = None
            seats_changed = True
        for match_id in drop or ():
            commits.stage_drop(match_id)
        if seats_changed or not entries or match is None:
            commits.stage_room(room.code, room)
        if entries and match is not None:
            commits.stage_actions(match.id, match.seq - len(entries), match.stored_rows(entries))
            if match.over:
                record = room.final_record = match.record(room=room.code)
                commits.stage_result(match.id, room.code, match.ended or self.now(), orjson.dumps(record).decode())
                log.info(
                    "match_ended room={room} match={match} reason={reason} winner={winner}",
                    room=room.code, match=match.id, reason=match.state.outcome().reason.value,  # type: ignore[union-attr]
                    winner=match.state.outcome().winner,  # type: ignore[union-attr]
                )
        self._arm(room)

    def _delete(self, room: Room) -> None:
        """Stage the room's removal (and its match's actions) and forget it."""
        self.commits.stage_room(room.code, None)
        if room.match is not None:
            self.commits.stage_drop(room.match.id)
        self._forget(room)

    def reload_after_failure(self, batch: Batch) -> set[int]:
        """A batch's commit failed: put every room it touched back as the database has it.

        Returns the connections seated in those rooms before or after the batch: they may have
        been shown nothing uncommitted (their messages were held), but their seats' connection
        state no longer matches, so the caller closes them and they resume with their tokens
        (O12), exactly as after a restart. The rooms are restored the way a restart restores
        them, and their timers wait at least a second so a failing disk is not hammered.
        """
        touched: dict[str, dict[int, int | None]] = batch.touched
        codes = set(batch.rooms) | set(touched)
        peers: set[int] = set()
        for code in sorted(codes):
            peers.update(p for p in touched.get(code, {}).values() if p is not None)
            room = self.rooms.get(code)
            if room is not None:
                for seat in room.seats:
                    if seat.peer is not None:
                        peers.add(seat.peer)
                        self._detach(seat.peer)
                self._forget(room)
            self._restore_room(code, stage=False, not_before=self.now() + 1.0)
        for peer in peers:
            self._detach(peer)
        log.warn("rooms_reloaded count={count} connections={peers}", count=len(codes), peers=len(peers))
        return peers

    def tick(self) -> None:
        """Write the server clock (every ``clock_interval``; every commit writes it too)."""
        self.commits.stage_meta("clock", repr(self.now()))

    def sweep(self) -> int:
        """O15: drop expired rooms and results; rooms with a match in progress never expire."""
        now = self.now()
        gone = 0
        for room in list(self.rooms.values()):
            expires = room.expires(self.config)
            if expires is None or expires > now:
                continue
            self._touch(room)
            for seat in room.seats:
                if seat.peer is not None:
                    self._send(seat.peer, {"type": ServerType.ROOM_CLOSED.value, "room": room.code, "reason": "expired"})
                    self._detach(seat.peer)
            self._delete(room)
            gone += 1
        self.commits.stage_purge(now - self.config.result_ttl)
        if gone:
            log.info("rooms_expired count={count}", count=gone)
        return gone

    # ----- restoring -------------------------------------------------------------------------------
    def restore_all(self) -> Deferred[int]:
        """Bring back every stored room in slices of at most ``restore_slice`` seconds of work.

        A request naming a room that is still pending restores it on the spot.
        """
        codes = self.storage.room_codes()
        self._pending.update(codes)
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
                    if code in self._pending:
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

    def _restore_room(self, code: str, *, stage: bool = True, not_before: float | None = None) -> None:
        """Rebuild a stored room (replaying its match) as after a restart (O12: seats away).

        ``stage`` writes the restart's adjustments back; after a failed commit they are not
        written (they are derived again by the next restore), so a failing disk sees no retry loop.
        """
        self._pending.discard(code)
        loaded = self.storage.load_room(code)
        if loaded is None:
            return
        blob, actions = loaded
        room = Room(
            code=blob["code"],
            created=blob["created"],
            next_seed=blob["next_seed"],
            seats=[Seat.from_blob(s) for s in blob["seats"]],
            next_sid=blob["next_sid"],
            number=blob["number"],
        )
        if blob["match"] is not None:
            room.match = LiveMatch.from_blob(blob["match"], actions)
        self.rooms[code] = room
        now = self.now()
        if room.status == "playing" and room.match_seats() is not None:
            for seat in room.seats:
                if seat.away_since is None and seat.expired is None:
                    # Connected when the server went down: the drop is detected now (O12).
                    seat.away_since = now
                    seat.grace = now + self.config.grace_seconds
        else:
            for seat in room.seats:
                seat.ready = seat.rematch = False
        if stage:
            self.commits.stage_room(code, room)
        self._arm(room, not_before)

    # ----- bookkeeping ----------------------------------------------------------------------------
    def _attach(self, peer: int, room: Room, seat: Seat) -> None:
        seat.peer = peer
        self.peer_seat[peer] = (room, seat)

    def _detach(self, peer: int) -> None:
        found = self.peer_seat.pop(peer, None)
        if found is not None and found[1].peer == peer:
            found[1].peer = None

    def _forget(self, room: Room) -> None:
        if room.call is not None and room.call.active():
            room.call.cancel()
        self.rooms.pop(room.code, None)

    def shutdown(self) -> None:
        """Cancel timers, commit what is staged and write the clock one last time."""
        for room in self.rooms.values():
            if room.call is not None and room.call.active():
                room.call.cancel()
            room.call = None
        self.tick()
        self.commits.drain()

    # ----- messages ------------------------------------------------------------------------------------
    def _send(self, peer: int, message: Mapping[str, Any]) -> None:
        self.outbox.send(peer, message)

    def _invite(self, peer: int, room: Room) -> str:
        info = self.peers.get(peer)
        host = self.config.public_host or (info.host if info else "127.0.0.1")
        port = info.port if info else self.config.port
        if info is not None and info.tls:
            return protocol.invite_link(host, port, room.code, tls=True, pin=info.pin)
        return protocol.invite_link(host, port, room.code)

    def _seat_json(self, seat: Seat | None, now: float) -> dict[str, Any] | None:
        if seat is None:
            return None
        return {
            "name": seat.name,
            "connected": seat.peer is not None,
            "ready": seat.ready,
            "rematch": seat.rematch,
            "grace": protocol.deadline_json(seat.grace, now) if seat.expired is None else None,
            "grace_expired": seat.expired is not None,
        }

    def _room_message(self, room: Room, seat: Seat) -> dict[str, Any]:
        now = self.now()
        match = room.match
        expires = room.expires(self.config)
        return {
            "type": ServerType.ROOM.value,
            "room": room.code,
            "status": room.status,
            "me": self._seat_json(seat, now),
            "opponent": self._seat_json(room.other(seat), now),
            "match_id": match.id if match is not None else None,
            "next_commitment": fairness.commitment(room.next_seed),
            "expires": None if expires is None else round(expires, 3),
            "server_time": round(now, 3),
        }

    def _send_room(self, room: Room) -> None:
        for seat in room.seats:
            if seat.peer is not None:
                self._send(seat.peer, self._room_message(room, seat))

    def _presence_message(self, seat: Seat) -> dict[str, Any]:
        now = self.now()
        connected = seat.peer is not None
        return {
            "type": ServerType.PRESENCE.value,
            "who": "opponent",
            "connected": connected,
            "deadline": None if connected or seat.expired is not None else protocol.deadline_json(seat.grace, now),
            "grace_expired": seat.expired is not None,
            "server_time": round(now, 3),
        }

    def _rematch_message(self, room: Room, seat: Seat) -> dict[str, Any]:
        other = room.other(seat)
        return {
            "type": ServerType.REMATCH.value,
            "me": seat.rematch,
            "opponent": bool(other and other.rematch),
        }

    def _match_start_message(self, room: Room, me: int) -> dict[str, Any]:
        match = room.match
        assert match is not None
        return {
            "type": ServerType.MATCH_START.value,
            "room": room.code,
            "match_id": match.id,
            "seat": me,
            "first": "me" if me == 0 else "opponent",
            "first_player_rule": match.first_rule,
            "commitment": match.commitment,
            "client_seeds": list(match.client_seeds),
            "my_seed_index": match.join_order.index(me),
            "nonce": match.number,
            "turn_seconds": match.turn_seconds,
            "opponent": {"name": match.names[1 - me]},
            "started": round(match.started, 3),
        }

    def _state_message(self, match: LiveMatch, me: int, events: list[dict[str, Any]]) -> dict[str, Any]:
        return protocol.state_message(
            match.state.view(me, match.deadline),
            match_id=match.id,
            seq=match.seq,
            now=self.now(),
            transcript=match.transcript,
            events=events,
        )

    def _match_end_message(self, room: Room, me: int) -> dict[str, Any]:
        match = room.match
        assert match is not None and match.over and match.ended is not None
        record = room.final_record
        if record is None or record["match_id"] != match.id:
            record = match.record(room=room.code)
        return {
            "type": ServerType.MATCH_END.value,
            "match_id": match.id,
            "seat": me,
            "result": protocol.outcome_json(match.state.outcome(), me),
            "reveal": protocol.reveal_json(match.state.reveal(), me),
            "turns": match.state.turn,
            "elapsed": round(match.ended - match.started, 3),
            "record": record,
            "next_commitment": fairness.commitment(room.next_seed),
        }

    def _notify_match(self, room: Room, entries: list[dict[str, Any]]) -> None:
        """Each seat gets its own state (and the reveal once over) after every change (V2, O13)."""
        match = room.match
        pair = room.match_seats()
        if match is None or pair is None or not entries:
            room.final_record = None
            return
        first = match.seq - len(entries)
        for rs in (0, 1):
            peer = pair[rs].peer
            if peer is None:
                continue
            events = [event_json(e, first + i, rs) for i, e in enumerate(entries)]
            self._send(peer, self._state_message(match, rs, events))
        if match.over:
            for rs in (0, 1):
                peer = pair[rs].peer
                if peer is not None:
                    self._send(peer, self._match_end_message(room, rs))
            room.final_record = None
            self._send_room(room)


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
