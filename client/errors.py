"""Server error codes as the screens word them: one catalog key per code (``online.error.*``).

Kept apart from the session so the match (a refusal that is not a rule) and the lobby (a refused
request) name a code the same way.
"""

from __future__ import annotations

from mineduel.shared.wire.names import ErrorCode

# Server error codes with their own wording; any other code gets online.error.other.
ERROR_KEYS: dict[str, str] = {
    ErrorCode.ROOM_NOT_FOUND: "online.room_not_found",
    ErrorCode.ROOM_FULL: "online.room_full",
    ErrorCode.UNSUPPORTED_PROTOCOL: "online.protocol_mismatch",
    ErrorCode.TOO_MANY_ATTEMPTS: "online.error.too_many_attempts",
    ErrorCode.TOO_MANY_ROOMS: "online.error.too_many_rooms",
    ErrorCode.TOO_MANY_CONNECTIONS: "online.error.too_many_connections",
    ErrorCode.BAD_TOKEN: "online.error.bad_token",
    ErrorCode.OPPONENT_MISSING: "online.error.opponent_missing",
    ErrorCode.GRACE_EXPIRED: "online.error.grace_expired",
    ErrorCode.RATE_LIMITED: "online.error.rate_limited",
    ErrorCode.INTERNAL_ERROR: "online.error.internal_error",
    ErrorCode.STORAGE_UNAVAILABLE: "online.error.storage_unavailable",
    ErrorCode.REPLACED: "online.error.replaced",
    ErrorCode.MATCH_RUNNING: "online.error.match_running",
    ErrorCode.NOT_HOST: "watch.error.not_host",  # §16: set_spectators from the joiner or in a quick room
    ErrorCode.IDENTIFY_REQUIRED: "player.error.identify_required",  # §17: a rated room, quick match, rename
    ErrorCode.TOO_MANY_PLAYERS: "player.error.too_many_players",
    ErrorCode.BAD_NAME: "player.error.bad_name",
}


def error_key(code: str) -> str:
    """The catalog key for a server error ``code`` (unknown codes: ``online.error.other``)."""
    return ERROR_KEYS.get(code, "online.error.other")
