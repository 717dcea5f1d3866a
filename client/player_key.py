"""The player's identity key (issue 20, PROTOCOL.md §17): a secret that is this player on any server.

No account, no password: on the first online use the client makes 32 random bytes (``secrets``),
written as 43 characters of URL-safe base64 without padding, and keeps them in
``<the folder of the session tokens>/player-key.json`` (the user's data folder, beside
``online-session.json``, tokens.py). The server only ever stores ``sha256(key)``; a key goes out
in ``identify`` and nowhere else — never in a link, a log line or a record.

**One key per server** [our choice]: what ``identify`` carries is not the kept key itself but
:func:`server_key` — HMAC-SHA256 of the kept key and the address the player dialled, in the same
43-character form (PROTOCOL.md §17 cannot tell the difference). Every server may be hostile: one
that learns the key it is sent can only be *this player on that server*, never on another. The
price: one server reached under two names (a LAN address and a public host name) sees two
players — use the same address. The kept key (and so an export) is the root of all of them.

The rules of the file, each because a lost key is a lost rating:

* written atomically (a temporary file renamed over the old one, fsynced), readable by this user
  only (0600);
* a file that is there but cannot be read as a key is **never** replaced silently: :meth:`KeyStore.load`
  says :attr:`KeyState.CORRUPT` and the online screen asks the player (make a new identity, which
  first moves the old file aside as ``player-key.json.damaged``, or import a key);
* a folder that cannot be written is :attr:`KeyState.UNAVAILABLE`: the player plays unrated,
  told why, and nothing is made that would be lost at exit.

A kiosk (``--kiosk``, docs/KIOSK.md) is a shared machine: there the store keeps the key in memory
only (``memory=True``) and forgets it for the next player (:meth:`KeyStore.forget`), so each visitor
is a new, provisional player and nobody inherits the last one's rating; export and import are not
offered there.

To move to another computer the player **exports** a short text (:func:`export_text`:
``MD1-`` + the key + ``-`` + 4 check characters, so a mistyped or cut copy is refused instead of
becoming a stranger's identity) and **imports** it there (:func:`parse_export`), after a
confirmation that it replaces the identity kept on that computer.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
import hmac
import json
import logging
import os
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mineduel.client.localfiles import NOTHING, read_json

log = logging.getLogger(__name__)

FILE_NAME = "player-key.json"
DAMAGED_SUFFIX = ".damaged"
VERSION = 1
KEY_BYTES = 32
KEY_CHARS = 43  # 32 bytes of base64 without its one "=" of padding
EXPORT_PREFIX = "MD1-"
CHECK_CHARS = 4
_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def new_key() -> str:
    """A fresh key: 32 bytes from ``secrets``, URL-safe base64, no padding (43 characters)."""
    return base64.urlsafe_b64encode(secrets.token_bytes(KEY_BYTES)).rstrip(b"=").decode("ascii")


def valid_key(text: object) -> bool:
    """Whether ``text`` is a key as :func:`new_key` makes them (and decodes to exactly 32 bytes)."""
    if not isinstance(text, str) or len(text) != KEY_CHARS or not set(text) <= _ALPHABET:
        return False
    try:
        raw = base64.urlsafe_b64decode(text + "=")
    except (binascii.Error, ValueError):
        return False
    return len(raw) == KEY_BYTES and base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii") == text


def server_key(key: str, host: str, port: int) -> str:
    """The key ``identify`` sends to ``host:port`` (see the module docstring): 32 bytes of
    HMAC-SHA256(kept key, "mine-duel identify 1|<host lower-cased>|<port>"), URL-safe base64."""
    label = f"mine-duel identify 1|{host.strip().strip('[]').lower()}|{int(port)}".encode()
    digest = hmac.new(key.encode("ascii"), label, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _check(key: str) -> str:
    """Four characters that change when any character of ``key`` does (a typo, a cut paste)."""
    return hashlib.sha256(("mine-duel-key:" + key).encode("ascii")).hexdigest()[:CHECK_CHARS].upper()


def export_text(key: str) -> str:
    """What the player carries to another computer: ``MD1-<key>-<check>`` (52 characters)."""
    return f"{EXPORT_PREFIX}{key}-{_check(key)}"


class BadExport(ValueError):
    """Pasted text that is not an exported key; ``reason`` is a catalog key's last part."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def parse_export(text: str) -> str:
    """The key in an exported text, forgiving spaces and line breaks a messenger may add;
    :class:`BadExport` with ``reason`` ``empty`` / ``not_a_key`` / ``typo`` otherwise."""
    compact = "".join(text.split())
    if not compact:
        raise BadExport("empty")
    if not compact.upper().startswith(EXPORT_PREFIX):
        raise BadExport("not_a_key")
    body = compact[len(EXPORT_PREFIX):]
    key, sep, check = body.rpartition("-")
    if not sep or len(check) != CHECK_CHARS or not valid_key(key):
        raise BadExport("not_a_key")
    if check.upper() != _check(key):
        raise BadExport("typo")
    return key


def fingerprint(key: str) -> str:
    """The server's public id of this key (PROTOCOL.md §17: 16 hex of sha256("player:" + sha256hex(K))),
    so the screens can name the identity (its tag is the first 4) without showing the key."""
    inner = hashlib.sha256(key.encode("ascii")).hexdigest()
    return hashlib.sha256(("player:" + inner).encode("ascii")).hexdigest()[:16]


class KeyState(enum.Enum):
    """What :meth:`KeyStore.load` found."""

    MISSING = "missing"  # no file yet: made on the first online use
    READY = "ready"
    CORRUPT = "corrupt"  # a file that is not a key: the player decides (never replaced silently)
    UNAVAILABLE = "unavailable"  # the folder cannot be read or written: unrated play only


@dataclass(frozen=True, slots=True)
class Loaded:
    state: KeyState
    key: str | None = None


class KeyStore:
    """Loads, makes, imports and (on the player's word) replaces the one key of this user."""

    def __init__(self, folder: Path, *, memory: bool = False) -> None:
        self.folder = Path(folder)
        self.path = self.folder / FILE_NAME
        self.memory = memory  # a kiosk: the key lives in this process only
        self._kept: str | None = None

    def forget(self) -> None:
        """A kiosk's next player: the in-memory key is gone (a file-backed store ignores this)."""
        self._kept = None

    def load(self) -> Loaded:
        """The kept key, or why there is none (see :class:`KeyState`); never raises, never writes."""
        if self.memory:
            return Loaded(KeyState.MISSING) if self._kept is None else Loaded(KeyState.READY, self._kept)
        try:
            exists = self.path.exists()
        except OSError as exc:
            log.warning("player key: cannot look at %s (%s)", self.folder, exc.strerror or exc)
            return Loaded(KeyState.UNAVAILABLE)
        if not exists:
            return Loaded(KeyState.MISSING)
        data = read_json(self.path, "player key")
        key = data.get("key") if isinstance(data, dict) else None
        if data is NOTHING or not valid_key(key):
            if self.path.is_file() and not os.access(self.path, os.R_OK):
                return Loaded(KeyState.UNAVAILABLE)
            log.warning("player key: %s does not hold a key; asking the player", self.path)
            return Loaded(KeyState.CORRUPT)
        assert isinstance(key, str)
        return Loaded(KeyState.READY, key)

    def ensure(self) -> Loaded:
        """The key, made and written now if there is none yet; a damaged file stays as it is."""
        loaded = self.load()
        if loaded.state is not KeyState.MISSING:
            return loaded
        key = new_key()
        if not self._write(key):
            return Loaded(KeyState.UNAVAILABLE)
        log.info("player key: a new identity was made")  # never the key itself
        return Loaded(KeyState.READY, key)

    def replace(self, key: str) -> bool:
        """Keep ``key`` instead of the current one (an import, or a new identity the player chose
        over a damaged file, which is first moved aside as ``player-key.json.damaged``)."""
        if not valid_key(key):
            raise ValueError("not a player key")
        if self.load().state is KeyState.CORRUPT:
            try:
                os.replace(self.path, self.path.with_name(FILE_NAME + DAMAGED_SUFFIX))
            except OSError as exc:
                log.warning("player key: cannot move the damaged %s aside (%s)", self.path, exc.strerror or exc)
                return False
        return self._write(key)

    def make_new(self) -> Loaded:
        """A new identity on the player's word (over a damaged file); the old one is not deleted."""
        key = new_key()
        return Loaded(KeyState.READY, key) if self.replace(key) else Loaded(KeyState.UNAVAILABLE)

    def _write(self, key: str) -> bool:
        if self.memory:
            self._kept = key
            return True
        payload = json.dumps({"version": VERSION, "key": key}, indent=1)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".player-key-", suffix=".tmp", dir=self.folder)
            try:
                os.chmod(tmp, 0o600)  # private before the secret is in it
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write(payload)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            log.warning("player key: cannot write %s (%s)", self.path, exc.strerror or exc)
            return False
        return True
