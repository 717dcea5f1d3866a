"""The replay viewer and the saved matches list (issue 19 item 3), driven like a player would.

Opened from the CPU result popup (*Replay*), the game menu's *Saved matches* and a file given on the
command line; stepped by buttons, keys, the timeline and a swipe; played and paused on the app's fake
clock; three views — a seat view never holds the other seat's mines (V2) and is exactly the engine's
view after that many actions (what ``mine-duel replay --view --at`` prints). A bad file is a message.
"""

from __future__ import annotations

import json
from pathlib import Path

import pygame
import pytest
from support.client_driver import Driver, play_to_the_end
from support.strategies import random_records

from mineduel.client import cli
from mineduel.client.scenes.popups import MenuPopup
from mineduel.client.scenes.replay_viewer import PLAY_INTERVAL, ReplayViewer
from mineduel.client.scenes.result_popup import ResultPopup
from mineduel.client.scenes.saved_matches import SavedMatchesScene, list_saved
from mineduel.shared.cli.replay import state_at
from mineduel.shared.fairness.record import loads
from mineduel.shared.rules.notation import view_to_ascii


def finished_cpu(tmp_path: Path, **kwargs: object) -> Driver:
    d = Driver(tmp_path, language="en", **kwargs)
    d.click_named("start")
    d.frame()
    play_to_the_end(d)
    d.wait(1.0)
    assert isinstance(d.app.stack.popup, ResultPopup)
    return d


def viewer(d: Driver) -> ReplayViewer:
    scene = d.app.stack.top
    assert isinstance(scene, ReplayViewer)
    return scene


def click(d: Driver, scene: ReplayViewer | SavedMatchesScene, name: str) -> None:
    button = scene.widgets.by_name(name)
    assert button.enabled, name
    d.click(d.to_window(button.rect.center))
    d.frame()


@pytest.fixture
def cpu(tmp_path):
    d = finished_cpu(tmp_path)
    d.click_named("replay")
    d.frame()
    yield d
    d.close()


def test_replay_opens_from_the_result_popup_and_back_returns_to_it(cpu):
    scene = viewer(cpu)
    text = cpu.app.game.controller.record_text()
    assert scene.replay is not None and scene.problem is None
    assert scene.replay.last == len(loads(text).actions)
    assert cpu.app.stack.popup is None and scene.index == 0 and scene.view == "0"
    cpu.app.render()
    click(cpu, scene, "back")
    assert isinstance(cpu.app.stack.popup, ResultPopup)
    assert cpu.app.stack.top is cpu.app.game


def test_stepping_by_buttons_keys_timeline_and_swipe(cpu):
    scene = viewer(cpu)
    last = scene.replay.last
    assert not scene.widgets.by_name("prev").enabled
    click(cpu, scene, "next")
    assert scene.index == 1
    cpu.key(pygame.K_RIGHT)
    cpu.key(pygame.K_RIGHT)
    assert scene.index == 3
    cpu.key(pygame.K_LEFT)
    assert scene.index == 2
    cpu.key(pygame.K_END)
    assert scene.index == last and not scene.widgets.by_name("next").enabled
    cpu.key(pygame.K_HOME)
    assert scene.index == 0
    # a turn at a time: the opening is one turn, then each F3 turn
    click(cpu, scene, "turn_next")
    steps = scene.replay.steps
    assert steps[scene.index].turn != steps[0].turn and steps[scene.index - 1].turn == steps[0].turn
    first_turn = scene.index
    cpu.key(pygame.K_PAGEDOWN)
    assert steps[scene.index].turn != steps[first_turn].turn
    cpu.key(pygame.K_PAGEUP)
    assert scene.index == first_turn
    # the timeline: a tap at its right end is the last action, at its left end the first
    track = scene.paint.TRACK
    cpu.tap(cpu.to_window((track.right, track.centery)))
    assert scene.index == last
    cpu.click(cpu.to_window((track.left, track.centery)))
    cpu.frame()
    assert scene.index == 0
    # a swipe over the board, right to left: the next action
    board = scene.paint.board.card
    cpu.press(cpu.to_window((board.centerx + 80, board.centery)))
    cpu.release(cpu.to_window((board.centerx - 80, board.centery)))
    cpu.frame()
    assert scene.index == 1


def test_each_view_is_the_engines_view_and_a_seat_never_sees_the_other_seats_mines(cpu):
    """V2: at every step the seat views are ``GameState.view(seat)`` — what ``mine-duel replay --view
    seat --at N`` prints — and hold none of the other seat's mines; the full board adds them."""
    scene = viewer(cpu)
    record = loads(cpu.app.game.controller.record_text())
    for n in range(scene.replay.last + 1):
        scene.go(n)
        state = state_at(record, n)
        for key, seat in ((pygame.K_0, 0), (pygame.K_1, 1)):
            cpu.key(key)
            shown = scene.paint.board.view
            assert scene.view == str(seat) and shown == state.view(seat)
            assert view_to_ascii(shown) == view_to_ascii(state.view(seat))
            assert shown.my_mines & ~state.mines[seat] == 0
            assert shown.my_mines == state.mines[seat]
    # Drawn: a cell holding only the CPU's mine looks like an empty closed cell in the human's view,
    # and shows a mine on the full board.
    scene.go(scene.replay.last)
    final = state_at(record, scene.replay.last)
    only_cpu = final.mines[1] & ~final.mines[0] & ~final.revealed & ~final.any_marker
    cell = next(c for c in range(64) if only_cpu >> c & 1 and c != final.ko_cell)
    empty = next(c for c in range(64) if not (final.any_mine | final.revealed | final.any_marker) >> c & 1)
    centre, plain = scene.paint.board.cell_center(cell), scene.paint.board.cell_center(empty)
    cpu.key(pygame.K_0)
    assert cpu.pixel(centre) == cpu.pixel(plain)
    cpu.key(pygame.K_f)
    assert scene.view == "full" and cpu.pixel(centre) != cpu.pixel(plain)
    click(cpu, scene, "view:1")
    assert scene.view == "1"


def test_play_and_pause_step_on_the_fake_clock(cpu):
    scene = viewer(cpu)
    cpu.key(pygame.K_SPACE)
    assert scene.playing and scene.index == 0
    assert cpu.app.frame() is not None
    cpu.frame(PLAY_INTERVAL * 0.5)
    assert scene.index == 0
    cpu.frame(PLAY_INTERVAL * 0.6)
    assert scene.index == 1
    cpu.frame(PLAY_INTERVAL)
    assert scene.index == 2
    click(cpu, scene, "play")  # Pause
    assert not scene.playing
    cpu.wait(PLAY_INTERVAL * 4)
    assert scene.index == 2
    # played to the end, it stops there; Play again starts from the beginning
    cpu.key(pygame.K_SPACE)
    cpu.wait(PLAY_INTERVAL * (scene.replay.last + 2), step=PLAY_INTERVAL / 2)
    assert scene.index == scene.replay.last and not scene.playing
    cpu.key(pygame.K_SPACE)
    assert scene.playing and scene.index == 0


def test_the_events_are_named_from_the_chosen_view(cpu):
    """A CPU plant is "somewhere" in the human's view, at its cell on the full board (V2)."""
    scene = viewer(cpu)
    plants = [s.index for s in scene.replay.steps if s.action is not None and s.action.seat == 1
              and s.action.type.value == "plant" and not s.refused]
    assert plants
    scene.go(plants[0])
    cpu.key(pygame.K_0)
    assert scene.event_text() == "CPU planted a mine somewhere"
    cpu.key(pygame.K_f)
    assert scene.event_text().startswith("CPU planted a mine at row ")
    scene.go(0)
    assert scene.event_text() == "Before the first move"


def write_record(folder: Path, name: str, started: str, winner: int, turns: int) -> Path:
    data = random_records(len(name), 1, "cpu")[0]
    data["times"] = {"started": started, "ended": started, "elapsed_seconds": 61.0, "turns": turns}
    data["players"] = [{"seat": 0, "kind": "human"}, {"seat": 1, "kind": "cpu", "difficulty": "hard", "seed": 1}]
    data["result"] = {"winner": winner, "reason": "ko"}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(data))
    return path


def test_the_saved_list_is_newest_first_and_opens_the_viewer(tmp_path):
    records = tmp_path / "records"
    write_record(records, "a.json", "2023-11-14T22:13:20Z", 0, 5)
    write_record(records, "b.json", "2024-01-02T08:00:00Z", 1, 7)
    write_record(records, "c.json", "2022-05-01T10:00:00Z", 0, 3)
    (records / "broken.json").write_text("{not json")
    listed = list_saved(records)
    assert [m.path.name for m in listed if m.readable] == ["b.json", "a.json", "c.json"]
    assert [m.readable for m in listed].count(False) == 1
    d = Driver(tmp_path, language="en")
    d.click_named("start")
    d.frame()
    d.key(pygame.K_ESCAPE)
    assert isinstance(d.app.stack.popup, MenuPopup)
    d.click_named("menu.saved_matches")
    d.frame()
    scene = d.app.stack.top
    assert isinstance(scene, SavedMatchesScene)
    names = [m.path.name for m in scene.matches]
    assert [n for n in names if n != "broken.json"] == ["b.json", "a.json", "c.json"] and "broken.json" in names
    b = names.index("b.json")
    assert scene.result_text(scene.matches[b])[0] == "You lose"
    assert scene.result_text(scene.matches[names.index("a.json")])[0] == "You win!"
    assert scene.opponent_text(scene.matches[b]) == "vs CPU (Hard)"
    assert scene.length_text(scene.matches[b]).startswith("7 turns")
    d.app.render()
    click(d, scene, f"match:{b}")
    v = viewer(d)
    assert v.replay is not None and v.replay.last == len(json.loads((records / "b.json").read_text())["actions"])
    d.key(pygame.K_ESCAPE)
    assert d.app.stack.top is scene
    click(d, scene, f"match:{names.index('broken.json')}")
    assert viewer(d).problem is not None and viewer(d).replay is None
    d.app.render()
    d.close()


def test_an_empty_saved_list_says_so(tmp_path):
    d = Driver(tmp_path, language="en")
    from mineduel.client.scenes.saved_matches import open_saved

    open_saved(d.app.ctx)
    d.frame()
    scene = d.app.stack.top
    assert isinstance(scene, SavedMatchesScene)
    assert scene.matches == [] and [b.name for b in scene.widgets.buttons] == ["back"]
    d.close()


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"{not json at all", "cannot be shown as a replay"),
        (b'{"format": "mine-duel-record/9", "variant": "cpu", "actions": []}', "cannot be shown as a replay"),
        (b"\xff\xfe\x00binary", "cannot be read"),
        (None, "cannot be read"),
    ],
)
def test_a_bad_file_given_at_start_is_a_message_screen(tmp_path, content, words):
    path = tmp_path / "match.json"
    if content is not None:
        path.write_bytes(content)
    d = Driver(tmp_path, language="en", replay_view=path)
    scene = viewer(d)
    assert scene.replay is None and words in (scene.problem or "")
    for key in (pygame.K_RIGHT, pygame.K_SPACE, pygame.K_1, pygame.K_END):
        d.key(key)
    d.app.render()
    d.key(pygame.K_ESCAPE)  # Back: the game's own start
    assert d.app.stack.top is d.app.game
    d.close()


def test_a_file_given_at_start_opens_in_the_viewer(tmp_path):
    path = write_record(tmp_path / "elsewhere", "m.json", "2023-11-14T22:13:20Z", 0, 5)
    d = Driver(tmp_path, language="ko", replay_view=path)
    scene = viewer(d)
    assert scene.replay is not None and scene.problem is None
    d.app.render()
    d.close()


def test_the_command_line_routes_replay_view_and_a_json_file_to_the_viewer(monkeypatch, tmp_path):
    calls: list[list[str]] = []
    monkeypatch.setattr("mineduel.client.app.main", lambda argv: calls.append(list(argv)) or 0)
    assert cli.main(["replay-view", "a.json", "--lang", "ko"]) == 0
    assert cli.main(["b.JSON"]) == 0
    assert calls == [["--lang", "ko", "--replay-view", "a.json"], ["--replay-view", "b.JSON"]]
    assert cli.main(["replay-view"]) == 2
    assert cli.main(["replay-view", "--lang", "ko"]) == 2


# ----- online: the in-screen result panel's Replay ---------------------------------------------------------


def test_online_replay_from_the_result_panel_shows_what_my_seat_was_sent(tmp_path):
    """The panel's *Replay* opens the record the server sent, on my seat; at the end my view is the
    view of the last ``state`` this client received (V2), and the names are the players'."""
    from support.harness import oracle_message
    from support.inprocess import InProcessServer

    from mineduel.client.online_client import OnlineServices
    from mineduel.client.scenes.game import GameScene
    from mineduel.client.scenes.online import OnlineScene
    from mineduel.client.tokens import TokenStore

    srv = InProcessServer()
    peer = srv.peer()
    code = peer.send(type="create_room", name="Ann", client_seed="peer-0")[0]["room"]
    services = OnlineServices(connect=srv.connector(), tokens=TokenStore(tmp_path / "data"))
    d = Driver(tmp_path, language="en", join=f"mineduel://127.0.0.1:47650/join/{code}", online_services=lambda: services)
    from dataclasses import replace

    d.app.ctx.settings = replace(d.app.ctx.settings, player_name="Tester")
    lobby = d.app.stack.top
    assert isinstance(lobby, OnlineScene)
    d.frame()
    for name in ("join", "ready"):
        d.click(d.to_window(lobby.widgets.by_name(name).rect.center))
        d.frame()
    peer.send(type="ready", client_seed="peer-1")
    d.frame()
    srv.advance(3.0)
    d.wait(0.5)
    game = d.app.stack.top
    assert isinstance(game, GameScene)
    me = game.controller.seat
    for _ in range(200):
        state = srv.truth(code)
        if state.turn >= 4 or state.over:
            break
        msg = oracle_message(state)
        if state.to_move != me:
            peer.send(**msg)
        elif msg["type"] == "end_turn":
            d.click_button("end_turn")
        else:
            d.click_cell(msg["cell"][0] * 8 + msg["cell"][1])
        srv.end_turn()
        d.wait(0.2)
    peer.send(type="resign")
    d.wait(1.0)
    assert game.panel.open
    button = game.panel.widgets.by_name("replay")
    assert button.enabled
    d.click(d.to_window(button.rect.center))
    d.frame()
    scene = viewer(d)
    assert scene.replay is not None and scene.view == str(me)
    assert {scene.name(0), scene.name(1)} == {"Ann", "Tester"}
    scene.go(scene.replay.last)
    live = game.controller.view()
    shown = scene.paint.board.view
    assert shown.my_mines == live.my_mines and shown.revealed == live.revealed and shown.numbers == live.numbers
    assert shown.opponent_markers == live.opponent_markers and shown.my_markers == live.my_markers
    d.app.render()
    d.key(pygame.K_ESCAPE)
    assert d.app.stack.top is game and game.panel.open
    d.close()


def test_the_saved_list_pages_and_reads_an_online_seat_from_its_witness(tmp_path):
    records = tmp_path / "records"
    for i in range(9):
        write_record(records, f"m{i}.json", f"2024-01-{i + 1:02d}T08:00:00Z", i % 2, i)
    online = random_records(5, 1, "online")[0]
    online.update(match_id="00aa11bb22cc33dd", players=[{"seat": 0, "name": "Ann"}, {"seat": 1, "name": "Bob"}],
                  times={"started": 1_800_000_000.0, "elapsed": 30.0, "turns": 2},
                  result={"over": True, "winner": 1, "reason": "resign", "scores": None})
    (records / "online.json").write_text(json.dumps(online))
    (tmp_path / "witnesses").mkdir()
    (tmp_path / "witnesses" / "00aa11bb22cc33dd.json").write_text(json.dumps({"seat": 1}))
    d = Driver(tmp_path, language="en")
    d.click_named("start")  # the start popup closed, as when the list is opened from the game menu
    d.frame()
    from mineduel.client.scenes.saved_matches import PER_PAGE, open_saved

    open_saved(d.app.ctx)
    d.frame()
    scene = d.app.stack.top
    assert isinstance(scene, SavedMatchesScene)
    assert scene.matches[0].path.name == "online.json" and scene.matches[0].me == 1
    assert scene.result_text(scene.matches[0])[0] == "You win!"
    assert scene.opponent_text(scene.matches[0]) == "vs Ann"
    assert scene.pages == 2 and len(scene.shown()) == PER_PAGE
    assert not scene.widgets.by_name("page_prev").enabled
    click(d, scene, "page_next")
    assert scene.page == 1 and [m.path.name for m in scene.shown()] == ["m2.json", "m1.json", "m0.json"]
    d.key(pygame.K_PAGEUP)
    assert scene.page == 0
    click(d, scene, "match:0")
    assert viewer(d).view == "1" and viewer(d).name(0) == "Ann"
    d.close()
