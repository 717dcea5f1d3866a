"""The optional hint in CPU matches (issue 18 item 4): off by default, turned on in the settings,
the safest cells from the human's own view and memory (V3), counted in the record (RECORD.md
``hints``), which ``mine-duel replay`` ignores; refused politely outside the player's explore."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pygame
import pytest
from support.client_driver import Driver, FakeClock, first_of, play_to_the_end

from mineduel.client.cpu_match import HUMAN, CpuMatch
from mineduel.client.scenes.popups import MenuPopup
from mineduel.client.scenes.result_popup import ResultPopup
from mineduel.client.scenes.settings_popup import SettingsPopup
from mineduel.client.settings import Settings, SettingsStore
from mineduel.client.ui import palette
from mineduel.shared.ai import analysis
from mineduel.shared.ai.expert import seat_probabilities
from mineduel.shared.cli import replay
from mineduel.shared.rules.bitboard import COLS, cells
from mineduel.shared.rules.engine import ActionType, Phase
from mineduel.shared.rules.notation import from_ascii


def close_to(color: tuple[int, int, int], target: tuple[int, int, int], tolerance: int = 40) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(color, target, strict=True))


def start(d: Driver, level: str = "normal") -> None:
    d.click_button(f"difficulty:{level}")
    d.click_button("start")
    d.wait(0.3)


def turn_hints_on(d: Driver) -> None:
    """Menu → Settings → Hints, as a player does; Close."""
    d.key(pygame.K_ESCAPE)
    assert isinstance(d.app.stack.popup, MenuPopup)
    d.click_button("menu.settings")
    popup = d.app.stack.popup
    assert isinstance(popup, SettingsPopup)
    assert popup.widgets.by_name("hints").style == "secondary"  # off until turned on
    d.click_button("hints")
    assert popup.widgets.by_name("hints").style == "selected"
    d.click_button("close")
    d.frame()


def play_until_my_explore(d: Driver, min_turn: int) -> None:
    """Play the human side (clicks) until it is my explore in a normal turn at least ``min_turn``."""
    game = d.app.game
    for _ in range(400):
        view = game.view()
        assert view is not None and game.ended is None
        if view.to_move != view.seat:
            d.frame(0.66)
            continue
        if view.phase is Phase.EXPLORE and view.turn >= min_turn and view.explorable:
            return
        if view.phase is Phase.END_WAIT:
            d.click_button("end_turn")
        elif not view.explorable:
            d.click_button("mode:unflag")
            d.click_cell(first_of(view.recoverable))
        elif view.phase in (Phase.EXPLORE, Phase.OPEN_EXPLORE):
            d.click_cell(first_of(view.explorable))
        else:
            d.click_cell(first_of(view.targets(ActionType.PLANT)))
    raise AssertionError("never reached my explore")


def expected_hint(match: CpuMatch) -> int:
    """The analysis's own answer for the human now: from the record's actions and seat 0 only."""
    moment = analysis.seat_timeline(match._actions, HUMAN)[-1]
    probs = seat_probabilities(moment.view, moment.memory)
    best = min(probs.weights[c] for c in cells(moment.view.explorable))
    lowest = sum(1 << c for c in cells(moment.view.explorable) if probs.weights[c] == best)
    assert lowest == analysis.hint(moment.view, moment.memory)
    return lowest


@pytest.fixture
def driver(tmp_path):
    d = Driver(tmp_path, language="en", seed=2024)
    yield d
    d.close()


def test_settings_hints_off_by_default_and_parsed_on_its_own(tmp_path):
    """``hints`` is false by default; a bad value is that field's default only (and a log line)."""
    assert Settings().hints is False
    store = SettingsStore(tmp_path)
    (tmp_path / "settings.json").write_text(json.dumps({"language": "ko", "hints": "yes"}), encoding="utf-8")
    assert store.load() == Settings(language="ko")
    (tmp_path / "settings.json").write_text(json.dumps({"language": "ko", "hints": True}), encoding="utf-8")
    assert store.load() == Settings(language="ko", hints=True)
    assert store.save(Settings(hints=True)) and store.load().hints is True


def test_no_hint_when_hints_are_off(driver, tmp_path):
    """Off by default: no Hint button, H does nothing, and the record has no ``hints`` key."""
    d = driver
    start(d)
    game = d.app.game
    assert all(b.name != "hint" for b in game.widgets.buttons)
    assert game.widgets.by_name("end_turn").rect.width == 374  # End turn keeps the whole row
    d.key(pygame.K_h)
    assert game.hint.cells == 0 and game.controller.hints_used == 0
    assert game.message is None or not game.message[0].startswith("hint.")
    play_to_the_end(d)
    d.wait(1.5)
    saved = next((tmp_path / "records").glob("*.json"))
    assert "hints" not in json.loads(saved.read_text(encoding="utf-8"))


def test_hint_from_settings_rings_the_safest_cells_and_is_recorded(driver, tmp_path):
    """On via the settings popup: Hint (button, then H) rings exactly the lowest-probability cells
    the analysis finds from my own views; asked twice in one position it counts once; the rings go
    with the next action; outside my explore it says why; the result says how many; the record's
    ``hints`` names each position and cell, and ``mine-duel replay`` prints the same with or without it."""
    d = driver
    start(d)
    game = d.app.game
    turn_hints_on(d)
    assert json.loads((tmp_path / "settings.json").read_text(encoding="utf-8"))["hints"] is True
    assert game.widgets.by_name("hint").enabled
    play_until_my_explore(d, min_turn=5)
    match = game.controller
    assert isinstance(match, CpuMatch)
    want = expected_hint(match)
    before = len(match._actions)
    d.click_button("hint")
    assert game.hint.cells == want != 0
    assert game.message is not None and game.message[0] in ("hint.shown", "hint.shown_safe", "hint.all_equal")
    d.frame(0.1)
    ring = game.board.cell_rect((want & -want).bit_length() - 1)
    assert close_to(d.pixel((ring.left - 2, ring.centery)), palette.GOOD)  # the ring is drawn
    d.key(pygame.K_h)  # the same position again: the same cells, not counted again
    assert game.hint.cells == want and match.hints_used == 1
    hinted = (want & -want).bit_length() - 1
    d.click_cell(hinted)  # explore a ringed cell: the board changed, the rings go
    d.frame()
    assert game.hint.cells == 0
    view = game.view()
    assert view.revealed >> hinted & 1 or game.ended is not None
    if game.ended is None and view.phase is Phase.PLANT:
        d.key(pygame.K_h)  # my plant: a hint is about an explore
        assert game.message == ("hint.not_now", {}, "refusal")
        assert game.hint.cells == 0 and match.hints_used == 1
    play_to_the_end(d)
    d.wait(1.5)
    popup = d.app.stack.popup
    assert isinstance(popup, ResultPopup) and popup.info.hints_used == 1
    assert d.app.ctx.t("result.hints_used", count=1) == "Hints used: 1"
    saved = next((tmp_path / "records").glob("*.json"))
    text = saved.read_text(encoding="utf-8")
    data = json.loads(text)
    assert data["hints"] == [{"seat": 0, "before": before, "cells": [list(divmod(c, COLS)) for c in cells(want)]}]
    without = {k: v for k, v in data.items() if k != "hints"}
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(without), encoding="utf-8")
    outputs = []
    for path in (saved, plain):
        buffer = io.StringIO()
        with redirect_stdout(buffer):
            assert replay.main([str(path)]) == 0
        outputs.append(buffer.getvalue())
    assert outputs[0] == outputs[1] and json.loads(outputs[0])["result"]["over"] is True


def test_hint_is_refused_politely_on_the_cpus_turn(driver):
    """While the CPU plays, Hint says why not and rings nothing."""
    d = driver
    start(d)
    turn_hints_on(d)
    game = d.app.game
    d.click_cell(27)  # my opening explore; the CPU's answer is 650 ms away
    assert game.view().to_move != game.view().seat
    d.click_button("hint")
    assert game.message == ("hint.not_now", {}, "refusal") and game.hint.cells == 0
    assert game.controller.hints_used == 0


def _board(cpu_far: tuple[int, int]) -> str:
    """Turn 5, my explore: three CPU mines — two beside my one number (a 2 with three closed
    neighbours: risky) and one at ``cpu_far``, which no number sees — and three of mine."""
    grid = [[".."] * 8 for _ in range(8)]
    grid[0][0] = "o2"
    grid[0][1] = grid[1][0] = "B."
    grid[0][7] = grid[7][0] = grid[4][4] = "A."
    grid[cpu_far[0]][cpu_far[1]] = "B."
    return "\n".join(" ".join(row) for row in grid)


def test_hint_never_depends_on_the_cpus_hidden_mines():
    """V3: two worlds that differ only in where a CPU mine lies that no number sees give the same
    hint — even when, in one of them, that mine is under a ringed cell."""
    first = CpuMatch(seed=1, clock=FakeClock(), state=from_ascii(_board((7, 7)), turn=5))
    hinted = first.hint()
    assert hinted is not None and hinted.cells
    far = next(c for c in cells(hinted.cells) if divmod(c, COLS)[0] >= 4 and c != 63)
    second = CpuMatch(seed=2, clock=FakeClock(), state=from_ascii(_board(divmod(far, COLS)), turn=5))
    assert first.view() == second.view()
    other = second.hint()
    assert other == hinted
    assert second.state.mines[1] >> far & 1 and other.cells >> far & 1  # a ringed cell holds its mine
    assert first.hints_used == second.hints_used == 1


def test_hint_only_in_my_explore():
    """``hint()`` answers in my explore only (plant, end of turn, the CPU's turn: ``None``, not counted)."""
    for phase, to_move in (("plant", 0), ("end_wait", 0), ("explore", 1)):
        match = CpuMatch(seed=1, clock=FakeClock(), state=from_ascii(_board((7, 7)), turn=5 if to_move == 0 else 6,
                                                                      phase=phase, to_move=to_move))
        assert not match.hint_allowed() and match.hint() is None and match.hints_used == 0


def test_tutorial_and_online_have_no_hint_button(tmp_path):
    """Never online (and not in the tutorial): their matches have no ``hint``, whatever the setting."""
    from mineduel.client.online_match import OnlineMatch
    from mineduel.client.scenes.match_hint import HintSource
    from mineduel.client.tutorial_match import TutorialMatch

    assert not hasattr(TutorialMatch, "hint") and not hasattr(OnlineMatch, "hint")
    assert isinstance(CpuMatch(seed=1, clock=FakeClock()), HintSource)
    store = SettingsStore(tmp_path)
    store.save(Settings(language="en", tutorial="skipped", hints=True))
    d = Driver(tmp_path)
    try:
        start(d)
        assert d.app.game.widgets.by_name("hint") is not None
    finally:
        d.close()


def test_the_hint_record_key_is_documented():
    """RECORD.md is a contract: the ``hints`` key is written down exactly as the client writes it."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "RECORD.md").read_text(encoding="utf-8")
    assert '"hints": [{"seat": 0, "before": 12, "cells": [[3, 4], [5, 5]]}]' in text


@pytest.mark.parametrize("language", ["ko", "ja", "en", "zh-CN"])
def test_every_hint_line_fits_the_status_line(tmp_path, language):
    """The status line has one line under a one-line instruction: each hint message fits it at 14 px
    (a refusal beside its warning icon), with the widest chance written ("<1%")."""
    d = Driver(tmp_path, language=language)
    try:
        fonts, t = d.app.ctx.fonts, d.app.ctx.t
        for key, room in (("hint.shown", 334), ("hint.shown_safe", 334), ("hint.all_equal", 334),
                          ("hint.not_now", 312), ("hint.unavailable", 312)):
            text = t(key, chance="<1%", count=3)
            assert fonts.width(text, 14) <= room, (key, text)
    finally:
        d.close()
