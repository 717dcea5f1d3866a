"""Leaving a finished quick match's room says ``leave`` (PROTOCOL.md §17 "After the match").

Two real apps on the real in-process server's quick-match queue play a rated match to its end;
each goes back from the result to the room, then Back: the client sends ``leave`` before it closes
the connection, keeps no token to offer Return with, and once both are out the server holds no
room for them (it no longer counts 24 h against the address). A room by code is left as before
(Back keeps the seat for Return).
"""

from __future__ import annotations

from support.inprocess import InProcessServer
from support.players_fake import App

from mineduel.client.scenes.game import GameScene
from mineduel.client.scenes.online import OnlineScene


class RealServer:
    def __init__(self) -> None:
        from mineduel.server.matchmaking import PairingPolicy

        self.srv = InProcessServer(pairing=PairingPolicy(allow_same_address=True))

    def connector(self):
        return self.srv.connector()

    def requests(self, kind):
        return []


def _play_a_quick_match(ann: App, bob: App, real: RealServer) -> str:
    for a in (ann, bob):
        a.search()
    for _ in range(8):
        real.srv.advance(0.25)
        ann.frames(1)
        bob.frames(1)
    ann.click("quick_ready")
    bob.click("quick_ready")
    for _ in range(4):
        ann.frames(1)
        bob.frames(1)
    assert isinstance(ann.top, GameScene) and isinstance(bob.top, GameScene)
    code = ann.client.room_code
    ann.client.match.resign()
    for _ in range(6):
        ann.d.frame(0.5)
        bob.d.frame(0.5)
    assert ann.client.match.end is not None and bob.client.match.end is not None
    return code


def _back_to_the_room(a: App) -> None:
    game = a.top
    assert isinstance(game, GameScene)
    game.session.to_lobby(game)  # the result's Menu: back to the room (Ready = rematch, Leave)
    a.frames(4)
    assert isinstance(a.top, OnlineScene) and a.top.page == "waiting", a.top.page


def test_back_from_a_finished_quick_room_says_leave_and_the_server_lets_the_room_go(tmp_path):
    real = RealServer()
    ann = App(tmp_path / "ann", real, name="Ann")
    bob = App(tmp_path / "bob", real, name="Bob")
    try:
        code = _play_a_quick_match(ann, bob, real)
        assert ann.client.players.queue.finished_here()
        _back_to_the_room(ann)
        sent: list[str] = []
        link_send = ann.client.connection.send
        ann.client.connection.send = lambda m: (sent.append(m.TYPE.value), link_send(m))[1]
        ann.click("back")
        assert "leave" in sent  # before the connection closed
        assert ann.client.services.tokens.load() is None  # no Return for a room that is gone
        assert len(real.srv.room(code).seats) == 1  # Bob still sits there (a rematch is his to ask)
        _back_to_the_room(bob)
        bob.click("back")
        real.srv.advance(0)
        assert code not in real.srv.core.rooms.rooms
    finally:
        ann.close()
        bob.close()


def test_back_from_a_room_by_code_keeps_the_seat_for_return(tmp_path):
    srv = InProcessServer()

    class Fake:
        def connector(self):
            return srv.connector()

        def requests(self, kind):
            return []

    a = App(tmp_path, Fake())
    try:
        a.click("create")
        a.frames(3)
        code = a.client.room_code
        assert not a.client.players.queue.finished_here()
        a.click("back")
        assert a.client.services.tokens.load() is not None and len(srv.room(code).seats) == 1
    finally:
        a.close()
