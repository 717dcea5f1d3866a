"""A throw-away PostgreSQL server for the tests and benchmarks (issue 21).

Debian's PostgreSQL binaries (``initdb``, ``pg_ctl``; ``/usr/lib/postgresql/<version>/bin``)
make a cluster in a temporary folder that listens on a Unix socket in that folder only (no TCP
at all), started once per test session and stopped, folder and all, at its end.

``initdb`` refuses to run as root, so as root the cluster belongs to ``nobody`` (``runuser``):
the folder is made by root and handed to it; root still connects through the socket (its
folder is 0700, and root passes any mode). As a normal user everything runs as that user.

Why not ``pytest-postgresql``: it runs ``pg_ctl`` as the caller, which fails as root (CI runs
as root here), and brings two more packages (mirakuru, port-for) for what is ~150 lines here.

Without the binaries (or psycopg) the PostgreSQL tests skip with the reason, unless
``MINEDUEL_REQUIRE_POSTGRES=1`` (``.ci/run`` sets it): then they fail, so CI cannot pass by
silently running none of them.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

SUPERUSER = "mineduel"
PORT = 5432  # names the socket file only (.s.PGSQL.5432 in the cluster's own folder): no TCP listen


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL binaries (or no psycopg) on this machine: the reason, for a skip."""


def find_bindir() -> Path:
    """The folder holding ``initdb`` and ``pg_ctl``: ``$MINEDUEL_PG_BIN``, else the newest
    ``/usr/lib/postgresql/*/bin`` (Debian), else ``pg_config --bindir``, else ``$PATH``."""
    chosen = os.environ.get("MINEDUEL_PG_BIN")
    if chosen:
        candidates = [Path(chosen)]
    else:
        found = [Path(p) for p in glob.glob("/usr/lib/postgresql/*/bin")]
        candidates = sorted(found, key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0, reverse=True)
        pg_config = shutil.which("pg_config")
        if pg_config is not None:
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                asked = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=True)
                candidates.append(Path(asked.stdout.strip()))
        initdb = shutil.which("initdb")
        if initdb is not None:
            candidates.append(Path(initdb).parent)
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    raise PostgresUnavailable(
        "PostgreSQL server binaries (initdb, pg_ctl) not found: install Debian's postgresql-15 "
        "(`.ci/run` does, as root) or set MINEDUEL_PG_BIN"
    )


class PostgresServer:
    """One PostgreSQL cluster in a temporary folder; ``durable=False`` (tests) turns fsync off.
    ``statements=True`` (benchmarks' diagnosis) loads ``pg_stat_statements``, nested statements
    (the fence function's) included: calls, time and WAL per statement (:func:`statement_stats`)."""

    def __init__(self, *, durable: bool = False, statements: bool = False) -> None:
        try:
            import psycopg  # noqa: F401 - only to say why the tests skip
        except ImportError as exc:
            raise PostgresUnavailable(f"psycopg is not installed ({exc}): pip install 'mine-duel[postgres]'") from exc
        self.bindir = find_bindir()
        self.durable = durable
        self.statements = statements
        self.folder = Path(tempfile.mkdtemp(prefix="mineduel-pg-"))  # 0700, in /tmp: a short socket path
        self.data = self.folder / "data"
        self.log = self.folder / "server.log"
        self._as: list[str] = []
        self._names = itertools.count(1)
        self.started = False
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            os.chown(self.folder, nobody.pw_uid, nobody.pw_gid)
            runuser = shutil.which("runuser") or "/usr/sbin/runuser"
            self._as = [runuser, "-u", "nobody", "--"]

    def _run(self, *args: str) -> None:
        proc = subprocess.run([*self._as, *args], capture_output=True, text=True, check=False, cwd=self.folder)
        if proc.returncode != 0:
            log = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
            raise RuntimeError(f"{' '.join(args[:2])} failed ({proc.returncode}): {proc.stdout}{proc.stderr}\n{log}")

    def start(self) -> PostgresServer:
        """initdb (trust on the socket only: nothing else can reach it), then ``pg_ctl start``."""
        self._run(
            str(self.bindir / "initdb"), "-D", str(self.data), "-U", SUPERUSER, "--auth=trust",
            "--encoding=UTF8", "--locale=C", "--no-instructions",
        )
        settings = {
            "listen_addresses": "''",
            "unix_socket_directories": f"'{self.folder}'",
            "port": str(PORT),
            "max_connections": "100",
            "shared_buffers": "'64MB'",
            "fsync": "on" if self.durable else "off",
            "synchronous_commit": "on" if self.durable else "off",
            "full_page_writes": "on" if self.durable else "off",
        }
        if self.statements:
            settings.update({"shared_preload_libraries": "'pg_stat_statements'", "pg_stat_statements.track": "all",
                             "pg_stat_statements.track_planning": "on"})
        with (self.data / "postgresql.auto.conf").open("a", encoding="utf-8") as conf:
            for key, value in settings.items():
                conf.write(f"{key} = {value}\n")
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "start")
        self.started = True
        atexit.register(self.stop)  # also when the run is interrupted before the fixture's end
        return self

    def stop(self) -> None:
        """Stop the server at once (nothing in it is kept) and remove its folder."""
        if self.started:
            self.started = False
            with contextlib.suppress(RuntimeError):
                self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)

    def restart(self) -> None:
        """Stop and start the same cluster (its data kept): every connection to it breaks."""
        # -l as at the start: the new server's output must not go to this process's pipes.
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-m", "fast", "-w", "restart")

    def dsn(self, database: str = "postgres") -> str:
        """A ``postgresql://`` address of ``database`` on this server (its socket)."""
        return f"postgresql://{SUPERUSER}@/{database}?host={self.folder}&port={PORT}"

    def new_database(self) -> str:
        """A fresh empty database (one per test: no state leaks between tests); its address."""
        import psycopg

        name = f"t{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.dsn(), autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
        return self.dsn(name)


def require() -> bool:
    """Whether a missing PostgreSQL must fail the run instead of skipping (``.ci/run``)."""
    return os.environ.get("MINEDUEL_REQUIRE_POSTGRES", "") not in ("", "0")


@contextlib.contextmanager
def running(*, durable: bool = False, statements: bool = False) -> Iterator[PostgresServer]:
    """A started server for the block (benchmarks); stopped and removed after it."""
    server = PostgresServer(durable=durable, statements=statements)
    try:
        yield server.start()
    finally:
        server.stop()


def reset_statement_stats(dsn: str) -> None:
    """Start counting from now (a server started with ``statements=True``): statements and WAL."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as db:
        db.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        db.execute("SELECT pg_stat_statements_reset()")
        db.execute("SELECT pg_stat_reset_shared('wal')")


def statement_stats(dsn: str, limit: int = 12) -> dict[str, object]:
    """Since :func:`reset_statement_stats`: the busiest statements (calls, total ms planning and
    executing, rows, WAL
    records and bytes) and the server's WAL totals (records, bytes, full-page images, syncs)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as db:
        rows = db.execute(
            "SELECT calls, total_exec_time + total_plan_time, rows, wal_records, wal_bytes, wal_fpi, toplevel, "
            "left(regexp_replace(query, '\\s+', ' ', 'g'), 160) FROM pg_stat_statements "
            "WHERE query NOT LIKE '%%pg_stat_statements%%' ORDER BY total_exec_time DESC LIMIT %s",
            (limit,),
        ).fetchall()
        wal = db.execute("SELECT wal_records, wal_fpi, wal_bytes, wal_write, wal_sync FROM pg_stat_wal").fetchone()
    return {
        "statements": [
            {"calls": c, "ms": float(t), "rows": r, "wal_records": wr, "wal_bytes": int(wb), "wal_fpi": wf,
             "toplevel": top, "query": q}
            for c, t, r, wr, wb, wf, top, q in rows
        ],
        "wal": dict(zip(("records", "fpi", "bytes", "writes", "syncs"), (int(x) for x in wal or (0, 0, 0, 0, 0)), strict=True)),
    }
