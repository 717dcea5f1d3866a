"""The player on a server (issue 20, PROTOCOL.md §17): identity, Quick match, profile and leaderboard.

A part of the :class:`~mineduel.client.online_client.OnlineClient` (pure, injected clock, no socket),
one idea: what the server knows of *this player* and the quick-match queue, as the screens show it.

* **Identity.** Right after ``welcome`` (before any ``resume``) the session sends ``identify`` with
  the key (client/player_key.py) and the player's name, when both exist; the ``player`` reply is
  the identity the screens show (``Ann#3f9c``, the rating). A name changed in Settings while
  identified is sent as ``rename``. A server that does not know ``identify`` (an older one) answers
  ``unknown_type``: Quick match, the profile and the leaderboard are then not offered there.
* **Quick match** (:class:`Quick`): ``quick_match`` → *searching* (the server's ``since`` mapped to the
  local clock, so the elapsed time is the server's count) → ``matched`` (the server seated both in a
  rated room: the token is stored like ``joined``'s, O12) → *Ready* within the confirm time → the
  match runs on the usual match screen. A confirm that fails on either side is said in one
  sentence (:attr:`PlayerSession.quick_notice`): the one who did not confirm is out of the queue, the
  other searches on with its waiting time kept. After :data:`CPU_OFFER_AFTER` seconds with nobody,
  the screen offers a CPU match; the search goes on until the player takes it.
* **Profile and leaderboard**: asked for when their screens open; a refusal or a broken answer is a
  message on that screen and changes nothing else.

Everything read from the server has been checked by the codec (``BadMessage`` ends the session as
any broken line does); what is checked here is only what the codec cannot know: a ``matched`` for a
room while the player is not queued is ignored (logged), a second identity never replaces the first.
"""

from __future__ import annotations

import enum
import logging
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mineduel.client.errors import error_key
from mineduel.client.player_key import KeyState, KeyStore, Loaded, server_key
from mineduel.shared.wire import codec
from mineduel.shared.wire.messages import (
    GetLeaderboard,
    GetProfile,
    Identify,
    Leaderboard,
    LeaveQueue,
    Matched,
    PlayerInfo,
    Profile,
    QueueStatus,
    QuickMatch,
    Rename,
    ServerMessage,
)
from mineduel.shared.wire.names import ErrorCode

if TYPE_CHECKING:
    from mineduel.client.online_client import OnlineClient

log = logging.getLogger(__name__)

CPU_OFFER_AFTER = 20.0
"""Seconds of searching after which the screen offers a CPU match (issue 20: "after about 20 s")."""
CONFIRM_MAX = 60.0
"""A hostile server's confirm time is shown as at most this (C3 says 10 s)."""


class Quick(enum.Enum):
    IDLE = "idle"
    JOINING = "joining"  # quick_match sent, no answer yet
    SEARCHING = "searching"
    LEAVING = "leaving"  # leave_queue sent
    MATCHED = "matched"  # seated in the quick match's room: Ready within the confirm time
    CONFIRMED = "confirmed"  # Ready sent: waiting for the opponent's


@dataclass(frozen=True, slots=True)
class QuickSnapshot:
    """What the quick-match screen shows, in whole seconds (changes once a second at most)."""

    state: Quick
    elapsed: int  # seconds searching (the server's count, kept across a failed confirm)
    cpu_offer: bool
    matched: Matched | None
    confirm_left: int | None  # whole seconds left to press Ready
    room_ready: bool  # the matched room has arrived (Ready may carry the seed, R1)
    opponent_ready: bool
    notice: str | None  # a catalog key: what just happened (not ready, back in the queue...)


@dataclass(frozen=True, slots=True)
class PlayerSnapshot:
    """What the lobby shows of the player: compare to redraw only on change."""

    key_state: KeyState
    supported: bool | None  # the server knows identify (None: not asked yet)
    identity: PlayerInfo | None
    identifying: bool
    error: str | None  # why there is no identity (a catalog key)
    quick: QuickSnapshot
    profile: Profile | None
    profile_error: str | None
    leaderboard: Leaderboard | None
    leaderboard_error: str | None


class PlayerSession:
    """See the module docstring; ``session`` is the :class:`OnlineClient` it belongs to. The queue is
    its :attr:`queue` (:class:`QuickQueue`)."""

    def __init__(self, session: OnlineClient, keys: KeyStore) -> None:
        self.session = session
        self.keys = keys
        self.loaded: Loaded = keys.load()  # made only on the first online use (:meth:`ensure_key`)
        self.supported: bool | None = None
        self.identity: PlayerInfo | None = None
        self.identifying = False
        self.error: str | None = None
        self.name = ""  # the name identify (or rename) sent
        self.wanted_name: str | None = None  # the settings' name, followed each frame
        self.queue = QuickQueue(self)
        self.profile: Profile | None = None
        self.profile_error: str | None = None
        self.profile_of: str | None = None  # the player id asked for (None: mine)
        self.leaderboard: Leaderboard | None = None
        self.leaderboard_error: str | None = None
        self.rated_room = False  # the server page's choice: the next room created here is rated (§17)

    # ----- identity ---------------------------------------------------------------------------------
    def ensure_key(self) -> Loaded:
        """The key, made now on the first online use; a damaged file stays for the player to decide."""
        if self.loaded.state in (KeyState.MISSING, KeyState.UNAVAILABLE):
            self.loaded = self.keys.ensure()
        return self.loaded

    def set_key(self, loaded: Loaded) -> None:
        """A new identity on this computer (imported or made over a damaged file): the next connection
        identifies with it (PROTOCOL.md §17: one identity per connection)."""
        self.loaded = loaded
        self.identity = None
        self.error = None
        self.profile = self.leaderboard = None

    def welcomed(self) -> None:
        """``welcome`` arrived: identify first (a resumed rated seat needs it, PROTOCOL.md §17)."""
        self.identity = None
        self.identifying = False
        self.error = None
        self.rated_room = False  # chosen anew on each server
        self.queue.welcomed()
        name = self.wanted_name
        if name and self.supported is not False:
            self.identify(name)

    def identify(self, name: str) -> None:
        loaded = self.ensure_key()
        if loaded.state is not KeyState.READY or loaded.key is None:
            self.error = "player.error.key_" + loaded.state.value
            return
        if self.identity is not None or self.identifying or self.session.address is None:
            return
        key = server_key(loaded.key, *self.session.address)  # one key per server (player_key.py)
        self.identifying = True
        self.name = name
        self.session.requests.send(lambda rid: Identify(key, name, rid), on_ok=self._identified,
                                   on_error=self._identify_refused)

    def _identified(self, _msg: ServerMessage) -> None:
        """``ok``: the ``player`` came before it — or, from a server that only pretends to know §17,
        did not: then nothing here is offered on it (and identify is not sent again)."""
        self.identifying = False
        if self.identity is None:
            log.warning("online: the server accepted identify without naming a player; quick match is off here")
            self.supported = False
            return
        self.supported = True

    def _identify_refused(self, code: str) -> None:
        self.identifying = False
        if code == ErrorCode.UNKNOWN_TYPE:
            self.supported = False  # an older server: unrated play only, nothing to say
            return
        if code == ErrorCode.ALREADY_IDENTIFIED:
            return  # the identity this connection has stays (its ``player`` told us)
        self.error = "player.error." + code if code in (ErrorCode.BAD_NAME, ErrorCode.TOO_MANY_PLAYERS) else error_key(code)

    def follow_name(self, name: str | None) -> None:
        """The settings' name, each frame: a change while identified is a ``rename``; a first name
        given after welcome identifies; a refused name is tried again only once it changed."""
        self.wanted_name = name
        if not name or not self.session.connected or self.supported is False or self.identifying:
            return
        if self.identity is None:
            if self.error is None or (name != self.name and self.loaded.state is KeyState.READY):
                self.error = None
                self.identify(name)
            return
        if name != self.name:
            self.name = name
            self.identifying = True
            self.session.requests.send(lambda rid: Rename(name, rid), on_ok=self._identified,
                                       on_error=self._rename_refused)

    def _rename_refused(self, code: str) -> None:
        self.identifying = False
        self.session.notice = ("player.error." + code if code == ErrorCode.BAD_NAME else error_key(code), ())

    # ----- what the server says -------------------------------------------------------------------------------
    def push(self, msg: ServerMessage) -> bool:
        """Handle a §17 message; ``False`` for any other."""
        match msg:
            case PlayerInfo():
                if self.identity is not None and self.identity.player != msg.player:
                    log.warning("online: the server named another player on this connection; kept the first")
                    return True
                self.identity = msg
                self.name = msg.name
                self.error = None
                self.supported = True
            case QueueStatus():
                self.queue.on_queue(msg)
            case Matched():
                self.queue.on_matched(msg)
            case Profile():
                if msg.player == self.profile_of or (self.profile_of is None and
                                                     (self.identity is None or msg.player == self.identity.player)):
                    self.profile = msg
                    self.profile_error = None
            case Leaderboard():
                self.leaderboard = msg
                self.leaderboard_error = None
            case _:
                return False
        return True

    def room_closed(self, room: str) -> bool:
        return self.queue.room_closed(room)

    def match_started(self) -> None:
        self.queue.match_started()

    def lost(self) -> None:
        """The connection is gone: no identity on it any more, and no place in the queue."""
        self.queue.lost()
        self.identity = None
        self.identifying = False

    # ----- profile and leaderboard -------------------------------------------------------------------------
    def get_profile(self, player: str | None = None) -> None:
        self.profile_of = player
        self.profile = None
        self.profile_error = None
        self.session.requests.send(lambda rid: GetProfile(player, rid), on_error=self._profile_refused)

    def _profile_refused(self, code: str) -> None:
        self.profile_error = "profile.not_found" if code == ErrorCode.NOT_FOUND else error_key(code)

    def get_leaderboard(self) -> None:
        self.leaderboard_error = None
        self.session.requests.send(lambda rid: GetLeaderboard(rid), on_error=self._leaderboard_refused)

    def _leaderboard_refused(self, code: str) -> None:
        self.leaderboard_error = error_key(code)

    # ----- the frame ------------------------------------------------------------------------------------
    def snapshot(self) -> PlayerSnapshot:
        return PlayerSnapshot(self.loaded.state, self.supported, self.identity, self.identifying, self.error,
                              self.queue.snapshot(), self.profile, self.profile_error, self.leaderboard, self.leaderboard_error)

    def next_wakeup(self) -> float | None:
        return self.queue.next_wakeup()


class QuickQueue:
    """Quick match as this client follows it (see the module docstring's *Quick match*)."""

    def __init__(self, players: PlayerSession) -> None:
        self.players = players
        self.session = players.session
        self.state = Quick.IDLE
        self.search_since: float | None = None  # local clock: when the search began (the server's since)
        self.matched: Matched | None = None
        self.confirm_until: float | None = None  # local clock
        self.notice: str | None = None  # a catalog key: what just happened
        self.dissolved: str | None = None  # the matched room a ``queue`` message already said was dissolved
        self.played: str | None = None  # the room of the last quick match that started (left after its end)

    def start(self, *, spectators: bool = True) -> None:
        """Join the queue (the screen made sure of the identity first); ``spectators``: the player's
        *Let others watch* (PROTOCOL.md §17: the matched room is watchable only if both allow it)."""
        if self.players.identity is None or self.state is not Quick.IDLE or self.session.seated:
            return
        self.state = Quick.JOINING
        self.notice = None
        self.session.requests.send(lambda rid: QuickMatch(rid, spectators), on_error=self._refused)

    def _refused(self, code: str) -> None:
        if code == ErrorCode.ALREADY_QUEUED:
            self.state = Quick.SEARCHING
            if self.search_since is None:
                self.search_since = self.session.clock()
            return
        self._idle()
        self.notice = error_key(code)

    def cancel(self) -> None:
        """Leave the queue (Cancel, Back, or the CPU offer taken)."""
        if self.state in (Quick.JOINING, Quick.SEARCHING):
            self.state = Quick.LEAVING
            self.session.requests.send(lambda rid: LeaveQueue(rid), on_ok=self._left, on_error=lambda _c: self._left(None))

    def _left(self, _msg: ServerMessage | None) -> None:
        if self.state is Quick.LEAVING:
            self._idle()

    def confirm(self) -> None:
        """Ready in the matched room (it carries this seat's seed, R1, once the room was seen)."""
        if self.state is Quick.MATCHED and self.room_ready() and (self.confirm_left() or 0.0) > 0.0:
            self.state = Quick.CONFIRMED
            self.session.requests.ready(True)

    def room_ready(self) -> bool:
        room, matched = self.session.room, self.matched
        return room is not None and matched is not None and room.room == matched.room

    def match_started(self) -> None:
        """``match_start``: the match screen takes over; the queue is behind us."""
        if self.matched is not None:
            self.played = self.matched.room
        self._idle()

    def finished_here(self) -> bool:
        """Seated in the room of a quick match that has ended: leaving it means ``leave`` (PROTOCOL.md
        §17: the room goes at once instead of counting 24 h against the address; nothing to return to)."""
        session, match = self.session, self.session.match
        return (self.played is not None and session.seated and session.room_code == self.played
                and match is not None and match.end is not None)

    def _idle(self) -> None:
        self.state = Quick.IDLE
        self.search_since = None
        self.matched = None
        self.confirm_until = None

    def welcomed(self) -> None:
        """A new connection: a search does not survive it (the server dropped it); a matched seat
        does (its token resumes it, and the waiting room shows it)."""
        if self.state in (Quick.JOINING, Quick.SEARCHING, Quick.LEAVING):
            self._idle()

    def lost(self) -> None:
        if self.state in (Quick.JOINING, Quick.SEARCHING, Quick.LEAVING):
            self._idle()

    def room_closed(self, room: str) -> bool:
        """``room_closed`` for the matched room: ``True`` when it was the quick match's (said here),
        whether it comes before or after the ``queue`` message that says why."""
        if room == self.dissolved:
            self.dissolved = None
            return True
        if self.state not in (Quick.MATCHED, Quick.CONFIRMED) or self.matched is None or room != self.matched.room:
            return False
        confirmed = self.state is Quick.CONFIRMED
        self.session.forget_seat()
        self.matched = None
        self.confirm_until = None
        if confirmed:  # the opponent did not confirm: the server puts us back in the queue
            self.state = Quick.SEARCHING
            if self.search_since is None:
                self.search_since = self.session.clock()
            self.notice = "quick.opponent_not_ready"
        else:
            self._idle()
            self.notice = "quick.you_not_ready"
        return True

    def on_queue(self, msg: QueueStatus) -> None:
        now = self.session.clock()
        if msg.status == "waiting":
            if self.state in (Quick.MATCHED, Quick.CONFIRMED):  # the opponent did not confirm
                self.dissolved = None if self.matched is None else self.matched.room
                if self.session.seated:
                    self.session.forget_seat()
                self.matched = None
                self.confirm_until = None
                self.notice = "quick.opponent_not_ready"
            elif self.state is Quick.IDLE and self.notice != "quick.opponent_not_ready":
                self.notice = None
            self.state = Quick.SEARCHING
            if msg.since is not None and msg.server_time is not None:
                self.search_since = now - min(max(0.0, msg.server_time - msg.since), 24 * 3600.0)
            elif self.search_since is None:
                self.search_since = now
            return
        if msg.reason == "not_ready":  # this seat did not confirm
            if self.matched is not None:
                self.dissolved = self.matched.room
                if self.session.seated and self.session.room_code == self.matched.room:
                    self.session.forget_seat()
            self._idle()
            self.notice = "quick.you_not_ready"
        elif self.state is not Quick.IDLE:
            self._idle()

    def on_matched(self, msg: Matched) -> None:
        if self.state not in (Quick.SEARCHING, Quick.JOINING, Quick.LEAVING) or self.session.seated:
            log.warning("online: a matched for room %s while not searching; ignored", msg.room)
            return
        self.session.take_seat(codec.room_code(msg.room), "", codec.token(msg.token))
        self.matched = msg
        self.state = Quick.MATCHED
        self.notice = None
        left = min(max(0.0, msg.confirm.left), CONFIRM_MAX)
        self.confirm_until = self.session.clock() + left

    # ----- the frame ------------------------------------------------------------------------------------
    def searching_for(self) -> float:
        return 0.0 if self.search_since is None else max(0.0, self.session.clock() - self.search_since)

    def confirm_left(self) -> float | None:
        return None if self.confirm_until is None else max(0.0, self.confirm_until - self.session.clock())

    def snapshot(self) -> QuickSnapshot:
        searching = self.searching_for()
        left = self.confirm_left()
        room = self.session.room
        opponent_ready = bool(room is not None and room.opponent is not None and room.opponent.ready and self.room_ready())
        return QuickSnapshot(self.state, int(searching), self.state is Quick.SEARCHING and searching >= CPU_OFFER_AFTER,
                             self.matched, None if left is None else math.ceil(left), self.room_ready(), opponent_ready,
                             self.notice)

    def next_wakeup(self) -> float | None:
        """The next whole second of the search or the confirm countdown (the screen ticks on time)."""
        now = self.session.clock()
        if self.state is Quick.SEARCHING and self.search_since is not None:
            elapsed = now - self.search_since
            return now + (1.0 - (elapsed - int(elapsed)))
        left = self.confirm_left()
        if left is not None and left > 0:
            frac = left - int(left)
            return now + (frac if frac > 1e-3 else 1.0)
        return None
