"""The profile and leaderboard screens and the player key's export/import (issue 20), driven as a
player would, on the scripted §17 server (support/players_fake.py)."""

from __future__ import annotations

import json

import pygame
import pytest
from support.players_fake import App, PlayersFake, rating

from mineduel.client.player_key import FILE_NAME, KeyStore, export_text, new_key, server_key
from mineduel.client.scenes.leaderboard import LeaderboardScene
from mineduel.client.scenes.profile import ProfileScene
from mineduel.client.scenes.profile_keys import ExportKeyPopup, ImportKeyPopup
from mineduel.client.scenes.rating_words import change_text, fit_name, rating_text

LONG = "가나다라마바사아자차카타파하가나다라마바"  # 20 Hangul syllables: the longest name, wide glyphs
NAMES = (LONG, "さくら", "王小明", "Maximilian-Alexander", "ÉlodieFontaine", "山田太郎さん")


@pytest.fixture
def fake():
    return PlayersFake()


def _profile(player: str, display: str, recent: int = 12) -> dict:
    return {"type": "profile", "player": player, "display": display, "rating": rating(1623.4, 87.2), "games": 48,
            "wins": 27, "losses": 18, "draws": 3,
            "recent": [{"match_id": f"{i:016x}", "opponent": f"{NAMES[i % len(NAMES)]}#{i:04x}",
                        "result": ("win", "loss", "draw")[i % 3], "change": (12.5, -9.8, 0.4)[i % 3],
                        "at": 1_700_000_000.0 - i * 86_400} for i in range(recent)]}


def _board(me_player: str | None, count: int = 100, me_rank: int | None = 57) -> dict:
    top = [{"rank": i + 1, "player": f"{i:016x}", "display": f"{NAMES[i % len(NAMES)]}#{i:04x}",
            "rating": 2140.0 - i * 9.3, "games": 300 - i * 2} for i in range(count)]
    if me_player is not None and me_rank is not None and me_rank <= count:
        top[me_rank - 1]["player"] = me_player
    me = None if me_rank is None else {"rank": me_rank, "rating": 1623.4}
    return {"type": "leaderboard", "top": top, "me": me}


# ----- words ---------------------------------------------------------------------------------------------


def test_ratings_read_the_same_everywhere():
    assert rating_text(1523.4, False) == "1523" and rating_text(1499.6, True) == "1500?"
    assert change_text(62.3) == "+62" and change_text(-8.6) == "-9" and change_text(0.0) == "+0" and change_text(-0.2) == "+0"


@pytest.mark.parametrize("size", [(390, 844), (320, 568)])
def test_long_and_cjk_names_fit_and_keep_their_tag(tmp_path, fake, size):
    a = App(tmp_path, fake, size=size)
    try:
        fonts = a.d.app.ctx.fonts
        for name in NAMES:
            text, px = fit_name(fonts, f"{name}#3f9c", 15, 150)
            assert fonts.width(text, px, True) <= 150 and text.endswith("#3f9c")
    finally:
        a.close()


# ----- profile --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("size", "language"), [((390, 844), "en"), ((320, 568), "ja"), ((390, 844), "ko"),
                                                ((320, 568), "zh-CN")])
def test_the_own_profile_shows_rating_results_and_recent_matches(tmp_path, fake, size, language):
    a = App(tmp_path, fake, name=LONG, size=size, language=language)
    try:
        me = a.players.identity
        fake.profiles[me.player] = _profile(me.player, me.display)
        a.click("profile")
        scene = a.top
        assert isinstance(scene, ProfileScene)
        assert fake.requests("get_profile")[-1].get("player") is None  # my own
        profile = scene._profile()
        assert profile is not None and profile.games == 48 and len(profile.recent) == 12
        assert scene.rows.count == 12 and scene.rows.limit() > 0  # more than fits: it scrolls
        a.d.key(pygame.K_END)
        assert scene.rows.offset == scene.rows.limit()
        a.d.app.screenshot()
        a.d.key(pygame.K_ESCAPE)
        assert a.top is a.lobby
    finally:
        a.close()


def test_a_profile_the_server_refuses_is_a_message_and_nothing_else(tmp_path, fake):
    fake.replies["get_profile"] = lambda msg: [{"type": "error", "code": "storage_unavailable", "message": "",
                                                "request": "get_profile"}]
    a = App(tmp_path, fake)
    try:
        a.click("profile")
        assert a.top.players.profile_error == "online.error.storage_unavailable"
        assert a.client.connected and a.players.identity is not None
    finally:
        a.close()


@pytest.mark.parametrize("broken", [
    {"type": "profile", "player": "zz", "display": "x", "rating": {"value": 1, "deviation": 1, "provisional": True},
     "games": 0, "wins": 0, "losses": 0, "draws": 0, "recent": []},
    {"type": "profile", "player": "0" * 16, "display": "x", "rating": {"value": "high"}, "games": 0, "wins": 0,
     "losses": 0, "draws": 0, "recent": []},
    {"type": "leaderboard", "top": [{"rank": 1}], "me": None},
    {"type": "leaderboard", "top": [], "me": {"rank": -4, "rating": 1e400}},
])
def test_a_hostile_profile_or_leaderboard_is_a_clear_error_and_nothing_changes(tmp_path, fake, broken):
    a = App(tmp_path, fake)
    try:
        key_before = (a.folder / FILE_NAME).read_bytes()
        settings_before = a.d.app.ctx.settings
        kind = broken["type"]
        fake.replies["get_" + kind] = lambda msg: []  # the broken line below is the answer
        a.click(kind)
        fake.push_raw(json.dumps(broken).encode())
        a.frames(3)
        assert a.client.error == "online.error.bad_server"  # said as any broken line is
        assert a.players.profile is None and a.players.leaderboard is None
        assert a.top is a.lobby and a.lobby.page == "error"  # the lobby's error page: why, Retry, Back
        assert (a.folder / FILE_NAME).read_bytes() == key_before and a.d.app.ctx.settings == settings_before
    finally:
        a.close()


# ----- leaderboard ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [(390, 844), (320, 568)])
def test_the_leaderboard_scrolls_the_top_100_and_shows_my_place_first(tmp_path, fake, size):
    a = App(tmp_path, fake, size=size)
    try:
        fake.leaderboard = _board(a.players.identity.player)
        a.click("leaderboard")
        scene = a.top
        assert isinstance(scene, LeaderboardScene) and scene.rows.count == 100
        line, note = scene._me_text()
        assert "57" in line and "1623" in line and note is None
        first = scene.rows.visible()
        assert first.start == 0
        a.d.post(pygame.MOUSEWHEEL, x=0, y=-3, flipped=False, precise_y=-3.0, precise_x=0.0)  # a wheel over the list
        a.d.post(pygame.MOUSEMOTION, pos=a.d.to_window(scene.rows.rect.center), rel=(0, 0), buttons=(0, 0, 0))
        a.frames(2)
        a.d.key(pygame.K_DOWN)
        a.d.key(pygame.K_PAGEDOWN)
        assert scene.rows.offset == scene.rows.step + scene.rows.rect.height - scene.rows.step  # arrows scroll the list
        a.d.key(pygame.K_END)
        assert scene.rows.offset == scene.rows.limit() and 99 in scene.rows.visible()
        a.d.key(pygame.K_HOME)
        assert scene.rows.offset == 0
        a.d.app.screenshot()
    finally:
        a.close()


def test_a_tap_on_a_row_opens_that_players_profile(tmp_path, fake):
    a = App(tmp_path, fake)
    try:
        fake.leaderboard = _board(a.players.identity.player)
        fake.profiles["0000000000000002"] = _profile("0000000000000002", "王小明#0002", recent=3)
        a.click("leaderboard")
        scene = a.top
        a.d.click(a.d.to_window(scene.rows.row_rect(2).center))
        a.frames(2)
        profile = a.top
        assert isinstance(profile, ProfileScene) and profile.player == "0000000000000002"
        assert fake.requests("get_profile")[-1]["player"] == "0000000000000002"
        assert profile._profile().display == "王小明#0002"
        assert not any(b.name == "key_export" for b in profile.widgets.buttons)  # another player's: no key buttons
    finally:
        a.close()


def test_not_ranked_says_why(tmp_path, fake):
    a = App(tmp_path, fake)
    try:
        fake.leaderboard = _board(None, count=5, me_rank=None)
        a.click("leaderboard")
        line, note = a.top._me_text()
        assert line == a.d.app.ctx.t("leaderboard.not_ranked") and note == a.d.app.ctx.t("leaderboard.not_ranked_note")
    finally:
        a.close()


# ----- the player key: export and import --------------------------------------------------------------------


def _own_profile(a: App, fake) -> ProfileScene:
    me = a.players.identity
    fake.profiles[me.player] = _profile(me.player, me.display, recent=0)
    a.click("profile")
    return a.top


def test_export_copies_the_checked_text_of_the_key(tmp_path, fake):
    copied: list[str] = []
    a = App(tmp_path, fake)
    try:
        a.services.clipboard = lambda text: copied.append(text) or True
        _own_profile(a, fake)
        a.click("key_export")
        popup = a.d.app.stack.popup
        assert isinstance(popup, ExportKeyPopup)
        a.click("export_copy")
        key = json.loads((a.folder / FILE_NAME).read_text())["key"]
        assert copied == [export_text(key)] and popup.copied is True
    finally:
        a.close()


def test_import_round_trip_replaces_the_identity_after_a_confirmation(tmp_path, fake):
    a = App(tmp_path, fake)
    try:
        old = json.loads((a.folder / FILE_NAME).read_text())["key"]
        other = new_key()
        _own_profile(a, fake)
        a.click("key_import")
        popup = a.d.app.stack.popup
        assert isinstance(popup, ImportKeyPopup)
        popup.field.set_text(export_text(other))
        a.click("import_go")
        assert popup.pending == other and json.loads((a.folder / FILE_NAME).read_text())["key"] == old  # asked first
        a.click("import_replace")
        a.frames(4)
        assert json.loads((a.folder / FILE_NAME).read_text())["key"] == other
        assert fake.requests("identify")[-1]["key"] == server_key(other, "127.0.0.1", 47650)  # a new connection, the new identity
        assert a.players.identity is not None and fake.requests("identify")[0]["key"] != fake.requests("identify")[-1]["key"]
    finally:
        a.close()


@pytest.mark.parametrize(("text", "problem"), [("", "player.import.error.empty"), ("hello", "player.import.error.not_a_key")])
def test_import_refuses_bad_text_and_changes_nothing(tmp_path, fake, text, problem):
    a = App(tmp_path, fake)
    try:
        before = (a.folder / FILE_NAME).read_bytes()
        _own_profile(a, fake)
        a.click("key_import")
        popup = a.d.app.stack.popup
        popup.field.set_text(text)
        a.click("import_go")
        assert popup.problem == problem and popup.pending is None and a.d.app.stack.popup is popup
        assert (a.folder / FILE_NAME).read_bytes() == before
        assert len(fake.requests("identify")) == 1
    finally:
        a.close()


def test_import_of_a_mistyped_text_is_caught_by_its_check(tmp_path, fake):
    a = App(tmp_path, fake)
    try:
        before = (a.folder / FILE_NAME).read_bytes()
        text = export_text(new_key())
        typo = text[:12] + ("x" if text[12] != "x" else "y") + text[13:]
        _own_profile(a, fake)
        a.click("key_import")
        popup = a.d.app.stack.popup
        popup.field.set_text(typo)
        a.click("import_go")
        assert popup.problem == "player.import.error.typo" and (a.folder / FILE_NAME).read_bytes() == before
    finally:
        a.close()


def test_import_over_a_damaged_file_needs_no_second_question(tmp_path, fake):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / FILE_NAME).write_text("garbage")
    a = App(tmp_path, fake)
    try:
        a.search()
        a.click("key_import")
        other = new_key()
        popup = a.d.app.stack.popup
        popup.field.set_text(export_text(other))
        a.click("import_go")
        a.frames(4)
        assert KeyStore(folder).load().key == other and (folder / (FILE_NAME + ".damaged")).read_text() == "garbage"
        assert fake.requests("identify")[-1]["key"] == server_key(other, "127.0.0.1", 47650)
    finally:
        a.close()
