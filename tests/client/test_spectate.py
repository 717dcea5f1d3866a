"""Watching a match (issue 19, client): Watch on the online screen, the spectator screen, and what
it may and may not show.

The real app, headless on a fake clock (support/client_driver.py), watches rooms of the real server
core in process (support/inprocess.py) whose players are scripted peers; hostile servers are a
fake connector that hands the watcher whatever a test wants. Every check of the board is against
the ``spectate_state`` a second, raw spectator connection received (PROTOCOL.md §16): the screen
must show that and nothing more (no mine before the end, V2; the full O13 reveal after it).
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path
from typing import Any

import pygame
import pytest
from support.client_driver import Driver
from support.inprocess import InProcessServer, Peer

from mineduel.client import cli
from mineduel.client.online_client import FoundServer, LanRoom, OnlineServices
from mineduel.client.scenes.online import OnlineScene
from mineduel.client.scenes.spectate import SpectateScene
from mineduel.client.spectate_client import Watch, Watcher, public_view
from mineduel.client.spectate_events import changes
from mineduel.client.tokens import TokenStore
from mineduel.shared.rules.engine import ActionType
from mineduel.shared.wire import board as wire_board
from mineduel.shared.wire.codec import parse_server
from mineduel.shared.wire.messages import (
    Hello,
    LiveRoomsRequest,
    Ok,
    PingRequest,
    PongReply,
    RoomClosed,
    Spectate,
    SpectateState,
    Welcome,
)

LINK = "mineduel://192.168.1.5:47650/join/{code}"
ALLOWED_SENDS = (Hello, Spectate, PingRequest, PongReply, LiveRoomsRequest)  # and Leave, once, on leaving


class Room:
    """A room with two scripted players (Ann creates, Bob joins) and a raw spectator ``eye``."""

    def __init__(self, srv: InProcessServer, *, listed: bool = False, start: bool = True) -> None:
        self.srv = srv
        self.ann, self.bob = srv.peer(), srv.peer()
        self.code = self.ann.send(type="create_room", name="Ann", client_seed="a", listed=listed)[0]["room"]
        self.bob.send(type="join", room=self.code, name="Bob", client_seed="b")
        self.eye = srv.peer()
        self.eye.send(type="spectate", room=self.code, id=1)
        if start:
            self.start()

    def start(self) -> None:
        self.ann.send(type="ready")
        self.bob.send(type="ready")

    def seat(self, n: int) -> Peer:
        """The player at match seat ``n`` (the server draws who starts, O3)."""
        for p in (self.ann, self.bob):
            if p.last("match_start")["seat"] == n:
                return p
        raise AssertionError("no such seat")

    def public(self) -> dict[str, Any]:
        """The newest spectate_state the raw spectator got."""
        return self.eye.last("spectate_state")

    def opening(self) -> None:
        """F1's four steps: both explore, both plant."""
        self.seat(0).send(type="explore", cell=[3, 3])
        self.seat(1).send(type="explore", cell=[4, 4])
        self.seat(0).send(type="plant", cell=[0, 0])
        self.seat(1).send(type="plant", cell=[7, 7])


class Spectator:
    """An app with online services on the in-process server; ``sent`` is everything it sent."""

    def __init__(self, tmp_path: Path, srv: InProcessServer, *, watch: str | None = None,
                 found: list[FoundServer] | None = None, size: tuple[int, int] = (390, 844)) -> None:
        self.sent: list[object] = []
        inner = srv.connector()

        def connect(host: str, port: int, listener: Any, *, tls: bool = False, pin: str | None = None) -> Any:
            link = inner(host, port, listener, tls=tls, pin=pin)
            real = link.send

            def send(message: object) -> None:
                self.sent.append(message)
                real(message)  # type: ignore[arg-type]

            link.send = send  # type: ignore[method-assign]
            return link

        self.services = OnlineServices(connect=connect, tokens=TokenStore(tmp_path / "data"),
                                       discover=lambda done: done(list(found or [])))
        self.d = Driver(tmp_path, language="en", watch=watch, size=size, online_services=lambda: self.services)
        self.d.app.ctx.settings = replace(self.d.app.ctx.settings, player_name="Eve")

    @property
    def scene(self) -> SpectateScene:
        top = self.d.app.stack.top
        assert isinstance(top, SpectateScene), type(top).__name__
        return top

    @property
    def lobby(self) -> OnlineScene:
        return next(s for s in self.d.app.stack.scenes if isinstance(s, OnlineScene))

    def status_text(self) -> tuple[str, str | None]:
        scene = self.scene
        return scene.title(), scene.event_text()

    def close(self) -> None:
        self.d.close()


@pytest.fixture
def srv() -> InProcessServer:
    return InProcessServer()


def _expected_view(public: dict[str, Any]) -> tuple[int, int, int, int, tuple[int, ...]]:
    board = public["board"]
    mask = wire_board.mask_of
    return (mask(board["numbers"], "012345678"), mask(board["opened_by"], "m"), mask(board["markers"], "m"),
            mask(board["markers"], "o"), wire_board.numbers_of(board["numbers"]))


def _cell_name(cell: int) -> str:
    return f"row {cell // 8 + 1}, col {cell % 8 + 1}"


def _shown(scene: SpectateScene) -> tuple[int, int, int, int, tuple[int, ...]]:
    view = scene.paint.board.view
    assert view is not None
    return view.revealed, view.revealed_by_me, view.my_markers, view.opponent_markers, view.numbers


# ----- getting there ---------------------------------------------------------------------------------------


def test_watch_beside_join_in_the_one_field_opens_the_spectator_screen(tmp_path, srv):
    """Home page: the field takes `host:port CODE` (or a link, or a code) and Watch opens the
    spectator screen without asking a name and without taking a seat."""
    room = Room(srv)
    s = Spectator(tmp_path, srv)
    try:
        s.d.click_named("friend")
        lobby = s.lobby
        assert lobby.widgets.by_name("watch").enabled and lobby.widgets.by_name("connect").enabled
        lobby.address_field.set_text(f"192.168.1.5:47650 {room.code}")
        s.d.click_named("watch")
        s.d.frame()
        assert s.d.app.stack.popup is None  # no name popup: watching takes no seat
        assert s.scene.watcher.status == Watch.WATCHING
        assert s.scene.name(0) in ("Ann", "Bob") and {s.scene.name(0), s.scene.name(1)} == {"Ann", "Bob"}
        assert srv.room(room.code).seats[0].name == "Ann" and len(srv.room(room.code).seats) == 2
        assert not any(type(m).__name__ in ("Join", "CreateRoom") for m in s.sent)
    finally:
        s.close()


def test_watch_from_the_lan_list_and_from_a_full_rooms_link(tmp_path, srv):
    """The eye beside a LAN room's row watches it; a link to a full room offers Watch (Join is off)."""
    waiting = srv.peer().send(type="create_room", name="Jun", client_seed="j", listed=True)[0]["room"]
    found = [FoundServer("192.168.1.5", 47650, "MINE DUEL", 1, rooms=(LanRoom(waiting, "Jun"),))]
    s = Spectator(tmp_path, srv, found=found)
    try:
        s.d.click_named("friend")
        s.d.click_named(f"watch:{waiting}")
        s.d.frame()
        assert s.scene.watcher.room == waiting and s.scene.title() == "Waiting for the match to start"
        s.d.key(pygame.K_ESCAPE)
        assert isinstance(s.d.app.stack.top, OnlineScene)
        room = Room(srv)
        s.lobby.open_link(LINK.format(code=room.code))
        s.d.frame()
        s.d.frame()
        assert s.lobby.page == "room"
        assert not s.lobby.widgets.by_name("join").enabled and s.lobby.widgets.by_name("watch_room").enabled
        s.d.click_named("watch_room")
        s.d.frame()
        assert s.scene.watcher.room == room.code and s.scene.watcher.state is not None
        assert s.scene.watcher.state.status == "playing"
    finally:
        s.close()


def test_the_server_page_lists_live_matches_and_one_tap_watches(tmp_path, srv):
    """live_rooms (C1): listed rooms with a match running appear on the server page; unlisted ones never."""
    live = Room(srv, listed=True)
    hidden = Room(srv, listed=False)
    s = Spectator(tmp_path, srv)
    try:
        s.d.click_named("friend")
        s.lobby.connect_to("192.168.1.5", 47650)
        for _ in range(4):
            s.d.frame()
        assert s.lobby.page == "server"
        rows = [b.name for b in s.lobby.widgets.buttons if b.name.startswith("live:")]
        assert rows == [f"live:{live.code}"] and f"live:{hidden.code}" not in rows
        label = s.lobby.widgets.by_name(f"live:{live.code}").label()
        assert "Ann" in label and "Bob" in label
        s.d.click_named(f"live:{live.code}")
        s.d.frame()
        assert s.scene.watcher.room == live.code
        s.d.click_named("leave")
        assert s.lobby.page == "server"  # Leave comes back to the same page
    finally:
        s.close()


def test_a_server_that_cannot_list_says_so_and_watch_by_code_still_works(tmp_path, srv):
    """An older server answers live_rooms with unknown_type: the page says to type a code; Watch does."""
    room = Room(srv, listed=True)
    s = Spectator(tmp_path, srv)
    try:
        s.d.click_named("friend")
        s.lobby.connect_to("192.168.1.5", 47650)
        for _ in range(4):
            s.d.frame()
        watching = s.lobby.watching
        watching._refused("unknown_type")  # what the session routes to it for that reply
        assert watching.live_state() == "failed" and watching.error == "watch.live_unsupported"
        assert not any(b.name.startswith("live:") for b in s.lobby.widgets.buttons)
        s.d.app.render()
        s.lobby.code_field.set_text(room.code)
        s.d.click_named("watch_code")
        s.d.frame()
        assert s.scene.watcher.room == room.code and s.scene.watcher.state is not None
        assert sum(type(m).__name__ == "LiveRoomsRequest" for m in s.sent) == 1  # on the lobby's connection, once
    finally:
        s.close()


def test_mine_duel_watch_link_opens_the_spectator_screen(tmp_path, srv):
    """`mine-duel --watch LINK`: the spectator screen first; Leave shows the online screen."""
    room = Room(srv)
    assert cli.as_game_arguments(["--watch", LINK.format(code=room.code)]) == ["--watch", LINK.format(code=room.code)]
    s = Spectator(tmp_path, srv, watch=LINK.format(code=room.code))
    try:
        s.d.frame()
        assert s.scene.watcher.status == Watch.WATCHING
        s.d.click_named("leave")
        assert isinstance(s.d.app.stack.top, OnlineScene) and s.lobby.page == "home"
    finally:
        s.close()


def test_the_players_see_how_many_watch(tmp_path, srv):
    """§16 for the players: the waiting room's card and the match screen's header count the
    spectators, and the count goes down when one leaves."""
    from mineduel.client.scenes.game import GameScene

    ann = srv.peer()
    code = ann.send(type="create_room", name="Ann", client_seed="a")[0]["room"]
    s = Spectator(tmp_path, srv)
    try:
        s.d.click_named("friend")
        s.lobby.seats.join_at(None, "192.168.1.5", 47650, code)
        for _ in range(3):
            s.d.frame()
        assert s.lobby.page == "waiting"
        eye = srv.peer()
        eye.send(type="spectate", room=code)
        s.d.frame()
        assert s.lobby.client.room.spectators == 1
        s.d.app.render()
        s.d.click_named("ready")
        ann.send(type="ready")
        for _ in range(3):
            s.d.frame()
        game = s.d.app.stack.top
        assert isinstance(game, GameScene)
        pills = [text.strip() for text, *_ in game.paint.header_layout()[2]]
        assert pills[0] == "1" and game.paint.spectators() == 1  # an eye and the number, rightmost
        eye.send(type="leave")
        s.d.frame()
        assert game.paint.spectators() == 0 and len(game.paint.header_layout()[2]) == len(pills) - 1
        s.d.app.render()
    finally:
        s.close()


# ----- what it shows ---------------------------------------------------------------------------------------------


def test_the_screen_shows_exactly_the_public_view_and_no_mine_before_the_end(tmp_path, srv):
    """V2/§16: after each action the board equals the raw spectator's spectate_state; the view's mine
    layer stays empty while the server's truth has both seats' mines."""
    room = Room(srv)
    s = Spectator(tmp_path, srv, watch=LINK.format(code=room.code))
    try:
        s.d.frame()
        steps = [(0, "explore", [3, 3]), (1, "explore", [4, 4]), (0, "plant", [0, 0]), (1, "plant", [7, 7])]
        for seat, kind, cell in steps:
            room.seat(seat).send(type=kind, cell=cell)
            s.d.frame()
            assert _shown(s.scene) == _expected_view(room.public())
            assert s.scene.paint.board.view.my_mines == 0 and s.scene.watcher.reveal is None
        truth = srv.truth(room.code)
        assert truth.mines[0] and truth.mines[1]  # there are mines to leak, and none is shown
        assert s.scene.watcher.state == SpectateState.parse(room.public())
        assert s.scene.watcher.state.spectators == 2
        s.d.app.render()
    finally:
        s.close()


def test_no_input_reaches_the_match(tmp_path, srv):
    """The spectator screen has no input to the match: taps on every cell and every match key send
    nothing but the connection's own messages, and the match does not move."""
    room = Room(srv)
    s = Spectator(tmp_path, srv, watch=LINK.format(code=room.code))
    try:
        s.d.frame()
        before = room.public()["seq"]
        board = s.scene.paint.board
        for cell in range(64):
            s.d.click(s.d.to_window(board.cell_center(cell)))
        for key in (pygame.K_1, pygame.K_2, pygame.K_3, pygame.K_4, pygame.K_e, pygame.K_f, pygame.K_u,
                    pygame.K_RETURN, pygame.K_SPACE, pygame.K_LEFT, pygame.K_r):
            s.d.key(key)
        s.d.wait(12.0, step=0.5)
        assert isinstance(s.d.app.stack.top, SpectateScene)
        assert all(isinstance(m, ALLOWED_SENDS) for m in s.sent), [type(m).__name__ for m in s.sent]
        assert room.public()["seq"] == before
    finally:
        s.close()


def test_the_event_line_names_each_action_in_the_players_language(tmp_path, srv):
    """Explored, planted somewhere hidden, flagged, ended, timed out (O5), resigned: each in words."""
    room = Room(srv)
    s = Spectator(tmp_path, srv, watch=LINK.format(code=room.code))
    try:
        s.d.frame()
        first, second = s.scene.name(0), s.scene.name(1)
        assert s.status_text() == (f"Opening: {first} opens a cell", "You're watching live")
        room.seat(0).send(type="explore", cell=[3, 3])
        s.d.frame()
        assert s.status_text() == (f"Opening: {second} opens a cell", f"{first} opened row 4, col 4")
        room.seat(1).send(type="explore", cell=[4, 4])
        room.seat(0).send(type="plant", cell=[0, 0])
        s.d.frame()
        assert s.status_text()[1] == f"{first} planted a mine somewhere hidden"
        room.seat(1).send(type="plant", cell=[7, 7])
        s.d.frame()
        assert s.status_text()[1] == f"{second} planted a mine somewhere hidden"
        mover = s.scene.watcher.state.to_move
        name = s.scene.name(mover)
        peer = room.seat(mover)
        view = wire_board.view_of(parse_server(peer.last("state")))
        danger = srv.truth(room.code).mines[1 - mover]
        cell = next(c for c in range(64) if view.explorable >> c & 1 and not danger >> c & 1)  # no KO here
        peer.send(type="explore", cell=list(divmod(cell, 8)))
        s.d.frame()
        assert s.status_text()[0] == f"{name} is planting a mine"
        assert s.status_text()[1] in (f"{name} opened {_cell_name(cell)}",) or "cells open" in s.status_text()[1]
        plant = next(c for c in range(64) if not (view.revealed | view.my_mines) >> c & 1 and c != cell)
        peer.send(type="plant", cell=list(divmod(plant, 8)))
        s.d.frame()
        assert s.status_text() == (f"{name} can flag, then end the turn", f"{name} planted a mine somewhere hidden")
        now = wire_board.view_of(parse_server(peer.last("state")))
        flag = next(c for c in range(64) if now.targets(ActionType.FLAG) >> c & 1)
        peer.send(type="flag", cell=list(divmod(flag, 8)))
        s.d.frame()
        assert s.status_text()[1] == f"{name} flagged {_cell_name(flag)}"
        peer.send(type="end_turn")
        s.d.frame()
        assert s.status_text()[1] == f"{name} ended the turn"
        other = s.scene.watcher.state.to_move
        srv.advance(21.0)  # O5: the whole turn's 20 s run out
        srv.end_turn()
        s.d.frame()
        assert s.status_text()[1] == f"{s.scene.name(other)} ran out of time"
        room.seat(other).send(type="resign")
        s.d.frame()
        assert s.status_text() == (f"{s.scene.name(1 - other)} wins!", f"{s.scene.name(other)} resigned")
    finally:
        s.close()


def test_a_player_away_is_shown_with_the_grace_counting_down(tmp_path, srv):
    """O12: a player whose connection dropped is marked away on their card and in the banner, with
    the seconds left to come back, counting down on the local clock; back again clears it."""
    room = Room(srv)
    s = Spectator(tmp_path, srv, watch=LINK.format(code=room.code))
    try:
        s.d.frame()
        away = room.seat(1)
        name = s.scene.name(1)
        away.drop()
        s.d.frame()
        assert s.scene.banner() == f"{name} is away: 120s to come back"
        assert s.scene.event_text() == f"{name} lost the connection"
        s.d.wait(10.0, step=0.5)
        assert s.scene.banner() == f"{name} is away: 110s to come back"
        s.d.app.render()
    finally:
        s.close()


def test_the_end_shows_the_full_reveal_and_the_result(tmp_path, srv):
    """O13 after the end: seat 0's mines in the view's own layer, seat 1's in the reveal, exactly
    the reveal the raw spectator was sent; the title names the winner."""
    room = Room(srv)
    s = Spectator(tmp_path, srv, watch=LINK.format(code=room.code))
    try:
        room.opening()
        room.seat(0).send(type="resign")
        s.d.frame()
        public = room.public()
        assert public["status"] == "finished" and public["reveal"] is not None
        scene = s.scene
        reveal = scene.watcher.reveal
        assert reveal is not None
        assert scene.paint.board.view.my_mines == wire_board.mask_of(public["reveal"]["mines"], "mx")
        assert reveal.opponent_mines == wire_board.mask_of(public["reveal"]["mines"], "ox")
        assert reveal.my_mines == srv.truth(room.code).mines[0] and reveal.opponent_mines == srv.truth(room.code).mines[1]
        assert scene.title() == f"{scene.name(1)} wins!" and scene.result_detail() == f"{scene.name(0)} resigned"
        assert scene.watcher.deadline_left() is None
        s.d.app.render()
    finally:
        s.close()


def test_after_the_end_replay_opens_the_match_record_and_back_returns(tmp_path, srv):
    """Replay (beside Leave after the end) asks get_record on the spectator's connection and opens
    the replay viewer on it (issue 19 item 3); Back comes back to the spectator screen, still watching."""
    from mineduel.client.scenes.replay_viewer import ReplayViewer

    room = Room(srv)
    s = Spectator(tmp_path, srv, watch=LINK.format(code=room.code))
    try:
        s.d.frame()
        assert "replay" not in [b.name for b in s.scene.widgets.buttons]  # not before the end
        room.opening()
        room.seat(0).send(type="resign")
        s.d.frame()
        scene = s.scene
        s.d.click_named("replay")
        s.d.frame()
        viewer = s.d.app.stack.top
        assert isinstance(viewer, ReplayViewer) and viewer.replay is not None and viewer.problem is None
        assert viewer.replay.steps[-1].outcome is not None and set(viewer.replay.names) == {"Ann", "Bob"}
        assert any(type(m).__name__ == "GetRecord" for m in s.sent)
        s.d.key(pygame.K_ESCAPE)
        assert s.d.app.stack.top is scene and scene.watcher.status == Watch.WATCHING
    finally:
        s.close()


def test_a_record_that_cannot_be_fetched_is_said_on_the_event_line(fake):
    """get_record refused (not_found: the server kept no record): the answer says why; watching goes on."""
    server, watcher = fake
    answers: list[tuple[object, object]] = []
    assert watcher.questions.record("b048f279829caa65", lambda record, code: answers.append((record, code)))
    ask = server.links[-1].sent[-1]
    from mineduel.shared.wire.messages import Error

    server.say(Error("not_found", "no", "get_record", ask.id))
    watcher.update()
    assert answers == [(None, "not_found")] and watcher.status == Watch.WATCHING  # nothing else changed


def test_a_rematch_continues_on_the_same_screen(tmp_path, srv):
    """O14: the next match replaces the board on the same spectator screen, with its number."""
    room = Room(srv)
    s = Spectator(tmp_path, srv, watch=LINK.format(code=room.code))
    try:
        room.opening()
        room.seat(1).send(type="resign")
        s.d.frame()
        scene = s.scene
        first_id = scene.watcher.state.match_id
        room.ann.send(type="rematch", client_seed="a2")
        room.bob.send(type="rematch", client_seed="b2")
        s.d.frame()
        assert s.scene is scene and scene.watcher.state.match_id != first_id and scene.watcher.state.number == 2
        assert scene.paint.board.view.revealed == 0 and scene.watcher.reveal is None
        assert scene.event_text() == f"Match 2 begins: {scene.name(0)} goes first"
        assert scene.title() == f"Opening: {scene.name(0)} opens a cell"
    finally:
        s.close()


def test_room_closed_says_so_and_leave_goes_back(tmp_path, srv):
    """The last player leaving deletes the room: room_closed, a clear message, no retry; Leave
    (the button or Esc) returns to the online screen."""
    room = Room(srv)
    s = Spectator(tmp_path, srv, watch=LINK.format(code=room.code))
    try:
        room.opening()
        room.seat(0).send(type="resign")
        room.ann.send(type="leave")
        room.bob.send(type="leave")
        s.d.frame()
        scene = s.scene
        assert scene.watcher.status == Watch.CLOSED and scene.problem() == ("watch.room_closed", False)
        assert [b.name for b in scene.widgets.buttons] == ["language", "leave"]  # no Try again
        s.d.app.render()
        s.d.key(pygame.K_ESCAPE)
        assert isinstance(s.d.app.stack.top, OnlineScene)
    finally:
        s.close()


def test_the_language_changes_and_the_watching_does_not(tmp_path, srv):
    """U5: the globe opens the language picker; the event line and title are said again in the new
    language, the view and the connection stay."""
    room = Room(srv)
    s = Spectator(tmp_path, srv, watch=LINK.format(code=room.code))
    try:
        s.d.frame()
        room.seat(0).send(type="explore", cell=[3, 3])
        s.d.frame()
        scene, link = s.scene, s.scene.watcher.connection.link
        s.d.click_named("language")
        s.d.click_named("lang:ko")
        assert s.d.app.stack.top is scene and scene.watcher.connection.link is link
        assert scene.event_text() == f"{scene.name(0)}: 4행 4열을 열었습니다"  # the particle follows the word (i18n)
        assert scene.title().startswith(f"오프닝: {scene.name(1)}") and scene.title().endswith("칸을 엽니다")
    finally:
        s.close()


def test_a_small_window_and_the_keyboard_alone_can_leave(tmp_path, srv):
    """320x568 (width-fit, scrolling): Tab reaches Leave (scrolled into view) and Enter leaves."""
    room = Room(srv)
    s = Spectator(tmp_path, srv, watch=LINK.format(code=room.code), size=(320, 568))
    try:
        s.d.frame()
        s.d.key(pygame.K_TAB)
        s.d.key(pygame.K_TAB)
        assert s.scene.widgets.focused() is not None and s.scene.widgets.focused().name == "leave"
        s.d.key(pygame.K_RETURN)
        assert isinstance(s.d.app.stack.top, OnlineScene)
    finally:
        s.close()


def test_leave_stops_watching_on_the_server(tmp_path, srv):
    """Leave sends leave: the players' spectator count goes back to zero."""
    room = Room(srv)
    s = Spectator(tmp_path, srv, watch=LINK.format(code=room.code))
    try:
        s.d.frame()
        assert room.public()["spectators"] == 2
        s.d.click_named("leave")
        assert room.public()["spectators"] == 1
        assert type(s.sent[-1]).__name__ == "Leave"
    finally:
        s.close()


def test_a_dropped_connection_reconnects_and_spectates_again(tmp_path, srv):
    """§16: the view is held (not live) while the link is down; the watcher connects again, sends
    spectate on the new connection and catches up, naming what happened meanwhile."""
    room = Room(srv)
    s = Spectator(tmp_path, srv, watch=LINK.format(code=room.code))
    try:
        s.d.frame()
        watcher = s.scene.watcher
        link = watcher.connection.link
        srv.cut(link)
        s.d.frame()
        assert watcher.status == Watch.RECONNECTING and watcher.state is not None and not watcher.live
        room.seat(0).send(type="explore", cell=[3, 3])
        s.d.wait(1.0)
        assert watcher.status == Watch.WATCHING and watcher.connection.link is not link
        assert sum(isinstance(m, Spectate) for m in s.sent) == 2
        assert _shown(s.scene) == _expected_view(room.public())
        assert s.scene.event_text() == f"{s.scene.name(0)} opened row 4, col 4"
    finally:
        s.close()


# ----- a hostile server ----------------------------------------------------------------------------------------


class FakeLink:
    def __init__(self, listener: Any) -> None:
        self.listener = listener
        self.sent: list[object] = []
        self.closed = False

    def send(self, message: object) -> None:
        self.sent.append(message)

    def close(self) -> None:
        self.closed = True


class FakeServer:
    """A connector whose links the test speaks for."""

    def __init__(self) -> None:
        self.links: list[FakeLink] = []

    def __call__(self, host: str, port: int, listener: Any, *, tls: bool = False, pin: str | None = None) -> FakeLink:
        link = FakeLink(listener)
        self.links.append(link)
        listener.link_open(link)
        return link

    def say(self, message: object) -> None:
        link = self.links[-1]
        link.listener.link_message(link, message)


EMPTY = ["........"] * 8
OPEN_ONE = ["........"] * 3 + [".....0.."] + ["........"] * 4
WELCOME = Welcome(1, "fake", "0", 1000.0, 8192, 20.0, 40.0, 5.0, 15.0, 20.0, 120.0)


def _state(**over: Any) -> SpectateState:
    base: dict[str, Any] = {
        "type": "spectate_state", "room": "NYTF23", "status": "playing", "spectators": 1,
        "players": [{"name": "Ann", "connected": True, "grace": None}, {"name": "Bob", "connected": True, "grace": None}],
        "match_id": "b048f279829caa65", "number": 1, "seq": 3, "phase": "open_plant", "to_move": 1, "turn": 0,
        "deadline": {"at": 1000.0 + 20, "left": 20.0}, "server_time": 1000.0,
        "board": {"numbers": ["........"] * 3 + [".....0.."] + ["........"] + [".....0.."] + ["........"] * 2,
                  "opened_by": ["........"] * 3 + [".....m.."] + ["........"] + [".....o.."] + ["........"] * 2,
                  "markers": ["........"] * 8},
        "result": None, "reveal": None,
    }
    base.update(over)
    return SpectateState.parse(base)


@pytest.fixture
def fake() -> tuple[FakeServer, Watcher]:
    server = FakeServer()
    clock = [1000.0]
    watcher = Watcher(lambda: server, lambda: clock[0], "test")
    watcher.watch("h", 1, "NYTF23")
    watcher.update()
    server.say(WELCOME)
    watcher.update()
    spectate = server.links[-1].sent[-1]
    assert isinstance(spectate, Spectate)
    server.say(_state())
    server.say(Ok("spectate", spectate.id))
    watcher.update()
    assert watcher.status == Watch.WATCHING
    return server, watcher


def test_hostile_views_that_name_no_seat_never_fail_a_frame(tmp_path):
    """A finished match with nobody to move and a KO draw (the codec lets both through): every title,
    event and detail still has words (no missing placeholder), the screen draws."""
    from mineduel.client.scenes.spectate import SpectateScene
    from mineduel.client.spectate_events import changes

    server = FakeServer()
    d = Driver(tmp_path, language="en")
    try:
        watcher = Watcher(lambda: server, d.app.ctx.clock, "test")
        watcher.watch("h", 1, "NYTF23")
        watcher.update()
        server.say(WELCOME)
        watcher.update()
        server.say(_state())
        watcher.update()
        d.app.stack.close_popup()
        scene = SpectateScene(d.app.ctx, watcher)
        d.app.stack.push(scene)
        odd = _state(match_id="c048f279829caa65", status="finished", to_move=None, phase="over", number=2,
                     result={"outcome": "draw", "winner": None, "reason": "ko", "scores": None},
                     reveal={"mines": EMPTY, "markers": EMPTY, "marker_correct": EMPTY, "ko_cell": None})
        events = changes(watcher.state, odd)
        assert [e.key for e in events] == ["match_start"] and events[0].seat is None
        server.say(odd)
        d.frame()
        assert scene.watcher.state is odd and scene.title() == "Draw"
        assert isinstance(scene.event_text(), (str, type(None))) and scene.result_detail()
        for event in [*events, *changes(_state(), _state(seq=4, status="finished", phase="over", to_move=None,
                                                         result={"outcome": "draw", "winner": None, "reason": "ko",
                                                                 "scores": None}))]:
            scene.event_words(event)  # never raises
        d.app.render()
    finally:
        d.close()


def test_another_rooms_view_is_ignored(fake):
    """A view of a room this watcher does not watch (the one left just before, kiosk rotation) changes nothing."""
    server, watcher = fake
    good = watcher.state
    server.say(_state(room="ZZZZ22", seq=9))
    watcher.update()
    assert watcher.state is good and watcher.status == Watch.WATCHING


@pytest.mark.parametrize("bad", [
    {"board": {"numbers": OPEN_ONE, "opened_by": EMPTY, "markers": EMPTY}},  # an open cell nobody opened (B3)
    {"board": {"numbers": OPEN_ONE, "opened_by": ["........"] * 3 + [".....m.."] + ["........"] * 4,
               "markers": ["........"] * 3 + [".....o.."] + ["........"] * 4}},  # a marker on an open cell
    {"seq": 1},  # seq going back within the match
    {"board": None},  # a running match without a board
    {"seq": 4, "board": {"numbers": EMPTY, "opened_by": EMPTY, "markers": EMPTY}},  # cells closing
])
def test_a_view_that_cannot_be_right_is_refused_and_changes_nothing(fake, bad):
    """check_view: the last good view stays, watching stops with a clear message (Try again offered)."""
    server, watcher = fake
    good = watcher.state
    server.say(_state(**bad))
    watcher.update()
    assert watcher.state is good and watcher.status == Watch.FAILED and watcher.error == "watch.error.bad_view"
    assert watcher.refused_views == 1 and server.links[-1].closed


def test_a_malformed_line_is_a_clear_error_and_changes_nothing(fake):
    """A line the codec refuses (here a mine layer in a spectator's board) reaches the watcher as
    garbage: the view stays as it was and the screen says the server broke the protocol."""
    server, watcher = fake
    good = watcher.state
    link = server.links[-1]
    link.listener.link_garbage(link, "a spectator's board never has a mine layer")
    watcher.update()
    assert watcher.state is good and watcher.status == Watch.FAILED and watcher.error == "online.error.bad_server"


@pytest.mark.parametrize("board", [
    {"numbers": EMPTY, "opened_by": EMPTY, "markers": EMPTY, "my_mines": ["x......."] + ["........"] * 7},
    {"numbers": EMPTY, "opened_by": EMPTY, "markers": EMPTY, "mines": ["m......."] + ["........"] * 7},
])
def test_the_codec_never_lets_a_mine_layer_reach_a_spectator(board):
    """§16: "A reader refuses a spectate_state with a mine layer in board"."""
    from mineduel.shared.wire.messages import BadMessage

    with pytest.raises(BadMessage):
        _state(board=board)


def test_room_closed_and_refusals_from_a_fake_server(fake):
    """room_closed stops watching with its message; a refused spectate names why (spectating off)."""
    server, watcher = fake
    server.say(RoomClosed("NYTF23", "expired"))
    watcher.update()
    assert watcher.status == Watch.CLOSED and watcher.error == "watch.room_closed"
    watcher.retry()
    watcher.update()
    server.say(WELCOME)
    watcher.update()
    spectate = server.links[-1].sent[-1]
    from mineduel.shared.wire.messages import Error

    server.say(Error("spectating_off", "no", "spectate", spectate.id))
    watcher.update()
    assert watcher.status == Watch.FAILED and watcher.error == "watch.error.spectating_off" and watcher.state is None


def test_the_spectator_screen_renders_a_hostile_name_as_a_label(tmp_path):
    """Control characters and a 64-character name from the server are trimmed to a printable label."""
    from mineduel.client.scenes.spectate import display_name

    assert display_name("A\x1b[2Jnn\n") == "A[2Jnn"
    assert display_name("W" * 64).endswith("...") and len(display_name("W" * 64)) == 27


# ----- the events, from views alone ------------------------------------------------------------------------------


def test_events_between_views_of_a_real_match(srv):
    """spectate_events.changes over the raw spectator's views of a scripted match names the opening
    in order; a plant is named without a cell (V2)."""
    room = Room(srv)
    room.opening()
    views = [SpectateState.parse(m) for m in room.eye.messages if m["type"] == "spectate_state"]
    events = [e for a, b in itertools.pairwise(views) for e in changes(a, b)]
    assert [(e.key, e.seat) for e in events] == [
        ("match_start", 0), ("explored", 0), ("explored", 1), ("planted", 0), ("planted", 1)]
    assert all(e.cell is None for e in events if e.key == "planted")
    assert public_view(views[-1]).my_mines == 0
