"""Every message of docs/PROTOCOL.md as a typed, frozen class: what each end builds and reads.

Server → client messages (:data:`ServerMessage`) are built by the server's presenter and read
by clients; client → server requests (:data:`ClientMessage`) the other way round. Each class
knows its wire form (``wire()``: the JSON object, keys in the documented order, optional keys
left out when unset) and how to be read back from a decoded JSON object (``parse``), checking
every field: a hostile peer's message is refused with :class:`~mineduel.shared.wire.codec.ProtocolError`
(client → server, the documented codes) or :class:`BadMessage` (server → client), never half-read.
:mod:`mineduel.shared.wire.codec` is the one place that turns them into lines and back.

Values are kept exactly as they travel (seat-relative words such as ``"me"``/``"opponent"``,
rounded times, board rows as strings), so that reading a message and writing it again gives the
same bytes; :mod:`mineduel.shared.wire.board` turns boards into masks and views.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, dataclass, fields
from typing import Any, ClassVar, Literal, TypeAlias, TypeVar

from mineduel.shared.rules.vocabulary import Phase, Reason
from mineduel.shared.wire.names import LIVE_ROOMS_MAX, ROOM_CODE_ALPHABET, ROOM_CODE_LENGTH, ClientType, ServerType

Json: TypeAlias = dict[str, Any]
"""A JSON object as the codec reads and writes it (only here and in the codec)."""

RecordJson: TypeAlias = dict[str, Any]
"""A match record (docs/RECORD.md): a document of its own, checked by ``fairness.record``."""

RequestId: TypeAlias = str | int
Relative: TypeAlias = Literal["me", "opponent"]


_T = TypeVar("_T")


def _fast_init(cls: type[_T]) -> type[_T]:
    """Give a frozen slots dataclass an ``__init__`` that fills its slots through their descriptors.

    The server builds two ``state`` messages (with a board, a deadline and events) per action;
    the frozen dataclass ``__init__`` goes through ``object.__setattr__`` per field and costs about
    1.6 times as much (measured with ``timeit`` on a 13-field class). Same signature, same
    defaults, still frozen afterwards.
    """
    params: list[str] = []
    keywords: list[str] = []
    body: list[str] = []
    namespace: dict[str, Any] = {}
    for f in fields(cls):  # type: ignore[arg-type]  # cls is a dataclass (applied after @dataclass)
        into = keywords if f.kw_only else params
        if f.default is not MISSING:
            namespace[f"_default_{f.name}"] = f.default
            into.append(f"{f.name}=_default_{f.name}")
        else:
            into.append(f.name)
        namespace[f"_set_{f.name}"] = getattr(cls, f.name).__set__
        body.append(f"    _set_{f.name}(self, {f.name})")
    signature = ", ".join(["self", *params, *(["*", *keywords] if keywords else [])])
    source = f"def __init__({signature}):\n" + "\n".join(body or ["    pass"])  # field names only
    exec(source, namespace)
    init: Callable[..., None] = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = init  # type: ignore[method-assign]  # same signature as the dataclass's own
    return cls


class BadMessage(ValueError):
    """A server message that breaks docs/PROTOCOL.md (a hostile or broken server)."""


# ----- reading helpers (server → client) -------------------------------------------------------


def _need(obj: Mapping[str, Any], key: str) -> Any:
    if key not in obj:
        raise BadMessage(f"{obj.get('type')!r} without {key!r}")
    return obj[key]


# Bounds of what a client accepts (issue 15: a field the screens draw must never overflow or crash
# them later). PROTOCOL.md §2 and §5 fix the shapes (codes, hex digits, layers, cells, 0/1); where
# it is silent, these (docs/RELIABILITY.md, "Hostile servers and corrupt files"):
TIME_MAX = 1e12
"""|server-clock time| in seconds (``server_time``, deadlines' ``at``, ``started``, ``expires``,
an event's ``at``): Unix time is 1.7e9 today, so this is tens of thousands of years either way."""
DURATION_MAX = 1e9
"""Seconds: a deadline's ``left``, ``at - server_time``, ``elapsed``, the welcome's intervals and
rule lengths (a server run with ``--turn-seconds 1e9`` still speaks to the client: 31.7 years)."""
RATE_MAX = 1e9
"""The welcome's ``messages_per_second`` and ``burst`` (scripted servers switch limits off with 1e6)."""
COUNT_MAX = 10**9
"""``seq``, ``turn``, ``turns``, ``nonce``, ``protocol``, ``max_line``, an event's ``seq``."""
SCORE_MAX = 64
"""|O10 score|: right minus wrong markers, at most one marker per cell of the 8×8 board."""
EVENTS_MAX = 100_000
"""Events in one ``state`` (on ``resume``, the whole history; a 1 MiB line holds about 12,000)."""
RECORD_DEPTH = 32
"""Nesting of a ``match_end``/``record`` record object (RECORD.md's deepest is 4 levels)."""
# Character sets as bytes: ``text.encode().translate(None, chars)`` deletes them in C, so a string made
# of them only leaves ``b""`` (measured: 0.18 µs for 64 hex digits, a frozenset test 0.53, a regex 0.37).
_HEX = b"0123456789abcdef"
_ROOM_CODE_CHARS = ROOM_CODE_ALPHABET.encode()
_SEED_CHARS = frozenset(chr(c) for c in range(0x20, 0x7F)) - {":"}  # §4: printable ASCII except ':'
_STATUSES = frozenset({"waiting", "playing", "finished"})  # §5 room / room_info
_PHASES = frozenset(p.value for p in Phase)  # §5 state.phase (F1, F2)
_REASONS = frozenset(r.value for r in Reason)  # RECORD.md's result reasons
_FIRST_RULES = frozenset({"draw", "swap"})  # §5 match_start (O3, O14)
_WINNERS = {"win": "me", "loss": "opponent", "draw": None, "void": None}  # C4: outcome → winner
_WORD_CHARS = b"abcdefghijklmnopqrstuvwxyz_0123456789"  # codes, request and action names


def _only(text: str, chars: bytes) -> bool:
    """Whether ``text`` is made of ``chars`` (ASCII) only."""
    return text.isascii() and not text.encode().translate(None, chars)


def _str(obj: Mapping[str, Any], key: str, *, limit: int = 4096) -> str:
    value = _need(obj, key)
    if not isinstance(value, str) or len(value) > limit:
        raise BadMessage(f"{key!r} must be a string of at most {limit} characters")
    if "\x00" in value:  # pygame cannot draw it (a ValueError while drawing, frames later)
        raise BadMessage(f"{key!r} holds a NUL character")
    return value


def _opt_str(obj: Mapping[str, Any], key: str, *, limit: int = 4096) -> str | None:
    return None if obj.get(key) is None else _str(obj, key, limit=limit)


def _word(obj: Mapping[str, Any], key: str, *, limit: int = 32) -> str:
    """A protocol word (an error code, a request or action name): lower-case letters, digits, ``_``."""
    value = _str(obj, key, limit=limit)
    if not value or not _only(value, _WORD_CHARS):
        raise BadMessage(f"{key!r} must be a protocol word")
    return value


def _choice(obj: Mapping[str, Any], key: str, allowed: frozenset[str]) -> str:
    value = _need(obj, key)
    if not isinstance(value, str) or value not in allowed:
        raise BadMessage(f"{key!r} must be one of {sorted(allowed)}")
    return value


def _hex(obj: Mapping[str, Any], key: str, digits: int) -> str:
    """Exactly ``digits`` lower-case hex digits (tokens, match ids, commitments, transcripts: §2, §10)."""
    value = _need(obj, key)
    if not (isinstance(value, str) and len(value) == digits and _only(value, _HEX)):
        raise BadMessage(f"{key!r} must be {digits} lowercase hex digits")
    return value


def _opt_hex(obj: Mapping[str, Any], key: str, digits: int) -> str | None:
    return None if obj.get(key) is None else _hex(obj, key, digits)


def _room_code(obj: Mapping[str, Any], key: str = "room") -> str:
    """A room code as the server writes it: 6 characters of the alphabet (§2)."""
    value = _need(obj, key)
    if not (isinstance(value, str) and len(value) == ROOM_CODE_LENGTH and _only(value, _ROOM_CODE_CHARS)):
        raise BadMessage(f"{key!r} must be a room code")
    return value


def _int(obj: Mapping[str, Any], key: str, low: int = 0, high: int = COUNT_MAX) -> int:
    value = _need(obj, key)
    if type(value) is not int:
        raise BadMessage(f"{key!r} must be an integer")
    if not low <= value <= high:
        raise BadMessage(f"{key!r} must be from {low} to {high}")
    return value


def _bool(obj: Mapping[str, Any], key: str) -> bool:
    value = _need(obj, key)
    if type(value) is not bool:
        raise BadMessage(f"{key!r} must be true or false")
    return value


def _number(obj: Mapping[str, Any], key: str, low: float = -TIME_MAX, high: float = TIME_MAX) -> float:
    """A finite JSON number from ``low`` to ``high``; by default a server-clock time."""
    value = _need(obj, key)
    if type(value) not in (int, float) or not low <= value <= high:  # NaN compares false: refused too
        raise BadMessage(f"{key!r} must be a number from {low:g} to {high:g}")
    return value  # type: ignore[no-any-return]  # int or float, kept as sent


def _opt_number(obj: Mapping[str, Any], key: str) -> float | None:
    return None if obj.get(key) is None else _number(obj, key)


def _positive(obj: Mapping[str, Any], key: str, high: float = DURATION_MAX) -> float:
    """A length of time or a rate the welcome announces: above 0, at most ``high``."""
    value = _number(obj, key, 0.0, high)
    if value <= 0:
        raise BadMessage(f"{key!r} must be above 0")
    return value


def _within(at: float, server_time: float, key: str) -> None:
    """A deadline no further from the message's ``server_time`` than :data:`DURATION_MAX` (§2: the
    client counts ``at - server_time`` on its own clock)."""
    if at - server_time > DURATION_MAX:
        raise BadMessage(f"{key!r} is more than {DURATION_MAX:g} s after server_time")


def _record(obj: Mapping[str, Any], key: str) -> RecordJson:
    """A record object (RECORD.md; read strictly by ``fairness.record``), no deeper than :data:`RECORD_DEPTH`."""
    value = _object(obj, key)
    level: list[Any] = [value]
    for _ in range(RECORD_DEPTH):
        inner = [v for item in level for v in (item.values() if isinstance(item, dict) else item)
                 if isinstance(v, (dict, list))]
        if not inner:
            return dict(value)
        level = inner
    raise BadMessage(f"{key!r} is nested more than {RECORD_DEPTH} levels deep")


def _object(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = _need(obj, key)
    if not isinstance(value, dict):
        raise BadMessage(f"{key!r} must be an object")
    return value


def _opt_object(obj: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    return None if obj.get(key) is None else _object(obj, key)


def _relative(obj: Mapping[str, Any], key: str) -> Relative:
    value = _need(obj, key)
    if value == "me" or value == "opponent":
        return value  # type: ignore[no-any-return]  # narrowed to the literal
    raise BadMessage(f"{key!r} must be 'me' or 'opponent'")


def _opt_relative(obj: Mapping[str, Any], key: str) -> Relative | None:
    return None if obj.get(key) is None else _relative(obj, key)


def _seat(obj: Mapping[str, Any], key: str = "seat") -> int:
    value = _int(obj, key)
    if value not in (0, 1):
        raise BadMessage(f"{key!r} must be 0 or 1")
    return value


def _rid(obj: Mapping[str, Any]) -> RequestId | None:
    value = obj.get("id")
    # An echo of the request's id: any integer the server can write (orjson: -2**63 to 2**64 - 1).
    if value is None or (isinstance(value, str) and len(value) <= 64) or (type(value) is int and -(2**63) <= value < 2**64):
        return value
    raise BadMessage("'id' must be a string of at most 64 characters or a 64-bit integer")


def _rows(obj: Mapping[str, Any], key: str, alphabet: str) -> tuple[str, ...]:
    """A board layer: 8 strings of 8 characters from ``alphabet`` (docs/PROTOCOL.md §5)."""
    value = _need(obj, key)
    if not (isinstance(value, list) and len(value) == 8):
        raise BadMessage(f"{key!r} must be 8 rows")
    for row in value:
        # ``strip`` removes every character of the alphabet from both ends: a row made of them
        # only leaves nothing (in C: a bot reads two boards per action, measured 10x faster).
        if not (isinstance(row, str) and len(row) == 8 and not row.strip(alphabet)):
            raise BadMessage(f"{key!r} rows must be 8 characters of {alphabet!r}")
    return tuple(value)


def _cell(value: Any, key: str = "cell") -> tuple[int, int]:
    if not (isinstance(value, list) and len(value) == 2 and all(type(v) is int and 0 <= v < 8 for v in value)):
        raise BadMessage(f"{key!r} must be [row, col] with integers 0-7")
    return value[0], value[1]


def _with_id(out: Json, rid: RequestId | None) -> Json:
    if rid is not None:
        out["id"] = rid
    return out


RATING_MAX = 10_000.0
"""A Glicko-2 rating or deviation a client accepts (§17: ratings start at 1500, deviations at 500)."""
DISPLAY_MAX = 64
"""A player's ``display`` (``Name#3f9c``, §17) is at most this long."""
RECENT_MAX = 20
"""At most this many ``recent`` results in a ``profile`` (§17)."""
LEADERBOARD_MAX = 100
"""At most this many players in a ``leaderboard``'s ``top`` (§17)."""


def _display(obj: Mapping[str, Any], key: str = "display") -> str:
    """A player's public name with its tag (§17), printable, at most :data:`DISPLAY_MAX` characters."""
    value = _str(obj, key, limit=DISPLAY_MAX)
    if not value or not value.isprintable():
        raise BadMessage(f"{key!r} must be a printable player name")
    return value


def _list_of(obj: Mapping[str, Any], key: str, most: int) -> list[Mapping[str, Any]]:
    value = _need(obj, key)
    if not (isinstance(value, list) and len(value) <= most and all(isinstance(v, dict) for v in value)):
        raise BadMessage(f"{key!r} must be a list of at most {most} objects")
    return value


# ----- parts of messages ---------------------------------------------------------------------------


@_fast_init
@dataclass(frozen=True, slots=True)
class Deadline:
    """``{at, left}``: a server-clock time and the seconds left when the message was built."""

    at: float
    left: float

    @staticmethod
    def of(deadline: float | None, now: float) -> Deadline | None:
        if deadline is None:
            return None
        left = deadline - now
        return Deadline(round(deadline, 3), round(left, 3) if left > 0.0 else 0.0)

    def wire(self) -> Json:
        return {"at": self.at, "left": self.left}

    @classmethod
    def parse(cls, obj: Mapping[str, Any] | None) -> Deadline | None:
        if obj is None:
            return None
        return cls(_number(obj, "at"), _number(obj, "left", 0.0, DURATION_MAX))

    @classmethod
    def parse_near(cls, obj: Mapping[str, Any] | None, server_time: float | None, key: str) -> Deadline | None:
        """:meth:`parse`, the deadline also no further than :data:`DURATION_MAX` after ``server_time``."""
        deadline = cls.parse(obj)
        if deadline is not None and server_time is not None:
            _within(deadline.at, server_time, key)
        return deadline


@_fast_init
@dataclass(frozen=True, slots=True)
class Scores:
    """O10 scores, seat-relative: right minus wrong markers."""

    me: int
    opponent: int

    def wire(self) -> Json:
        return {"me": self.me, "opponent": self.opponent}


@_fast_init
@dataclass(frozen=True, slots=True)
class Result:
    """A seat-relative result (``state.result``, ``match_end.result``)."""

    outcome: Literal["win", "loss", "draw", "void"]
    winner: Relative | None
    reason: str
    scores: Scores | None

    def wire(self) -> Json:
        scores = self.scores
        return {
            "outcome": self.outcome,
            "winner": self.winner,
            "reason": self.reason,
            "scores": None if scores is None else {"me": scores.me, "opponent": scores.opponent},
        }

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> Result:
        outcome = _str(obj, "outcome", limit=8)
        if outcome not in _WINNERS:
            raise BadMessage(f"unknown outcome {outcome!r}")
        winner = _opt_relative(obj, "winner")
        if winner != _WINNERS[outcome]:  # C4: a win is mine, a loss the opponent's, draws and voids nobody's
            raise BadMessage(f"outcome {outcome!r} with winner {winner!r}")
        scores = _opt_object(obj, "scores")
        return cls(
            outcome,  # type: ignore[arg-type]  # checked just above
            winner,
            _choice(obj, "reason", _REASONS),
            None if scores is None else Scores(
                _int(scores, "me", -SCORE_MAX, SCORE_MAX), _int(scores, "opponent", -SCORE_MAX, SCORE_MAX),
            ),
        )


@_fast_init
@dataclass(frozen=True, slots=True)
class Board:
    """A seat's board: four layers of 8 rows of 8 characters (docs/PROTOCOL.md §5)."""

    numbers: Sequence[str]  # "." closed, "0"-"8" open (B4)
    opened_by: Sequence[str]  # "m" me, "o" the opponent (B3), "." closed
    markers: Sequence[str]  # "m" mine, "o" the opponent's
    my_mines: Sequence[str]  # "x" my own mines

    def wire(self) -> Json:
        return {"numbers": self.numbers, "opened_by": self.opened_by, "markers": self.markers, "my_mines": self.my_mines}

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> Board:
        return cls(
            _rows(obj, "numbers", ".012345678"),
            _rows(obj, "opened_by", ".mo"),
            _rows(obj, "markers", ".mo"),
            _rows(obj, "my_mines", ".x"),
        )


@_fast_init
@dataclass(frozen=True, slots=True)
class SeenAction:
    """One record action as a seat may see it (``state.events``): the opponent's plant has no cell."""

    seq: int
    by: Relative
    action: str
    cell: Sequence[int] | None  # [row, col]
    at: float
    auto: bool = False
    commitment: str | None = None  # plants only (R3b)
    transcript: str | None = None  # plants only

    def wire(self) -> Json:
        out: Json = {"seq": self.seq, "by": self.by, "action": self.action}
        if self.cell is not None:
            out["cell"] = self.cell
        out["at"] = self.at
        if self.auto:
            out["auto"] = True
        if self.commitment is not None:
            out["commitment"] = self.commitment
            out["transcript"] = self.transcript
        return out

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> SeenAction:
        cell = obj.get("cell")
        auto = obj.get("auto", False)
        if type(auto) is not bool:
            raise BadMessage("'auto' must be true or false")
        return cls(
            _int(obj, "seq"),
            _relative(obj, "by"),
            _word(obj, "action"),  # RECORD.md's types; one this client does not know is skipped (online_match)
            None if cell is None else list(_cell(cell)),
            _number(obj, "at"),
            auto,
            _opt_hex(obj, "commitment", 64),  # SHA3-256 (§10, R3b)
            _opt_hex(obj, "transcript", 64),
        )


@_fast_init
@dataclass(frozen=True, slots=True)
class SeatInfo:
    """A seat as ``room`` shows it: who, whether connected, ready, asking for a rematch, its grace."""

    name: str
    connected: bool
    ready: bool
    rematch: bool
    grace: Deadline | None
    grace_expired: bool
    # §17: once the seat's player identified, its public name with tag and its rating (additive).
    display: str | None = None
    rating: float | None = None
    provisional: bool | None = None

    def wire(self) -> Json:
        out: Json = {
            "name": self.name,
            "connected": self.connected,
            "ready": self.ready,
            "rematch": self.rematch,
            "grace": None if self.grace is None else self.grace.wire(),
            "grace_expired": self.grace_expired,
        }
        if self.display is not None:
            out["display"] = self.display
            out["rating"] = self.rating
            out["provisional"] = self.provisional
        return out

    @classmethod
    def parse(cls, obj: Mapping[str, Any] | None, server_time: float | None = None) -> SeatInfo | None:
        if obj is None:
            return None
        identified = obj.get("display") is not None
        return cls(
            _str(obj, "name", limit=64), _bool(obj, "connected"), _bool(obj, "ready"), _bool(obj, "rematch"),
            Deadline.parse_near(_opt_object(obj, "grace"), server_time, "grace"), _bool(obj, "grace_expired"),
            _display(obj) if identified else None,
            _number(obj, "rating", 0.0, RATING_MAX) if identified else None,
            _bool(obj, "provisional") if identified else None,
        )


@_fast_init
@dataclass(frozen=True, slots=True)
class Reveal:
    """O13 seat-relative: mines ``m``/``o``/``x`` (mine, theirs, both), markers, ``y``/``n`` right or wrong."""

    mines: Sequence[str]
    markers: Sequence[str]
    marker_correct: Sequence[str]
    ko_cell: Sequence[int] | None

    def wire(self) -> Json:
        return {"mines": self.mines, "markers": self.markers, "marker_correct": self.marker_correct, "ko_cell": self.ko_cell}

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> Reveal:
        ko = obj.get("ko_cell")
        return cls(
            _rows(obj, "mines", ".mox"), _rows(obj, "markers", ".mo"), _rows(obj, "marker_correct", ".ny"),
            None if ko is None else list(_cell(ko, "ko_cell")),
        )


# ----- server → client ------------------------------------------------------------------------------


@_fast_init
@dataclass(frozen=True, slots=True)
class Welcome:
    TYPE: ClassVar[ServerType] = ServerType.WELCOME
    protocol: int
    server_name: str
    server_version: str
    server_time: float
    max_line: int
    messages_per_second: float
    burst: float
    ping_interval: float
    idle_timeout: float
    turn_seconds: float
    grace_seconds: float
    id: RequestId | None = None
    # Who referees: "player" for a server started by a game client's "Host on this computer" (the
    # host's computer keeps both players' mines); absent (None) for a dedicated server.
    referee: str | None = None

    def wire(self) -> Json:
        server: Json = {"name": self.server_name, "version": self.server_version}
        if self.referee is not None:
            server["referee"] = self.referee
        return _with_id({
            "type": "welcome",
            "protocol": self.protocol,
            "server": server,
            "server_time": self.server_time,
            "limits": {
                "max_line": self.max_line,
                "messages_per_second": self.messages_per_second,
                "burst": self.burst,
                "ping_interval": self.ping_interval,
                "idle_timeout": self.idle_timeout,
            },
            "rules": {"turn_seconds": self.turn_seconds, "grace_seconds": self.grace_seconds},
        }, self.id)

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> Welcome:
        server, limits, rules = _object(obj, "server"), _object(obj, "limits"), _object(obj, "rules")
        return cls(
            _int(obj, "protocol"), _str(server, "name", limit=256), _str(server, "version", limit=64),
            _number(obj, "server_time"), _int(limits, "max_line", 1), _positive(limits, "messages_per_second", RATE_MAX),
            _positive(limits, "burst", RATE_MAX), _positive(limits, "ping_interval"), _positive(limits, "idle_timeout"),
            _positive(rules, "turn_seconds"), _positive(rules, "grace_seconds"), _rid(obj),
            _referee(server),
        )


def _referee(server: Mapping[str, Any]) -> str | None:
    """``welcome.server.referee``, optional and read leniently: anything but a short string is no referee."""
    value = server.get("referee")
    return value if isinstance(value, str) and 0 < len(value) <= 32 else None


@_fast_init
@dataclass(frozen=True, slots=True)
class Error:
    TYPE: ClassVar[ServerType] = ServerType.ERROR
    code: str
    message: str
    request: str | None = None
    id: RequestId | None = None

    def wire(self) -> Json:
        out: Json = {"type": "error", "code": str(self.code), "message": self.message}
        if self.request is not None:
            out["request"] = self.request
        return _with_id(out, self.id)

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> Error:
        # ``request`` echoes the refused line's ``type`` (even an unknown one) and ``message`` may quote it:
        # both as long as a request line can be (PROTOCOL.md §1: 8192 bytes), with room to spare.
        return cls(_word(obj, "code", limit=64), _str(obj, "message", limit=16384),
                   _opt_str(obj, "request", limit=8192), _rid(obj))


@_fast_init
@dataclass(frozen=True, slots=True)
class Ok:
    TYPE: ClassVar[ServerType] = ServerType.OK
    request: str
    id: RequestId | None = None
    seq: int | None = None  # match actions: the new sequence number

    def wire(self) -> Json:
        out: Json = {"type": "ok", "request": self.request}
        if self.id is not None:  # _with_id written out: one per action
            out["id"] = self.id
        if self.seq is not None:
            out["seq"] = self.seq
        return out

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> Ok:
        return cls(_word(obj, "request"), _rid(obj), None if obj.get("seq") is None else _int(obj, "seq"))


@_fast_init
@dataclass(frozen=True, slots=True)
class Ping:
    TYPE: ClassVar[ServerType] = ServerType.PING
    server_time: float

    def wire(self) -> Json:
        return {"type": "ping", "server_time": self.server_time}

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> Ping:
        return cls(_number(obj, "server_time"))


@_fast_init
@dataclass(frozen=True, slots=True)
class Pong:
    TYPE: ClassVar[ServerType] = ServerType.PONG
    server_time: float
    id: RequestId | None = None

    def wire(self) -> Json:
        return _with_id({"type": "pong", "server_time": self.server_time}, self.id)

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> Pong:
        return cls(_number(obj, "server_time"), _rid(obj))


@_fast_init
@dataclass(frozen=True, slots=True)
class RoomCreated:
    TYPE: ClassVar[ServerType] = ServerType.ROOM_CREATED
    room: str
    invite: str
    token: str
    id: RequestId | None = None

    def wire(self) -> Json:
        return _with_id({"type": "room_created", "room": self.room, "invite": self.invite, "token": self.token}, self.id)

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> RoomCreated:
        return cls(_room_code(obj), _str(obj, "invite", limit=512), _hex(obj, "token", 64), _rid(obj))


@_fast_init
@dataclass(frozen=True, slots=True)
class RoomInfo:
    TYPE: ClassVar[ServerType] = ServerType.ROOM_INFO
    room: str
    status: str
    seats: int
    open: bool
    commitment: str
    id: RequestId | None = None
    watchable: bool = True  # §16: false when the room refuses spectators; on the wire only then (additive)

    def wire(self) -> Json:
        out: Json = {
            "type": "room_info", "room": self.room, "status": self.status, "seats": self.seats,
            "open": self.open, "commitment": self.commitment,
        }
        if not self.watchable:
            out["watchable"] = False
        return _with_id(out, self.id)

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> RoomInfo:
        return cls(
            _room_code(obj), _choice(obj, "status", _STATUSES), _int(obj, "seats", 0, 2), _bool(obj, "open"),
            _hex(obj, "commitment", 64), _rid(obj), _bool(obj, "watchable") if "watchable" in obj else True,
        )


@_fast_init
@dataclass(frozen=True, slots=True)
class Joined:
    """``joined``: a new seat (with its ``token``) or a resumed one (``resumed``, no token)."""

    TYPE: ClassVar[ServerType] = ServerType.JOINED
    room: str
    invite: str
    token: str | None
    resumed: bool
    id: RequestId | None = None

    def wire(self) -> Json:
        if self.resumed:
            out: Json = {"type": "joined", "room": self.room, "resumed": True, "invite": self.invite}
        else:
            out = {"type": "joined", "room": self.room, "token": self.token, "resumed": False, "invite": self.invite}
        return _with_id(out, self.id)

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> Joined:
        resumed = _bool(obj, "resumed")
        token = None if resumed else _hex(obj, "token", 64)
        return cls(_room_code(obj), _str(obj, "invite", limit=512), token, resumed, _rid(obj))


@_fast_init
@dataclass(frozen=True, slots=True)
class Room:
    TYPE: ClassVar[ServerType] = ServerType.ROOM
    room: str
    status: str  # waiting / playing / finished
    me: SeatInfo
    opponent: SeatInfo | None
    match_id: str | None
    next_commitment: str
    expires: float | None
    server_time: float
    spectators: int = 0  # §16: connections watching the room; on the wire only when > 0 (additive)
    rated: bool = False  # §17: a rated room; on the wire only when true (additive)
    watchable: bool = True  # §16: false when its host created it with spectators:false; on the wire only then

    def wire(self) -> Json:
        out: Json = {
            "type": "room",
            "room": self.room,
            "status": self.status,
            "me": self.me.wire(),
            "opponent": None if self.opponent is None else self.opponent.wire(),
            "match_id": self.match_id,
            "next_commitment": self.next_commitment,
            "expires": self.expires,
            "server_time": self.server_time,
        }
        if self.spectators:
            out["spectators"] = self.spectators
        if self.rated:
            out["rated"] = True
        if not self.watchable:
            out["watchable"] = False
        return out

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> Room:
        server_time = _number(obj, "server_time")
        me = SeatInfo.parse(_object(obj, "me"), server_time)
        assert me is not None
        return cls(
            _room_code(obj), _choice(obj, "status", _STATUSES), me, SeatInfo.parse(_opt_object(obj, "opponent"), server_time),
            _opt_hex(obj, "match_id", 16), _hex(obj, "next_commitment", 64), _opt_number(obj, "expires"), server_time,
            _int(obj, "spectators") if "spectators" in obj else 0,
            _bool(obj, "rated") if "rated" in obj else False,
            _bool(obj, "watchable") if "watchable" in obj else True,
        )


@_fast_init
@dataclass(frozen=True, slots=True)
class MatchStart:
    TYPE: ClassVar[ServerType] = ServerType.MATCH_START
    room: str
    match_id: str
    seat: int
    first: Relative
    first_player_rule: str  # "draw" (O3) or "swap" (O14)
    commitment: str
    client_seeds: Sequence[str]  # in join order
    my_seed_index: int
    nonce: int
    turn_seconds: float
    opponent_name: str
    started: float

    def wire(self) -> Json:
        return {
            "type": "match_start",
            "room": self.room,
            "match_id": self.match_id,
            "seat": self.seat,
            "first": self.first,
            "first_player_rule": self.first_player_rule,
            "commitment": self.commitment,
            "client_seeds": self.client_seeds,
            "my_seed_index": self.my_seed_index,
            "nonce": self.nonce,
            "turn_seconds": self.turn_seconds,
            "opponent": {"name": self.opponent_name},
            "started": self.started,
        }

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> MatchStart:
        seeds = _need(obj, "client_seeds")
        # §4: a seed is 0-64 printable ASCII characters other than ':'.
        if not (isinstance(seeds, list) and len(seeds) == 2
                and all(isinstance(s, str) and len(s) <= 64 and _SEED_CHARS.issuperset(s) for s in seeds)):
            raise BadMessage("'client_seeds' must be two seeds (printable ASCII without ':')")
        index = _int(obj, "my_seed_index", 0, 1)
        return cls(
            _room_code(obj), _hex(obj, "match_id", 16), _seat(obj), _relative(obj, "first"),
            _choice(obj, "first_player_rule", _FIRST_RULES), _hex(obj, "commitment", 64), list(seeds), index,
            _int(obj, "nonce"), _positive(obj, "turn_seconds"), _str(_object(obj, "opponent"), "name", limit=64),
            _number(obj, "started"),
        )


@_fast_init
@dataclass(frozen=True, slots=True)
class State:
    """One seat's whole view after a change (V2): built from that seat's ``SeatView`` only."""

    TYPE: ClassVar[ServerType] = ServerType.STATE
    match_id: str
    seq: int
    seat: int
    phase: str
    to_move: Relative | None
    turn: int
    quota_left: int
    deadline: Deadline | None
    server_time: float
    board: Board
    transcript: str
    events: Sequence[SeenAction]
    result: Result | None

    def wire(self) -> Json:
        deadline, result, board = self.deadline, self.result, self.board
        return {
            "type": "state",
            "match_id": self.match_id,
            "seq": self.seq,
            "seat": self.seat,
            "phase": self.phase,
            "to_move": self.to_move,
            "turn": self.turn,
            "quota_left": self.quota_left,
            "deadline": None if deadline is None else {"at": deadline.at, "left": deadline.left},
            "server_time": self.server_time,
            "board": {  # Board.wire() written out: two per action
                "numbers": board.numbers, "opened_by": board.opened_by, "markers": board.markers, "my_mines": board.my_mines,
            },
            "transcript": self.transcript,
            "events": list(map(SeenAction.wire, self.events)),  # no comprehension frame: two per action
            "result": None if result is None else result.wire(),
        }

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> State:
        events = _need(obj, "events")
        if not isinstance(events, list) or len(events) > EVENTS_MAX or not all(isinstance(e, dict) for e in events):
            raise BadMessage(f"'events' must be a list of at most {EVENTS_MAX} objects")
        result = _opt_object(obj, "result")
        server_time = _number(obj, "server_time")
        return cls(
            match_id=_hex(obj, "match_id", 16), seq=_int(obj, "seq"), seat=_seat(obj),
            phase=_choice(obj, "phase", _PHASES), to_move=_opt_relative(obj, "to_move"), turn=_int(obj, "turn"),
            quota_left=_int(obj, "quota_left", 0, 1),  # A3: one new marker per turn
            deadline=Deadline.parse_near(_opt_object(obj, "deadline"), server_time, "deadline"),
            server_time=server_time, board=Board.parse(_object(obj, "board")),
            transcript=_hex(obj, "transcript", 64), events=tuple(SeenAction.parse(e) for e in events),
            result=None if result is None else Result.parse(result),
        )


@_fast_init
@dataclass(frozen=True, slots=True)
class Presence:
    """The opponent's connection (O12): ``deadline`` is its grace while it is away."""

    TYPE: ClassVar[ServerType] = ServerType.PRESENCE
    connected: bool
    deadline: Deadline | None
    grace_expired: bool
    server_time: float

    def wire(self) -> Json:
        return {
            "type": "presence",
            "who": "opponent",
            "connected": self.connected,
            "deadline": None if self.deadline is None else self.deadline.wire(),
            "grace_expired": self.grace_expired,
            "server_time": self.server_time,
        }

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> Presence:
        if obj.get("who") != "opponent":  # §5: presence is always about the opponent
            raise BadMessage("'who' must be 'opponent'")
        server_time = _number(obj, "server_time")
        return cls(
            _bool(obj, "connected"), Deadline.parse_near(_opt_object(obj, "deadline"), server_time, "deadline"),
            _bool(obj, "grace_expired"), server_time,
        )


@_fast_init
@dataclass(frozen=True, slots=True)
class MatchEnd:
    """O13: the result, the full reveal and the record with its fairness proof (R3)."""

    TYPE: ClassVar[ServerType] = ServerType.MATCH_END
    match_id: str
    seat: int
    result: Result
    reveal: Reveal
    turns: int
    elapsed: float
    record: RecordJson
    next_commitment: str
    rating: RatingChange | None = None  # §17: a rated match's change for this seat (absent otherwise)

    def wire(self) -> Json:
        out: Json = {
            "type": "match_end",
            "match_id": self.match_id,
            "seat": self.seat,
            "result": self.result.wire(),
            "reveal": self.reveal.wire(),
            "turns": self.turns,
            "elapsed": self.elapsed,
            "record": self.record,
            "next_commitment": self.next_commitment,
        }
        if self.rating is not None:
            out["rating"] = self.rating.wire()
        return out

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> MatchEnd:
        rating = _opt_object(obj, "rating")
        return cls(
            _hex(obj, "match_id", 16), _seat(obj), Result.parse(_object(obj, "result")),
            Reveal.parse(_object(obj, "reveal")), _int(obj, "turns"), _number(obj, "elapsed", 0.0, DURATION_MAX),
            _record(obj, "record"), _hex(obj, "next_commitment", 64),
            None if rating is None else RatingChange.parse(rating),
        )


@_fast_init
@dataclass(frozen=True, slots=True)
class RematchStatus:
    TYPE: ClassVar[ServerType] = ServerType.REMATCH
    me: bool
    opponent: bool

    def wire(self) -> Json:
        return {"type": "rematch", "me": self.me, "opponent": self.opponent}

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> RematchStatus:
        return cls(_bool(obj, "me"), _bool(obj, "opponent"))


@_fast_init
@dataclass(frozen=True, slots=True)
class RecordReply:
    TYPE: ClassVar[ServerType] = ServerType.RECORD
    match_id: str
    record: RecordJson
    id: RequestId | None = None

    def wire(self) -> Json:
        return _with_id({"type": "record", "match_id": self.match_id, "record": self.record}, self.id)

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> RecordReply:
        return cls(_hex(obj, "match_id", 16), _record(obj, "record"), _rid(obj))


@_fast_init
@dataclass(frozen=True, slots=True)
class RoomClosed:
    TYPE: ClassVar[ServerType] = ServerType.ROOM_CLOSED
    room: str
    reason: str

    def wire(self) -> Json:
        return {"type": "room_closed", "room": self.room, "reason": self.reason}

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> RoomClosed:
        return cls(_room_code(obj), _word(obj, "reason", limit=64))


@_fast_init
@dataclass(frozen=True, slots=True)
class ServerClosing:
    TYPE: ClassVar[ServerType] = ServerType.SERVER_CLOSING
    reason: str

    def wire(self) -> Json:
        return {"type": "server_closing", "reason": self.reason}

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> ServerClosing:
        return cls(_word(obj, "reason", limit=64))


MOVED_REQUESTS = frozenset({"peek", "join", "resume", "spectate"})
"""The requests a ``moved`` may answer (§18): the ones that name a room another node may own."""
HOST_MAX = 253
"""A ``moved`` host is a DNS name or an IP literal (IPv6 without brackets) of at most this many characters."""
_HOST = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-_:"


@_fast_init
@dataclass(frozen=True, slots=True)
class Moved:
    """``moved`` (§18): the room is served by another node of the cluster — reconnect there
    (``host``/``port``, TLS with ``pin`` when ``tls``) and repeat ``request``; nothing changed here.
    Unsolicited (``request`` and ``id`` unset): this node stopped serving the room, resume there."""

    TYPE: ClassVar[ServerType] = ServerType.MOVED
    room: str
    host: str
    port: int
    tls: bool = False
    pin: str | None = None  # SHA-256 of the node's certificate, 64 lowercase hex (TLS only)
    request: str | None = None  # the request answered (one of MOVED_REQUESTS); None: unsolicited
    id: RequestId | None = None

    def wire(self) -> Json:
        out: Json = {"type": "moved", "room": self.room, "host": self.host, "port": self.port, "tls": self.tls,
                     "pin": self.pin}
        if self.request is not None:
            out["request"] = self.request
        return _with_id(out, self.id)

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> Moved:
        host = _str(obj, "host", limit=HOST_MAX)
        if not host or not _only(host, _HOST):
            raise BadMessage("'host' must be a host name or an IP address")
        tls = _bool(obj, "tls")
        pin = _opt_hex(obj, "pin", 64)
        if pin is not None and not tls:
            raise BadMessage("a 'pin' needs 'tls': true")
        request = None if obj.get("request") is None else _choice(obj, "request", MOVED_REQUESTS)
        rid = _rid(obj)
        if rid is not None and request is None:
            raise BadMessage("an unsolicited 'moved' carries no 'id'")
        return cls(_room_code(obj), host, _int(obj, "port", 1, 65535), tls, pin, request, rid)


# ----- players, quick match and ratings (PROTOCOL.md §17) -------------------------------------------


@_fast_init
@dataclass(frozen=True, slots=True)
class RatingInfo:
    """A Glicko-2 rating as §17 shows it: value, deviation and whether it is still provisional."""

    value: float
    deviation: float
    provisional: bool

    def wire(self) -> Json:
        return {"value": self.value, "deviation": self.deviation, "provisional": self.provisional}

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> RatingInfo:
        return cls(_number(obj, "value", 0.0, RATING_MAX), _number(obj, "deviation", 0.0, RATING_MAX),
                   _bool(obj, "provisional"))


@_fast_init
@dataclass(frozen=True, slots=True)
class RatingChange:
    """§17 ``match_end.rating``: this seat's rating before and after a rated match.

    ``unrated`` names why nothing changed (``void``, or ``pair_limit``: this pair already played
    its rated matches of the day); absent when the match counted.
    """

    before: float
    after: float
    change: float
    deviation: float
    provisional: bool
    unrated: str | None = None

    def wire(self) -> Json:
        out: Json = {"before": self.before, "after": self.after, "change": self.change, "deviation": self.deviation,
                     "provisional": self.provisional}
        if self.unrated is not None:
            out["unrated"] = self.unrated
        return out

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> RatingChange:
        return cls(
            _number(obj, "before", 0.0, RATING_MAX), _number(obj, "after", 0.0, RATING_MAX),
            _number(obj, "change", -RATING_MAX, RATING_MAX), _number(obj, "deviation", 0.0, RATING_MAX),
            _bool(obj, "provisional"), None if obj.get("unrated") is None else _word(obj, "unrated"),
        )


@_fast_init
@dataclass(frozen=True, slots=True)
class PlayerInfo:
    """§17 ``player``: who this connection is (after ``identify`` or ``rename``)."""

    TYPE: ClassVar[ServerType] = ServerType.PLAYER
    player: str  # public id: 16 hex digits
    name: str
    tag: str  # the id's first 4 hex digits
    display: str  # name#tag
    rating: RatingInfo
    games: int
    wins: int
    losses: int
    draws: int

    def wire(self) -> Json:
        return {
            "type": "player", "player": self.player, "name": self.name, "tag": self.tag, "display": self.display,
            "rating": self.rating.wire(), "games": self.games, "wins": self.wins, "losses": self.losses,
            "draws": self.draws,
        }

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> PlayerInfo:
        return cls(
            _hex(obj, "player", 16), _display(obj, "name"), _hex(obj, "tag", 4), _display(obj),
            RatingInfo.parse(_object(obj, "rating")), _int(obj, "games"), _int(obj, "wins"), _int(obj, "losses"),
            _int(obj, "draws"),
        )


_QUEUE_STATUSES = frozenset({"waiting", "left"})


@_fast_init
@dataclass(frozen=True, slots=True)
class QueueStatus:
    """§17 ``queue``: waiting (since when, on the server clock) or left (and why)."""

    TYPE: ClassVar[ServerType] = ServerType.QUEUE
    status: str  # waiting / left
    since: float | None = None  # waiting only
    server_time: float | None = None  # waiting only
    reason: str | None = None  # left only: cancelled / not_ready

    def wire(self) -> Json:
        if self.status == "waiting":
            return {"type": "queue", "status": "waiting", "since": self.since, "server_time": self.server_time}
        return {"type": "queue", "status": self.status, "reason": self.reason}

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> QueueStatus:
        status = _choice(obj, "status", _QUEUE_STATUSES)
        if status == "waiting":
            return cls(status, _number(obj, "since"), _number(obj, "server_time"))
        return cls(status, reason=_word(obj, "reason"))


@_fast_init
@dataclass(frozen=True, slots=True)
class MatchedOpponent:
    """The opponent a quick match found, as public as a leaderboard line (§17): no key, no address."""

    display: str
    rating: float
    provisional: bool

    def wire(self) -> Json:
        return {"display": self.display, "rating": self.rating, "provisional": self.provisional}

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> MatchedOpponent:
        return cls(_display(obj), _number(obj, "rating", 0.0, RATING_MAX), _bool(obj, "provisional"))


@_fast_init
@dataclass(frozen=True, slots=True)
class Matched:
    """§17: the quick match found an opponent and seated both in a new room; ``ready`` before ``confirm``."""

    TYPE: ClassVar[ServerType] = ServerType.MATCHED
    room: str
    token: str  # this seat's session token (works with resume like joined's)
    seat: int  # join order in the room (0: seated first)
    opponent: MatchedOpponent
    rated: bool
    confirm: Deadline

    def wire(self) -> Json:
        return {
            "type": "matched", "room": self.room, "token": self.token, "seat": self.seat,
            "opponent": self.opponent.wire(), "rated": self.rated, "confirm": self.confirm.wire(),
        }

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> Matched:
        confirm = Deadline.parse(_object(obj, "confirm"))
        assert confirm is not None
        return cls(
            _room_code(obj), _hex(obj, "token", 64), _seat(obj), MatchedOpponent.parse(_object(obj, "opponent")),
            _bool(obj, "rated"), confirm,
        )


_RESULTS = frozenset({"win", "loss", "draw"})


@_fast_init
@dataclass(frozen=True, slots=True)
class RecentResult:
    """One rated match of a profile (§17): against whom, the result, the rating change, when (Unix time)."""

    match_id: str
    opponent: str  # the opponent's display
    result: str  # win / loss / draw
    change: float
    at: float

    def wire(self) -> Json:
        return {"match_id": self.match_id, "opponent": self.opponent, "result": self.result, "change": self.change,
                "at": self.at}

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> RecentResult:
        return cls(_hex(obj, "match_id", 16), _display(obj, "opponent"), _choice(obj, "result", _RESULTS),
                   _number(obj, "change", -RATING_MAX, RATING_MAX), _number(obj, "at"))


@_fast_init
@dataclass(frozen=True, slots=True)
class Profile:
    """§17 ``profile``: a player's rating, counts and latest rated matches (newest first)."""

    TYPE: ClassVar[ServerType] = ServerType.PROFILE
    player: str
    display: str
    rating: RatingInfo
    games: int
    wins: int
    losses: int
    draws: int
    recent: Sequence[RecentResult]
    id: RequestId | None = None

    def wire(self) -> Json:
        return _with_id({
            "type": "profile", "player": self.player, "display": self.display, "rating": self.rating.wire(),
            "games": self.games, "wins": self.wins, "losses": self.losses, "draws": self.draws,
            "recent": [r.wire() for r in self.recent],
        }, self.id)

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> Profile:
        return cls(
            _hex(obj, "player", 16), _display(obj), RatingInfo.parse(_object(obj, "rating")), _int(obj, "games"),
            _int(obj, "wins"), _int(obj, "losses"), _int(obj, "draws"),
            tuple(RecentResult.parse(r) for r in _list_of(obj, "recent", RECENT_MAX)), _rid(obj),
        )


@_fast_init
@dataclass(frozen=True, slots=True)
class LeaderboardEntry:
    rank: int
    player: str
    display: str
    rating: float
    games: int

    def wire(self) -> Json:
        return {"rank": self.rank, "player": self.player, "display": self.display, "rating": self.rating,
                "games": self.games}

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> LeaderboardEntry:
        return cls(_int(obj, "rank", 1), _hex(obj, "player", 16), _display(obj),
                   _number(obj, "rating", 0.0, RATING_MAX), _int(obj, "games"))


@_fast_init
@dataclass(frozen=True, slots=True)
class LeaderboardMe:
    rank: int
    rating: float

    def wire(self) -> Json:
        return {"rank": self.rank, "rating": self.rating}

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> LeaderboardMe:
        return cls(_int(obj, "rank", 1), _number(obj, "rating", 0.0, RATING_MAX))


@_fast_init
@dataclass(frozen=True, slots=True)
class Leaderboard:
    """§17 ``leaderboard``: the best ranked players (deviation ≤ 75) and this connection's place."""

    TYPE: ClassVar[ServerType] = ServerType.LEADERBOARD
    top: Sequence[LeaderboardEntry]
    me: LeaderboardMe | None
    id: RequestId | None = None

    def wire(self) -> Json:
        return _with_id({"type": "leaderboard", "top": [e.wire() for e in self.top],
                         "me": None if self.me is None else self.me.wire()}, self.id)

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> Leaderboard:
        me = _opt_object(obj, "me")
        return cls(tuple(LeaderboardEntry.parse(e) for e in _list_of(obj, "top", LEADERBOARD_MAX)),
                   None if me is None else LeaderboardMe.parse(me), _rid(obj))


@_fast_init
@dataclass(frozen=True, slots=True)
class SpectatePlayer:
    """One player as a spectator sees it (§16): the name and the connection (O12), nothing hidden."""

    name: str
    connected: bool
    grace: Deadline | None  # O12: while the player is away during a match

    def wire(self) -> Json:
        return {"name": self.name, "connected": self.connected, "grace": None if self.grace is None else self.grace.wire()}

    @classmethod
    def parse(cls, obj: Mapping[str, Any], server_time: float) -> SpectatePlayer:
        return cls(
            _str(obj, "name", limit=64), _bool(obj, "connected"),
            Deadline.parse_near(_opt_object(obj, "grace"), server_time, "grace"),
        )


@_fast_init
@dataclass(frozen=True, slots=True)
class SpectateBoard:
    """The public board (§16): ``m`` is seat 0, ``o`` seat 1; no mine layer at all."""

    numbers: Sequence[str]  # "." closed, "0"-"8" open (B4)
    opened_by: Sequence[str]  # "m" seat 0, "o" seat 1 (B3)
    markers: Sequence[str]  # "m" seat 0's, "o" seat 1's

    def wire(self) -> Json:
        return {"numbers": self.numbers, "opened_by": self.opened_by, "markers": self.markers}

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> SpectateBoard:
        if "my_mines" in obj or "mines" in obj:
            raise BadMessage("a spectator's board never has a mine layer")
        return cls(_rows(obj, "numbers", ".012345678"), _rows(obj, "opened_by", ".mo"), _rows(obj, "markers", ".mo"))


@_fast_init
@dataclass(frozen=True, slots=True)
class SpectateState:
    """A spectator's whole view of a room after a change (§16): public information only.

    Built once per change for all of the room's spectators. Everything seat-relative is spelled
    as seat 0 reads it (``m`` = seat 0, ``o`` = seat 1, ``result.winner`` ``me`` = seat 0);
    ``reveal`` (O13) and ``result`` are there only once the match is over.
    """

    TYPE: ClassVar[ServerType] = ServerType.SPECTATE_STATE
    room: str
    status: str  # waiting / playing / finished
    spectators: int
    players: Sequence[SpectatePlayer]  # by match seat once a match started, else in join order
    match_id: str | None
    number: int  # matches started in the room (a rematch is the next number)
    seq: int
    phase: str | None
    to_move: int | None  # the seat to move
    turn: int
    deadline: Deadline | None
    server_time: float
    board: SpectateBoard | None
    result: Result | None
    reveal: Reveal | None

    def wire(self) -> Json:
        return {
            "type": "spectate_state",
            "room": self.room,
            "status": self.status,
            "spectators": self.spectators,
            "players": [p.wire() for p in self.players],
            "match_id": self.match_id,
            "number": self.number,
            "seq": self.seq,
            "phase": self.phase,
            "to_move": self.to_move,
            "turn": self.turn,
            "deadline": None if self.deadline is None else self.deadline.wire(),
            "server_time": self.server_time,
            "board": None if self.board is None else self.board.wire(),
            "result": None if self.result is None else self.result.wire(),
            "reveal": None if self.reveal is None else self.reveal.wire(),
        }

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> SpectateState:
        server_time = _number(obj, "server_time")
        players = _need(obj, "players")
        if not isinstance(players, list) or len(players) > 2 or not all(isinstance(p, dict) for p in players):
            raise BadMessage("'players' must be a list of at most two objects")
        phase = obj.get("phase")
        if phase is not None and phase not in _PHASES:
            raise BadMessage(f"unknown phase {phase!r}")
        to_move = obj.get("to_move")
        if to_move is not None:
            to_move = _seat(obj, "to_move")
        board, result, reveal = _opt_object(obj, "board"), _opt_object(obj, "result"), _opt_object(obj, "reveal")
        status = _choice(obj, "status", _STATUSES)
        if (reveal is not None or result is not None) and status != "finished":
            raise BadMessage("a spectator sees the result and the reveal only after the end (O13)")
        return cls(
            _room_code(obj), status, _int(obj, "spectators"),
            tuple(SpectatePlayer.parse(p, server_time) for p in players), _opt_hex(obj, "match_id", 16),
            _int(obj, "number"), _int(obj, "seq"), phase, to_move, _int(obj, "turn"),
            Deadline.parse_near(_opt_object(obj, "deadline"), server_time, "deadline"), server_time,
            None if board is None else SpectateBoard.parse(board), None if result is None else Result.parse(result),
            None if reveal is None else Reveal.parse(reveal),
        )


@_fast_init
@dataclass(frozen=True, slots=True)
class LiveRoom:
    """One room of a ``live_rooms`` reply (§16): public facts of a listed room's running match."""

    room: str
    players: Sequence[str]  # the names by match seat (seat 0 first)
    number: int  # the room's match number (a rematch is the next one)
    turn: int  # F3 (0 in the opening)
    spectators: int  # connections watching it now

    def wire(self) -> Json:
        return {"room": self.room, "players": list(self.players), "number": self.number, "turn": self.turn,
                "spectators": self.spectators}

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> LiveRoom:
        players = _need(obj, "players")
        if not (isinstance(players, list) and len(players) == 2):
            raise BadMessage("'players' must be the two players' names")
        names = tuple(_str({"name": p}, "name", limit=64) for p in players)
        return cls(_room_code(obj), names, _int(obj, "number", 1), _int(obj, "turn"), _int(obj, "spectators"))


@_fast_init
@dataclass(frozen=True, slots=True)
class LiveRooms:
    """``live_rooms``: the listed, watchable rooms with a match in progress, most recently started
    first, at most :data:`~mineduel.shared.wire.names.LIVE_ROOMS_MAX` (§16)."""

    TYPE: ClassVar[ServerType] = ServerType.LIVE_ROOMS
    rooms: Sequence[LiveRoom]
    id: RequestId | None = None

    def wire(self) -> Json:
        return _with_id({"type": "live_rooms", "rooms": [r.wire() for r in self.rooms]}, self.id)

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> LiveRooms:
        rooms = _need(obj, "rooms")
        if not (isinstance(rooms, list) and len(rooms) <= LIVE_ROOMS_MAX and all(isinstance(r, dict) for r in rooms)):
            raise BadMessage(f"'rooms' must be a list of at most {LIVE_ROOMS_MAX} objects")
        return cls(tuple(LiveRoom.parse(r) for r in rooms), _rid(obj))


ServerMessage: TypeAlias = (
    Welcome | Error | Ok | Ping | Pong | RoomCreated | RoomInfo | Joined | Room | MatchStart | State
    | Presence | MatchEnd | RematchStatus | RecordReply | RoomClosed | ServerClosing | SpectateState
    | PlayerInfo | QueueStatus | Matched | Profile | Leaderboard
    | LiveRooms
    | Moved
)

SERVER_MESSAGES: Mapping[str, type[ServerMessage]] = {
    cls.TYPE.value: cls
    for cls in (
        Welcome, Error, Ok, Ping, Pong, RoomCreated, RoomInfo, Joined, Room, MatchStart, State,
        Presence, MatchEnd, RematchStatus, RecordReply, RoomClosed, ServerClosing, SpectateState,
        PlayerInfo, QueueStatus, Matched, Profile, Leaderboard,
        LiveRooms,
        Moved,
    )
}


# ----- client → server ------------------------------------------------------------------------------
# Read by ``codec.parse_request`` with the field checks of docs/PROTOCOL.md §4 (step 6 of §9);
# a room code is only checked at step 7 (credentials), by the server: ``room`` holds what was sent.


@_fast_init
@dataclass(frozen=True, slots=True)
class Hello:
    TYPE: ClassVar[ClientType] = ClientType.HELLO
    protocol: int
    client: str = ""
    id: RequestId | None = None

    def wire(self) -> Json:
        return _with_id({"type": "hello", "protocol": self.protocol, "client": self.client}, self.id)


@_fast_init
@dataclass(frozen=True, slots=True)
class PingRequest:
    TYPE: ClassVar[ClientType] = ClientType.PING
    id: RequestId | None = None

    def wire(self) -> Json:
        return _with_id({"type": "ping"}, self.id)


@_fast_init
@dataclass(frozen=True, slots=True)
class PongReply:
    TYPE: ClassVar[ClientType] = ClientType.PONG

    def wire(self) -> Json:
        return {"type": "pong"}


@_fast_init
@dataclass(frozen=True, slots=True)
class CreateRoom:
    TYPE: ClassVar[ClientType] = ClientType.CREATE
    name: str = ""
    client_seed: str | None = None
    id: RequestId | None = None
    listed: bool = False  # LAN discovery names the room while it waits for a player (PROTOCOL.md §12)
    spectators: bool = True  # §16: whoever has the code may watch; false turns spectating off
    rated: bool = False  # §17: a rated room (needs identify)

    def wire(self) -> Json:
        out: Json = {"type": "create_room", "name": self.name}
        if self.client_seed is not None:
            out["client_seed"] = self.client_seed
        if self.listed:
            out["listed"] = True
        if not self.spectators:
            out["spectators"] = False
        if self.rated:
            out["rated"] = True
        return _with_id(out, self.id)


@_fast_init
@dataclass(frozen=True, slots=True)
class Peek:
    TYPE: ClassVar[ClientType] = ClientType.PEEK
    room: object  # as sent; the server checks the code at step 7 (a malformed one is room_not_found)
    id: RequestId | None = None

    def wire(self) -> Json:
        return _with_id({"type": "peek", "room": self.room}, self.id)


@_fast_init
@dataclass(frozen=True, slots=True)
class Join:
    TYPE: ClassVar[ClientType] = ClientType.JOIN
    room: object  # as sent (see Peek)
    name: str = ""
    client_seed: str | None = None
    id: RequestId | None = None

    def wire(self) -> Json:
        out: Json = {"type": "join", "room": self.room, "name": self.name}
        if self.client_seed is not None:
            out["client_seed"] = self.client_seed
        return _with_id(out, self.id)


@_fast_init
@dataclass(frozen=True, slots=True)
class Resume:
    TYPE: ClassVar[ClientType] = ClientType.RESUME
    room: object  # as sent (see Peek)
    token: str
    id: RequestId | None = None

    def wire(self) -> Json:
        return _with_id({"type": "resume", "room": self.room, "token": self.token}, self.id)


@_fast_init
@dataclass(frozen=True, slots=True)
class Ready:
    TYPE: ClassVar[ClientType] = ClientType.READY
    ready: bool = True
    client_seed: str | None = None
    id: RequestId | None = None

    def wire(self) -> Json:
        out: Json = {"type": "ready", "ready": self.ready}
        if self.client_seed is not None:
            out["client_seed"] = self.client_seed
        return _with_id(out, self.id)


@_fast_init
@dataclass(frozen=True, slots=True)
class Leave:
    TYPE: ClassVar[ClientType] = ClientType.LEAVE
    id: RequestId | None = None

    def wire(self) -> Json:
        return _with_id({"type": "leave"}, self.id)


@_fast_init
@dataclass(frozen=True, slots=True)
class SetSpectators:
    """§16: the room's creator lets others watch its room, or stops them (watching ones get ``room_closed``)."""

    TYPE: ClassVar[ClientType] = ClientType.SET_SPECTATORS
    allowed: bool
    id: RequestId | None = None

    def wire(self) -> Json:
        return _with_id({"type": "set_spectators", "allowed": self.allowed}, self.id)


@_fast_init
@dataclass(frozen=True, slots=True)
class MatchAction:
    """``explore``/``plant``/``flag``/``unflag`` (with a cell) and ``end_turn`` (without)."""

    type: ClientType
    cell: int | None = None  # row * 8 + col
    match_id: str | None = None
    seq: int | None = None
    id: RequestId | None = None

    def wire(self) -> Json:
        out: Json = {"type": self.type.value}
        if self.cell is not None:
            out["cell"] = list(divmod(self.cell, 8))
        if self.match_id is not None:
            out["match_id"] = self.match_id
        if self.seq is not None:
            out["seq"] = self.seq
        return _with_id(out, self.id)


@_fast_init
@dataclass(frozen=True, slots=True)
class Resign:
    TYPE: ClassVar[ClientType] = ClientType.RESIGN
    match_id: str | None = None
    id: RequestId | None = None

    def wire(self) -> Json:
        out: Json = {"type": "resign"}
        if self.match_id is not None:
            out["match_id"] = self.match_id
        return _with_id(out, self.id)


@_fast_init
@dataclass(frozen=True, slots=True)
class Rematch:
    TYPE: ClassVar[ClientType] = ClientType.REMATCH
    client_seed: str | None = None
    id: RequestId | None = None

    def wire(self) -> Json:
        out: Json = {"type": "rematch"}
        if self.client_seed is not None:
            out["client_seed"] = self.client_seed
        return _with_id(out, self.id)


@_fast_init
@dataclass(frozen=True, slots=True)
class GetRecord:
    TYPE: ClassVar[ClientType] = ClientType.GET_RECORD
    match_id: str
    id: RequestId | None = None

    def wire(self) -> Json:
        return _with_id({"type": "get_record", "match_id": self.match_id}, self.id)


@_fast_init
@dataclass(frozen=True, slots=True)
class Identify:
    """§17: who this connection is: the player's secret key (43 URL-safe base64 characters) and name."""

    TYPE: ClassVar[ClientType] = ClientType.IDENTIFY
    key: str
    name: str
    id: RequestId | None = None

    def wire(self) -> Json:
        return _with_id({"type": "identify", "key": self.key, "name": self.name}, self.id)


@_fast_init
@dataclass(frozen=True, slots=True)
class Rename:
    TYPE: ClassVar[ClientType] = ClientType.RENAME
    name: str
    id: RequestId | None = None

    def wire(self) -> Json:
        return _with_id({"type": "rename", "name": self.name}, self.id)


@_fast_init
@dataclass(frozen=True, slots=True)
class QuickMatch:
    TYPE: ClassVar[ClientType] = ClientType.QUICK_MATCH
    id: RequestId | None = None
    spectators: bool = True  # §17: this player lets others watch; the room is watchable only if both do

    def wire(self) -> Json:
        out: Json = {"type": "quick_match"}
        if not self.spectators:
            out["spectators"] = False
        return _with_id(out, self.id)


@_fast_init
@dataclass(frozen=True, slots=True)
class LeaveQueue:
    TYPE: ClassVar[ClientType] = ClientType.LEAVE_QUEUE
    id: RequestId | None = None

    def wire(self) -> Json:
        return _with_id({"type": "leave_queue"}, self.id)


@_fast_init
@dataclass(frozen=True, slots=True)
class GetProfile:
    """§17: this connection's own profile, or the one of ``player`` (a public id)."""

    TYPE: ClassVar[ClientType] = ClientType.GET_PROFILE
    player: str | None = None
    id: RequestId | None = None

    def wire(self) -> Json:
        out: Json = {"type": "get_profile"}
        if self.player is not None:
            out["player"] = self.player
        return _with_id(out, self.id)


@_fast_init
@dataclass(frozen=True, slots=True)
class GetLeaderboard:
    TYPE: ClassVar[ClientType] = ClientType.GET_LEADERBOARD
    id: RequestId | None = None

    def wire(self) -> Json:
        return _with_id({"type": "get_leaderboard"}, self.id)


@_fast_init
@dataclass(frozen=True, slots=True)
class Spectate:
    """§16: watch a room without a seat (the code is checked at step 7, like ``join``'s)."""

    TYPE: ClassVar[ClientType] = ClientType.SPECTATE
    room: object  # as sent (see Peek)
    id: RequestId | None = None

    def wire(self) -> Json:
        return _with_id({"type": "spectate", "room": self.room}, self.id)


@_fast_init
@dataclass(frozen=True, slots=True)
class LiveRoomsRequest:
    """§16: which listed rooms have a match to watch now (answered :class:`LiveRooms`)."""

    TYPE: ClassVar[ClientType] = ClientType.LIVE_ROOMS
    id: RequestId | None = None

    def wire(self) -> Json:
        return _with_id({"type": "live_rooms"}, self.id)


@_fast_init
@dataclass(frozen=True, slots=True)
class Bye:
    TYPE: ClassVar[ClientType] = ClientType.BYE

    def wire(self) -> Json:
        return {"type": "bye"}


ClientMessage: TypeAlias = (
    Hello | PingRequest | PongReply | CreateRoom | Peek | Join | Resume | Ready | Leave | MatchAction
    | Resign | Rematch | GetRecord | Bye | Spectate | SetSpectators
    | Identify | Rename | QuickMatch | LeaveQueue | GetProfile | GetLeaderboard | LiveRoomsRequest
)

Message: TypeAlias = ServerMessage | ClientMessage
