"""Fault injection: a real server process SIGKILLed again and again under live play (PROTOCOL.md §11, O12).

Many matches run at once over real sockets, played by bots that choose every move from their
own ``state`` alone (``bots.legal_moves``, an RNG seeded by the match and the position).
At seeded points — after the k-th acknowledged action overall, with other requests still in
flight — the server process gets SIGKILL, is started again on the same database with its wall
clock moved forward (simulated downtime), every seat comes back with ``resume`` and its token,
and play goes on until every match has ended. After every restart:

* **durability**: every action acknowledged with ``ok`` is in the restored history; the
  restored history starts with exactly what each seat had seen, and anything more is an
  action that was in flight at the kill (or a deadline the rules settle on their own);
* **exact state**: each restored ``state`` (board layers, phase, to_move, turn, quota_left,
  seq, transcript, result, deadline) equals an independent replay of the record actions through
  ``tests/reference_rules.py`` (``tests/view_oracle.py``), never the server's engine;
* **clock** (§11 "Restart"): the server clock resumes from the clock stored in the database,
  which is never behind a committed message and at most the 1 s write interval behind the last
  message seen, so the downtime does not count: deadlines keep their absolute time and their
  remaining time;
* and at the end every record verifies (``verify_record``), replays to its own result through
  the reference rules, equals the seats' histories, is still served by ``get_record``, and no
  match is lost.
"""

from __future__ import annotations

import os
import random
import re
import sqlite3
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
import pytest_twisted
from support import view_oracle
from support.harness import RecordingOutbox
from support.reliability import record_figure, scaled
from support.wire_views import move_json, view_of_state
from twisted.internet import defer
from twisted.internet import protocol as tprotocol
from twisted.internet.task import Clock, deferLater

from mineduel.server.client import LineClient, ServerError, connect
from mineduel.server.config import Config
from mineduel.server.session import ServerCore
from mineduel.server.storage import MemoryStorage
from mineduel.shared.fairness.verify import verify_record
from mineduel.shared.wire import bots, codec, names
from mineduel.shared.wire.messages import MatchAction

DOWNTIME = 900.0
"""Seconds the server's wall clock jumps at each restart: a server down for 15 minutes. Longer
than a turn (20 s) and a grace (120 s), so a restart that let the downtime count would show."""

CLOCK_SLACK = 1.0 + 1.0
"""§11: the stored clock is at most the 1 s write interval behind; 1 s more for a busy loop."""

COMMITTED_TYPES = ("state", "room", "presence")
"""Messages held until the commit of what they show: the stored clock is at least their time."""

STALE_TICK = 0.0015
"""§11: the clock is written with every commit, as it is at that commit, so a restored deadline
never shows more time left than the last state seen before the kill, beyond the rounding of times
to 3 decimals (``test_a_commit_stores_a_clock_not_behind_what_it_commits``)."""

TOLERATED_REFUSALS = ("stale_state", "not_your_turn", "game_over")
"""Refusals a bot may meet after a deadline passed on its own; any other refusal is a bug."""

WATCHDOG_SECONDS = 60.0
"""Real seconds (plus a little per match and kill) after which a stalled campaign is ended and fails."""

# Runs ``python -m mineduel.server`` with the wall clock moved forward by argv[1] seconds
# (downtime) and its entropy drawn from a generator seeded by argv[2] (a reproducible run).
LAUNCHER = """\
import random, runpy, secrets, sys, time
shift = float(sys.argv[1])
entropy = random.Random(sys.argv[2])
real_time = time.time
time.time = lambda: real_time() + shift
secrets.token_bytes = lambda nbytes=32: entropy.randbytes(nbytes)
sys.argv = ["mine-duel-server", *sys.argv[3:]]
runpy.run_module("mineduel.server", run_name="__main__", alter_sys=True)
"""


def _reactor() -> Any:
    from twisted.internet import reactor

    return reactor


class ServerProcess(tprotocol.ProcessProtocol):
    """A ``mineduel.server`` subprocess: its port once it listens, and when it ends."""

    def __init__(self) -> None:
        self.head = b""
        self.tail = b""
        self.listening: defer.Deferred[int] = defer.Deferred()
        self.ended: defer.Deferred[None] = defer.Deferred()
        self.spawned = time.monotonic()

    def outReceived(self, data: bytes) -> None:
        if not self.listening.called:
            self.head += data
            found = re.search(rb"listening tcp=(\d+)", self.head)
            if found:
                self.listening.callback(int(found.group(1)))
        self.tail = (self.tail + data)[-4000:]

    errReceived = outReceived

    def processEnded(self, reason: Any) -> None:
        if not self.listening.called:
            self.listening.errback(RuntimeError(self.head.decode(errors="replace")))
        self.ended.callback(None)


def spawn(db: str, *, shift: float, entropy_seed: str, commit_thread: bool) -> ServerProcess:
    proc = ServerProcess()
    args = [
        sys.executable, "-c", LAUNCHER, repr(shift), entropy_seed,
        "--host", "127.0.0.1", "--port", "0", "--no-discovery", "--db", db,
        # Far more connections than the campaign opens, yet within any usual open-file limit: a
        # command-line server that cannot hold --max-connections refuses to start (HOSTING.md).
        "--rate", "100000", "--max-connections-per-address", "100000", "--max-connections", "1000",
    ]
    if commit_thread:
        args.append("--commit-thread")
    _reactor().spawnProcess(proc, sys.executable, args, env=dict(os.environ))
    return proc


def stored_clock(db: str) -> float:
    """The server clock the database holds (``meta.clock``), read once the process is dead."""
    con = sqlite3.connect(db)
    try:
        row = con.execute("SELECT value FROM meta WHERE key = 'clock'").fetchone()
    finally:
        con.close()
    assert row is not None, "no server clock stored"
    return float(row[0])


def _server_times(messages: list[dict[str, Any]], types: tuple[str, ...] | None = None) -> float:
    times = [m["server_time"] for m in messages if "server_time" in m and (types is None or m["type"] in types)]
    return max(times, default=float("-inf"))


@dataclass
class SeatRun:
    """One seat of one match, and everything its bot saw and sent."""

    label: str
    match: MatchRun
    token: str = ""
    client: LineClient | None = None
    seat: int = -1  # record seat
    start: dict[str, Any] | None = None  # the first match_start
    history: list[dict[str, Any]] = field(default_factory=list)  # events seen, seq 0, 1, ...
    last_state: dict[str, Any] | None = None
    in_flight: dict[str, Any] | None = None  # a move sent and not answered yet
    acked: list[tuple[int, dict[str, Any]]] = field(default_factory=list)  # (seq after, move) per ok
    end: dict[str, Any] | None = None  # match_end
    resumed_state: dict[str, Any] | None = None  # the state a resume showed, for the bot to act on


@dataclass
class MatchRun:
    index: int
    room: str = ""
    seats: list[SeatRun] = field(default_factory=list)  # in join order
    match_id: str = ""
    started: float = 0.0
    turn_seconds: float = names.TURN_SECONDS
    restored: int = 0

    def seat(self, record_seat: int) -> SeatRun:
        return next(s for s in self.seats if s.seat == record_seat)


class Campaign:
    """Matches on one database, a server process killed and restarted under them."""

    def __init__(self, db: str, seed: int, matches: int, kills: int) -> None:
        self.db = db
        self.seed = seed
        self.rng = random.Random(seed)
        self.matches = [MatchRun(i) for i in range(matches)]
        self.planned_kills = kills
        self.kills = 0
        self.restarts = 0
        self.proc: ServerProcess | None = None
        self.port = 0
        self.acked_total = 0
        self.kill_at: int | None = None
        self.in_flight_at_kills = 0
        self.acked_checked = 0
        self.unacked_found = 0
        self.timeouts = 0
        self.refusals: Counter[str] = Counter()
        self.states_compared = 0
        self.mismatches: list[str] = []
        self.gave_up = False

    def give_up(self) -> None:
        """The watchdog: a campaign that stalls (a server that stops answering) ends, and fails."""
        self.gave_up = True
        if self.proc is not None and not self.proc.ended.called:
            self.proc.transport.signalProcess("KILL")
        for s in self.seats:
            if s.client is not None and s.client.connected_:
                s.client.abort()

    @property
    def seats(self) -> list[SeatRun]:
        return [s for m in self.matches for s in m.seats]

    # ----- the server process -----------------------------------------------------------------
    async def start_server(self) -> None:
        shift = DOWNTIME * self.restarts
        self.proc = spawn(
            self.db, shift=shift, entropy_seed=f"{self.seed}:{self.restarts}",
            commit_thread=self.rng.random() < 0.5,
        )
        self.port = await self.proc.listening

    def kill(self) -> None:
        assert self.proc is not None
        if self.proc.ended.called:
            return
        self.in_flight_at_kills += sum(1 for s in self.seats if s.in_flight is not None)
        self.proc.transport.signalProcess("KILL")
        self.kills += 1

    def after_ack(self) -> None:
        """Count an acknowledged action; at the chosen one, kill now or a few reactor turns later
        (so that the requests the bots send meanwhile are in flight, delivered or not)."""
        self.acked_total += 1
        if self.kill_at is None or self.acked_total < self.kill_at:
            return
        self.kill_at = None
        turns = self.rng.choice([0, 0, 1, 2, 3, 5])
        if turns == 0:
            self.kill()
            return

        def later(left: int) -> None:
            if left == 0:
                self.kill()
            else:
                _reactor().callLater(0, later, left - 1)

        _reactor().callLater(0, later, turns - 1)

    # ----- setting up -------------------------------------------------------------------------
    async def connect(self, label: str) -> LineClient:
        client = await connect(_reactor(), "127.0.0.1", self.port, label)
        await client.hello()
        return client

    async def set_up(self) -> None:
        """Rooms, seats and matches one after the other (the server's entropy is then used in a fixed order)."""
        for m in self.matches:
            a = SeatRun(f"m{m.index}a", m)
            b = SeatRun(f"m{m.index}b", m)
            m.seats = [a, b]
            a.client = await self.connect(a.label)
            b.client = await self.connect(b.label)
            created = await a.client.request("create_room", name=a.label, client_seed=f"{self.seed}-{a.label}")
            m.room, a.token = created["room"], created["token"]
            joined = await b.client.request("join", room=m.room, name=b.label, client_seed=f"{self.seed}-{b.label}")
            b.token = joined["token"]
            await a.client.request("ready")
            await b.client.request("ready")
            for s in (a, b):
                s.start = await s.client.wait_for("match_start")
                s.seat = s.start["seat"]
            m.match_id = a.start["match_id"]
            m.started = a.start["started"]
            m.turn_seconds = a.start["turn_seconds"]
            assert b.start["match_id"] == m.match_id and {a.seat, b.seat} == {0, 1}

    # ----- the bots ---------------------------------------------------------------------------
    def choose(self, seat: SeatRun, state: dict[str, Any]) -> dict[str, Any]:
        """A move from the seat's view alone, the same whenever the same position comes back."""
        rng = random.Random(f"{self.seed}:{seat.match.index}:{seat.seat}:{state['seq']}")
        view = view_of_state(state)
        moves = bots.legal_moves(view)
        assert moves, f"{seat.label}: no legal move in {state['phase']}"
        if rng.random() < 0.004:
            return {"type": "resign", "match_id": state["match_id"]}
        by_type: dict[str, list[MatchAction]] = {}
        for move in moves:
            by_type.setdefault(move.type.value, []).append(move)
        main = by_type.get("explore") or by_type.get("plant")
        markers = by_type.get("flag", []) + by_type.get("unflag", [])
        r = rng.random()
        if main and (r < 0.8 or not markers):
            if main[0].type == "explore":  # a little caution: away from open numbers, so matches last
                near = {n for c in range(64) if view.numbers[c] > 0 for n in _around(c)}
                main = [m for m in main if m.cell not in near] or main
            choice = rng.choice(main)
        elif "end_turn" in by_type and r < 0.85:
            choice = by_type["end_turn"][0]
        else:
            choice = rng.choice(markers or moves)
        return move_json(choice, seq=state["seq"], match_id=state["match_id"])

    def absorb(self, seat: SeatRun, state: dict[str, Any], *, full: bool = False) -> None:
        """Add a state's events to what the seat has seen (every state continues the last one)."""
        events = state["events"]
        if full:
            assert [e["seq"] for e in events] == list(range(state["seq"])), f"{seat.label}: resume history is not whole"
            seat.history = list(events)
        else:
            first = len(seat.history)
            assert [e["seq"] for e in events] == list(range(first, state["seq"])), (
                f"{seat.label}: state seq {state['seq']} events {[e['seq'] for e in events]} after {first}"
            )
            seat.history.extend(events)
        seat.last_state = state

    async def play(self, seat: SeatRun) -> None:
        """The bot: act on the latest state whenever it is its turn, until match_end or the kill."""
        c = seat.client
        assert c is not None
        msg, seat.resumed_state = seat.resumed_state, None  # already seen and checked
        try:
            while seat.end is None:
                if msg is None:
                    msg = await c.wait_for(pred=lambda m: m["type"] in ("state", "match_end"))
                    if msg["type"] == "match_end":
                        seat.end = msg
                        return
                    self.absorb(seat, msg)
                state, msg = msg, None
                if state["result"] is not None or state["to_move"] != "me" or state is not c.last("state"):
                    continue
                move = self.choose(seat, state)
                seat.in_flight = move
                try:
                    reply = await c.request(**move)
                except ServerError as exc:
                    refused, detail = exc.code, str(exc)
                    assert refused in TOLERATED_REFUSALS, f"{seat.label}: {move} refused: {detail}"
                    self.refusals[refused] += 1
                    seat.in_flight = None
                    continue
                seat.in_flight = None
                seat.acked.append((reply["seq"], move))
                self.after_ack()
        except ConnectionError:
            return  # the server was killed: the seat resumes after the restart

    async def play_until_kill_or_end(self, kill_after: int | None) -> bool:
        """Play until the server is killed after ``kill_after`` more acknowledged actions
        (``True``) or every match has ended (``False``)."""
        self.kill_at = None if kill_after is None else self.acked_total + kill_after
        kills = self.kills
        runs = [defer.ensureDeferred(self.play(s)) for s in self.seats if s.end is None]
        results = await defer.DeferredList(runs, consumeErrors=True)
        for ok, value in results:
            if not ok:
                value.raiseException()
        if self.kill_at is None and kill_after is not None and self.kills == kills:
            await deferLater(_reactor(), 0, lambda: None)  # a kill a few turns late: let it land
            while self.kills == kills:
                await deferLater(_reactor(), 0, lambda: None)
        return self.kills > kills

    # ----- after a kill -----------------------------------------------------------------------
    async def restart_and_resume(self) -> None:
        assert self.proc is not None
        await self.proc.ended
        for s in self.seats:
            if s.client is not None:
                await s.client.lost
        seen_committed = max(_server_times(s.client.messages, COMMITTED_TYPES) for s in self.seats if s.client)
        seen_any = max(_server_times(s.client.messages) for s in self.seats if s.client)
        clock = stored_clock(self.db)
        # §11: every committed message was shown after its commit wrote the clock, and the clock
        # is written every second, so the server went down at most that long after it.
        assert clock >= seen_committed - STALE_TICK, f"stored clock {clock} is behind a message shown at {seen_committed}"
        assert clock >= seen_any - CLOCK_SLACK, f"stored clock {clock} is far behind the last message at {seen_any}"
        self.restarts += 1
        await self.start_server()
        assert self.proc is not None
        spawned = self.proc.spawned
        for m in self.matches:
            if all(s.end is not None for s in m.seats):
                continue
            m.restored += 1
            restored = {}
            for s in m.seats:
                restored[s.seat] = await self.resume(s, clock, spawned)
            self.check_restored_match(m, restored, clock)

    async def resume(self, seat: SeatRun, clock: float, spawned: float) -> dict[str, Any]:
        """Resume one seat on the new process; returns its restored state (not yet absorbed)."""
        c = await self.connect(seat.label)
        seat.client = c
        joined = await c.request("resume", room=seat.match.room, token=seat.token)
        assert joined["resumed"] is True
        start = await c.wait_for("match_start")
        assert seat.start is not None
        for key in ("match_id", "seat", "first", "commitment", "client_seeds", "nonce", "turn_seconds", "started"):
            assert start[key] == seat.start[key], f"{seat.label}: match_start {key} changed: {seat.start[key]} -> {start[key]}"
        state = await c.wait_for("state")
        received = time.monotonic()
        # The server clock resumed from the stored one: not behind it, and ahead of it only by
        # the time this process has been running (the downtime, and its jumped wall clock, do not count).
        now = state["server_time"]
        assert clock - 0.0015 <= now <= clock + (received - spawned) + 0.01, (
            f"{seat.label}: server clock {now} after a restart from stored {clock} ({received - spawned:.3f} s running)"
        )
        deadline = state["deadline"]
        if deadline is not None:
            assert abs(deadline["left"] - max(0.0, deadline["at"] - now)) <= 0.0011
            assert deadline["left"] <= seat.match.turn_seconds + STALE_TICK
            assert deadline["left"] >= deadline["at"] - clock - (received - spawned) - 0.01
        if state["result"] is not None:
            end = await c.wait_for("match_end")
            if seat.end is not None:
                assert end["record"] == seat.end["record"] and end["result"] == seat.end["result"], (
                    f"{seat.label}: match_end after resume differs from the one seen before (O13)"
                )
            seat.end = end
        return state

    def check_restored_match(self, m: MatchRun, restored: dict[int, dict[str, Any]], clock: float) -> None:
        """Durability and exactness of one match after a restart (see the module docstring)."""
        histories = {rs: restored[rs]["events"] for rs in (0, 1)}
        actions = view_oracle.merge_histories(histories)
        seen_longest = 0
        for rs in (0, 1):
            s = m.seat(rs)
            seen = s.history
            assert histories[rs][: len(seen)] == seen, (
                f"{s.label}: the restored history does not continue what the seat saw "
                f"(saw {len(seen)} events, restored {len(histories[rs])})"
            )
            seen_longest = max(seen_longest, len(seen))
            for seq_after, move in s.acked:  # every ok: its action is stored
                assert seq_after <= len(actions), f"{s.label}: acknowledged seq {seq_after} lost ({len(actions)} restored)"
                stored = actions[seq_after - 1]
                assert stored["seat"] == rs and stored["type"] == move["type"] and stored.get("cell") == move.get("cell"), (
                    f"{s.label}: acknowledged {move} is stored as {stored}"
                )
            self.acked_checked += len(s.acked)
            s.acked.clear()
        for i in range(seen_longest, len(actions)):  # not seen by anyone before the kill
            action = actions[i]
            if action.get("auto"):
                due = view_oracle.expected_deadline(actions[:i], m.started, m.turn_seconds)
                assert due is not None and abs(action["at"] - due) <= 0.0011, (
                    f"{m.room}: auto action {action} not at a deadline ({due})"
                )
                self.timeouts += action["type"] == "timeout"
                continue
            move = m.seat(action["seat"]).in_flight
            assert move is not None and move["type"] == action["type"] and move.get("cell") == action.get("cell") and (
                move.get("seq", i) == i
            ), f"{m.room}: restored action {i} {action} was never sent (in flight: {move})"
            self.unacked_found += 1
        for rs in (0, 1):
            s = m.seat(rs)
            state = restored[rs]
            last = s.last_state
            if last is not None and state["seq"] == last["seq"] and last["deadline"] is not None:
                assert state["deadline"] is not None and state["deadline"]["at"] == last["deadline"]["at"], (
                    f"{s.label}: deadline {last['deadline']} before the kill, {state['deadline']} after"
                )
                assert state["deadline"]["left"] <= last["deadline"]["left"] + STALE_TICK
            differences = view_oracle.state_differences(
                state, actions, started=m.started, turn_seconds=m.turn_seconds, start=s.start
            )
            self.states_compared += 1
            self.mismatches += [f"{s.label} after kill {self.kills}: {d}" for d in differences]
            s.in_flight = None
            self.absorb(s, state, full=True)
            s.resumed_state = state

    # ----- the end ------------------------------------------------------------------------------
    async def finish_checks(self) -> None:
        """Every match ended; each record verifies, replays to its result and is still stored."""
        checker = await self.connect("checker")
        for m in self.matches:
            ends = [s.end for s in m.seats]
            assert all(e is not None for e in ends), f"{m.room}: a seat never saw match_end"
            record = ends[0]["record"]
            assert ends[1]["record"] == record
            assert record["match_id"] == m.match_id
            report = verify_record(record)
            assert report.ok, f"{m.room}: {[c.detail for c in report.failures]}"
            self.mismatches += [f"{m.room} record: {d}" for d in view_oracle.record_differences(record)]
            actions = view_oracle.merge_histories({s.seat: s.history for s in m.seats})
            public = [{k: v for k, v in a.items() if k not in ("commitment", "transcript")} for a in actions]
            assert public == record["actions"], (
                f"{m.room}: the record's actions are not the history the seats saw"
            )
            stored = await checker.request("get_record", match_id=m.match_id)
            assert stored["record"] == record, f"{m.room}: get_record differs from match_end's record"
        await checker.close()

    async def stop(self) -> None:
        if self.proc is not None and not self.proc.ended.called:
            self.proc.transport.signalProcess("KILL")
            await self.proc.ended


def _around(cell: int) -> list[int]:
    row, col = divmod(cell, 8)
    return [r * 8 + c for r in (row - 1, row, row + 1) for c in (col - 1, col, col + 1) if 0 <= r < 8 and 0 <= c < 8]


async def run_campaign(db: str, *, seed: int, matches: int, kills: int) -> Campaign:
    """Play ``matches`` matches to their end on a server killed ``kills`` times; every check on the way."""
    campaign = Campaign(db, seed=seed, matches=matches, kills=kills)
    expected_actions = 45 * matches  # about the mean length of these bots' matches (measured)
    # Kills spread over the first half of the expected actions: matches end at different times,
    # and every planned kill must find some still running (at scale 10 the last one once did not).
    gap = max(4, expected_actions // (2 * (kills + 2)))
    limit = WATCHDOG_SECONDS + 2.0 * matches + 3.0 * kills  # a healthy run takes a fraction of it
    watchdog = _reactor().callLater(limit, campaign.give_up)
    try:
        await campaign.start_server()
        await campaign.set_up()
        while campaign.kills < kills and any(s.end is None for s in campaign.seats):
            if not await campaign.play_until_kill_or_end(campaign.rng.randint(gap // 3, gap)):
                break  # every match ended first
            assert not campaign.gave_up
            await campaign.restart_and_resume()
        await campaign.play_until_kill_or_end(None)
        assert not campaign.gave_up
        await campaign.finish_checks()
    except Exception as exc:
        if campaign.gave_up:
            raise AssertionError(f"the campaign did not finish within {limit:.0f} s (server stalled?)") from exc
        raise
    finally:
        if watchdog.active():
            watchdog.cancel()
        await campaign.stop()
    return campaign


@pytest.mark.reliability
@pytest_twisted.ensureDeferred
async def test_sigkill_campaign_restores_every_match_exactly(tmp_path):
    """Durability (§11), O12 and O13: matches played over sockets survive repeated SIGKILLs of the
    server at random points, every restored state equals an independent replay, no match is lost."""
    matches, kills = scaled(8), scaled(3)
    campaign = await run_campaign(str(tmp_path / "crash.db"), seed=20240611, matches=matches, kills=kills)
    lost = sum(1 for m in campaign.matches if any(s.end is None for s in m.seats))
    record_figure("crash", "matches played", matches)
    record_figure("crash", "kills", campaign.kills)
    record_figure("crash", "matches restored", sum(m.restored for m in campaign.matches))
    record_figure("crash", "actions acknowledged then found after restart", campaign.acked_checked)
    record_figure("crash", "actions in flight at a kill then found after restart", campaign.unacked_found)
    record_figure("crash", "requests in flight at a kill", campaign.in_flight_at_kills)
    record_figure("crash", "restored states compared with independent replay", campaign.states_compared)
    record_figure("crash", "turn deadlines settled by the server", campaign.timeouts)
    record_figure("crash", "mismatches with independent replay", len(campaign.mismatches))
    record_figure("crash", "matches lost", lost)
    assert campaign.mismatches == []
    assert lost == 0
    assert campaign.kills == kills, f"only {campaign.kills} of {kills} kills happened before the matches ended"
    assert campaign.acked_checked > 0


# ----- the stored clock and the commit it rides with ------------------------------------------------


class _Core:
    """A server core whose rules clock and reactor turns are two fake clocks the test moves."""

    def __init__(self, storage: MemoryStorage, now: float) -> None:
        self.rules = Clock()
        self.rules.advance(now)
        self.turns = Clock()
        self.out = RecordingOutbox()
        config = Config(rate_per_second=1e6, rate_burst=1e6, idle_timeout=1e9, ping_interval=1e9)
        self.core = ServerCore(
            clock=self.rules, randbytes=random.Random(now).randbytes, storage=storage, outbox=self.out,
            config=config, turns=self.turns,
        )
        self.core.rooms.restore_all()
        self.end_turn()

    def send(self, pid: int, **message: Any) -> None:
        """A line read in the current reactor turn (no commit yet)."""
        if pid not in self.core.conns:
            self.core.connection_made(pid, f"10.0.0.{pid}")
        self.core.line_received(pid, codec.encode(message)[:-1])

    def end_turn(self) -> None:
        for _ in range(3):  # restore slices and their commits come in turns of their own
            self.rules.advance(0)
            self.turns.advance(0)

    def received(self, pid: int) -> list[dict[str, Any]]:
        return [codec.decode(line[:-1]) for line in self.out.lines[pid]]


def test_a_commit_stores_a_clock_not_behind_what_it_commits():
    """§11: the clock is written "with every commit", so a restart never resumes it before an action
    already stored and shown: every deadline comes back with at most the time it had left (O5)."""
    storage = MemoryStorage()
    first = _Core(storage, 1_700_000_000.0)
    first.send(1, **bots.hello().wire())
    first.send(1, type="create_room")
    first.end_turn()
    created = first.received(1)[1]
    first.send(2, **bots.hello().wire())
    first.send(2, type="join", room=created["room"])
    first.send(1, type="ready")
    first.send(2, type="ready")
    first.end_turn()
    joined = next(m for m in first.received(2) if m["type"] == "joined")
    tokens = {1: created["token"], 2: joined["token"]}
    mover = 1 if next(m for m in first.received(1) if m["type"] == "match_start")["seat"] == 0 else 2
    first.core.rooms.tick()  # the once-a-second clock write, early in a reactor turn ...
    first.rules.advance(0.4)  # ... and a request read later in the same turn
    first.send(mover, type="explore", cell=[0, 0])
    first.end_turn()  # the turn's commit; then the process dies (nothing else is written)
    shown = [m for m in first.received(mover) if m["type"] == "state"][-1]

    again = _Core(storage, 1_700_000_000.0 + 3600)  # restarted an hour later
    again.send(7, **bots.hello().wire())
    again.send(7, type="resume", room=created["room"], token=tokens[mover])
    again.end_turn()
    state = [m for m in again.received(7) if m["type"] == "state"][-1]
    assert state["seq"] == shown["seq"] == 1
    assert state["server_time"] >= shown["server_time"], "the server clock went back after the restart"
    assert state["deadline"]["left"] <= names.TURN_SECONDS
