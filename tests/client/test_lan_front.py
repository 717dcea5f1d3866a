"""The game client's LAN list dials a cluster's front (issue 21, PROTOCOL.md §12 ``front``).

Three nodes of one cluster answering on the LAN are listed as ONE server; a tap on one of their
waiting rooms (or on the server, or its Watch eye) connects to the front the answers named, with
their TLS facts, never to the node that answered; the row shows the host it will dial. The real
app, headless on a fake clock (support/client_driver.py), against the in-process server core."""

from __future__ import annotations

import json
from dataclasses import replace

from support.client_driver import Driver
from support.inprocess import InProcessServer

from mineduel.client.net import listed
from mineduel.client.online_client import OnlineServices
from mineduel.client.scenes.online import OnlineScene
from mineduel.client.tokens import TokenStore
from mineduel.server.discovery import _Collector, merge


def _answers(code: str) -> list:
    """What three nodes behind the front 10.0.0.100:47650 answer (the room waits on the second)."""
    collector = _Collector()
    for i, rooms in enumerate(([], [{"room": code, "host": "Ann"}], [])):
        answer = {"type": "server", "protocol": 1, "name": "Club", "version": "0.2.0", "port": 47650, "open_rooms": 1,
                  "tls": False, "id": f"{i + 1}" * 16, "rooms": rooms,
                  "front": {"host": "10.0.0.100", "port": 47650, "tls": False, "pin": None}}
        collector.datagramReceived(json.dumps(answer).encode(), (f"10.0.0.{i + 1}", 47651))
    return [f for f in map(listed, merge(list(collector.found.values()))) if f is not None]


def _app(tmp_path, srv: InProcessServer, found: list):
    dialled: list[tuple[str, int, bool, str | None]] = []
    inner = srv.connector()

    def connect(host, port, listener, *, tls=False, pin=None):
        dialled.append((host, port, tls, pin))
        return inner(host, port, listener, tls=tls, pin=pin)

    services = OnlineServices(connect=connect, tokens=TokenStore(tmp_path / "data"), discover=lambda done: done(list(found)))
    d = Driver(tmp_path, language="en", online_services=lambda: services)
    d.app.ctx.settings = replace(d.app.ctx.settings, player_name="Jun")
    return d, dialled


def _lobby(d: Driver) -> OnlineScene:
    return next(s for s in d.app.stack.scenes if isinstance(s, OnlineScene))


def test_a_clusters_nodes_are_one_row_and_a_tap_on_its_room_dials_the_front(tmp_path):
    srv = InProcessServer()
    code = srv.peer().send(type="create_room", name="Ann", listed=True, client_seed="h")[0]["room"]
    found = _answers(code)
    assert [(s.host, s.port, s.via) for s in found] == [("10.0.0.100", 47650, "10.0.0.1")]
    d, dialled = _app(tmp_path, srv, found)
    try:
        d.click_named("friend")
        d.frame()
        lobby = _lobby(d)
        rows = [b.name for b in lobby.widgets.buttons if b.name.startswith(("room:", "server:"))]
        assert rows == [f"room:{code}"]  # one server: its one waiting room, no row per node
        d.click_named(f"room:{code}")
        d.frame()
        assert dialled == [("10.0.0.100", 47650, False, None)]  # the front, not 10.0.0.2 that named the room
        assert lobby.page == "waiting" and lobby.client.room_code == code
    finally:
        d.close()


def test_a_clusters_server_row_dials_the_front_too(tmp_path):
    srv = InProcessServer()
    collector = _Collector()
    answer = {"type": "server", "protocol": 1, "name": "Club", "version": "0.2.0", "port": 47650, "open_rooms": 0,
              "tls": False, "id": "7" * 16, "rooms": [], "front": {"host": "play.example.org", "port": 47700}}
    collector.datagramReceived(json.dumps(answer).encode(), ("10.0.0.7", 47651))
    found = [f for f in map(listed, merge(list(collector.found.values()))) if f is not None]
    d, dialled = _app(tmp_path, srv, found)
    try:
        d.click_named("friend")
        d.frame()
        d.click_named("server:play.example.org:47700")
        d.frame()
        assert dialled == [("play.example.org", 47700, False, None)]
    finally:
        d.close()


def test_nothing_is_dialled_before_the_player_taps(tmp_path):
    srv = InProcessServer()
    code = srv.peer().send(type="create_room", name="Ann", listed=True, client_seed="h")[0]["room"]
    d, dialled = _app(tmp_path, srv, _answers(code))
    try:
        d.click_named("friend")
        d.wait(2.0)
        assert dialled == []
    finally:
        d.close()


def test_a_clusters_room_row_shows_the_front_it_dials(tmp_path):
    """The row of a room a cluster node named draws the front's host under the code; the same row
    from a plain server draws nothing there (both sizes: 390×844 and 320×568)."""
    import pygame

    from mineduel.client.online_client import FoundServer, LanRoom

    srv = InProcessServer()
    code = srv.peer().send(type="create_room", name="Ann", listed=True, client_seed="h")[0]["room"]
    plain = FoundServer("10.0.0.2", 47650, "Club", 1, rooms=(LanRoom(code, "Ann"),))
    front = replace(plain, host="10.0.0.100", via="10.0.0.2")
    for size in ((390, 844), (320, 568)):
        under: list[pygame.Surface] = []
        for found in (plain, front):
            services = OnlineServices(connect=srv.connector(), tokens=TokenStore(tmp_path / f"d{size[0]}{found.via}"),
                                      discover=lambda done, found=found: done([found]))
            d = Driver(tmp_path / f"{size[0]}{found.via}", language="en", size=size, online_services=lambda s=services: s)
            try:
                d.click_named("friend")
                d.frame()
                lobby = _lobby(d)
                (rect,) = [r for _s, room, r in lobby.entries if room is not None]
                shot = d.app.screenshot()
                area = pygame.Rect(rect.right - 124, rect.centery + 4, 110, 14)  # under the code
                under.append(shot.subsurface(area).copy())
            finally:
                d.close()
        assert pygame.image.tobytes(under[0], "RGB") != pygame.image.tobytes(under[1], "RGB"), size


def test_the_watch_eye_of_a_clusters_room_dials_the_front_too(tmp_path):
    srv = InProcessServer()
    code = srv.peer().send(type="create_room", name="Ann", listed=True, client_seed="h")[0]["room"]
    d, dialled = _app(tmp_path, srv, _answers(code))
    try:
        d.click_named("friend")
        d.frame()
        d.click_named(f"watch:{code}")
        d.frame()
        assert dialled == [("10.0.0.100", 47650, False, None)]
        assert srv.room(code).spectators  # the spectate went to the server behind the front
    finally:
        d.close()
