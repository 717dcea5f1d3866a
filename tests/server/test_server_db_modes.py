"""Issue 14: every server database is readable by its owner only (docs/SECURITY.md).

The database holds each running match's server seed, planted mines and salts. Whenever the
server creates it — a dedicated server (``--db`` or the default path) or the game's *Host on this
computer* (``host_server``) — the file and SQLite's companions (``-wal``, ``-shm``,
``-journal``) are 0600 and every folder the server had to create is 0700, whatever the umask.
Modes are read with ``os.stat``, which means the same as root (no skip).
"""

from __future__ import annotations

import os
import sqlite3
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_twisted

from mineduel.server.client import host_server
from mineduel.server.config import Config
from mineduel.server.service import open_storage
from mineduel.server.storage import SQLiteStorage, Write

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture(params=[0o022, 0o000], ids=["umask022", "umask000"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """A permissive umask: the modes must come from the server, not from the environment."""
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def _files_of(db: Path) -> list[Path]:
    return sorted(p for p in db.parent.iterdir() if p.name.startswith(db.name))


def _check_private(db: Path, made: list[Path]) -> None:
    files = _files_of(db)
    names = {p.name[len(db.name):] for p in files}
    assert {"", "-wal", "-shm"} <= names, names  # WAL mode: the companions exist while open
    for p in files:
        assert mode(p) == 0o600, f"{p}: {oct(mode(p))}"
    for folder in made:
        assert mode(folder) == 0o700, f"{folder}: {oct(mode(folder))}"


def test_sqlite_storage_creates_its_file_0600_and_its_folders_0700(tmp_path: Path, umask: int) -> None:
    db = tmp_path / "new" / "deeper" / "server.sqlite3"
    storage = SQLiteStorage(db)
    storage.commit(Write(rooms={"ABC234": {"match": None}}))
    _check_private(db, [tmp_path / "new", tmp_path / "new" / "deeper"])
    storage.close()
    # A rollback journal (another program opening it in the default journal mode) follows the file too.
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("PRAGMA journal_mode=DELETE")
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO meta VALUES ('probe', 'x')")
    journal = Path(f"{db}-journal")
    assert journal.exists() and mode(journal) == 0o600
    other.execute("ROLLBACK")
    other.close()


def test_an_existing_database_keeps_its_mode(tmp_path: Path) -> None:
    """Only what the server creates is made private: an operator's own file and folder are kept."""
    db = tmp_path / "mine.sqlite3"
    db.touch()
    os.chmod(db, 0o640)
    SQLiteStorage(db).close()
    assert mode(db) == 0o640


def test_dedicated_server_default_path_is_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, umask: int) -> None:
    """``mine-duel-server`` without ``--db``: the user data folder (platformdirs) is made 0700."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    storage = open_storage(Config())
    db = Path(storage.path)  # type: ignore[attr-defined]
    assert db.is_relative_to(tmp_path / "xdg")
    storage.commit(Write(meta={"probe": "1"}))
    _check_private(db, [tmp_path / "xdg", db.parent])
    storage.close()


def test_dedicated_server_db_option_is_private(tmp_path: Path, umask: int) -> None:
    db = tmp_path / "srv" / "rooms.sqlite3"
    storage = open_storage(Config(db=str(db)))
    storage.commit(Write(meta={"probe": "1"}))
    _check_private(db, [tmp_path / "srv"])
    storage.close()


@pytest_twisted.ensureDeferred
async def test_host_on_this_computer_database_is_private(tmp_path: Path, umask: int) -> None:
    """The game's *Host on this computer* (``host_server``): the friend's mines are in this file."""
    from twisted.internet import reactor

    db = tmp_path / "hosting" / "mineduel-server.sqlite3"
    handle = host_server(reactor, host="127.0.0.1", port=0, udp_port=None, db=str(db))
    try:
        _check_private(db, [tmp_path / "hosting"])
    finally:
        await handle.stop()
    for p in _files_of(db):
        assert mode(p) == 0o600
