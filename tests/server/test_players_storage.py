"""Storage of players and rated results (issue 20, contract C4): SQLite and memory alike, and the
migration of a schema 1 database file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from mineduel.server.storage import (
    SCHEMA_VERSION,
    MemoryStorage,
    PlayerRow,
    RatedResult,
    SQLiteStorage,
    Storage,
    Write,
)


def _player(n: int, rating: float, deviation: float) -> PlayerRow:
    return PlayerRow(f"{n:064x}", f"{n:016x}", f"P{n}", rating, deviation, 0.09, n, n, 0, 0, 1.0, 2.0)


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    if request.param == "sqlite":
        return SQLiteStorage(tmp_path / "p.db")
    if request.param == "postgres":  # issue 21: tests/server/conftest.py (closed after the test)
        return request.getfixturevalue("pg_storage")
    return MemoryStorage()


def test_players_round_trip_by_key_hash_and_by_id(storage: Storage) -> None:
    """A player row comes back by its key hash and by its public id; a second write replaces it."""
    p = _player(1, 1500.0, 500.0)
    storage.commit(Write(players=[p]))
    assert storage.load_player(p.key_hash) == p
    assert storage.player_by_id(p.player) == p
    assert storage.load_player("0" * 64) is None and storage.player_by_id("f" * 16) is None
    changed = PlayerRow(p.key_hash, p.player, "Renamed", 1562.5, 290.0, 0.0899, 1, 1, 0, 0, 1.0, 3.0)
    storage.commit(Write(players=[changed]))
    assert storage.load_player(p.key_hash) == changed


def test_leaderboard_ranks_only_low_deviation_by_rating_then_id(storage: Storage) -> None:
    """Only deviation <= the bound is ranked; rating descending, equal ratings by public id."""
    rows = [_player(1, 1700.0, 70.0), _player(2, 1900.0, 75.0), _player(3, 2100.0, 76.0),
            _player(4, 1700.0, 60.0), _player(5, 1500.0, 500.0)]
    storage.commit(Write(players=rows))
    board = storage.leaderboard(10, 75.0)
    assert [p.player for p in board] == [f"{2:016x}", f"{1:016x}", f"{4:016x}"]
    assert storage.leaderboard(2, 75.0) == board[:2]
    assert storage.rank_of(f"{2:016x}", 75.0) == 1
    assert storage.rank_of(f"{4:016x}", 75.0) == 3
    assert storage.rank_of(f"{3:016x}", 75.0) is None  # deviation 76: not ranked
    assert storage.rank_of("f" * 16, 75.0) is None


def test_rated_results_newest_first_and_pair_counts(storage: Storage) -> None:
    """recent_results is newest first and bounded; pair_results counts one pair since a time."""
    a, b, c = "a" * 16, "b" * 16, "c" * 16
    results = [RatedResult(f"{i:016x}", a, b if i % 2 else c, "win", 1500.0 + i, 1510.0 + i, 100.0 + i) for i in range(6)]
    storage.commit(Write(rated_results=results))
    recent = storage.recent_results(a, 4)
    assert [r.at for r in recent] == [105.0, 104.0, 103.0, 102.0]
    assert storage.recent_results(b, 5) == []
    assert storage.pair_results(a, b, 0.0) == 3
    assert storage.pair_results(a, b, 103.0) == 2  # at 103 and 105
    assert storage.pair_results(b, a, 0.0) == 0


def test_players_and_result_are_one_transaction(tmp_path: Path) -> None:
    """A failing write leaves neither the players nor the rated results (SQLite rolls back)."""
    db = SQLiteStorage(tmp_path / "t.db")
    p = _player(7, 1500.0, 500.0)
    bad = Write(players=[p], rated_results=[RatedResult("m" * 16, p.player, "x" * 16, "win", 1.0, 2.0, 3.0)],
                actions=[("m", 0, {}), ("m", 0, {})])  # the duplicate action key fails the transaction
    with pytest.raises(sqlite3.IntegrityError):
        db.commit(bad)
    assert db.load_player(p.key_hash) is None and db.recent_results(p.player, 5) == []


OLD_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE rooms (code TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE actions (match_id TEXT NOT NULL, seq INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (match_id, seq));
CREATE TABLE results (match_id TEXT PRIMARY KEY, room TEXT NOT NULL, ended REAL NOT NULL, record TEXT NOT NULL);
CREATE INDEX results_ended ON results (ended);
INSERT INTO meta VALUES ('schema', '1');
INSERT INTO meta VALUES ('clock', '1234.5');
INSERT INTO results VALUES ('00000000000000aa', 'ABCDEF', 10.0, '{"x":1}');
"""
"""A database file exactly as the schema 1 server (before issue 20) left it."""


def test_a_schema_1_file_is_migrated(tmp_path: Path) -> None:
    """A file made by the old schema opens: its data stay, the player tables appear, schema is 2;
    a file of an unknown newer schema is refused."""
    path = tmp_path / "old.db"
    con = sqlite3.connect(path)
    con.executescript(OLD_SCHEMA)
    con.commit()
    con.close()
    db = SQLiteStorage(path)
    assert SCHEMA_VERSION == "2" and db.meta("schema") == "2"
    assert db.meta("clock") == "1234.5" and db.load_result("00000000000000aa") == '{"x":1}'
    p = _player(9, 1500.0, 500.0)
    db.commit(Write(players=[p]))
    db.close()
    again = SQLiteStorage(path)
    assert again.load_player(p.key_hash) == p
    again.close()
    future = tmp_path / "future.db"
    con = sqlite3.connect(future)
    con.executescript(OLD_SCHEMA.replace("'schema', '1'", "'schema', '3'"))
    con.commit()
    con.close()
    with pytest.raises(RuntimeError, match="schema 3"):
        SQLiteStorage(future)


SCHEMA_1_FILE = Path(__file__).resolve().parents[1] / "support" / "data" / "schema1_server.sqlite3.gz"
"""A database written by the schema 1 server (server/storage.py before issue 20): a finished
match (record a6058a00581a22b2, room 965CXJ) and a room PXS27J with two seats waiting."""
WAITING_TOKEN = "39f3c3e693114351dcbed407e3e6b605b99e8306dda748a61e029a8a3f415b02"


def test_a_database_made_by_the_schema_1_server_is_migrated_and_served(tmp_path: Path) -> None:
    """The old server's file opens as schema 2: its rooms are restored and resumed, its record is
    served, and players are stored in it from then on (and again after another restart)."""
    import gzip

    from support.harness import Harness
    from support.players import identify

    path = tmp_path / "old.sqlite3"
    path.write_bytes(gzip.decompress(SCHEMA_1_FILE.read_bytes()))
    storage = SQLiteStorage(path)
    assert storage.meta("schema") == "2"
    h = Harness(storage=storage)
    h.rooms.restore_all()
    h.advance(0)
    c = h.connect()
    replies = c.send(type="resume", room="PXS27J", token=WAITING_TOKEN)
    assert replies[0]["type"] == "joined" and "rated" not in replies[1]
    assert c.send(type="get_record", match_id="a6058a00581a22b2")[0]["type"] == "record"
    player = identify(h.connect("10.0.0.9"), 1, "Ann")
    storage.close()
    again = SQLiteStorage(path)
    assert again.player_by_id(player["player"]) is not None
    again.close()
