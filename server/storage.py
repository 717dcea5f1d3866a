"""Durable storage behind a small interface (docs/PROTOCOL.md, "Persistence").

The room logic talks only to :class:`Storage`; :class:`SQLiteStorage` (stdlib ``sqlite3``, WAL)
is the default and :class:`MemoryStorage` serves tests. A networked database serving several
server processes later only has to implement the same six methods (and, if it can, the two
optional ones both have: ``result_count`` and ``room_owners``, which the limits of issue 15 read
at start; without them the record count starts at 0 and pending rooms count once restored).

What is stored:

* ``rooms``   one JSON blob per room: seats (token *hashes*, names, seeds, flags), the current
  or last match's metadata (ids, secret server seed and salts, deadlines in server-clock time).
* ``actions`` one row per accepted record action, keyed by (match id, seq).
* ``results`` the finished match's full record (RECORD.md) and its end time, kept 24 h (O15).
* ``meta``    ``clock``: the last server-clock time known to be alive (written every second
  and at shutdown); schema version.
* ``players`` one row per player (issue 20, PROTOCOL.md §17): keyed by the SHA-256 of the
  player's secret key (the key itself is never stored), its public id, name and Glicko-2 rating.
* ``rated_results`` one row per player of each rated match that changed ratings: written in the
  same transaction as the match's result, so a rating change is as durable as the match.

Schema 2 added the last two tables; a schema 1 file is migrated on open (the tables are created,
nothing else changes). The player methods (``load_player`` … ``pair_results``) are part of the
interface since schema 2.

Every :meth:`Storage.commit` is one transaction: an accepted action and the room state it
leads to are on disk together, before anyone is told about them.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeAlias

import orjson

SCHEMA_VERSION = "2"
MIGRATES_FROM = frozenset({"1"})
"""Schemas an open migrates: 1 → 2 only adds the ``players`` and ``rated_results`` tables."""

Blob: TypeAlias = dict[str, Any]
"""A JSON document as storage keeps it: a room's blob, or one stored action row (a record action
with its salt and the match clock). Storage only stores and returns them; ``server/persistence.py``
and ``server/match.py`` give them meaning (docs/PROTOCOL.md §11)."""


@dataclass(frozen=True, slots=True)
class PlayerRow:
    """A player as stored (issue 20): ``key_hash`` = SHA-256 hex of the secret key, ``player`` the
    public id (16 hex); the rating is Glicko-2 (``server/glicko2.py``); times are Unix time."""

    key_hash: str
    player: str
    name: str
    rating: float = 1500.0
    deviation: float = 500.0
    volatility: float = 0.09
    games: int = 0
    wins: int = 0
    losses: int = 0
    draws: int = 0
    created: float = 0.0
    updated: float = 0.0


@dataclass(frozen=True, slots=True)
class RatedResult:
    """One player's side of a rated match that changed ratings: ``result`` ``win``/``loss``/``draw``,
    the rating before and after, ``at`` the end in Unix time."""

    match_id: str
    player: str
    opponent: str
    result: str
    before: float
    after: float
    at: float


@dataclass
class Write:
    """One atomic change: room blobs (``None`` deletes the room), new actions, results, meta,
    players (inserted or replaced by ``key_hash``) and rated results."""

    rooms: dict[str, Blob | None] = field(default_factory=dict)
    actions: list[tuple[str, int, Blob]] = field(default_factory=list)
    drop_actions: list[str] = field(default_factory=list)
    results: list[tuple[str, str, float, str]] = field(default_factory=list)
    meta: dict[str, str] = field(default_factory=dict)
    purge_results_before: float | None = None  # O15: results that ended before this go
    keep_results: int | None = None  # the store's bound: then only the newest this many results stay
    players: list[PlayerRow] = field(default_factory=list)
    rated_results: list[RatedResult] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(
            self.rooms or self.actions or self.drop_actions or self.results or self.meta
            or self.purge_results_before is not None or self.keep_results is not None
            or self.players or self.rated_results
        )


class Storage(Protocol):
    """What the room logic needs from a database."""

    def commit(self, write: Write) -> None:
        """Apply ``write`` atomically and durably, or raise and apply nothing."""

    def meta(self, key: str) -> str | None:
        """A value written with ``Write.meta``."""

    def room_codes(self) -> list[str]:
        """Every stored room code."""

    def load_room(self, code: str) -> tuple[Blob, list[Blob]] | None:
        """A room's blob and the actions of its current (or last) match, in seq order."""

    def load_result(self, match_id: str) -> str | None:
        """A finished match's record text."""

    def load_player(self, key_hash: str) -> PlayerRow | None:
        """The player whose key hashes to ``key_hash`` (issue 20)."""

    def player_by_id(self, player: str) -> PlayerRow | None:
        """The player with this public id."""

    def leaderboard(self, limit: int, max_deviation: float) -> list[PlayerRow]:
        """The ``limit`` best players whose deviation is at most ``max_deviation``: rating
        descending, then public id ascending (a stable order for equal ratings)."""

    def rank_of(self, player: str, max_deviation: float) -> int | None:
        """The player's 1-based place in that order, ``None`` if not ranked (unknown, or deviation too high)."""

    def recent_results(self, player: str, limit: int) -> list[RatedResult]:
        """The player's latest rated results, newest first (``at`` descending, then match id)."""

    def pair_results(self, player: str, opponent: str, since: float) -> int:
        """How many rated results ``player`` has against ``opponent`` with ``at >= since`` (the pair limit)."""

    def close(self) -> None:
        """Release the database."""


def _dumps(value: Any) -> str:
    """Compact JSON with sorted keys; orjson: 2.4 µs for a room blob where ``json`` took 21 µs."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


_loads = orjson.loads


def create_private(path: Path) -> None:
    """Create the database's missing folders (0700) and, if it does not exist, the database file
    itself (0600, empty: SQLite takes an empty file as an empty database): readable by its owner only.

    The database holds every running match's secrets (the server seed, the planted mines and
    their salts: docs/SECURITY.md), so nobody else on the machine may read it, hosted in the game
    or dedicated. SQLite creates its companions (``-wal``, ``-shm``, ``-journal``) with the
    database file's mode, so they are 0600 too. Folders and files that already exist are left as
    they are (the operator chose them).
    """
    missing: list[Path] = []
    folder = path.parent
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for made in reversed(missing):
        try:
            os.mkdir(made, 0o700)
        except FileExistsError:  # made meanwhile by someone else: theirs
            continue
        os.chmod(made, 0o700)  # the umask may have taken bits of the owner's
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(fd)
    os.chmod(path, 0o600)


class SQLiteStorage:
    """SQLite in WAL mode; ``synchronous=FULL`` so a commit survives power loss too."""

    def __init__(self, path: str | Path, *, synchronous: str = "FULL") -> None:
        try:
            self._open(path, synchronous)
        except (sqlite3.Error, OSError) as exc:
            raise RuntimeError(
                f"{path}: cannot open the database for writing ({exc}); check its permissions and free space"
            ) from exc

    def _open(self, path: str | Path, synchronous: str) -> None:
        if str(path) != ":memory:":
            create_private(Path(path))
        self.path = str(path)
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        if synchronous.upper() not in ("FULL", "NORMAL", "EXTRA"):
            raise ValueError(f"synchronous must be FULL, NORMAL or EXTRA, not {synchronous!r}")
        self._db.execute(f"PRAGMA synchronous={synchronous.upper()}")
        self._db.executescript(
            """
            CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS rooms (code TEXT PRIMARY KEY, data TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS actions (
                match_id TEXT NOT NULL, seq INTEGER NOT NULL, data TEXT NOT NULL,
                PRIMARY KEY (match_id, seq));
            CREATE TABLE IF NOT EXISTS results (
                match_id TEXT PRIMARY KEY, room TEXT NOT NULL, ended REAL NOT NULL,
                record TEXT NOT NULL);
            CREATE INDEX IF NOT EXISTS results_ended ON results (ended);
            CREATE TABLE IF NOT EXISTS players (
                key_hash TEXT PRIMARY KEY, player TEXT NOT NULL UNIQUE, name TEXT NOT NULL,
                rating REAL NOT NULL, deviation REAL NOT NULL, volatility REAL NOT NULL,
                games INTEGER NOT NULL, wins INTEGER NOT NULL, losses INTEGER NOT NULL,
                draws INTEGER NOT NULL, created REAL NOT NULL, updated REAL NOT NULL);
            CREATE INDEX IF NOT EXISTS players_rank ON players (rating DESC, player, deviation);
            CREATE TABLE IF NOT EXISTS rated_results (
                match_id TEXT NOT NULL, player TEXT NOT NULL, opponent TEXT NOT NULL,
                result TEXT NOT NULL, before REAL NOT NULL, after REAL NOT NULL, at REAL NOT NULL,
                PRIMARY KEY (match_id, player));
            CREATE INDEX IF NOT EXISTS rated_results_player ON rated_results (player, at);
            CREATE INDEX IF NOT EXISTS rated_results_pair ON rated_results (player, opponent, at);
            """
        )
        # Reads get a connection of their own (WAL: they see committed data only and never wait
        # for a writer), so a commit may finish on another thread while the loop reads.
        self._read = self._db
        if self.path != ":memory:":
            self._read = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        version = self.meta("schema")
        if version is not None and version != SCHEMA_VERSION and version not in MIGRATES_FROM:
            raise RuntimeError(f"{self.path}: database schema {version}, expected {SCHEMA_VERSION}")
        # A schema 1 file got its new tables from the script above: writing the version is the migration.
        # Also a write probe: a server that cannot store must not start and acknowledge moves it
        # would lose (a read-only file opens without complaint otherwise).
        self.commit(Write(meta={"schema": SCHEMA_VERSION}))

    def commit(self, write: Write) -> None:
        self.prepare(write)
        self.finish()

    def prepare(self, write: Write) -> None:
        """Open the transaction and write ``write`` into it (no sync yet); raise and undo on error."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            for key, value in write.meta.items():
                db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
            for match in write.drop_actions:
                db.execute("DELETE FROM actions WHERE match_id = ?", (match,))
            for code, blob in write.rooms.items():
                if blob is None:
                    db.execute("DELETE FROM rooms WHERE code = ?", (code,))
                else:
                    db.execute("INSERT OR REPLACE INTO rooms VALUES (?, ?)", (code, _dumps(blob)))
            db.executemany(
                "INSERT INTO actions VALUES (?, ?, ?)",
                [(m, s, _dumps(a)) for m, s, a in write.actions],
            )
            db.executemany("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?)", write.results)
            if write.purge_results_before is not None:
                db.execute("DELETE FROM results WHERE ended < ?", (write.purge_results_before,))
            if write.keep_results is not None:
                # The newest ``keep_results`` by end time stay (the index on ``ended``, walked newest first).
                db.execute(
                    "DELETE FROM results WHERE match_id IN "
                    "(SELECT match_id FROM results ORDER BY ended DESC, match_id DESC LIMIT -1 OFFSET ?)",
                    (write.keep_results,),
                )
            if write.players:
                db.executemany(
                    "INSERT OR REPLACE INTO players VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [_player_values(p) for p in write.players],
                )
            if write.rated_results:
                db.executemany(
                    "INSERT OR REPLACE INTO rated_results VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [(r.match_id, r.player, r.opponent, r.result, r.before, r.after, r.at) for r in write.rated_results],
                )
        except BaseException:
            if db.in_transaction:  # SQLite already rolled back after some errors (SQLITE_FULL)
                db.execute("ROLLBACK")
            raise

    def finish(self) -> None:
        """Commit what :meth:`prepare` wrote: the fsync. May run on another thread (the GIL is
        released while SQLite syncs), as long as nothing else uses the write connection meanwhile."""
        db = self._db
        try:
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
            raise

    def meta(self, key: str) -> str | None:
        row = self._read.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def room_codes(self) -> list[str]:
        return [r[0] for r in self._read.execute("SELECT code FROM rooms ORDER BY code")]

    def load_room(self, code: str) -> tuple[Blob, list[Blob]] | None:
        row = self._read.execute("SELECT data FROM rooms WHERE code = ?", (code,)).fetchone()
        if row is None:
            return None
        blob = _loads(row[0])
        actions: list[Blob] = []
        match = blob.get("match")
        if match is not None:
            actions = [
                _loads(r[0])
                for r in self._read.execute(
                    "SELECT data FROM actions WHERE match_id = ? ORDER BY seq", (match["id"],)
                )
            ]
        return blob, actions

    def load_result(self, match_id: str) -> str | None:
        row = self._read.execute("SELECT record FROM results WHERE match_id = ?", (match_id,)).fetchone()
        return None if row is None else row[0]

    def result_count(self) -> int:
        """How many finished matches' records are stored."""
        return int(self._read.execute("SELECT COUNT(*) FROM results").fetchone()[0])

    def room_owners(self) -> dict[str, str]:
        """Every stored room's owner tag (rooms without one are left out): read once at start,
        so the rooms an address holds are counted before its rooms are restored."""
        rows = self._read.execute("SELECT code, json_extract(data, '$.owner') FROM rooms")
        return {code: owner for code, owner in rows if isinstance(owner, str) and owner}

    def load_player(self, key_hash: str) -> PlayerRow | None:
        row = self._read.execute(f"SELECT {_PLAYER_COLUMNS} FROM players WHERE key_hash = ?", (key_hash,)).fetchone()
        return None if row is None else PlayerRow(*row)

    def player_by_id(self, player: str) -> PlayerRow | None:
        row = self._read.execute(f"SELECT {_PLAYER_COLUMNS} FROM players WHERE player = ?", (player,)).fetchone()
        return None if row is None else PlayerRow(*row)

    def leaderboard(self, limit: int, max_deviation: float) -> list[PlayerRow]:
        rows = self._read.execute(
            f"SELECT {_PLAYER_COLUMNS} FROM players WHERE deviation <= ? ORDER BY rating DESC, player LIMIT ?",
            (max_deviation, limit),
        )
        return [PlayerRow(*row) for row in rows]

    def rank_of(self, player: str, max_deviation: float) -> int | None:
        # players_rank covers the count (no row is read): 12 ms instead of 128 ms for the last of
        # 50,000 ranked players (red-team, /tmp figures in docs/SECURITY.md); Players caches it a second.
        me = self.player_by_id(player)
        if me is None or me.deviation > max_deviation:
            return None
        ahead = self._read.execute(
            "SELECT COUNT(*) FROM players WHERE deviation <= ? AND (rating > ? OR (rating = ? AND player < ?))",
            (max_deviation, me.rating, me.rating, me.player),
        ).fetchone()[0]
        return int(ahead) + 1

    def recent_results(self, player: str, limit: int) -> list[RatedResult]:
        rows = self._read.execute(
            "SELECT match_id, player, opponent, result, before, after, at FROM rated_results "
            "WHERE player = ? ORDER BY at DESC, match_id DESC LIMIT ?",
            (player, limit),
        )
        return [RatedResult(*row) for row in rows]

    def pair_results(self, player: str, opponent: str, since: float) -> int:
        row = self._read.execute(
            "SELECT COUNT(*) FROM rated_results WHERE player = ? AND opponent = ? AND at >= ?",
            (player, opponent, since),
        ).fetchone()
        return int(row[0])

    def close(self) -> None:
        if self._read is not self._db:
            self._read.close()
        self._db.close()


_PLAYER_COLUMNS = "key_hash, player, name, rating, deviation, volatility, games, wins, losses, draws, created, updated"


def _player_values(p: PlayerRow) -> tuple[object, ...]:
    return (p.key_hash, p.player, p.name, p.rating, p.deviation, p.volatility, p.games, p.wins, p.losses,
            p.draws, p.created, p.updated)


def _board_key(p: PlayerRow) -> tuple[float, str]:
    """The leaderboard's order: rating descending, then public id ascending."""
    return (-p.rating, p.player)


class MemoryStorage:
    """The same contract in memory (tests); ``fail_next`` makes the next commit raise."""

    def __init__(self) -> None:
        self.players: dict[str, PlayerRow] = {}  # by key hash
        self.rated_results: dict[tuple[str, str], RatedResult] = {}  # by (match id, player)
        self.rooms: dict[str, str] = {}
        self.actions: dict[str, dict[int, str]] = {}
        self.results: dict[str, tuple[str, float, str]] = {}
        self._meta: dict[str, str] = {}
        self.commits = 0
        self.fail_next = False

    def commit(self, write: Write) -> None:
        if self.fail_next:
            self.fail_next = False
            raise OSError("simulated storage failure")
        for m, s, _ in write.actions:
            if s in self.actions.get(m, {}) and m not in write.drop_actions:
                raise ValueError(f"duplicate action {m}/{s}")
        self._meta.update(write.meta)
        for m in write.drop_actions:
            self.actions.pop(m, None)
        for code, blob in write.rooms.items():
            if blob is None:
                self.rooms.pop(code, None)
            else:
                self.rooms[code] = _dumps(blob)
        for m, s, a in write.actions:
            self.actions.setdefault(m, {})[s] = _dumps(a)
        for match_id, room, ended, record in write.results:
            self.results[match_id] = (room, ended, record)
        if write.purge_results_before is not None:
            cutoff = write.purge_results_before
            self.results = {m: r for m, r in self.results.items() if r[1] >= cutoff}
        if write.keep_results is not None:
            newest = sorted(self.results, key=lambda m: (self.results[m][1], m), reverse=True)
            for gone in newest[write.keep_results :]:
                del self.results[gone]
        for p in write.players:
            self.players[p.key_hash] = p
        for r in write.rated_results:
            self.rated_results[(r.match_id, r.player)] = r
        self.commits += 1

    def meta(self, key: str) -> str | None:
        return self._meta.get(key)

    def room_codes(self) -> list[str]:
        return sorted(self.rooms)

    def load_room(self, code: str) -> tuple[Blob, list[Blob]] | None:
        if code not in self.rooms:
            return None
        blob = _loads(self.rooms[code])
        match = blob.get("match")
        actions = []
        if match is not None:
            stored = self.actions.get(match["id"], {})
            actions = [_loads(stored[s]) for s in sorted(stored)]
        return blob, actions

    def load_result(self, match_id: str) -> str | None:
        entry = self.results.get(match_id)
        return None if entry is None else entry[2]

    def result_count(self) -> int:
        return len(self.results)

    def room_owners(self) -> dict[str, str]:
        owners = {code: _loads(data).get("owner") for code, data in self.rooms.items()}
        return {code: owner for code, owner in owners.items() if isinstance(owner, str) and owner}

    def load_player(self, key_hash: str) -> PlayerRow | None:
        return self.players.get(key_hash)

    def player_by_id(self, player: str) -> PlayerRow | None:
        for p in self.players.values():
            if p.player == player:
                return p
        return None

    def _ranked(self, max_deviation: float) -> list[PlayerRow]:
        return sorted((p for p in self.players.values() if p.deviation <= max_deviation), key=_board_key)

    def leaderboard(self, limit: int, max_deviation: float) -> list[PlayerRow]:
        return self._ranked(max_deviation)[:limit]

    def rank_of(self, player: str, max_deviation: float) -> int | None:
        for rank, p in enumerate(self._ranked(max_deviation), 1):
            if p.player == player:
                return rank
        return None

    def recent_results(self, player: str, limit: int) -> list[RatedResult]:
        mine = [r for r in self.rated_results.values() if r.player == player]
        mine.sort(key=lambda r: (r.at, r.match_id), reverse=True)
        return mine[:limit]

    def pair_results(self, player: str, opponent: str, since: float) -> int:
        return sum(1 for r in self.rated_results.values() if r.player == player and r.opponent == opponent and r.at >= since)

    def close(self) -> None:
        pass


def check_storage(storage: object) -> Storage:
    """``storage`` typed as :class:`Storage` after a structural check (fails fast on typos)."""
    for name in ("commit", "meta", "room_codes", "load_room", "load_result", "close"):
        if not callable(getattr(storage, name, None)):
            raise TypeError(f"{type(storage).__name__} lacks Storage.{name}")
    return storage  # type: ignore[return-value]


__all__ = [
    "MemoryStorage", "PlayerRow", "RatedResult", "SQLiteStorage", "Storage", "Write", "check_storage", "create_private",
]
