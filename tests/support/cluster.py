"""Several real ``mine-duel-server`` node processes on loopback over one PostgreSQL (issue 21).

The cluster test (``tests/reliability/test_cluster.py``) and ``benchmarks/bench_cluster.py``
share this module:

* :class:`Node` — one ``python -m mineduel.server`` process (the unchanged command-line server)
  on its own loopback address (``127.0.0.2``, ``127.0.0.3``, … : Linux routes all of
  ``127.0.0.0/8`` to the loopback device) and its own port, ``--db postgresql://…``, ``--node``,
  and ``--advertise``/``--front`` when this server has them (docs/CLUSTER.md). Its output goes to a
  log file; it is started, waited for (the ``listening`` JSON line, bounded), killed (SIGKILL),
  paused (SIGSTOP), resumed (SIGCONT) and stopped (SIGTERM, then SIGKILL after a bound). A node
  restarted keeps its address and port (the one it got at its first start), so what it
  advertised stays true.
* :class:`Cluster` — N nodes on one database; a context manager that always ends every process
  it started (a paused one is resumed first so SIGTERM can reach it), whatever the test did.
* :class:`Seat` — a bot seat playing through the cluster with the shared line client
  (:class:`~mineduel.server.client.LineClient`): it follows ``moved`` (PROTOCOL.md §18, both
  the reply and the unsolicited one, at most 3 in a row), and when its node dies or stops
  answering (a connection lost, a request or a ping unanswered for ``answer_s``) it connects to
  another live node and ``resume``s with its token, retrying ``room_not_found`` (the owner's
  lease has not run out yet: docs/CLUSTER.md "takeover on demand") until ``failover_s``. It keeps,
  per match, every event in the order it saw it — and fails the run if one is seen twice, skipped
  or changed (a resume's full history must start with exactly what it saw) — and every action
  acknowledged with ``ok``.

Everything waits with a deadline; nothing here sleeps to make an outcome true.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LISTEN_TIMEOUT = 30.0
"""Seconds a node may take from its start to its ``listening`` line (a migration, a busy machine)."""

STOP_TIMEOUT = 15.0
"""Seconds a SIGTERMed node may take to end before it gets SIGKILL."""

# Every bot connects from loopback: the per-address limits (HOSTING.md) are lifted, nothing else.
LIFTED_LIMITS = (
    "--max-connections-per-address", "100000", "--max-connections", "12000",
    "--max-open-rooms-per-address", "100000", "--max-rooms-per-address", "100000",
    "--address-rate", "1000000", "--connection-rate", "1000000", "--resumes-per-seat", "1000",
    "--max-records-per-address", "1000000000", "--max-records-per-pair", "1000000000",
    "--max-records", "1000000000", "--max-spectating-per-address", "100000", "--log-lines-per-address", "100000",
)


def server_options() -> frozenset[str]:
    """The options this ``mine-duel-server`` knows (``--advertise``/``--front`` land with routing)."""
    done = subprocess.run([sys.executable, "-m", "mineduel.server", "--help"], capture_output=True, text=True,
                          timeout=60, check=False)
    return frozenset(word.rstrip(",=") for word in done.stdout.split() if word.startswith("--"))


def free_port(host: str, avoid: set[int] | frozenset[int] = frozenset()) -> int:
    """A port free on ``host`` now and not in ``avoid`` (the node binds it at once; loopback only)."""
    for _ in range(100):
        with socket.socket() as probe:
            probe.bind((host, 0))
            port = int(probe.getsockname()[1])
        if port not in avoid:
            return port
    raise RuntimeError("no free port")


class Node:
    """One ``mine-duel-server`` process of a cluster, on ``host:port``, logging to ``log``."""

    def __init__(self, name: str, host: str, dsn: str, workdir: Path, *, extra: Sequence[str] = (),
                 front: tuple[str, int] | None = None, options: frozenset[str] = frozenset(),
                 env: dict[str, str] | None = None) -> None:
        self.name = name
        self.host = host
        self.port = free_port(host)
        self.dsn = dsn
        self.workdir = workdir
        self.extra = list(extra)
        self.front = front
        self.options = options
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.paused = False
        self.terminated = False
        self.listened = False  # has listened once: its port is its own from then on
        self.retries = 0
        self.avoid: set[int] = set()  # ports of the other nodes of its cluster
        self.log = workdir / f"{name}.log"
        self._offset = 0  # where this start's output begins in ``log``

    @property
    def address(self) -> tuple[str, int]:
        return self.host, self.port

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "mineduel.server", "--host", self.host, "--port", str(self.port),
               "--no-discovery", "--db", self.dsn, *LIFTED_LIMITS]
        if not self.dsn.startswith("postgresql://"):  # a SQLite file: the single node compared against
            return cmd + self.extra
        cmd += ["--node", self.name]
        if "--advertise" in self.options:
            cmd += ["--advertise", f"{self.host}:{self.port}"]
        if self.front is not None and "--front" in self.options:
            cmd += ["--front", f"{self.front[0]}:{self.front[1]}"]
        return cmd + self.extra

    def start(self) -> None:
        """Start the process (not waiting for it: see :meth:`wait_listening`)."""
        if self.running:
            raise RuntimeError(f"{self.name} is running already")
        self.starts += 1
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **(self.env or {})}
        with self.log.open("ab") as out:
            self._offset = out.tell()
            out.write(f"----- start {self.starts}: {' '.join(self.command())}\n".encode())
            self._offset = out.tell()
            self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT, env=env,
                                         stdin=subprocess.DEVNULL)
        self.paused = False
        self.terminated = False

    def output(self) -> str:
        """What this start of the process has written so far."""
        try:
            with self.log.open("rb") as f:
                f.seek(self._offset)
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def listening(self) -> dict[str, Any] | None:
        """The ``listening`` event of this start (HOSTING.md "Ports"), once written."""
        for line in self.output().splitlines():
            if line.startswith("{") and '"listening"' in line:
                event: dict[str, Any] = json.loads(line)
                return event
        return None

    def check(self) -> None:
        """Raise with the log's tail if the process ended on its own. A node that never listened
        and found its port taken (another process bound it after :func:`free_port`) starts
        again on another free port, at most 5 times."""
        if self.proc is not None and self.proc.poll() is not None and not self.paused:
            if not self.listened and "Address already in use" in self.output() and self.retries < 5:
                self.retries += 1
                self.port = free_port(self.host, avoid=self.avoid)
                self.avoid.add(self.port)
                self.start()
                return
            raise RuntimeError(f"node {self.name} exited ({self.proc.returncode}):\n{self.output()[-3000:]}")

    def wait_listening(self, timeout: float = LISTEN_TIMEOUT) -> dict[str, Any]:
        """Block until the node listens (bounded); its ``listening`` event."""
        end = time.monotonic() + timeout
        while True:
            event = self.listening()
            if event is not None:
                self.listened = True
                return event
            self.check()
            if time.monotonic() > end:
                raise TimeoutError(f"node {self.name} not listening after {timeout} s:\n{self.output()[-3000:]}")
            time.sleep(0.02)

    async def listening_async(self, reactor: Any, timeout: float = LISTEN_TIMEOUT) -> dict[str, Any]:
        """:meth:`wait_listening` without blocking a running reactor."""
        end = time.monotonic() + timeout
        while True:
            event = self.listening()
            if event is not None:
                self.listened = True
                return event
            self.check()
            if time.monotonic() > end:
                raise TimeoutError(f"node {self.name} not listening after {timeout} s:\n{self.output()[-3000:]}")
            await sleep(reactor, 0.02)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        if self.running:
            assert self.proc is not None
            self.proc.send_signal(sig)

    def kill(self) -> None:
        """SIGKILL: the process ends at once, no lease ended, nothing said to anyone."""
        self.signal(signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(timeout=STOP_TIMEOUT)
        self.paused = False

    def pause(self, timeout: float = 5.0) -> None:
        """SIGSTOP: the process stops running (returns once it has); its sockets stay open (the kernel still accepts)."""
        self.signal(signal.SIGSTOP)
        self.paused = True
        end = time.monotonic() + timeout
        while self.state() not in ("T", "t", None):
            if time.monotonic() > end:
                raise TimeoutError(f"node {self.name} did not stop")
            time.sleep(0.001)

    def state(self) -> str | None:
        """The process state letter of /proc/PID/stat (``T``: stopped); None once it ended."""
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return None

    def resume(self) -> None:
        """SIGCONT: it runs on from where it stopped, believing it still owns its rooms."""
        self.signal(signal.SIGCONT)
        self.paused = False

    def terminate(self) -> None:
        """Send SIGTERM (a clean shutdown) without waiting; once per start (a second SIGTERM
        would make Twisted log that its reactor is no longer running)."""
        if self.paused:
            self.resume()
        if not self.terminated:
            self.terminated = True
            self.signal(signal.SIGTERM)

    def stop(self, timeout: float = STOP_TIMEOUT) -> int | None:
        """SIGTERM (a clean shutdown: the lease ended, clients told), SIGKILL after ``timeout``."""
        if self.proc is None:
            return None
        if self.running:
            self.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout)
        self.paused = False
        return self.proc.returncode

    def lines(self, word: str) -> list[str]:
        """Log lines of every start naming ``word`` (an event name like ``rooms_taken_over``)."""
        try:
            text = self.log.read_text(errors="replace")
        except FileNotFoundError:
            return []
        return [line for line in text.splitlines() if word in line]

    def cpu_seconds(self) -> float:
        """utime + stime of the process so far (from /proc; 0 once it ended)."""
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Cluster:
    """``n`` nodes ``n1``… on ``127.0.0.2``… over the database ``dsn``, always cleaned up."""

    def __init__(self, dsn: str, workdir: Path, n: int = 3, *, extra: Sequence[str] = (),
                 front: bool = False, env: dict[str, str] | None = None, host: str | None = None) -> None:
        if not 1 <= n <= 200:
            raise ValueError("1..200 nodes")
        self.dsn = dsn
        self.workdir = workdir
        options = server_options()
        self.options = options
        # Each node its own address (127.0.0.2 …), or all on ``host`` with their own ports
        # (load generators that dial one address).
        self.nodes = [Node(f"n{i + 1}", host or f"127.0.0.{i + 2}", dsn, workdir, extra=extra, options=options, env=env)
                      for i in range(n)]
        taken: set[int] = set()
        for node in self.nodes:  # distinct ports (nodes on one host would otherwise be handed the same)
            if node.port in taken:
                node.port = free_port(node.host, avoid=taken)
            taken.add(node.port)
        for node in self.nodes:
            node.avoid = taken
        if front:  # no balancer here: the front address names the first node (what an operator's LB would pass on)
            for node in self.nodes:
                node.front = self.nodes[0].address

    def start(self, timeout: float = LISTEN_TIMEOUT) -> Cluster:
        """Start every node at once and wait (bounded) until each listens."""
        for node in self.nodes:
            node.start()
        for node in self.nodes:
            node.wait_listening(timeout)
        return self

    def close(self) -> None:
        """End every process still running (SIGCONT first for a paused one), SIGKILL past the bound."""
        for node in self.nodes:
            if node.running:
                node.terminate()
        for node in self.nodes:
            with contextlib.suppress(Exception):
                node.stop()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def live(self) -> list[Node]:
        """The nodes running and not paused."""
        return [node for node in self.nodes if node.running and not node.paused]

    def addresses(self) -> list[tuple[str, int]]:
        return [node.address for node in self.nodes]

    def node_at(self, host: str, port: int) -> Node | None:
        return next((node for node in self.nodes if node.address == (host, port)), None)


@contextlib.contextmanager
def running(dsn: str, workdir: Path, n: int = 3, **kwargs: Any) -> Iterator[Cluster]:
    """A started cluster for the block, every node ended after it."""
    cluster = Cluster(dsn, workdir, n, **kwargs)
    try:
        yield cluster.start()
    finally:
        cluster.close()


# ----- the database, read from outside -------------------------------------------------------------


def db_rooms(dsn: str) -> dict[str, tuple[str | None, int]]:
    """Every stored room: code -> (owner node, epoch)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as db:
        return {code: (owner, int(epoch)) for code, owner, epoch in db.execute("SELECT code, owner, epoch FROM rooms")}


def db_actions(dsn: str, match_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """The stored actions of each match, in seq order (the rows' JSON as stored)."""
    import psycopg

    out: dict[str, list[dict[str, Any]]] = {mid: [] for mid in match_ids}
    with psycopg.connect(dsn, autocommit=True) as db:
        for mid, seq, data in db.execute(
            "SELECT match_id, seq, data FROM actions WHERE match_id = ANY(%s) ORDER BY match_id, seq", (list(match_ids),)
        ):
            row = json.loads(data)
            row.setdefault("seq", seq)
            out[mid].append(row)
    return out


def db_snapshot(dsn: str, codes: Sequence[str]) -> dict[str, Any]:
    """Everything stored about ``codes``: room rows (data, owner, epoch), their matches' actions and results."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as db:
        rooms = {code: (data, owner, int(epoch)) for code, data, owner, epoch in db.execute(
            "SELECT code, data, owner, epoch FROM rooms WHERE code = ANY(%s)", (list(codes),))}
        matches = []
        for data, _, _ in rooms.values():
            match = json.loads(data).get("match")
            if isinstance(match, dict):
                matches.append(match["id"])
        actions = list(db.execute(
            "SELECT match_id, seq, data FROM actions WHERE match_id = ANY(%s) ORDER BY match_id, seq", (matches,)))
        results = list(db.execute("SELECT match_id, record FROM results WHERE room = ANY(%s) ORDER BY match_id",
                                  (list(codes),)))
    return {"rooms": rooms, "actions": actions, "results": results}


AUDITED = ("rooms", "actions", "results", "players", "rated_results")
"""The tables whose every committed row change :func:`install_audit` records with its writer."""

AUDIT_SQL = """
CREATE TABLE IF NOT EXISTS cluster_audit (
    at timestamptz NOT NULL DEFAULT clock_timestamp(), writer text NOT NULL, tab text NOT NULL,
    op text NOT NULL, key text);
CREATE OR REPLACE FUNCTION cluster_audit_row() RETURNS trigger LANGUAGE plpgsql AS $audit$
DECLARE
    r jsonb := CASE WHEN TG_OP = 'DELETE' THEN to_jsonb(OLD) ELSE to_jsonb(NEW) END;
BEGIN
    INSERT INTO cluster_audit (writer, tab, op, key) VALUES (
        current_setting('application_name'), TG_TABLE_NAME, TG_OP,
        COALESCE(r ->> 'code', (r ->> 'match_id') || COALESCE(':' || (r ->> 'seq'), ''), r ->> 'key_hash'));
    RETURN NULL;
END
$audit$;
"""


def install_audit(dsn: str) -> None:
    """Record every committed change of the room tables with the writing node (its connection's
    ``application_name``, ``mine-duel-server NODE``) and the database's time: a row change rolled
    back (a commit the fence refused) leaves no audit row, exactly as it leaves no data. Run it
    once the first node has created the schema."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as db:
        db.execute(AUDIT_SQL)
        for table in AUDITED:
            db.execute(f"DROP TRIGGER IF EXISTS cluster_audit ON {table}")
            db.execute(f"CREATE TRIGGER cluster_audit AFTER INSERT OR UPDATE OR DELETE ON {table} "
                       "FOR EACH ROW EXECUTE FUNCTION cluster_audit_row()")


@dataclass(frozen=True)
class Audited:
    """One committed row change: when (database clock), by which node, which table, what, which key."""

    at: Any
    writer: str
    tab: str
    op: str
    key: str | None


def audit_rows(dsn: str) -> list[Audited]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as db:
        return [Audited(*row) for row in db.execute("SELECT at, writer, tab, op, key FROM cluster_audit ORDER BY at")]


def db_now(dsn: str) -> Any:
    """The database's clock now (the leases' clock)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as db:
        return db.execute("SELECT clock_timestamp()").fetchone()[0]  # type: ignore[index]


# ----- bots ----------------------------------------------------------------------------------------


def sleep(reactor: Any, seconds: float) -> Any:
    from twisted.internet.task import deferLater

    return deferLater(reactor, seconds, lambda: None)


class Lost(Exception):
    """The seat's node stopped answering or the connection closed: fail over."""


async def bounded(reactor: Any, d: Any, seconds: float) -> Any:
    """``await d`` for at most ``seconds`` (then :class:`Lost`)."""
    from twisted.internet import defer

    d.addTimeout(seconds, reactor)
    try:
        return await d
    except defer.TimeoutError:
        raise Lost(f"no answer within {seconds} s") from None


def event_key(event: dict[str, Any]) -> tuple[Any, ...]:
    """What must be the same each time an event is shown (``at`` may differ by rounding)."""
    cell = event.get("cell")
    return event["seq"], event["by"], event["action"], None if cell is None else tuple(cell), bool(event.get("auto"))


@dataclass
class Problem:
    """Something a seat saw that must never happen (the test fails on any)."""

    seat: str
    what: str


@dataclass
class Ear:
    """The listener of one connection of a seat: forwards to the seat, which knows if it is current."""

    seat: Seat
    client: Any = None

    def message_received(self, message: Any) -> None:
        self.seat.heard(self, message)

    def malformed_line(self, line: bytes, problem: str) -> None:
        self.seat.problems.append(Problem(self.seat.label, f"malformed line {line[:80]!r}: {problem}"))


@dataclass
class Seat:
    """One bot seat playing through the cluster (see the module docstring)."""

    label: str
    play: Play
    source: str = "127.0.0.1"  # the address it connects from (each player its own: per-address limits)
    room: str = ""
    token: str = ""
    node: tuple[str, int] = ("", 0)
    client: Any = None
    ear: Ear | None = None
    seat: int = -1
    match_id: str = ""
    state: dict[str, Any] | None = None
    seen: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)  # match id -> events in seq order
    acked: dict[str, list[tuple[int, dict[str, Any]]]] = field(default_factory=dict)  # match id -> (seq after, move)
    ends: dict[str, dict[str, Any]] = field(default_factory=dict)  # match id -> match_end
    seat_in: dict[str, int] = field(default_factory=dict)  # match id -> its record seat there (a rematch swaps, O14)
    problems: list[Problem] = field(default_factory=list)
    stale: list[Ear] = field(default_factory=list)  # connections left open when their node stopped answering
    stale_heard: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (node, message) on those
    failovers: int = 0
    spare: int = 0  # matches that ended during the warm-up (replaced by a rematch, not counted: Play.warmup)
    moved_followed: int = 0
    resumed_at: list[float] = field(default_factory=list)  # when each failover's resume was answered
    ack_times: list[float] = field(default_factory=list)  # when each acknowledged action was answered
    fresh: bool = False  # the next state on this connection is a resume's full history
    moved_to: tuple[str, int] | None = None
    playing: bool = True
    new_state: Any = None

    # ----- hearing --------------------------------------------------------------------------------
    def heard(self, ear: Ear, message: Any) -> None:
        obj = message.wire()
        if ear is not self.ear:
            self.stale_heard.append((f"{ear.client.transport.getPeer().host}" if ear.client and ear.client.transport
                                     else "?", obj))
            return
        kind = obj["type"]
        if kind == "state":
            self._state(obj)
        elif kind == "match_start":
            self.seat = obj["seat"]
            self.match_id = obj["match_id"]
        elif kind == "match_end":
            self.ends[obj["match_id"]] = obj
            self.play.ended(self, obj)
        elif kind == "moved" and obj.get("id") is None:  # unsolicited: the node stops serving the room
            self.moved_to = (obj["host"], obj["port"])
            self.play.counts["moved_unsolicited"] += 1
            self._drop()
        elif kind == "server_closing":
            self.play.counts["server_closing"] += 1

    def _state(self, st: dict[str, Any]) -> None:
        mid = st["match_id"]
        seen = self.seen.setdefault(mid, [])
        events = [event_key(e) for e in st["events"]]
        if self.fresh:  # a resume: every event of the match so far
            self.fresh = False
            if events[: len(seen)] != seen:
                self.problems.append(Problem(self.label, f"resume history of {mid} differs from what was seen: "
                                                         f"{events[: len(seen)]} vs {seen}"))
            seen.extend(events[len(seen):])
        else:
            for key in events:
                if key[0] != len(seen):
                    self.problems.append(Problem(self.label, f"event seq {key[0]} of {mid} after {len(seen)} seen"))
                    continue
                seen.append(key)
        if st["seq"] != len(seen):
            self.problems.append(Problem(self.label, f"state seq {st['seq']} of {mid} with {len(seen)} events seen"))
        self.state = st
        self.match_id = mid
        self.seat = st["seat"]
        self.seat_in[mid] = st["seat"]
        if self.new_state is not None and not self.new_state.called:
            d, self.new_state = self.new_state, None
            d.callback(None)

    # ----- connecting -----------------------------------------------------------------------------
    async def connect(self, host: str, port: int) -> None:
        """A new current connection to ``host:port`` from this seat's own address, greeted (bounded)."""
        from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol

        from mineduel.server.client import LineClient

        reactor = self.play.reactor
        ear = Ear(self)
        endpoint = TCP4ClientEndpoint(reactor, host, port, timeout=int(self.play.answer_s) + 1,
                                      bindAddress=(self.source, 0))
        client = LineClient("cluster-bot/1", listener=ear, keep=False)
        try:
            await bounded(reactor, connectProtocol(endpoint, client), self.play.answer_s)
        except Lost:
            raise
        except Exception as exc:  # noqa: BLE001 - refused, reset: this node is not there
            raise Lost(f"connect {host}:{port}: {exc}") from None
        ear.client = client
        self._drop()
        self.client, self.ear, self.node = client, ear, (host, port)
        self.fresh = True
        await self.ask("hello", protocol=1, client="cluster-bot/1")

    def _drop(self, keep: bool = False) -> None:
        """Forget the current connection: closed, or (``keep``) left open as a stale one."""
        if self.client is None:
            return
        client, ear = self.client, self.ear
        self.client = self.ear = None
        if keep and ear is not None:
            self.stale.append(ear)
        elif client.transport is not None:
            client.transport.abortConnection()

    async def ask(self, kind: str, **fields: Any) -> dict[str, Any]:
        """A request on the current connection, answered within ``answer_s`` or :class:`Lost`."""
        from mineduel.server.client import ServerError

        client = self.client
        if client is None or not client.connected_:
            raise Lost("not connected")
        try:
            reply: dict[str, Any] = await bounded(self.play.reactor, _deferred(client.request(kind, **fields)),
                                                  self.play.answer_s)
        except ServerError:
            raise
        except ConnectionError as exc:
            raise Lost(str(exc)) from None
        return reply

    async def enter(self, how: str, **fields: Any) -> dict[str, Any]:
        """``create_room`` / ``join`` / ``resume`` on the current node, following ``moved`` (at most 3)."""
        for _ in range(4):
            try:
                reply = await self.ask(how, **fields)
            except Exception as exc:  # the line client raises MovedError for a moved reply
                moved = getattr(exc, "moved", None)
                if moved is None:
                    raise
                host, port = moved.host, moved.port
            else:
                if reply["type"] != "moved":
                    return reply
                host, port = reply["host"], reply["port"]
            self.moved_followed += 1
            self.play.counts["moved_followed"] += 1
            await self.connect(host, port)
        raise Lost("moved more than 3 times in a row")

    async def failover(self, why: str, keep_stale: bool = False) -> None:
        """Find a live node serving the room (or taking it over) and resume there, within ``failover_s``."""
        from mineduel.server.client import ServerError

        play = self.play
        self.failovers += 1
        play.counts[f"failover:{why[:40]}"] += 1
        self._drop(keep=keep_stale)
        end = time.monotonic() + play.failover_s
        order = [a for a in play.addresses if a != self.node] + [self.node]
        tries = 0
        while time.monotonic() < end:
            target = self.moved_to or order[tries % len(order)]
            self.moved_to = None
            tries += 1
            try:
                await self.connect(*target)
                await self.enter("resume", room=self.room, token=self.token)
                self.resumed_at.append(time.monotonic())
                return
            except ServerError as exc:
                if exc.code not in ("room_not_found",):
                    play.counts[f"resume:{exc.code}"] += 1
            except Lost:
                pass
            self._drop()
            if tries % len(order) == 0:
                await sleep(play.reactor, play.retry_s)
        self.problems.append(Problem(self.label, f"no live node resumed room {self.room} within {play.failover_s} s"))
        raise Lost("failover gave up")

    # ----- playing --------------------------------------------------------------------------------
    async def run(self) -> None:
        """Play until the match (and its rematches) end as the :class:`Play` says; fail over when needed."""
        from mineduel.server.client import ServerError

        play = self.play
        last_ping = time.monotonic()
        while self.playing and not play.finished(self):
            try:
                if self.client is None or not self.client.connected_:
                    await self.failover("connection lost")
                    continue
                st = self.state
                mine = (st is not None and st["to_move"] == "me" and st["result"] is None
                        and st["seq"] < play.hold_at and play.may_act(self))
                if mine:
                    assert st is not None
                    await sleep(play.reactor, play.think())
                    if self.state is not st or self.client is None:
                        continue
                    move = choose(st, play.rng)
                    try:
                        ok = await self.ask(move["type"], match_id=st["match_id"], seq=st["seq"], **move["fields"])
                    except ServerError as exc:
                        play.counts[f"refused:{exc.code}"] += 1
                        if exc.code not in ("stale_state", "not_your_turn", "game_over", "grace_expired"):
                            self.problems.append(Problem(self.label, f"{move['type']} refused: {exc.code}"))
                        await self.wait_state(play.answer_s)
                        continue
                    self.acked.setdefault(st["match_id"], []).append((ok["seq"], {"type": move["type"], **move["fields"]}))
                    play.acked += 1
                    self.ack_times.append(time.monotonic())
                    if self.state is st:
                        await self.wait_state(play.answer_s)
                    continue
                if time.monotonic() - last_ping >= play.ping_s:
                    last_ping = time.monotonic()
                    await self.ask("ping")
                    continue
                await self.wait_state(play.ping_s)
            except Lost as exc:
                if str(exc) == "failover gave up":
                    return
                await self.failover(str(exc), keep_stale=play.keep_stale and self.client is not None)

    async def wait_state(self, seconds: float) -> None:
        """Until the next ``state`` on the current connection, or ``seconds`` (no error either way)."""
        from twisted.internet import defer

        d: defer.Deferred[None] = defer.Deferred()
        self.new_state = d
        timer = self.play.reactor.callLater(seconds, lambda: None if d.called else d.callback(None))
        await d
        if timer.active():
            timer.cancel()


def source_address(i: int) -> str:
    """The ``i``-th player's own loopback address (127.1.0.1 …): players are many addresses, as on the Internet."""
    if not 0 <= i < 250 * 250:
        raise ValueError("at most 62,500 players")
    return f"127.1.{i // 250}.{i % 250 + 1}"


def _deferred(coro: Any) -> Any:
    from twisted.internet import defer

    return defer.ensureDeferred(coro)


def choose(st: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """A legal move from the seat's own ``state`` (the engine's target rule, as the load bots)."""
    from mineduel.shared.rules.bitboard import cells
    from mineduel.shared.rules.engine import Phase
    from mineduel.shared.rules.views import targets_of

    def mask(rows: list[str]) -> int:
        layer = "".join(rows)
        return sum(1 << i for i, ch in enumerate(layer) if ch != ".")

    board = st["board"]
    phase = Phase(st["phase"])
    explore, plant, flag, _ = targets_of(phase, mask(board["numbers"]), mask(board["my_mines"]), 0,
                                         mask(board["markers"]), st["quota_left"])
    if phase is Phase.END_WAIT:
        return {"type": "end_turn", "fields": {}}
    c = rng.choice(list(cells(explore or plant)))
    return {"type": "explore" if explore else "plant", "fields": {"cell": [c >> 3, c & 7]}}


class Play:
    """The matches of a run: pace, limits and counters shared by every seat."""

    def __init__(self, reactor: Any, addresses: Sequence[tuple[str, int]], *, seed: int = 1,
                 think: tuple[float, float] = (0.0, 0.0), answer_s: float = 2.0, ping_s: float = 0.5,
                 failover_s: float = 20.0, retry_s: float = 0.1, keep_stale: bool = False,
                 rematches: int = 0) -> None:
        from collections import Counter

        self.reactor = reactor
        self.addresses = list(addresses)
        self.rng = random.Random(seed)
        self.think_range = think
        self.answer_s = answer_s
        self.ping_s = ping_s
        self.failover_s = failover_s
        self.retry_s = retry_s
        self.keep_stale = keep_stale
        self.rematches = rematches
        self.stopping = False  # no more rematches: each seat ends with the match it is in
        self.hold_at = 1 << 30  # no action once a match's seq reaches this (to stop at a known point)
        self.warmup = False
        """While True a match that ends (a KO is possible after a few random moves) is replaced by a
        rematch that does not count: a test can wait for every room to be mid-match."""
        self.acked = 0
        self.counts: Counter[str] = Counter()
        self.seats: list[Seat] = []
        self.pairs: list[tuple[Seat, Seat]] = []
        self.gate: Callable[[Seat], bool] | None = None

    def think(self) -> float:
        lo, hi = self.think_range
        return 0.0 if hi <= 0 else self.rng.uniform(lo, hi)

    def may_act(self, seat: Seat) -> bool:
        return self.gate is None or self.gate(seat)

    def ended(self, seat: Seat, end: dict[str, Any]) -> None:
        """A match ended: the room's seats ask for a rematch while rematches are left (or in the warm-up)."""
        if self.warmup:
            seat.spare += 1
        if len(seat.ends) - seat.spare <= self.rematches and not self.stopping:
            self.reactor.callLater(0, self._rematch, seat)

    def _rematch(self, seat: Seat) -> None:
        if seat.client is not None and seat.client.connected_:
            _deferred(seat.ask("rematch")).addErrback(lambda _: None)

    def finished(self, seat: Seat) -> bool:
        """Its last match ended: ``rematches`` + 1 of them, or the one it is in once ``stopping``."""
        return len(seat.ends) - seat.spare > self.rematches or (self.stopping and seat.match_id in seat.ends)

    async def open_room(self, index: int, node: tuple[str, int]) -> tuple[Seat, Seat]:
        """Two seats, a room created on ``node`` and joined there, both ready: a match starts."""
        a, b = Seat(f"m{index}a", self, source_address(2 * index)), Seat(f"m{index}b", self, source_address(2 * index + 1))
        await a.connect(*node)
        created = await a.ask("create_room", name=f"a{index}", client_seed=f"a{index}")
        a.room, a.token = created["room"], created["token"]
        await b.connect(*node)
        joined = await b.enter("join", room=a.room, name=f"b{index}", client_seed=f"b{index}")
        b.room, b.token = joined["room"], joined["token"]
        a.fresh = b.fresh = False  # a new match's states come one by one
        await a.ask("ready")
        await b.ask("ready")
        self.seats += (a, b)
        self.pairs.append((a, b))
        return a, b


__all__ = ["Cluster", "Node", "Play", "Problem", "Seat", "db_actions", "db_rooms", "db_snapshot", "running"]
