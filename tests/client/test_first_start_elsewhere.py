"""U1 when the first start does not open on the board: an invite link (``mine-duel --join`` or a
link opened by the system) or ``--watch``. A new player is asked for the language first there too,
and the screen underneath follows the choice — nobody's first screen is in a default language they
did not pick — while a player who has chosen before goes straight on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.client_driver import Driver
from support.inprocess import InProcessServer

from mineduel.client import i18n
from mineduel.client.online_client import OnlineServices
from mineduel.client.scenes.online import OnlineScene
from mineduel.client.scenes.popups import LanguagePopup
from mineduel.client.tokens import TokenStore

CATALOGS = {code: i18n.load_catalog(code) for code in i18n.LANGUAGES}


def _services(srv: InProcessServer, folder: Path) -> OnlineServices:
    return OnlineServices(connect=srv.connector(), tokens=TokenStore(folder / "data"), discover=lambda done: done([]))


def _room(srv: InProcessServer) -> str:
    return srv.peer().send(type="create_room", name="Ann", listed=False, client_seed="h")[0]["room"]


def _lobby(d: Driver) -> OnlineScene:
    return next(s for s in d.app.stack.scenes if isinstance(s, OnlineScene))


@pytest.mark.parametrize("how", ["join", "watch"])
def test_a_first_start_from_a_link_asks_the_language_before_the_online_screen(tmp_path, how):
    srv = InProcessServer()
    link = f"mineduel://127.0.0.1:47650/join/{_room(srv)}"
    d = Driver(tmp_path, language=None, online_services=lambda: _services(srv, tmp_path), **{how: link})
    try:
        d.frame()
        popup = d.app.stack.popup
        assert isinstance(popup, LanguagePopup) and popup.first_run and not popup.closable
        assert d.app.stack.top is not d.app.game  # the link's screen (online or watching) waits underneath
        d.click_button("lang:ko")
        d.frame()
        assert d.app.stack.popup is None or not isinstance(d.app.stack.popup, LanguagePopup)
        assert d.app.translator.language == "ko"
        saved = json.loads((tmp_path / "settings.json").read_text(encoding="utf-8"))
        assert saved["language"] == "ko"  # remembered: the next start asks nothing
        assert d.app.ctx.t("language.picker_title") == CATALOGS["ko"]["language.picker_title"]
    finally:
        d.close()


def test_a_first_start_from_a_link_can_still_join_after_choosing(tmp_path):
    srv = InProcessServer()
    code = _room(srv)
    d = Driver(tmp_path, language=None, online_services=lambda: _services(srv, tmp_path),
               join=f"mineduel://127.0.0.1:47650/join/{code}")
    try:
        d.frame()
        d.click_button("lang:ja")
        d.frame()
        lobby = _lobby(d)
        assert lobby.page == "room"  # the link's room, as for a player who chose before
        join = lobby.widgets.by_name("join")
        assert join.label() == CATALOGS["ja"][_join_key(join.label(), "ja")]
    finally:
        d.close()


def _join_key(label: str, code: str) -> str:
    """The catalog key whose Japanese text the Join button shows (so the test names no English)."""
    keys = [key for key, text in CATALOGS[code].items() if text == label]
    assert keys, f"{label!r} is not a {code} catalog text"
    return keys[0]


def test_a_player_who_chose_before_is_not_asked_again(tmp_path):
    srv = InProcessServer()
    (tmp_path / "settings.json").write_text(json.dumps({"language": "zh-CN"}), encoding="utf-8")
    d = Driver(tmp_path, language=None, online_services=lambda: _services(srv, tmp_path),
               join=f"mineduel://127.0.0.1:47650/join/{_room(srv)}")
    try:
        d.frame()
        assert not isinstance(d.app.stack.popup, LanguagePopup)
        assert d.app.translator.language == "zh-CN"
    finally:
        d.close()


def test_a_language_given_on_the_command_line_is_not_asked_again(tmp_path):
    srv = InProcessServer()
    d = Driver(tmp_path, language="ja", online_services=lambda: _services(srv, tmp_path),
               join=f"mineduel://127.0.0.1:47650/join/{_room(srv)}")
    try:
        d.frame()
        assert not isinstance(d.app.stack.popup, LanguagePopup)
    finally:
        d.close()
