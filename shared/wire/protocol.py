"""The MINE DUEL wire protocol, version 1 (docs/PROTOCOL.md is the contract).

Shared by the server and every client (the game, bots, benchmarks): line framing, the JSON
codec, message-type and error-code names, request validators and the seat-relative view
serialisation. Pure and standard-library only (``orjson`` is used when it is installed, see
:data:`CODEC`), so a headless bot needs nothing but this module and a socket.

Everything a seat receives is built here from a :class:`~mineduel.shared.rules.views.SeatView`,
which has no field that could hold the opponent's mines (V2, V4): the filter is the type.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from mineduel.shared.rules.bitboard import CELLS, COLS, ROWS
from mineduel.shared.rules.engine import ActionType, Outcome, Phase, Variant
from mineduel.shared.rules.views import FinalReveal, SeatView
from mineduel.shared.fairness.record import is_int

_orjson: Any
try:  # orjson is a runtime dependency of the project; the fallback keeps clients stdlib-only.
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised only where orjson is missing
    _orjson = None
import json as _json

PROTOCOL_VERSION = 1
"""The one protocol this module speaks; ``hello`` must name it."""

MAX_LINE = 8192
"""Longest accepted line in bytes, without the ``\\n`` (requests are far below 1 KB)."""

DEFAULT_PORT = 47650
"""TCP port of the game server."""

DEFAULT_UDP_PORT = 47651
"""UDP port of LAN discovery."""

TURN_SECONDS = 20.0
"""O4/O5: each opening action, and each whole normal turn."""

GRACE_SECONDS = 120.0
"""O12: time to come back after a disconnection is detected."""

PING_INTERVAL = 5.0
"""The server sends ``ping`` this often; clients should send something at least as often."""

IDLE_TIMEOUT = 15.0
"""A connection silent this long is treated as dropped (O12: a silent drop within 15 s)."""

ROOM_CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
"""31 symbols easy to read aloud: no 0/O, 1/I/L."""

ROOM_CODE_LENGTH = 6
"""31**6 ≈ 8.9e8 codes."""

INVITE_SCHEME = "mineduel"
"""Invite links look like ``mineduel://HOST:PORT/join/CODE`` and identify the room only (O1)."""

INVITE_SCHEME_TLS = "mineduels"
"""``mineduels://HOST:PORT/join/CODE[?pin=SHA256HEX]``: the same over TLS (PROTOCOL.md §2)."""

# JSON codec ------------------------------------------------------------------------------
# Measured on the project machine (CPython 3.11, orjson 3.x) with an 854-byte ``state``
# message, 20 000 rounds: json.dumps 22.5 µs, orjson.dumps 1.1 µs; json.loads 15.6 µs,
# orjson.loads 4.7 µs. The server encodes two views after every action, so orjson is used
# when available (20x cheaper); both produce compact UTF-8 JSON that any JSON parser reads.
CODEC = "orjson" if _orjson is not None else "json"


class ProtocolError(ValueError):
    """A request that breaks the protocol; ``code`` is one of :class:`ErrorCode`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def encode(message: Mapping[str, Any]) -> bytes:
    """One message as a ``\\n``-terminated UTF-8 JSON line."""
    if _orjson is not None:
        line: bytes = _orjson.dumps(message)
        return line + b"\n"
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


# Names -----------------------------------------------------------------------------------


class ClientType(StrEnum):
    """Every message a client may send."""

    HELLO = "hello"
    PING = "ping"
    PONG = "pong"
    CREATE = "create_room"
    PEEK = "peek"
    JOIN = "join"
    RESUME = "resume"
    READY = "ready"
    LEAVE = "leave"
    EXPLORE = "explore"
    PLANT = "plant"
    FLAG = "flag"
    UNFLAG = "unflag"
    END_TURN = "end_turn"
    RESIGN = "resign"
    REMATCH = "rematch"
    GET_RECORD = "get_record"
    BYE = "bye"


class ServerType(StrEnum):
    """Every message the server may send."""

    WELCOME = "welcome"
    ERROR = "error"
    OK = "ok"
    PING = "ping"
    PONG = "pong"
    ROOM_CREATED = "room_created"
    ROOM_INFO = "room_info"
    JOINED = "joined"
    ROOM = "room"
    MATCH_START = "match_start"
    STATE = "state"
    PRESENCE = "presence"
    MATCH_END = "match_end"
    REMATCH = "rematch"
    RECORD = "record"
    ROOM_CLOSED = "room_closed"
    SERVER_CLOSING = "server_closing"


class ErrorCode(StrEnum):
    """Stable error codes, in the order the server checks them (docs/PROTOCOL.md)."""

    LINE_TOO_LONG = "line_too_long"  # framing: the connection is closed
    RATE_LIMITED = "rate_limited"  # too many messages per second
    BAD_JSON = "bad_json"  # not UTF-8 JSON or not an object
    BAD_REQUEST = "bad_request"  # missing/ill-typed field (the message names it)
    UNKNOWN_TYPE = "unknown_type"  # a type the server does not know
    HELLO_REQUIRED = "hello_required"  # anything but hello/ping before hello
    UNSUPPORTED_PROTOCOL = "unsupported_protocol"  # hello with another version: closed
    ALREADY_GREETED = "already_greeted"  # a second hello
    TOO_MANY_ATTEMPTS = "too_many_attempts"  # too many unknown room codes from one address
    ROOM_NOT_FOUND = "room_not_found"
    BAD_TOKEN = "bad_token"  # resume: no seat of that room has this token
    ALREADY_SEATED = "already_seated"  # this connection already holds a seat
    ROOM_FULL = "room_full"
    NOT_SEATED = "not_seated"  # the request needs a seat
    TOO_MANY_ROOMS = "too_many_rooms"  # server-wide room limit reached
    MATCH_RUNNING = "match_running"  # leave/ready while a match is in progress
    NO_MATCH = "no_match"  # a match action with no match in this room
    WRONG_MATCH = "wrong_match"  # the request names another match id
    NOT_FINISHED = "not_finished"  # rematch or get_record before the end
    OPPONENT_MISSING = "opponent_missing"  # rematch without an opponent seated
    NOT_FOUND = "not_found"  # get_record: no such finished match
    GAME_OVER = "game_over"  # engine: any action after the end
    GRACE_EXPIRED = "grace_expired"  # O12: this seat's grace ran out; it may watch only
    NOT_YOUR_TURN = "not_your_turn"  # engine (F4)
    STALE_STATE = "stale_state"  # the request's ``seq`` is not the current one
    WRONG_PHASE = "wrong_phase"  # engine
    REVEALED = "revealed"  # engine
    MARKED = "marked"  # engine
    OWN_MINE = "own_mine"  # engine (O8)
    NO_MARKER = "no_marker"  # engine
    NOT_YOUR_MARKER = "not_your_marker"  # engine
    QUOTA_USED = "quota_used"  # engine
    REPLACED = "replaced"  # this connection's seat was resumed elsewhere: closed
    IDLE = "idle"  # nothing received for IDLE_TIMEOUT seconds: closed
    TOO_MANY_CONNECTIONS = "too_many_connections"  # per-address limit: closed
    INTERNAL_ERROR = "internal_error"  # storage failed; nothing changed
    STORAGE_UNAVAILABLE = "storage_unavailable"  # the database cannot be written now; nothing changed


ACTION_TYPES = frozenset(
    {ClientType.EXPLORE, ClientType.PLANT, ClientType.FLAG, ClientType.UNFLAG, ClientType.END_TURN}
)
CELL_TYPES = frozenset({ClientType.EXPLORE, ClientType.PLANT, ClientType.FLAG, ClientType.UNFLAG})

# Validators ------------------------------------------------------------------------------

_SEED = re.compile(r"[!-9;-~]{0,64}")  # printable ASCII without ':' (R1 joins seeds with ':')
_TOKEN = re.compile(r"[0-9a-f]{64}")
_MATCH_ID = re.compile(r"[0-9a-f]{16}")
_NAME_MAX = 32


def bad(message: str) -> ProtocolError:
    return ProtocolError(ErrorCode.BAD_REQUEST, message)


def request_id(msg: Mapping[str, Any]) -> str | int | None:
    """The optional ``id`` a reply echoes: a string of up to 64 characters or an integer."""
    rid = msg.get("id")
    if rid is None:
        return None
    if isinstance(rid, str) and len(rid) <= 64:
        return rid
    if is_int(rid) and -(2**53) < rid < 2**53:
        return rid
    raise bad("'id' must be a string of at most 64 characters or an integer")


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
    """Optional ``client_seed``: up to 64 printable ASCII characters other than ':'."""
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
    if not (isinstance(value, list) and len(value) == 2 and all(is_int(v) for v in value)):
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


@dataclass(frozen=True)
class InviteLink:
    """A parsed link: where the server is, how to reach it, and the room (``None``: the server only)."""

    host: str
    port: int
    code: str | None = None
    tls: bool = False
    pin: str | None = None  # SHA-256 of the server's certificate, lowercase hex (TLS only)


_PIN = re.compile(r"[0-9a-f]{64}")
_LINK = re.compile(
    r"(mineduels?)://(\[[^\]/]+\]|[^/:\[\]?#]+):(\d{1,5})(?:/join/([A-Za-z0-9]+))?/?(?:\?pin=([0-9A-Fa-f:]+))?"
)


def normalise_pin(pin: str) -> str:
    """A certificate pin as links carry it: 64 lowercase hex digits (``AB:CD:…`` from openssl accepted)."""
    value = pin.replace(":", "").lower()
    if _PIN.fullmatch(value) is None:
        raise ValueError(f"a pin is the certificate's SHA-256 fingerprint (64 hex digits), not {pin!r}")
    return value


def invite_link(host: str, port: int, code: str | None, *, tls: bool = False, pin: str | None = None) -> str:
    """``mineduel://HOST:PORT/join/CODE`` (IPv6 hosts in brackets); never carries a token (O1).

    ``tls`` makes it ``mineduels://``, with ``?pin=`` when the certificate is pinned; without a
    ``code`` the link names the server only (``mineduels://HOST:PORT``).
    """
    if pin is not None and not tls:
        raise ValueError("a pinned link is a TLS link")
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    link = f"{INVITE_SCHEME_TLS if tls else INVITE_SCHEME}://{host}:{port}"
    if code is not None:
        link += f"/join/{code}"
    if pin is not None:
        link += f"?pin={normalise_pin(pin)}"
    return link


def parse_link(link: str) -> InviteLink:
    """Any MINE DUEL link, plain or TLS, with or without a room; ``ValueError`` if it is not one.

    A pin is only valid on a ``mineduels://`` link: a plain link never silently drops one.
    """
    m = _LINK.fullmatch(link.strip())
    if m is None:
        raise ValueError(f"not an invite link: {link!r}")
    scheme, host, port_text, code_text, pin_text = m.groups()
    host = host.strip("[]")
    port = int(port_text)
    if not 0 < port < 65536:
        raise ValueError(f"bad port in {link!r}")
    tls = scheme == INVITE_SCHEME_TLS
    if pin_text is not None and not tls:
        raise ValueError(f"a pin needs a {INVITE_SCHEME_TLS}:// link: {link!r}")
    code = None
    if code_text is not None:
        try:
            code = room_code(code_text)
        except ProtocolError as exc:
            raise ValueError(str(exc)) from None
    pin = None if pin_text is None else normalise_pin(pin_text)
    return InviteLink(host, port, code, tls, pin)


def parse_invite(link: str) -> tuple[str, int, str]:
    """``(host, port, code)`` of a plain invite link; ``ValueError`` if it is not one.

    A ``mineduels://`` link is refused here (its caller would connect without TLS): use :func:`parse_link`.
    """
    parsed = parse_link(link)
    if parsed.tls:
        raise ValueError(f"a {INVITE_SCHEME_TLS}:// link needs TLS: use parse_link: {link!r}")
    if parsed.code is None:
        raise ValueError(f"not an invite link (no room): {link!r}")
    return parsed.host, parsed.port, parsed.code


# Message constructors (server side) -------------------------------------------------------


def error(code: str, message: str, rid: str | int | None = None, request: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": ServerType.ERROR.value, "code": str(code), "message": message}
    if request is not None:
        out["request"] = request
    if rid is not None:
        out["id"] = rid
    return out


def cell_json(c: int) -> list[int]:
    return list(divmod(c, COLS))


# Board layers ------------------------------------------------------------------------------
# The server builds two ``state`` messages after every accepted action, so a layer is not
# spelled cell by cell: each row of 8 cells is one byte of a mask, and a table built once here
# turns the byte (or a pair of bytes, as a base-3 number) into the row's 8-character string.
# The strings are shared, not built per message. benchmarks/bench_views.py measures this
# against the per-cell loops it replaced; tests/test_views_fast.py checks the two agree.

_ROW_SLICES = tuple(slice(s, s + COLS) for s in range(0, CELLS, COLS))


def _spelled_rows(symbols: str) -> tuple[str, ...]:
    """Entry ``i``: the row whose cell ``k`` is ``symbols[digit k of i]`` in base ``len(symbols)``."""
    rows = [""]
    for _ in range(COLS):  # cell k appended: its digit is worth len(rows) == base**k
        rows = [row + symbol for symbol in symbols for row in rows]
    return tuple(rows)


_ROW_X = _spelled_rows(".x")
"""256 rows: ``x`` where the byte has a bit."""

_ROW_MO = _spelled_rows(".om")
"""6561 rows (3**8, about 0.4 MB): base-3 digit 2 ``m``, 1 ``o``, 0 ``.``."""

def _byte_sums(weights: list[int]) -> tuple[int, ...]:
    """Entry ``byte``: the sum of ``weights[i]`` over the bits ``i`` of ``byte``."""
    sums = [0]
    for weight in weights:  # bit i added: the entries with it are the second half
        sums += [v + weight for v in sums]
    return tuple(sums)


_BASE3 = _byte_sums([3**i for i in range(COLS)])
"""A byte read as base-3 digits: bit ``i`` becomes digit ``i`` = 1."""

_BASE3_TWICE = tuple(2 * v for v in _BASE3)


def _rows(text: str) -> list[str]:
    """A 64-character string, cell 0 first, cut into its 8 rows."""
    return list(map(text.__getitem__, _ROW_SLICES))


def _layer(mask: int) -> list[str]:
    """The rows of one mask: ``x`` on its cells, ``.`` elsewhere."""
    x = _ROW_X
    return [
        x[mask & 255], x[mask >> 8 & 255], x[mask >> 16 & 255], x[mask >> 24 & 255],
        x[mask >> 32 & 255], x[mask >> 40 & 255], x[mask >> 48 & 255], x[mask >> 56 & 255],
    ]


def _mo_layer(m: int, o: int) -> list[str]:
    """The rows of two disjoint masks: ``m`` on the cells of ``m``, ``o`` on those of ``o``.

    Row ``r`` is entry ``2 * base3(byte r of m) + base3(byte r of o)`` of :data:`_ROW_MO`
    (written out: a comprehension over the 8 rows costs a third more).
    """
    row, m3, o3 = _ROW_MO, _BASE3_TWICE, _BASE3
    return [
        row[m3[m & 255] + o3[o & 255]], row[m3[m >> 8 & 255] + o3[o >> 8 & 255]],
        row[m3[m >> 16 & 255] + o3[o >> 16 & 255]], row[m3[m >> 24 & 255] + o3[o >> 24 & 255]],
        row[m3[m >> 32 & 255] + o3[o >> 32 & 255]], row[m3[m >> 40 & 255] + o3[o >> 40 & 255]],
        row[m3[m >> 48 & 255] + o3[o >> 48 & 255]], row[m3[m >> 56 & 255] + o3[o >> 56 & 255]],
    ]


_NUMBER_BYTES = struct.Struct(f"{CELLS}b")
_NUMBER_CHARS = bytes.maketrans(bytes(range(256)), b"0123456789" + bytes(range(10, 128)) + b"." * 128)
"""Byte ``n`` (0-9) to the digit ``n``, a negative byte (-1 closed) to ``.``."""

_numbers_memo: tuple[tuple[int, ...], list[str]] = ((), [])
"""The last ``numbers`` and their rows: the other seat's view, and every action that opens no
cell and plants no mine, have the same numbers (compared by value, so it is only a cache)."""


def _number_rows(numbers: tuple[int, ...]) -> list[str]:
    """``.`` for a closed cell (``-1``), the digit of an open one; a fresh list each call."""
    global _numbers_memo
    memo = _numbers_memo
    if numbers == memo[0]:
        return memo[1].copy()
    text = _NUMBER_BYTES.pack(*numbers).translate(_NUMBER_CHARS).decode("ascii")
    rows = list(map(text.__getitem__, _ROW_SLICES))
    _numbers_memo = (tuple(numbers), rows)
    return rows.copy()


def board_json(view: SeatView) -> dict[str, list[str]]:
    """The seat-relative board: four layers of 8 strings of 8 characters (row 0 first).

    ``numbers`` ``.`` closed, ``0``–``8`` open (B4); ``opened_by`` ``m`` me / ``o`` opponent
    (B3); ``markers`` ``m`` mine / ``o`` the opponent's; ``my_mines`` ``x`` my own mines.
    """
    revealed = view.revealed
    by_me = view.revealed_by_me & revealed
    mine = view.my_markers
    return {
        "numbers": _number_rows(view.numbers),
        "opened_by": _mo_layer(by_me, revealed & ~by_me),
        "markers": _mo_layer(mine, view.opponent_markers & ~mine),
        "my_mines": _layer(view.my_mines),
    }


def relative_seat(seat: int | None, me: int) -> str | None:
    """``"me"``/``"opponent"`` for a record seat, ``None`` for none."""
    if seat is None:
        return None
    return "me" if seat == me else "opponent"


def outcome_json(outcome: Outcome | None, me: int) -> dict[str, Any] | None:
    """Seat-relative result: ``outcome`` win/loss/draw/void, ``reason``, ``scores``."""
    if outcome is None:
        return None
    if outcome.reason.value == "void":
        result = "void"
    elif outcome.winner is None:
        result = "draw"
    else:
        result = "win" if outcome.winner == me else "loss"
    scores = None
    if outcome.scores is not None:
        scores = {"me": outcome.scores[me], "opponent": outcome.scores[1 - me]}
    return {
        "outcome": result,
        "winner": relative_seat(outcome.winner, me),
        "reason": outcome.reason.value,
        "scores": scores,
    }


def deadline_json(deadline: float | None, now: float) -> dict[str, float] | None:
    if deadline is None:
        return None
    return {"at": round(deadline, 3), "left": round(max(0.0, deadline - now), 3)}


def state_message(
    view: SeatView,
    *,
    match_id: str,
    seq: int,
    now: float,
    transcript: str,
    events: list[dict[str, Any]],
) -> dict[str, Any]:
    """The ``state`` message for one seat, built only from that seat's view (V2, V4).

    Two per accepted action: :func:`relative_seat` and :func:`deadline_json` are written out
    here, and ``_value_`` is the plain ``str`` that ``.value`` returns, without the property.
    """
    me = view.seat
    to_move = view.to_move
    deadline = view.deadline
    outcome = view.outcome
    return {
        "type": _STATE,
        "match_id": match_id,
        "seq": seq,
        "seat": me,
        "phase": view.phase._value_,
        "to_move": None if to_move is None else "me" if to_move == me else "opponent",
        "turn": view.turn,
        "quota_left": view.quota_left,
        "deadline": None if deadline is None else {
            "at": round(deadline, 3), "left": round(max(0.0, deadline - now), 3)
        },
        "server_time": round(now, 3),
        "board": board_json(view),
        "transcript": transcript,
        "events": events,
        "result": None if outcome is None else outcome_json(outcome, me),
    }


_STATE = ServerType.STATE.value


def reveal_json(reveal: FinalReveal, me: int) -> dict[str, Any]:
    """O13, seat-relative: every mine with its owner, overlaps, each marker right or wrong.

    Sent once per seat at the end of a match. ``markers`` is spelled like the board's; the
    other two layers are octal digits (one per cell, see :func:`_octal`) and ``str.translate``.
    """
    op = 1 - me
    mine_me, mine_op = reveal.mines[me], reveal.mines[op]
    marker_me = reveal.markers[me]
    marker_op = reveal.markers[op] & ~marker_me  # a cell shows its own seat's marker first
    marked = marker_me | marker_op
    right = (marker_me & reveal.correct_markers[me]) | (marker_op & reveal.correct_markers[op])
    return {
        "mines": _rows(format(_octal(mine_me) + 2 * _octal(mine_op), "064o").translate(_MINE_DIGITS)),
        "markers": _mo_layer(marker_me, marker_op),
        "marker_correct": _rows(format(_octal(marked) + _octal(right), "064o").translate(_CORRECT_DIGITS)),
        "ko_cell": cell_json(reveal.ko_cell) if reveal.ko_cell is not None else None,
    }


_REVERSED_OCTAL = _byte_sums([1 << 3 * (COLS - 1 - i) for i in range(COLS)])
_MINE_DIGITS = str.maketrans("0123", ".mox")
_CORRECT_DIGITS = str.maketrans("012", ".ny")


def _octal(mask: int) -> int:
    """``mask`` with cell ``c`` as octal digit ``63 - c``: ``format(.., "064o")`` lists cell 0 first."""
    t = _REVERSED_OCTAL
    return (
        t[mask & 255] << 168 | t[mask >> 8 & 255] << 144 | t[mask >> 16 & 255] << 120
        | t[mask >> 24 & 255] << 96 | t[mask >> 32 & 255] << 72 | t[mask >> 40 & 255] << 48
        | t[mask >> 48 & 255] << 24 | t[mask >> 56 & 255]
    )


# Reading server messages (client side) ----------------------------------------------------


def _mask(rows: list[str], chars: str) -> int:
    mask = 0
    for r, line in enumerate(rows):
        for c, ch in enumerate(line):
            if ch in chars:
                mask |= 1 << (r * COLS + c)
    return mask


def view_from_state(msg: Mapping[str, Any]) -> SeatView:
    """Rebuild the engine's :class:`SeatView` from a ``state`` message (for bots and the CPU AI)."""
    me = msg["seat"]
    board = msg["board"]
    numbers = tuple(-1 if ch == "." else int(ch) for line in board["numbers"] for ch in line)
    to_move = msg["to_move"]
    result = msg.get("result")
    outcome = None
    if result is not None:
        from mineduel.shared.rules.engine import Reason

        winner_rel = result.get("winner")
        winner = None if winner_rel is None else (me if winner_rel == "me" else 1 - me)
        scores = result.get("scores")
        outcome = Outcome(
            winner,
            Reason(result["reason"]),
            None if scores is None else ((scores["me"], scores["opponent"]) if me == 0 else (scores["opponent"], scores["me"])),
        )
    deadline = msg.get("deadline")
    return SeatView(
        seat=me,
        variant=Variant.ONLINE,
        phase=Phase(msg["phase"]),
        to_move=None if to_move is None else (me if to_move == "me" else 1 - me),
        turn=msg["turn"],
        revealed=_mask(board["numbers"], "012345678"),
        revealed_by_me=_mask(board["opened_by"], "m"),
        numbers=numbers,
        my_mines=_mask(board["my_mines"], "x"),
        my_markers=_mask(board["markers"], "m"),
        opponent_markers=_mask(board["markers"], "o"),
        quota_left=msg["quota_left"],
        outcome=outcome,
        deadline=None if deadline is None else deadline["at"],
    )


@dataclass(frozen=True, slots=True)
class Move:
    """A request a seat may send for its view; :meth:`message` is the wire form."""

    type: str
    cell: int | None = None

    def message(self, **extra: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        if self.cell is not None:
            out["cell"] = cell_json(self.cell)
        out.update(extra)
        return out


def legal_moves(view: SeatView) -> list[Move]:
    """Every move the rules allow ``view``'s seat right now, from its view alone (for bots).

    An explore may still end in a KO: the opponent's mines are not in the view. The cells are
    :meth:`SeatView.targets`, the one definition of each mode's legal targets.
    """
    if view.to_move != view.seat:
        return []
    out: list[Move] = []
    for kind in (ActionType.EXPLORE, ActionType.PLANT, ActionType.FLAG, ActionType.UNFLAG):
        mask = view.targets(kind)
        out += [Move(kind.value, c) for c in range(CELLS) if mask >> c & 1]
    if view.phase is Phase.END_WAIT:
        out.append(Move("end_turn"))
    return out


def hello(client: str = "mineduel-bot/1") -> dict[str, Any]:
    """The first message a client sends."""
    return {"type": ClientType.HELLO.value, "protocol": PROTOCOL_VERSION, "client": client}
