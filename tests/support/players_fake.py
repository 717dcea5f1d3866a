"""The scripted §17 server for tests: the package's own (``client/players_script.py``, also used by
``mine-duel screenshots``), on a fresh in-process server unless one is given."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from mineduel.client.online_client import OnlineServices
from mineduel.client.player_key import KeyStore
from mineduel.client.players_script import PlayersScript, public_id, rating
from mineduel.client.scenes.online import OnlineScene
from mineduel.client.scenes.quick_match import QuickMatchScene
from mineduel.client.tokens import TokenStore
from mineduel.server.client import in_process_server
from support.client_driver import Driver


def PlayersFake(srv: Any = None) -> PlayersScript:
    return PlayersScript(srv if srv is not None else in_process_server())


__all__ = ["App", "PlayersFake", "PlayersScript", "public_id", "rating"]


class App:
    """One app whose online screen is connected to the scripted §17 server (its server page)."""

    def __init__(self, tmp_path: Path, fake, *, name: str | None = "Ann", size=(390, 844), language="en",
                 keys: KeyStore | None = None) -> None:
        self.fake = fake
        self.folder = tmp_path / "data"
        self.services = OnlineServices(connect=fake.connector(), tokens=TokenStore(self.folder), keys=keys,
                                       clipboard=lambda text: True, wall_clock=lambda: 1_700_000_000.0)
        self.d = Driver(tmp_path, language=language, size=size, online_services=lambda: self.services)
        self.d.app.ctx.settings = replace(self.d.app.ctx.settings, player_name=name)
        self.d.click_named("friend")
        self.d.frame()
        self.lobby.connect_to("127.0.0.1", 47650)
        self.frames(3)

    @property
    def lobby(self) -> OnlineScene:
        return next(s for s in self.d.app.stack.scenes if isinstance(s, OnlineScene))

    @property
    def client(self):
        return self.lobby.client

    @property
    def players(self):
        return self.client.players

    @property
    def top(self):
        return self.d.app.stack.top

    def frames(self, n: int = 2, dt: float = 1 / 60) -> None:
        for _ in range(n):
            self.d.frame(dt)

    def click(self, name: str) -> None:
        self.d.click_named(name)
        self.frames()

    def button(self, name: str):
        return self.top.widgets.by_name(name)

    def has_button(self, name: str) -> bool:
        return any(b.name == name for b in self.top.widgets.buttons)

    def wait(self, seconds: float) -> None:
        """Time passes on the app's clock and the server's alike."""
        steps = max(1, round(seconds / 0.25))
        for _ in range(steps):
            self.fake.srv.advance(seconds / steps)
            self.d.frame(seconds / steps)

    def search(self) -> QuickMatchScene:
        self.click("quick")
        scene = self.top
        assert isinstance(scene, QuickMatchScene)
        return scene

    def close(self) -> None:
        self.d.close()

