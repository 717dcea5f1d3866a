"""A dishonest operator against the fairness proof (issue 14): forged records caught by the players' witnesses.

Two real headless game clients (the app's own online code, driven by pygame events on fake
clocks) play a real server through an *operator proxy* (tests/support/operator_proxy.py) that
can rewrite any line the server sends. The server's rules run on ``task.Clock``: turn deadlines
and graces are advanced by the test, never waited for; nothing sleeps.

* Honest matches through the proxy — opening timeouts with auto-moves, a normal-turn timeout,
  markers, a client reconnecting, a client restarted on its data folder, the server restarted on
  its database, a rematch, a disconnect ending and a void — verify with each player's witness,
  in the game (*Verify*) and with ``mine-duel verify RECORD --witness FILE``.
* Every forgery of issue 14 (items 1–7, tests/support/forgeries.py, each recomputing all a
  careful forger can) fails with the witness by its named check; without a witness it passes
  where the record alone cannot tell, or fails by the named record-only check where it can.
  The pure cases are built from one honest match and its two witnesses; forgeries 1, 4 and 6
  (and more) are also delivered live in ``match_end`` through the proxy — with the result
  screen rewritten to agree — and caught by the client's in-game Verify and by the CLI with the
  witness file the client wrote.
"""

from __future__ import annotations

import copy
import itertools
import json
import random
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pygame
import pytest
import pytest_twisted
from support import forgeries
from support.client_driver import Driver
from support.harness import oracle_message
from support.operator_proxy import OperatorProxy
from twisted.internet.task import Clock, deferLater

from mineduel.client.net import make_services
from mineduel.client.online_client import Conn
from mineduel.client.scenes.game import GameScene
from mineduel.client.scenes.match_panels import VerifyPopup
from mineduel.client.scenes.online import OnlineScene
from mineduel.server.client import connect
from mineduel.server.config import Config
from mineduel.server.service import start_server
from mineduel.server.storage import SQLiteStorage
from mineduel.shared.cli.verify import main as verify_main
from mineduel.shared.fairness.verify import WITNESS_CHECKS, verify_record
from mineduel.shared.rules.bitboard import FULL, cells
from mineduel.shared.rules.engine import Phase

START = 1_700_000_000.0


def _reactor() -> Any:
    from twisted.internet import reactor

    return reactor


# ----- a real server on a fake clock, restartable on its database ----------------------------------------
class Server:
    def __init__(self, folder: Path, seed: int = 14) -> None:
        self.db = str(folder / "server.db")
        self.random = random.Random(seed)  # the server's entropy: seeds, salts, ids (deterministic)
        self.clock = Clock()
        self.clock.advance(START)
        self.handle: Any = None
        self.start()

    def start(self) -> None:
        config = Config(host="127.0.0.1", port=0, udp_port=None, db=self.db, public_host="127.0.0.1",
                        rate_per_second=1e6, rate_burst=1e6, idle_timeout=1e6, ping_interval=1e6)
        # Commits on the loop's own thread: the apps' fake clocks must not race a worker thread.
        self.handle = start_server(_reactor(), config, clock=self.clock, randbytes=self.random.randbytes,
                                   storage=SQLiteStorage(self.db))
        self.clock.advance(0)

    async def restart(self) -> None:
        """Stopped cleanly and started again on the same database (a new port, a new clock)."""
        await self.handle.stop()
        old = self.clock.seconds()
        self.clock = Clock()
        self.clock.advance(old + 30.0)  # 30 s of downtime: the server clock resumes from the database
        self.start()
        while not self.handle.restored.called:
            self.clock.advance(0)
            await deferLater(_reactor(), 0, lambda: None)

    @property
    def port(self) -> int:
        return int(self.handle.port)

    def now(self) -> float:
        return float(self.handle.core.rooms.now())

    def room(self, code: str) -> Any:
        return self.handle.core.rooms.rooms[code]

    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)


# ----- players: the real app, headless ---------------------------------------------------------------------
class Player:
    def __init__(self, folder: Path, name: str, join: str | None = None) -> None:
        self.folder = folder / name
        self.folder.mkdir(exist_ok=True)
        self.services = make_services(_reactor(), self.folder, client_name="test/1", clipboard=lambda text: True)
        sent = itertools.count()
        self.services.client_seed = lambda: f"{name}-seed-{next(sent)}"  # R1 seeds, deterministic
        self.d = Driver(self.folder, language="en", join=join, online_services=lambda: self.services)
        self.d.app.ctx.settings = replace(self.d.app.ctx.settings, player_name="Tester")  # named already (name_popup.py)

    @property
    def app(self) -> Any:
        return self.d.app

    @property
    def top(self) -> Any:
        return self.app.stack.top

    @property
    def lobby(self) -> OnlineScene:
        return next(s for s in self.app.stack.scenes if isinstance(s, OnlineScene))

    @property
    def client(self) -> Any:
        lobby = next((s for s in self.app.stack.scenes if isinstance(s, OnlineScene)), None)
        return None if lobby is None else lobby.client

    @property
    def match(self) -> Any:
        return self.client.match

    def in_game(self) -> bool:
        return isinstance(self.top, GameScene) and self.top.controller is not None

    def click(self, name: str) -> None:
        self.d.click_named(name)

    def type_into(self, field: Any, text: str) -> None:
        self.d.click(self.d.to_window(field.rect.center))
        for ch in text:
            self.d.post(pygame.TEXTINPUT, text=ch)
            self.d.frame()

    def click_cell(self, cell: int) -> None:
        self.d.click(self.d.to_window(self.top.board.cell_center(cell)))

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
        self.d.close()


async def pump(cond: Any, *players: Player, limit: int = 4000, note: Any = None) -> None:
    """Frames for every player and reactor turns (no sleeping) until ``cond()`` holds."""
    for _ in range(limit):
        for p in players:
            p.d.frame(0.02)
        if cond():
            return
        await deferLater(_reactor(), 0, lambda: None)
    raise AssertionError(f"condition never held {note() if note else ''}")


# ----- one room through the operator proxy -------------------------------------------------------------------
class Table:
    """A server, the operator proxy in front of it, and two players seated in one room through it."""

    def __init__(self, folder: Path, server: Server, proxy: OperatorProxy) -> None:
        self.folder = folder
        self.server = server
        self.proxy = proxy
        self.a: Player
        self.b: Player
        self.code = ""
        self.retired: list[Player] = []

    @property
    def players(self) -> tuple[Player, Player]:
        return (self.a, self.b)

    async def seat(self) -> None:
        """A connects to the proxy's address and creates a room; B opens the invite link (to the proxy).

        The game sends no player name (``""``); the proxy gives them one on the way up (``create_room`` /
        ``join`` carry an optional ``name``, PROTOCOL.md), as another client would, so that records and
        witnesses name two people the operator could swap (forgery 2)."""
        self.proxy.on("create_room", lambda link, msg: {**msg, "name": "Ann"}, "up")
        self.proxy.on("join", lambda link, msg: {**msg, "name": "Bob"}, "up")
        a = self.a = Player(self.folder, "a")
        a.d.click_button("start")
        a.d.key(pygame.K_ESCAPE)
        a.d.click_button("menu.online")
        a.type_into(a.lobby.address_field, self.proxy.address)
        a.click("connect")
        await pump(lambda: a.lobby.page == "server", a)
        a.click("create")
        await pump(lambda: a.lobby.page == "waiting" and a.client.room is not None, a)
        self.code = a.client.room_code
        b = self.b = Player(self.folder, "b", join=f"mineduel://127.0.0.1:{self.proxy.port}/join/{self.code}")
        await pump(lambda: b.lobby.page == "room", a, b)
        b.click("join")
        await pump(lambda: b.lobby.page == "waiting" and a.client.room.opponent is not None, a, b)

    async def start(self) -> None:
        a, b = self.players
        a.click("ready")
        await pump(lambda: a.client.room is not None and a.client.room.me.ready, a, b)
        b.click("ready")
        await pump(lambda: a.in_game() and b.in_game() and a.match.ready and b.match.ready, a, b)

    @property
    def live(self) -> Any:
        return self.server.room(self.code).match

    def by_seat(self) -> dict[int, Player]:
        return {self.a.match.seat: self.a, self.b.match.seat: self.b}

    async def settle(self) -> None:
        """Until both screens show the server's latest state (and its end, once over)."""
        match = self.live
        await pump(lambda: all(p.in_game() and p.match.match_id == match.id and p.match.seq == match.seq
                               and (not match.over or p.match.end is not None) for p in self.players),
                   *self.players, note=lambda: [(p.in_game(), p.match.seq if p.client and p.client.match else None)
                                                 for p in self.players] + [match.seq])

    # ----- moves, as a player makes them (clicks) ----------------------------------------------------------
    def _mode(self, p: Player, mode: str) -> None:
        if p.top.mode != mode:
            p.click(f"mode:{mode}")

    async def act(self, msg: dict[str, Any]) -> None:
        match = self.live
        mover = self.by_seat()[match.state.to_move]
        before = match.seq
        kind = msg["type"]
        if kind == "end_turn":
            mover.click("end_turn")
        else:
            row, col = msg["cell"]
            self._mode(mover, {"explore": "explore", "plant": "mine", "flag": "flag", "unflag": "unflag"}[kind])
            mover.click_cell(row * 8 + col)
        await pump(lambda: match.seq > before, *self.players, note=lambda: (msg, match.state.phase, mover.top.message))
        await self.settle()

    async def step(self) -> None:
        """The seat to move makes the oracle's safe move."""
        await self.act(oracle_message(self.live.state))

    async def flag(self) -> int:
        """The seat to move flags the first unmarked cell holding an opponent's mine (or any unmarked cell)."""
        st = self.live.state
        me = st.to_move
        open_cells = FULL & ~st.revealed & ~st.any_marker
        target = next(cells(open_cells & st.mines[1 - me] & ~st.mines[me]), None)
        if target is None:
            target = next(cells(open_cells))
        await self.act({"type": "flag", "cell": list(divmod(target, 8))})
        return target

    async def unflag(self, cell: int) -> None:
        await self.act({"type": "unflag", "cell": list(divmod(cell, 8))})

    async def timeout(self) -> None:
        """The seat to move lets its deadline run out (the server's clock, not the players')."""
        match = self.live
        before = match.seq
        self.server.advance(match.deadline - self.server.now() + 0.0005)
        await pump(lambda: match.seq > before, *self.players)
        await self.settle()

    async def ko(self) -> None:
        """The seat to move explores a cell holding only the opponent's mine."""
        st = self.live.state
        me = st.to_move
        ko = next(cells(st.mines[1 - me] & ~st.mines[me] & ~st.revealed & ~st.any_marker))
        if st.phase is not Phase.EXPLORE:
            raise AssertionError(f"a KO needs an explore phase, not {st.phase}")
        await self.act({"type": "explore", "cell": list(divmod(ko, 8))})

    async def until(self, phase_ok: Any, limit: int = 200) -> None:
        for _ in range(limit):
            if phase_ok(self.live.state):
                return
            await self.step()
        raise AssertionError("never reached")

    async def rematch(self) -> None:
        a, b = self.players
        first = self.live.id
        a.click("rematch")
        await pump(lambda: b.client.opponent.rematch_opponent, a, b)
        b.click("rematch")
        await pump(lambda: all(p.in_game() and p.match.match_id != first and p.match.ready for p in self.players), a, b)

    def close(self) -> None:
        for p in (getattr(self, "a", None), getattr(self, "b", None), *self.retired):
            if p is not None and p.client is not None:
                p.client.close()
        for p in (getattr(self, "a", None), getattr(self, "b", None), *self.retired):
            if p is not None:
                p.d.close()


@pytest_twisted.async_yield_fixture
async def table(tmp_path: Path) -> Any:
    server = Server(tmp_path)
    proxy = OperatorProxy(_reactor(), server.port)
    proxy.start()
    t = Table(tmp_path, server, proxy)
    try:
        yield t
    finally:
        t.close()
        await proxy.stop()
        await server.handle.stop()


async def restart_server(t: Table) -> None:
    """The server stops (``server_closing``) and starts again on its database, on another port; the
    proxy points at it, both clients come back through the proxy and resume by themselves."""
    before = len(t.proxy.links)
    await t.server.restart()
    t.proxy.retarget(t.server.port)

    def back() -> bool:
        fresh = [link for link in t.proxy.links[before:] if not link.gone and link.server is not None]
        return (len(fresh) == 2 and all(p.client.conn == Conn.OPEN and p.client.busy is None and p.in_game()
                                        and p.client.opponent.away_until is None for p in t.players))

    await pump(back, *t.players, note=lambda: [(p.client.conn, p.client.busy) for p in t.players])
    await t.settle()


# ----- the honest match every forgery family starts from ------------------------------------------------------
ALL_INTERRUPTIONS = frozenset({"reconnect", "client", "server"})


async def play_honest_first_match(t: Table, *, interruptions: frozenset[str] = ALL_INTERRUPTIONS) -> None:
    """Match 1: an opening auto-explore and auto-plant (O4), markers, a normal-turn timeout (O5), a
    reconnect, a restarted client and a restarted server on the way, then a KO."""
    await t.timeout()  # opening step 1: the first player's auto-explore
    await t.step()  # step 2
    await t.step()  # step 3: the first player plants
    await t.timeout()  # step 4: the second player's auto-plant
    assert t.live.state.phase is Phase.EXPLORE and t.live.state.turn == 1
    if "reconnect" in interruptions:
        link = next(link for link in t.proxy.live() if link.seat == t.a.match.seat)
        link.abort()  # a cut cable: A reconnects through the proxy by itself and resumes
        await pump(lambda: t.a.client.conn == Conn.RECONNECTING, *t.players)
        await pump(lambda: t.a.client.conn == Conn.OPEN and t.a.client.busy is None and t.a.in_game(), *t.players)
        await t.settle()
    flagged = await t.flag()  # turn 1
    owner = t.live.state.to_move
    await t.until(lambda st: st.turn == 2)
    await t.timeout()  # turn 2: nothing done, the deadline passes the turn (O5)
    if "client" in interruptions:
        t.a.client.close()  # A's program stops and starts again on the same data folder: it resumes
        await pump(lambda: t.b.client.opponent.away_until is not None, t.b)
        t.retired.append(t.a)  # (one pygame per process: the old app is closed at the end)
        t.a = Player(t.folder, "a")
        await pump(lambda: t.a.in_game() and t.a.match.ready, *t.players)
        await t.settle()
    await t.step()  # turn 3 starts
    if t.live.state.to_move == owner:
        await t.unflag(flagged)
    if "server" in interruptions:
        await restart_server(t)
    await t.until(lambda st: st.turn >= 6 and st.phase is Phase.EXPLORE)
    await t.flag()
    await t.ko()
    assert t.live.over


# ----- verifying as a player does: in the game, and with the CLI and the files the client wrote ---------------
def witness_file(p: Player, match_id: str) -> Path:
    """Where the client keeps its witness (RECORD.md): ``<user data folder>/witnesses/<match_id>.json``."""
    return p.folder / "witnesses" / f"{match_id}.json"


def verify_in_game(p: Player) -> Any:
    """*Verify* on the result panel; the report the popup shows (then Close)."""
    scene = p.top
    assert isinstance(scene, GameScene) and scene.ended is not None
    if not scene.panel.open and scene.viewing_board:
        p.click("end_turn")  # "View result"
    assert scene.panel.open
    p.click("verify")
    popup = p.app.stack.popup
    assert isinstance(popup, VerifyPopup), popup
    report = popup.report
    assert report is not None, popup.outcome.problem
    p.click("close")
    return report


def cli(capsys: Any, *args: str | Path) -> tuple[int, dict[str, Any]]:
    """``mine-duel verify ... --json``: the exit status and the report."""
    capsys.readouterr()
    status = verify_main([*map(str, args), "--json"])
    out = capsys.readouterr().out
    return status, json.loads(out)


def failed(report: Any) -> list[str]:
    """Names of the failed checks of a report (a VerifyReport, or the CLI's JSON object)."""
    if isinstance(report, dict):
        return [c["name"] for c in report["checks"] if c["ok"] is False]
    return [c.name for c in report.failed]


def check_of(report: Any, name: str) -> Any:
    """One check's ``ok`` (True, False or None) of a VerifyReport or a JSON report."""
    if isinstance(report, dict):
        return next(c["ok"] for c in report["checks"] if c["name"] == name)
    return report.check(name).ok


@dataclass
class Seen:
    """One player's view of one finished match: the record it was sent, its witness, its in-game Verify."""

    record: dict[str, Any]
    witness: dict[str, Any]
    witness_path: Path
    report: Any


async def finished(t: Table, folder: Path, tag: str) -> dict[str, Seen]:
    """After a match end: each player's record (written out as the client received it), the witness
    file the client wrote (copied aside: later matches must not change it), and its in-game Verify."""
    match_id = t.live.id
    await pump(lambda: all(p.top.panel.open for p in t.players), *t.players)
    out = {}
    for name, p in (("a", t.a), ("b", t.b)):
        assert p.match.match_id == match_id and p.match.end is not None
        record = p.match.record()
        assert record is not None
        report = verify_in_game(p)
        source = witness_file(p, match_id)
        assert source.exists(), f"{name} kept no witness at {source}"
        kept = folder / f"{tag}-{name}-witness.json"
        kept.write_bytes(source.read_bytes())
        (folder / f"{tag}-{name}-record.json").write_text(json.dumps(record))
        out[name] = Seen(record, json.loads(kept.read_text()), kept, report)
    return out


# ----- the honest room every pure forgery starts from: played once for the module ------------------------------
@dataclass
class HonestRoom:
    folder: Path
    first: dict[str, Seen]  # match 1 (drawn first player, timeouts, auto-moves, markers, interruptions)
    second: dict[str, Seen]  # match 2, the rematch (sides swapped, a timeout, ended by resignation)


@pytest_twisted.async_fixture(scope="module")
async def honest(tmp_path_factory: Any) -> HonestRoom:
    folder = tmp_path_factory.mktemp("honest")
    server = Server(folder)
    proxy = OperatorProxy(_reactor(), server.port)
    proxy.start()
    t = Table(folder, server, proxy)
    try:
        await t.seat()
        await t.start()
        await play_honest_first_match(t)
        first = await finished(t, folder, "m1")
        await t.rematch()
        assert t.live.first_rule == "swap" and t.live.number == 2
        await t.timeout()  # an opening auto-explore in the rematch too
        await t.until(lambda st: st.turn >= 2 and st.phase is Phase.EXPLORE)
        resigner = t.by_seat()[t.live.state.to_move]
        resigner.d.key(pygame.K_ESCAPE)
        resigner.click("online.resign")
        resigner.click("confirm")
        await t.settle()
        second = await finished(t, folder, "m2")
        # Nothing the server sent was rewritten: the proxy only listened (and named the players).
        assert all(d == "up" for link in proxy.links for d, _ in link.rewritten)
    finally:
        t.close()  # (the apps' pygame is shut down here: every test makes its own)
        await proxy.stop()
        await server.handle.stop()
    return HonestRoom(folder, first, second)


# ----- honest matches verify with their witnesses -----------------------------------------------------------------
def test_honest_room_verifies_with_each_players_witness(honest: HonestRoom, capsys: Any) -> None:
    """Match 1 (timeouts, auto-moves, markers, a reconnect, a restarted client, a restarted server, a KO)
    and its rematch (sides swapped, an auto-move, a resignation): every check holds for both players,
    in the game and with ``mine-duel verify RECORD --witness FILE`` on the files the client wrote."""
    first, second = honest.first, honest.second
    assert first["a"].record == first["b"].record and second["a"].record == second["b"].record
    r1, r2 = first["a"].record, second["a"].record
    f1, f2 = r1["fairness"], r2["fairness"]
    assert (f1["version"], f1["nonce"], f1["first_player"], f1["previous_transcript"]) == (2, 1, "draw", None)
    assert (f2["version"], f2["nonce"], f2["first_player"], f2["previous_transcript"]) == (2, 2, "swap", f1["transcript"])
    assert forgeries.reseal(r1) == r1 and forgeries.reseal(r2) == r2  # the forger's recomputation is the server's
    kinds = [(a["type"], bool(a.get("auto"))) for a in r1["actions"]]
    assert kinds.count(("timeout", True)) == 3 and ("explore", True) in kinds and ("plant", True) in kinds
    assert ("flag", False) in kinds and ("unflag", False) in kinds and r1["result"]["reason"] == "ko"
    assert r2["result"]["reason"] == "resign" and ("explore", True) in [(a["type"], bool(a.get("auto"))) for a in r2["actions"]]
    for match, record in ((first, r1), (second, r2)):
        for who, seen in match.items():
            w = seen.witness
            # The witness survived the reconnect and the restarts: every plant and the final transcript seen.
            assert w["match_id"] == record["match_id"] and w["end"] is not None
            assert [p["seq"] for p in w["plants"]] == [i for i, a in enumerate(record["actions"]) if a["type"] == "plant"]
            assert w["transcript"] == {"seq": len(record["actions"]), "hash": record["fairness"]["transcript"]}
            assert seen.report.ok and seen.report.witnessed, (who, [(c.name, c.detail) for c in seen.report.failed])
            for name in ("commitment_shown", "seat_and_seed", "plants_seen", "transcript_seen", "end_shown"):
                assert check_of(seen.report, name) is True, (who, name)
            path = honest.folder / f"{'m1' if match is first else 'm2'}-{who}-record.json"
            status, report = cli(capsys, path, "--witness", seen.witness_path)
            assert status == 0 and report["ok"], failed(report)
            status, report = cli(capsys, path)  # the record alone: holds, and says it is only itself
            assert status == 0 and all(check_of(report, name) is None for name in WITNESS_CHECKS)
    assert check_of(first["a"].report, "previous_match") is None and check_of(second["a"].report, "previous_match") is True
    # The room's two records in order, with the rematch's witness: the rematch follows match 1.
    for who in ("a", "b"):
        status, room = cli(capsys, honest.folder / "m1-a-record.json", honest.folder / "m2-a-record.json",
                           "--witness", second[who].witness_path)
        assert status == 0 and room["ok"], room
        assert check_of(room["records"][1], "rematches") is True and check_of(room["records"][1], "transcript_seen") is True


@pytest_twisted.ensureDeferred
@pytest.mark.parametrize("ending", ["disconnect", "void"])
async def test_disconnect_and_void_endings_verify_with_the_witness(table: Table, capsys: Any, ending: str) -> None:
    """O12 through the proxy: a player who never comes back loses; both gone is a void (seen by the one who
    resumes). The player who sees the end verifies with its witness, in the game and with the CLI."""
    t = table
    await t.seat()
    await t.start()
    await t.step()
    await t.step()
    a, b = t.players
    match = t.live
    b.client.close()
    if ending == "void":
        a.client.close()
    await pump(lambda: all(s.peer is None for s in t.server.room(t.code).seats[1 if ending == "disconnect" else 0:]))
    t.server.advance(max(s.grace for s in t.server.room(t.code).seats if s.grace is not None) - t.server.now() + 1)
    assert match.over
    if ending == "void":
        a.client.resume_saved(a.services.tokens.load())
    await pump(lambda: a.in_game() and a.client.match is not None and a.match.end is not None and a.top.panel.open, a)
    assert match.record(room=t.code)["result"]["reason"] == ending
    report = verify_in_game(a)
    assert report.ok and check_of(report, "transcript_seen") is True, failed(report)
    record = t.folder / "record.json"
    record.write_text(json.dumps(a.match.record()))
    status, out = cli(capsys, record, "--witness", witness_file(a, match.id))
    assert status == 0 and out["ok"], failed(out)
    # B's witness stops where B left: what it saw still holds against the record (no end shown).
    status, out = cli(capsys, record, "--witness", witness_file(b, match.id))
    assert status == 0 and check_of(out, "end_shown") is None and check_of(out, "transcript_seen") is True, out


# ----- forgeries: what each one passes and what catches it ------------------------------------------------------------
EXPECTED: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # name: (record-only checks that fail — none: the record alone still verifies, as issue 14 found;
    #        the checks that fail with either player's witness)
    "new_server_seed": ((), ("commitment_shown",)),
    "other_person_first": ((), ("seat_and_seed",)),
    "first_match_swap": (("first_player",), ("first_player", "seat_and_seed")),
    "moved_mine": ((), ("plants_seen", "transcript_seen")),
    "chosen_auto_move": (("auto_moves",), ("auto_moves", "transcript_seen")),
    "chosen_auto_move_no_timeout": ((), ("transcript_seen",)),
    "rewritten_cells": ((), ("transcript_seen",)),
    "times_backwards": (("times",), ("times", "transcript_seen")),
    "long_turn": (("deadlines",), ("deadlines", "transcript_seen")),
    "negative_elapsed": (("times",), ("times", "end_shown")),
    "four_opening_timeouts": (("auto_moves",), ("auto_moves", "transcript_seen")),
    "seed_with_colon": (("seeds",), ("seeds", "seat_and_seed")),
    "string_nonce": (("seeds",), ("seeds", "seat_and_seed")),
}
assert set(EXPECTED) == set(forgeries.BUILDERS)


def _expect(name: str, without: Any, with_witness: list[Any]) -> None:
    record_only, caught_by = EXPECTED[name]
    if record_only:
        assert set(record_only) <= set(failed(without)), (name, failed(without))
    else:  # the forgery is consistent in itself: only a witness can tell
        assert check_of(without, "record") is True and not failed(without), (name, failed(without))
    for report in with_witness:
        assert set(caught_by) <= set(failed(report)), (name, failed(report))


@pytest.mark.parametrize("name", list(EXPECTED))
def test_forgery_of_the_honest_match_is_caught_by_each_witness(honest: HonestRoom, capsys: Any, name: str) -> None:
    """Each forgery built from honest match 1 (and its rematch where it chains): without a witness it verifies
    where the record cannot tell; with either player's witness file it fails, by name, in the verifier and the CLI."""
    seen = honest.first
    record = seen["a"].record
    forged = forgeries.BUILDERS[name](record)
    assert forged != record and forged["match_id"] == record["match_id"]
    path = honest.folder / f"forged-{name}.json"
    path.write_text(json.dumps(forged))
    without = verify_record(forged)
    status, out = cli(capsys, path)
    assert status == (1 if EXPECTED[name][0] else 0) and failed(out) == failed(without)
    reports = [verify_record(forged, seen[who].witness) for who in ("a", "b")]
    for who in ("a", "b"):
        status, out = cli(capsys, path, "--witness", seen[who].witness_path)
        assert status == 1
        reports.append(out)
    _expect(name, without, reports)


def test_a_moved_mine_in_a_version_1_record_is_caught_by_the_plants_seen(honest: HonestRoom) -> None:
    """Forgery 4 against fairness version 1 (an older server's plant chain): the forger recomputes the chain
    from the revealed salt and the record verifies alone; each player's plants and chain seen catch it."""
    honest_v1 = forgeries.as_version1(honest.first["a"].record)
    witnesses = {who: forgeries.witness_as_version1(honest.first[who].witness, honest_v1) for who in ("a", "b")}
    report = verify_record(honest_v1, witnesses["a"])
    assert report.ok and report.check("version").ok is True, failed(report)
    forged = forgeries.moved_mine(honest_v1)
    assert forged["fairness"]["version"] == 1 and forged["fairness"]["transcript"] == forgeries.transcript_v1(forged)
    assert verify_record(forged).ok
    for who in ("a", "b"):
        caught = verify_record(forged, witnesses[who])
        assert {"plants_seen", "transcript_seen"} <= set(failed(caught)), failed(caught)


# ----- forgeries delivered live through the operator proxy --------------------------------------------------------------
LIVE = [*((name, True) for name in EXPECTED), ("moved_mine", False)]
"""(forgery, whether the proxy also rewrites the result screen to agree with it)."""


@pytest_twisted.ensureDeferred
@pytest.mark.parametrize(("name", "screen"), LIVE, ids=[f"{n}{'' if s else '-screen_as_sent'}" for n, s in LIVE])
async def test_forgery_delivered_in_match_end_fails_the_in_game_verify(
        table: Table, capsys: Any, name: str, screen: bool) -> None:
    """The operator's proxy replaces the record in ``match_end`` (and any ``get_record`` reply) with the forgery
    and rewrites the result screen to agree with it; both players' in-game Verify — and the CLI with the witness
    file each client wrote — fail by the named check. A forgery whose screen was left as the server sent it
    also fails ``end_shown``."""
    t = table
    forged: dict[str, dict[str, Any]] = {}

    def forge(link: Any, msg: dict[str, Any]) -> dict[str, Any]:
        if msg["match_id"] not in forged:
            forged[msg["match_id"]] = forgeries.BUILDERS[name](msg["record"])
        return forgeries.forge_match_end(msg, forged[msg["match_id"]], screen=screen)

    def record_reply(link: Any, msg: dict[str, Any]) -> dict[str, Any] | None:
        record = msg.get("record")
        if isinstance(record, dict) and record.get("match_id") in forged:
            return {**msg, "record": forged[record["match_id"]]}
        return None

    t.proxy.on("match_end", forge)
    t.proxy.on("record", record_reply)
    await t.seat()
    await t.start()
    await play_honest_first_match(t, interruptions=frozenset())
    match_id = t.live.id
    honest_record = t.live.record(room=t.code)
    fake = forged[match_id]
    assert fake != honest_record
    record_file = t.folder / "received.json"
    await pump(lambda: all(p.top.panel.open for p in t.players), *t.players)
    reports = []
    for p in t.players:
        assert p.match.record() == fake  # the client holds the forgery
        shown = forgeries.seat_end(fake, p.match.seat)
        agrees = p.match.end.turns == shown["turns"] and p.match.end.result.wire() == shown["result"]
        agrees = agrees and p.match.end.reveal.wire() == shown["reveal"]
        assert agrees == screen or fake["result"] == honest_record["result"]
        report = verify_in_game(p)
        assert not report.ok
        if not screen:
            assert "end_shown" in failed(report), failed(report)
        reports.append(report)
        record_file.write_text(json.dumps(p.match.record()))
        status, out = cli(capsys, record_file, "--witness", witness_file(p, match_id))
        assert status == 1
        reports.append(out)
    # Anyone fetching the record later (``get_record``, O15) through the operator gets the forgery too.
    spectator = await connect(_reactor(), "127.0.0.1", t.proxy.port)
    try:
        await spectator.hello()
        reply = await spectator.request("get_record", match_id=match_id)
    finally:
        spectator.transport.loseConnection()
    assert reply["record"] == fake
    record_file.write_text(json.dumps(reply))  # the reply as saved: the CLI reads the record out of it
    status, out = cli(capsys, record_file)
    assert status == (1 if EXPECTED[name][0] else 0)
    _expect(name, out, reports)


@pytest_twisted.ensureDeferred
async def test_a_malformed_record_in_match_end_gets_a_message_not_a_traceback_or_a_frozen_window(
        table: Table, capsys: Any) -> None:
    """A mine commitment that is not 64 hex digits (issue 14): the in-game Verify says the record cannot be
    verified and the game goes on; ``mine-duel verify`` exits 2 with a message."""
    t = table

    def broken(link: Any, msg: dict[str, Any]) -> dict[str, Any]:
        record = copy.deepcopy(msg["record"])
        record["fairness"]["mine_commitments"][0] = "not-hex"
        return {**msg, "record": record}

    t.proxy.on("match_end", broken)
    await t.seat()
    await t.start()
    for _ in range(3):
        await t.step()
    await t.step()  # the second opening plant: the first normal turn begins
    await t.ko()
    await pump(lambda: all(p.top.panel.open for p in t.players), *t.players)
    a = t.a
    a.click("verify")
    popup = a.app.stack.popup
    assert isinstance(popup, VerifyPopup)
    assert popup.report is None or not popup.report.valid
    a.click("close")
    a.click("view_board")  # the window still answers
    assert a.top.viewing_board and a.app.stack.popup is None
    record_file = t.folder / "broken.json"
    record_file.write_text(json.dumps(a.match.record()))
    capsys.readouterr()
    assert verify_main([str(record_file), "--witness", str(witness_file(a, t.live.id))]) == 2
    err = capsys.readouterr().err
    assert "mine_commitments" in err and "Traceback" not in err
