"""The player who hosts is the referee (issue 14, Build 5): a server started by a game's *Host on
this computer* says ``referee: "player"`` in its ``welcome``, and the joining player's waiting room
says, in one sentence, that the host's computer referees; a dedicated server says nothing of it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from support.inprocess import InProcessServer

from mineduel.client.online_client import OnlineServices
from mineduel.client.scenes.lobby_paint import refereed_by_host
from mineduel.client.tokens import TokenStore


def _lobby_joining(tmp_path: Path, srv: InProcessServer):
    from support.client_driver import Driver

    from mineduel.client.scenes.online import OnlineScene

    peer = srv.peer()
    code = peer.send(type="create_room", client_seed="p")[0]["room"]
    services = OnlineServices(connect=srv.connector(), tokens=TokenStore(tmp_path / "t"))
    d = Driver(tmp_path, language="en", join=f"mineduel://127.0.0.1:47650/join/{code}", online_services=lambda: services)
    d.app.ctx.settings = replace(d.app.ctx.settings, player_name="Tester")  # named already (name_popup.py)
    lobby = d.app.stack.top
    assert isinstance(lobby, OnlineScene)
    d.frame()
    d.click(d.to_window(lobby.widgets.by_name("join").rect.center))
    d.frame()
    assert lobby.page == "waiting"
    return d, lobby


def _drawn_text(d, lobby) -> bool:
    """Whether the waiting room drew the referee sentence (the painter's card below the commitment)."""
    d.app.render()
    return lobby.ys["notice_y"] > lobby.ys["commit_y"] + 84 + 10


def test_a_player_hosted_server_says_who_referees_in_the_waiting_room(tmp_path):
    """The joining player is told, in one sentence, that the host's computer referees."""
    srv = InProcessServer(referee="player")
    d, lobby = _lobby_joining(tmp_path, srv)
    try:
        client = lobby.client
        assert client.welcome is not None and client.welcome.referee == "player"
        assert refereed_by_host(lobby) and _drawn_text(d, lobby)
        assert d.app.ctx.t("online.referee_host") == (
            "This match is refereed by the host's computer; for a neutral referee, use a dedicated server.")
        lobby.hosting = "192.168.1.5:47650"  # the host itself is not told (it is the referee)
        assert not refereed_by_host(lobby)
    finally:
        d.close()


def test_a_dedicated_server_says_nothing_about_a_referee(tmp_path):
    srv = InProcessServer()
    d, lobby = _lobby_joining(tmp_path, srv)
    try:
        assert lobby.client.welcome.referee is None and not refereed_by_host(lobby) and not _drawn_text(d, lobby)
    finally:
        d.close()


def test_welcome_carries_the_referee_only_when_set():
    """Wire: ``welcome.server.referee`` is optional; a dedicated server's welcome has no such key
    (tests/server/test_wire_golden.py holds its bytes), and a reader takes anything odd as none."""
    from mineduel.shared.wire.codec import parse_server
    from mineduel.shared.wire.messages import Welcome

    plain = Welcome(1, "s", "1", 0.0, 8192, 20.0, 40.0, 5.0, 15.0, 20.0, 120.0)
    assert "referee" not in plain.wire()["server"]
    hosted = Welcome(1, "s", "1", 0.0, 8192, 20.0, 40.0, 5.0, 15.0, 20.0, 120.0, referee="player")
    assert hosted.wire()["server"] == {"name": "s", "version": "1", "referee": "player"}
    assert parse_server(hosted.wire()) == hosted and parse_server(plain.wire()) == plain
    for odd in (5, None, "", "x" * 33, ["player"]):
        obj = hosted.wire()
        obj["server"]["referee"] = odd
        assert parse_server(obj).referee is None
