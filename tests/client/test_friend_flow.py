"""Two clicks to a friend (issue 16 items 1, 5 and Build): the online screen's first page is where
*Play with a friend* lands — Host a game, the rooms waiting on this network (scanned by itself),
Join with a link or code — and a player's name is asked once and shown to the opponent.

The real app, headless on a fake clock (support/client_driver.py), online against the real server
core in process (support/inprocess.py); clicks are counted as a player makes them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pygame
import pytest
from support.client_driver import Driver
from support.inprocess import InProcessServer

from mineduel.client.online_client import FoundServer, HostInfo, LanRoom, OnlineServices
from mineduel.client.scenes.game import GameScene
from mineduel.client.scenes.lobby_paint import seal_text, seat_title
from mineduel.client.scenes.lobby_seats import SCAN_EVERY, split_address_code
from mineduel.client.scenes.name_popup import NameField, NamePopup, default_name
from mineduel.client.scenes.online import OnlineScene
from mineduel.client.tokens import TokenStore


class Friend:
    """One app with online services on an in-process server; ``clicks`` counts what the player clicked."""

    def __init__(self, tmp_path: Path, srv: InProcessServer, *, name: str | None = "Mina", found: list[FoundServer] | None = None,
                 addresses: tuple[str, ...] = ("192.168.1.5",), only_loopback: bool = False, join: str | None = None,
                 size: tuple[int, int] = (390, 844)) -> None:
        self.srv = srv
        self.found = found or []
        self.scans = 0
        self.copied: list[str] = []

        def discover(done):
            self.scans += 1
            done(list(self.found))

        public = addresses[0] if addresses else "127.0.0.1"
        self.services = OnlineServices(
            connect=srv.connector(), tokens=TokenStore(tmp_path / "data"), discover=discover,
            start_host=lambda: HostInfo(47650, public, lambda: None, 47651, addresses, only_loopback),
            clipboard=lambda text: self.copied.append(text) or True)
        self.d = Driver(tmp_path, language="en", join=join, size=size, online_services=lambda: self.services)
        self.d.app.ctx.settings = replace(self.d.app.ctx.settings, player_name=name)
        self.clicks = 0

    def click(self, name: str) -> None:
        self.clicks += 1
        self.d.click_named(name)
        self.d.frame()

    @property
    def lobby(self) -> OnlineScene:
        return next(s for s in self.d.app.stack.scenes if isinstance(s, OnlineScene))

    @property
    def popup(self):
        return self.d.app.stack.popup

    def close(self) -> None:
        self.d.close()


@pytest.fixture
def srv() -> InProcessServer:
    return InProcessServer()


def _listed_room(srv: InProcessServer, name: str = "Ann") -> str:
    host = srv.peer()
    return host.send(type="create_room", name=name, listed=True, client_seed="h")[0]["room"]


def _lan(code: str, name: str = "Ann") -> FoundServer:
    return FoundServer("192.168.1.5", 47650, "MINE DUEL (study-pc)", 1, instance="a" * 16, rooms=(LanRoom(code, name),))


# ----- the two paths, counted -------------------------------------------------------------------


def test_hosting_is_two_clicks_from_the_start_popup_and_the_room_is_listed(tmp_path, srv):
    f = Friend(tmp_path, srv)
    try:
        f.click("friend")  # the start popup's Play with a friend
        assert f.lobby.page == "home"
        f.click("host")
        assert f.lobby.page == "waiting" and f.lobby.client.room is not None
        assert f.clicks == 2
        code = f.lobby.client.room_code
        room = srv.room(code)
        assert room.listed and room.seats[0].name == "Mina"  # the host's room is created listed, with the name
        assert srv.core.rooms.lobby.listed_rooms(8) == [(code, "Mina")]
    finally:
        f.close()


def test_joining_is_two_clicks_from_the_start_popup(tmp_path, srv):
    code = _listed_room(srv, "Ann")
    f = Friend(tmp_path, srv, name="Jun", found=[_lan(code)])
    try:
        f.click("friend")
        assert f.scans == 1 and f.lobby.page == "home"  # scanned when the page opened, nothing clicked
        f.click(f"room:{code}")
        client = f.lobby.client
        assert f.lobby.page == "waiting" and client.room_code == code and f.clicks == 2
        assert client.room.opponent is not None and client.room.opponent.name == "Ann"
        assert srv.room(code).seats[1].name == "Jun"
        assert srv.core.rooms.lobby.listed_rooms(8) == []  # full: no longer listed
    finally:
        f.close()


def test_a_clicked_link_lands_on_the_room_with_join_focused(tmp_path, srv):
    code = _listed_room(srv)
    f = Friend(tmp_path, srv, name="Jun", join=f"mineduel://192.168.1.5:47650/join/{code}")
    try:
        f.d.frame()
        lobby = f.lobby
        assert lobby.page == "room" and lobby.widgets.focused() is not None and lobby.widgets.focused().name == "join"
        f.d.key(pygame.K_RETURN)  # or one click on it
        assert lobby.page == "waiting" and lobby.client.room_code == code
    finally:
        f.close()


# ----- the LAN list ----------------------------------------------------------------------------------


def test_the_home_page_rescans_every_few_seconds_while_it_shows(tmp_path, srv):
    f = Friend(tmp_path, srv)
    try:
        f.click("friend")
        assert f.scans == 1
        f.d.wait(SCAN_EVERY - 0.5)
        assert f.scans == 1
        f.d.wait(1.0)
        assert f.scans == 2
        f.found = [_lan(_listed_room(srv))]
        f.d.wait(SCAN_EVERY + 0.1)
        assert any(b.name.startswith("room:") for b in f.lobby.widgets.buttons)  # a new room appears by itself
        f.click("host")
        scans = f.scans
        f.d.wait(3 * SCAN_EVERY)
        assert f.scans == scans  # not while seated
    finally:
        f.close()


def test_rooms_are_listed_before_servers_and_at_most_four_rows(tmp_path, srv):
    rooms = tuple(LanRoom(c, n) for c, n in (("ABC234", "Ann"), ("XYZ789", ""), ("QRS234", "Bo")))
    found = [FoundServer("10.0.0.9", 47650, "Club server", 5),  # a dedicated server naming no room
             FoundServer("192.168.1.5", 47650, "MINE DUEL (study-pc)", 3, rooms=rooms)]
    f = Friend(tmp_path, srv, found=found)
    try:
        f.click("friend")
        rows = [b.name for b in f.lobby.widgets.buttons if b.name.startswith(("room:", "server:"))]
        assert rows == ["room:ABC234", "room:XYZ789", "room:QRS234", "server:10.0.0.9:47650"]
        labels = [b.label() for b in f.lobby.widgets.buttons if b.name.startswith("room:")]
        assert labels == ["Ann's game", "A player's game", "Bo's game"]
        f.found = [FoundServer("192.168.1.5", 47650, "s", 9, rooms=tuple(LanRoom(f"ABC23{i}", "x") for i in "2345678"))]
        f.d.wait(SCAN_EVERY + 0.1)
        assert sum(b.name.startswith("room:") for b in f.lobby.widgets.buttons) == 4
    finally:
        f.close()


def test_a_long_name_from_the_lan_is_shortened_to_leave_the_code_its_room(tmp_path, srv):
    f = Friend(tmp_path, srv, found=[_lan("ABC234", "W" * 32)])
    try:
        f.click("friend")
        label = f.lobby.widgets.by_name("room:ABC234").label()
        assert label.endswith("...'s game") and f.d.app.ctx.fonts.width(label, 16, True) <= 374 - 56 - 110
    finally:
        f.close()


def test_nothing_waiting_says_so(tmp_path, srv):
    f = Friend(tmp_path, srv)
    try:
        f.click("friend")
        assert "empty_y" in f.lobby.ys and f.lobby.found == []
        f.d.app.render()
    finally:
        f.close()


# ----- the one field ---------------------------------------------------------------------------------


def test_the_field_takes_an_address_and_a_code_and_joins(tmp_path, srv):
    code = _listed_room(srv)
    f = Friend(tmp_path, srv)
    try:
        f.click("friend")
        f.lobby._connect_typed(f"192.168.1.5:47650 {code.lower()}")
        f.d.frame()
        assert f.lobby.page == "waiting" and f.lobby.client.room_code == code
    finally:
        f.close()


def test_a_code_alone_joins_on_the_one_lan_server_or_asks_for_the_address(tmp_path, srv):
    code = _listed_room(srv)
    f = Friend(tmp_path, srv)
    try:
        f.click("friend")
        f.lobby._connect_typed(code)
        assert f.lobby.notice() == ("friend.code_needs_address", {})  # no server known: nowhere to join
        f.found = [FoundServer("192.168.1.5", 47650, "MINE DUEL (study-pc)", 1)]  # one server, naming no room
        f.d.wait(SCAN_EVERY + 0.1)
        f.lobby._connect_typed(code)
        f.d.frame()
        assert f.lobby.page == "waiting" and f.lobby.client.room_code == code
    finally:
        f.close()


def test_an_address_alone_opens_the_server_page_and_garbage_says_what_to_type(tmp_path, srv):
    f = Friend(tmp_path, srv)
    try:
        f.click("friend")
        f.lobby._connect_typed("what is this")
        assert f.lobby.notice() == ("friend.bad_input", {})
        f.lobby._connect_typed("192.168.1.5:47650")
        f.d.frame()
        assert f.lobby.page == "server"
    finally:
        f.close()


def test_split_address_code():
    assert split_address_code("192.168.1.5:47650 ABC234") == ("192.168.1.5:47650", "ABC234")
    assert split_address_code("[fd00::2]:47650/abc234") == ("[fd00::2]:47650", "abc234")
    assert split_address_code("ABC234") is None


# ----- names -----------------------------------------------------------------------------------------


def test_the_name_is_asked_once_then_the_host_goes_on_with_it(tmp_path, srv):
    f = Friend(tmp_path, srv, name=None)
    try:
        f.click("friend")
        f.click("host")
        popup = f.popup
        assert isinstance(popup, NamePopup) and f.lobby.page == "home"  # nothing happened yet, nothing lost
        popup.field.set_text("")
        for ch in "Mina 민아":
            f.d.post(pygame.TEXTINPUT, text=ch)
            f.d.frame()
        assert popup.field.text == "Mina 민아"  # any script, not only ASCII
        f.click("name_ok")
        assert f.popup is None and f.lobby.page == "waiting" and f.clicks == 3  # the first time only: one more
        assert f.d.app.ctx.settings.player_name == "Mina 민아"
        assert srv.room(f.lobby.client.room_code).seats[0].name == "Mina 민아"
        assert f.d.app.ctx.settings_store.load().player_name == "Mina 민아"  # kept
        f.d.click_named("leave")
        f.d.frame()
        f.d.click_named("back") if f.lobby.page != "home" else None
        f.d.frame()
        f.d.click_named("host")
        assert f.popup is None  # never asked again
    finally:
        f.close()


def test_skip_joins_without_a_name_and_is_not_asked_again_in_this_run(tmp_path, srv):
    code = _listed_room(srv)
    f = Friend(tmp_path, srv, name=None, found=[_lan(code)])
    try:
        f.click("friend")
        f.click(f"room:{code}")
        assert isinstance(f.popup, NamePopup)
        f.click("name_skip")
        assert f.lobby.page == "waiting" and srv.room(code).seats[1].name == ""
        assert f.d.app.ctx.settings.player_name is None and f.services.name_skipped
        f.d.click_named("leave")
        f.d.frame()
        f.lobby.seats.with_name(lambda: None)
        assert f.popup is None
    finally:
        f.close()


def test_escape_is_skip_and_a_name_too_long_keeps_the_popup(tmp_path, srv):
    f = Friend(tmp_path, srv, name=None)
    try:
        f.click("friend")
        f.click("host")
        popup = f.popup
        popup._submit("x" * 21)
        assert f.popup is popup and popup.problem and f.d.app.ctx.settings.player_name is None
        f.d.app.render()
        f.d.key(pygame.K_ESCAPE)
        assert f.popup is None and f.lobby.page == "waiting"
    finally:
        f.close()


def test_the_suggested_name_is_the_os_user_trimmed():
    assert default_name(lambda: "mina_kim") == "Mina kim"
    assert default_name(lambda: "x" * 40) == "X" + "x" * 19
    assert default_name(lambda: "") == ""

    def nobody() -> str:
        raise KeyError("uid 1234")

    assert default_name(nobody) == ""


def test_the_name_field_takes_every_printable_character():
    field = NameField(pygame.Rect(0, 0, 10, 10), lambda: "", max_len=20)
    field.set_text("김민아\x00 ミナ\u200b 米娜")
    assert field.text == "김민아 ミナ 米娜"


def test_a_kiosk_never_asks(tmp_path, srv):
    from mineduel.client.scenes.base import Allowed
    from mineduel.client.scenes.name_popup import needs_name

    f = Friend(tmp_path, srv, name=None)
    try:
        ctx = f.d.app.ctx
        assert needs_name(ctx, False) and not needs_name(ctx, True)
        ctx.allowed = Allowed(save_settings=False)
        assert not needs_name(ctx, False)
    finally:
        f.close()


def test_seat_titles_show_the_names_given():
    def t(key: str, **kw: object) -> str:
        return {"status.you": "You", "status.opponent": "Opponent"}.get(key, f"{kw.get('name')} (you)")

    class Seat:
        def __init__(self, name: str) -> None:
            self.name = name

    assert seat_title(t, "me", Seat("Mina")) == "Mina (you)"
    assert seat_title(t, "me", Seat("")) == "You"
    assert seat_title(t, "opponent", Seat("Ann\x00")) == "Ann"
    assert seat_title(t, "opponent", None) == "Opponent"


# ----- the waiting room ---------------------------------------------------------------------------


def test_a_hosted_game_shows_the_other_addresses_and_the_loopback_note(tmp_path, srv):
    f = Friend(tmp_path, srv, addresses=("192.168.1.5", "10.8.0.2", "fd00::2"))
    try:
        f.click("friend")
        f.click("host")
        notes = [text for text, _warn in f.lobby.host_notes()]
        assert notes == ["Hosting on this computer: 192.168.1.5:47650",
                         "Or, on another network: 10.8.0.2:47650, [fd00::2]:47650"]
        assert f.lobby.client.invite.startswith("mineduel://")
        f.d.app.render()
    finally:
        f.close()
    g = Friend(tmp_path / "g", srv, addresses=(), only_loopback=True)
    try:
        g.click("friend")
        g.click("host")
        assert ("No network found: only a player on this computer can join.", True) in g.lobby.host_notes()
        g.d.app.render()
    finally:
        g.close()


def test_the_fairness_seal_shows_8_digits_and_copies_the_whole_value(tmp_path, srv):
    assert seal_text("9A3F07C1" + "0" * 56) == "9a3f 07c1"
    assert seal_text("") == ""
    f = Friend(tmp_path, srv)
    try:
        f.click("friend")
        f.click("host")
        commitment = f.lobby.client.room.next_commitment
        assert len(commitment) == 64
        f.click("copy_seal")
        assert f.copied == [commitment] and f.lobby.seal_copied is True
        f.d.app.render()
        for code in ("ko", "ja", "zh-CN", "en"):
            assert f.d.app.ctx.tr.language  # the seal's words exist in every language
            f.d.app.ctx.tr.set_language(code)
            assert f.d.app.ctx.t("friend.seal") and f.d.app.ctx.t("friend.seal_hint")
    finally:
        f.close()


def test_the_landing_page_fits_a_small_window(tmp_path, srv):
    """320×568: Host, the list and the field are on the first screen (no scrolling needed)."""
    code = _listed_room(srv)
    f = Friend(tmp_path, srv, found=[_lan(code)], size=(320, 568))
    try:
        f.click("friend")
        lobby = f.lobby
        visible = 568 / f.d.app.viewport.mapping.scale
        for name in ("host", f"room:{code}", "connect"):
            assert lobby.widgets.by_name(name).rect.bottom <= visible, name
    finally:
        f.close()


def test_the_match_carries_the_opponents_name_to_the_match_screen(tmp_path, srv):
    """match_start's opponent name reaches OnlineMatch.opponent_name (what the player card shows)."""
    host = srv.peer()
    # The server refuses a name with a control character (bad_name, PROTOCOL.md §4), so this one is
    # plain; a hostile server's control characters are tests/client/test_hostile_server.py's.
    code = host.send(type="create_room", name="Ann", listed=True, client_seed="h")[0]["room"]
    f = Friend(tmp_path, srv, name="Jun", found=[_lan(code)])
    try:
        f.click("friend")
        f.click(f"room:{code}")
        f.click("ready")
        host.send(type="ready", client_seed="h-2")
        f.d.frame()
        match = f.lobby.client.match
        assert match is not None and match.opponent_name == "Ann"
        f.d.wait(0.5)
        game = f.d.app.stack.top
        assert isinstance(game, GameScene)
        assert game.paint.card_name(False, "status.opponent") == "Ann"  # the opponent's card shows it
        assert game.paint.card_name(True, "status.you") == f.d.app.ctx.t("status.you")
        assert host.last("match_start")["opponent"]["name"] == "Jun"
    finally:
        f.close()
