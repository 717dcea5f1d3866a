"""The online session token in the user's data folder (O12, O16).

The server gives a seat's token once (``room_created`` / ``joined``); with it the client comes back
after a drop or a restart (``resume``). It is kept in ``<user data folder>/online-session.json``
together with the server address, the room code and whether a match was running, so a client
restarted within the grace period resumes by itself. The file is written atomically (a temporary
file renamed over the old one) and never holds anything but what is needed to resume. The invite
link never carries the token (O1).

If the folder cannot be written, :meth:`TokenStore.available` says so and the online screen
explains that online play and resuming are unavailable, offering CPU play instead (O16).
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from mineduel.client.localfiles import NOTHING, flag, integer, number, read_json, text
from mineduel.client.settings import default_data_dir
from mineduel.shared.wire.links import normalise_pin
from mineduel.shared.wire.names import ROOM_CODE_ALPHABET, ROOM_CODE_LENGTH

log = logging.getLogger(__name__)

FILE_NAME = "online-session.json"
VERSION = 1
_TOKEN = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class SavedSession:
    """Where a seat is and the secret that proves it is ours."""

    host: str
    port: int
    room: str
    token: str
    playing: bool = False  # a match was in progress when this was last written
    saved_at: float = 0.0  # wall clock, for the record only (the server decides what is late)
    tls: bool = False  # the server is reached over TLS (a mineduels:// link) ...
    pin: str | None = None  # ... accepting only the certificate with this SHA-256
    created: bool = False  # this seat created its room: its waiting room offers set_spectators (PROTOCOL.md §16)

    def with_playing(self, playing: bool, saved_at: float) -> SavedSession:
        return replace(self, playing=playing, saved_at=saved_at)


class TokenStore:
    """Loads, saves and forgets the one :class:`SavedSession` of this user."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = default_data_dir() if folder is None else Path(folder)
        self.path = self.folder / FILE_NAME

    def available(self) -> bool:
        """Whether a token can be stored here: the folder exists (or can be made) and takes a file."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".probe-", suffix=".tmp", dir=self.folder)
            os.close(fd)
            os.unlink(tmp)
        except OSError as exc:
            log.warning("tokens: %s cannot be written (%s): online play is unavailable", self.folder, exc)
            return False
        return True

    def load(self) -> SavedSession | None:
        """The saved session, or ``None`` when there is none or it makes no sense (logged)."""
        data = read_json(self.path, "tokens")  # any file at all: a session, or None and one log line
        if data is NOTHING:
            return None
        if not isinstance(data, dict):
            log.warning("tokens: %s does not hold a session", self.path)
            return None
        try:
            pin = data.get("pin")
            session = SavedSession(
                host=text(data, "host"),
                port=integer(data, "port", 1, 65535),
                room=text(data, "room", limit=ROOM_CODE_LENGTH),
                token=text(data, "token", limit=64),
                playing=flag(data, "playing", False),
                saved_at=number(data, "saved_at", 0.0),
                tls=flag(data, "tls", False),
                pin=None if pin is None else normalise_pin(text(data, "pin", limit=200)),
                created=flag(data, "created", False),
            )
        except ValueError as exc:
            log.warning("tokens: %s does not hold a session (%s)", self.path, exc)
            return None
        if (_TOKEN.fullmatch(session.token) is None or not session.host
                or len(session.room) != ROOM_CODE_LENGTH or not set(session.room) <= set(ROOM_CODE_ALPHABET)):
            log.warning("tokens: %s holds a malformed session", self.path)
            return None
        return session

    def save(self, session: SavedSession) -> bool:
        """Write ``session`` atomically; ``False`` (logged) when it cannot be stored."""
        payload = json.dumps({"version": VERSION, **asdict(session)}, indent=1)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".session-", suffix=".tmp", dir=self.folder)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write(payload)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.chmod(tmp, 0o600)
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            log.warning("tokens: cannot save %s (%s)", self.path, exc)
            return False
        return True

    def clear(self) -> None:
        """Forget the session (left the room, or the server no longer knows it)."""
        try:
            self.path.unlink(missing_ok=True)
        except OSError as exc:
            log.warning("tokens: cannot remove %s (%s)", self.path, exc)
