"""The player's choice about being watched, in the client (issue 19; PROTOCOL.md §16, §17).

The real app headless on a fake clock (support/client_driver.py) against the real in-process server
(support/inprocess.py): a quick match sends *Let others watch* (``quick_match`` ``spectators``) and
its screens say *Watching off* when the room is not watchable; the room's creator flips watching in
the waiting room (``set_spectators``) and a spectator is sent away with the reason; a room page
whose ``peek`` says ``watchable:false`` shows its Watch as unavailable before any tap.
"""

from __future__ import annotations

from dataclasses import replace

from support.inprocess import InProcessServer
from support.players_fake import App

from mineduel.client.scenes.allow_watch import quick_watch_off, watch_state
from mineduel.client.scenes.spectate import SpectateScene
from mineduel.client.spectate_client import Watch
from mineduel.shared.wire.messages import QuickMatch, SetSpectators
from tests.client.test_allow_watch import Player
from tests.client.test_quick_match import RealServer


def _pair(real: RealServer, *apps: App) -> None:
    for _ in range(8):
        real.srv.advance(0.25)
        for a in apps:
            a.frames(1)


def test_a_quick_match_sends_the_choice_and_both_see_watching_off(tmp_path):
    """Ann turned Let others watch off, Bob did not: the real queue pairs them into a room nobody may
    watch; Ann's search already says Watching off, and both matched screens say it (the server's word)."""
    real = RealServer()
    ann = App(tmp_path / "ann", real, name="Ann")
    bob = App(tmp_path / "bob", real, name="Bob")
    sent: list[object] = []
    link = ann.client.connection.link
    assert link is not None
    real_send = link.send
    link.send = lambda message: (sent.append(message), real_send(message))[1]  # type: ignore[method-assign]
    try:
        ann.d.app.ctx.settings = replace(ann.d.app.ctx.settings, allow_watch=False)
        scene = ann.search()
        ann.frames(2)
        [request] = [m for m in sent if isinstance(m, QuickMatch)]
        assert request.spectators is False and request.wire()["spectators"] is False
        assert scene.page == "searching" and quick_watch_off(ann.lobby, None)
        bob.search()
        assert not quick_watch_off(bob.lobby, None)  # Bob's own choice: on
        _pair(real, ann, bob)
        for me in (ann, bob):
            quick = me.top.quick()
            assert me.top.page == "matched" and quick.matched is not None
            assert me.client.room is not None and me.client.room.watchable is False
            assert quick_watch_off(me.lobby, quick.matched.room)
        code = ann.top.quick().matched.room
        assert real.srv.room(code).watchable is False
        assert real.srv.peer().send(type="spectate", room=code)[-1]["code"] == "spectating_off"
    finally:
        ann.close()
        bob.close()


def test_a_quick_match_of_two_who_allow_it_is_watchable_and_says_nothing(tmp_path):
    real = RealServer()
    ann = App(tmp_path / "ann", real, name="Ann")
    bob = App(tmp_path / "bob", real, name="Bob")
    try:
        ann.search()
        bob.search()
        _pair(real, ann, bob)
        quick = ann.top.quick()
        assert ann.top.page == "matched" and not quick_watch_off(ann.lobby, quick.matched.room)
        assert real.srv.room(quick.matched.room).watchable is True
        assert "room_watch" not in [b.name for b in ann.lobby.widgets.buttons]  # no toggle in a quick room
    finally:
        ann.close()
        bob.close()


def test_the_host_turns_watching_off_in_the_waiting_room_and_the_spectator_is_told(tmp_path):
    """The creator's waiting room has Let others watch (checked, the server's word); one tap sends
    set_spectators false: the room refuses spectators, the count goes, the spectator app stops
    with the host's reason. Another tap turns it back on. The setting for new rooms is untouched."""
    srv = InProcessServer()
    host = Player(tmp_path / "h", srv)
    eye = Player(tmp_path / "e", srv, name="Eve")
    try:
        host.click("friend")
        host.click("host")
        code = host.lobby.client.room_code
        toggle = host.lobby.widgets.by_name("room_watch")
        assert toggle.style == "selected" and toggle.icon == "check"
        eye.click("friend")
        eye.lobby.address_field.set_text(f"192.168.1.5:47650 {code}")
        eye.click("watch")
        watcher = eye.d.app.stack.top
        assert isinstance(watcher, SpectateScene) and watcher.watcher.status == Watch.WATCHING
        host.d.frame()
        assert watch_state(host.lobby) == ("1 watching", True)
        host.click("room_watch")
        assert [m.allowed for m in host.sent if isinstance(m, SetSpectators)] == [False]
        host.d.frame()
        assert srv.room(code).watchable is False and not srv.room(code).spectators
        assert watch_state(host.lobby) == ("Watching off", False)
        toggle = host.lobby.widgets.by_name("room_watch")
        assert toggle.style != "selected" and toggle.icon == "eye"
        eye.d.frame()
        assert watcher.watcher.status == Watch.CLOSED
        key, retry = watcher.problem()
        assert key == "watch.closed_off" and not retry
        assert eye.d.app.ctx.t(key) == "The host turned watching off for this room."
        assert watcher.event_text() == "The last view before watching stopped"  # no longer "You're watching live"
        assert host.d.app.ctx.settings.allow_watch  # this room only: new rooms keep the setting
        host.click("room_watch")
        host.d.frame()
        assert srv.room(code).watchable is True and watch_state(host.lobby) == ("Watching allowed", False)
    finally:
        host.close()
        eye.close()


def test_the_joiner_has_no_toggle(tmp_path):
    srv = InProcessServer()
    code = srv.peer().send(type="create_room", name="Ann", client_seed="h")[0]["room"]
    joiner = Player(tmp_path, srv, name="Jun")
    try:
        joiner.click("friend")
        joiner.lobby.connect_to("192.168.1.5", 47650)
        joiner.d.frame()
        joiner.lobby.code_field.set_text(code)
        joiner.click("join_code")
        assert joiner.lobby.page == "waiting"
        assert "room_watch" not in [b.name for b in joiner.lobby.widgets.buttons]
    finally:
        joiner.close()


def test_a_room_page_says_watching_is_off_before_any_tap(tmp_path):
    """peek's room_info watchable:false: the room page's Watch is disabled and says why; a room
    that takes spectators keeps its Watch."""
    srv = InProcessServer()
    peer = srv.peer()
    closed = peer.send(type="create_room", name="Ann", client_seed="h", spectators=False)[0]["room"]
    open_ = srv.peer().send(type="create_room", name="Bob", client_seed="b")[0]["room"]
    p = Player(tmp_path, srv, name="Eve")
    try:
        p.click("friend")
        p.lobby.open_link(f"mineduel://192.168.1.5:47650/join/{closed}")
        p.d.frame()
        assert p.lobby.page == "room" and p.lobby.client.room_info.watchable is False
        watch = p.lobby.widgets.by_name("watch_room")
        assert not watch.enabled and watch.label() == "Watching is off for this room"
        assert p.lobby.widgets.by_name("join").enabled  # joining is another matter
        p.lobby.back()
        p.d.frame()
        p.lobby.open_link(f"mineduel://192.168.1.5:47650/join/{open_}")
        p.d.frame()
        watch = p.lobby.widgets.by_name("watch_room")
        assert watch.enabled and watch.label() == "Watch"
    finally:
        p.close()


def test_a_lan_room_that_refuses_spectators_has_a_struck_eye_that_says_why(tmp_path):
    """§12 watchable:false on a LAN room: its eye is faint, and a tap says why at once, without
    opening the spectator screen (nothing to fail after the tap); the other room's eye watches."""
    from mineduel.client.online_client import FoundServer, LanRoom
    from mineduel.client.scenes.online import OnlineScene
    from mineduel.client.ui import palette

    srv = InProcessServer()
    shut = srv.peer().send(type="create_room", name="Jun", listed=True, client_seed="j", spectators=False)[0]["room"]
    open_ = srv.peer().send(type="create_room", name="Ann", listed=True, client_seed="a")[0]["room"]
    p = Player(tmp_path, srv, name="Eve")
    found = FoundServer("192.168.1.5", 47650, "Laptop", 2, rooms=(LanRoom(shut, "Jun", False), LanRoom(open_, "Ann")))
    p.services.discover = lambda done: done([found])
    try:
        p.click("friend")
        p.click("find")
        eye = p.lobby.widgets.by_name(f"watch:{shut}")
        assert eye.icon_color == palette.INK_FAINT
        assert p.lobby.widgets.by_name(f"watch:{open_}").icon_color == palette.ME_LIGHT
        p.click(f"watch:{shut}")
        assert isinstance(p.d.app.stack.top, OnlineScene) and p.lobby.local_notice == ("watch.off_here", {})
        p.click(f"watch:{open_}")
        assert isinstance(p.d.app.stack.top, SpectateScene)
    finally:
        p.close()


def test_a_host_back_after_a_restart_keeps_the_toggle(tmp_path):
    """The saved session says the seat created its room (tokens.json ``created``): after the app
    restarts and resumes the seat, the waiting room still offers Let others watch; a joiner's saved
    seat does not."""
    from mineduel.client.tokens import TokenStore

    srv = InProcessServer()
    host = Player(tmp_path / "h", srv)
    try:
        host.click("friend")
        host.click("host")
        code = host.lobby.client.room_code
        saved = TokenStore(tmp_path / "h" / "data").load()
        assert saved is not None and saved.room == code and saved.created
    finally:
        host.close()
    again = Player(tmp_path / "h", srv)
    try:
        again.click("friend")
        again.lobby.resume_saved()
        again.d.frame()
        again.d.frame()
        assert again.lobby.page == "waiting" and again.lobby.client.room_code == code
        assert "room_watch" in [b.name for b in again.lobby.widgets.buttons]
        again.click("room_watch")
        again.d.frame()
        assert srv.room(code).watchable is False
    finally:
        again.close()
    joiner = Player(tmp_path / "j", srv, name="Jun")
    try:
        joiner.click("friend")
        joiner.lobby.connect_to("192.168.1.5", 47650)
        joiner.d.frame()
        joiner.lobby.code_field.set_text(code)
        joiner.click("join_code")
        saved = TokenStore(tmp_path / "j" / "data").load()
        assert saved is not None and saved.room == code and not saved.created
    finally:
        joiner.close()
