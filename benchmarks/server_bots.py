"""Load generator for ``bench_server.py``: bot players over real TCP, one Twisted reactor.

One call of :func:`run` is one benchmark run in a fresh process: it starts the server as a
subprocess (``server_probe.py`` around the unchanged ``mine-duel-server``), opens the bots'
connections, plays, measures and stops the server. It returns a JSON-able dict.

Bots speak docs/PROTOCOL.md through the shared line client (``mineduel.server.client.LineClient``:
each line read once into its typed message, no message history kept, so memory stays flat over
long runs). Each bot keeps its own view: the latest ``state`` it received. On its
turn it picks a legal move from that view alone:

* ``open_explore``/``explore``: explore a uniformly drawn explorable cell (closed, no marker,
  not its own mine) — the opponent's mines are unknown, so this may end the match by KO;
* ``open_plant``/``plant``: plant on such a cell;
* ``end_wait``: with probability ``flag_p`` flag a closed unmarked cell (if the quota allows),
  else ``end_turn``.

Every action carries ``match_id`` and ``seq`` (the server refuses a stale one). When a match
ends both bots send ``rematch`` (sides swap); every ``new_room_every``-th match the pair leaves
instead and sets up a fresh room (``create_room``/``join``/``ready``), so rooms churn too.

Round trip = from writing an action request to reading its ``ok`` (the server has validated
the action, committed it to SQLite and written both players' ``state`` before the ``ok``).

Spectators (``spectators`` per match, PROTOCOL.md §16): each pair has that many
:class:`Watcher` connections which ``spectate`` every room the pair opens (from its creation, so
they see the whole match, its rematches and the next room after ``room_closed``). A watcher reads
every line but only looks at its first bytes (it answers ``ping``, counts ``spectate_state``
lines and bytes, keeps the last one): the load generator shares the machine with the server, so
a spectator costs it as little as reading a socket can; the last view of each watcher is read
with the strict parser at the end (``spectate_state_valid``).
"""

from __future__ import annotations

import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from itertools import count
from pathlib import Path
from typing import Any, NamedTuple

import orjson
from twisted.internet import defer, error, protocol
from twisted.internet.task import deferLater
from twisted.protocols.basic import LineOnlyReceiver

from mineduel.server.client import LineClient
from mineduel.shared.rules.bitboard import cells
from mineduel.shared.rules.engine import Phase
from mineduel.shared.rules.views import targets_of
from mineduel.shared.wire import codec
from mineduel.shared.wire import messages as m

HERE = Path(__file__).resolve().parent
CLK_TCK = os.sysconf("SC_CLK_TCK")
ACTIONS = frozenset({"explore", "plant", "flag", "unflag", "end_turn"})
RATE, RATE_BURST = 18.0, 30.0  # actions per second per bot, a little under the server's 20/40


# ----- process figures -------------------------------------------------------------------------
def rss_bytes(pid: int) -> int:
    """VmRSS of ``pid`` from /proc/PID/status."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def cpu_split(pid: int) -> tuple[float, float]:
    """(utime, stime) of ``pid`` in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) / CLK_TCK, int(fields[12]) / CLK_TCK


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` (seconds)."""
    return sum(cpu_split(pid))


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of all CPUs from /proc/stat."""
    with open("/proc/stat") as f:
        parts = [int(x) for x in f.readline().split()[1:]]
    idle = parts[3] + parts[4]
    return sum(parts) - idle, sum(parts)


def other_cpu(busy_a: tuple[float, float], busy_b: tuple[float, float], span: float, ours: float) -> float:
    """Cores used by processes other than the server and this load generator during a window."""
    return max(0.0, (busy_b[0] - busy_a[0]) / CLK_TCK / span - ours)


def fsync_ms(directory: Path, n: int = 20) -> float:
    """Median time of one 4 KB write + fsync in ``directory`` (the database's disk), in ms."""
    path = directory / "fsync-probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    times = []
    try:
        for _ in range(n):
            os.write(fd, b"x" * 4096)
            t = time.perf_counter()
            os.fsync(fd)
            times.append(time.perf_counter() - t)
    finally:
        os.close(fd)
        path.unlink()
    return sorted(times)[n // 2] * 1000


def raise_nofile(want: int = 65536) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(hard, want)))
        except (ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    k = min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))
    return s[k]


# ----- the server subprocess ---------------------------------------------------------------------
class ServerProcess:
    """``server_probe.py`` + ``mine-duel-server`` on a free loopback port, logs to a file."""

    def __init__(self, workdir: Path, db: Path, *, db_sync: str, max_conns: int, profile: str | None = None,
                 experiments: list[str] | None = None, extra: list[str] | None = None) -> None:
        self.experiments = experiments or []
        self.census = False
        self.workdir = workdir
        self.db = db
        self.db_sync = db_sync
        self.max_conns = max_conns
        self.profile = profile
        self.extra = extra or []
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        self.log = self.workdir / f"server{self.starts}.log"
        self.probe = self.workdir / f"probe{self.starts}.jsonl"
        cmd = [sys.executable, str(HERE / "server_probe.py"), "--probe", str(self.probe)]
        if self.profile:
            cmd += ["--profile", f"{self.profile}.{self.starts}" if self.starts > 1 else self.profile]
        for name in self.experiments:
            cmd += ["--experiment", name]
        if self.census:
            cmd += ["--census"]
        cmd += ["--", "--host", "127.0.0.1", "--port", "0", "--no-discovery", "--db", str(self.db),
                "--db-sync", self.db_sync, "--max-connections-per-address", str(self.max_conns),
                "--max-connections", str(self.max_conns),
                # every bot connects from 127.0.0.1, and thousands of rooms wait for their joiner at once
                "--max-open-rooms-per-address", str(self.max_conns),
                # ... so the per-address limits of issue 15 are lifted too (each bot keeps to its own 20/s)
                "--max-rooms-per-address", str(self.max_conns), "--address-rate", "1000000",
                "--connection-rate", "1000000", "--max-records-per-address", "1000000000",
                "--max-records-per-pair", "1000000000", "--max-records", "1000000000", *self.extra]
        self.started_at = time.monotonic()
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        self.port = 0

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def poll_port(self) -> int:
        if self.port:
            return self.port
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"server exited early:\n{self.log.read_text()[-3000:]}")
        for line in self.log.read_text(errors="replace").splitlines():
            if " listening tcp=" in line:
                self.port = int(line.split(" listening tcp=", 1)[1].split()[0])
        return self.port

    def probe_lines(self) -> list[dict[str, Any]]:
        try:
            text = self.probe.read_text()
        except FileNotFoundError:
            return []
        return [orjson.loads(x) for x in text.splitlines() if x.strip()]

    async def stop_async(self, reactor: Any, sig: int = signal.SIGTERM, timeout: float = 60.0) -> None:
        """Signal the server and wait for it without blocking this reactor."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(sig)
        if not await wait_until(reactor, lambda: self.proc.poll() is not None, timeout):
            self.proc.kill()
            self.proc.wait()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


# ----- bots ----------------------------------------------------------------------------------------
class Conn(LineClient):
    """One TCP connection of a :class:`Player`: the shared line client (it answers pings), heard by
    its player, keeping no history."""

    def __init__(self, player: Player) -> None:
        super().__init__("bench-bot/1", listener=player, keep=False)
        self.player = player

    def connectionMade(self) -> None:
        super().connectionMade()
        if self.player.gen.nodelay:
            self.transport.setTcpNoDelay(True)
        self.player.connected(self)

    def connectionLost(self, reason: Any = None) -> None:
        super().connectionLost(reason)
        self.player.lost(self)


class Factory(protocol.ClientFactory):
    def __init__(self, player: Player) -> None:
        self.player = player

    def buildProtocol(self, addr: Any) -> Conn:
        return Conn(self.player)

    def clientConnectionFailed(self, connector: Any, reason: Any) -> None:
        self.player.failed(reason)


class Player:
    """A bot seat: logical state (room, token, latest view) over one or more connections."""

    def __init__(self, gen: LoadGen, pair: Pair, role: int) -> None:
        self.gen = gen
        self.pair = pair
        self.role = role  # 0 created the room, 1 joined it
        self.conn: Conn | None = None
        self.room: str | None = None
        self.token: str | None = None
        self.state: View | None = None
        self.pending: tuple[str, float] | None = None  # outstanding action: (id, sent at)
        self.timer: Any = None
        self.replies: dict[str, defer.Deferred[m.ServerMessage]] = {}
        self.ids = count(1)
        self.welcomed: defer.Deferred[None] | None = None
        # Stay under the server's per-connection limit (20 messages/s, bursts of 40): a line
        # over it is dropped with an `error rate_limited` that cannot carry the request's id.
        self.tokens = RATE_BURST
        self.refilled = time.monotonic()

    # connection
    def connect(self) -> defer.Deferred[None]:
        self.welcomed = defer.Deferred()
        self.gen.reactor.connectTCP("127.0.0.1", self.gen.port, Factory(self), timeout=30)
        return self.welcomed

    def connected(self, conn: Conn) -> None:
        self.conn = conn
        conn.send(m.Hello(1, "bench-bot/1", "h"))

    def failed(self, reason: Any) -> None:
        self.gen.errors["connect_failed"] += 1
        if self.welcomed is not None and not self.welcomed.called:
            self.welcomed.errback(reason)

    def lost(self, conn: Conn) -> None:
        if conn is not self.conn:
            return
        self.conn = None
        self.pending = None
        self.cancel_timer()
        replies, self.replies = self.replies, {}
        for d in replies.values():
            d.errback(ConnectionError("connection lost"))
        if self.welcomed is not None and not self.welcomed.called:
            self.welcomed.errback(ConnectionError("connection lost before welcome"))
        if not self.gen.expect_close:
            self.gen.errors["connection_lost"] += 1

    def cancel_timer(self) -> None:
        if self.timer is not None and self.timer.active():
            self.timer.cancel()
        self.timer = None

    def send(self, msg: dict[str, Any]) -> None:
        if self.conn is not None:
            self.conn.send(**msg)

    def request(self, kind: str, **fields: Any) -> defer.Deferred[m.ServerMessage]:
        rid = f"r{next(self.ids)}"
        d: defer.Deferred[m.ServerMessage] = defer.Deferred()
        if self.conn is None:
            d.errback(ConnectionError("not connected"))
            return d
        self.replies[rid] = d
        self.send({"type": kind, "id": rid, **fields})
        return d

    # messages
    def malformed_line(self, line: bytes, problem: str) -> None:
        self.gen.errors["malformed_line"] += 1

    def message_received(self, msg: m.ServerMessage) -> None:
        gen = self.gen
        if isinstance(msg, m.Ping):  # the line client has answered it
            return
        if isinstance(msg, m.State):
            board = msg.board
            self.state = View(msg.match_id, msg.seq, msg.to_move == "me", msg.phase,
                              msg.quota_left, "".join(board.numbers), "".join(board.markers),
                              "".join(board.my_mines), msg.result is not None)
            for ev in msg.events:
                if ev.action == "timeout" and ev.by == "me":
                    gen.timeouts += 1
            self.plan()
            return
        rid = getattr(msg, "id", None)
        if rid is not None:
            if self.pending is not None and rid == self.pending[0]:
                sent = self.pending[1]
                self.pending = None
                if isinstance(msg, m.Ok):
                    gen.accepted += 1
                    if gen.recording:
                        gen.rtts.append(time.perf_counter() - sent)
                else:
                    gen.refused[msg.code if isinstance(msg, m.Error) else "?"] += 1
                self.plan()
                return
            if rid == "h" and isinstance(msg, m.Welcome):
                if self.welcomed is not None and not self.welcomed.called:
                    self.welcomed.callback(None)
                return
            d = self.replies.pop(rid, None)
            if d is not None:
                if isinstance(msg, m.Error):
                    gen.errors[f"{msg.request}:{msg.code}"] += 1
                    d.errback(RuntimeError(f"{msg.request}: {msg.code}: {msg.message}"))
                else:
                    d.callback(msg)
                return
        if isinstance(msg, m.MatchEnd):
            self.state = None
            self.cancel_timer()
            self.pair.match_ended(self, msg)
        elif isinstance(msg, m.MatchStart):
            self.pair.match_started(msg.match_id)
        elif isinstance(msg, m.Error):
            gen.errors[f"unsolicited:{msg.code}"] += 1
        elif isinstance(msg, m.ServerClosing):
            gen.expect_close = True

    # playing
    def plan(self) -> None:
        st = self.state
        if st is None or not st.my_turn or self.pending is not None or self.timer is not None:
            return
        gen = self.gen
        if not gen.playing or st.seq >= gen.stop_at_seq:
            return
        delay = gen.think()
        if delay <= 0.0:
            self.act()
        else:
            self.timer = gen.reactor.callLater(delay, self.act)

    def act(self) -> None:
        self.timer = None
        st = self.state
        if st is None or not st.my_turn or self.pending is not None or self.conn is None:
            return
        if not self.gen.playing or st.seq >= self.gen.stop_at_seq:
            return
        now = time.monotonic()
        self.tokens = min(RATE_BURST, self.tokens + (now - self.refilled) * RATE)
        self.refilled = now
        if self.tokens < 1.0:
            self.gen.throttled += 1
            self.timer = self.gen.reactor.callLater((1.0 - self.tokens) / RATE, self.act)
            return
        self.tokens -= 1.0
        msg = choose_move(st, self.gen.rng, self.gen.flag_p)
        rid = f"a{next(self.ids)}"
        msg["id"] = rid
        msg["seq"] = st.seq
        msg["match_id"] = st.match_id
        self.pending = (rid, time.perf_counter())
        self.conn.send(**msg)


class View(NamedTuple):
    """What a bot keeps of its latest ``state``: only strings and numbers, so the tuple is not
    tracked by the garbage collector (10,000 full ``state`` dicts made this process's own GC
    pauses ~100 ms, which showed up as server round trips)."""

    match_id: str
    seq: int
    my_turn: bool
    phase: str
    quota_left: int
    numbers: str  # the board layers, 64 characters each, cell 0 first
    markers: str
    my_mines: str
    over: bool


def _layer_mask(layer: str) -> int:
    """The cells of a 64-character board layer that are not ``.`` (cell 0 is bit 0)."""
    return int(layer[::-1].translate(_LAYER_BITS), 2)


_LAYER_BITS = dict.fromkeys(range(33, 127), "1") | {ord("."): "0"}


def choose_move(st: View, rng: random.Random, flag_p: float) -> dict[str, Any]:
    """A legal move for the seat to move, from its own ``state`` message only.

    The cells are the engine's one rule of legal targets (``targets_of``, what
    ``SeatView.targets`` reads); who owns a marker does not matter for explore, plant and flag.
    """
    phase = Phase(st.phase)
    explore, plant, flag, _ = targets_of(
        phase, _layer_mask(st.numbers), _layer_mask(st.my_mines), 0, _layer_mask(st.markers), st.quota_left
    )
    if phase is Phase.END_WAIT:
        if flag and rng.random() < flag_p:
            c = rng.choice(list(cells(flag)))
            return {"type": "flag", "cell": [c >> 3, c & 7]}
        return {"type": "end_turn"}
    c = rng.choice(list(cells(explore or plant)))  # never empty while the match runs (O9 ends it first)
    kind = "explore" if explore else "plant"
    return {"type": kind, "cell": [c >> 3, c & 7]}


class Watcher(LineOnlyReceiver):
    """A spectator connection (PROTOCOL.md §16) that costs the load generator little: it answers
    ``ping``, counts ``spectate_state`` lines, keeps the last one, and nothing else is parsed."""

    delimiter = b"\n"
    MAX_LENGTH = 1 << 20
    HELLO = codec.encode_message(m.Hello(1, "bench-watcher/1", "h"))
    PONG = codec.encode_message(m.PongReply())

    def __init__(self, gen: LoadGen) -> None:
        self.gen = gen
        self.watching: str | None = None  # the room code it asked for
        self.last: bytes = b""
        self.welcomed: defer.Deferred[None] = defer.Deferred()
        self.up = False

    def connectionMade(self) -> None:
        self.up = True
        self.transport.write(self.HELLO)

    def lineReceived(self, line: bytes) -> None:
        head = line[:24]
        gen = self.gen
        if head.startswith(b'{"type":"spectate_state"'):
            gen.watch_lines += 1
            gen.watch_bytes += len(line) + 1
            self.last = line
        elif head.startswith(b'{"type":"ping"'):
            self.transport.write(self.PONG)
        elif head.startswith(b'{"type":"welcome"'):
            if not self.welcomed.called:
                self.welcomed.callback(None)
        elif head.startswith(b'{"type":"room_closed"'):
            self.watching = None
        elif head.startswith(b'{"type":"error"'):
            gen.errors[f"watcher:{orjson.loads(line).get('code')}"] += 1

    def watch(self, code: str) -> None:
        if self.up and self.transport is not None:
            self.watching = code
            self.transport.write(codec.encode({"type": "spectate", "room": code}))

    def connectionLost(self, reason: Any = None) -> None:
        self.up = False
        if not self.welcomed.called:
            self.welcomed.errback(ConnectionError("watcher lost before welcome"))
        if not self.gen.expect_close:
            self.gen.errors["watcher_lost"] += 1

    def valid(self) -> bool | None:
        """Whether its last view reads with the strict parser (``None``: it has none)."""
        if not self.last:
            return None
        try:
            return isinstance(codec.decode_server(self.last), m.SpectateState)
        except m.BadMessage:
            return False


class WatcherFactory(protocol.ClientFactory):
    def __init__(self, gen: LoadGen) -> None:
        self.gen = gen
        self.made: Watcher | None = None

    def buildProtocol(self, addr: Any) -> Watcher:
        self.made = Watcher(self.gen)
        return self.made

    def clientConnectionFailed(self, connector: Any, reason: Any) -> None:
        self.gen.errors["watcher_connect_failed"] += 1


class Pair:
    """Two bots sharing rooms: create/join/ready, then rematch or a new room after each match."""

    def __init__(self, gen: LoadGen, index: int) -> None:
        self.gen = gen
        self.index = index
        self.players = (Player(gen, self, 0), Player(gen, self, 1))
        self.watchers: list[Watcher] = []  # its spectators (``gen.spectators``), connected by ``connect_watchers``
        self.finished = 0
        self.seen_start: set[str] = set()
        self.decisions: dict[str, str] = {}  # match id -> what the pair does after it
        self.busy = False  # setting up a room

    async def setup(self) -> None:
        """Create a room, join it, both ready: a match starts."""
        gen = self.gen
        self.busy = True
        try:
            a, b = self.players
            seed = f"{gen.rng.getrandbits(64):x}"
            created = await a.request("create_room", name=f"bot{self.index}a", client_seed=seed)
            assert isinstance(created, m.RoomCreated), created
            a.room, a.token = created.room, created.token
            for watcher in self.watchers:  # from the room's creation: the whole match, then its rematches
                watcher.watch(created.room)
            joined = await b.request("join", room=a.room, name=f"bot{self.index}b",
                                     client_seed=f"{gen.rng.getrandbits(64):x}")
            assert isinstance(joined, m.Joined), joined
            b.room, b.token = joined.room, joined.token
            await defer.gatherResults([a.request("ready"), b.request("ready")], consumeErrors=True)
            gen.rooms_created += 1
        finally:
            self.busy = False

    def match_started(self, match_id: str) -> None:
        if match_id not in self.seen_start:
            self.seen_start.add(match_id)
            self.gen.matches_started += 1

    def match_ended(self, player: Player, msg: m.MatchEnd) -> None:
        """Both bots get ``match_end``; the first one decides: rematch, or a new room."""
        gen = self.gen
        mid = msg.match_id
        decision = self.decisions.pop(mid, None)
        if decision is None:  # the first of the two
            self.finished += 1
            gen.matches_completed += 1
            gen.reasons[msg.result.reason] += 1
            self.seen_start.discard(mid)
            new_room = bool(gen.new_room_every) and self.finished % gen.new_room_every == 0
            decision = "room" if new_room else "rematch"
            self.decisions[mid] = decision
            if not gen.playing:
                return
            if new_room:
                gen.reactor.callLater(gen.think(), lambda: defer.ensureDeferred(self.new_room()).addErrback(gen.failure))
                return
        if decision == "rematch" and gen.playing:
            gen.reactor.callLater(gen.think(), self._rematch, player)

    def _rematch(self, player: Player) -> None:
        if player.conn is not None and self.gen.playing:
            player.request("rematch").addErrback(lambda _: None)

    async def new_room(self) -> None:
        if self.busy:
            return
        self.busy = True
        try:
            await defer.gatherResults([p.request("leave") for p in self.players], consumeErrors=True)
        finally:
            self.busy = False
        if self.gen.playing:
            await self.setup()


class LoadGen:
    """All pairs of one run, their counters and the pace."""

    def __init__(self, reactor: Any, port: int, *, think: tuple[float, float], flag_p: float = 0.25,
                 new_room_every: int = 5, seed: int = 1, spectators: int = 0) -> None:
        self.reactor = reactor
        self.spectators = spectators  # watcher connections per pair (PROTOCOL.md §16)
        self.watch_lines = 0
        self.watch_bytes = 0
        self.port = port
        self.think_range = think
        self.flag_p = flag_p
        self.new_room_every = new_room_every
        self.rng = random.Random(seed)
        self.nodelay = bool(int(os.environ.get("BENCH_NODELAY", "1")))
        self.pairs: list[Pair] = []
        self.playing = False
        self.stop_at_seq = 1 << 30
        self.recording = False
        self.expect_close = False
        self.accepted = 0
        self.throttled = 0  # actions a bot delayed to respect the server's rate limit
        self.timeouts = 0
        self.refused: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.reasons: Counter[str] = Counter()
        self.rtts: list[float] = []
        self.matches_started = 0
        self.matches_completed = 0
        self.rooms_created = 0

    def think(self) -> float:
        lo, hi = self.think_range
        return 0.0 if hi <= 0 else self.rng.uniform(lo, hi)

    def failure(self, f: Any) -> None:
        self.errors[f"flow:{f.getErrorMessage()[:60]}"] += 1

    def add_pairs(self, n: int) -> list[Pair]:
        new = [Pair(self, len(self.pairs) + i) for i in range(n)]
        self.pairs += new
        return new

    def players(self) -> list[Player]:
        return [p for pair in self.pairs for p in pair.players]

    async def connect_all(self, players: list[Player], batch: int = 40) -> None:
        """Open connections ``batch`` at a time (the server listens with Twisted's default backlog of 50: bigger bursts lose SYNs and wait 1 s)."""
        for i in range(0, len(players), batch):
            try:
                await defer.gatherResults([p.connect() for p in players[i : i + batch]], consumeErrors=True)
            except defer.FirstError as exc:  # gatherResults wraps the first connection's failure
                self.errors[f"connect:{str(exc)[:60]}"] += 1

    async def connect_watchers(self, pairs: list[Pair], batch: int = 40) -> None:
        """``spectators`` watcher connections per pair, ``batch`` at a time (as :meth:`connect_all`)."""
        todo = [pair for pair in pairs for _ in range(self.spectators)]
        for i in range(0, len(todo), batch):
            waiting = []
            for pair in todo[i : i + batch]:
                factory = WatcherFactory(self)
                self.reactor.connectTCP("127.0.0.1", self.port, factory, timeout=30)
                waiting.append((pair, factory))
            await wait_until(self.reactor, lambda w=waiting: all(f.made is not None for _, f in w), 30, 0.005)
            made = [(pair, f.made) for pair, f in waiting if f.made is not None]
            try:
                await defer.gatherResults([w.welcomed for _, w in made], consumeErrors=True)
            except defer.FirstError as exc:
                self.errors[f"watcher_connect:{str(exc)[:60]}"] += 1
            for pair, watcher in made:
                pair.watchers.append(watcher)

    def watchers(self) -> list[Watcher]:
        return [w for pair in self.pairs for w in pair.watchers]

    def watcher_figures(self) -> dict[str, Any]:
        """What the spectators saw (empty without spectators)."""
        if not self.spectators:
            return {"spectators": 0}
        watchers = self.watchers()
        checked = [w.valid() for w in watchers]
        return {"spectators": self.spectators, "watchers": len(watchers),
                "watchers_connected": sum(1 for w in watchers if w.up),
                "watchers_watching": sum(1 for w in watchers if w.up and w.watching is not None),
                "spectate_state_lines": self.watch_lines, "spectate_state_bytes": self.watch_bytes,
                "spectate_state_valid": sum(1 for c in checked if c), "spectate_state_invalid": sum(1 for c in checked if c is False)}

    async def setup_all(self, pairs: list[Pair], concurrency: int = 100) -> None:
        """Set up every pair's room, at most ``concurrency`` pairs at a time."""
        queue = list(pairs)

        async def worker() -> None:
            while queue:
                pair = queue.pop()
                try:
                    await pair.setup()
                except Exception as exc:  # noqa: BLE001 - counted; the run goes on with the pairs that made it
                    self.errors[f"setup:{str(exc)[:60]}"] += 1

        await defer.gatherResults([defer.ensureDeferred(worker()) for _ in range(concurrency)], consumeErrors=True)

    def start_playing(self) -> None:
        self.playing = True
        for p in self.players():
            p.plan()

    def stop_playing(self) -> None:
        self.playing = False
        for p in self.players():
            p.cancel_timer()

    def status(self) -> str:
        conns = sum(1 for p in self.players() if p.conn is not None)
        return (f"connections {conns:,}, rooms set up {self.rooms_created:,}, matches started "
                f"{self.matches_started:,}, completed {self.matches_completed:,}, actions {self.accepted:,}, "
                f"timeouts {self.timeouts:,}, errors {sum(self.errors.values()):,}")

    def start_progress(self, interval: float = 10.0) -> None:
        from twisted.internet.task import LoopingCall

        self._progress = LoopingCall(lambda: progress(self.status()))
        self._progress.clock = self.reactor
        self._progress.start(interval, now=False)

    def snapshot(self) -> dict[str, Any]:
        return {"t": time.monotonic(), "accepted": self.accepted, "completed": self.matches_completed,
                "timeouts": self.timeouts, "refused": sum(self.refused.values()), "watch_lines": self.watch_lines}


def start_pyspy(cfg: dict[str, Any], pid: int, seconds: float) -> subprocess.Popen[bytes] | None:
    """``py-spy record`` of the server over the measuring window (``--py-spy OUT``), idle stacks included."""
    out = cfg.get("pyspy")
    if not out:
        return None
    exe = Path(sys.executable).with_name("py-spy")
    cmd = [str(exe), "record", "--pid", str(pid), "--duration", str(max(1, int(seconds))), "--idle",
           "--rate", "200", "--format", "raw", "--output", out, "--nonblocking"]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def progress(text: str) -> None:
    print(f"  {time.strftime('%H:%M:%S')} {text}", file=sys.stderr, flush=True)


class OwnLag:
    """The load generator's own loop gaps and GC pauses (a stalled load generator inflates round trips)."""

    def __init__(self, reactor: Any, interval: float = 0.005) -> None:
        import gc

        self.reactor = reactor
        self.interval = interval
        self.max_gap = 0.0
        self.max_gc = 0.0
        self.last = time.monotonic()
        self._gc_start = 0.0
        gc.callbacks.append(self._gc)
        reactor.callLater(interval, self._tick)

    def _gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._gc_start = time.monotonic()
        else:
            self.max_gc = max(self.max_gc, time.monotonic() - self._gc_start)

    def _tick(self) -> None:
        now = time.monotonic()
        self.max_gap = max(self.max_gap, now - self.last)
        self.last = now
        self.reactor.callLater(self.interval, self._tick)

    def take(self) -> float:
        gap, self.max_gap = self.max_gap, 0.0
        return gap * 1000


def settle_gc() -> None:
    """Collect and freeze the load generator's heap once it is built (before a measuring window)."""
    import gc

    gc.collect()
    gc.freeze()


def quiet_gc(reactor: Any) -> None:
    """Load generator hygiene: freeze what survives each full collection (as the ``gc-freeze``
    server experiment does), so this process's own GC pauses stay short and do not show up as
    server round trips."""
    import gc

    pending = [False]

    def freeze() -> None:
        pending[0] = False
        gc.freeze()

    def callback(phase: str, info: dict) -> None:
        if phase == "stop" and info.get("generation") == 2 and not pending[0]:
            pending[0] = True
            reactor.callLater(0, freeze)

    gc.callbacks.append(callback)


def sleep(reactor: Any, seconds: float) -> defer.Deferred[None]:
    return deferLater(reactor, seconds, lambda: None)


async def wait_port(reactor: Any, server: ServerProcess, timeout: float = 30.0) -> int:
    end = time.monotonic() + timeout
    while not server.poll_port():
        if time.monotonic() > end:
            raise RuntimeError("server did not start listening")
        await sleep(reactor, 0.02)
    return server.port


async def wait_until(reactor: Any, cond: Any, timeout: float, step: float = 0.05) -> bool:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            return False
        await sleep(reactor, step)
    return True


def rtt_figures(rtts: list[float]) -> dict[str, Any]:
    return {"rtt_samples": len(rtts),
            "rtt_p50_ms": None if not rtts else percentile(rtts, 50) * 1000,
            "rtt_p99_ms": None if not rtts else percentile(rtts, 99) * 1000,
            "rtt_max_ms": None if not rtts else max(rtts) * 1000}


def probe_window(lines: list[dict[str, Any]], t0: float, t1: float) -> dict[str, Any]:
    win = [x for x in lines if "max_gap" in x and t0 <= x["t"] <= t1 + 0.1]
    gaps = [x["max_gap"] for x in win]
    gcs = [x for x in lines if x.get("event") == "gc" and t0 <= x["t"] <= t1 + 0.1]
    gen2 = [x["seconds"] for x in gcs if x["generation"] == 2]
    return {"max_gap_ms": max(gaps) * 1000 if gaps else None,
            "gc_max_ms": max((x["seconds"] for x in gcs), default=0.0) * 1000,
            "gc_gen2_count": len(gen2), "gc_gen2_total_s": sum(gen2),
            "gaps_over_20ms": sum(x["gaps_over_20ms"] for x in win)}


# ----- modes ------------------------------------------------------------------------------------------
async def saturation(reactor: Any, server: ServerProcess, cfg: dict[str, Any]) -> dict[str, Any]:
    """As fast as the server answers: every bot acts the moment its turn comes."""
    port = await wait_port(reactor, server)
    gen = LoadGen(reactor, port, think=(0.0, 0.0), seed=cfg["seed"], new_room_every=cfg["new_room_every"],
                  spectators=cfg.get("spectators", 0))
    pairs = gen.add_pairs(cfg["matches"])
    await gen.connect_all(gen.players())
    await gen.connect_watchers(pairs)
    gen.playing = True
    await gen.setup_all(pairs)
    settle_gc()
    gen.start_playing()
    await sleep(reactor, cfg["warmup"])
    gen.recording = True
    own_lag = OwnLag(reactor)
    spy = start_pyspy(cfg, server.pid, cfg["seconds"])
    a, cpu_a, own_a, split_a = gen.snapshot(), cpu_seconds(server.pid), time.process_time(), cpu_split(server.pid)
    busy_a = machine_busy()
    await sleep(reactor, cfg["seconds"])
    b, cpu_b, own_b, split_b = gen.snapshot(), cpu_seconds(server.pid), time.process_time(), cpu_split(server.pid)
    busy_b = machine_busy()
    gen.recording = False
    # tiny runs (--quick): play on, outside the window, until at least one match has ended
    await wait_until(reactor, lambda: gen.matches_completed > 0, 15)
    gen.stop_playing()
    if spy is not None:
        await wait_until(reactor, lambda: spy.poll() is not None, 30)
    await wait_until(reactor, lambda: all(p.pending is None for p in gen.players()), 10)
    span = b["t"] - a["t"]
    actions = b["accepted"] - a["accepted"]
    return {
        "mode": "saturation", "matches": cfg["matches"], "connections": (2 + gen.spectators) * cfg["matches"], "seconds": span,
        "actions": actions, "actions_per_s": actions / span,
        "completed_in_window": b["completed"] - a["completed"],
        "matches_completed": gen.matches_completed, "rooms_created": gen.rooms_created,
        "server_cpu": (cpu_b - cpu_a) / span, "loadgen_cpu": (own_b - own_a) / span,
        "loadgen_max_gap_ms": own_lag.take(), "loadgen_max_gc_ms": own_lag.max_gc * 1000,
        "other_cpu": other_cpu(busy_a, busy_b, span, (cpu_b - cpu_a + own_b - own_a) / span),
        "server_cpu_us_per_action": (cpu_b - cpu_a) / actions * 1e6 if actions else None,
        "server_user_us_per_action": (split_b[0] - split_a[0]) / actions * 1e6 if actions else None,
        "server_sys_us_per_action": (split_b[1] - split_a[1]) / actions * 1e6 if actions else None,
        "refused": dict(gen.refused), "errors": dict(gen.errors), "reasons": dict(gen.reasons),
        "timeouts": gen.timeouts, "throttled": gen.throttled,
        **gen.watcher_figures(), "spectate_state_per_s": (b["watch_lines"] - a["watch_lines"]) / span,
        **rtt_figures(gen.rtts),
        **probe_window(server.probe_lines(), a["t"], b["t"]),
    }


async def idle_scale(reactor: Any, server: ServerProcess, cfg: dict[str, Any]) -> dict[str, Any]:
    """Many connections and matches at a human pace: memory and round trips."""
    port = await wait_port(reactor, server)
    await sleep(reactor, cfg["settle"])
    rss0 = rss_bytes(server.pid)
    n = cfg["matches"]
    gen = LoadGen(reactor, port, think=tuple(cfg["think"]), seed=cfg["seed"], new_room_every=cfg["new_room_every"],
                  spectators=cfg.get("spectators", 0))
    pairs = gen.add_pairs(n)
    gen.start_progress()
    t = time.monotonic()
    await gen.connect_all(gen.players())
    await gen.connect_watchers(pairs)
    connect_s = time.monotonic() - t
    progress(f"connected: {gen.status()}")
    await sleep(reactor, cfg["settle"])
    rss1 = rss_bytes(server.pid)
    gen.playing = True  # matches that start early play at the human pace meanwhile
    t = time.monotonic()
    await gen.setup_all(pairs)
    setup_s = time.monotonic() - t
    progress(f"set up: {gen.status()}")
    settle_gc()
    gen.start_playing()
    await sleep(reactor, cfg["settle"])
    rss2 = rss_bytes(server.pid)
    await sleep(reactor, cfg["warmup"])
    gen.recording = True
    own_lag = OwnLag(reactor)
    spy = start_pyspy(cfg, server.pid, cfg["seconds"])
    a, cpu_a, own_a = gen.snapshot(), cpu_seconds(server.pid), time.process_time()
    busy_a = machine_busy()
    rss_peak = rss2
    series = [(0.0, rss2 / 2**20)]
    start = time.monotonic()
    end = start + cfg["seconds"]
    while time.monotonic() < end:
        await sleep(reactor, min(1.0, max(0.0, end - time.monotonic())))
        rss = rss_bytes(server.pid)
        rss_peak = max(rss_peak, rss)
        if time.monotonic() - start >= len(series) * 10.0:
            series.append((round(time.monotonic() - start), rss / 2**20))
    b, cpu_b, own_b = gen.snapshot(), cpu_seconds(server.pid), time.process_time()
    busy_b = machine_busy()
    gen.recording = False
    rss3 = rss_bytes(server.pid)
    census = None
    if server.census:
        server.proc.send_signal(signal.SIGUSR1)
        await wait_until(reactor, lambda: any(x.get("event") == "census" for x in server.probe_lines()), 30)
        census = next((x for x in server.probe_lines() if x.get("event") == "census"), None)
    connected = sum(1 for p in gen.players() if p.conn is not None)
    gen.stop_playing()
    if spy is not None:
        await wait_until(reactor, lambda: spy.poll() is not None, 30)
    span = b["t"] - a["t"]
    conns = (2 + gen.spectators) * n
    return {
        "mode": "idle-scale", "matches": n, "connections": conns, "connected_at_end": connected,
        "think_s": list(cfg["think"]), "seconds": span, "connect_s": connect_s, "setup_s": setup_s,
        "rss_base_mb": rss0 / 2**20, "rss_connected_mb": rss1 / 2**20, "rss_matches_mb": rss2 / 2**20,
        "rss_end_mb": rss3 / 2**20, "rss_peak_mb": rss_peak / 2**20,
        "kb_per_idle_connection": (rss1 - rss0) / conns / 1024,
        "kb_per_room": (rss2 - rss1) / n / 1024,
        "kb_per_room_end": (rss3 - rss1) / n / 1024,
        "census": census, "rss_series_mb": series,
        "actions_per_s": (b["accepted"] - a["accepted"]) / span,
        "completed_in_window": b["completed"] - a["completed"],
        "matches_completed": gen.matches_completed, "rooms_created": gen.rooms_created,
        "timeouts_in_window": b["timeouts"] - a["timeouts"],
        "server_cpu": (cpu_b - cpu_a) / span, "loadgen_cpu": (own_b - own_a) / span,
        "other_cpu": other_cpu(busy_a, busy_b, span, (cpu_b - cpu_a + own_b - own_a) / span),
        "loadgen_max_gap_ms": own_lag.take(), "loadgen_max_gc_ms": own_lag.max_gc * 1000,
        "refused": dict(gen.refused), "errors": dict(gen.errors), "reasons": dict(gen.reasons),
        **gen.watcher_figures(), "spectate_state_per_s": (b["watch_lines"] - a["watch_lines"]) / span,
        **rtt_figures(gen.rtts),
        **probe_window(server.probe_lines(), a["t"], b["t"]),
    }


PING = m.PingRequest(1)


class Pinger:
    """A separate connection pinging the server back to back: the outside view of loop stalls."""

    def __init__(self, reactor: Any, port: int) -> None:
        self.reactor = reactor
        self.port = port
        self.samples: list[tuple[float, float]] = []  # (sent at monotonic, rtt s)
        self.running = True
        self.player: Any = None

    async def run(self) -> None:
        while self.running:  # the port is listening before the reactor turns: connect early
            ok = await self._once()
            if not ok:
                await sleep(self.reactor, 0.005)

    async def _once(self) -> bool:
        reactor = self.reactor
        done: defer.Deferred[None] = defer.Deferred()
        pinger = self

        class P(LineClient):
            def __init__(self) -> None:
                super().__init__("bench-pinger/1", auto_pong=False, keep=False)

            def connectionMade(self) -> None:
                super().connectionMade()
                self.sent = time.monotonic()
                self.send(PING)

            def message_received(self, message: m.ServerMessage, obj: Any) -> None:
                now = time.monotonic()
                if isinstance(message, m.Pong):
                    pinger.samples.append((self.sent, now - self.sent))
                if isinstance(message, (m.Pong, m.Error)):
                    if pinger.running:
                        self.sent = time.monotonic()
                        self.send(PING)
                    else:
                        self.transport.loseConnection()

            def connectionLost(self, reason: Any = None) -> None:
                super().connectionLost(reason)
                if not done.called:
                    done.callback(None)

        class F(protocol.ClientFactory):
            def buildProtocol(self, addr: Any) -> P:
                return P()

            def clientConnectionFailed(self, connector: Any, reason: Any) -> None:
                if not done.called:
                    done.errback(reason)

        reactor.connectTCP("127.0.0.1", self.port, F(), timeout=5)
        try:
            await done
        except error.ConnectError:  # clientConnectionFailed's reason: not listening yet
            return False
        return True

    def window(self, t0: float, t1: float) -> dict[str, Any]:
        # A ping sent before t1 whose answer came late still measures the window's stall.
        rtts = [r for s, r in self.samples if t0 <= s <= t1]
        return {"ping_samples": len(rtts), "ping_max_ms": max(rtts) * 1000 if rtts else None,
                "ping_p99_ms": percentile(rtts, 99) * 1000 if rtts else None}


async def populate(reactor: Any, server: ServerProcess, cfg: dict[str, Any]) -> tuple[LoadGen, dict[str, Any]]:
    """``matches`` rooms, each with a match in progress that has ``target_seq`` actions or more."""
    port = await wait_port(reactor, server)
    await sleep(reactor, cfg["settle"])
    rss0 = rss_bytes(server.pid)
    gen = LoadGen(reactor, port, think=(0.0, 0.0), seed=cfg["seed"], new_room_every=0)
    gen.stop_at_seq = cfg["target_seq"]
    pairs = gen.add_pairs(cfg["matches"])
    gen.start_progress()
    t = time.monotonic()
    await gen.connect_all(gen.players())
    progress(f"connected: {gen.status()}")
    gen.playing = True
    await gen.setup_all(pairs)
    progress(f"set up: {gen.status()}")
    gen.start_playing()

    def ready() -> bool:
        for pair in pairs:
            a, b = pair.players
            st = a.state
            if st is None or st.over or st.seq < cfg["target_seq"] or a.pending or b.pending:
                return False
        return True

    ok = await wait_until(reactor, ready, cfg["populate_timeout"], 0.25)
    gen.stop_playing()
    seqs = [pair.players[0].state.seq for pair in pairs if pair.players[0].state]
    return gen, {"populate_s": time.monotonic() - t, "populated": ok, "actions_stored": gen.accepted,
                 "mean_seq": sum(seqs) / max(1, len(seqs)), "rss_base_mb": rss0 / 2**20, "rss_populated_mb": rss_bytes(server.pid) / 2**20}


async def restore(reactor: Any, server: ServerProcess, cfg: dict[str, Any]) -> dict[str, Any]:
    """Populate, then restart the server ``restarts`` times, measuring each restore; then resume and play."""
    gen, out = await populate(reactor, server, cfg)
    out.update({"mode": "restore", "matches": cfg["matches"], "connections": 2 * cfg["matches"], "restarts": []})
    for i in range(cfg["restarts"]):
        gen.expect_close = True
        await server.stop_async(reactor, signal.SIGTERM)
        busy_a, t_a = machine_busy(), time.monotonic()
        server.db_sync = cfg["db_sync"]
        server.start()
        port = await wait_port(reactor, server)
        gen.port = port  # a new free port each start
        pinger = Pinger(reactor, port)
        ping_run = defer.ensureDeferred(pinger.run())
        ok = await wait_until(reactor, lambda: any(x.get("event") == "restored" for x in server.probe_lines()),
                              cfg["restore_timeout"], 0.05)
        progress(f"restart {i + 1}: restored={ok}")
        lines = server.probe_lines()
        running = next(x for x in lines if x.get("event") == "reactor_running")
        restored = next((x for x in lines if x.get("event") == "restored"), None)
        t1 = restored["t"] if restored else time.monotonic()
        busy_b, t_b = machine_busy(), time.monotonic()
        await sleep(reactor, 0.3)
        pinger.running = False
        await ping_run
        rec = {
            "restored_rooms": restored["rooms"] if restored else None, "ok": ok,
            "startup_s": running["startup"], "restore_s": t1 - running["t"],
            **probe_window(server.probe_lines(), running["t"], t1),
            **pinger.window(running["t"], t1),
            "rss_restored_mb": rss_bytes(server.pid) / 2**20,
            "machine_busy_cores": (busy_b[0] - busy_a[0]) / CLK_TCK / (t_b - t_a),
        }
        if rec["max_gap_ms"] is None:
            # The restore ended before the probe's first report (a few rooms): the whole restore
            # bounds its longest stall.
            rec["max_gap_ms"] = rec["restore_s"] * 1000
        rec["kb_per_restored_room"] = (rec["rss_restored_mb"] - out["rss_base_mb"]) * 1024 / max(1, cfg["matches"])
        out["restarts"].append(rec)
    # Every bot comes back with its token and the matches go on to their end.
    progress("resuming every seat")
    gen.expect_close = False
    players = gen.players()
    for p in players:
        p.state = None
    t0 = time.monotonic()
    await gen.connect_all(players)
    resumed = 0

    async def resume(p: Player) -> None:
        nonlocal resumed
        await p.request("resume", room=p.room, token=p.token)
        resumed += 1

    batch_s: list[float] = []
    batch = 200
    for i in range(0, len(players), batch):
        chunk = players[i : i + batch]
        s = time.perf_counter()
        await defer.gatherResults([defer.ensureDeferred(resume(p)) for p in chunk], consumeErrors=True)
        batch_s.append(time.perf_counter() - s)
    t1 = time.monotonic()
    out["resumed"] = resumed
    out["resume_batch_max_ms"] = max(batch_s) * 1000 if batch_s else None
    out["resume_s"] = t1 - t0
    out["resume_probe"] = probe_window(server.probe_lines(), t0, t1)
    progress(f"resumed {resumed:,}; playing on")
    completed0 = gen.matches_completed
    gen.stop_at_seq = 1 << 30
    gen.new_room_every = 0
    gen.start_playing()
    await sleep(reactor, cfg["resume_play"])
    await wait_until(reactor, lambda: gen.matches_completed > completed0, 15)
    gen.stop_playing()
    out["completed_after_resume"] = gen.matches_completed - completed0
    out["errors"] = dict(gen.errors)
    out["refused"] = dict(gen.refused)
    out["reasons"] = dict(gen.reasons)
    return out


MODES = {"saturation": saturation, "idle-scale": idle_scale, "restore": restore}


def run(cfg: dict[str, Any]) -> dict[str, Any]:
    """One benchmark run in this process (its reactor runs once)."""
    from twisted.internet import reactor

    spectators = cfg.get("spectators", 0)
    nofile = raise_nofile(max(4096, (4 + 2 * spectators) * cfg["matches"] + 1024))
    quiet_gc(reactor)
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-server-") as tmp:
        work = Path(tmp)
        result["fsync_ms_before"] = fsync_ms(work)
        # restore: the outside pinger pings back to back, above the default 20 messages/s
        extra = ["--rate", "100000"] if cfg["mode"] == "restore" else []
        if spectators:  # every watcher connects from 127.0.0.1 too: the per-address spectating limit is lifted
            extra += ["--max-spectating-per-address", str(spectators * cfg["matches"] + 64)]
        # restore: the rooms are written with --populate-sync (default NORMAL: the same rows, sooner);
        # every measured restart runs with --db-sync
        sync = cfg.get("populate_sync") or cfg["db_sync"] if cfg["mode"] == "restore" else cfg["db_sync"]
        server = ServerProcess(work, work / "bench.sqlite3", db_sync=sync,
                               max_conns=(2 + spectators) * cfg["matches"] + 64, profile=cfg.get("profile"),
                               experiments=cfg.get("experiments"), extra=extra)
        server.census = bool(cfg.get("census"))
        server.start()

        async def main() -> None:
            try:
                result.update(await MODES[cfg["mode"]](reactor, server, cfg))
            finally:
                await server.stop_async(reactor, signal.SIGTERM)

        def finish(outcome: Any) -> None:
            if isinstance(outcome, Exception) or hasattr(outcome, "getTraceback"):
                result["failure"] = outcome.getTraceback() if hasattr(outcome, "getTraceback") else repr(outcome)
            reactor.stop()

        reactor.callWhenRunning(lambda: defer.ensureDeferred(main()).addBoth(finish))
        reactor.run()
        server.stop(signal.SIGTERM)
        result["fsync_ms_after"] = fsync_ms(work)
        if cfg.get("keep_logs"):
            import shutil

            dest = Path(cfg["keep_logs"])
            dest.mkdir(parents=True, exist_ok=True)
            for f in work.iterdir():
                if f.suffix in (".log", ".jsonl"):
                    shutil.copy(f, dest / f.name)
        errors = [ln for ln in server.log.read_text(errors="replace").splitlines() if "level=error" in ln or "level=critical" in ln]
        result["server_error_lines"] = len(errors)
        if errors:
            result["server_error_sample"] = errors[:3]
    result["nofile"] = nofile
    result["config"] = {k: v for k, v in cfg.items() if k != "profile"}
    return result
