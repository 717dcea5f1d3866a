"""Quick match, identity and ratings in the client (issue 20, PROTOCOL.md §17).

The real app, headless on a fake clock (support/client_driver.py). The §17 side is scripted
(support/players_fake.py: client/players_script.py over the real in-process core, so Ready, the
match and its end run on the real server), except the last test, which pairs two apps on the real
server's own quick-match queue and plays a rated match through."""

from __future__ import annotations

import json
import logging
from dataclasses import replace

import pytest
from support.client_driver import Driver
from support.inprocess import InProcessServer
from support.players_fake import App, PlayersFake

from mineduel.client.online_client import Conn, OnlineServices
from mineduel.client.player_key import FILE_NAME, KeyStore, server_key, valid_key
from mineduel.client.player_session import CPU_OFFER_AFTER, Quick
from mineduel.client.scenes.game import GameScene
from mineduel.client.scenes.online import OnlineScene
from mineduel.client.scenes.quick_match import QuickMatchScene
from mineduel.client.tokens import TokenStore


@pytest.fixture
def fake():
    return PlayersFake()


@pytest.fixture
def app(tmp_path, fake):
    a = App(tmp_path, fake)
    yield a
    a.close()


# ----- identity -------------------------------------------------------------------------------------------


def test_the_first_connection_makes_the_key_and_identifies_right_after_hello(app, fake):
    """C3: identify follows hello at once (before anything else), with this server's key (derived from
    the kept one: player_key.server_key) and the name; the kept key itself never leaves."""
    kinds = [m["type"] for m in fake.sent]
    assert kinds[:2] == ["hello", "identify"]
    sent = fake.requests("identify")[0]
    kept = json.loads((app.folder / FILE_NAME).read_text())["key"]
    assert valid_key(kept) and sent["key"] == server_key(kept, "127.0.0.1", 47650) and sent["name"] == "Ann"
    assert kept not in json.dumps(fake.sent)
    assert app.players.identity is not None and app.players.identity.display.startswith("Ann#")
    assert kept not in (app.folder / "online-session.json").read_text() if (app.folder / "online-session.json").exists() else True


def test_a_second_start_reuses_the_same_key(tmp_path, fake):
    first = App(tmp_path / "one", fake)
    key = fake.requests("identify")[0]["key"]
    first.close()
    again = App(tmp_path / "one", fake)
    try:
        assert [m["key"] for m in fake.requests("identify")] == [key, key]
    finally:
        again.close()


def test_the_key_never_reaches_a_log_line(tmp_path, fake, caplog):
    caplog.set_level(logging.DEBUG)
    a = App(tmp_path, fake)
    try:
        key = fake.requests("identify")[0]["key"]
        assert key not in caplog.text
    finally:
        a.close()


def test_without_a_name_nothing_identifies_until_one_is_given(tmp_path, fake):
    a = App(tmp_path, fake, name=None)
    try:
        assert fake.requests("identify") == []
        assert not (a.folder / FILE_NAME).exists()  # made on the first use that needs it
        a.d.app.ctx.settings = replace(a.d.app.ctx.settings, player_name="Mina")  # e.g. the name popup
        a.frames()
        assert [m["name"] for m in fake.requests("identify")] == ["Mina"]
    finally:
        a.close()


def test_a_name_changed_in_settings_is_a_rename(app, fake):
    app.d.app.ctx.settings = replace(app.d.app.ctx.settings, player_name="Annie")
    app.frames()
    assert [m["name"] for m in fake.requests("rename")] == ["Annie"]
    assert app.players.identity.display.startswith("Annie#")
    app.frames(5)
    assert len(fake.requests("rename")) == 1  # once


def test_a_name_the_server_refuses_is_said_and_not_retried_until_changed(tmp_path, fake):
    fake.replies["identify"] = lambda msg: [{"type": "error", "code": "bad_name", "message": "no", "request": "identify"}]
    a = App(tmp_path, fake)
    try:
        a.frames(5)
        assert len(fake.requests("identify")) == 1
        assert a.players.error == "player.error.bad_name"
        scene = a.search()
        assert scene.page == "identity_error"
        assert fake.requests("quick_match") == []
    finally:
        a.close()


def test_an_older_server_shows_no_quick_match(tmp_path, fake):
    fake.supported = False
    a = App(tmp_path, fake)
    try:
        assert a.players.supported is False and a.client.conn == Conn.OPEN
        assert not a.has_button("quick") and not a.has_button("leaderboard")
        assert a.has_button("create")  # rooms by code as before
    finally:
        a.close()


def test_a_damaged_key_file_is_explained_and_replaced_only_on_the_players_word(tmp_path, fake):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / FILE_NAME).write_text("{broken")
    a = App(tmp_path, fake)
    try:
        assert fake.requests("identify") == []
        assert (folder / FILE_NAME).read_text() == "{broken"  # never replaced silently
        scene = a.search()
        assert scene.page == "key_damaged" and fake.requests("quick_match") == []
        a.click("key_new")
        a.click("cancel")  # the confirmation: nothing happens
        assert (folder / FILE_NAME).read_text() == "{broken"
        a.click("key_new")
        a.click("confirm")
        a.frames(4)
        key = json.loads((folder / FILE_NAME).read_text())["key"]
        assert valid_key(key) and (folder / (FILE_NAME + ".damaged")).read_text() == "{broken"
        assert fake.requests("identify")[-1]["key"] == server_key(key, "127.0.0.1", 47650)  # a new connection, it
        assert a.players.queue.state is Quick.SEARCHING  # and the search the player asked for goes on
    finally:
        a.close()


def test_a_folder_that_cannot_keep_a_key_says_so_and_sends_nothing(tmp_path, fake):
    blocker = tmp_path / "keys"
    blocker.write_text("a file where the folder should be")
    a = App(tmp_path, fake, keys=KeyStore(blocker))
    try:
        assert fake.requests("identify") == []
        scene = a.search()
        assert scene.page == "key_unavailable"
        assert fake.requests("quick_match") == []
        a.click("quick_done")
        assert a.top is a.lobby and a.lobby.page == "server"
    finally:
        a.close()


# ----- quick match ----------------------------------------------------------------------------------------


def test_search_shows_the_servers_elapsed_time_and_cancel_leaves_the_queue(app, fake):
    scene = app.search()
    assert scene.page == "searching" and app.players.queue.state is Quick.SEARCHING
    app.wait(7.0)
    assert scene.quick().elapsed == 7
    app.click("quick_cancel")
    assert len(fake.requests("leave_queue")) == 1
    assert app.top is app.lobby and app.players.queue.state is Quick.IDLE


def test_the_cpu_is_offered_after_about_20_s_and_the_search_goes_on_until_taken(app, fake):
    scene = app.search()
    app.wait(CPU_OFFER_AFTER - 1)
    assert not app.has_button("quick_cpu")
    app.wait(1.5)
    assert app.has_button("quick_cpu") and "CPU" in app.button("quick_cpu").label()
    app.wait(10)
    assert scene.page == "searching" and fake.requests("leave_queue") == []  # still searching
    app.click("quick_cpu")
    assert len(fake.requests("leave_queue")) == 1
    assert isinstance(app.top, GameScene) and app.top.session.can_restart  # the CPU game, not an online match
    popup = app.d.app.stack.popup
    assert popup is not None and any(b.name == "start" for b in popup.widgets.buttons)  # one click from a CPU match
    app.click("start")
    assert app.top.controller is not None and app.top.controller.opponent.value == "cpu"


def test_matched_shows_the_opponent_and_ready_within_the_confirm_time(app, fake):
    scene = app.search()
    app.wait(3)
    fake.opponent = {"display": "Bob#77aa", "rating": 1523.4, "provisional": False}
    fake.pair()
    app.frames(3)
    quick = scene.quick()
    assert scene.page == "matched" and quick.matched.opponent.display == "Bob#77aa"
    assert quick.confirm_left == 10 and quick.room_ready
    assert TokenStore(app.folder).load().room == quick.matched.room  # the seat's token is kept (O12)
    app.wait(4)
    assert scene.quick().confirm_left == 6
    app.click("quick_ready")
    assert [m.get("ready") for m in fake.requests("ready")] == [True]
    assert not app.button("quick_ready").enabled
    fake.opponent_ready()
    app.frames(4)
    game = app.top
    assert isinstance(game, GameScene) and game.controller is app.client.match
    ratings = game.controller.capabilities.rating.ratings()
    assert (ratings.me.value, ratings.me.provisional) == (1500.0, True)
    assert (ratings.opponent.value, ratings.opponent.provisional) == (1523.4, False)
    assert game.paint.card_rating(True) == "1500?" and game.paint.card_rating(False) == "1523"


def test_not_confirming_in_time_says_why_and_leaves_the_queue(app, fake):
    scene = app.search()
    code = fake.pair()
    app.frames(3)
    app.wait(10.5)
    assert scene.quick().confirm_left == 0 and not app.button("quick_ready").enabled
    fake.push({"type": "queue", "status": "left", "reason": "not_ready"})
    fake.push({"type": "room_closed", "room": code, "reason": "dissolved"})
    app.frames(3)
    assert scene.page == "notice" and app.players.queue.notice == "quick.you_not_ready"
    assert app.client.notice is None or app.client.notice[0] != "online.error.room_closed"
    assert TokenStore(app.folder).load() is None  # the dissolved room's token is gone
    app.click("quick_again")
    assert len(fake.requests("quick_match")) == 2 and scene.page == "searching"


def test_an_opponent_who_does_not_confirm_puts_us_back_in_the_queue_with_our_time(app, fake):
    scene = app.search()
    since = fake.now
    app.wait(12)
    fake.pair()
    app.frames(3)
    app.click("quick_ready")
    app.wait(10)
    fake.push({"type": "queue", "status": "waiting", "since": since, "server_time": fake.now})
    app.frames(3)
    assert scene.page == "searching" and app.players.queue.notice == "quick.opponent_not_ready"
    assert scene.quick().elapsed == 22  # the waiting time kept
    assert not app.client.seated


def test_a_matched_while_not_searching_is_ignored(app, fake, caplog):
    fake.push({"type": "matched", "room": "NYTF23", "token": "ab" * 32, "seat": 0,
               "opponent": {"display": "Eve#0bad", "rating": 1500.0, "provisional": True}, "rated": True,
               "confirm": {"at": fake.now + 10, "left": 10.0}})
    app.frames(3)
    assert not app.client.seated and app.players.queue.state is Quick.IDLE
    assert TokenStore(app.folder).load() is None
    assert "not searching" in caplog.text


@pytest.mark.parametrize("broken", [
    {"type": "matched", "room": "NYTF23", "token": "not-hex", "seat": 0,
     "opponent": {"display": "Eve#0bad", "rating": 1500.0, "provisional": True}, "rated": True,
     "confirm": {"at": 1.0, "left": 10.0}},
    {"type": "matched", "room": "NYTF23", "token": "ab" * 32, "seat": 0, "opponent": {"display": "Eve"}, "rated": True,
     "confirm": {"at": 1.0, "left": 10.0}},
    {"type": "queue", "status": "maybe"},
])
def test_a_hostile_matched_or_queue_is_a_clear_error_and_changes_nothing(app, fake, broken):
    scene = app.search()
    fake.push_raw(json.dumps(broken).encode())
    app.frames(3)
    assert app.client.error == "online.error.bad_server"
    assert TokenStore(app.folder).load() is None and not app.client.seated
    assert scene not in app.d.app.stack.scenes or scene.page == "gone"
    assert app.lobby.page == "error"


def test_a_rated_match_ends_with_the_change_in_the_result(app, fake):
    app.search()
    fake.pair()
    app.frames(3)
    app.click("quick_ready")
    fake.opponent_ready()
    app.frames(4)
    fake.match_rating = {"before": 1500.0, "after": 1562.3, "change": 62.3, "deviation": 290.3, "provisional": True}
    fake.peer.send(type="resign", match_id=fake.peer.last("match_start")["match_id"])
    app.wait(2)
    game = app.top
    assert isinstance(game, GameScene) and game.ended is not None and game.panel.open
    change = game.controller.capabilities.rating.ratings().change
    assert (change.before, change.after, change.change) == (1500.0, 1562.3, 62.3)
    assert game.paint.card_rating(True) == "1500?"  # the cards keep the ratings from before the match
    app.d.app.screenshot()  # the badge draws (see mine-duel screenshots players_result_rating)


def test_an_unrated_room_shows_no_ratings(tmp_path):
    """A room by code (unrated) has no rating capability: the cards and the result are as before."""
    srv = InProcessServer()
    fake = PlayersFake(srv)
    a = App(tmp_path, fake)
    try:
        a.click("create")
        a.frames(3)
        peer = srv.peer()
        peer.send(type="join", room=a.client.room_code, name="Jun", client_seed="j")
        a.frames(3)
        a.click("ready")
        peer.send(type="ready", ready=True, client_seed="j2")
        a.frames(4)
        game = a.top
        assert isinstance(game, GameScene)
        assert game.controller.capabilities.rating is None and game.paint.card_rating(False) is None
    finally:
        a.close()


# ----- the real server's queue ------------------------------------------------------------------------------


class RealServer:
    """The real in-process server, §17 and all (no script): its own queue pairs the two apps."""

    def __init__(self) -> None:
        from mineduel.server.matchmaking import PairingPolicy

        # Both apps connect from 127.0.0.1: one address, as two players behind one NAT.
        self.srv = InProcessServer(pairing=PairingPolicy(allow_same_address=True))

    def connector(self):
        return self.srv.connector()

    def requests(self, kind):
        return []


def test_two_apps_quick_match_on_the_real_server_and_see_their_ratings_move(tmp_path):
    """Done when (issue 20): two clients press Quick match and play a rated match; both ratings move."""
    real = RealServer()
    ann = App(tmp_path / "ann", real, name="Ann")
    bob = App(tmp_path / "bob", real, name="Bob")
    try:
        for a in (ann, bob):
            assert a.players.identity is not None and a.has_button("quick")
            a.search()
        for _ in range(8):
            real.srv.advance(0.25)
            ann.frames(1)
            bob.frames(1)
        for me, other in ((ann, bob), (bob, ann)):
            quick = me.top.quick()
            assert me.top.page == "matched", me.top.page
            assert quick.matched.opponent.display == other.players.identity.display
            assert quick.matched.rated
        ann.click("quick_ready")
        bob.click("quick_ready")
        for _ in range(4):
            ann.frames(1)
            bob.frames(1)
        assert isinstance(ann.top, GameScene) and isinstance(bob.top, GameScene)
        assert ann.top.controller.capabilities.rating is not None
        assert ann.top.paint.card_rating(False) == "1500?"  # both new: provisional
        ann.client.match.resign()
        for _ in range(6):
            ann.d.frame(0.5)
            bob.d.frame(0.5)
        lost = ann.client.match.end.rating
        won = bob.client.match.end.rating
        assert lost is not None and won is not None
        assert lost.change < 0 < won.change and won.after == pytest.approx(won.before + won.change, abs=0.01)
        assert bob.top.panel.open
        bob.top.paint.scene.ctx.invalidate(None)
        bob.d.app.screenshot()
    finally:
        ann.close()
        bob.close()


def test_the_home_page_offers_quick_match_on_the_last_searchs_server(tmp_path, fake):
    """Which server (issue 20): the one the player searched on last, one click from the home page."""
    first = App(tmp_path, fake)
    first.search()
    first.click("quick_cancel")
    first.close()
    saved = json.loads((tmp_path / "data" / "quick-server.json").read_text())
    assert (saved["host"], saved["port"]) == ("127.0.0.1", 47650) and "key" not in json.dumps(saved)
    d = Driver(tmp_path, language="en", online_services=lambda: OnlineServices(
        connect=fake.connector(), tokens=TokenStore(tmp_path / "data"), clipboard=lambda text: True))
    try:
        d.app.ctx.settings = replace(d.app.ctx.settings, player_name="Ann")
        d.click_named("friend")
        d.frame()
        lobby = next(s for s in d.app.stack.scenes if isinstance(s, OnlineScene))
        assert lobby.page == "home"
        button = lobby.widgets.by_name("quick_home")
        assert "127.0.0.1:47650" in button.label()
        d.click_named("quick_home")
        for _ in range(4):
            d.frame()
        assert isinstance(d.app.stack.top, QuickMatchScene) and d.app.stack.top.page == "searching"
        assert len(fake.requests("quick_match")) == 2
    finally:
        d.close()


def test_a_damaged_last_server_file_is_no_button(tmp_path, fake):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "quick-server.json").write_text('{"host": "a b", "port": 99999}')
    d = Driver(tmp_path, language="en", online_services=lambda: OnlineServices(
        connect=fake.connector(), tokens=TokenStore(folder), clipboard=lambda text: True))
    try:
        d.click_named("friend")
        lobby = next(s for s in d.app.stack.scenes if isinstance(s, OnlineScene))
        assert not any(b.name == "quick_home" for b in lobby.widgets.buttons)
    finally:
        d.close()


def test_quick_match_asks_a_name_first_even_after_a_skip(tmp_path, fake):
    a = App(tmp_path, fake, name=None)
    try:
        a.click("quick")
        popup = a.d.app.stack.popup
        assert popup is not None and any(b.name == "name_skip" for b in popup.widgets.buttons)
        a.click("name_skip")
        scene = a.top
        assert scene.page == "notice" and a.players.queue.notice == "quick.name_needed"
        assert fake.requests("quick_match") == [] and fake.requests("identify") == []
        a.click("quick_again")
        popup = a.d.app.stack.popup
        assert popup is not None  # asked again: an opponent sees the name
        popup.field.set_text("Mina")
        a.click("name_ok")
        a.frames(3)
        assert [m["name"] for m in fake.requests("identify")] == ["Mina"]
        assert scene.page == "searching" and len(fake.requests("quick_match")) == 1
    finally:
        a.close()


def test_a_server_that_says_ok_to_identify_without_a_player_is_not_asked_again(tmp_path, fake):
    fake.replies["identify"] = lambda msg: [{"type": "ok", "request": "identify"}]
    a = App(tmp_path, fake)
    try:
        a.frames(10)
        assert len(fake.requests("identify")) == 1 and a.players.supported is False
        assert not a.has_button("quick")
    finally:
        a.close()


def test_the_creator_chooses_a_rated_room_and_the_server_hears_it(tmp_path):
    """Rooms by code keep working, rated or not (the creator chooses): the toggle sends rated:true."""
    real = RealServer()
    a = App(tmp_path, real)
    try:
        assert a.button("rated_room").style != "selected"
        a.click("rated_room")
        assert a.players.rated_room and a.button("rated_room").style == "selected"
        a.click("create")
        a.frames(3)
        code = a.client.room_code
        assert code is not None and real.srv.room(code).rated
        peer = real.srv.peer()
        peer.send(type="join", room=code, name="Jun", client_seed="j")  # not identified: refused
        assert peer.last("error")["code"] == "identify_required"
    finally:
        a.close()


def test_a_kiosk_gives_each_visitor_a_new_identity_and_writes_no_key(tmp_path, fake):
    """docs/KIOSK.md: a shared machine — the key in memory only, forgotten by the idle reset; no export."""
    from mineduel.client.kiosk import KioskConfig

    services = OnlineServices(connect=fake.connector(), tokens=TokenStore(tmp_path / "data"), clipboard=lambda text: True)
    d = Driver(tmp_path, size=(390, 844), kiosk=KioskConfig(online=True), online_services=lambda: services)
    try:
        assert d.app.online_services().keys.memory
        d.app.ctx.settings = replace(d.app.ctx.settings, player_name="Visitor")
        lobby = OnlineScene(d.app.ctx, services=services)
        d.app.stack.push(lobby)
        lobby.connect_to("127.0.0.1", 47650)
        for _ in range(3):
            d.frame()
        first = fake.requests("identify")[-1]["key"]
        assert not (tmp_path / "data" / FILE_NAME).exists()
        lobby.widgets.by_name("profile").on_click()
        d.frame()
        assert not any(b.name == "key_export" for b in d.app.stack.top.widgets.buttons)
        d.app.new_player()  # the idle reset
        assert services.keys.load().key is None
        d.app.ctx.settings = replace(d.app.ctx.settings, player_name="Next visitor")
        lobby = OnlineScene(d.app.ctx, services=services)
        d.app.stack.push(lobby)
        lobby.connect_to("127.0.0.1", 47650)
        for _ in range(3):
            d.frame()
        assert fake.requests("identify")[-1]["key"] != first
    finally:
        d.close()
