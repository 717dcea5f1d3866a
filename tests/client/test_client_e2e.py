"""End to end: the real app, real pygame events, a seeded CPU match from the language picker to
the result popup and back to a fresh start (U1–U4, C4, E1–E4, AI6), headless on a fake clock."""

from __future__ import annotations

import json

import pygame
import pytest
from support.client_driver import MY_PLAN, Driver, first_of, play_to_the_end

from mineduel.client.scenes.popups import ConfirmPopup, LanguagePopup, MenuPopup, RulesPopup
from mineduel.client.scenes.result_popup import ResultPopup
from mineduel.client.ui import palette
from mineduel.shared.fairness import record


def close_to(color: tuple[int, int, int], target: tuple[int, int, int], tolerance: int = 24) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(color, target, strict=True))


@pytest.fixture
def driver(tmp_path):
    d = Driver(tmp_path)
    yield d
    d.close()


def test_seeded_match_from_language_picker_to_result_and_restart(driver, tmp_path):
    """U1 picker first (board locked) → rules with normal difficulty → a seeded match played by clicks
    → C4 result popup with turns and time (E1, E3) → View board / View result toggled (E2) → record
    saved (RECORD.md) → Restart after confirmation keeps only the language (E4)."""
    d = driver
    app = d.app
    # U1: nothing saved → the language picker, which cannot be dismissed, and the board is locked.
    assert isinstance(app.stack.popup, LanguagePopup) and not app.stack.popup.closable
    d.click((5, 5))
    d.key(pygame.K_ESCAPE)
    assert isinstance(app.stack.popup, LanguagePopup)
    assert app.game.controller is None
    d.click_button("lang:en")
    assert json.loads((tmp_path / "settings.json").read_text())["language"] == "en"
    d.click_button("tutorial.skip")  # the first launch offers the tutorial right after the language
    # Then rules + difficulty, normal by default, with Start.
    rules = app.stack.popup
    assert isinstance(rules, RulesPopup) and rules.difficulty == "normal"
    d.click_button("start")
    d.wait(0.3)
    assert app.stack.popup is None and app.game.controller is not None
    assert app.session.difficulty == "normal"
    assert app.game.words.instruction() == "Opening: open any cell"

    # Opening: my first explore is a click on a cell; it turns blue (B3), pixels say so.
    first = MY_PLAN[0]
    d.click_cell(first)
    d.frame(0.3)
    corner = app.game.board.cell_rect(first).move(4, 20).topleft
    assert close_to(d.pixel(corner), palette.ME_CELL)
    assert app.game.message is not None and app.game.message[0] == "event.you_explored"
    # The CPU answers 650 ms later, not before (AI6); its cell turns pink with a notch.
    d.frame(0.3)
    assert app.game.view().revealed.bit_count() == 1
    d.frame(0.1)
    view = app.game.view()
    assert view.revealed.bit_count() == 2
    cpu_cell = next(c for c in range(64) if view.revealed >> c & 1 and not view.revealed_by_me >> c & 1)
    d.wait(0.4)
    rect = app.game.board.cell_rect(cpu_cell)
    assert close_to(d.pixel((rect.left + 4, rect.top + 20)), palette.OPP_CELL)
    assert close_to(d.pixel((rect.right - 3, rect.top + 3)), palette.OPP)  # the notch
    # U3: entering the plant step switched the mode to "mine" by itself.
    assert app.game.mode == "mine"

    play_to_the_end(d)
    ended = app.game.ended
    assert ended is not None
    # C4: the result popup appears after a short pause; it never closes by background or Escape.
    d.wait(1.0)
    popup = app.stack.popup
    assert isinstance(popup, ResultPopup) and not popup.closable
    d.click((3, 3))
    d.key(pygame.K_ESCAPE)
    assert app.stack.popup is popup
    timing = app.game.controller.timing()
    assert timing.finished and timing.turn == ended.turns
    # E1: elapsed is fixed at the end and E2 toggling never changes it.
    for _ in range(3):
        d.click_button("view_board")
        assert app.stack.popup is None and app.game.viewing_board
        before = app.game.view()
        d.click_cell(first_of(~before.revealed & ((1 << 64) - 1)))  # the final board takes no input
        assert app.game.view() == before
        d.wait(2.0)
        d.click_button("end_turn")  # now "View result"
        assert isinstance(app.stack.popup, ResultPopup)
    assert app.game.controller.timing() == timing
    # RECORD.md: the record was saved once, replays to the same end, keeps seed and times.
    saved = list((tmp_path / "records").glob("*.json"))
    assert len(saved) == 1
    rec = record.loads(saved[0].read_text(encoding="utf-8"))
    state, steps = record.run(rec)
    assert all(step["ok"] for step in steps)
    assert state.outcome() == ended.outcome
    assert rec.extra["players"][1] == {"seat": 1, "kind": "cpu", "difficulty": "normal", "seed": 1234}
    assert rec.extra["times"]["turns"] == ended.turns
    # Export writes a copy where the player can find it, and says where.
    d.click_button("export")
    exported = list((tmp_path / "exports").glob("*.json"))
    assert len(exported) == 1 and exported[0].read_text(encoding="utf-8") == saved[0].read_text(encoding="utf-8")
    # ... the folder, then the file name on its own line (issue 16: never wrapped mid-word).
    assert app.game.flow.record_line()[0] == f"Copy saved: {exported[0].parent}/\n{exported[0].name}"

    # E4: Restart goes through a confirmation; cancelling returns to the result.
    d.click_button("restart")
    assert isinstance(app.stack.popup, ConfirmPopup)
    d.click_button("cancel")
    assert isinstance(app.stack.popup, ResultPopup)
    d.click_button("restart")
    d.click_button("confirm")
    rules = app.stack.popup
    assert isinstance(rules, RulesPopup) and rules.difficulty == "normal"
    assert app.game.controller is None and app.game.ended is None and app.translator.language == "en"
    d.click_button("difficulty:hard")
    d.click_button("start")
    assert app.session.difficulty == "hard"
    assert app.game.view().revealed == 0 and app.game.view().turn == 0


def test_keyboard_only_match(tmp_path):
    """The whole game without a pointer: picker and Start by keys, arrows + Enter on the board,
    U to take back a flag, E to end turns, Escape for the menu, E again to reopen the result."""
    d = Driver(tmp_path, seed=99)
    try:
        app = d.app
        for _ in range(2):
            d.key(pygame.K_DOWN)  # 한국어 → 日本語 → English
        d.key(pygame.K_RETURN)
        assert app.translator.language == "en"
        d.key(pygame.K_DOWN)  # the tutorial offer: from Learn by playing to Skip
        d.key(pygame.K_RETURN)
        d.key(pygame.K_RETURN)  # Start (focused)
        assert app.game.controller is not None
        d.key(pygame.K_ESCAPE)
        assert isinstance(app.stack.popup, MenuPopup)
        d.key(pygame.K_ESCAPE)
        assert app.stack.popup is None
        assert app.game.board.focus_visible  # keyboard use shows the focus frame
        play_to_the_end(d, keyboard=True)
        d.wait(1.0)
        assert isinstance(app.stack.popup, ResultPopup)
        d.key(pygame.K_RETURN)  # View board (focused)
        assert app.stack.popup is None and app.game.viewing_board
        d.key(pygame.K_e)
        assert isinstance(app.stack.popup, ResultPopup)
    finally:
        d.close()


def test_cpu_pauses_while_a_popup_is_open_or_the_window_is_away(tmp_path):
    """AI6: the CPU countdown stops — keeping what is left — for the menu, a minimised window and
    lost focus, and goes on afterwards."""
    d = Driver(tmp_path, language="en")
    try:
        app = d.app
        d.click_button("start")
        d.click_cell(0)
        d.frame(0.4)  # 250 ms of the CPU's 650 ms are left
        d.key(pygame.K_ESCAPE)
        assert isinstance(app.stack.popup, MenuPopup)
        d.wait(5.0)
        assert app.game.view().revealed.bit_count() == 1
        d.key(pygame.K_ESCAPE)
        d.frame(0.2)
        assert app.game.view().revealed.bit_count() == 1
        d.post(pygame.WINDOWMINIMIZED)
        d.wait(3.0)
        assert app.game.view().revealed.bit_count() == 1
        d.post(pygame.WINDOWRESTORED)
        d.post(pygame.WINDOWFOCUSLOST)
        d.wait(3.0)
        assert app.game.view().revealed.bit_count() == 1
        d.post(pygame.WINDOWFOCUSGAINED)
        d.frame(0.02)
        d.frame(0.04)  # 50 ms + 20 ms > 60 ms ... the rest (about 50 ms) has run out
        assert app.game.view().revealed.bit_count() == 2
    finally:
        d.close()


def test_touch_taps_act_once(tmp_path):
    """Touch input: a finger tap (normalised coordinates) explores a cell; SDL's synthetic mouse
    copy of the same tap is ignored, so the cell is acted on exactly once."""
    d = Driver(tmp_path, language="en", size=(585, 1266))  # 1.5× scale
    try:
        app = d.app
        d.tap(d.button_pos("start"))
        assert app.game.controller is not None
        d.tap(d.cell_pos(9))
        view = app.game.view()
        assert view.revealed == 1 << 9
        assert app.game.message is not None and app.game.message[2] == "event"  # no refusal from a double tap
    finally:
        d.close()


def test_small_window_scrolls_and_maps_clicks(tmp_path):
    """U4: at 320×568 the canvas fits the width and scrolls; clicks land on the right cell at any
    scroll, and keyboard focus scrolls the board cell into view."""
    d = Driver(tmp_path, language="en", size=(320, 568))
    try:
        app = d.app
        vp = app.viewport
        assert vp.mapping.max_scroll > 0 and vp.scale == pytest.approx(320 / 390)
        d.click_button("start")
        d.post(pygame.MOUSEWHEEL, x=0, y=-3, precise_x=0.0, precise_y=-3.0, flipped=False)
        d.frame()
        assert vp.scroll > 0
        d.click_cell(62)
        assert app.game.view().revealed == 1 << 62
        for _ in range(8):
            d.key(pygame.K_UP)
        top = app.game.board.cell_rect(app.game.focus_cell)
        assert d.to_window(top.topleft)[1] >= 0
    finally:
        d.close()


def test_idle_app_sleeps_and_draws_nothing(tmp_path):
    """The loop sleeps when nothing happens: no frame is drawn and the next wake-up is the idle
    poll; a hover repaints only the cells it touches, not the screen."""
    from mineduel.client.app import IDLE_POLL

    d = Driver(tmp_path, language="en")
    try:
        app = d.app
        d.click_button("start")
        d.wait(2.0)
        drawn = app.frames_drawn
        for _ in range(20):
            assert d.frame(IDLE_POLL) == pytest.approx(IDLE_POLL)
        assert app.frames_drawn == drawn
        d.post(pygame.MOUSEMOTION, pos=d.cell_pos(10), rel=(0, 0), buttons=(0, 0, 0))
        d.frame()
        assert app.frames_drawn == drawn + 1
        assert app.last_areas is not None
        assert sum(r.width * r.height for r in app.last_areas) < 3 * 60 * 60
    finally:
        d.close()


def test_online_screen_opens_from_the_menu_and_goes_back(tmp_path):
    """The menu's Online play opens the online screen; its Back button, clicked with
    real mouse events in a scaled window, returns to the match, which kept its state."""
    from mineduel.client.scenes.online import OnlineScene

    d = Driver(tmp_path, language="ja", size=(780, 1688))
    try:
        app = d.app
        d.click_button("start")
        d.click_cell(5)
        d.key(pygame.K_ESCAPE)
        d.click_button("menu.online")
        scene = app.stack.top
        assert isinstance(scene, OnlineScene)
        assert scene.widgets.by_name("lang:ja").style == "selected"  # the chosen language, selectable at the top (U5)
        d.frame()
        pos = d.to_window(scene.widgets.by_name("back").rect.center)
        d.press(pos)
        d.frame()
        d.release(pos)
        d.frame()
        d.frame()
        assert app.stack.top is app.game
        assert app.game.view().revealed >> 5 & 1
    finally:
        d.close()
