"""The JSON-lines codec of docs/PROTOCOL.md §1 and the field checks of §4, each written once.

Pure and standard-library only (``orjson`` is used when it is installed, see :data:`CODEC`),
so a headless bot needs nothing but this package and a socket. Typed messages
(:mod:`mineduel.shared.wire.messages`) are read and written here, at each edge, once.
"""

from __future__ import annotations

import json as _json
import re
from collections.abc import Mapping
from typing import Any

from mineduel.shared.fairness.record import is_int
from mineduel.shared.rules.bitboard import COLS, ROWS
from mineduel.shared.wire import messages as m
from mineduel.shared.wire.names import (
    ACTION_TYPES,
    CELL_TYPES,
    ROOM_CODE_ALPHABET,
    ROOM_CODE_LENGTH,
    ClientType,
    ErrorCode,
)

_orjson: Any
try:  # orjson is a runtime dependency of the project; the fallback keeps clients stdlib-only.
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised only where orjson is missing
    _orjson = None

# JSON codec ------------------------------------------------------------------------------
# Measured on the project machine (CPython 3.11, orjson 3.x) with an 854-byte ``state``
# message, 20 000 rounds: json.dumps 22.5 µs, orjson.dumps 1.1 µs; json.loads 15.6 µs,
# orjson.loads 4.7 µs. The server encodes two views after every action, so orjson is used
# when available (20x cheaper); both produce compact UTF-8 JSON that any JSON parser reads.
CODEC = "orjson" if _orjson is not None else "json"
_APPEND_NEWLINE = 0 if _orjson is None else _orjson.OPT_APPEND_NEWLINE  # "\n" written in: no copy of the line


class ProtocolError(ValueError):
    """A request that breaks the protocol; ``code`` is one of :class:`ErrorCode`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def encode(message: Mapping[str, Any]) -> bytes:
    """One message as a ``\\n``-terminated UTF-8 JSON line."""
    if _orjson is not None:
        line: bytes = _orjson.dumps(message, option=_APPEND_NEWLINE)
        return line
    return (_json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n").encode()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    """A JSON number as the standard library reads it, refused when it overflows (``1e400``) like orjson does."""
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text} is out of range")
    return value


def decode(line: bytes | str) -> dict[str, Any]:
    """Parse one line (without its ``\\n``) into a message object; raise :class:`ProtocolError`.

    The checks are the first two of the documented order: ``bad_json`` (not UTF-8 JSON, or not
    an object), then ``bad_request`` when ``type`` is missing or not a string.
    """
    if isinstance(line, str):
        line = line.encode("utf-8", "surrogatepass")
    line = line.rstrip(b"\r")
    try:
        if _orjson is not None:
            data = _orjson.loads(line)
        else:
            data = _json.loads(line.decode("utf-8"), parse_constant=_reject_constant, parse_float=_finite_float)
            # A lone surrogate escape (``"\\ud800"``) is not UTF-8 text: orjson refuses it, and so must
            # the fallback, or the message could never be encoded again.
            _json.dumps(data, ensure_ascii=False).encode("utf-8")
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: the fallback on deep nesting
        raise ProtocolError(ErrorCode.BAD_JSON, f"not a UTF-8 JSON line: {exc}") from None
    if not isinstance(data, dict):
        raise ProtocolError(ErrorCode.BAD_JSON, "a message must be a JSON object")
    kind = data.get("type")
    if not isinstance(kind, str):
        raise ProtocolError(ErrorCode.BAD_REQUEST, "every message needs a string 'type'")
    return data


_SEED = re.compile(r"[ -9;-~]{0,64}")  # printable ASCII (space included) without ':' (R1 joins seeds with ':')
_TOKEN = re.compile(r"[0-9a-f]{64}")
_MATCH_ID = re.compile(r"[0-9a-f]{16}")
_NAME_MAX = 32
ID_MIN = -(2**63)
ID_MAX = 2**64 - 1
"""§1: an integer ``id`` is a 64-bit integer, signed or unsigned (what orjson reads as an integer;
a longer one arrives as a float and is refused without an echo)."""


def bad(message: str) -> ProtocolError:
    return ProtocolError(ErrorCode.BAD_REQUEST, message)


def request_id(msg: Mapping[str, Any]) -> str | int | None:
    """The optional ``id`` a reply echoes: a string of up to 64 characters or an integer
    from ``ID_MIN`` to ``ID_MAX`` (−2⁶³ … 2⁶⁴−1), echoed exactly."""
    rid = msg.get("id")
    if rid is None:
        return None
    if isinstance(rid, str) and len(rid) <= 64:
        return rid
    if is_int(rid) and ID_MIN <= rid <= ID_MAX:
        return rid
    raise bad("'id' must be a string of at most 64 characters or an integer")  # (-2^63 .. 2^64-1: golden bytes)


def room_code(value: Any, field: str = "room") -> str:
    """A room code, case-insensitive on input, upper-case afterwards."""
    if not isinstance(value, str):
        raise bad(f"'{field}' must be a room code string")
    code = value.strip()
    code = code.upper() if code.isascii() else ""  # "ſ".upper() is "S", "ﬀ".upper() is "FF": ASCII only
    if len(code) != ROOM_CODE_LENGTH or any(c not in ROOM_CODE_ALPHABET for c in code):
        raise ProtocolError(ErrorCode.ROOM_NOT_FOUND, f"{value!r} is not a room code")
    return code


def client_seed(msg: Mapping[str, Any]) -> str | None:
    """Optional ``client_seed``: up to 64 printable ASCII characters (0x20-0x7E, space included) other than ':'."""
    seed = msg.get("client_seed")
    if seed is None:
        return None
    if not isinstance(seed, str) or _SEED.fullmatch(seed) is None:
        raise bad("'client_seed' must be 0-64 printable ASCII characters without ':'")
    return seed


def player_name(msg: Mapping[str, Any]) -> str:
    """Optional ``name`` shown to the opponent (up to 32 characters, no control characters)."""
    name = msg.get("name", "")
    if not isinstance(name, str) or len(name) > _NAME_MAX or any(ord(c) < 32 or 127 <= ord(c) < 160 for c in name):  # C0, DEL, C1
        raise bad(f"'name' must be a string of at most {_NAME_MAX} printable characters")
    return name


def token(value: Any) -> str:
    """A session token: 64 lowercase hex digits (256 bits)."""
    if not isinstance(value, str) or _TOKEN.fullmatch(value) is None:
        raise bad("'token' must be 64 lowercase hex digits")
    return value


def match_id(value: Any, field: str = "match_id") -> str:
    if not isinstance(value, str) or _MATCH_ID.fullmatch(value) is None:
        raise bad(f"'{field}' must be 16 lowercase hex digits")
    return value


def cell(msg: Mapping[str, Any]) -> int:
    """``cell`` as ``[row, col]`` (0-based, B1) → the cell index ``row*8+col``."""
    value = msg.get("cell")
    if not (isinstance(value, list) and len(value) == 2 and is_int(value[0]) and is_int(value[1])):
        raise bad("'cell' must be [row, col] with integers 0-7")
    row, col = int(value[0]), int(value[1])
    if not (0 <= row < ROWS and 0 <= col < COLS):
        raise bad(f"'cell' {value} is off the 8x8 board")
    return row * COLS + col


def optional_seq(msg: Mapping[str, Any]) -> int | None:
    seq = msg.get("seq")
    if seq is None:
        return None
    if not is_int(seq) or seq < 0:
        raise bad("'seq' must be a non-negative integer")
    return seq


# Message constructors (server side) -------------------------------------------------------


# Typed messages at the edges ----------------------------------------------------------------------


def encode_message(message: m.Message) -> bytes:
    """One typed message as its ``\\n``-terminated line (the same bytes as its ``wire()`` object).

    Through ``wire()`` and orjson: measured, orjson writes a slotted dataclass directly about
    twice as slowly as the ``wire()`` object (and ``SeenAction`` leaves out unset keys anyway).
    """
    if _orjson is not None:
        line: bytes = _orjson.dumps(message.wire(), option=_APPEND_NEWLINE)
        return line
    return encode(message.wire())


_CLIENT_TYPES: dict[str, ClientType] = {kind.value: kind for kind in ClientType}
"""Every request type by its wire name: one dict lookup, where ``ClientType(kind)`` makes two Python calls."""


def request_kind(msg: Mapping[str, Any]) -> ClientType:
    """Step 4 of PROTOCOL.md §9 after ``decode``: ``unknown_type`` for a type the protocol lacks."""
    kind = msg["type"]
    found = _CLIENT_TYPES.get(kind) if type(kind) is str else None  # decoded JSON: a plain str
    if found is not None:
        return found
    try:
        return ClientType(kind)
    except ValueError:
        raise ProtocolError(ErrorCode.UNKNOWN_TYPE, f"unknown message type {kind!r}") from None


def hello_request(msg: Mapping[str, Any], version: int) -> m.Hello:
    """``hello`` (step 5, then 6): the protocol version first, then ``client``, then ``id``."""
    protocol = msg.get("protocol")
    if protocol != version or isinstance(protocol, bool):
        raise ProtocolError(ErrorCode.UNSUPPORTED_PROTOCOL, f"this server speaks protocol {version} only, not {protocol!r}")
    client = msg.get("client", "")
    if not isinstance(client, str) or len(client) > 64:
        raise bad("'client' must be a string of at most 64 characters")
    return m.Hello(version, client, request_id(msg))


def _optional_match_id(msg: Mapping[str, Any]) -> str | None:
    return match_id(msg["match_id"]) if msg.get("match_id") is not None else None


def parse_request(kind: ClientType, msg: Mapping[str, Any]) -> m.ClientMessage:
    """Step 6 of PROTOCOL.md §9: every field of a request after ``hello``, in the documented order.

    Unknown fields are ignored (§1). A room code is not checked here: it is a credential (step 7).
    """
    rid = request_id(msg)
    if kind in ACTION_TYPES:  # first: nearly every request is a match action
        where = cell(msg) if kind in CELL_TYPES else None
        return m.MatchAction(kind, where, _optional_match_id(msg), optional_seq(msg), rid)
    if kind is ClientType.PING:
        return m.PingRequest(rid)
    if kind is ClientType.PONG:
        return m.PongReply()
    if kind is ClientType.BYE:
        return m.Bye()
    if kind is ClientType.CREATE:
        listed = msg.get("listed", False)
        if not isinstance(listed, bool):
            raise bad("'listed' must be true or false")
        spectators = msg.get("spectators", True)
        if not isinstance(spectators, bool):
            raise bad("'spectators' must be true or false")
        rated = msg.get("rated", False)
        if not isinstance(rated, bool):
            raise bad("'rated' must be true or false")
        return m.CreateRoom(player_name(msg), client_seed(msg), rid, listed, spectators, rated)
    if kind is ClientType.SPECTATE:
        return m.Spectate(msg.get("room"), rid)
    if kind is ClientType.LIVE_ROOMS:
        return m.LiveRoomsRequest(rid)
    if kind is ClientType.PEEK:
        return m.Peek(msg.get("room"), rid)
    if kind is ClientType.JOIN:
        return m.Join(msg.get("room"), player_name(msg), client_seed(msg), rid)
    if kind is ClientType.RESUME:
        return m.Resume(msg.get("room"), token(msg.get("token")), rid)
    if kind is ClientType.READY:
        ready = msg.get("ready", True)
        if not isinstance(ready, bool):
            raise bad("'ready' must be true or false")
        return m.Ready(ready, client_seed(msg), rid)
    if kind is ClientType.LEAVE:
        return m.Leave(rid)
    if kind is ClientType.SET_SPECTATORS:
        allowed = msg.get("allowed")
        if not isinstance(allowed, bool):
            raise bad("'allowed' must be true or false")
        return m.SetSpectators(allowed, rid)
    if kind is ClientType.RESIGN:
        return m.Resign(_optional_match_id(msg), rid)
    if kind is ClientType.REMATCH:
        return m.Rematch(client_seed(msg), rid)
    if kind is ClientType.GET_RECORD:
        return m.GetRecord(match_id(msg.get("match_id")), rid)
    if kind in PLAYER_TYPES:
        return _player_request(kind, msg, rid)
    raise ValueError(f"parse hello with hello_request, not {kind}")  # pragma: no cover - HELLO only


PLAYER_TYPES = frozenset({
    ClientType.IDENTIFY, ClientType.RENAME, ClientType.QUICK_MATCH, ClientType.LEAVE_QUEUE,
    ClientType.GET_PROFILE, ClientType.GET_LEADERBOARD,
})
"""The requests of PROTOCOL.md §17 (players, quick match, ratings)."""

_PLAYER_KEY = re.compile(r"[A-Za-z0-9_-]{43}")
_PLAYER_ID = re.compile(r"[0-9a-f]{16}")


def player_key(value: Any) -> str:
    """§17: a player key, 43 characters of URL-safe base64 (32 random bytes, no padding)."""
    if not isinstance(value, str) or _PLAYER_KEY.fullmatch(value) is None:
        raise bad("'key' must be 43 characters of URL-safe base64 (32 random bytes)")
    return value


def _wanted_name(msg: Mapping[str, Any]) -> str:
    """§17: ``name`` must be a string here; its length, characters and the deny list are the
    server's check (``bad_name``), after trimming."""
    name = msg.get("name")
    if not isinstance(name, str):
        raise bad("'name' must be a string")
    return name


def _player_request(kind: ClientType, msg: Mapping[str, Any], rid: str | int | None) -> m.ClientMessage:
    if kind is ClientType.IDENTIFY:
        return m.Identify(player_key(msg.get("key")), _wanted_name(msg), rid)
    if kind is ClientType.RENAME:
        return m.Rename(_wanted_name(msg), rid)
    if kind is ClientType.QUICK_MATCH:
        spectators = msg.get("spectators", True)
        if not isinstance(spectators, bool):
            raise bad("'spectators' must be true or false")
        return m.QuickMatch(rid, spectators)
    if kind is ClientType.LEAVE_QUEUE:
        return m.LeaveQueue(rid)
    if kind is ClientType.GET_PROFILE:
        player = msg.get("player")
        if player is not None and (not isinstance(player, str) or _PLAYER_ID.fullmatch(player) is None):
            raise bad("'player' must be a player id: 16 lowercase hex digits")
        return m.GetProfile(player, rid)
    return m.GetLeaderboard(rid)


class UnknownServerMessage(m.BadMessage):
    """A message type this client does not know (a newer server): ignored, not fatal."""


def parse_server(msg: Mapping[str, Any]) -> m.ServerMessage:
    """A decoded server message as its typed class; :class:`~mineduel.shared.wire.messages.BadMessage` if malformed."""
    cls = m.SERVER_MESSAGES.get(msg["type"])
    if cls is None:
        raise UnknownServerMessage(f"unknown server message type {msg['type']!r}")
    return cls.parse(msg)


def decode_server(line: bytes | str) -> m.ServerMessage:
    """One line from a server, read and checked (a hostile server gets ``BadMessage``, never a crash)."""
    try:
        obj = decode(line)
    except ProtocolError as exc:
        raise m.BadMessage(exc.message) from None
    return parse_server(obj)
