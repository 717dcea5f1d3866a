"""Issue 15, item 4: a malicious server never freezes the game client.

A real headless app (``support.client_driver.Driver``, fake clock, real pygame events) talks over
loopback to :class:`support.hostile_server.HostileServer`, which seats it in the lobby, a peeked
room, the waiting room or a match and then sends each hostile message of the issue, and a seeded
set of fuzzed variants of every server message type. After each: the app still runs frames (no
exception, still running), and either the line was refused at decode (the connection closed, the
lobby saying *bad server*) or it was shown without harm; and a ``ping`` is answered only by
frames: while the app's loop does not run nobody answers, so a dead window never looks alive.
"""

from __future__ import annotations

import copy
import time
from dataclasses import replace

import pygame
import pytest
import pytest_twisted
from support.client_driver import Driver
from support.hostile_server import (
    HEX64,
    MATCH,
    ROOM,
    TOKEN,
    HostileServer,
    T,
    Variant,
    all_mutations,
    baseline,
    line,
    mutations,
    over_state,
)
from twisted.internet.task import deferLater

from mineduel.client.net import tcp_connector
from mineduel.client.online_client import Conn, OnlineServices
from mineduel.client.scenes.game import GameScene
from mineduel.client.scenes.match_panels import VerifyPopup
from mineduel.client.scenes.online import OnlineScene
from mineduel.client.scenes.problem import ProblemScene
from mineduel.client.tokens import SavedSession, TokenStore
from mineduel.shared.wire import codec
from mineduel.shared.wire.messages import BadMessage, Ping, Pong


def _reactor():
    from twisted.internet import reactor

    return reactor


async def turn(n: int = 1) -> None:
    """Let the reactor handle its sockets ``n`` times, without a frame of the app.

    ``deferLater(reactor, 0)`` alone may run many times in one reactor iteration without polling
    (calls due "now" are run in the same pass), so each turn also polls once (``doIteration(0)``):
    whatever a peer wrote is read, deterministically, with no real waiting.
    """
    reactor = _reactor()
    for _ in range(n):
        reactor.doIteration(0)
        await deferLater(reactor, 0, lambda: None)


class Client:
    """One headless app on its own profile folder, talking TCP to the hostile server."""

    def __init__(self, tmp_path, server: HostileServer, *, join: str | None = None, name: str = "a"):
        folder = tmp_path / name
        folder.mkdir(exist_ok=True)
        self.server = server
        self.services = OnlineServices(connect=tcp_connector(_reactor()), tokens=TokenStore(folder))
        self.d = Driver(folder, language="en", join=join, online_services=lambda: self.services)
        self.d.app.ctx.settings = replace(self.d.app.ctx.settings, player_name="Tester")  # named already (name_popup.py)

    @property
    def app(self):
        return self.d.app

    @property
    def session(self):
        return self.app.online_session

    @property
    def lobby(self) -> OnlineScene | None:
        return next((s for s in self.app.stack.scenes if isinstance(s, OnlineScene)), None)

    def problem(self) -> bool:
        return isinstance(self.app.stack.top, ProblemScene)

    def in_match(self) -> bool:
        top = self.app.stack.top
        return isinstance(top, GameScene) and self.lobby is not None and top.controller is not None

    async def pump(self, cond, limit: int = 600) -> None:
        for _ in range(limit):
            self.d.frame(0.02)
            if cond():
                return
            await turn()
        raise AssertionError("condition never held")

    async def frames(self, n: int = 60) -> None:
        """``n`` frames, each followed by a reactor turn: the app must keep running through them."""
        for _ in range(n):
            delay = self.d.frame(0.05)
            assert delay is not None and self.app.running
            await turn()

    def click(self, name: str) -> None:
        self.d.click_named(name)

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
        self.d.close()


async def seated(tmp_path, server: HostileServer, where: str, name: str = "a") -> Client:
    """A client on the server page (``lobby``), a peeked room (``room``), the waiting room, a match or its end."""
    link = f"mineduel://127.0.0.1:{server.port}" + (f"/join/{ROOM}" if where == "room" else "")
    c = Client(tmp_path, server, join=link, name=name)
    if where == "room":
        await c.pump(lambda: c.lobby is not None and c.lobby.page == "room")
        return c
    await c.pump(lambda: c.lobby is not None and c.lobby.page == "server")
    if where == "lobby":
        return c
    c.click("create")
    await c.pump(lambda: c.lobby.page == "waiting" and c.session.room is not None)
    if where == "waiting":
        return c
    server.start_match()
    await c.pump(c.in_match)
    if where == "match":
        return c
    server.end_match()
    await c.pump(lambda: c.app.stack.top.panel.open)
    return c


def refused_at_decode(c: Client) -> bool:
    """The existing protocol-error path: the link dropped, the lobby's error page says *bad server*."""
    s = c.session
    return (s is not None and s.conn == Conn.FAILED and s.error == "online.error.bad_server"
            and c.lobby is not None and c.lobby.page == "error" and not c.problem())


async def reactor_until(cond, seconds: float = 10.0) -> None:
    """Reactor turns, no frames, until ``cond()`` holds (a bound on waiting, never a sleep)."""
    end = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < end, "condition never held"
        await turn()


def heard(c: Client) -> list:
    """Every message the client's network layer hands its session from now on (a spy on the queue)."""
    connection = c.session.connection
    seen: list = []
    original = connection.link_message

    def keep(link, message):
        seen.append(message)
        return original(link, message)

    connection.link_message = keep
    return seen


async def pings_follow_the_loop(c: Client) -> str:
    """A server ping is answered by frames only: once the client has read it, nothing at all is written
    while the loop stands still; the next frame answers it. Returns ``answered``, or ``closed`` when the
    client had closed the connection (the server then hears nothing, and knows it)."""
    conn = c.server.last
    link = None if c.session is None else c.session.connection.link
    proto = None if link is None else link.proto
    if proto is None or proto.transport is None:
        await reactor_until(lambda: not conn.open)
        return "closed"
    seen = heard(c)
    writes: list[bytes] = []
    transport = proto.transport
    original = transport.write
    transport.write = lambda data: (writes.append(data), original(data))[1]
    try:
        before = conn.pongs
        c.server.ping()
        await reactor_until(lambda: any(isinstance(m, Ping) for m in seen))  # read, queued for the next frame
        await turn(5)
        assert writes == [], "the client wrote while its loop did not run"
        await c.frames(1)
        assert any(b'"pong"' in w for w in writes), "the frame did not answer the ping"
        await reactor_until(lambda: conn.pongs == before + 1)
    finally:
        transport.write = original
    return "answered"


async def handled(c: Client, server: HostileServer, raw: bytes, marker: int) -> None:
    """Send ``raw``, then a harmless marker (a ``pong`` with an id nobody asked for): once the marker is
    heard, or the link dropped the line as garbage, the client's network layer has read ``raw``."""
    seen = heard(c)
    link = c.session.connection.link
    server.send(raw)
    server.send({"type": "pong", "server_time": T, "id": f"marker-{marker}"})
    await reactor_until(lambda: any(isinstance(m, Pong) and m.id == f"marker-{marker}" for m in seen)
                        or link is None or link.garbage or link.proto is None)


@pytest_twisted.async_yield_fixture
async def server():
    s = HostileServer().listen(_reactor())
    yield s
    await s.stop()


def _with(kind: str, path: str, value: object, base: dict | None = None) -> bytes:
    message = copy.deepcopy(base if base is not None else baseline()[kind])
    target = message
    *parents, last = path.split(".")
    for part in parents:
        target = target[part]
    target[last] = value
    return line(message)


# The hostile messages of issue 15, item 4, each with the screen it is sent to.
ISSUE_15 = {
    "room_info.seats='two'": ("room", _with("room_info", "seats", "two")),
    "room_info.seats=[1]": ("room", _with("room_info", "seats", [1])),
    "room_info.seats=true": ("room", _with("room_info", "seats", True)),
    "state.deadline.at=+1.7e308": ("match", _with("state", "deadline.at", 1.7e308)),
    "state.deadline.at=-1.7e308": ("match", _with("state", "deadline.at", -1.7e308)),
    "state.deadline.left=+1.7e308": ("match", _with("state", "deadline.left", 1.7e308)),
    "state.server_time=-1.7e308": ("match", _with("state", "server_time", -1.7e308)),
    "presence.deadline.at=+1.7e308": ("match", _with("presence", "deadline.at", 1.7e308)),
    "presence.deadline.at=-1.7e308": ("match", _with("presence", "deadline.at", -1.7e308)),
    "presence.server_time=-1.7e308": ("match", _with("presence", "server_time", -1.7e308)),
    "room.opponent.grace.at=+1.7e308 (waiting)": ("waiting", _with("room", "opponent.grace.at", 1.7e308)),
    "room.opponent.grace.at=-1.7e308 (match)": ("match", _with("room", "opponent.grace.at", -1.7e308)),
    "room.opponent.grace.left=+1.7e308 (match)": ("match", _with("room", "opponent.grace.left", 1.7e308)),
    "match_end.elapsed=-5": ("match", _with("match_end", "elapsed", -5.0)),
    "state.events[0].commitment non-hex": (
        "match", line({**baseline()["state"], "events": [{**baseline()["state"]["events"][0], "commitment": "zz" * 32}]})),
}


@pytest_twisted.ensureDeferred
@pytest.mark.parametrize("name", list(ISSUE_15))
async def test_each_hostile_message_of_issue_15_is_refused_at_decode(tmp_path, server, name):
    """Each message of issue 15 item 4 is a BadMessage at decode: the connection closes, the player reads
    *bad server* with a way back, frames go on, and no ping is answered by a window whose loop stopped."""
    where, raw = ISSUE_15[name]
    with pytest.raises(BadMessage):
        codec.decode_server(raw.rstrip(b"\n"))
    c = await seated(tmp_path, server, where)
    try:
        await handled(c, server, raw, 0)
        await c.frames()
        assert refused_at_decode(c)
        assert await pings_follow_the_loop(c) == "closed"  # the client closed the connection
        assert c.app.stack.top is c.lobby, c.app.stack.scenes
        c.click("to_menu")  # the error page's way back
        assert c.lobby.page == "home"
    finally:
        c.close()


@pytest_twisted.ensureDeferred
async def test_non_hex_mine_commitment_in_the_record_then_verify(tmp_path, server):
    """The record's own mine commitment is not hex (the message around it is well formed): Verify says
    the record fails its checks; nothing crashes, the connection stays, pings are answered by frames."""
    c = await seated(tmp_path, server, "match")
    try:
        end = copy.deepcopy(baseline()["match_end"])
        end["record"]["fairness"]["mine_commitments"] = ["not hex at all"]
        server.stage = "over"
        server.send(over_state())
        await handled(c, server, line(end), 0)
        await c.pump(lambda: c.app.stack.top.panel.open)
        c.click("verify")
        popup = c.app.stack.popup
        assert isinstance(popup, VerifyPopup)
        await c.frames()
        assert not c.problem() and c.session.conn == Conn.OPEN
        assert await pings_follow_the_loop(c) == "answered"
    finally:
        c.close()


def test_every_fuzzed_variant_is_a_typed_message_or_bad_message():
    """All variants the harness can make (one field changed each, ~2,500): ``decode_server`` gives a typed
    message or raises BadMessage, never another exception (the line client would drop the link either way)."""
    variants = all_mutations()
    assert len(variants) > 2000
    for kind, message in baseline().items():
        assert type(codec.decode_server(line(message).rstrip(b"\n"))).TYPE.value == kind
    refused = 0
    for v in variants:
        try:
            codec.decode_server(v.raw.rstrip(b"\n"))
        except BadMessage:
            refused += 1
    assert refused > len(variants) // 2


def _playing(c: Client) -> bool:
    s = c.session
    return (c.in_match() and s is not None and s.conn == Conn.OPEN and s.match is not None and s.match.match_id == MATCH
            and s.match.outcome is None and c.app.stack.top.controller is s.match)


def _at(c: Client, where: str) -> bool:
    """The client on the page ``where`` (``room``: a peeked room; ``waiting``; ``match``), connected."""
    if where == "match":
        return _playing(c)
    s = c.session
    return (s is not None and s.conn == Conn.OPEN and c.app.stack.top is c.lobby and c.lobby.page == where
            and (where != "waiting" or s.room is not None) and (where != "room" or s.room_info is not None))


async def _back_to(c: Client, server: HostileServer, where: str) -> None:
    """After a variant that ended the session (or the seat, or the match), the same page again: the
    seat resumed with its token (``waiting``, ``match``), the room's link opened again (``room``)."""
    if _at(c, where):
        return
    if c.problem():
        c.click("back")
        c.app.stack.push(OnlineScene(c.app.ctx, on_play_cpu=c.app.back_to_cpu))
    server.stage = "match" if where == "match" else "lobby"
    if where == "room":
        c.lobby.open_link(f"mineduel://127.0.0.1:{server.port}/join/{ROOM}")
    else:
        c.session.resume_saved(SavedSession("127.0.0.1", server.port, ROOM, TOKEN))
    await c.pump(lambda: _at(c, where))


# Which messages each page is fuzzed with: every type during a match; on the other pages the ones they show.
FUZZ_PAGES = {
    "match": tuple(baseline()),
    "room": ("room_info", "error", "ok", "ping", "pong", "welcome", "server_closing"),
    "waiting": ("room", "room_created", "joined", "rematch", "room_closed", "presence", "error"),
}


@pytest_twisted.ensureDeferred
@pytest.mark.parametrize("where", list(FUZZ_PAGES))
async def test_fuzzed_variants_of_every_message_type(tmp_path, server, where):
    """A seeded sample of fuzzed variants (one field changed each), each sent to a client on a page that
    shows it: frames go on, and each is refused at decode (connection closed, *bad server*) or shown,
    never a problem screen; while the connection stays open, the next ping is answered only by frames."""
    kinds = FUZZ_PAGES[where]
    variants: list[Variant] = [v for v in mutations(seed=15, per_type=6 if where == "match" else 12) if v.kind in kinds]
    assert {v.kind for v in variants} == set(kinds)
    started = time.perf_counter()
    c = await seated(tmp_path, server, where)
    outcomes: dict[str, int] = {}
    try:
        for i, v in enumerate(variants):
            await _back_to(c, server, where)
            await handled(c, server, v.raw, i)
            await c.frames(20)
            if refused_at_decode(c):
                outcome = "refused at decode"
            elif c.problem():
                outcome = "problem screen"
            else:
                outcome = "shown"
            assert outcome != "problem screen", (v.kind, v.path, v.how)  # decode catches all of them
            if outcome == "shown" and c.session.conn == Conn.OPEN:
                assert await pings_follow_the_loop(c) == "answered", (v.kind, v.path, v.how)
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
    finally:
        c.close()
    print(f"fuzzed on {where}: {len(variants)} variants in {time.perf_counter() - started:.1f} s: {outcomes}")
    assert outcomes.get("refused at decode", 0) > 0 and outcomes.get("shown", 0) > 0


@pytest_twisted.ensureDeferred
async def test_pings_are_answered_by_the_frame_loop_only(tmp_path, server):
    """With a healthy server: a ping waits for the next frame (the network layer answers nothing)."""
    c = await seated(tmp_path, server, "waiting")
    try:
        assert await pings_follow_the_loop(c) == "answered"
        assert await pings_follow_the_loop(c) == "answered"
    finally:
        c.close()


@pytest_twisted.ensureDeferred
async def test_a_failing_match_screen_becomes_the_problem_screen_and_reconnect_resumes(tmp_path, server, monkeypatch,
                                                                                      caplog):
    """A scene's draw raises mid-match: the traceback is logged, the connection is closed (so the server's
    next ping goes unanswered and the seat counts as dropped), the problem screen offers Reconnect and
    Back; Reconnect resumes the seat with its token and the match screen is back."""
    c = await seated(tmp_path, server, "match")
    try:
        original = GameScene.draw

        def broken(self, canvas, area):
            raise ZeroDivisionError("a drawing bug")

        monkeypatch.setattr(GameScene, "draw", broken)
        c.app.invalidate(None)
        delay = c.d.frame(0.02)
        assert delay is not None and c.problem()
        assert "a frame failed" in caplog.text and "ZeroDivisionError: a drawing bug" in caplog.text
        problem = c.app.stack.top
        assert [b.name for b in problem.widgets.buttons] == ["reconnect", "back"]
        assert c.app.online_session is None
        first = c.server.connections[-1]
        await reactor_until(lambda: not first.open)  # closed by the client: the seat counts as dropped (O12)
        await c.frames(10)
        monkeypatch.setattr(GameScene, "draw", original)
        c.click("reconnect")
        await c.pump(c.in_match)
        resume = [m for m in c.server.last.received if m["type"] == "resume"]
        assert resume and resume[0]["token"] == TOKEN and resume[0]["room"] == ROOM
        assert await pings_follow_the_loop(c) == "answered"
    finally:
        c.close()


@pytest_twisted.ensureDeferred
async def test_a_failing_online_callback_becomes_the_problem_screen(tmp_path, server, monkeypatch, caplog):
    """The session's handling of a message raises (not a ValueError: a bug): the same problem screen,
    the connection closed; Back is the CPU game."""
    from mineduel.client.online_match import OnlineMatch

    c = await seated(tmp_path, server, "match")
    try:
        def broken(self, msg):
            raise RuntimeError("a session bug")

        monkeypatch.setattr(OnlineMatch, "apply_state", broken)
        first = server.last
        server.send(baseline()["state"])
        await c.pump(c.problem)
        assert "RuntimeError: a session bug" in caplog.text
        await reactor_until(lambda: not first.open)
        await c.frames(10)
        c.click("back")
        assert c.app.stack.top is c.app.game
    finally:
        c.close()


def test_a_failing_cpu_game_becomes_the_problem_screen_and_back_starts_a_new_one(tmp_path, monkeypatch, caplog):
    """Offline, an update that raises: the problem screen with Back only (nothing to reconnect to);
    Back is a fresh CPU game with its start popup."""
    from mineduel.client.scenes.popups import RulesPopup

    d = Driver(tmp_path, language="en")
    try:
        old_game = d.app.game

        def broken(self, now):
            raise KeyError("an update bug")

        monkeypatch.setattr(GameScene, "update", broken)
        d.frame()
        assert isinstance(d.app.stack.top, ProblemScene) and d.app.stack.popup is None
        assert "KeyError: 'an update bug'" in caplog.text
        problem = d.app.stack.top
        assert [b.name for b in problem.widgets.buttons] == ["back"]
        assert d.app.ctx.t(problem.message_key).startswith("The game had a problem")
        for _ in range(30):
            assert d.frame() is not None
        monkeypatch.undo()
        d.click(d.to_window(problem.widgets.by_name("back").rect.center))
        assert d.app.stack.top is d.app.game and d.app.game is not old_game
        assert isinstance(d.app.stack.popup, RulesPopup)
    finally:
        d.close()


def test_a_problem_screen_that_fails_too_ends_the_app_cleanly(tmp_path, monkeypatch, caplog):
    """A second failure, in the problem screen itself: logged, and the app stops (``None``: the reactor
    stops and every connection is closed) instead of leaving a frozen window."""
    d = Driver(tmp_path, language="en")
    try:
        monkeypatch.setattr(GameScene, "update", lambda self, now: 1 / 0)
        monkeypatch.setattr(ProblemScene, "draw", lambda self, canvas, area: [][0])
        assert d.frame() is not None and isinstance(d.app.stack.top, ProblemScene)
        assert d.frame() is None and not d.app.running
        assert "the problem screen failed too" in caplog.text
    finally:
        d.close()


def test_escape_on_the_problem_screen_is_back(tmp_path, monkeypatch):
    d = Driver(tmp_path, language="en")
    try:
        monkeypatch.setattr(GameScene, "update", lambda self, now: 1 / 0)
        d.frame()
        monkeypatch.undo()
        d.key(pygame.K_ESCAPE)
        assert d.app.stack.top is d.app.game
    finally:
        d.close()


def test_fixtures_are_valid_protocol():
    """The harness's own messages read as the documented types (so a refusal above is the mutation's doing)."""
    for kind, message in baseline().items():
        assert type(codec.decode_server(line(message).rstrip(b"\n"))).TYPE.value == kind
    assert codec.decode_server(line(over_state()).rstrip(b"\n")).result is not None
    assert len(HEX64) == 64 and T > 0 and MATCH


def test_a_hostile_lan_answer_is_listed_safely_or_not_at_all():
    """Anyone on the LAN may answer discovery (PROTOCOL.md §12): a NUL or a novel in the name is cut to
    40 printable characters (pygame cannot draw a NUL); a port or room count that makes no sense drops it."""
    from types import SimpleNamespace

    from mineduel.client.net import listed

    def answer(**changes):
        return SimpleNamespace(**{"host": "10.0.0.7", "port": 47650, "name": "MINE DUEL", "open_rooms": 1,
                                  "protocol": 1, "tls": False, "pin": None, **changes})

    shown = listed(answer(name="evil\x00\u202e" + "x" * 5000))
    assert shown is not None and shown.name == "evil" + "x" * 34 and shown.name.isprintable()
    for bad in ({"port": 0}, {"port": 70000}, {"port": True}, {"open_rooms": -1}, {"open_rooms": 10**100},
                {"protocol": "1"}, {"host": ""}):
        assert listed(answer(**bad)) is None, bad
    assert listed(answer(tls="yes")).tls is False
