"""The online client end to end over loopback (pytest-twisted): a real server, headless apps driven by pygame events.

The server runs in this process with real sockets and its rules on ``task.Clock`` (grace periods
and turn deadlines are advanced by the test, never waited for); each app runs on a fake clock and is
driven one frame at a time with posted pygame events, exactly as the players' clicks and keys.
"""

from __future__ import annotations

from dataclasses import replace

import pygame
import pytest
import pytest_twisted
from support.client_driver import Driver
from support.harness import oracle_message
from twisted.internet import protocol as tprotocol
from twisted.internet.task import Clock, deferLater

from mineduel.client.net import discover_servers, make_services, start_host, tcp_connector
from mineduel.client.online_client import Conn, OnlineServices
from mineduel.client.online_match import OnlineMatch
from mineduel.client.scenes.game import GameScene as OnlineGameScene
from mineduel.client.scenes.lobby_paint import refereed_by_host
from mineduel.client.scenes.lobby_seats import parse_address
from mineduel.client.scenes.match_panels import VerifyPopup
from mineduel.client.scenes.online import OnlineScene
from mineduel.client.tokens import SavedSession, TokenStore
from mineduel.server.config import Config
from mineduel.server.service import start_server
from mineduel.server.storage import SQLiteStorage
from mineduel.shared.rules.bitboard import cells
from mineduel.shared.wire.codec import encode_message, parse_server
from mineduel.shared.wire.messages import MatchStart, State, Welcome


def _reactor():
    from twisted.internet import reactor

    return reactor


class Server:
    """A real server on 127.0.0.1 whose rules run on a fake clock."""

    def __init__(self, tmp_path, **config):
        self.clock = Clock()
        self.clock.advance(1_700_000_000)
        settings = {"rate_per_second": 1e6, "rate_burst": 1e6, "idle_timeout": 1e6, "ping_interval": 1e6, **config}
        self.config = Config(host="127.0.0.1", port=0, udp_port=0, db=str(tmp_path / "server.db"), public_host="127.0.0.1",
                             **settings)
        # The server's storage is given, so it commits on the loop's own thread: the apps run on
        # fake clocks advanced every frame, and a commit on a worker thread (real time, fsync)
        # would let them time out while the reactor spins. The threaded writer has its own tests.
        storage = SQLiteStorage(self.config.db)
        self.handle = start_server(_reactor(), self.config, clock=self.clock, storage=storage)
        self.clock.advance(0)

    @property
    def port(self):
        return self.handle.port

    def room(self, code):
        return self.handle.core.rooms.rooms[code]

    def advance(self, seconds):
        self.clock.advance(seconds)


@pytest_twisted.async_yield_fixture
async def server(tmp_path):
    s = Server(tmp_path)
    yield s
    await s.handle.stop()


def services_for(folder, **extra) -> OnlineServices:
    """The app's own services (client/net.py); tests replace hosting or discovery with loopback versions."""
    if not extra:
        return make_services(_reactor(), folder, client_name="test/1", clipboard=lambda text: True)
    return OnlineServices(connect=tcp_connector(_reactor()), tokens=TokenStore(folder), clipboard=lambda text: True, **extra)


class Player:
    """One headless app with its own profile folder, fake clock and online services."""

    def __init__(self, tmp_path, name, language="en", join=None, **extra):
        self.folder = tmp_path / name
        self.folder.mkdir(exist_ok=True)
        self.services = services_for(self.folder, **extra)
        self.d = Driver(self.folder, language=language, join=join, online_services=lambda: self.services)
        self.d.app.ctx.settings = replace(self.d.app.ctx.settings, player_name="Tester")  # named already (name_popup.py)

    @property
    def app(self):
        return self.d.app

    @property
    def top(self):
        return self.app.stack.top

    @property
    def lobby(self) -> OnlineScene:
        return next(s for s in self.app.stack.scenes if isinstance(s, OnlineScene))

    @property
    def client(self):
        lobby = next((s for s in self.app.stack.scenes if isinstance(s, OnlineScene)), None)
        return None if lobby is None else lobby.client

    @property
    def match(self) -> OnlineMatch:
        return self.client.match

    def open_online(self):
        """From the CPU game's menu (as a player would): Start, Esc, Online play."""
        self.d.click_button("start")
        self.d.key(pygame.K_ESCAPE)
        self.d.click_button("menu.online")
        assert isinstance(self.top, OnlineScene)

    def click(self, name):
        self.d.click_named(name)

    def type_into(self, field, text):
        self.d.click(self.d.to_window(field.rect.center))
        for ch in text:
            self.d.post(pygame.TEXTINPUT, text=ch)  # what SDL sends for typed characters
            self.d.frame()

    def click_cell(self, cell):
        self.d.click(self.d.to_window(self.top.board.cell_center(cell)))


async def pump(cond, *players, limit=4000, delay=0.0, note=None):
    """Frames for every player and reactor turns (no sleeping) until ``cond()`` holds.

    ``delay`` > 0 lets real time pass between turns, only where the network's own timer is real
    (LAN discovery collects answers for a fixed time).
    """
    for _ in range(limit):
        for p in players:
            p.d.frame(0.02)
        if cond():
            return
        await deferLater(_reactor(), delay, lambda: None)
    raise AssertionError(f"condition never held {note() if note else ''}")


async def elapse(seconds, *players):
    """Move the players' clocks a second at a time, letting heartbeats go back and forth."""
    for _ in range(int(seconds)):
        for p in players:
            p.d.frame(1.0)
        for _ in range(3):
            await deferLater(_reactor(), 0, lambda: None)


async def seated_pair(tmp_path, server, *, b_language="en"):
    """A creates a room through the lobby (Connect to... host:port, Create room); B opens the invite link."""
    a = Player(tmp_path, "a")
    a.open_online()
    a.type_into(a.lobby.address_field, f"127.0.0.1:{server.port}")
    a.click("connect")
    await pump(lambda: a.lobby.page == "server", a, note=lambda: (a.client.conn, a.client.error, a.lobby.address_field.text))
    a.click("create")
    await pump(lambda: a.lobby.page == "waiting" and a.client.room is not None, a)
    invite = a.client.invite
    assert invite == f"mineduel://127.0.0.1:{server.port}/join/{a.client.room_code}"
    b = Player(tmp_path, "b", language=b_language, join=invite)
    await pump(lambda: b.lobby.page == "room", a, b)
    assert len(server.room(a.client.room_code).seats) == 1  # O1: opening the link seated nobody
    b.click("join")
    await pump(lambda: b.lobby.page == "waiting" and a.client.room.opponent is not None, a, b)
    return a, b


async def start_match(a, b):
    a.click("ready")
    await pump(lambda: a.client.room is not None and a.client.room.me.ready, a, b)
    b.click("ready")
    await pump(lambda: isinstance(a.top, OnlineGameScene) and isinstance(b.top, OnlineGameScene)
               and a.top.controller is not None and b.top.controller is not None, a, b)


def by_seat(a, b):
    return {a.match.seat: a, b.match.seat: b}


async def play_one(server, a, b):
    """The seat to move makes the server oracle's safe move, by clicking like a player (U3 switches modes)."""
    players = by_seat(a, b)
    match = server.room(a.client.room_code).match
    before = match.seq
    mover = players[match.state.to_move]
    msg = oracle_message(match.state)
    if msg["type"] == "end_turn":
        mover.click("end_turn")
    else:
        row, col = msg["cell"]
        mover.click_cell(row * 8 + col)
    await pump(lambda: match.seq > before and all(p.match.seq == match.seq for p in (a, b)), a, b)


def close_all(*players):
    for p in players:
        p.client.close() if p.client is not None else None
    for p in players:
        p.d.close()


@pytest_twisted.ensureDeferred
async def test_ko_then_rematch_with_sides_swapped(tmp_path, server):
    """O1–O3, O7, O13–O14, U6, E1–E2: lobby, link, Ready, a match to KO, the result panel, View board, verify, rematch swapped."""
    a, b = await seated_pair(tmp_path, server)
    try:
        assert a.client.welcome.referee is None and not refereed_by_host(b.lobby)  # a dedicated server
        commitment = a.client.room.next_commitment
        await start_match(a, b)
        assert a.match.start.commitment == commitment  # the match uses the seed committed in the waiting room (R1)
        code = a.client.room_code
        match = server.room(code).match
        while match.state.turn < 3:
            await play_one(server, a, b)
        st = match.state
        mover = by_seat(a, b)[st.to_move]
        left = mover.match.seconds_left()
        assert left is not None and 0 < left <= 20  # U6: the deadline's seconds, from the server
        opp = 1 - st.to_move
        ko = next(cells(st.mines[opp] & ~st.mines[st.to_move] & ~st.revealed & ~st.any_marker))
        first_id, seats = match.id, {p: p.match.seat for p in (a, b)}
        mover.click_cell(ko)
        await pump(lambda: a.top.panel.open and b.top.panel.open, a, b)
        loser, winner = mover, (b if mover is a else a)
        assert loser.top.words.result_kind() == "loss" and winner.top.words.result_kind() == "win"
        assert winner.top.words.reason_text() == "KO: your opponent hit your mine"
        assert loser.top.words.instruction().startswith("You lose")
        assert winner.match.timing().turn == match.state.turn  # E1: from the server
        # E2: View board shows the reveal; View result brings the panel back.
        winner.click("view_board")
        assert not winner.top.panel.open and winner.top.viewing_board
        assert winner.match.reveal().opponent_mines | winner.match.reveal().my_mines
        winner.click("end_turn")  # "View result"
        assert winner.top.panel.open
        winner.click("verify")
        popup = winner.app.stack.popup
        assert isinstance(popup, VerifyPopup) and popup.report.ok
        assert popup.report.checks[0].name == "record"
        winner.click("close")
        # O14: rematch needs both; the agreement shows on the other side.
        winner.click("rematch")
        await pump(lambda: loser.client.opponent.rematch_opponent, a, b)
        assert loser.top.panel.open
        loser.click("rematch")
        await pump(lambda: a.match.match_id != first_id and b.match.match_id != first_id and a.top.controller is a.match
                   and b.top.controller is b.match, a, b)
        for p in (a, b):
            assert p.match.seat == 1 - seats[p]  # sides swapped
            assert p.top.ended is None and not p.top.panel.open and not p.top.viewing_board  # previous viewing state dropped
        assert server.room(code).match.first_rule == "swap"
    finally:
        close_all(a, b)


@pytest_twisted.ensureDeferred
@pytest.mark.parametrize("ending", ["score", "resign", "disconnect", "void"])
async def test_every_ending_reaches_the_result_panel(tmp_path, server, ending):
    """O9–O12, O13, U6: score (both scores), resign behind a confirmation, a disconnect loss after the grace, and void."""
    a, b = await seated_pair(tmp_path, server)
    try:
        await start_match(a, b)
        code = a.client.room_code
        match = server.room(code).match
        if ending == "score":
            while not match.over:
                await play_one(server, a, b)
            await pump(lambda: a.top.panel.open and b.top.panel.open, a, b)
            scores = match.state.scores()
            me, them = scores[a.match.seat], scores[b.match.seat]
            assert a.top.words.reason_text() == f"Score {me} : {them}"
        elif ending == "resign":
            await play_one(server, a, b)
            b.d.key(pygame.K_ESCAPE)
            b.click("online.resign")
            assert b.app.stack.popup is not None  # a confirmation first
            b.click("confirm")
            await pump(lambda: a.top.panel.open and b.top.panel.open, a, b)
            assert b.top.words.reason_text() == "You resigned" and a.top.words.reason_text() == "Your opponent resigned"
        elif ending == "disconnect":
            b.client.close()  # B's program is gone: a clean close is detected at once (O12)
            await pump(lambda: a.client.opponent.away_until is not None, a)
            await elapse(30.0, a)
            assert a.top.words.banner()[0] == "Opponent disconnected: 90s left"
            server.advance(121)
            await pump(lambda: a.top.panel.open, a)
            assert a.top.words.reason_text() == "Your opponent didn't come back"
            assert a.top.words.result_kind() == "win"
        else:
            a.client.close()
            b.client.close()
            await pump(lambda: server.room(code).seats[0].peer is None and server.room(code).seats[1].peer is None)
            server.advance(125)
            assert match.over
            a.lobby.resume_saved() if a.lobby.saved else a.client.resume_saved(a.services.tokens.load())
            await pump(lambda: isinstance(a.top, OnlineGameScene) and a.top.panel.open, a)
            assert a.top.words.result_kind() == "void" and a.top.words.reason_text() == "Both players left"
    finally:
        close_all(a, b)


@pytest_twisted.ensureDeferred
async def test_cut_connection_comes_back_by_itself(tmp_path, server):
    """O12: a cut connection shows the reconnecting banner and resumes by itself (backoff), same match, play goes on."""
    a, b = await seated_pair(tmp_path, server)
    try:
        await start_match(a, b)
        await play_one(server, a, b)
        match_id, seq = a.match.match_id, a.match.seq
        a.client.connection.link.abort()  # a cut cable
        await pump(lambda: a.client.conn == Conn.RECONNECTING, a)
        assert a.top.words.instruction() == "Reconnecting..."
        assert a.top.words.banner() is not None
        await pump(lambda: a.client.conn == Conn.OPEN and a.client.busy is None and b.client.opponent.away_until is None, a, b)
        assert a.match.match_id == match_id and a.match.seq == seq and isinstance(a.top, OnlineGameScene)
        await play_one(server, a, b)
        await play_one(server, a, b)
        assert a.match.seq == seq + 2
    finally:
        close_all(a, b)


@pytest_twisted.ensureDeferred
async def test_restarted_client_resumes_with_its_stored_token(tmp_path, server):
    """O12, O16: the token is stored in the data folder; a new app on the same folder resumes the running match at start."""
    a, b = await seated_pair(tmp_path, server)
    a2 = None
    try:
        await start_match(a, b)
        await play_one(server, a, b)
        saved = TokenStore(a.folder).load()
        assert saved is not None and saved.playing and saved.room == a.client.room_code
        assert saved.token not in a.client.invite  # O1: the link never carries the token
        match_id, view = a.match.match_id, a.match.view()
        a.client.close()  # the program stops
        await pump(lambda: b.client.opponent.away_until is not None, b)
        a2 = Player(tmp_path, "a")  # restarted on the same data folder
        assert isinstance(a2.top, OnlineScene)
        await pump(lambda: isinstance(a2.top, OnlineGameScene) and a2.top.controller is not None, a2, b)
        assert a2.match.match_id == match_id and a2.match.view() == view
        await pump(lambda: b.client.opponent.away_until is None, a2, b)
    finally:
        close_all(*(p for p in (a, b, a2) if p is not None))


@pytest_twisted.ensureDeferred
async def test_host_on_this_computer_and_find_it_on_the_network(tmp_path):
    """Host on this computer starts the server in the client's reactor; Find games lists it (UDP discovery); join by code."""
    hosted = {}

    def host():
        if "info" not in hosted:
            hosted["info"] = start_host(_reactor(), tmp_path / "a", port=0, udp_port=0, interface="127.0.0.1",
                                        public_host="127.0.0.1")
        return hosted["info"]

    a = Player(tmp_path, "a", start_host=host)
    b = None
    try:
        a.open_online()
        a.click("host")
        await pump(lambda: a.lobby.page == "waiting" and a.client.room is not None, a)
        assert (tmp_path / "a" / "mineduel-server.sqlite3").exists()  # the database in the user's data folder
        assert a.lobby.hosting.endswith(f":{hosted['info'].port}")
        a.click("copy")
        assert a.lobby.copied is True
        udp_port = hosted["info"].udp_port
        assert udp_port is not None
        b = Player(tmp_path, "b", discover=discover_servers(_reactor(), port=udp_port, timeout=0.1, targets=("127.0.0.1",)))
        b.open_online()  # the home page scans the LAN by itself (issue 16: one click on the room joins)
        await pump(lambda: b.lobby.found, a, b, limit=300, delay=0.01)
        (found,) = b.lobby.found
        assert [(r.code, r.host_name) for r in found.rooms] == [(a.client.room_code, "Tester")]  # listed, with the name
        b.click(f"room:{a.client.room_code}")
        await pump(lambda: b.lobby.page == "waiting" and a.client.room is not None and a.client.room.opponent is not None, a, b)
        assert a.client.room.opponent.name == "Tester" and b.client.room.opponent.name == "Tester"
        # Issue 14: the hosted server says a player referees; the joining player is told, the host is not.
        assert b.client.welcome.referee == "player" and refereed_by_host(b.lobby)
        assert not refereed_by_host(a.lobby)
    finally:
        close_all(*(p for p in (a, b) if p is not None))
        if "info" in hosted:
            await hosted["info"].stop()


class _FakeServer(tprotocol.Protocol):
    def __init__(self, reply):
        self.reply = reply

    def dataReceived(self, data):
        self.transport.write(self.reply)


@pytest_twisted.ensureDeferred
@pytest.mark.parametrize("kind", ["unreachable", "other_version", "garbage", "server_stops"])
async def test_bad_servers_give_a_message_and_a_way_back(tmp_path, server, kind):
    """Robustness: unreachable, another protocol version, garbage, a server closing mid-match: a message and Back,
    never a traceback."""
    port = server.port
    listening = None
    expected = {"unreachable": "Can't reach the server", "other_version": "This version doesn't match the server. Please update.",
                "garbage": "The server sent something this game doesn't understand. It may not be a MINE DUEL server"}
    if kind == "server_stops":
        a, b = await seated_pair(tmp_path, server)
        try:
            await start_match(a, b)
            await server.handle.stop()
            await pump(lambda: a.client.conn == Conn.RECONNECTING, a, b)
            assert a.top.words.banner() is not None and isinstance(a.top, OnlineGameScene)
            a.d.key(pygame.K_ESCAPE)
            a.click("menu.quit")
            assert not a.app.running
        finally:
            close_all(a, b)
        return
    if kind == "unreachable":
        probe = await _listen(b"")
        port = probe.getHost().port
        await probe.stopListening()
    else:
        if kind == "other_version":
            reply = encode_message(Welcome(2, "v2", "2.0", 0.0, 8192, 20.0, 40.0, 5.0, 15.0, 20.0, 120.0))
        else:
            reply = b"\x00not json at all\n"
        listening = await _listen(reply)
        port = listening.getHost().port
    a = Player(tmp_path, "a")
    try:
        a.open_online()
        a.type_into(a.lobby.address_field, f"127.0.0.1:{port}")
        a.d.key(pygame.K_RETURN)
        await pump(lambda: a.lobby.page == "error", a)
        assert a.client.error is not None and a.app.ctx.t(a.client.error) == expected[kind]
        a.click("to_menu")
        assert a.lobby.page == "home"
        a.click("play_cpu")
        assert a.top is a.app.game
    finally:
        close_all(a)
        if listening is not None:
            await listening.stopListening()


async def _listen(reply):
    factory = tprotocol.Factory.forProtocol(lambda: _FakeServer(reply))
    return _reactor().listenTCP(0, factory, interface="127.0.0.1")


def test_language_changes_keep_the_match_and_the_rematch_agreement(tmp_path):
    """U5: no saved language shows Korean with a selector at the top; switching keeps board, turn, deadline, result, rematch."""
    from support.inprocess import InProcessServer

    srv = InProcessServer()
    services = OnlineServices(connect=srv.connector(), tokens=TokenStore(tmp_path / "t"))
    peer = srv.peer()
    code = peer.send(type="create_room", client_seed="p")[0]["room"]
    d = Driver(tmp_path, join=f"mineduel://127.0.0.1:47650/join/{code}", online_services=lambda: services)
    d.app.ctx.settings = replace(d.app.ctx.settings, player_name="Tester")  # named already (name_popup.py)
    try:
        scene = d.app.stack.top
        assert isinstance(scene, OnlineScene) and d.app.ctx.tr.language == "ko"
        assert scene.widgets.by_name("lang:ko").style == "selected"
        d.frame()
        d.click(d.to_window(scene.widgets.by_name("join").rect.center))
        d.frame()
        d.click(d.to_window(scene.widgets.by_name("ready").rect.center))
        peer.send(type="ready")
        d.frame()
        game = d.app.stack.top
        assert isinstance(game, OnlineGameScene)
        before = (game.view(), scene.client.match.deadline_local)
        d.click(d.to_window(game.widgets.by_name("language").rect.center))
        d.click(d.to_window(d.app.stack.popup.widgets.by_name("lang:ja").rect.center))
        assert d.app.ctx.tr.language == "ja" and (game.view(), scene.client.match.deadline_local) == before
        peer.send(type="resign")
        d.wait(1.0)
        assert game.panel.open
        peer.send(type="rematch")
        d.frame()
        d.click(d.to_window(game.widgets.by_name("language").rect.center))
        d.click(d.to_window(d.app.stack.popup.widgets.by_name("lang:en").rect.center))
        assert game.panel.open and scene.client.opponent.rematch_opponent and game.words.result_kind() == "win"
        assert game.words.instruction() == "You win!"  # the reason is the status line's second line (2a793d9)
        assert game.words.event_line() == ("Your opponent resigned", False)
    finally:
        d.close()


def test_token_store_writes_atomically_and_reports_when_it_cannot(tmp_path):
    """O16: the token file round-trips; an unwritable folder is reported (online play off), never a crash."""
    store = TokenStore(tmp_path / "data")
    saved = SavedSession("127.0.0.1", 47650, "NYTF23", "ab" * 32, True, 1.0)
    assert store.available() and store.save(saved) and store.load() == saved
    assert [p.name for p in (tmp_path / "data").iterdir()] == ["online-session.json"]
    store.clear()
    assert store.load() is None
    (tmp_path / "file").write_text("x")
    blocked = TokenStore(tmp_path / "file")
    assert not blocked.available() and not blocked.save(saved) and blocked.load() is None


@pytest.mark.parametrize(("text", "expected"), [
    ("192.168.1.5:47650", ("192.168.1.5", 47650)), ("localhost", ("localhost", 47650)),
    ("[::1]:5000", ("::1", 5000)), ("::1", ("::1", 47650)), ("host:99999", None), ("", None), ("h:x", None),
])
def test_connect_to_parses_host_and_port(text, expected):
    """Connect to... takes host:port (default port 47650, IPv6 in brackets); nonsense is refused with a message."""
    assert parse_address(text) == expected


def test_deadline_is_mapped_to_the_local_clock_at_receipt():
    """U6/O6: seconds left = deadline.at - server_time of the same message, counted on the local clock;
    pausing changes nothing (U7)."""
    now = [50.0]
    start = parse_server({"type": "match_start", "room": "ABCDEF", "match_id": "0123456789abcdef", "seat": 0, "first": "me",
                          "first_player_rule": "draw", "commitment": "ab" * 32, "client_seeds": ["a", "b"], "my_seed_index": 0,
                          "nonce": 0, "turn_seconds": 20.0, "opponent": {"name": ""}, "started": 1000.0})
    assert isinstance(start, MatchStart)
    match = OnlineMatch(start, clock=lambda: now[0], send=lambda msg, err: None)
    board = {k: ["........"] * 8 for k in ("numbers", "opened_by", "markers", "my_mines")}
    state = parse_server({"type": "state", "match_id": "0123456789abcdef", "seq": 0, "seat": 0, "phase": "open_explore",
                          "to_move": "me", "turn": 0, "quota_left": 0, "deadline": {"at": 99_999.0, "left": 20.0},
                          "server_time": 99_987.5, "board": board, "transcript": "cd" * 32, "events": [], "result": None})
    assert isinstance(state, State)
    match.apply_state(state)
    assert match.seconds_left() == pytest.approx(11.5)
    match.set_paused("popup", True)
    now[0] += 10
    assert match.seconds_left() == pytest.approx(1.5)
    now[0] += 10
    assert match.seconds_left() == 0.0


def test_five_pings_repaint_no_pixel_and_rebuild_no_hidden_page(tmp_path):
    """The frame loop pumps the session; a message that changes nothing visible (five server pings
    during a match) repaints zero pixels, and the lobby covered by the match screen rebuilds nothing."""
    from support.inprocess import InProcessServer

    from mineduel.shared.wire.messages import Ping

    srv = InProcessServer(ping_interval=0.5)
    services = OnlineServices(connect=srv.connector(), tokens=TokenStore(tmp_path / "t"))
    peer = srv.peer()
    code = peer.send(type="create_room", client_seed="p")[0]["room"]
    d = Driver(tmp_path, join=f"mineduel://127.0.0.1:47650/join/{code}", online_services=lambda: services)
    d.app.ctx.settings = replace(d.app.ctx.settings, player_name="Tester")  # named already (name_popup.py)
    try:
        lobby = d.app.stack.top
        assert isinstance(lobby, OnlineScene)
        d.frame()
        d.click(d.to_window(lobby.widgets.by_name("join").rect.center))
        d.frame()
        d.click(d.to_window(lobby.widgets.by_name("ready").rect.center))
        peer.send(type="ready")
        d.wait(1.0)
        game = d.app.stack.top
        assert isinstance(game, OnlineGameScene) and game.controller is not None
        client = d.app.online_session
        assert client is lobby.client
        pings = []
        heard = client.connection.link_message

        def keeping_pings(link, msg):
            if isinstance(msg, Ping):
                pings.append(msg)
            return heard(link, msg)

        client.connection.link_message = keeping_pings
        painted: list[int] = []
        render = d.app.render

        def counting_render() -> None:
            app = d.app
            painted.append(390 * 844 if app._full else sum(r.width * r.height for r in app._dirty))
            render()

        d.app.render = counting_render
        rebuilds = lobby.rebuilds
        for _ in range(5):
            srv.advance(0.5)  # one heartbeat per connection each ping_interval
            d.frame(0.0)  # the app's clock stands still: nothing shown may change
        assert len(pings) == 5
        assert sum(painted) == 0 and painted == []
        assert lobby.rebuilds == rebuilds
    finally:
        d.close()
