"""Popup rules (U2), input locking (U3), automatic input modes (U3), status lines and layout (U4)."""

from __future__ import annotations

import pygame
import pytest
from support.client_driver import Driver

from mineduel.client.i18n import LANGUAGES
from mineduel.client.scenes.popups import ConfirmPopup, LanguagePopup, MenuPopup, RulesPopup
from mineduel.client.scenes.result_popup import ResultPopup
from mineduel.shared.rules.engine import Action, ActionType


class SpyController:
    """Wraps a real controller and counts what the screen submits."""

    def __init__(self, inner):
        self.inner = inner
        self.submitted: list[Action] = []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def submit(self, action):
        self.submitted.append(action)
        self.inner.submit(action)


@pytest.fixture
def started(tmp_path):
    """An English app with a match started (normal difficulty) and a spy on its controller."""
    d = Driver(tmp_path, language="en")
    d.click_button("start")
    spy = SpyController(d.app.game.controller)
    d.app.game.controller = spy
    yield d, spy
    d.close()


def test_menu_closes_only_when_press_and_release_are_both_outside(started):
    """U2: a closable popup ignores press-inside/release-outside and press-outside/release-inside;
    press and release both outside close it."""
    d, _ = started
    d.key(pygame.K_ESCAPE)
    menu = d.app.stack.popup
    assert isinstance(menu, MenuPopup)
    inside = d.to_window(menu.card.move(0, 0).midtop)
    inside = (inside[0], inside[1] + 10)
    outside = (5, 5)
    d.press(inside)
    d.release(outside)
    d.frame()
    assert d.app.stack.popup is menu
    d.press(outside)
    d.release(inside)
    d.frame()
    assert d.app.stack.popup is menu
    d.press(outside)
    d.release((10, 830))
    d.frame()
    assert d.app.stack.popup is None


def test_escape_closes_closable_popups_only(started):
    """U2: Escape closes the menu and the rules, never the result or the first-run language picker."""
    d, _ = started
    d.key(pygame.K_ESCAPE)
    d.click_button("menu.rules")
    assert isinstance(d.app.stack.popup, RulesPopup)
    d.key(pygame.K_ESCAPE)
    assert d.app.stack.popup is None


def test_at_most_one_popup(started):
    """U2: opening a popup from the menu replaces the menu; there is never a second one."""
    d, _ = started
    d.key(pygame.K_ESCAPE)
    d.click_button("menu.language")
    picker = d.app.stack.popup
    assert isinstance(picker, LanguagePopup)
    stack = d.app.stack
    stack.open_popup(MenuPopup(d.app.ctx, []))
    assert picker.closed and isinstance(stack.popup, MenuPopup)
    assert "popup" in d.app.game.pauses  # still paused: a popup is open
    stack.close_popup()
    assert "popup" not in d.app.game.pauses


def test_result_popup_is_never_dismissed(tmp_path):
    """U2: the result popup survives background clicks and Escape; its buttons work."""
    from mineduel.client.cpu_match import CpuMatch
    from mineduel.client.screenshots import MID_GAME
    from mineduel.shared.rules.notation import from_ascii

    d = Driver(tmp_path, language="en")
    try:
        state = from_ascii(MID_GAME)
        d.app.ctx.new_cpu_match = lambda **kw: CpuMatch(clock=d.clock, state=state, **kw)
        d.click_button("start")
        d.click_cell(1 * 8 + 4)  # the CPU's mine: KO
        d.wait(1.0)
        popup = d.app.stack.popup
        assert isinstance(popup, ResultPopup) and popup.kind == "loss"
        for pos in [(2, 2), (385, 840)]:
            d.click(pos)
        d.key(pygame.K_ESCAPE)
        assert d.app.stack.popup is popup
        d.click_button("menu")
        assert isinstance(d.app.stack.popup, MenuPopup)
    finally:
        d.close()


def test_board_locked_while_a_popup_is_open(started):
    """U3: with a popup open, clicks on the board never reach the match."""
    d, spy = started
    d.key(pygame.K_ESCAPE)
    d.click_button("menu.rules")
    for cell in (0, 7, 56, 63):  # on the card or on the background: never on the board
        d.click_cell(cell)
    assert spy.submitted == []


def test_board_locked_on_the_cpu_turn(started):
    """U3: on the CPU's turn a click submits nothing and the status line says why."""
    d, spy = started
    d.click_cell(0)
    assert len(spy.submitted) == 1
    d.click_cell(9)
    assert len(spy.submitted) == 1
    assert d.app.game.message[0] == "refusal.not_your_turn"
    d.key(pygame.K_RETURN)
    d.key(pygame.K_e)
    assert len(spy.submitted) == 1


def test_refusals_say_why(started):
    """A refused action shows refusal.<code> (A1: a revealed cell) and changes nothing."""
    d, spy = started
    d.click_cell(0)
    d.frame(0.7)
    before = d.app.game.view()
    d.click_button("mode:explore")  # U3: disabled while planting — it says why and the mode stays
    assert d.app.game.mode == "mine" and d.app.game.message[0] == "match.why.explored_plant"
    d.click_cell(0)
    assert d.app.game.message[:1] == ("refusal.revealed",)
    assert d.app.game.words.event_line() == ("That cell is already open", True)
    assert d.app.game.view() == before


def test_input_mode_follows_the_phase(started):
    """U3: entering PLANT selects mine, entering EXPLORE selects explore; switching costs nothing (F4)."""
    d, spy = started
    game = d.app.game
    assert game.mode == "explore"
    assert not game.controls.mode_enabled("flag")  # F1: no markers in the opening
    d.click_cell(0)
    d.frame(0.7)
    assert game.mode == "mine"
    d.click_button("mode:explore")
    d.click_button("mode:mine")
    assert [a.type for a in spy.submitted] == [ActionType.EXPLORE]


def test_hidden_information_never_drawn_in_the_status_line(started):
    """V2: the CPU's plant is announced without a place."""
    d, _ = started
    d.click_cell(0)
    d.frame(0.7)
    d.click_cell(63)
    d.frame(0.7)
    assert d.app.game.message[0] == "event.cpu_planted"
    assert d.app.game.words.event_line() == ("CPU planted a mine somewhere", False)


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_button_is_tall_enough_and_its_label_fits(tmp_path, language):
    """U4: buttons at least 44 px, board at most 390 px wide; labels fit their buttons in every
    language without shrinking more than a little."""
    d = Driver(tmp_path, language=language)
    try:
        app = d.app
        groups = [("rules", app.stack.popup.widgets)]
        d.click_button("start")
        groups.append(("game", app.game.widgets))
        d.key(pygame.K_ESCAPE)
        groups.append(("menu", app.stack.popup.widgets))
        d.click_button("menu.language")
        groups.append(("language", app.stack.popup.widgets))
        d.key(pygame.K_ESCAPE)
        app.game.flow.confirm_restart()
        d.frame()
        assert isinstance(app.stack.popup, ConfirmPopup)
        groups.append(("confirm", app.stack.popup.widgets))
        assert app.game.board.grid.width <= 390
        fonts = app.ctx.fonts
        for where, group in groups:
            for button in group.buttons:
                assert button.rect.height >= 44, (where, button.name)
                text = button.label()
                if text:
                    size = fonts.fit_size(text, button.text_size, button.rect.width - 20, True)
                    assert size >= button.text_size - 4, (language, where, button.name, text)
    finally:
        d.close()
