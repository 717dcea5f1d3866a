"""PostgreSQL storage (issue 21): the :class:`~mineduel.server.storage.Storage` interface on a
database that several server processes ("nodes") can share (docs/CLUSTER.md).

Chosen by ``mine-duel-server --db postgresql://…`` (psycopg 3: ``pip install 'mine-duel[postgres]'``).
It keeps every promise of :class:`~mineduel.server.storage.SQLiteStorage` — each
:meth:`PostgresStorage.commit` is one transaction (one per group-commit batch), committed with
PostgreSQL's defaults (``synchronous_commit=on``: on disk before the server is told) — and adds
the base of the clustered mode:

* ``nodes``: one lease per node, "now + 5 s" on the *database's* clock (no node's clock is
  trusted), renewed by every commit (the server commits its clock every second) and ended at
  once by a clean :meth:`close`.
* ``rooms.owner`` / ``rooms.epoch``: the node serving a room and how many times it changed
  hands. A node takes a room (:meth:`load_room`: epoch + 1) only if nobody owns it, it owned it
  itself (a restart under the same ``--node``), or its owner's lease has run out. Every commit
  first locks every room it touches and checks that this node still owns it *at the epoch it took
  it*; if not, the whole commit is rolled back and :class:`~mineduel.server.cluster.OwnershipLost`
  raised, so a node that was paused while another took its rooms can never store — and so never
  show — anything for them (nothing is shown before its commit, server/commits.py).

The usual commit (actions, the clock, rooms this node holds) is one statement in autocommit:
one round trip, which is what the server's loop waits for when the database is on another
machine; its fence is the ``mineduel_fence`` function, raising inside the statement.

Actions carry a match id, not a room code: the storage remembers which room each match it loaded
or wrote belongs to, so an action batch is fenced by its room's epoch too; an action for a match
this node never saw is refused.

The schema is created and migrated by the server (``MIGRATIONS``, its version in ``meta``
under ``schema``), in one transaction under an advisory lock, so nodes starting together
migrate once. Blobs are stored as ``text`` exactly as SQLite stores them (compact sorted JSON):
byte-for-byte the same rows, no JSON parsing in the database on the hot path.

A lost connection fails the commit it interrupts (nothing of it is applied, or — when the
``COMMIT`` itself was cut — the server reloads what the database has, never showing the
difference: server/session.py ``_commit_failed``); the next call opens a new connection.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from mineduel.server.cluster import LEASE_SECONDS, OwnershipLost
from mineduel.server.cluster_pg import PgNode
from mineduel.server.limits import OWNER_KEY
from mineduel.server.storage import Blob, PlayerRow, RatedResult, Write, _dumps, _loads

Connection = psycopg.Connection[tuple[Any, ...]]

_MIGRATION_LOCK = 0x6D696E6564756531  # "mineduel1": pg_advisory_xact_lock key of schema changes

MIGRATIONS: tuple[str, ...] = (
    # 1: the tables of SQLiteStorage's schema 1.
    """
    CREATE TABLE IF NOT EXISTS rooms (code text PRIMARY KEY, data text NOT NULL);
    CREATE TABLE IF NOT EXISTS actions (
        match_id text NOT NULL, seq integer NOT NULL, data text NOT NULL, PRIMARY KEY (match_id, seq));
    CREATE TABLE IF NOT EXISTS results (
        match_id text PRIMARY KEY, room text NOT NULL, ended double precision NOT NULL, record text NOT NULL);
    CREATE INDEX IF NOT EXISTS results_ended ON results (ended);
    """,
    # 2: ownership (issue 21): node leases, each room's owner and epoch. Rooms stored before have
    # no owner (NULL): the first node to load one takes it.
    """
    CREATE TABLE IF NOT EXISTS nodes (
        node text PRIMARY KEY, lease timestamptz NOT NULL, started timestamptz NOT NULL);
    ALTER TABLE rooms ADD COLUMN IF NOT EXISTS owner text;
    ALTER TABLE rooms ADD COLUMN IF NOT EXISTS epoch bigint NOT NULL DEFAULT 0;
    CREATE INDEX IF NOT EXISTS rooms_owner ON rooms (owner);
    """,
    # 3: players and rated results (issue 20: SQLiteStorage's schema 2).
    """
    CREATE TABLE IF NOT EXISTS players (
        key_hash text PRIMARY KEY, player text NOT NULL UNIQUE, name text NOT NULL,
        rating double precision NOT NULL, deviation double precision NOT NULL,
        volatility double precision NOT NULL, games integer NOT NULL, wins integer NOT NULL,
        losses integer NOT NULL, draws integer NOT NULL, created double precision NOT NULL,
        updated double precision NOT NULL);
    CREATE INDEX IF NOT EXISTS players_board ON players (rating DESC, player COLLATE "C");
    CREATE TABLE IF NOT EXISTS rated_results (
        match_id text NOT NULL, player text NOT NULL, opponent text NOT NULL, result text NOT NULL,
        before double precision NOT NULL, after double precision NOT NULL, at double precision NOT NULL,
        PRIMARY KEY (match_id, player));
    CREATE INDEX IF NOT EXISTS rated_results_player ON rated_results (player, at);
    CREATE INDEX IF NOT EXISTS rated_results_pair ON rated_results (player, opponent, at);
    """,
    # 4: the fence of a one-statement commit (PostgresStorage._commit_fast): lock the rooms, then
    # (a new snapshot: a takeover that committed meanwhile is seen) raise unless every one is
    # still this node's at the epoch it took it.
    """
    CREATE OR REPLACE FUNCTION mineduel_fence(me text, codes text[], epochs bigint[]) RETURNS integer
    LANGUAGE plpgsql VOLATILE AS $fence$
    DECLARE
        lost text;
    BEGIN
        PERFORM 1 FROM rooms WHERE code = ANY(codes) ORDER BY code FOR UPDATE;
        SELECT string_agg(h.code, ',') INTO lost
            FROM unnest(codes, epochs) AS h(code, epoch) LEFT JOIN rooms r ON r.code = h.code
            WHERE r.code IS NULL OR r.owner IS DISTINCT FROM me OR r.epoch <> h.epoch;
        IF lost IS NOT NULL THEN
            RAISE EXCEPTION 'rooms owned by another node now: %', lost USING ERRCODE = 'MD001', DETAIL = lost;
        END IF;
        RETURN cardinality(codes);
    END
    $fence$;
    """,
    # 5: the node registry and time per room (issue 21, C5): each node's public address (what a
    # ``moved`` names), its server clock at its last renewal or commit, and each room's lag (the
    # seconds of server clock it spent without an owner, given back to its players).
    """
    ALTER TABLE nodes ADD COLUMN IF NOT EXISTS host text;
    ALTER TABLE nodes ADD COLUMN IF NOT EXISTS port integer;
    ALTER TABLE nodes ADD COLUMN IF NOT EXISTS tls boolean NOT NULL DEFAULT false;
    ALTER TABLE nodes ADD COLUMN IF NOT EXISTS pin text;
    ALTER TABLE nodes ADD COLUMN IF NOT EXISTS clock double precision;
    ALTER TABLE rooms ADD COLUMN IF NOT EXISTS lag double precision NOT NULL DEFAULT 0;
    """,
    # 6: live_rooms across the cluster (issue 21, server/cluster_live.py): each node's own §16
    # list as it last shared it (JSON text, at most LIVE_ROOMS_MAX entries), read by the others.
    """
    ALTER TABLE nodes ADD COLUMN IF NOT EXISTS live text;
    """,
    # 7: the fence of step 4, planned once (issue 21, docs/PERFORMANCE.md "Cluster: the commit's
    # cost"): the server's connections plan every prepared statement once (generic plans), and
    # step 4's check, a join of the codes' unnest with rooms, then became a scan of every room at
    # every commit. Each room is now locked and read by its key, in the order step 4 locked them;
    # ``FOR UPDATE`` returns the row as it is once locked (a takeover committed meanwhile is seen).
    """
    CREATE OR REPLACE FUNCTION mineduel_fence(me text, codes text[], epochs bigint[]) RETURNS integer
    LANGUAGE plpgsql VOLATILE AS $fence$
    DECLARE
        lost text[] := '{}';
        c text;
        e bigint;
        o text;
        found_epoch bigint;
    BEGIN
        FOR c, e IN SELECT h.code, h.epoch FROM unnest(codes, epochs) AS h(code, epoch) ORDER BY h.code LOOP
            SELECT r.owner, r.epoch INTO o, found_epoch FROM rooms r WHERE r.code = c FOR UPDATE;
            IF NOT FOUND OR o IS DISTINCT FROM me OR found_epoch <> e THEN
                lost := lost || c;
            END IF;
        END LOOP;
        IF cardinality(lost) > 0 THEN
            RAISE EXCEPTION 'rooms owned by another node now: %', array_to_string(lost, ',')
                USING ERRCODE = 'MD001', DETAIL = array_to_string(lost, ',');
        END IF;
        RETURN cardinality(codes);
    END
    $fence$;
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)
"""This server's PostgreSQL schema (its own numbering: SQLite's is ``storage.SCHEMA_VERSION``)."""

# The rooms a node may serve: its own, unowned ones, and those whose owner's lease ran out.
_SERVABLE = "(r.owner IS NULL OR r.owner = %(node)s OR n.lease IS NULL OR n.lease <= now())"


def default_node() -> str:
    """This machine's name: one server per machine needs no ``--node``; several on one machine
    (or one database) each need their own, or they take each other's rooms (safely, but in turn)."""
    return socket.gethostname() or f"node-{os.getpid()}"


def migrate(db: Connection) -> int:
    """Bring the schema up to :data:`SCHEMA_VERSION` (one transaction, advisory lock); the version found."""
    with db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        db.execute("CREATE TABLE IF NOT EXISTS meta (key text PRIMARY KEY, value text NOT NULL)")
        row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        found = 0 if row is None else int(row[0])
        if found > SCHEMA_VERSION:
            raise RuntimeError(
                f"database schema {found} is newer than this server's ({SCHEMA_VERSION}): upgrade the server"
            )
        for step in MIGRATIONS[found:]:
            db.execute(step)  # constant SQL, several statements: allowed without parameters
        db.execute(
            "INSERT INTO meta VALUES ('schema', %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            (str(SCHEMA_VERSION),),
        )
    return found


class PostgresStorage:
    """The storage interface on PostgreSQL, as node ``node`` of a cluster (docs/CLUSTER.md)."""

    takes_over = True
    """A room this server does not have may be another node's whose lease ran out: the room logic
    asks :meth:`load_room` for it when a client names it (server/rooms.py ``room``)."""

    def __init__(self, dsn: str, *, node: str | None = None, lease_seconds: float = LEASE_SECONDS,
                 connect_timeout: float = 3.0) -> None:
        self.dsn = dsn
        self.path = _redact(dsn)  # what the server logs as its database (no password)
        self.node = node or default_node()
        self.lease_seconds = lease_seconds
        self.connect_timeout = connect_timeout
        self._held: dict[str, int] = {}  # room code -> the epoch at which this node took it
        self._match_room: dict[str, str] = {}  # match id -> its room (actions are fenced by it)
        self._room_match: dict[str, str] = {}  # room code -> the match noted for it (to forget it)
        self._db: Connection | None = None
        self._cursor: psycopg.Cursor[tuple[Any, ...]] | None = None  # the one-statement commit's, reused
        self.clock: Callable[[], float] | None = None
        """The server clock (``Rooms.now``), set by the node: what a takeover measures a room's
        time without an owner with (PROTOCOL.md §18); ``None``: no time is given back."""
        self._previous_clock: float | None = None  # this node's clock as its previous run left it
        self.released = False  # a clean shutdown ended the lease: nothing more is stored
        self.dropped: dict[str, float | None] = {}  # rooms this run let go: since when they had no owner
        self.cluster = PgNode(self)  # the node's own rows: address, renewals, the sweep (server/cluster_pg.py)
        try:
            db = self._connection()
            migrate(db)
            row = db.execute("SELECT clock FROM nodes WHERE node = %s", (self.node,)).fetchone()
            self._previous_clock = None if row is None or row[0] is None else float(row[0])
            with db.transaction():
                self._renew(db)  # also the write probe: a server that cannot store must not start
                # The owner-tag secret (server/limits.py) is the first node's: nodes starting together
                # would otherwise each write their own and count one address under several tags.
                db.execute("INSERT INTO meta VALUES (%s, %s) ON CONFLICT (key) DO NOTHING", (OWNER_KEY, os.urandom(16).hex()))
        except psycopg.Error as exc:
            self.close()
            raise RuntimeError(f"{self.path}: cannot open the database ({exc})") from exc
        except BaseException:
            self.close()
            raise

    # ----- connection --------------------------------------------------------------------------------
    def _connection(self) -> Connection:
        """The open connection, or a new one if there is none or it broke (a lost server, a restart)."""
        db = self._db
        if db is None or db.closed or db.broken:
            if db is not None:
                db.close()
            self._db = None
            # Bounded waits: the server's loop waits for its database (as for a local fsync), so a
            # database that stops answering over TCP must cost seconds, not the kernel's minutes.
            # libpq ignores the TCP settings on a Unix socket (where a dead server fails at once).
            # What the address itself sets wins.
            given = _conninfo(self.dsn)
            defaults: dict[str, str | int] = {
                "connect_timeout": max(2, int(self.connect_timeout)), "keepalives": 1, "keepalives_idle": 5,
                "keepalives_interval": 1, "keepalives_count": 3, "tcp_user_timeout": 5000,
                "application_name": f"mine-duel-server {self.node}"[:63],
            }
            conninfo = make_conninfo(self.dsn, **{k: v for k, v in defaults.items() if k not in given})
            db = psycopg.connect(conninfo, autocommit=True)
            db.prepared_max = _PREPARED  # the commit's shapes (_FAST) stay prepared, not re-prepared in turn
            # Every statement this server prepares (psycopg: the 5th time it runs) is a lookup by key
            # or a write of given rows, whose plan does not depend on the values: planned once, not
            # re-planned at every commit as PostgreSQL's "auto" did (its custom plans looked cheaper)
            # — about 150 µs of the database's CPU per commit (measured, docs/PERFORMANCE.md
            # "Cluster: the commit's cost"). The fence function's own statements too.
            # The players' reads with a range and a LIMIT are not prepared (``_read(prepare=False)``).
            db.execute("SET plan_cache_mode = force_generic_plan")
            self._db = db
        return db

    def _read(self, sql: str, params: Sequence[Any] | dict[str, Any] = (), *,
              prepare: bool | None = None) -> list[tuple[Any, ...]]:
        """A read in autocommit; once retried on a fresh connection if the old one was lost.
        ``prepare=False``: planned for its values each time (a range and a ``LIMIT`` whose best plan
        depends on them: the connection's prepared statements get one generic plan)."""
        try:
            return self._connection().execute(sql, params, prepare=prepare).fetchall()
        except psycopg.OperationalError:
            if self._db is not None and not self._db.broken:
                raise
            return self._connection().execute(sql, params, prepare=prepare).fetchall()

    def _renew(self, db: Connection, clock: float | None = None) -> None:
        db.execute(_RENEW, {"node": self.node, "lease": self.lease_seconds, "clock": clock})


    # ----- writing -----------------------------------------------------------------------------------
    def commit(self, write: Write) -> None:
        """One transaction: renew the lease, lock and check every touched room, write; or roll back."""
        if self.released:
            raise RuntimeError("this node has ended its lease (a clean shutdown): it stores nothing more")
        db = self._connection()
        if self._commit_fast(db, write):
            return
        new_rooms = {c for c, blob in write.rooms.items() if blob is not None and c not in self._held}
        # Any other write: a transaction, one statement per kind of row (arrays through unnest),
        # not one per row. Not pipelined: over a Unix socket that cost more CPU per commit than it
        # saved (measured: 431 against 351 µs, docs/PERFORMANCE.md "PostgreSQL storage (issue 21)").
        with db.transaction():
            self._fence(db, write, new_rooms)
            self._write(db, write, new_rooms)
        self._landed(write, new_rooms)

    def _commit_fast(self, db: Connection, write: Write) -> bool:
        """The usual commit — actions, the clock, rooms this node holds — as ONE statement in
        autocommit (one round trip, no BEGIN/COMMIT): ``mineduel_fence`` locks and checks the rooms
        and raises inside the statement, so a mismatch still stores nothing. ``False``: the write
        has other parts (new or deleted rooms, results, players…), for :meth:`commit`'s transaction."""
        if (write.drop_actions or write.results or write.purge_results_before is not None
                or write.keep_results is not None or write.players or write.rated_results):
            return False
        held = self._held
        if any(blob is None or code not in held for code, blob in write.rooms.items()):
            return False
        codes, unknown = self._touched(write)
        if unknown or any(code not in held for code in codes):
            return False  # the transaction's fence says why
        ordered = sorted(codes)
        # The arrays go as a few scalars each (``ARRAY[$1, $2]``) when they are short — nearly
        # always: a room or two, an action or two — else as one binary array: psycopg's list
        # dumpers cost ~6 µs an array in binary and more in text (escaping every quote of the
        # JSON), a scalar under 1 µs (docs/PERFORMANCE.md "Cluster: the commit's cost").
        params: dict[str, Any] = {"node": self.node, "lease": self.lease_seconds, "clock": _clock_of(write)}
        meta = _shared_meta(write)
        rooms, rows = write.rooms, write.actions
        shape = (min(len(ordered), _MANY), min(len(meta), _MANY), min(len(rooms), _MANY), min(len(rows), _MANY))
        sql = _FAST.get(shape)
        if sql is None:
            sql = _FAST[shape] = _fast_sql(*shape)
        _fill(params, "c", ordered)
        _fill(params, "e", [held[c] for c in ordered])
        if meta:
            _fill(params, "mk", list(meta))
            _fill(params, "mv", list(meta.values()))
        if rooms:
            _fill(params, "rc", list(rooms))
            _fill(params, "rd", [_dumps(blob) for blob in rooms.values()])
        if rows:
            _fill(params, "am", [m for m, _, _ in rows])
            _fill(params, "aq", [q for _, q, _ in rows])
            _fill(params, "ad", [_dumps(a) for _, _, a in rows])
        cursor = self._cursor
        if cursor is None or cursor.connection is not db:
            cursor = self._cursor = db.cursor()  # a cursor a commit saves ~30 µs of CPU (measured)
        try:
            cursor.execute(sql, params)
        except psycopg.Error as exc:
            if exc.sqlstate == _LOST:
                lost = frozenset(str(exc.diag.message_detail or "").split(",")) & codes
                for code in lost:
                    held.pop(code, None)
                raise OwnershipLost(lost or frozenset(codes)) from None
            raise
        for code, blob in write.rooms.items():
            self._note_match(code, blob)  # type: ignore[arg-type]  # no deletions on this path
        return True

    def _touched(self, write: Write) -> tuple[set[str], set[str]]:
        """The rooms a write changes, and the match ids among its actions whose room is unknown."""
        codes = set(write.rooms)
        codes.update(room for _, room, _, _ in write.results)
        unknown: set[str] = set()
        written_matches = {
            blob["match"]["id"]: code for code, blob in write.rooms.items()
            if blob is not None and isinstance(blob.get("match"), dict)
        }
        for match_id in {m for m, _, _ in write.actions} | set(write.drop_actions):
            code = written_matches.get(match_id) or self._match_room.get(match_id)
            if code is not None:
                codes.add(code)
            elif match_id not in write.drop_actions:
                unknown.add(match_id)
        return codes, unknown

    def _fence(self, db: Connection, write: Write, new_rooms: set[str]) -> None:
        """Lock every room the write touches; raise :class:`OwnershipLost` unless each is still
        this node's at the epoch it took it (or is a new room nobody has)."""
        codes, unknown = self._touched(write)
        if unknown:
            raise RuntimeError(f"actions of matches this node never loaded: {', '.join(sorted(unknown))}")
        if not codes:
            self._renew(db, _clock_of(write))
            return
        # The lease renewed in the same statement (a data-modifying WITH runs even unreferenced).
        rows = db.execute(
            f"WITH renewed AS ({_RENEW}) "
            "SELECT code, owner, epoch FROM rooms WHERE code = ANY(%(codes)b::text[]) ORDER BY code FOR UPDATE",
            {"node": self.node, "lease": self.lease_seconds, "clock": _clock_of(write), "codes": sorted(codes)},
        ).fetchall()
        found = {code: (owner, epoch) for code, owner, epoch in rows}
        lost: set[str] = set()
        for code in codes:
            held = self._held.get(code)
            row = found.get(code)
            if held is not None:
                if row != (self.node, held):
                    lost.add(code)
            elif code in new_rooms:
                if row is not None:  # a code another node (or a restart) already stored
                    lost.add(code)
            elif row is not None:  # a deletion or result for a room this node does not hold
                lost.add(code)
        if lost:
            for code in lost:
                self._held.pop(code, None)
            raise OwnershipLost(frozenset(lost))

    def _write(self, db: Connection, write: Write, new_rooms: set[str]) -> None:
        meta = _shared_meta(write)
        if meta:
            db.execute(
                "INSERT INTO meta SELECT * FROM unnest(%b::text[], %b::text[]) "
                "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                (list(meta), list(meta.values())),
            )
        for match in write.drop_actions:
            db.execute("DELETE FROM actions WHERE match_id = %s", (match,))
        deleted = [code for code, blob in write.rooms.items() if blob is None and code in self._held]
        if deleted:
            db.execute("DELETE FROM rooms WHERE code = ANY(%b::text[])", (deleted,))
        updated = [(_dumps(blob), code) for code, blob in write.rooms.items() if blob is not None and code not in new_rooms]
        if updated:
            db.execute(
                "UPDATE rooms SET data = u.data FROM unnest(%b::text[], %b::text[]) AS u(data, code) WHERE rooms.code = u.code",
                ([d for d, _ in updated], [c for _, c in updated]),
            )
        if new_rooms:
            db.cursor().executemany(
                "INSERT INTO rooms (code, data, owner, epoch) VALUES (%s, %s, %s, 1)",
                [(code, _dumps(write.rooms[code]), self.node) for code in sorted(new_rooms)],
            )
        if write.actions:
            rows = write.actions
            db.execute(
                "INSERT INTO actions SELECT * FROM unnest(%b::text[], %b::integer[], %b::text[])",
                ([m for m, _, _ in rows], [s for _, s, _ in rows], [_dumps(a) for _, _, a in rows]),
            )
        if write.results:
            db.cursor().executemany(
                "INSERT INTO results VALUES (%s, %s, %s, %s) ON CONFLICT (match_id) DO UPDATE SET "
                "room = EXCLUDED.room, ended = EXCLUDED.ended, record = EXCLUDED.record",
                write.results,
            )
        if write.players:
            db.cursor().executemany(
                f"INSERT INTO players ({_PLAYER_COLUMNS}) VALUES ({', '.join(['%s'] * 12)}) ON CONFLICT (key_hash) "
                f"DO UPDATE SET {', '.join(f'{c} = EXCLUDED.{c}' for c in _PLAYER_COLUMNS.split(', ')[1:])}",
                [_player_values(p) for p in write.players],
            )
        if write.rated_results:
            db.cursor().executemany(
                f"INSERT INTO rated_results ({_RESULT_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (match_id, player) DO UPDATE SET opponent = EXCLUDED.opponent, result = EXCLUDED.result, "
                "before = EXCLUDED.before, after = EXCLUDED.after, at = EXCLUDED.at",
                [(r.match_id, r.player, r.opponent, r.result, r.before, r.after, r.at) for r in write.rated_results],
            )
        if write.purge_results_before is not None:
            db.execute("DELETE FROM results WHERE ended < %s", (write.purge_results_before,))
        if write.keep_results is not None:
            db.execute(
                "DELETE FROM results WHERE match_id IN "
                "(SELECT match_id FROM results ORDER BY ended DESC, match_id COLLATE \"C\" DESC OFFSET %s)",
                (write.keep_results,),
            )

    def _landed(self, write: Write, new_rooms: set[str]) -> None:
        """The commit is in: remember the rooms taken and the matches they play."""
        for code, blob in write.rooms.items():
            if blob is None:
                self._held.pop(code, None)
                self._match_room.pop(self._room_match.pop(code, ""), None)
                continue
            if code in new_rooms:
                self._held[code] = 1
            self._note_match(code, blob)

    def _note_match(self, code: str, blob: Blob) -> None:
        match = blob.get("match")
        if isinstance(match, dict) and isinstance(match.get("id"), str):
            old = self._room_match.get(code)
            if old is not None and old != match["id"]:
                self._match_room.pop(old, None)  # the room's previous match: no action of it comes any more
            self._match_room[match["id"]] = code
            self._room_match[code] = match["id"]

    # ----- reading -----------------------------------------------------------------------------------
    def meta(self, key: str) -> str | None:
        if key == "clock":
            # Each node's clock is in its own row (written by every commit and renewal); the
            # cluster's is the latest of them (with the ``meta`` row older servers wrote, if any).
            rows = self._read(
                "SELECT greatest((SELECT max(clock) FROM nodes), "
                "(SELECT value::double precision FROM meta WHERE key = 'clock'))"
            )
            return None if not rows or rows[0][0] is None else repr(float(rows[0][0]))
        rows = self._read("SELECT value FROM meta WHERE key = %s", (key,))
        return None if not rows else str(rows[0][0])

    def room_codes(self) -> list[str]:
        """Every room this node may serve: its own, unowned ones and those of expired leases."""
        return [r[0] for r in self._read(
            f"SELECT r.code FROM rooms r LEFT JOIN nodes n ON n.node = r.owner WHERE {_SERVABLE} ORDER BY r.code COLLATE \"C\"",
            {"node": self.node},
        )]

    def load_room(self, code: str) -> tuple[Blob, list[Blob]] | None:
        """The room and its match's actions, taking the room over first (epoch + 1) unless this
        node holds it already; ``None`` if it is not stored or a live node owns it."""
        if self.released:
            return None
        held = self._held.get(code)
        if held is not None:  # already this node's (claimed by the sweep, or reloaded): a plain read
            found = _read_held(self, code, held)
            if found is not None:
                return found
        db = self._connection()
        with db.transaction():
            row = db.execute("SELECT data, owner, epoch, lag FROM rooms WHERE code = %s FOR UPDATE", (code,)).fetchone()
            if row is None:
                self._held.pop(code, None)
                return None
            data, owner, epoch, lag = row
            if not (owner == self.node and self._held.get(code) == epoch):
                # The owner's lease read only now, holding the row: a statement that waited for the
                # lock (another node's claim) returns the row as that claim left it, but anything it
                # joined as it was before the wait — the old owner's expired lease, not the
                # claimer's live one — and would take the room from the live claimer
                # (tests/server/test_cluster_takeover.py).
                node_row = None if owner is None else db.execute(
                    "SELECT lease > now(), clock FROM nodes WHERE node = %s", (owner,)).fetchone()
                alive, last = (False, None) if node_row is None else node_row
                if owner is not None and owner != self.node and alive:
                    self._held.pop(code, None)
                    return None
                now = self.clock() if self.clock is not None else None
                self._renew(db, now)
                # The room's clock resumes where its last owner left it (PROTOCOL.md §18): the
                # seconds of server clock since that owner's last renewal or commit are added to
                # its lag. This node's own rooms: the clock its previous run left (a restart).
                if owner == self.node:
                    last = self.dropped.pop(code, self._previous_clock)
                gap = 0.0 if now is None or last is None else now - float(last)
                epoch, lag = db.execute(
                    "UPDATE rooms SET owner = %s, epoch = epoch + 1, lag = lag + %s WHERE code = %s RETURNING epoch, lag",
                    (self.node, gap, code),
                ).fetchone()  # type: ignore[misc]
            blob: Blob = _loads(data)
            if lag:
                blob["lag"] = float(lag)  # the column is the truth: a takeover changes it, not the blob
            actions: list[Blob] = []
            match = blob.get("match")
            if isinstance(match, dict):
                actions = [_loads(r[0]) for r in db.execute(
                    "SELECT data FROM actions WHERE match_id = %s ORDER BY seq", (match["id"],)
                )]
        self._held[code] = int(epoch)
        self._note_match(code, blob)
        return blob, actions

    def load_result(self, match_id: str) -> str | None:
        rows = self._read("SELECT record FROM results WHERE match_id = %s", (match_id,))
        return None if not rows else str(rows[0][0])

    def result_count(self) -> int:
        """How many finished matches' records are stored (all nodes')."""
        return int(self._read("SELECT count(*) FROM results")[0][0])

    def room_owners(self) -> dict[str, str]:
        """The owner tag (an address's, not a node's) of every room this node may serve."""
        rows = self._read(
            f"SELECT r.code, r.data::jsonb ->> 'owner' FROM rooms r LEFT JOIN nodes n ON n.node = r.owner "
            f"WHERE {_SERVABLE}",
            {"node": self.node},
        )
        return {code: owner for code, owner in rows if isinstance(owner, str) and owner}

    # ----- players (issue 20; shared by every node) ----------------------------------------------------------
    def load_player(self, key_hash: str) -> PlayerRow | None:
        rows = self._read(f"SELECT {_PLAYER_COLUMNS} FROM players WHERE key_hash = %s", (key_hash,))
        return PlayerRow(*rows[0]) if rows else None

    def player_by_id(self, player: str) -> PlayerRow | None:
        rows = self._read(f"SELECT {_PLAYER_COLUMNS} FROM players WHERE player = %s", (player,))
        return PlayerRow(*rows[0]) if rows else None

    def leaderboard(self, limit: int, max_deviation: float) -> list[PlayerRow]:
        rows = self._read(
            f"SELECT {_PLAYER_COLUMNS} FROM players WHERE deviation <= %s ORDER BY rating DESC, player COLLATE \"C\" LIMIT %s",
            (max_deviation, limit), prepare=False,
        )
        return [PlayerRow(*row) for row in rows]

    def rank_of(self, player: str, max_deviation: float) -> int | None:
        me = self.player_by_id(player)
        if me is None or me.deviation > max_deviation:
            return None
        rows = self._read(
            "SELECT count(*) FROM players WHERE deviation <= %s AND "
            "(rating > %s OR (rating = %s AND player COLLATE \"C\" < %s))",
            (max_deviation, me.rating, me.rating, me.player), prepare=False,
        )
        return int(rows[0][0]) + 1

    def recent_results(self, player: str, limit: int) -> list[RatedResult]:
        rows = self._read(
            f"SELECT {_RESULT_COLUMNS} FROM rated_results WHERE player = %s "
            "ORDER BY at DESC, match_id COLLATE \"C\" DESC LIMIT %s",
            (player, limit), prepare=False,
        )
        return [RatedResult(*row) for row in rows]

    def pair_results(self, player: str, opponent: str, since: float) -> int:
        rows = self._read(
            "SELECT count(*) FROM rated_results WHERE player = %s AND opponent = %s AND at >= %s", (player, opponent, since)
        )
        return int(rows[0][0])

    def held(self) -> dict[str, int]:
        """The rooms this node holds and their epochs (tests, docs/CLUSTER.md)."""
        return dict(self._held)

    # ----- closing -----------------------------------------------------------------------------------
    def close(self) -> None:
        """End this node's lease at once (its rooms may be taken over without waiting) and disconnect."""
        db, self._db = self._db, None
        if db is None:
            return
        try:
            if not db.closed and not db.broken:
                db.execute("UPDATE nodes SET lease = now() WHERE node = %s", (self.node,))
        except psycopg.Error:
            pass  # the lease runs out by itself
        finally:
            db.close()


_LOST = "MD001"  # the SQLSTATE mineduel_fence raises
_RENEW = (
    "INSERT INTO nodes (node, lease, started, clock) VALUES (%(node)s, now() + make_interval(secs => %(lease)s), now(), "
    "%(clock)s::double precision) "
    "ON CONFLICT (node) DO UPDATE SET lease = EXCLUDED.lease, clock = coalesce(EXCLUDED.clock, nodes.clock)"
)
"""Renew the lease; with a server clock (every commit's, every renewal's) also the node's ``clock``,
from which a node taking one of its rooms over computes the seconds the room had no owner."""
_PLAYER_COLUMNS = "key_hash, player, name, rating, deviation, volatility, games, wins, losses, draws, created, updated"
_RESULT_COLUMNS = "match_id, player, opponent, result, before, after, at"


def _read_held(storage: PostgresStorage, code: str, epoch: int) -> tuple[Blob, list[Blob]] | None:
    """A room ``storage`` holds at ``epoch``, read without locking its row (no write, so no WAL
    flush per room: the sweep restores batches of them). Safe: a takeover after this read
    bumps the epoch, and this node's next commit for the room, before anything is shown, is
    refused (the fence). None if the row says it is no longer this node's."""
    rows = storage._read("SELECT data, owner, epoch, lag FROM rooms WHERE code = %s", (code,))
    if not rows or rows[0][1] != storage.node or rows[0][2] != epoch:
        return None
    data, _, _, lag = rows[0]
    blob: Blob = _loads(data)
    if lag:
        blob["lag"] = float(lag)
    match = blob.get("match")
    actions: list[Blob] = []
    if isinstance(match, dict):
        actions = [_loads(r[0]) for r in storage._read(
            "SELECT data FROM actions WHERE match_id = %s ORDER BY seq", (match["id"],))]
    storage._note_match(code, blob)
    return blob, actions


_FEW = 4
"""Arrays up to this long go as scalars: one prepared statement per shape (``_MANY`` ** 4 at
most; the connection keeps ``_PREPARED``)."""
_MANY = _FEW + 1  # every longer array is one binary parameter: one shape
_PREPARED = 300
_FAST: dict[tuple[int, int, int, int], str] = {}  # (rooms fenced, meta rows, room blobs, actions) -> SQL


def _array(name: str, n: int, kind: str) -> str:
    """An SQL array of ``n`` values of ``kind``: ``n`` scalar parameters (cheap to send — psycopg's
    list dumpers cost ~6 µs an array in binary, more in text, escaping every quote of the JSON;
    a scalar under 1 µs), or one binary array when there are many."""
    if n > _FEW:
        return f"%({name})b::{kind}[]"
    return f"ARRAY[{', '.join(f'%({name}{i})s' for i in range(n))}]::{kind}[]"


def _fill(params: dict[str, Any], name: str, values: list[Any]) -> None:
    """The parameters of :func:`_array` ``name``."""
    if len(values) > _FEW:
        params[name] = values
    else:
        for i, value in enumerate(values):
            params[f"{name}{i}"] = value


def _fast_sql(fenced: int, metas: int, rooms: int, actions: int) -> str:
    """The one-statement commit (:meth:`PostgresStorage._commit_fast`) of this shape: renew,
    fence, then the rows; a data-modifying ``WITH`` runs even unreferenced."""
    parts = [f"renewed AS ({_RENEW})", f"fence AS (SELECT mineduel_fence(%(node)s, {_array('c', fenced, 'text')}, "
             f"{_array('e', fenced, 'bigint')}) AS n)"]
    if metas:
        parts.append(f"m AS (INSERT INTO meta SELECT * FROM unnest({_array('mk', metas, 'text')}, "
                     f"{_array('mv', metas, 'text')}) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value)")
    if rooms:
        parts.append(f"r AS (UPDATE rooms SET data = u.data FROM unnest({_array('rc', rooms, 'text')}, "
                     f"{_array('rd', rooms, 'text')}) AS u(code, data) WHERE rooms.code = u.code)")
    if actions:
        parts.append(f"a AS (INSERT INTO actions SELECT * FROM unnest({_array('am', actions, 'text')}, "
                     f"{_array('aq', actions, 'integer')}, {_array('ad', actions, 'text')}))")
    return f"WITH {', '.join(parts)} SELECT n FROM fence"


def _shared_meta(write: Write) -> dict[str, str]:
    """The ``meta`` rows a commit writes: all but the server clock, which goes into the node's own
    row (``nodes.clock``, with the lease) instead of one ``meta`` row every node rewrote with
    every commit — a row lock each node's commit waited for until the other's WAL flush
    (docs/PERFORMANCE.md "Cluster: the commit's cost"). ``meta('clock')`` reads it back."""
    meta = write.meta
    if "clock" not in meta or _clock_of(write) is None:
        return meta
    return {k: v for k, v in meta.items() if k != "clock"}


def _clock_of(write: Write) -> float | None:
    """The server clock a commit writes (``meta.clock``, in every batch): the node's ``clock`` too."""
    value = write.meta.get("clock")
    try:
        return None if value is None else float(value)
    except ValueError:
        return None


def _player_values(p: PlayerRow) -> tuple[object, ...]:
    return (p.key_hash, p.player, p.name, p.rating, p.deviation, p.volatility, p.games, p.wins, p.losses,
            p.draws, p.created, p.updated)


def _conninfo(dsn: str) -> dict[str, Any]:
    """The settings an address names (none if libpq cannot parse it: connecting will say why)."""
    try:
        return dict(conninfo_to_dict(dsn))
    except psycopg.ProgrammingError:
        return {}


def _redact(dsn: str) -> str:
    """The address without its password, for logs."""
    parts = _conninfo(dsn)
    if not parts:
        return "postgresql://…"
    if "password" in parts:
        parts["password"] = "***"
    return make_conninfo("", **{k: v for k, v in parts.items() if v is not None})


__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "PostgresStorage", "default_node", "migrate"]
