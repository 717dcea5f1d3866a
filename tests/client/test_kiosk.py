"""Kiosk mode (docs/KIOSK.md): no way out but the admin chord, back to the language picker after idle
time, nothing written, touch input, and a config file that can never crash the client.

The real app on a fake clock (client_driver.Driver), real pygame events, a letterboxed landscape
window unless a test says otherwise.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pygame
import pytest
from support.client_driver import Driver, play_to_the_end

from mineduel.client import kiosk as kiosk_mode
from mineduel.client.i18n import LANGUAGES
from mineduel.client.kiosk import DEFAULT_CHORD, Chord, KioskConfig, load_config, parse_config
from mineduel.client.scenes.popups import LanguagePopup, MenuPopup, RulesPopup
from mineduel.client.scenes.result_popup import ResultPopup

CHORD_MODS = pygame.KMOD_LCTRL | pygame.KMOD_LALT | pygame.KMOD_LSHIFT
LANDSCAPE = (1280, 800)


@pytest.fixture(autouse=True)
def sdl_hints(monkeypatch):
    """The SDL hints a kiosk sets are undone after each test."""
    for name in kiosk_mode.SDL_HINTS:
        monkeypatch.setenv(name, os.environ.get(name, kiosk_mode.SDL_HINTS[name]))


def make(tmp_path: Path, size: tuple[int, int] | None = LANDSCAPE, **config: object) -> Driver:
    return Driver(tmp_path, size=size, kiosk=KioskConfig(**config))  # type: ignore[arg-type]


@pytest.fixture
def kiosk(tmp_path):
    d = make(tmp_path)
    yield d
    d.close()


def pick_and_start(d: Driver, language: str = "en") -> None:
    d.click_button(f"lang:{language}")
    d.wait(0.3)
    d.click_button("tutorial.skip")  # every new player is offered the tutorial first
    d.click_button("start")
    d.wait(0.3)


def menu_keys(d: Driver) -> list[str]:
    d.key(pygame.K_ESCAPE)
    popup = d.app.stack.popup
    assert isinstance(popup, MenuPopup)
    keys = [item.key for item in popup.items]
    popup.close()
    d.frame()
    return keys


def hold_chord(d: Driver, seconds: float, mods: int = CHORD_MODS, key: int = pygame.K_q) -> None:
    d.post(pygame.KEYDOWN, key=key, mod=mods, unicode="")
    d.frame(0.0)  # the hold starts now
    d.wait(seconds, step=0.1)


# ----- no way out for players ---------------------------------------------------------------------


@pytest.mark.parametrize("etype", [pygame.QUIT, pygame.WINDOWCLOSE], ids=["QUIT", "WINDOWCLOSE"])
def test_close_requests_are_ignored(kiosk, etype):
    """A window-manager close request (pygame.QUIT or WINDOWCLOSE) leaves the kiosk running."""
    kiosk.post(etype, window=None)
    assert kiosk.frame() is not None
    assert kiosk.app.running


def test_escape_and_alt_f4_keys_do_not_quit(kiosk):
    """Escape and an Alt+F4 key event reach the game as ordinary keys and never end it."""
    pick_and_start(kiosk)
    kiosk.key(pygame.K_F4, pygame.KMOD_LALT)
    kiosk.key(pygame.K_ESCAPE)
    assert isinstance(kiosk.app.stack.popup, MenuPopup)
    kiosk.key(pygame.K_ESCAPE)
    kiosk.key(pygame.K_ESCAPE)
    assert kiosk.frame() is not None and kiosk.app.running


def test_menu_offers_no_quit_and_the_quit_callback_does_nothing(kiosk):
    """The menu has no Quit game (nor Online play by default), and the context's quit is inert."""
    pick_and_start(kiosk)
    keys = menu_keys(kiosk)
    assert "menu.quit" not in keys and "menu.online" not in keys
    assert {"menu.rules", "menu.language", "menu.settings", "action.restart"} <= set(keys)
    kiosk.app.ctx.quit()
    assert kiosk.frame() is not None and kiosk.app.running


def test_online_entry_appears_when_the_config_enables_it(tmp_path):
    """online = true puts Online play back in the menu, still without Quit game."""
    d = make(tmp_path, online=True)
    try:
        pick_and_start(d)
        keys = menu_keys(d)
        assert "menu.online" in keys and "menu.quit" not in keys
    finally:
        d.close()


# ----- the admin chord -----------------------------------------------------------------------------


def test_admin_chord_held_for_the_hold_time_quits(kiosk):
    """Holding Ctrl+Alt+Shift+Q quits only once admin_hold_seconds (2 s) have passed."""
    hold_chord(kiosk, 1.9)
    assert kiosk.app.running and kiosk.app.kiosk.overlay_visible
    kiosk.frame(0.15)
    assert not kiosk.app.running and kiosk.last_delay is None


def test_admin_chord_released_early_does_nothing(kiosk):
    """Letting go of a modifier before the hold time cancels the chord."""
    hold_chord(kiosk, 1.5)
    kiosk.post(pygame.KEYUP, key=pygame.K_LSHIFT, mod=pygame.KMOD_LCTRL | pygame.KMOD_LALT, unicode="")
    kiosk.wait(3.0)
    assert kiosk.app.running and not kiosk.app.kiosk.overlay_visible


def test_chord_without_every_modifier_is_an_ordinary_key(kiosk):
    """Ctrl+Alt+Q (Shift missing) held for long does not quit."""
    hold_chord(kiosk, 5.0, mods=pygame.KMOD_LCTRL | pygame.KMOD_LALT)
    assert kiosk.app.running


def test_configured_chord_and_hold_time(tmp_path):
    """admin_chord and admin_hold_seconds from the config replace the default chord."""
    d = make(tmp_path, admin_chord=Chord.parse("ctrl+shift+f12"), admin_hold_seconds=0.5)
    try:
        hold_chord(d, 3.0)  # the default chord is just keys now
        assert d.app.running
        hold_chord(d, 0.6, mods=pygame.KMOD_RCTRL | pygame.KMOD_RSHIFT | pygame.KMOD_NUM, key=pygame.K_F12)
        assert not d.app.running
    finally:
        d.close()


def test_admin_pin_prompt(tmp_path):
    """With admin_pin, the chord opens a prompt that swallows every key: a wrong PIN closes it, the right one quits."""
    d = make(tmp_path, admin_pin="2468")
    try:
        pick_and_start(d)
        mode = d.app.game.mode
        hold_chord(d, 2.1)
        assert d.app.running and d.app.kiosk.pin == ""
        for key in (pygame.K_3, pygame.K_3, pygame.K_3, pygame.K_3, pygame.K_RETURN):
            d.key(key)
        assert d.app.running and d.app.kiosk.pin is None
        assert d.app.game.mode == mode  # "3" selects the flag mode in a match: the prompt kept it
        hold_chord(d, 2.1)
        for key in (pygame.K_2, pygame.K_4, pygame.K_KP6, pygame.K_9, pygame.K_BACKSPACE, pygame.K_8, pygame.K_RETURN):
            d.key(key)
        assert not d.app.running
    finally:
        d.close()


def test_pin_prompt_closes_by_itself(tmp_path):
    """An abandoned PIN prompt closes after 30 s and the game goes on."""
    d = make(tmp_path, admin_pin="2468")
    try:
        hold_chord(d, 2.1)
        d.frame(29.0)
        assert d.app.kiosk.pin == ""
        d.frame(1.5)
        assert d.app.kiosk.pin is None and d.app.running
    finally:
        d.close()


def test_sigterm_still_stops_the_client(tmp_path):
    """SIGTERM, the operator's tool, ends a running kiosk cleanly with exit status 0."""
    config = tmp_path / "kiosk.toml"
    config.write_text('idle_seconds = 60\n', encoding="utf-8")
    env = {**os.environ, "SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy", "PYGAME_HIDE_SUPPORT_PROMPT": "1"}
    # As a context manager Popen closes its stderr pipe on the way out (and waits for the process).
    with subprocess.Popen([sys.executable, "-m", "mineduel.client", "--kiosk-config", str(config), "--size", "400x700"],
                          stderr=subprocess.PIPE, text=True, env=env) as proc:
        try:
            assert proc.stderr is not None
            deadline = time.monotonic() + 60
            for line in proc.stderr:
                if "kiosk: running" in line or time.monotonic() > deadline:
                    break
            assert "kiosk: running" in line
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=30)  # reads the rest of stderr, so the client never blocks writing it
            assert proc.returncode == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


# ----- idle time and new players ---------------------------------------------------------------------


def test_idle_time_brings_back_the_language_picker(kiosk):
    """After idle_seconds without input the match is dropped and a new player sees the language picker."""
    app = kiosk.app
    pick_and_start(kiosk)
    kiosk.tap(kiosk.cell_pos(27))
    assert app.game.controller is not None and app.game.view().revealed >> 27 & 1
    kiosk.frame(79.0)
    assert not app.kiosk.warning and app.game.controller is not None
    kiosk.frame(2.0)
    assert app.kiosk.warning and app.kiosk.overlay_visible
    kiosk.frame(9.5)
    popup = app.stack.popup
    assert isinstance(popup, LanguagePopup) and popup.first_run
    assert app.game.controller is None and app.stack.scenes == [app.game]
    assert app.ctx.settings.language is None and app.translator.language == LANGUAGES[0]
    assert app.kiosk.resets == 1


def test_warning_touch_keeps_the_game_and_does_nothing_else(kiosk):
    """A tap during the "Still playing?" countdown dismisses it without acting on the board, and the idle time restarts."""
    app = kiosk.app
    pick_and_start(kiosk)
    before = app.game.view().revealed
    kiosk.frame(85.0)
    assert app.kiosk.warning
    kiosk.tap(kiosk.cell_pos(27))
    kiosk.frame()
    assert not app.kiosk.warning and app.game.view().revealed == before
    kiosk.frame(60.0)
    assert app.game.controller is not None and app.kiosk.resets == 0
    kiosk.tap(kiosk.cell_pos(27))
    assert app.game.view().revealed >> 27 & 1


def test_untouched_start_screen_is_not_reset_again(kiosk):
    """The language picker waiting for a player is left alone however long nobody comes."""
    kiosk.frame(500.0)
    kiosk.frame(500.0)
    assert kiosk.app.kiosk.resets == 0 and isinstance(kiosk.app.stack.popup, LanguagePopup)


def test_idle_seconds_zero_never_resets(tmp_path):
    """idle_seconds = 0 turns the return to the start screen off."""
    d = make(tmp_path, idle_seconds=0.0)
    try:
        pick_and_start(d)
        d.frame(10_000.0)
        assert d.app.game.controller is not None and d.app.kiosk.resets == 0
    finally:
        d.close()


def test_saved_settings_do_not_skip_the_picker(tmp_path):
    """A settings.json with a language (from a normal run) does not stop the kiosk from asking every player."""
    (tmp_path / "settings.json").write_text(json.dumps({"version": 1, "language": "en"}), encoding="utf-8")
    d = make(tmp_path)
    try:
        popup = d.app.stack.popup
        assert isinstance(popup, LanguagePopup) and popup.first_run
    finally:
        d.close()


def test_choosing_a_language_writes_no_file(tmp_path):
    """Picking a language, first and again from the menu, applies to the session and writes nothing."""
    profile = tmp_path / "profile"
    profile.mkdir()
    d = make(profile)
    try:
        pick_and_start(d, "ja")
        d.key(pygame.K_ESCAPE)
        d.click_button("menu.language")
        d.click_button("lang:zh-CN")
        assert d.app.translator.language == "zh-CN" and d.app.ctx.settings.language == "zh-CN"
        assert list(profile.rglob("*")) == []
    finally:
        d.close()


def test_language_subset_and_order_from_the_config(tmp_path):
    """languages = ["en", "ja"] offers exactly those two, in that order, with English behind the picker."""
    d = make(tmp_path, languages=("en", "ja"))
    try:
        popup = d.app.stack.popup
        assert isinstance(popup, LanguagePopup)
        assert [b.name for b in popup.widgets.buttons] == ["lang:en", "lang:ja"]
        assert d.app.translator.language == "en"
    finally:
        d.close()


def test_one_language_skips_the_picker(tmp_path):
    """With a single language there is nothing to pick: every player starts at the rules and difficulty."""
    d = make(tmp_path, languages=("ko",))
    try:
        assert isinstance(d.app.stack.popup, RulesPopup) and d.app.translator.language == "ko"
    finally:
        d.close()


def test_default_difficulty_from_the_config(tmp_path):
    """difficulty = "hard" is preselected for every player."""
    d = make(tmp_path, difficulty="hard")
    try:
        d.click_button("lang:en")
        d.click_button("tutorial.skip")
        popup = d.app.stack.popup
        assert isinstance(popup, RulesPopup) and popup.difficulty == "hard"
    finally:
        d.close()


def test_idle_reset_leaves_the_online_screens(tmp_path):
    """With online enabled, a player who walked away from the online screen is forgotten too."""
    from mineduel.client.scenes.online import OnlineScene

    d = make(tmp_path, online=True)
    try:
        pick_and_start(d)
        d.key(pygame.K_ESCAPE)
        d.click_button("menu.online")
        assert isinstance(d.app.stack.top, OnlineScene)
        d.frame(91.0)
        assert d.app.stack.scenes == [d.app.game] and isinstance(d.app.stack.popup, LanguagePopup)
    finally:
        d.close()


def test_finished_match_offers_no_export_and_keeps_the_record_only_in_the_record_folder(tmp_path):
    """A finished CPU match: no Export button and no file path shown; its record goes to record_folder."""
    records = tmp_path / "records"
    d = make(tmp_path / "profile", record_folder=records)
    try:
        pick_and_start(d)
        play_to_the_end(d)
        d.wait(1.0)
        popup = d.app.stack.popup
        assert isinstance(popup, ResultPopup)
        assert "export" not in [b.name for b in popup.widgets.buttons]
        assert popup.info.record_line() == ("", False)
        assert len(list(records.glob("*.json"))) == 1
        assert not (tmp_path / "profile").exists() or list((tmp_path / "profile").rglob("*")) == []
    finally:
        d.close()


def test_without_record_folder_nothing_is_written(tmp_path):
    """No record_folder: finished matches are not kept anywhere."""
    store = kiosk_mode.record_store(KioskConfig())
    assert store.save("m", "{}").path is None and store.export("m", "{}").path is None
    assert list(tmp_path.iterdir()) == []


# ----- window, cursor and touch ----------------------------------------------------------------------


def test_cursor_is_hidden_unless_configured(tmp_path):
    """The mouse cursor is hidden; show_cursor = true shows it (trackball kiosks)."""
    d = make(tmp_path / "a")
    assert not pygame.mouse.get_visible()
    d.close()
    d = make(tmp_path / "b", show_cursor=True)
    assert pygame.mouse.get_visible()
    d.close()


def test_no_size_means_full_screen_at_desktop_size(tmp_path):
    """Without --size the kiosk window is full screen at the desktop's size, the canvas letterboxed in it."""
    d = make(tmp_path, size=None)
    try:
        desktop = pygame.display.get_desktop_sizes()[0]
        assert pygame.display.get_window_size() == desktop
        assert pygame.display.is_fullscreen()
        assert d.app.viewport.mapping.window == desktop
    finally:
        d.close()


@pytest.mark.parametrize("size", [LANDSCAPE, (1080, 1920)], ids=["landscape", "portrait"])
def test_finger_taps_play_a_move(tmp_path, size):
    """FINGERDOWN/FINGERUP (with SDL's synthetic mouse copies) pick a language, start and explore a cell, letterboxed."""
    d = make(tmp_path, size=size)
    try:
        d.tap(d.button_pos("lang:en"))
        d.wait(0.3)
        d.tap(d.button_pos("tutorial.skip"))
        d.wait(0.3)
        d.tap(d.button_pos("start"))
        d.wait(0.3)
        d.tap(d.cell_pos(36))
        assert d.app.game.view().revealed >> 36 & 1
        assert d.app.game.message is not None and d.app.game.message[2] == "event"
    finally:
        d.close()


# ----- the config file --------------------------------------------------------------------------------


def write(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "kiosk.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_a_full_config_is_read(tmp_path):
    """Every key of the example config is read as written."""
    path = write(tmp_path, """
idle_seconds = 120
idle_warning_seconds = 15
languages = ["ja", "EN"]
difficulty = "easy"
online = true
admin_chord = "Ctrl+Meta+F12"
admin_hold_seconds = 3.5
admin_pin = "0420"
display = 1
record_folder = "/var/lib/mine-duel/records"
show_cursor = true
""")
    config, problems = load_config(path)
    assert problems == []
    assert config == KioskConfig(120.0, 15.0, ("ja", "en"), "easy", True, Chord(frozenset({"ctrl", "meta"}), "f12"), 3.5, "0420",
                                 1, Path("/var/lib/mine-duel/records"), True)


def test_the_shipped_example_config_is_valid():
    """assets/kiosk.example.toml loads without a single problem."""
    example = Path(kiosk_mode.__file__).resolve().parent.parent / "assets" / "kiosk.example.toml"
    config, problems = load_config(example)
    assert problems == []
    assert config.admin_chord == DEFAULT_CHORD


@pytest.mark.parametrize("content", [
    b"idle_seconds = = 3",
    b"\xff\xfe\x00garbage",
    b"[[[",
    b"x" * (kiosk_mode.MAX_CONFIG_BYTES + 10),
], ids=["bad-toml", "not-utf8", "broken-table", "too-large"])
def test_corrupt_config_means_defaults_and_a_log_line(tmp_path, caplog, content):
    """A file that is not a readable TOML document gives all defaults and a warning, never an exception."""
    config, problems = load_config(write(tmp_path, content))
    assert config == KioskConfig() and len(problems) == 1
    assert any(record.levelname == "WARNING" and "kiosk" in record.getMessage() for record in caplog.records)


def test_missing_or_unreadable_config_means_defaults(tmp_path):
    """A named file that does not exist, or a folder given as the file, gives the defaults with a problem noted."""
    assert load_config(tmp_path / "nope.toml") == (KioskConfig(), ["file not found; using the defaults"])
    config, problems = load_config(tmp_path)
    assert config == KioskConfig() and len(problems) == 1


def test_no_config_anywhere_means_defaults(monkeypatch, tmp_path):
    """Without --kiosk-config and with no file at the default places the defaults apply, with no problem."""
    monkeypatch.setattr(kiosk_mode, "default_config_paths", lambda: (tmp_path / "a.toml", tmp_path / "b.toml"))
    assert load_config() == (KioskConfig(), [])


@pytest.mark.parametrize(("key", "value"), [
    ("idle_seconds", -1), ("idle_seconds", 5), ("idle_seconds", "90"), ("idle_seconds", True), ("idle_seconds", float("nan")),
    ("idle_warning_seconds", 100), ("languages", []), ("languages", ["xx"]), ("languages", 3), ("difficulty", "insane"),
    ("online", "yes"), ("admin_chord", "q"), ("admin_chord", "ctrl+q"), ("admin_chord", "ctrl+ctrl+q"),
    ("admin_chord", "ctrl+alt+nosuchkey"), ("admin_chord", "ctrl+alt+shift"), ("admin_chord", "hyper+alt+q"), ("admin_chord", 7),
    ("admin_hold_seconds", 0), ("admin_hold_seconds", 99), ("admin_pin", "12"), ("admin_pin", "12ab"), ("admin_pin", "1" * 13),
    ("admin_pin", 1.5), ("display", -1), ("display", "1"), ("record_folder", "relative/path"), ("record_folder", 1),
    ("show_cursor", 1),
])
def test_each_bad_value_falls_back_to_that_keys_default(key, value):
    """A bad value is reported and replaced by that key's default; the other keys are unaffected."""
    config, problems = parse_config({key: value, "difficulty": "hard"} if key != "difficulty" else {key: value})
    assert getattr(config, key) == getattr(KioskConfig(), key)
    assert problems and all(p.startswith(f"{key}:") for p in problems)
    if key != "difficulty":
        assert config.difficulty == "hard"


def test_unknown_keys_are_reported_and_ignored():
    """A misspelt key is named in the problems rather than silently ignored."""
    config, problems = parse_config({"idle_secs": 30})
    assert config == KioskConfig() and "idle_secs" in problems[0]


def test_language_list_is_cleaned():
    """Unknown codes are dropped (reported), duplicates removed, case forgiven, order kept."""
    config, problems = parse_config({"languages": ["zh-cn", "en", "EN", "fr"]})
    assert config.languages == ("zh-CN", "en") and len(problems) == 1 and "fr" in problems[0]


def test_warning_longer_than_idle_time_is_shortened():
    """idle_warning_seconds must fit inside idle_seconds."""
    config, problems = parse_config({"idle_seconds": 20, "idle_warning_seconds": 30})
    assert config.idle_warning_seconds == 6 and len(problems) == 1


def test_pin_may_be_written_as_a_number():
    """admin_pin = 2468 (unquoted) is the same as "2468"."""
    assert parse_config({"admin_pin": 2468}) == (KioskConfig(admin_pin="2468"), [])


@pytest.mark.parametrize(("text", "shown"), [
    ("ctrl+alt+shift+q", "ctrl+alt+shift+q"), ("Shift + Control + Q", "ctrl+shift+q"), ("super+alt+delete", "alt+meta+delete"),
])
def test_chord_text_is_normalised(text, shown):
    """Chords are case- and space-insensitive, accept aliases and print in one canonical order."""
    assert str(Chord.parse(text)) == shown


def test_kiosk_check_prints_the_settings_and_fails_on_problems(tmp_path, capsys):
    """mine-duel --kiosk-check prints the settings in effect (PIN masked) and exits 1 when the file had problems."""
    from mineduel.client.app import main

    good = write(tmp_path, 'admin_pin = "2468"\n')
    assert main(["--kiosk-check", "--kiosk-config", str(good)]) == 0
    out = capsys.readouterr().out
    assert 'admin_pin = "****"' in out and "2468" not in out and "idle_seconds = 90" in out
    bad = write(tmp_path, "idle_seconds = 1\n")
    assert main(["--kiosk-check", "--kiosk-config", str(bad)]) == 1
    assert "PROBLEM: idle_seconds" in capsys.readouterr().out
