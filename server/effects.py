"""What a room operation wants done, as data: the shape of boardgame.io's master.

Room and lobby operations (``room.py``, ``lobby.py``) change only their own objects and
*return* an :class:`Effects`: the messages to send (in order, per connection), the rows to
stage for the group commit, which rooms' timers to re-arm and who sat where before the first
change (to undo a failed commit). They never touch the outbox, the storage or the clock; the
shell (``rooms.py``, :class:`~mineduel.server.rooms.Rooms`) performs the effects. So every rule
is a plain function of the room and an :class:`Env`, and one place decides when things hit the
disk and the wire.

An operation that refuses raises :class:`~mineduel.shared.wire.codec.ProtocolError` before it
changes anything, so a refusal has no effects.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mineduel.server.config import Config
from mineduel.server.storage import Blob, RatedResult
from mineduel.shared.wire.messages import ServerMessage

if TYPE_CHECKING:
    from mineduel.server.players import Player, Players
    from mineduel.server.room import Room

RandBytes = Callable[[int], bytes]


def log_always(owner: str) -> bool:
    """The default of :attr:`Env.may_log`: every line is logged."""
    return True


@dataclass(slots=True)
class Env:
    """The moment an operation runs in: the server clock, Unix time, entropy and the config.

    Read once by the shell, so an operation sees one time throughout (and tests pass any).
    Not frozen: a frozen dataclass's ``__init__`` costs a microsecond more, once per request.
    """

    now: float
    wall: float
    randbytes: RandBytes
    config: Config
    # Whether a log line about the address with this owner tag may be written now (the server's
    # log budget per address, server/limits.py); an operation logs only if it says yes.
    may_log: Callable[[str], bool] = log_always
    # Who each connection is and the ratings (issue 20, server/players.py); None: no players at all.
    players: Players | None = None


@dataclass(slots=True)
class StoreRoom:
    """Stage the room as it will be at the commit (``room`` ``None``: delete it)."""

    code: str
    room: Room | None


@dataclass(slots=True)
class StoreActions:
    """Stage new record rows of a match (``LiveMatch.stored_rows``) from ``first_seq`` on."""

    match_id: str
    first_seq: int
    rows: list[Blob]  # storage rows: record entries plus salts and clock state


@dataclass(slots=True)
class DropActions:
    """Forget a match's stored actions (a rematch replaced it, or its room went)."""

    match_id: str


@dataclass(slots=True)
class StorePlayers:
    """Stage players' rows and their rated results (a rated match's end: with its result, issue 20)."""

    players: tuple[Player, ...]
    results: tuple[RatedResult, ...]


@dataclass(slots=True)
class StoreResult:
    """Stage a finished match's record (kept ``result_ttl``, served by ``get_record``)."""

    match_id: str
    room: str
    ended: float
    record: str  # the record's JSON text


Write = StoreRoom | StoreActions | DropActions | StoreResult | StorePlayers


class Effects:
    """Everything one operation asks the shell to do, in the order it must happen.

    A plain class with slots (not a dataclass with factories): one is made for every request.
    """

    __slots__ = ("arm", "out", "touched", "writes")

    def __init__(self) -> None:
        self.out: list[tuple[int, ServerMessage | None]] = []  # None: close the connection
        self.writes: list[Write] = []
        self.arm: dict[int, tuple[Room, float | None]] = {}  # id(room) -> (room, not before)
        # Per room code, who sat where before the operation first changed the room (see
        # ``Persistence.reload_after_failure``): seat id -> connection.
        self.touched: dict[str, dict[int, int | None]] = {}

    def send(self, peer: int, message: ServerMessage) -> None:
        self.out.append((peer, message))

    def close(self, peer: int) -> None:
        self.out.append((peer, None))

    def touch(self, room: Room) -> None:
        """Note who sits in ``room`` before this operation changes it."""
        touched = self.touched
        if room.code not in touched:
            noted: dict[int, int | None] = {}
            for s in room.seats:  # a loop, not a dict comprehension (its own frame): once per request
                noted[s.sid] = s.peer
            touched[room.code] = noted

    def rearm(self, room: Room, not_before: float | None = None) -> None:
        """Keep ``room``'s timer at its next deadline once the effects are performed."""
        self.arm[id(room)] = (room, not_before)

    def extend(self, later: Effects) -> None:
        """Append a later operation's effects (performed as if one after the other)."""
        self.out += later.out
        self.writes += later.writes
        self.arm.update(later.arm)
        for code, noted in later.touched.items():
            self.touched.setdefault(code, noted)
