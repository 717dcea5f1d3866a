"""The post-match analysis screen (issue 18 item 3): opened from the CPU result popup and the online
result panel, it lists the player's risky explores exactly as ``shared.ai.analysis.explore_risks``
judges them from the player's seat, steps through the explores by button, key and swipe, goes back to
the result, and says plainly when there is no record or it cannot be read. It uses the seat's view
only (V2): mines the player never saw do not change a single figure."""

from __future__ import annotations

import json
from dataclasses import replace

import pygame
import pytest
from support.client_driver import Driver, play_to_the_end
from support.harness import oracle_message
from support.inprocess import InProcessServer

from mineduel.client.online_client import OnlineServices
from mineduel.client.scenes.analysis import AnalysisScene, analyse_record
from mineduel.client.scenes.analysis_paint import percent
from mineduel.client.scenes.game import GameScene
from mineduel.client.scenes.online import OnlineScene
from mineduel.client.scenes.result_popup import ResultPopup
from mineduel.client.tokens import TokenStore
from mineduel.shared.ai.analysis import explore_risks
from mineduel.shared.fairness.record import dumps, loads
from mineduel.shared.rules.engine import ActionType, GameState, Refusal
from mineduel.shared.rules.vocabulary import Action


def finished_cpu(tmp_path, **kwargs) -> Driver:
    d = Driver(tmp_path, language="en", **kwargs)
    d.click_named("start")
    d.frame()
    play_to_the_end(d)
    d.wait(1.0)
    assert isinstance(d.app.stack.popup, ResultPopup)
    return d


def open_from_popup(d: Driver) -> AnalysisScene:
    d.click_named("analysis")
    scene = d.app.stack.top
    assert isinstance(scene, AnalysisScene) and d.app.stack.popup is None
    d.frame()  # "Calculating..." drawn, then worked out in the next frame
    d.frame()
    assert scene.analysis is not None
    return scene


def click(d: Driver, scene: AnalysisScene, name: str) -> None:
    d.click(d.to_window(scene.widgets.by_name(name).rect.center))
    d.frame()


@pytest.fixture
def cpu(tmp_path):
    d = finished_cpu(tmp_path)
    yield d
    d.close()


def test_the_risk_list_is_explore_risks_of_the_human_seat(cpu):
    text = cpu.app.game.controller.record_text()
    scene = open_from_popup(cpu)
    record = loads(text)
    expected = explore_risks(record.actions, 0, record.variant)
    assert expected, "the human explored"
    assert [s.risk for s in scene.steps] == list(expected)
    assert scene.analysis.risky == tuple(i for i, r in enumerate(expected) if r.risky)
    humans = [a for a in record.actions if a.seat == 0 and a.type is ActionType.EXPLORE]
    assert [s.risk.cell for s in scene.steps] == [a.cell for a in humans][: len(scene.steps)]
    cpu.app.render()  # the summary, board, heat and legend draw without a problem


def test_stepping_by_buttons_keys_and_swipe(cpu):
    scene = open_from_popup(cpu)
    last = len(scene.steps) - 1
    assert last >= 2 and scene.index == 0
    assert not scene.widgets.by_name("prev").enabled
    click(cpu, scene, "next")
    assert scene.index == 1
    click(cpu, scene, "prev")
    assert scene.index == 0
    cpu.key(pygame.K_RIGHT)
    cpu.key(pygame.K_RIGHT)
    assert scene.index == 2
    cpu.key(pygame.K_LEFT)
    assert scene.index == 1
    cpu.key(pygame.K_END)
    assert scene.index == last and not scene.widgets.by_name("next").enabled
    cpu.key(pygame.K_RIGHT)  # already the last: stays
    assert scene.index == last
    cpu.key(pygame.K_HOME)
    board = scene.paint.board.card
    start, end = cpu.to_window((board.right - 40, board.centery)), cpu.to_window((board.left + 40, board.centery))
    cpu.press(start)
    cpu.post(pygame.MOUSEMOTION, pos=end, rel=(0, 0), buttons=(1, 0, 0))
    cpu.release(end)
    cpu.frame()
    assert scene.index == 1  # right to left: the next explore
    # The board shows the seat's view before that explore, the one the risk was judged on.
    step = scene.step
    assert scene.paint.board.view is step.view and step.view.explorable >> step.risk.cell & 1
    cpu.app.render()


def test_back_and_escape_return_to_the_result(cpu):
    game = cpu.app.game
    scene = open_from_popup(cpu)
    click(cpu, scene, "back")
    assert cpu.app.stack.top is game and isinstance(cpu.app.stack.popup, ResultPopup)
    scene = open_from_popup(cpu)  # the second time: the cached analysis, at once
    cpu.key(pygame.K_ESCAPE)
    assert cpu.app.stack.top is game and isinstance(cpu.app.stack.popup, ResultPopup)


def test_risky_chips_jump_to_the_risky_explores(tmp_path):
    d = finished_cpu(tmp_path)
    scene = open_from_popup(d)
    risky = scene.analysis.risky
    assert risky, "this seed's human took a risk"
    assert [b.name for b in scene.widgets.buttons if b.name.startswith("risky:")] == [f"risky:{i}" for i in risky]
    click(d, scene, f"risky:{risky[-1]}")
    assert scene.index == risky[-1] and scene.step.risk.risky
    d.app.render()
    d.close()


def test_more_than_four_risky_explores_a_chip_steps_through_the_rest(tmp_path):
    d = finished_cpu(tmp_path, seed=7)
    scene = open_from_popup(d)
    risky = scene.analysis.risky
    assert len(risky) > 4
    assert [b.name for b in scene.widgets.buttons if b.name.startswith("risky:")] == [f"risky:{i}" for i in risky[:3]]
    click(d, scene, f"risky:{risky[2]}")
    click(d, scene, "more")
    assert scene.index == risky[3]
    click(d, scene, "more")
    assert scene.index == risky[4]
    d.close()


def test_percent_reads_as_a_player_expects():
    assert [percent(p) for p in (0, 0.0004, 0.053, 0.25, 0.999, 1)] == ["0%", "<0.1%", "5.3%", "25%", ">99%", "100%"]


def _plays_until_end(actions: list[Action]) -> list[Action]:
    state = GameState("cpu")
    kept = []
    for a in actions:
        if state.over:
            break
        if not isinstance(state.apply(a), Refusal):
            kept.append(a)
    return kept


def test_mines_the_seat_never_saw_change_nothing(cpu):
    """V2: move one CPU plant the human never found to another cell it never found; same analysis."""
    record = loads(cpu.app.game.controller.record_text())
    actions = list(record.actions)
    final = GameState("cpu")
    for a in actions:
        final.apply(a)
    seen = final.view(0).revealed
    plants = [i for i, a in enumerate(actions) if a.seat == 1 and a.type is ActionType.PLANT and not seen >> a.cell & 1]
    assert plants
    base = analyse_record(dumps("cpu", actions), 0)
    changed = 0
    for i in plants:
        for other in range(64):
            if other == actions[i].cell or seen >> other & 1:
                continue
            moved = [*actions[:i], replace(actions[i], cell=other), *actions[i + 1:]]
            if _plays_until_end(moved) != moved:
                continue  # that cell was not plantable then, or it changed what followed
            if [s.view for s in analyse_record(dumps("cpu", moved), 0).steps] != [s.view for s in base.steps]:
                continue  # the human would have seen it (a number), so it is not a hidden difference
            other_analysis = analyse_record(dumps("cpu", moved), 0)
            assert [s.risk for s in other_analysis.steps] == [s.risk for s in base.steps]
            changed += 1
            break
    assert changed, "found a record differing only in a mine the seat never saw"


# ----- online ------------------------------------------------------------------------------------------


class Online:
    """A headless app that joined a room on an in-process server and played a match to its end: it
    explores, the scripted opponent plays along, then resigns; the in-screen result panel is open."""

    def __init__(self, tmp_path, language: str = "en") -> None:
        self.srv = InProcessServer()
        self.peer = self.srv.peer()
        code = self.peer.send(type="create_room", client_seed="peer-0")[0]["room"]
        self.code = code
        services = OnlineServices(connect=self.srv.connector(), tokens=TokenStore(tmp_path / "data"))
        self.d = Driver(tmp_path, language=language, join=f"mineduel://127.0.0.1:47650/join/{code}",
                        online_services=lambda: services)
        self.d.app.ctx.settings = replace(self.d.app.ctx.settings, player_name="Tester")
        lobby = self.d.app.stack.top
        assert isinstance(lobby, OnlineScene)
        self.lobby = lobby
        self.d.frame()
        self._click(lobby.widgets, "join")
        self._click(lobby.widgets, "ready")
        self.peer.send(type="ready", client_seed="peer-1")
        self.d.frame()
        self.srv.advance(3.0)
        self.d.wait(0.5)
        game = self.d.app.stack.top
        assert isinstance(game, GameScene)
        self.game = game

    def _click(self, group, name: str) -> None:
        self.d.click(self.d.to_window(group.by_name(name).rect.center))
        self.d.frame()

    def play(self, turns: int = 6) -> None:
        """Both seats make the server oracle's safe moves (mine by clicking) until turn ``turns``."""
        me = self.game.controller.seat
        for _ in range(200):
            state = self.srv.truth(self.code)
            if state.turn >= turns or state.over:
                return
            msg = oracle_message(state)
            if state.to_move != me:
                self.peer.send(**msg)
            elif msg["type"] == "end_turn":
                self.d.click_button("end_turn")
            else:
                row, col = msg["cell"]
                self.d.click_cell(row * 8 + col)
            self.srv.end_turn()
            self.d.wait(0.2)
        raise AssertionError("the match did not reach that turn")

    def end(self) -> None:
        self.play()
        self.peer.send(type="resign")
        self.d.wait(1.0)
        assert self.game.panel.open


@pytest.fixture
def online(tmp_path):
    o = Online(tmp_path)
    yield o
    o.d.close()


def test_online_analysis_uses_the_record_the_server_sent_and_my_seat(online):
    online.end()
    controller = online.game.controller
    record = controller.capabilities.verify.record()
    assert record is not None
    online._click(online.game.panel.widgets, "analysis")
    scene = online.d.app.stack.top
    assert isinstance(scene, AnalysisScene)
    online.d.frame()
    online.d.frame()
    assert scene.problem is None and scene.analysis is not None
    parsed = loads(json.dumps(record))
    assert len(scene.steps) >= 2  # my opening explore and more
    assert [s.risk for s in scene.steps] == list(explore_risks(parsed.actions, controller.seat, parsed.variant))
    online.d.app.render()
    online.d.key(pygame.K_ESCAPE)
    assert online.d.app.stack.top is online.game and online.game.panel.open


def test_online_without_a_record_says_so(online):
    online.end()
    match = online.lobby.client.match
    match.end = replace(match.end, record=None)
    online._click(online.game.panel.widgets, "analysis")
    scene = online.d.app.stack.top
    assert isinstance(scene, AnalysisScene)
    online.d.frame()
    online.d.frame()
    assert scene.analysis is None and scene.problem == online.d.app.ctx.t("analysis.no_record")
    online.d.app.render()
    click(online.d, scene, "back")
    assert online.d.app.stack.top is online.game


def test_a_record_that_cannot_be_read_is_a_message(online):
    online.end()
    match = online.lobby.client.match
    match.end = replace(match.end, record={"format": "something-else"})
    online._click(online.game.panel.widgets, "analysis")
    scene = online.d.app.stack.top
    online.d.frame()
    online.d.frame()
    assert isinstance(scene, AnalysisScene) and scene.analysis is None
    assert scene.problem is not None and scene.problem.startswith("This match's record could not be analysed")
    online.d.app.render()


def test_touch_taps_and_a_finger_swipe_step(cpu):
    scene = open_from_popup(cpu)
    cpu.tap(cpu.to_window(scene.widgets.by_name("next").rect.center))
    assert scene.index == 1
    board = scene.paint.board.card
    w, h = cpu.app.viewport.mapping.window
    start, end = cpu.to_window((board.left + 40, board.centery)), cpu.to_window((board.right - 40, board.centery))
    for etype, pos in ((pygame.FINGERDOWN, start), (pygame.FINGERMOTION, end), (pygame.FINGERUP, end)):
        cpu.post(etype, x=pos[0] / w, y=pos[1] / h, dx=0.0, dy=0.0, touch_id=1, finger_id=1, pressure=1.0)
    cpu.frame()
    assert scene.index == 0  # left to right: the previous explore
    cpu.tap(cpu.to_window(scene.widgets.by_name("back").rect.center))
    assert isinstance(cpu.app.stack.popup, ResultPopup)


def test_keyboard_only_open_step_and_leave(cpu):
    popup = cpu.app.stack.popup
    while popup.widgets.focused() is None or popup.widgets.focused().name != "analysis":
        cpu.key(pygame.K_TAB)
    cpu.key(pygame.K_RETURN)
    scene = cpu.app.stack.top
    assert isinstance(scene, AnalysisScene)
    cpu.frame()
    cpu.frame()
    assert scene.widgets.focused() is not None and scene.widgets.focused().name == "next"
    cpu.key(pygame.K_RETURN)
    assert scene.index == 1
    cpu.key(pygame.K_ESCAPE)
    assert isinstance(cpu.app.stack.popup, ResultPopup)


def test_a_short_window_shows_the_board_steps_and_legend(tmp_path):
    """320×568 shows the top 692 canvas pixels (width-fit): everything but the threshold note is there."""
    from mineduel.client.scenes import analysis_paint as paint

    d = finished_cpu(tmp_path, size=(320, 568))
    scene = open_from_popup(d)
    assert d.app.ctx.visible().height >= paint.LEGEND_Y + 56
    assert scene.paint.board.card.bottom < paint.STEP_Y and scene.widgets.by_name("next").rect.bottom < paint.DETAIL_Y
    d.app.render()
    d.close()
