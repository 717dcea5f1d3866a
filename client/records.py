"""Saving finished matches' records (RECORD.md) and exporting a copy where the player can find it.

Records go to ``<user data folder>/records/<name>.json``. *Export* writes a copy to the user's
Downloads folder (else Documents, else the home folder) or a folder the caller names, and says
where. Every write can fail — a full disk, a read-only or missing folder, no permission — and
then returns a :class:`WriteResult` with an error *kind* the screen turns into a clear message;
nothing here raises for an ``OSError``.
"""

from __future__ import annotations

import errno
import logging
import os
import tempfile
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import platformdirs

from mineduel.client.settings import default_data_dir

log = logging.getLogger(__name__)


class WriteError(StrEnum):
    """Why a write failed, as the player should hear it (catalog ``record.error.<kind>``)."""

    DISK_FULL = "disk_full"
    PERMISSION = "permission"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class WriteResult:
    """Where the file went, or why it did not."""

    path: Path | None
    error: WriteError | None = None
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None


def classify(exc: OSError) -> WriteError:
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
        return WriteError.DISK_FULL
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS) or isinstance(exc, PermissionError):
        return WriteError.PERMISSION
    return WriteError.OTHER


def write_new(folder: Path, stem: str, text: str) -> WriteResult:
    """Write ``text`` to ``folder/stem.json`` (``stem-2.json`` ... if taken), atomically."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{stem}.json"
        n = 2
        while target.exists():
            target = folder / f"{stem}-{n}.json"
            n += 1
        fd, tmp = tempfile.mkstemp(prefix=f".{stem}-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.write("\n")
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        kind = classify(exc)
        log.warning("records: cannot write %s/%s.json: %s (%s)", folder, stem, exc, kind)
        return WriteResult(None, kind, str(exc))
    return WriteResult(target)


def default_export_dir() -> Path:
    """Downloads if it exists, else Documents, else the home folder."""
    for getter in (platformdirs.user_downloads_path, platformdirs.user_documents_path):
        try:
            path = getter()
        except Exception:  # noqa: BLE001 - platformdirs may fail on odd systems; fall through
            continue
        if path.is_dir():
            return path
    return Path.home()


class RecordStore:
    """The records folder and the export target."""

    def __init__(self, folder: Path | None = None, export_dir: Path | None = None) -> None:
        self.folder = (default_data_dir() / "records") if folder is None else Path(folder)
        self._export_dir = export_dir

    @property
    def export_dir(self) -> Path:
        return default_export_dir() if self._export_dir is None else self._export_dir

    def save(self, stem: str, text: str) -> WriteResult:
        """Keep a finished match's record in the user's data folder."""
        return write_new(self.folder, stem, text)

    def export(self, stem: str, text: str, folder: Path | None = None) -> WriteResult:
        """Write a copy where the player can find it (Downloads / Documents / home, or ``folder``)."""
        return write_new(self.export_dir if folder is None else Path(folder), f"mine-duel-{stem}", text)
