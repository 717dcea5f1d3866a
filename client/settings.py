"""Per-user settings (language U5, player name, sound, tutorial progress, hints) in the platform's config folder.

A missing file means defaults. A file that cannot be read or parsed, or holds values that make no
sense, also means defaults — with a note in the log, never a crash. Saving writes a temporary file
and renames it over the old one, so a full disk cannot leave half a settings file behind; a failed
save is logged and reported to the caller as ``False``.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import platformdirs

from mineduel.client.i18n import LANGUAGES
from mineduel.client.localfiles import NOTHING, preview, read_json
from mineduel.shared.wire import player_names
from mineduel.shared.wire.player_names import NameRule

log = logging.getLogger(__name__)

APP_NAME = "mine-duel"
FILE_NAME = "settings.json"
VERSION = 1


def default_config_dir() -> Path:
    """The per-user config folder (e.g. ``~/.config/mine-duel`` on Linux)."""
    return platformdirs.user_config_path(APP_NAME, appauthor=False)


def default_data_dir() -> Path:
    """The per-user data folder (e.g. ``~/.local/share/mine-duel``): saved match records."""
    return platformdirs.user_data_path(APP_NAME, appauthor=False)


NAME_MAX = player_names.NAME_MAX  # characters of a player name (PROTOCOL.md §17, the same bound as the server's)
TUTORIAL_STATES = ("unseen", "skipped", "done")  # or "step-N": stopped at step N, resumable


@dataclass(frozen=True, slots=True)
class Settings:
    """What the client remembers between runs.

    ``language`` ``None``: ask first (U1). ``player_name`` ``None``: ask on the first online use.
    ``sound_volume`` is 0.0–1.0 and kept while muted, so unmuting restores it. ``tutorial`` is
    one of :data:`TUTORIAL_STATES` or ``"step-N"``. ``hints``: a Hint button (and H) in CPU matches.
    """

    language: str | None = None
    player_name: str | None = None
    sound_volume: float = 0.7
    sound_muted: bool = False
    tutorial: str = "unseen"
    hints: bool = False  # CPU matches offer Hint (issue 18 item 4); off until the player turns it on
    # Rooms this player creates let anyone with the code watch (§16). Remembered: a player who turned
    # it off for privacy would otherwise be watched again, unasked, in the next room.
    allow_watch: bool = True


def player_name_problem(value: str) -> NameRule | None:
    """Which of the server's name rules (PROTOCOL.md §17, ``shared/wire/player_names.py``) the typed
    name breaks once kept as :func:`valid_player_name` keeps it, else ``None``: the player is told
    why in their language instead of meeting ``bad_name`` when they host or join. The server's own
    deny list is not known here (its ``bad_name`` still says so)."""
    name = _kept(value)
    if not all(ch.isprintable() for ch in name):
        return NameRule.INVISIBLE
    return player_names.length_problem(name) or player_names.character_problem(name)


def _kept(value: str) -> str:
    """A typed name as it is kept: NFC as the server keeps it, runs of spaces as one, trimmed."""
    return player_names.trimmed(" ".join(value.split()))


def valid_player_name(value: object) -> str | None:
    """``value`` as a kept name (trimmed, runs of spaces as one, 1–NAME_MAX printable characters
    that pass the server's character rules), else ``None``."""
    if not isinstance(value, str) or player_name_problem(value) is not None:
        return None
    return _kept(value)


def valid_tutorial_state(value: object) -> bool:
    if not isinstance(value, str):
        return False
    if value in TUTORIAL_STATES:
        return True
    prefix, _, number = value.partition("-")
    return prefix == "step" and number.isdigit() and len(number) <= 3


class SettingsStore:
    """Loads and saves :class:`Settings` as ``settings.json`` in ``folder``."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = default_config_dir() if folder is None else Path(folder)
        self.path = self.folder / FILE_NAME

    def load(self) -> Settings:
        """The saved settings, or defaults (logged) when the file is missing, unreadable or wrong."""
        # Any file at all (binary, cut short, nested 100,000 deep, 1e400...) is defaults and one log
        # line (localfiles.read_json), never a traceback at start.
        data = read_json(self.path, "settings")
        if data is NOTHING:
            return Settings()
        if not isinstance(data, dict):
            log.warning("settings: %s does not hold an object; using defaults", self.path)
            return Settings()
        settings = Settings()
        language = data.get("language")
        if language is not None:
            if isinstance(language, str) and language in LANGUAGES:
                settings = replace(settings, language=language)
            else:
                log.warning("settings: unknown language %s in %s; asking again", preview(language), self.path)
        # Each other field on its own: one bad value is that field's default (and a log line), not all defaults.
        if "player_name" in data and data["player_name"] is not None:
            name = valid_player_name(data["player_name"])
            if name is None:
                log.warning("settings: player name %s in %s is not usable; asking again", preview(data["player_name"]), self.path)
            else:
                settings = replace(settings, player_name=name)
        volume = data.get("sound_volume")
        if volume is not None:
            if isinstance(volume, int | float) and not isinstance(volume, bool) and 0.0 <= volume <= 1.0:
                settings = replace(settings, sound_volume=float(volume))
            else:
                log.warning("settings: sound volume %s in %s is not 0-1; using the default", preview(volume), self.path)
        muted = data.get("sound_muted")
        if muted is not None:
            if isinstance(muted, bool):
                settings = replace(settings, sound_muted=muted)
            else:
                log.warning("settings: sound_muted %s in %s is not true/false; sound stays on", preview(muted), self.path)
        tutorial = data.get("tutorial")
        if tutorial is not None:
            if valid_tutorial_state(tutorial):
                settings = replace(settings, tutorial=tutorial)
            else:
                log.warning("settings: tutorial state %s in %s is unknown; offering it again", preview(tutorial), self.path)
        hints = data.get("hints")
        if hints is not None:
            if isinstance(hints, bool):
                settings = replace(settings, hints=hints)
            else:
                log.warning("settings: hints %s in %s is not true/false; hints stay off", preview(hints), self.path)
        allow_watch = data.get("allow_watch")
        if allow_watch is not None:
            if isinstance(allow_watch, bool):
                settings = replace(settings, allow_watch=allow_watch)
            else:
                log.warning("settings: allow_watch %s in %s is not true/false; others may watch", preview(allow_watch),
                            self.path)
        return settings

    def save(self, settings: Settings) -> bool:
        """Write ``settings``; ``False`` (and a log line) when the folder cannot be written."""
        payload = json.dumps({"version": VERSION, **asdict(settings)}, ensure_ascii=False, indent=1)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".settings-", suffix=".tmp", dir=self.folder)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write(payload)
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            log.warning("settings: cannot save %s (%s)", self.path, exc)
            return False
        return True


class RunLanguageStore(SettingsStore):
    """The store of a run started with ``--lang`` over a different saved language: saving other settings
    (volume, name, tutorial progress) keeps the player's saved language instead of writing the run's
    over it; a different language the player picks in the game is saved as usual and ends the override."""

    def __init__(self, folder: Path | None, run_language: str, saved_language: str | None) -> None:
        super().__init__(folder)
        self.run_language: str | None = run_language
        self.saved_language = saved_language

    def save(self, settings: Settings) -> bool:
        if self.run_language is not None and settings.language == self.run_language:
            settings = replace(settings, language=self.saved_language)
        else:
            self.run_language = None
        return super().save(settings)
