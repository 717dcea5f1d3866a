"""The words of the wire protocol (docs/PROTOCOL.md): its version, ports, timings and limits,
and every message type and error code, as the one list both ends use."""

from __future__ import annotations

from enum import StrEnum

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

LIVE_ROOMS_MAX = 20
"""At most this many rooms in a ``live_rooms`` reply (PROTOCOL.md §16), the most recently started."""

INVITE_SCHEME = "mineduel"
"""Invite links look like ``mineduel://HOST:PORT/join/CODE`` and identify the room only (O1)."""

INVITE_SCHEME_TLS = "mineduels"
"""``mineduels://HOST:PORT/join/CODE[?pin=SHA256HEX]``: the same over TLS (PROTOCOL.md §2)."""


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
    SPECTATE = "spectate"  # watch a room without a seat (PROTOCOL.md §16)
    IDENTIFY = "identify"  # §17: the player's key and name
    RENAME = "rename"  # §17
    QUICK_MATCH = "quick_match"  # §17: join the quick-match queue
    LEAVE_QUEUE = "leave_queue"  # §17
    GET_PROFILE = "get_profile"  # §17
    GET_LEADERBOARD = "get_leaderboard"  # §17
    LIVE_ROOMS = "live_rooms"  # the listed rooms with a match to watch now (§16)
    SET_SPECTATORS = "set_spectators"  # §16: the room's creator lets others watch it, or not


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
    SPECTATE_STATE = "spectate_state"  # a spectator's public view of a room (§16)
    PLAYER = "player"  # §17: who this connection is
    QUEUE = "queue"  # §17: waiting in the quick-match queue, or out of it
    MATCHED = "matched"  # §17: an opponent was found, a room made
    PROFILE = "profile"  # §17
    LEADERBOARD = "leaderboard"  # §17
    LIVE_ROOMS = "live_rooms"  # the reply to live_rooms (§16)
    MOVED = "moved"  # another node of the cluster serves the room: reconnect there (§18)


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
    SPECTATING_OFF = "spectating_off"  # spectate: the room's host turned spectating off (§16)
    TOO_MANY_SPECTATORS = "too_many_spectators"  # spectate: the room's or the address's limit (§16)
    NOT_HOST = "not_host"  # set_spectators: only the room's creator, never in a quick-match room (§16)
    SPECTATOR = "spectator"  # a seat request (or create/join/resume) from a watching connection (§16)
    IDENTIFY_REQUIRED = "identify_required"  # §17: quick match, a rated room, rename: identify first
    ALREADY_IDENTIFIED = "already_identified"  # §17: identify again with another key
    BAD_NAME = "bad_name"  # §17: empty, too long, control characters or on the server's deny list
    TOO_MANY_PLAYERS = "too_many_players"  # §17: this address identified or made new players too often
    ALREADY_QUEUED = "already_queued"  # §17
    NOT_QUEUED = "not_queued"  # §17


ACTION_TYPES = frozenset(
    {ClientType.EXPLORE, ClientType.PLANT, ClientType.FLAG, ClientType.UNFLAG, ClientType.END_TURN}
)
CELL_TYPES = frozenset({ClientType.EXPLORE, ClientType.PLANT, ClientType.FLAG, ClientType.UNFLAG})
