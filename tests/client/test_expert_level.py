"""The expert level in the client (issue 18 item 2): chosen in the start popup, played through
``shared.ai.levels.CpuPlayer``, named in the record, the header and the result; a kiosk may preselect it."""

from __future__ import annotations

import json
import random

import pytest
from support.client_driver import Driver, FakeClock, play_to_the_end

from mineduel.client.cpu_match import CPU, HUMAN, CpuMatch
from mineduel.client.i18n import LANGUAGES
from mineduel.client.kiosk import KioskConfig, parse_config
from mineduel.client.scenes.popups import DIFFICULTIES, RulesPopup
from mineduel.client.scenes.result_popup import ResultPopup
from mineduel.shared.ai import cpu as ai
from mineduel.shared.ai.levels import LEVELS, CpuPlayer, Level
from mineduel.shared.fairness import record
from mineduel.shared.rules.engine import Action, ActionType, GameState, Phase, Refusal, Variant


def _human_step(match: CpuMatch, rng: random.Random) -> None:
    """A seeded random human: explore / plant anywhere legal, end the turn, take back a flag if held."""
    view = match.view()
    if view.phase is Phase.END_WAIT:
        match.submit(Action(HUMAN, ActionType.END_TURN))
        return
    if not view.explorable and view.recoverable:
        kind, options = ActionType.UNFLAG, view.recoverable
    else:
        kind = ActionType.EXPLORE if view.phase in (Phase.EXPLORE, Phase.OPEN_EXPLORE) else ActionType.PLANT
        options = view.targets(kind)
    match.submit(Action(HUMAN, kind, rng.choice([c for c in range(64) if options >> c & 1])))


def _play(match: CpuMatch, clock: FakeClock, seed: int) -> list[Action]:
    rng = random.Random(seed)
    for _ in range(3000):
        if match.outcome is not None:
            break
        if match.view().to_move == HUMAN:
            _human_step(match, rng)
        else:
            clock.advance(0.65)
            match.update()
    assert match.outcome is not None
    return list(match._actions)


def test_the_popup_offers_four_levels_in_order():
    """Issue 18: easy / normal / hard / expert, the shared engine's levels, in that order."""
    assert DIFFICULTIES == tuple(str(level) for level in LEVELS) == ("easy", "normal", "hard", "expert")


@pytest.mark.parametrize("level", ["easy", "normal", "hard", "expert"])
def test_cpu_match_plays_each_level_through_cpu_player(level):
    """Every CPU step is what ``CpuPlayer(level)`` decides from the CPU's own views (V3), with the
    match's seeded random source (R4): replaying the CPU's views through a fresh player gives the
    same actions. For easy/normal/hard that is ``ai.next_step`` exactly, as before (AI1–AI5)."""
    clock = FakeClock()
    match = CpuMatch(difficulty=level, seed=77, clock=clock)
    actions = _play(match, clock, seed=5)
    assert str(match.difficulty) == level
    state = GameState(Variant.CPU)
    player = CpuPlayer(Level(level))
    rng = random.Random(77)
    last_safe = None
    for action in actions:
        if action.seat == CPU:
            assert player.step(state.view(CPU), rng, last_safe).action == action
        result = state.apply(action)
        if action.seat == HUMAN and action.type is ActionType.EXPLORE and state.outcome() is None:
            last_safe = action.cell
        assert not isinstance(result, Refusal)
    assert state.outcome() == match.outcome


def test_the_specified_levels_still_take_a_replacement_step_and_the_expert_refuses_one():
    """Tests wrap ``ai.next_step`` for the specified levels (unchanged); the expert has no such hook."""
    seen: list[object] = []

    def step(view, difficulty, rng, last):
        seen.append(difficulty)
        return ai.next_step(view, difficulty, rng, last)

    clock = FakeClock()
    match = CpuMatch(difficulty="hard", seed=3, clock=clock, step=step)
    _play(match, clock, seed=1)
    assert seen and all(d is ai.Difficulty.HARD for d in seen)
    with pytest.raises(ValueError):
        CpuMatch(difficulty="expert", seed=3, clock=clock, step=step)


def test_choosing_expert_starts_an_expert_match_played_to_the_end_by_mouse(tmp_path):
    """The start popup's Expert pill → an expert match (header pill, record, result popup say so),
    played to its end with clicks; the saved record replays to the same end."""
    d = Driver(tmp_path, language="en", seed=4321)
    try:
        app = d.app
        popup = app.stack.popup
        assert isinstance(popup, RulesPopup) and popup.difficulty == "normal"
        d.click_button("difficulty:expert")
        assert popup.difficulty == "expert"
        assert popup.widgets.by_name("difficulty:expert").style == "selected"
        d.click_button("start")
        d.wait(0.3)
        assert app.session.difficulty == "expert"
        assert str(app.game.controller.difficulty) == "expert"
        pills = [text for text, *_ in app.game.paint.header_layout()[2]]
        assert "Expert" in pills
        play_to_the_end(d)
        d.wait(1.5)
        result = app.stack.popup
        assert isinstance(result, ResultPopup) and result.info.difficulty == "expert"
        saved = list((tmp_path / "records").glob("*.json"))
        assert len(saved) == 1
        data = json.loads(saved[0].read_text(encoding="utf-8"))
        assert data["players"][1] == {"seat": 1, "kind": "cpu", "difficulty": "expert", "seed": 4321}
        rec = record.loads(saved[0].read_text(encoding="utf-8"))
        state, steps = record.run(rec)
        assert all(step["ok"] for step in steps) and state.outcome() == app.game.ended.outcome
    finally:
        d.close()


def test_kiosk_may_preselect_expert(tmp_path):
    """``difficulty = "expert"`` is a valid kiosk value (docs/KIOSK.md) and is preselected."""
    config, problems = parse_config({"difficulty": "expert"})
    assert problems == [] and config.difficulty == "expert"
    d = Driver(tmp_path, size=(1280, 800), kiosk=KioskConfig(difficulty="expert"))
    try:
        d.click_button("lang:en")
        d.click_button("tutorial.skip")
        popup = d.app.stack.popup
        assert isinstance(popup, RulesPopup) and popup.difficulty == "expert"
        d.click_button("start")
        assert str(d.app.game.controller.difficulty) == "expert"
    finally:
        d.close()


@pytest.mark.parametrize("size", [(390, 844), (320, 568)])
@pytest.mark.parametrize("language", LANGUAGES)
def test_the_four_pills_fit_in_every_language(tmp_path, size, language):
    """Each level's name fits its pill at 16 px (no shrinking), inside the card, pills apart."""
    d = Driver(tmp_path, size=size, language=language)
    try:
        popup = d.app.stack.popup
        assert isinstance(popup, RulesPopup)
        pills = [popup.widgets.by_name(f"difficulty:{level}") for level in DIFFICULTIES]
        fonts = d.app.ctx.fonts
        for level, pill in zip(DIFFICULTIES, pills, strict=True):
            text = d.app.ctx.t(f"difficulty.{level}")
            assert fonts.width(text, 16, True) <= pill.rect.width - 20, (level, text)
            assert popup.card.contains(pill.rect) and pill.rect.height >= 44  # U4: a finger's size
        for i, a in enumerate(pills):
            assert all(not a.rect.colliderect(b.rect) for b in pills[i + 1:])
    finally:
        d.close()
