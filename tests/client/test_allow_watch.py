"""*Let others watch* (issue 19 Build 1: "a host can turn spectating off for a room"; PROTOCOL.md §16).

The real app, headless on a fake clock (support/client_driver.py), against the real server core in
process (support/inprocess.py): the toggle under *Host a game* and above *Create room* makes the
room's ``create_room`` say ``spectators:false``; a third connection's ``spectate`` is then refused
``spectating_off`` and the app's own Watch says so; the waiting room says which way the room went
(from the server's ``room.watchable``); the choice is kept in settings.json between runs.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path

import pytest
from support.client_driver import Driver
from support.inprocess import InProcessServer

from mineduel.client import kiosk as kiosk_mode
from mineduel.client.online_client import HostInfo, OnlineServices
from mineduel.client.scenes.allow_watch import watch_state
from mineduel.client.scenes.online import OnlineScene
from mineduel.client.scenes.spectate import SpectateScene
from mineduel.client.settings import Settings, SettingsStore
from mineduel.client.spectate_client import Watch
from mineduel.client.tokens import TokenStore
from mineduel.shared.wire.messages import CreateRoom, Room


class Player:
    """One app with online services on the in-process server; ``sent`` is everything it sent."""

    def __init__(self, tmp_path: Path, srv: InProcessServer, *, size: tuple[int, int] = (390, 844), name: str = "Mina") -> None:
        self.sent: list[object] = []
        inner = srv.connector()

        def connect(host: str, port: int, listener: object, *, tls: bool = False, pin: str | None = None) -> object:
            link = inner(host, port, listener, tls=tls, pin=pin)
            real = link.send

            def send(message: object) -> None:
                self.sent.append(message)
                real(message)  # type: ignore[arg-type]

            link.send = send  # type: ignore[method-assign]
            return link

        self.services = OnlineServices(connect=connect, tokens=TokenStore(tmp_path / "data"), discover=lambda done: done([]),
                                       start_host=lambda: HostInfo(47650, "192.168.1.5", lambda: None))
        self.d = Driver(tmp_path, language="en", size=size, online_services=lambda: self.services)
        self.d.app.ctx.settings = replace(self.d.app.ctx.settings, player_name=name)

    @property
    def lobby(self) -> OnlineScene:
        return next(s for s in self.d.app.stack.scenes if isinstance(s, OnlineScene))

    def creates(self) -> list[CreateRoom]:
        return [m for m in self.sent if isinstance(m, CreateRoom)]

    def click(self, name: str) -> None:
        self.d.click_named(name)
        self.d.frame()

    def close(self) -> None:
        self.d.close()


@pytest.fixture
def srv() -> InProcessServer:
    return InProcessServer()


def _spectate(srv: InProcessServer, code: str) -> dict:
    """A third connection asks to watch ``code``: the server's last answer to it."""
    eye = srv.peer()
    return eye.send(type="spectate", room=code)[-1]


def test_host_a_game_with_watching_off_refuses_a_spectator_and_says_so(tmp_path, srv):
    """Home page: one click on Let others watch (on by default), then Host a game: the room is
    created with spectators:false; another connection's spectate is refused spectating_off; the
    waiting room says Watching off."""
    p = Player(tmp_path, srv)
    try:
        p.click("friend")
        toggle = p.lobby.widgets.by_name("allow_watch")
        assert p.d.app.ctx.settings.allow_watch and toggle.style == "selected" and toggle.icon == "check"
        p.click("allow_watch")
        toggle = p.lobby.widgets.by_name("allow_watch")
        assert not p.d.app.ctx.settings.allow_watch and toggle.style != "selected" and toggle.icon != "check"
        p.click("host")
        assert p.lobby.page == "waiting"
        [create] = p.creates()
        assert create.listed and not create.spectators and create.wire()["spectators"] is False
        code = p.lobby.client.room_code
        assert srv.room(code).watchable is False
        reply = _spectate(srv, code)
        assert reply["type"] == "error" and reply["code"] == "spectating_off"
        assert p.lobby.client.room.watchable is False
        assert watch_state(p.lobby) == ("Watching off", False)
    finally:
        p.close()


def test_watching_on_by_default_lets_a_spectator_in_and_the_count_shows(tmp_path, srv):
    """Untouched (on): create_room says nothing about spectators (the old bytes), a spectator gets
    in, and the waiting room goes from Watching allowed to 1 watching."""
    p = Player(tmp_path, srv)
    try:
        p.click("friend")
        p.click("host")
        [create] = p.creates()
        assert create.spectators and "spectators" not in create.wire()
        code = p.lobby.client.room_code
        assert watch_state(p.lobby) == ("Watching allowed", False)
        eye = srv.peer()
        assert [m["type"] for m in eye.send(type="spectate", room=code)] == ["spectate_state", "ok"]
        p.d.frame()
        assert watch_state(p.lobby) == ("1 watching", True)
    finally:
        p.close()


def test_create_room_on_a_server_page_follows_the_toggle_and_the_joiner_is_told(tmp_path, srv):
    """Server page: the toggle sits above Create room; off, the room refuses spectators; the player
    who joins it by code sees Watching off too (the server's room.watchable, not the host's wish)."""
    p = Player(tmp_path, srv)
    joiner = Player(tmp_path / "j", srv, name="Jun")
    try:
        p.click("friend")
        p.lobby.connect_to("192.168.1.5", 47650)
        p.d.frame()
        assert p.lobby.page == "server"
        widgets = p.lobby.widgets
        assert widgets.by_name("allow_watch").rect.bottom <= widgets.by_name("create").rect.top
        p.click("allow_watch")
        p.click("create")
        [create] = p.creates()
        assert not create.listed and not create.spectators
        code = p.lobby.client.room_code
        assert _spectate(srv, code)["code"] == "spectating_off"
        joiner.click("friend")
        joiner.lobby.connect_to("192.168.1.5", 47650)
        joiner.d.frame()
        joiner.lobby.code_field.set_text(code)
        joiner.click("join_code")
        assert joiner.lobby.page == "waiting"
        assert joiner.d.app.ctx.settings.allow_watch  # the joiner's own choice is not what counts
        assert watch_state(joiner.lobby) == ("Watching off", False)
    finally:
        p.close()
        joiner.close()


def test_watch_on_a_room_with_watching_off_shows_the_refusal(tmp_path, srv):
    """The app's own Watch on such a room: the spectator screen stops with the host's refusal in words."""
    host = srv.peer()
    code = host.send(type="create_room", name="Ann", client_seed="h", spectators=False)[0]["room"]
    p = Player(tmp_path, srv, name="Eve")
    try:
        p.click("friend")
        p.lobby.address_field.set_text(f"192.168.1.5:47650 {code}")
        p.click("watch")
        scene = p.d.app.stack.top
        assert isinstance(scene, SpectateScene)
        assert scene.watcher.status == Watch.FAILED and scene.watcher.error == "watch.error.spectating_off"
        key, retry = scene.problem()
        assert key == "watch.error.spectating_off" and not retry  # trying again cannot help
        assert scene.title() == "No board to show"  # not "waiting for the room's board": none is coming
        assert p.d.app.ctx.t(key) == "The host of this room doesn't allow watching."
    finally:
        p.close()


def test_the_choice_is_remembered_between_runs(tmp_path, srv):
    """Off is saved in settings.json and the next run hosts with watching off, without a click."""
    p = Player(tmp_path, srv)
    try:
        p.click("friend")
        p.click("allow_watch")
    finally:
        p.close()
    assert json.loads((tmp_path / "settings.json").read_text())["allow_watch"] is False
    again = Player(tmp_path, srv)
    try:
        assert not again.d.app.ctx.settings.allow_watch
        again.click("friend")
        assert again.lobby.widgets.by_name("allow_watch").icon != "check"
        again.click("host")
        [create] = again.creates()
        assert not create.spectators and srv.room(again.lobby.client.room_code).watchable is False
        again.click("leave")
        again.click("allow_watch")  # back on, kept too
    finally:
        again.close()
    assert SettingsStore(tmp_path).load().allow_watch is True


def test_a_host_who_resumes_the_seat_is_told_by_the_server(tmp_path, srv):
    """A restarted app resumes its seat in a room it made with watching off, after turning the toggle
    back on: the waiting room still says Watching off (the room's own word, not the current toggle)."""
    p = Player(tmp_path, srv)
    try:
        p.click("friend")
        p.click("allow_watch")
        p.lobby.connect_to("192.168.1.5", 47650)
        p.d.frame()
        p.click("create")
        code = p.lobby.client.room_code
    finally:
        p.close()
    again = Player(tmp_path, srv)
    try:
        again.click("friend")
        again.click("allow_watch")  # on again for the next rooms
        assert again.d.app.ctx.settings.allow_watch
        again.click("resume")
        assert again.lobby.page == "waiting" and again.lobby.client.room_code == code
        assert watch_state(again.lobby) == ("Watching off", False)
    finally:
        again.close()


@pytest.mark.parametrize("bad", ["no", 0, 1, None, [], {"on": True}])
def test_a_corrupt_value_is_the_default_and_the_rest_is_kept(tmp_path, caplog, bad):
    """A value that is not true/false means on (the default), with a log line; other fields survive."""
    (tmp_path / "settings.json").write_text(json.dumps({"version": 1, "player_name": "Mina", "allow_watch": bad}))
    with caplog.at_level(logging.WARNING):
        settings = SettingsStore(tmp_path).load()
    assert settings == Settings(player_name="Mina")
    assert ("allow_watch" in caplog.text) == (bad is not None)


def test_a_kiosk_sets_every_new_players_default(tmp_path):
    """kiosk.toml's allow_watch: each new player starts there; a bad value is reported and keeps on."""
    config, problems = kiosk_mode.parse_config({"allow_watch": False})
    assert problems == [] and config.player_settings().allow_watch is False
    assert kiosk_mode.KioskConfig().player_settings().allow_watch is True
    config, problems = kiosk_mode.parse_config({"allow_watch": "no"})
    assert config.allow_watch is True and len(problems) == 1 and "allow_watch" in problems[0]


def test_room_watchable_on_the_wire_is_additive():
    """§16: `room` carries watchable:false only for a room that refuses spectators (old bytes otherwise)."""
    base = {"type": "room", "room": "NYTF23", "status": "waiting", "me": {"name": "A", "connected": True, "ready": False,
            "rematch": False, "grace": None, "grace_expired": False}, "opponent": None, "match_id": None,
            "next_commitment": "0" * 64, "expires": None, "server_time": 1.0}
    room = Room.parse(base)
    assert room.watchable and "watchable" not in room.wire()
    off = Room.parse({**base, "watchable": False})
    assert not off.watchable and off.wire()["watchable"] is False and Room.parse(off.wire()) == off
    with pytest.raises(ValueError):
        Room.parse({**base, "watchable": "no"})


@pytest.mark.parametrize("size", [(320, 568), (390, 844)])
def test_a_small_window_shows_the_toggle_and_host_and_create_without_scrolling(tmp_path, srv, size):
    """At 320×568 (and the canvas size) the toggle and Host a game / Create room are in the first screenful."""
    p = Player(tmp_path, srv, size=size)
    try:
        p.click("friend")
        vp = p.d.app.viewport
        visible = vp.mapping.window[1] / vp.mapping.scale  # canvas rows shown before any scrolling
        for name in ("host", "allow_watch"):
            assert p.lobby.widgets.by_name(name).rect.bottom <= visible, name
        p.lobby.connect_to("192.168.1.5", 47650)
        p.d.frame()
        for name in ("allow_watch", "create"):
            assert p.lobby.widgets.by_name(name).rect.bottom <= visible, name
        p.click("allow_watch")  # clicked where the player sees it at this size
        assert not p.d.app.ctx.settings.allow_watch
    finally:
        p.close()
