"""The interactive tutorial (issue 16): the script holds to the rules engine, the tutorial plays
through by mouse, touch and keyboard, refuses everything else gently, can be skipped and resumed,
and is reached from the first launch, the start popup, the rules popup and the menu."""

from __future__ import annotations

import json
from pathlib import Path

import pygame
import pytest
from support.client_driver import Driver

from mineduel.client import tutorial_script as script
from mineduel.client.scenes.game import GameScene
from mineduel.client.scenes.popups import ILLUSTRATIONS, MenuPopup, RulesPopup, illustration_numbers
from mineduel.client.scenes.tutorial import TutorialScene
from mineduel.client.scenes.tutorial_offer import TutorialOfferPopup
from mineduel.client.tutorial_script import STEPS, Kind
from mineduel.shared.rules.bitboard import NEIGHBOURS
from mineduel.shared.rules.engine import ActionType, Reason

# ----- the script and the engine (no window) -----------------------------------------------------


def test_every_scripted_move_is_legal_in_its_step():
    """Every move of the script — the player's and the opponent's — is one the engine offers at
    that moment (A1–A5, F2), so a tutorial can never show a position the rules forbid."""
    state = script.start_state()
    for i, step in enumerate(STEPS):
        assert state == script.state_at(i)
        moves = ([step.action] if step.action is not None else []) + list(step.opponent)
        for action in moves:
            assert action in set(state.legal_actions()), (step.name, action)
            state.play(action)


def test_numbers_are_what_the_coach_says():
    """B4 as the steps tell it: the first 1 is the player's own mine; planting beside it makes 2;
    the corner 1 touches one closed cell, which holds the opponent's mine; the second 1 stays 1
    after the overlap (two mines on one cell count once, V5); the end is the opponent's KO."""
    at = {step.name: script.state_at(i) for i, step in enumerate(STEPS)}
    s = at["numbers"]
    assert s.number(script.FIRST) == 1 and NEIGHBOURS[script.FIRST] & s.any_mine == 1 << script.OWN_MINE
    assert s.mines[0] >> script.OWN_MINE & 1
    assert at["flag"].numbers()[script.FIRST] == 2
    corner = at["flag"]
    closed = NEIGHBOURS[script.CORNER] & ~corner.revealed
    assert corner.numbers()[script.CORNER] == 1 and closed == 1 << script.PROVEN
    assert corner.mines[1] >> script.PROVEN & 1 and not corner.mines[0] >> script.PROVEN & 1
    before, after = at["overlap"], at["overlap_seen"]
    assert before.numbers()[script.SECOND] == 1 and after.numbers()[script.SECOND] == 1
    assert after.mines[0] & after.mines[1] == 1 << script.OVERLAP
    end = at["ko"]
    outcome = end.outcome()
    assert outcome is not None and outcome.reason is Reason.KO and outcome.winner == 0
    assert end.ko_cell == script.PLANTED
    reveal = end.reveal()
    assert reveal.correct_markers[0] == 1 << script.PROVEN and reveal.overlaps == 1 << script.OVERLAP


def test_steps_point_at_what_they_need():
    """A cell step rings the cell of its move in the move's own mode; a button step names End turn;
    resuming a step replays exactly the moves before it."""
    modes = {ActionType.EXPLORE: "explore", ActionType.PLANT: "mine", ActionType.FLAG: "flag"}
    for step in STEPS:
        if step.kind is Kind.CELL:
            assert step.action is not None and step.ring == (step.action.cell,)
            assert step.mode == modes[step.action.type]
        if step.kind is Kind.BUTTON:
            assert step.button == "end_turn" and step.action is not None and step.action.type is ActionType.END_TURN
    assert script.parse_progress("step-6") == script.step_index("explore_again")  # a WATCH step resumes after it
    assert script.parse_progress("step-1") == 0
    for bad in ("unseen", "done", "skipped", "step-0", f"step-{len(STEPS) + 1}", "step-x"):
        assert script.parse_progress(bad) is None
    with pytest.raises(ValueError):
        script.state_at(len(STEPS))


@pytest.mark.parametrize("key", sorted(ILLUSTRATIONS))
def test_rule_illustrations_count_like_the_engine(key):
    """The rules popup's mini boards show numbers counted as B4 counts them (an overlap once)."""
    from mineduel.shared.rules.notation import from_ascii

    rows = ILLUSTRATIONS[key]
    as_notation = {"o": "o?", "x": "x?", "A": "A.", "B": "B.", "X": "X.", "K": "B.", "a": ".a", "b": ".b"}
    board = [[".."] * 8 for _ in range(8)]
    for r, row in enumerate(rows):
        for c, token in enumerate(row.split()):
            board[r][c] = as_notation.get(token, "..")
    state = from_ascii("\n".join(" ".join(row) for row in board))
    for (r, c), n in illustration_numbers(rows).items():
        assert state.number(r * 8 + c) == n
    assert illustration_numbers(ILLUSTRATIONS["rules.numbers_all"])[(1, 1)] == 2  # both players' mines
    assert illustration_numbers(ILLUSTRATIONS["rules.overlap"])[(1, 1)] == 1  # an overlap counts once


# ----- the tutorial in the real app ------------------------------------------------------------------


def first_launch(tmp_path: Path, **kwargs) -> Driver:
    d = Driver(tmp_path, **kwargs)
    d.click_button("lang:en")
    return d


def tutorial(d: Driver) -> TutorialScene:
    top = d.app.stack.top
    assert isinstance(top, TutorialScene)
    return top


def where(d: Driver, t: TutorialScene) -> tuple[int, int]:
    """The window position of what the step wants touched."""
    expected = t.expected()
    assert expected is not None
    kind, what = expected
    if kind == "next":
        return d.to_window(t.card.widgets.by_name("tutorial.next").rect.center)
    if kind == "button":
        return d.to_window(t.game.widgets.by_name(str(what)).rect.center)
    assert isinstance(what, int)
    return d.to_window(t.game.board.cell_center(what))


def play_through(d: Driver, t: TutorialScene, how: str) -> list[str]:
    seen = []
    for _ in range(80):
        if t.finished:
            return seen
        seen.append(t.step.name)
        if t.expected() is None:
            d.wait(0.7)  # the opponent's moves, one per 650 ms (AI6)
            continue
        if how == "keys":
            press_keys(d, t)
        elif how == "touch":
            d.tap(where(d, t))
        else:
            d.click(where(d, t))
    raise AssertionError("the tutorial did not end")


def press_keys(d: Driver, t: TutorialScene) -> None:
    expected = t.expected()
    assert expected is not None
    kind, what = expected
    if kind == "cell":
        assert isinstance(what, int)
        game = t.game
        row, col = divmod(what, 8)
        while game.focus_cell != what:
            frow, fcol = divmod(game.focus_cell, 8)
            key = (pygame.K_DOWN if row > frow else pygame.K_UP) if row != frow else (
                pygame.K_RIGHT if col > fcol else pygame.K_LEFT)
            d.key(key)
        d.key(pygame.K_f if t.step.mode == "flag" else pygame.K_RETURN)
    elif kind == "button" and what == "end_turn":
        d.key(pygame.K_e)
    else:
        d.key(pygame.K_RETURN)  # Next, or the ringed mode button


@pytest.mark.parametrize("how", ["mouse", "touch", "keys"])
def test_first_launch_offers_the_tutorial_and_it_plays_through(tmp_path, how):
    """After the first language choice the tutorial is offered; it plays to its end by mouse, by
    touch or by keys alone, through every step in order, saves "done" and then shows the start popup."""
    d = first_launch(tmp_path)
    try:
        offer = d.app.stack.popup
        assert isinstance(offer, TutorialOfferPopup) and not offer.closable
        if how == "keys":
            d.key(pygame.K_RETURN)  # Learn by playing has the focus
        else:
            d.click_button("tutorial.learn")
        t = tutorial(d)
        seen = play_through(d, t, how)
        assert [name for i, name in enumerate(seen) if i == 0 or seen[i - 1] != name] == [s.name for s in STEPS]
        assert json.loads((tmp_path / "settings.json").read_text())["tutorial"] == "done"
        assert d.app.stack.top is d.app.game and isinstance(d.app.stack.popup, RulesPopup)
        assert d.app.game.controller is None  # nothing of the tutorial's match leaks into a real one
    finally:
        d.close()


def test_other_input_is_refused_gently(tmp_path):
    """A wrong cell, a wrong button, or Enter away from the ringed cell changes nothing in the
    match and puts a hint on the card; the step stays."""
    d = first_launch(tmp_path)
    try:
        d.click_button("tutorial.learn")
        t = tutorial(d)
        state = t.match.state.snapshot()
        d.click(d.to_window(t.game.board.cell_center(0)))
        assert t.card.hint == "tutorial.hint.cell" and t.step.name == "explore"
        d.click(d.to_window(t.game.widgets.by_name("mode:flag").rect.center))
        assert t.card.hint == "tutorial.hint.cell"
        t.game.focus_cell = 0
        d.key(pygame.K_RETURN)
        assert t.card.hint == "tutorial.hint.keys"
        d.key(pygame.K_e)
        assert t.match.state.snapshot() == state and t.match.actions == []
        d.click(where(d, t))  # the ringed cell works
        assert t.step.name == "numbers" and t.card.hint is None
        d.click(d.to_window(t.game.board.cell_center(script.PLANTED)))  # not yet: Next first
        assert t.card.hint == "tutorial.hint.next" and t.step.name == "numbers"
    finally:
        d.close()


def test_skip_saves_skipped_and_shows_the_start_popup(tmp_path):
    """Skip (or Escape) leaves at once: "skipped" is saved and the start popup follows."""
    d = first_launch(tmp_path)
    try:
        d.click_button("tutorial.learn")
        t = tutorial(d)
        d.click(where(d, t))
        d.click(d.to_window(t.card.widgets.by_name("tutorial.skip").rect.center))
        assert t.finished and d.app.stack.top is d.app.game
        assert json.loads((tmp_path / "settings.json").read_text())["tutorial"] == "skipped"
        assert isinstance(d.app.stack.popup, RulesPopup)
    finally:
        d.close()


def test_offer_skip_is_remembered(tmp_path):
    """Skip on the offer goes to the start popup and is not offered again at the next launch."""
    d = first_launch(tmp_path)
    d.click_button("tutorial.skip")
    assert isinstance(d.app.stack.popup, RulesPopup)
    d.close()
    d = Driver(tmp_path)
    try:
        assert isinstance(d.app.stack.popup, RulesPopup)
    finally:
        d.close()


def test_a_tutorial_left_half_way_resumes_at_its_step(tmp_path):
    """Progress is saved at every step (step-N); the next launch offers to continue, and Continue
    starts at that step on the position the moves before it lead to."""
    d = first_launch(tmp_path)
    d.click_button("tutorial.learn")
    t = tutorial(d)
    for _ in range(3):
        d.click(where(d, t))
    assert t.step.name == "flag"
    d.close()  # the window closed in the middle
    assert json.loads((tmp_path / "settings.json").read_text())["tutorial"] == "step-4"
    d = Driver(tmp_path)
    try:
        offer = d.app.stack.popup
        assert isinstance(offer, TutorialOfferPopup) and offer.resume_step == 3
        d.click_button("tutorial.learn")
        t = tutorial(d)
        assert t.step.name == "flag" and t.match.state == script.state_at(3)
        play_through(d, t, "mouse")
        assert json.loads((tmp_path / "settings.json").read_text())["tutorial"] == "done"
    finally:
        d.close()


def test_from_the_menu_and_back_to_the_match(tmp_path):
    """The game menu's Tutorial opens it over a running match (paused, AI6); leaving returns to the
    same match, untouched."""
    d = Driver(tmp_path, language="en")
    try:
        d.click_button("start")
        d.click_cell(27)
        controller = d.app.game.controller
        d.wait(2.0)
        before = controller.view()
        d.key(pygame.K_ESCAPE)
        assert isinstance(d.app.stack.popup, MenuPopup)
        d.click_button("menu.tutorial")
        tutorial(d)
        assert "covered" in d.app.game.pauses
        d.key(pygame.K_ESCAPE)  # Escape skips
        assert d.app.stack.top is d.app.game and d.app.game.controller is controller
        assert d.app.stack.popup is None and controller.view() == before
    finally:
        d.close()


@pytest.mark.parametrize("start", [True, False], ids=["start-popup", "rules-from-menu"])
def test_from_the_rules_popup(tmp_path, start):
    """The rules popup has a Tutorial button, in its start version and from the menu."""
    d = Driver(tmp_path, language="en")
    try:
        if not start:
            d.click_button("start")
            d.key(pygame.K_ESCAPE)
            d.click_button("menu.rules")
        d.click_button("tutorial")
        t = tutorial(d)
        assert t.step.name == "explore"
        d.click(d.to_window(t.card.widgets.by_name("tutorial.skip").rect.center))
        assert isinstance(d.app.stack.popup, RulesPopup) == start
    finally:
        d.close()


def test_kiosk_offers_it_and_saves_nothing(tmp_path):
    """Kiosk: every player is offered the tutorial; its progress lives only in this session."""
    from mineduel.client.kiosk import KioskConfig

    profile = tmp_path / "profile"
    profile.mkdir()
    d = Driver(profile, kiosk=KioskConfig())
    try:
        d.click_button("lang:en")
        d.click_button("tutorial.learn")
        t = tutorial(d)
        d.click(where(d, t))
        assert d.app.ctx.settings.tutorial == "step-2"
        assert list(profile.rglob("*")) == []
    finally:
        d.close()


# ----- the start popup: Play with a friend ----------------------------------------------------------


def test_start_popup_offers_play_with_a_friend(tmp_path, monkeypatch):
    """The start popup has Play with a friend beside Start (CPU); it opens the online screen."""
    opened = []
    monkeypatch.setattr(GameScene, "open_online", lambda self: opened.append(self))
    d = Driver(tmp_path, language="en")
    try:
        popup = d.app.stack.popup
        assert isinstance(popup, RulesPopup)
        start, friend = popup.widgets.by_name("start"), popup.widgets.by_name("friend")
        assert start.rect.top == friend.rect.top and start.rect.right < friend.rect.left
        d.click_button("friend")
        assert opened == [d.app.game] and d.app.stack.popup is None
    finally:
        d.close()


def test_no_friend_button_where_online_play_is_not_allowed(tmp_path):
    """A kiosk without online play shows only Start."""
    from mineduel.client.kiosk import KioskConfig

    d = Driver(tmp_path, kiosk=KioskConfig(languages=("en",)))
    try:
        popup = d.app.stack.popup
        assert isinstance(popup, RulesPopup)
        assert [b.name for b in popup.widgets.buttons if b.name in ("start", "friend")] == ["start"]
    finally:
        d.close()


@pytest.mark.parametrize("language", ["en", "ko", "ja", "zh-CN"])
def test_rules_say_what_numbers_overlaps_and_colours_mean(language):
    """Issue 16 item 3: the rules popup's bullets (each with its text in every language) say that a
    number counts both players' mines, what an overlap is and what blue and pink mean, with a mini
    board beside each of them."""
    from mineduel.client.i18n import translate
    from mineduel.client.scenes.popups import RULE_KEYS

    for key in ("rules.numbers_all", "rules.overlap", "rules.colors"):
        assert key in RULE_KEYS and key in ILLUSTRATIONS
        assert translate(key, language).strip()


def test_no_tutorial_over_an_online_match(tmp_path):
    """U7: the online rules offer no Tutorial (the match's deadlines would run on meanwhile)."""
    from mineduel.client.scenes.match_panels import OnlineRulesPopup

    d = Driver(tmp_path, language="en")
    try:
        d.app.stack.open_popup(OnlineRulesPopup(d.app.ctx))
        names = [b.name for b in d.app.stack.popup.widgets.buttons]
        assert "close" in names and "tutorial" not in names
        d.app.stack.open_popup(RulesPopup(d.app.ctx))
        assert "tutorial" in [b.name for b in d.app.stack.popup.widgets.buttons]
    finally:
        d.close()
