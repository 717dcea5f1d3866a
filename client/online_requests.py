"""The session's requests: each sent with a fresh id, its reply routed back by that id.

:class:`Requests` holds the requests still waiting for a reply on the current link (a lost link
forgets them: what was not answered is asked again after ``resume``), builds the room commands the
screens call (create / peek / join / ready / leave / rematch / resign, the match's actions), and
turns a refusal into what the player is told (``online.error.*``, errors.py). It changes the
session only through :class:`~mineduel.client.online_client.OnlineClient`'s own fields.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mineduel.client.errors import error_key
from mineduel.client.witness import server_label
from mineduel.shared.wire.messages import (
    ClientMessage,
    CreateRoom,
    Error,
    Join,
    Joined,
    Leaderboard,
    Leave,
    LiveRooms,
    MatchAction,
    Ok,
    Peek,
    Pong,
    Profile,
    Ready,
    RecordReply,
    Rematch,
    RequestId,
    Resign,
    Resume,
    RoomCreated,
    RoomInfo,
    ServerMessage,
    SetSpectators,
    Welcome,
)
from mineduel.shared.wire.names import ErrorCode

if TYPE_CHECKING:
    from mineduel.client.online_client import OnlineClient

GONE = (ErrorCode.BAD_TOKEN, ErrorCode.ROOM_NOT_FOUND)
"""Resume refusals that say the seat no longer exists."""

NOT_A_VERDICT = (ErrorCode.TOO_MANY_ATTEMPTS, ErrorCode.STORAGE_UNAVAILABLE, ErrorCode.INTERNAL_ERROR)
"""Resume refusals that say nothing about the seat: keep the token, try again after the backoff."""


@dataclass(frozen=True, slots=True)
class Pending:
    """A request waiting for its reply, and where the reply goes."""

    request: str
    on_ok: Callable[[ServerMessage], None] | None
    on_error: Callable[[str], None] | None
    room: str | None = None  # the room a peek / join / resume named (a ``moved`` must name it too, §18)


def reply_id(msg: ServerMessage) -> RequestId | None:
    """The request id a reply echoes (only replies carry one)."""
    if isinstance(msg, (Welcome, Error, Ok, Pong, RoomCreated, RoomInfo, Joined, RecordReply, Profile, Leaderboard, LiveRooms)):
        return msg.id
    return None


class Requests:
    """See the module docstring."""

    def __init__(self, session: OnlineClient) -> None:
        self.session = session
        self._pending: dict[RequestId, Pending] = {}
        self._ids = itertools.count(1)

    # ----- the bookkeeping -----------------------------------------------------------------------------
    def send(self, build: Callable[[str], ClientMessage], *, on_ok: Callable[[ServerMessage], None] | None = None,
             on_error: Callable[[str], None] | None = None, room: str | None = None) -> None:
        """Send ``build(id)``; its reply (same ``id``) goes to ``on_ok``, a refusal to ``on_error``."""
        session = self.session
        if not session.connected:
            if on_error is not None:
                on_error("not_connected")
            else:
                session.notice = ("online.connection_lost", ())
                session.busy = None
            return
        rid = f"m{next(self._ids)}"
        message = build(rid)
        kind = message.type if isinstance(message, MatchAction) else message.TYPE
        self._pending[rid] = Pending(kind.value, on_ok, on_error, room)
        session.connection.send(message)

    def answer(self, msg: ServerMessage) -> bool:
        """Route a reply to its request (after the session applied it); ``False`` for an error that
        answers nothing (the server's own complaint about the connection)."""
        rid = reply_id(msg)
        pending = self._pending.pop(rid, None) if rid is not None else None
        if pending is None:
            return not isinstance(msg, Error)
        if isinstance(msg, Error):
            self.session.busy = None
            if pending.on_error is not None:
                pending.on_error(msg.code)
            else:
                self.refused(pending.request, msg.code)
        elif pending.on_ok is not None:
            pending.on_ok(msg)
        return True

    def clear(self) -> None:
        """The link is gone: no reply will come on it."""
        self._pending.clear()

    def take(self, rid: RequestId | None) -> Pending | None:
        """The request ``rid`` answers, no longer pending (a ``moved`` reply: it is asked again elsewhere)."""
        return None if rid is None else self._pending.pop(rid, None)

    def refused(self, request: str, code: str) -> None:
        """A refusal as the player is told it (during a match, also on the match screen)."""
        if request == "resume" and code in GONE:
            self._resume_refused(code)
            return
        self.session.notice = (error_key(code), (("detail", code),))

    # ----- the commands --------------------------------------------------------------------------------
    def peek(self, code: str) -> None:
        self.session.room_info = None
        self.session.busy = "peek"
        self.send(lambda rid: Peek(code, rid), on_ok=self._answered, room=code)

    def create_room(self, *, listed: bool = False, rated: bool = False, spectators: bool = True) -> None:
        """Create a room with this player's name; ``listed``: LAN discovery names it while it waits
        (the room of *Host a game*; PROTOCOL.md §12); ``rated``: its matches change both ratings (§17);
        ``spectators`` false: nobody may watch it (§16: ``spectating_off``)."""
        if not self._can_store():
            return
        self.session.busy = "create"
        seed = self.session.services.client_seed()
        name = self.session.player_name
        self.send(lambda rid: CreateRoom(name=name, client_seed=seed, id=rid, listed=listed, rated=rated,
                                         spectators=spectators), on_ok=self._answered)

    def join(self, code: str) -> None:
        """O1: only this seats anyone (opening a link only peeks). The player's name goes along."""
        if not self._can_store():
            return
        self.session.busy = "join"
        seed = self.session.services.client_seed()
        name = self.session.player_name
        self.send(lambda rid: Join(code, name=name, client_seed=seed, id=rid), on_ok=self._answered, room=code)

    def ready(self, ready: bool = True) -> None:
        # The seed is sent after the room's next_commitment was seen (R1).
        seed = self.session.services.client_seed() if ready else None
        if seed is not None:
            self._keep_seed(seed)
        self.send(lambda rid: Ready(ready, seed, rid))

    def set_spectators(self, allowed: bool) -> None:
        """The room's creator lets others watch it, or not (PROTOCOL.md §16); the waiting room then
        shows the server's ``room`` (``watchable``), never what was asked."""
        self.send(lambda rid: SetSpectators(allowed, rid))

    def rematch(self) -> None:
        seed = self.session.services.client_seed()
        self._keep_seed(seed)
        self.send(lambda rid: Rematch(seed, rid))

    def _keep_seed(self, seed: str) -> None:
        """Ready / Rematch is about to carry ``seed``: the witness keeps it first (a crash may follow),
        with the commitment the player was shown (the room's ``next_commitment``, R1)."""
        session = self.session
        if not session.connected or session.address is None or session.room_code is None:
            return  # nothing is sent
        room, match = session.room, session.match
        if room is not None and room.room == session.room_code:
            commitment = room.next_commitment
        elif match is not None and match.end is not None:
            commitment = match.end.next_commitment
        else:
            commitment = ""
        session.witness.seed_sent(server_label(*session.address), session.room_code, seed, commitment)

    def leave(self) -> None:
        """Give the seat up (outside a match); the token is forgotten."""
        self.send(lambda rid: Leave(rid), on_ok=lambda _msg: self.session.forget_seat())

    def resume(self, room: str, token: str) -> None:
        self.send(lambda rid: Resume(room, token, rid), on_error=self._resume_refused, room=room)

    def send_action(self, message: MatchAction | Resign, on_error: Callable[[str], None]) -> None:
        """The match's way to send an action; a refusal comes back through ``on_error``."""
        if isinstance(message, MatchAction):
            self.send(lambda rid: MatchAction(message.type, message.cell, message.match_id, message.seq, rid),
                      on_error=on_error)
        else:
            self.send(lambda rid: Resign(message.match_id, rid), on_error=on_error)

    # ----- replies ---------------------------------------------------------------------------------------
    def _answered(self, msg: ServerMessage) -> None:
        self.session.busy = None

    def _can_store(self) -> bool:
        if not self.session.services.tokens.available():
            self.session.notice = ("online.token_unavailable", ())
            return False
        return True

    def _resume_refused(self, code: str) -> None:
        """The server no longer knows this seat (room expired, token unknown): forget it."""
        session = self.session
        if code in GONE:
            session.forget_seat()
            session.notice = ("online.error.session_gone", ())
        elif code in NOT_A_VERDICT:
            session.notice = (error_key(code), ())
            session.lost("closed")
        else:
            self.refused("resume", code)
