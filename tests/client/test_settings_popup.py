"""The settings popup (menu → Settings): volume, mute, player name and language, by mouse, keys and touch.

The real app on the Driver (fake clock, real pygame events). Changes apply at once and are in
settings.json afterwards (U5's rule for the language, kept for every setting); in a kiosk nothing
is written and there is no name field.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pygame
import pytest
from support.client_driver import Driver

from mineduel.client.kiosk import KioskConfig
from mineduel.client.scenes.popups import LanguagePopup, MenuPopup
from mineduel.client.scenes.settings_popup import SettingsPopup
from mineduel.client.settings import NAME_MAX
from mineduel.client.sound import Sounds


def skip_tutorial(d: Driver) -> None:
    """A first launch may offer the tutorial before the rules popup (issue 16): decline it."""
    popup = d.app.stack.popup
    if popup is not None and any(b.name == "tutorial.skip" for b in popup.widgets.buttons):
        d.click_named("tutorial.skip")
        d.wait(0.3)


class Recorder(Sounds):
    def __init__(self) -> None:
        self.cues: list[str] = []

    def play(self, cue: str) -> None:
        self.cues.append(cue)

    def available(self) -> bool:
        return True


@pytest.fixture
def d(tmp_path):
    driver = Driver(tmp_path, language="en")
    driver.app.ctx.sounds = Recorder()
    skip_tutorial(driver)
    driver.click_named("start")
    driver.wait(0.5)
    yield driver
    driver.close()


def open_settings(d: Driver) -> SettingsPopup:
    d.key(pygame.K_ESCAPE)
    assert isinstance(d.app.stack.popup, MenuPopup)
    d.click_named("menu.settings")
    d.wait(0.3)
    popup = d.app.stack.popup
    assert isinstance(popup, SettingsPopup)
    return popup


def saved(d: Driver) -> dict:
    return json.loads((Path(d.app.ctx.settings_store.path)).read_text(encoding="utf-8"))


def type_text(d: Driver, text: str) -> None:
    d.post(pygame.TEXTINPUT, text=text)
    d.frame()


def test_the_menu_offers_settings(d):
    d.key(pygame.K_ESCAPE)
    names = [b.name for b in d.app.stack.popup.widgets.buttons]
    assert "menu.settings" in names


def test_volume_steps_with_the_buttons_and_is_saved(d):
    popup = open_settings(d)
    assert d.app.ctx.settings.sound_volume == 0.7
    d.click_named("volume_up")
    d.click_named("volume_up")
    assert d.app.ctx.settings.sound_volume == 0.9
    d.click_named("volume_down")
    assert d.app.ctx.settings.sound_volume == 0.8
    assert saved(d)["sound_volume"] == 0.8
    assert d.app.ctx.sounds.cues == ["explore"] * 3  # each step is heard at the new volume
    for _ in range(5):
        d.click_named("volume_up")
    assert d.app.ctx.settings.sound_volume == 1.0  # clamped
    assert popup is d.app.stack.popup


def test_volume_keys_and_a_tap_or_drag_on_the_bar(d):
    popup = open_settings(d)
    d.key(pygame.K_MINUS)
    assert d.app.ctx.settings.sound_volume == 0.6
    d.key(pygame.K_EQUALS)  # the + key without shift
    assert d.app.ctx.settings.sound_volume == 0.7
    track = popup.bar.inflate(-28, 0)
    d.tap(d.to_window((track.left + track.width * 0.25, popup.bar.centery)))
    assert d.app.ctx.settings.sound_volume == 0.25
    assert saved(d)["sound_volume"] == 0.25
    # A drag: press at the left end, move to the right end, release there.
    d.press(d.to_window((track.left, popup.bar.centery)))
    d.frame()
    assert d.app.ctx.settings.sound_volume == 0.0
    d.post(pygame.MOUSEMOTION, pos=d.to_window((track.right + 30, popup.bar.centery)), rel=(1, 0), buttons=(1, 0, 0))
    d.frame()
    assert d.app.ctx.settings.sound_volume == 1.0
    assert saved(d)["sound_volume"] == 0.25  # saved when the pointer lifts
    d.release(d.to_window((track.right + 30, popup.bar.centery)))
    d.frame()
    assert saved(d)["sound_volume"] == 1.0


def test_mute_toggles_keeps_the_volume_and_is_saved(d):
    open_settings(d)
    d.click_named("mute")
    assert d.app.ctx.settings.sound_muted is True and d.app.ctx.settings.sound_volume == 0.7
    assert saved(d)["sound_muted"] is True
    assert d.app.stack.popup.widgets.by_name("mute").style == "selected"
    d.click_named("mute")
    assert d.app.ctx.settings.sound_muted is False
    assert saved(d)["sound_muted"] is False
    assert d.app.ctx.sounds.cues == ["turn_start"]  # unmuting plays a cue; muting is silent


def test_keyboard_only(d):
    """Tab moves through the buttons, Enter presses; Tab from Close reaches the name field."""
    popup = open_settings(d)
    assert popup.widgets.focused().name == "close"
    d.key(pygame.K_TAB)  # from Close into the name field
    assert popup.name_field.focused
    type_text(d, "Kim")
    d.key(pygame.K_RETURN)
    assert d.app.ctx.settings.player_name == "Kim"
    assert not popup.name_field.focused
    d.key(pygame.K_TAB)
    assert popup.widgets.focused().name == "volume_down"
    d.key(pygame.K_RETURN)
    assert d.app.ctx.settings.sound_volume == 0.6
    d.key(pygame.K_TAB)
    d.key(pygame.K_TAB)
    assert popup.widgets.focused().name == "mute"
    d.key(pygame.K_SPACE)
    assert d.app.ctx.settings.sound_muted
    d.key(pygame.K_ESCAPE)
    assert d.app.stack.popup is None


def test_name_is_edited_validated_and_saved(d):
    popup = open_settings(d)
    d.click(d.to_window(popup.name_field.rect.center))
    assert popup.name_field.focused
    type_text(d, "  Mina   Park ")
    d.key(pygame.K_1)  # a digit key while typing is text, not a game shortcut
    d.key(pygame.K_RETURN)
    assert d.app.ctx.settings.player_name == "Mina Park"
    assert saved(d)["player_name"] == "Mina Park"
    assert popup.name_note == "settings.name_saved"
    # At most NAME_MAX characters can be typed.
    d.click(d.to_window(popup.name_field.rect.center))
    type_text(d, "x" * 40)
    assert len(popup.name_field.text) == NAME_MAX


def test_a_name_that_does_not_pass_keeps_the_popup_open_with_the_reason(d):
    popup = open_settings(d)
    popup.name_field.text = "bad\x07name"  # nothing typed can hold this; a paste filter could change
    d.click_named("close")
    assert d.app.stack.popup is popup and popup.name_note == "settings.name_invalid"
    assert popup.name_field.focused and d.app.ctx.settings.player_name is None
    d.key(pygame.K_ESCAPE)  # leaves the field first
    assert d.app.stack.popup is popup
    popup.name_field.text = ""
    d.key(pygame.K_ESCAPE)  # an empty name is "no name": closes
    assert d.app.stack.popup is None and d.app.ctx.settings.player_name is None


def test_close_keeps_a_typed_name(d):
    """Nothing the player typed is lost: Close (or a background click) saves it too."""
    popup = open_settings(d)
    d.click(d.to_window(popup.name_field.rect.center))
    type_text(d, "Ana")
    d.click(d.to_window((5, 5)))  # background: press and release outside the card
    assert d.app.stack.popup is None
    assert saved(d)["player_name"] == "Ana"


def test_language_opens_the_picker_and_comes_back(d):
    open_settings(d)
    d.click_named("language")
    assert isinstance(d.app.stack.popup, LanguagePopup)
    d.wait(0.3)
    d.click_named("lang:ja")
    assert d.app.translator.language == "ja" and saved(d)["language"] == "ja"
    assert isinstance(d.app.stack.popup, SettingsPopup)
    assert "日本語" in d.app.stack.popup.widgets.by_name("language").label()


def test_touch_taps_work(d):
    open_settings(d)
    d.tap(d.button_pos("volume_up"))
    d.tap(d.button_pos("mute"))
    assert d.app.ctx.settings.sound_volume == 0.8 and d.app.ctx.settings.sound_muted


def test_no_audio_disables_the_sound_controls(tmp_path):
    d = Driver(tmp_path, language="en")
    try:
        d.app.ctx.sounds = Sounds()  # nothing can be heard here
        skip_tutorial(d)
        d.click_named("start")
        d.wait(0.5)
        popup = open_settings(d)
        assert not popup.widgets.by_name("volume_up").enabled and not popup.widgets.by_name("mute").enabled
        assert popup._sound_note() is not None
        d.key(pygame.K_MINUS)
        assert d.app.ctx.settings.sound_volume == 0.7
    finally:
        d.close()


def test_kiosk_has_no_name_and_saves_nothing(tmp_path):
    d = Driver(tmp_path, size=(1280, 800), kiosk=KioskConfig())
    try:
        d.click_named("lang:en")
        d.wait(0.3)
        skip_tutorial(d)
        d.click_named("start")
        d.wait(0.3)
        popup = open_settings(d)
        assert not popup.show_name
        d.click_named("volume_down")
        assert d.app.ctx.settings.sound_volume == 0.5
        assert not Path(d.app.ctx.settings_store.path).exists()
    finally:
        d.close()


def test_a_name_in_any_script_is_kept_and_can_be_typed(d):
    """The name field takes every printable character (as the first-use name popup does): a Korean
    name saved earlier survives opening and closing the settings, and kana can be typed."""
    d.app.ctx.save_settings(replace(d.app.ctx.settings, player_name="김민아"))
    popup = open_settings(d)
    assert popup.name_field.text == "김민아"
    d.click_named("close")
    assert d.app.ctx.settings.player_name == "김민아"
    popup = open_settings(d)
    d.click(d.to_window(popup.name_field.rect.center))
    for _ in range(3):
        d.key(pygame.K_BACKSPACE)
    type_text(d, "みな")
    d.key(pygame.K_RETURN)
    assert saved(d)["player_name"] == "みな"
