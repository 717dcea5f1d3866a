"""Per-user settings (the language, U5) in the platform's config folder (platformdirs).

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


@dataclass(frozen=True, slots=True)
class Settings:
    """What the client remembers between runs. ``language`` ``None``: ask first (U1)."""

    language: str | None = None


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
