"""The kiosk's attract mode (issue 19, docs/KIOSK.md): an idle start screen shows a server's live
matches in turn; any touch or key brings the start screen back.

The real kiosk app headless on a fake clock (support/client_driver.py) against the real server core
in process (support/inprocess.py); the rooms' players are scripted peers. The rotation runs on the
app's clock only, so every step below is exact.
"""

from __future__ import annotations

import os
from pathlib import Path

import pygame
import pytest
from support.client_driver import Driver
from support.inprocess import InProcessServer

from mineduel.client import kiosk as kiosk_mode
from mineduel.client.kiosk import KioskConfig, parse_config
from mineduel.client.online_client import OnlineServices
from mineduel.client.scenes.popups import LanguagePopup
from mineduel.client.scenes.spectate_attract import END_HOLD, AttractScene
from mineduel.client.tokens import TokenStore

SERVER = "192.168.1.5:47650"


@pytest.fixture(autouse=True)
def sdl_hints(monkeypatch):
    for name in kiosk_mode.SDL_HINTS:
        monkeypatch.setenv(name, os.environ.get(name, kiosk_mode.SDL_HINTS[name]))


def live_room(srv: InProcessServer, a: str, b: str, *, listed: bool = True) -> tuple[str, object, object]:
    p, q = srv.peer(), srv.peer()
    code = p.send(type="create_room", name=a, client_seed="a", listed=listed)[0]["room"]
    q.send(type="join", room=code, name=b, client_seed="b")
    p.send(type="ready")
    q.send(type="ready")
    return code, p, q


CONNECTS: list[str] = []  # every connection the app opened (the current test's)


def make(tmp_path: Path, srv: InProcessServer, **config: object) -> Driver:
    inner = srv.connector()
    CONNECTS.clear()

    def connect(host, port, listener, **tls):
        CONNECTS.append(f"{host}:{port}")
        return inner(host, port, listener, **tls)

    services = OnlineServices(connect=connect, tokens=TokenStore(tmp_path / "data"))
    settings = {"attract_server": SERVER, "attract_idle_seconds": 30.0, "attract_rotate_seconds": 20.0,
                "attract_retry_seconds": 15.0, **config}
    return Driver(tmp_path, size=(390, 844), kiosk=KioskConfig(**settings),  # type: ignore[arg-type]
                  online_services=lambda: services)


def attract(d: Driver) -> AttractScene | None:
    top = d.app.stack.top
    return top if isinstance(top, AttractScene) else None


@pytest.fixture
def srv() -> InProcessServer:
    return InProcessServer()


def test_an_idle_start_screen_shows_live_matches_in_turn(tmp_path, srv):
    """After attract_idle_seconds untouched, the live matches (newest first, live_rooms) rotate every
    attract_rotate_seconds; after the last one the server is asked again and the first comes back."""
    first, *_ = live_room(srv, "Ann", "Bob")
    srv.advance(1.0)
    second, *_ = live_room(srv, "Cho", "Dee")
    d = make(tmp_path, srv)
    try:
        assert isinstance(d.app.stack.popup, LanguagePopup)
        d.wait(29.0, step=1.0)
        assert attract(d) is None
        d.wait(1.5, step=0.5)
        scene = attract(d)
        assert scene is not None and d.app.stack.popup is None
        loop = scene.loop
        assert loop.mode == "showing" and loop.current == second  # the most recently started first
        assert scene.spectate.watcher.state is not None and scene.spectate.watcher.state.status == "playing"
        d.wait(20.0, step=1.0)
        assert loop.current == first
        d.wait(21.0, step=1.0)  # the round is over: asked again, the newest first again
        assert loop.shown == [second, first, second]
        assert CONNECTS == ["192.168.1.5:47650"] * 2  # the first question, then the spectator connection for all
        d.app.render()
    finally:
        d.close()


def test_any_touch_or_key_returns_to_the_start_screen(tmp_path, srv):
    """The touch that ends attract mode does nothing else: a fresh language picker, attract off,
    and the spectator connection closed (the room's spectator count drops)."""
    code, p, _ = live_room(srv, "Ann", "Bob")
    eye = srv.peer()
    eye.send(type="spectate", room=code)
    d = make(tmp_path, srv)
    try:
        d.wait(31.0, step=1.0)
        assert attract(d) is not None and eye.last("spectate_state")["spectators"] == 2
        d.tap((200, 400))
        assert attract(d) is None and isinstance(d.app.stack.popup, LanguagePopup)
        assert eye.last("spectate_state")["spectators"] == 1
        assert not any(isinstance(b, object) and getattr(b, "pressed", False) for b in d.app.stack.popup.widgets.buttons)
        assert d.app.kiosk.attracts == 1
        d.wait(10.0, step=1.0)
        assert attract(d) is None  # the one who touched is playing now
        p.send(type="resign")
        d.wait(100.0, step=2.0)  # idle_seconds (90): back to the start, then attract again
        d.wait(35.0, step=1.0)
        assert d.app.kiosk.attracts == 2
        d.key(pygame.K_a)
        assert attract(d) is None and isinstance(d.app.stack.popup, LanguagePopup)
    finally:
        d.close()


def test_a_match_that_ends_moves_on_after_its_reveal(tmp_path, srv):
    """The rotation moves on END_HOLD seconds after the end (the O13 reveal shown meanwhile)."""
    first, *_ = live_room(srv, "Ann", "Bob")
    srv.advance(1.0)
    second, p, _ = live_room(srv, "Cho", "Dee")
    d = make(tmp_path, srv, attract_rotate_seconds=60.0)
    try:
        d.wait(31.0, step=1.0)
        loop = attract(d).loop
        assert loop.current == second
        p.send(type="resign")
        d.wait(1.0)
        assert loop.current == second and attract(d).spectate.watcher.reveal is not None
        d.wait(END_HOLD, step=0.5)
        assert loop.current == first
    finally:
        d.close()


def test_no_live_match_shows_a_calm_card_and_retries(tmp_path, srv):
    """Nothing live: the calm card; every attract_retry_seconds the server is asked again; a match
    that starts meanwhile is shown. A closed room moves on too."""
    d = make(tmp_path, srv)
    try:
        d.wait(31.0, step=1.0)
        scene = attract(d)
        assert scene is not None and scene.loop.mode == "none"
        d.app.render()
        code, p, q = live_room(srv, "Ann", "Bob")
        d.wait(10.0, step=1.0)
        assert scene.loop.mode == "none"
        d.wait(6.0, step=1.0)
        assert scene.loop.mode == "showing" and scene.loop.current == code
        p.send(type="resign")
        p.send(type="leave")
        q.send(type="leave")  # the room is deleted: room_closed
        d.wait(1.0)
        assert scene.loop.mode == "none"
    finally:
        d.close()


def test_configured_rooms_stand_in_when_the_server_cannot_list(tmp_path, srv, monkeypatch):
    """A server that does not know live_rooms (an older one): the config's room codes are shown;
    one with no match running is skipped."""
    from mineduel.client import spectate_client

    def refuse(self) -> None:  # the server answered unknown_type
        self.status, self.error = "failed", "watch.live_unsupported"
        self.connection.drop()

    monkeypatch.setattr(spectate_client.LiveQuery, "start", lambda self, *a, **k: refuse(self))
    code, *_ = live_room(srv, "Ann", "Bob", listed=False)
    waiting = srv.peer().send(type="create_room", name="Eve", client_seed="e")[0]["room"]
    d = make(tmp_path, srv, attract_rooms=[waiting, code])
    try:
        d.wait(31.0, step=1.0)
        loop = attract(d).loop
        d.wait(1.0)
        assert loop.current == code and loop.shown == [waiting, code]
    finally:
        d.close()


def test_the_attract_keys_of_the_config():
    """Each attract key is checked on its own; a bad value keeps its default and says why."""
    config, problems = parse_config({"attract_server": "mineduel://10.0.0.2:47650", "attract_rooms": ["nytf23", "NYTF23"],
                                     "attract_idle_seconds": 45, "attract_rotate_seconds": 12})
    assert problems == []
    assert config.attract_rooms == ("NYTF23",)
    target = config.attract_target()
    assert target is not None and (target.host, target.port, target.rooms) == ("10.0.0.2", 47650, ("NYTF23",))
    config, problems = parse_config({"attract_server": "not a server", "attract_rooms": ["??"], "attract_rotate_seconds": 1})
    assert config == KioskConfig() and len(problems) == 3
    assert KioskConfig().attract_target() is None  # off by default
