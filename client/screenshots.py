"""``mine-duel screenshots --out DIR``: every screen and popup, in every language, as 390×844 PNGs.

Headless (SDL's dummy driver). Each picture comes from the real app object driven the way a
player would: real pygame events for clicks and keys, a fake clock advanced between frames so
animations are settled (or caught on purpose). Positions late in a match are set up with the
ASCII notation (``shared/notation.py``) and then finished by a real action, so the result popups
show genuine outcomes. Files are named ``<lang>/<nn>_<screen>.png``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mineduel.client.scenes.game import GameScene

SHOTS: list[tuple[str, Callable[[Shooter], None]]] = []


def shot(name: str) -> Callable[[Callable[[Shooter], None]], Callable[[Shooter], None]]:
    def register(fn: Callable[[Shooter], None]) -> Callable[[Shooter], None]:
        SHOTS.append((name, fn))
        return fn

    return register


# A mid-game position with everything the board can show: both players' cells (numbers from the
# mines), my mines, both kinds of flag, my flag on my own mine (a bluff), a CPU flag on its mine.
MID_GAME = """
o? o? x? .. .. A. .. ..
o? x? x? X. B. o? .b ..
B. o? A. x? o? x? .. ..
.. .. o? x? B. Aa .. ..
.. B. x? o? .a o? .. ..
.. .. .. x? o? .. .. A.
.. .. .. .. .. .. x? ..
A. .. .. .. .. x? x? Bb
"""

# Late positions, each one action from an end (C1, C2, C4): unrevealed cells are listed by token.
_LATE = """
o? o? o? x? x? o? o? o?
o? {a} o? x? x? o? {b} o?
o? o? o? o? x? x? o? o?
x? x? x? {c} x? o? o? o?
x? x? x? x? x? o? {d} o?
o? o? o? o? o? o? o? o?
o? {e} o? x? x? o? o? o?
o? o? o? x? x? o? o? o?
"""


def late(a: str, b: str, c: str, d: str, e: str = "o?") -> str:
    return _LATE.format(a=a, b=b, c=c, d=d, e=e)


class Shooter:
    """One app per picture, on a fake clock, with helpers that post real pygame events."""

    def __init__(self, out: Path, language: str | None, profile: Path) -> None:
        import pygame

        from mineduel.client.app import App

        self.pygame = pygame
        self.out = out
        self.now = 1000.0
        self.app = App(size=(390, 844), language=language, profile_dir=profile, export_dir=profile / "exports",
                       clock=lambda: self.now, seed=20240601)
        self.frame()

    @property
    def game(self) -> GameScene:
        return self.app.game

    def frame(self, dt: float = 0.0) -> None:
        self.now += dt
        self.app.frame()

    def settle(self, seconds: float = 2.0) -> None:
        for _ in range(int(seconds / 0.1)):
            self.frame(0.1)

    def click(self, pos: tuple[float, float]) -> None:
        pg = self.pygame
        pg.event.post(pg.event.Event(pg.MOUSEBUTTONDOWN, pos=(round(pos[0]), round(pos[1])), button=1))
        pg.event.post(pg.event.Event(pg.MOUSEBUTTONUP, pos=(round(pos[0]), round(pos[1])), button=1))
        self.frame(0.02)

    def key(self, key: int) -> None:
        pg = self.pygame
        pg.event.post(pg.event.Event(pg.KEYDOWN, key=key, mod=0, unicode=""))
        self.frame(0.02)

    def click_button(self, name: str) -> None:
        """Click a button of the open popup, or of the game screen."""
        popup = self.app.stack.popup
        group = popup.widgets if popup is not None else self.game.widgets
        self.click(group.by_name(name).rect.center)

    def click_cell(self, row: int, col: int) -> None:
        self.click(self.game.board.cell_center(row * 8 + col))

    def start_from(self, board: str, *, phase: str = "explore", to_move: int = 0, turn: int = 7,
                   marker_used: bool = False) -> None:
        """Press Start on the rules popup, with the match set to ``board``."""
        from mineduel.client.cpu_match import CpuMatch
        from mineduel.shared.rules.notation import from_ascii

        state = from_ascii(board, phase=phase, to_move=to_move, turn=turn, marker_used=marker_used)
        ctx = self.app.ctx
        clock = ctx.clock
        ctx.new_cpu_match = lambda **kw: CpuMatch(clock=clock, wall_clock=lambda: 1_700_000_000.0, state=state, **kw)
        self.click_button("start")
        self.settle(1.0)

    def save(self, name: str) -> Path:
        path = self.out / f"{name}.png"
        self.pygame.image.save(self.app.screenshot(), str(path))
        return path

    def close(self) -> None:
        self.app.close()


@shot("language_first_run")
def _language_first_run(s: Shooter) -> None:
    s.settle(0.5)


@shot("language_menu")
def _language_menu(s: Shooter) -> None:
    s.start_from(MID_GAME)
    s.key(s.pygame.K_ESCAPE)
    s.click_button("menu.language")
    s.settle(0.5)


@shot("rules_start")
def _rules(s: Shooter) -> None:
    s.settle(0.5)


def _mode(mode: str, phase: str, marker_used: bool = False) -> Callable[[Shooter], None]:
    def run(s: Shooter) -> None:
        s.start_from(MID_GAME, phase=phase, marker_used=marker_used)
        if mode in ("flag", "unflag"):
            s.click_button(f"mode:{mode}")
        if mode == "flag":
            for key in (s.pygame.K_RIGHT, s.pygame.K_DOWN):  # keyboard focus on the board
                s.key(key)
        pg = s.pygame
        pg.event.post(pg.event.Event(pg.MOUSEMOTION, pos=s.game.board.cell_center(6 * 8 + 2), rel=(0, 0), buttons=(0, 0, 0)))
        s.settle(1.0)

    return run


shot("board_explore")(_mode("explore", "explore"))
shot("board_mine")(_mode("mine", "plant"))
shot("board_flag")(_mode("flag", "end_wait"))
shot("board_unflag")(_mode("unflag", "end_wait", marker_used=True))


@shot("refusal")
def _refusal(s: Shooter) -> None:
    s.start_from(MID_GAME)
    s.click_cell(2, 2)  # my own mine (refusal.own_mine)
    s.settle(0.6)


@shot("cpu_turn")
def _cpu_turn(s: Shooter) -> None:
    s.start_from(MID_GAME, phase="end_wait", marker_used=True)
    s.click_button("end_turn")
    s.frame(0.66)  # AI6: the CPU's first step 650 ms later (an explore)
    s.frame(0.2)  # mid-highlight, while the CPU waits for its next step


@shot("result_win")
def _win(s: Shooter) -> None:
    s.start_from(late("A.", "A.", "B.", "B.", "A."), phase="end_wait", turn=15, marker_used=True)
    s.click_button("end_turn")
    s.settle(4.0)  # the CPU flags and explores (C3) — onto my mine


@shot("result_loss")
def _loss(s: Shooter) -> None:
    s.start_from(MID_GAME, turn=9)
    s.click_cell(1, 4)  # the CPU's mine (KO)
    s.settle(1.5)


@shot("result_draw_all_flagged")
def _all_flagged(s: Shooter) -> None:
    s.start_from(late("Aa", ".b", "Bb", ".."), turn=18)
    s.click_button("mode:flag")
    s.click_cell(4, 6)  # the last unmarked cell (C1.1)
    s.settle(1.5)


@shot("result_draw_no_explorable")
def _no_explorable(s: Shooter) -> None:
    s.start_from(late("B.", ".a", "Bb", "B."), phase="end_wait", turn=18, marker_used=True)
    s.click_button("end_turn")  # the CPU's turn starts with nothing to explore (C1.4)
    s.settle(1.5)


@shot("result_draw_no_plantable")
def _no_plantable(s: Shooter) -> None:
    s.start_from(late("A.", ".b", "Bb", ".."), turn=18)
    s.click_cell(4, 6)  # the last safe cell; then nowhere to plant (C2)
    s.settle(1.5)


@shot("board_after_end")
def _after_end(s: Shooter) -> None:
    _loss(s)
    s.click_button("view_board")
    s.settle(0.5)


@shot("result_exported")
def _exported(s: Shooter) -> None:
    _loss(s)
    s.click_button("export")
    s.settle(0.3)


@shot("restart_confirm")
def _restart(s: Shooter) -> None:
    _loss(s)
    s.click_button("restart")
    s.settle(0.5)


@shot("menu")
def _menu(s: Shooter) -> None:
    s.start_from(MID_GAME)
    s.key(s.pygame.K_ESCAPE)
    s.settle(0.5)


@shot("rules_menu")
def _rules_menu(s: Shooter) -> None:
    s.start_from(MID_GAME)
    s.key(s.pygame.K_ESCAPE)
    s.click_button("menu.rules")
    s.settle(0.5)


@shot("online")
def _online(s: Shooter) -> None:
    s.start_from(MID_GAME)
    s.key(s.pygame.K_ESCAPE)
    s.click_button("menu.online")
    s.settle(0.5)


def main(argv: Sequence[str] | None = None) -> int:
    from mineduel.client import online_screenshots  # noqa: F401 - registers the online screens
    from mineduel.client.i18n import LANGUAGES

    parser = argparse.ArgumentParser(prog="mine-duel screenshots", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the PNG files")
    parser.add_argument("--lang", action="append", choices=LANGUAGES, help="only these languages (repeatable)")
    parser.add_argument("--only", action="append", help="only screens whose name contains this (repeatable)")
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    written = 0
    for code in args.lang or LANGUAGES:
        folder = args.out / code
        folder.mkdir(parents=True, exist_ok=True)
        for index, (name, run) in enumerate(SHOTS, start=1):
            if args.only and not any(part in name for part in args.only):
                continue
            with tempfile.TemporaryDirectory(prefix="mineduel-shot-") as tmp:
                first_run = name == "language_first_run"
                shooter = Shooter(folder, None if first_run else code, Path(tmp))
                # The settings' invite-links row reads (and may write) the desktop folders: a throw-away set.
                saved_env = {k: os.environ.get(k) for k in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_DATA_DIRS")}
                os.environ.update(XDG_DATA_HOME=f"{tmp}/xdg-data", XDG_CONFIG_HOME=f"{tmp}/xdg-config",
                                  XDG_DATA_DIRS=f"{tmp}/xdg-system")
                try:
                    run(shooter)
                    shooter.save(f"{index:02d}_{name}")
                    written += 1
                finally:
                    shooter.close()
                    for key, value in saved_env.items():
                        if value is None:
                            os.environ.pop(key, None)
                        else:
                            os.environ[key] = value
    print(f"wrote {written} screenshots to {args.out}")
    return 0


# ----- sound -----


def _open_settings(s: Shooter) -> None:
    s.start_from(MID_GAME)
    s.key(s.pygame.K_ESCAPE)
    s.click_button("menu.settings")
    s.settle(0.5)


@shot("settings")
def _settings(s: Shooter) -> None:
    _open_settings(s)


@shot("settings_muted_name")
def _settings_muted_name(s: Shooter) -> None:
    """Muted, the volume stepped down, a name typed and saved with Enter."""
    _open_settings(s)
    s.click_button("volume_down")
    s.click_button("mute")
    from mineduel.client.scenes.settings_popup import SettingsPopup

    pg = s.pygame
    popup = s.app.stack.popup
    assert isinstance(popup, SettingsPopup)
    s.click(popup.name_field.rect.center)
    pg.event.post(pg.event.Event(pg.TEXTINPUT, text="Mina"))
    s.frame(0.02)
    s.key(pg.K_RETURN)
    s.settle(0.3)


@shot("settings_links_on")
def _settings_links_on(s: Shooter) -> None:
    """Invite links turned on from the settings (Linux): the row says so, its button turns them off."""
    _open_settings(s)
    s.click_button("links")
    s.settle(0.3)


# ----- match -----


@shot("match_show_everything")
def _show_everything(s: Shooter) -> None:
    """E2 after a CPU match: Show everything from the result popup — the CPU's mines, overlaps and
    each flag right or wrong, drawn as the online reveal (O13); the board's toggle is on."""
    s.start_from(MID_GAME, turn=9)
    s.click_button("mode:flag")
    s.click_cell(2, 0)  # my flag on a CPU mine: right
    s.click_cell(1, 4)  # the CPU's mine (KO)
    s.settle(1.5)
    s.click_button("show_everything")
    s.settle(0.5)


@shot("match_result_rounds")
def _result_rounds(s: Shooter) -> None:
    """The result popup after 18 rounds (turn 36, F3): the saved line names the file only."""
    s.start_from(late("A.", "A.", "B.", "B.", "A."), phase="end_wait", turn=35, marker_used=True)
    s.click_button("end_turn")
    s.settle(4.0)


@shot("match_modes_opening_explore")
def _modes_opening_explore(s: Shooter) -> None:
    """F1 step 1: only Explore is offered (no flags in the opening, no plant before exploring)."""
    s.click_button("start")
    s.settle(0.5)


@shot("match_modes_opening_plant")
def _modes_opening_plant(s: Shooter) -> None:
    """F1 step 3: only Plant is offered; the board is raised where a mine may go."""
    s.click_button("start")
    s.click_cell(3, 3)
    s.settle(1.5)  # the CPU's opening explore, 650 ms later (AI6)


@shot("match_modes_explore")
def _modes_explore(s: Shooter) -> None:
    s.start_from(MID_GAME, phase="explore")


@shot("match_modes_plant")
def _modes_plant(s: Shooter) -> None:
    s.start_from(MID_GAME, phase="plant")


@shot("match_modes_end_wait")
def _modes_end_wait(s: Shooter) -> None:
    """After planting: the mode is Flag by itself, Explore and Plant are off, the board raised."""
    s.start_from(MID_GAME, phase="plant")
    s.click_cell(6, 2)
    s.settle(0.6)


@shot("match_end_turn_why")
def _end_turn_why(s: Shooter) -> None:
    """The disabled End turn pressed while exploring: the status line says why."""
    s.start_from(MID_GAME, phase="explore")
    s.click_button("end_turn")
    s.settle(0.6)


@shot("match_deadline_warning")
def _deadline_warning(s: Shooter) -> None:
    """U6: my last five seconds — the status line counts them, my seconds pill pulses."""
    from mineduel.client.online_screenshots import _rig

    rig = _rig(s)
    rig.start_match()
    rig.play_until(turn=3)
    s.frame(15.6)  # 4.4 s left on the 20-second turn


# ----- tutorial -----


def _tutorial_at(s: Shooter, name: str) -> None:
    """The tutorial at step ``name`` (a WATCH step: caught while the opponent moves)."""
    from mineduel.client import tutorial_script
    from mineduel.client.scenes.tutorial import TutorialScene

    index = tutorial_script.step_index(name)
    watch = tutorial_script.STEPS[index].kind is tutorial_script.Kind.WATCH
    scene = TutorialScene(s.app.ctx, start=index - 1 if watch else index)
    s.app.stack.close_popup()
    s.app.stack.push(scene)
    s.settle(0.6)
    if watch:
        scene.press("end_turn")
        s.frame(0.02)  # the step sees the turn ended and queues the opponent's moves
        if name == "watch":
            s.frame(0.7)  # AI6: the opponent's first move, 650 ms later
        s.frame(0.2)  # (watch_again: before its one move, which ends the match)
    else:
        s.settle(0.4)


def _tutorial_shot(name: str) -> Callable[[Shooter], None]:
    return lambda s: _tutorial_at(s, name)


@shot("tutorial_offer")
def _tutorial_offer(s: Shooter) -> None:
    """The first launch, right after the language: Learn by playing / Skip."""
    from mineduel.client.scenes.tutorial_offer import TutorialOfferPopup

    s.app.stack.open_popup(TutorialOfferPopup(s.app.ctx, on_learn=lambda: None, on_skip=lambda: None))
    s.settle(0.5)


@shot("tutorial_offer_resume")
def _tutorial_offer_resume(s: Shooter) -> None:
    from mineduel.client import tutorial_script
    from mineduel.client.scenes.tutorial_offer import TutorialOfferPopup

    s.app.stack.open_popup(TutorialOfferPopup(s.app.ctx, on_learn=lambda: None, on_skip=lambda: None, resume_step=3,
                                              steps=len(tutorial_script.STEPS)))
    s.settle(0.5)


for _n, _name in enumerate(("explore", "numbers", "plant", "flag", "end_turn", "watch", "explore_again", "overlap",
                            "overlap_seen", "end_again", "watch_again", "ko", "reveal"), start=1):
    shot(f"tutorial_step{_n:02d}_{_name}")(_tutorial_shot(_name))


@shot("tutorial_refused")
def _tutorial_refused(s: Shooter) -> None:
    """A cell that is not the ringed one: nothing happens, the card says what to do."""
    _tutorial_at(s, "explore")
    s.click_cell(7, 0)
    s.settle(0.5)


@shot("tutorial_start_popup_friend")
def _start_popup_friend(s: Shooter) -> None:
    """The start popup: Start (CPU) beside Play with a friend, and the Tutorial."""
    s.settle(0.5)


@shot("tutorial_rules_illustrated")
def _rules_illustrated(s: Shooter) -> None:
    """The rules from the menu, scrolled to the overlap's and the flags' mini boards."""
    s.start_from(MID_GAME)
    s.key(s.pygame.K_ESCAPE)
    s.click_button("menu.rules")
    s.settle(0.5)
    popup = s.app.stack.popup
    assert popup is not None
    popup.set_scroll(popup.scroll_limit() // 2)
    s.settle(0.3)


# ----- analysis -----


def _cpu_analysis(s: Shooter) -> None:
    """A whole CPU match played by clicks (a fixed order of cells), then the result's *Analysis*."""
    from mineduel.client.scenes.analysis import AnalysisScene
    from mineduel.shared.rules.bitboard import cells
    from mineduel.shared.rules.engine import Phase

    order = [27, 36, 0, 63, 7, 56, 18, 45, 9, 54, 20, 43, 11, 52, 2, 61, 16, 47, 25, 38]
    s.click_button("start")
    s.settle(0.5)
    game = s.game
    for _ in range(400):
        if game.ended is not None:
            break
        view = game.view()
        assert view is not None
        if view.to_move != view.seat:
            s.frame(0.66)  # AI6: one CPU step per 650 ms
            continue
        if view.phase is Phase.END_WAIT:
            s.click_button("end_turn")
            continue
        target = view.explorable
        if not target:
            s.click_button("mode:unflag")
            target = view.recoverable
        cell = next((c for c in order if target >> c & 1), next(cells(target)))
        s.click(game.board.cell_center(cell))
    s.settle(2.0)
    s.click_button("analysis")
    s.settle(0.5)
    assert isinstance(s.app.stack.top, AnalysisScene), "the analysis opened"


@shot("analysis_cpu_risky")
def _analysis_risky(s: Shooter) -> None:
    """The first risky explore: its chip selected, the chosen cell above the safest."""
    from mineduel.client.scenes.analysis import AnalysisScene

    _cpu_analysis(s)
    scene = s.app.stack.top
    assert isinstance(scene, AnalysisScene) and scene.analysis is not None
    risky = scene.analysis.risky
    if risky:
        s.click(scene.widgets.by_name(f"risky:{risky[0]}").rect.center)
    s.settle(0.3)


@shot("analysis_cpu_heat_map")
def _analysis_heat(s: Shooter) -> None:
    """A later explore reached with the arrow keys: a full heat map with numbers and the player's mines."""
    _cpu_analysis(s)
    for _ in range(5):
        s.key(s.pygame.K_RIGHT)
    s.settle(0.3)


# ----- expert -----


def _play_until(s: Shooter, done: Callable[[], bool], max_steps: int = 400) -> None:
    """Play the human side by clicks (a fixed order of cells) until ``done()`` or the end."""
    from mineduel.shared.rules.bitboard import cells
    from mineduel.shared.rules.engine import ActionType, Phase

    order = [27, 36, 0, 63, 7, 56, 18, 45, 9, 54, 20, 43, 11, 52, 2, 61, 16, 47, 25, 38]
    game = s.game
    for _ in range(max_steps):
        if game.ended is not None or done():
            return
        view = game.view()
        assert view is not None
        if view.to_move != view.seat:
            s.frame(0.66)  # AI6: one CPU step per 650 ms
            continue
        if view.phase is Phase.END_WAIT:
            s.click_button("end_turn")
            continue
        exploring = view.phase in (Phase.EXPLORE, Phase.OPEN_EXPLORE)
        target = view.explorable if exploring else view.targets(ActionType.PLANT)
        if not target:
            s.click_button("mode:unflag")
            target = view.recoverable
        s.click(game.board.cell_center(next((c for c in order if target >> c & 1), next(cells(target)))))


def _hints_on(s: Shooter) -> None:
    """Menu → Settings → Hints in CPU matches, then Close (as a player turns them on)."""
    s.key(s.pygame.K_ESCAPE)
    s.click_button("menu.settings")
    s.click_button("hints")
    s.click_button("close")
    s.settle(0.3)


def _my_explore_from(turn: int) -> Callable[[Shooter], bool]:
    def done(s: Shooter) -> bool:
        from mineduel.shared.rules.engine import Phase

        view = s.game.view()
        return (view is not None and view.to_move == view.seat and view.phase is Phase.EXPLORE and view.turn >= turn
                and view.explorable != 0)

    return done


@shot("expert_start_levels")
def _expert_start_levels(s: Shooter) -> None:
    """The start popup's four levels (two rows of two), Expert chosen."""
    s.click_button("difficulty:expert")
    s.settle(0.5)


@shot("expert_settings_hints")
def _expert_settings_hints(s: Shooter) -> None:
    """Settings with the hints row turned on (off by default)."""
    _open_settings(s)
    s.click_button("hints")
    s.settle(0.3)


@shot("expert_hint_shown")
def _expert_hint_shown(s: Shooter) -> None:
    """An expert match with hints on: Hint pressed in my explore, the safest cells ringed, the chance said."""
    from functools import partial

    s.click_button("difficulty:expert")
    s.click_button("start")
    s.settle(0.5)
    _hints_on(s)
    _play_until(s, partial(_my_explore_from(7), s))
    s.click_button("hint")
    s.settle(0.5)


@shot("expert_hint_not_now")
def _expert_hint_not_now(s: Shooter) -> None:
    """Hint pressed while planting: said politely why not, nothing ringed."""
    from mineduel.shared.rules.engine import Phase

    def planting() -> bool:
        view = s.game.view()
        return view is not None and s.game.my_turn() and view.phase is Phase.PLANT and view.turn >= 3

    s.click_button("start")
    s.settle(0.5)
    _hints_on(s)
    _play_until(s, planting)
    s.key(s.pygame.K_h)
    s.settle(0.2)


@shot("expert_result_hints")
def _expert_result_hints(s: Shooter) -> None:
    """The result of an expert match in which two hints were used: "Hints used: 2" beside the level."""
    from functools import partial

    s.click_button("difficulty:expert")
    s.click_button("start")
    s.settle(0.5)
    _hints_on(s)
    for turn in (3, 5):
        done = _my_explore_from(turn)
        _play_until(s, partial(done, s))
        s.key(s.pygame.K_h)
        s.settle(0.2)
    _play_until(s, lambda: False)
    s.settle(2.0)


# ----- replay -----


def _replay_viewer(s: Shooter, view: str) -> None:
    """A whole CPU match played by clicks, then the result's *Replay*, half-way, in ``view``."""
    from mineduel.client.scenes.replay_viewer import ReplayViewer

    _play_cpu_match(s)
    s.click_button("replay")
    s.settle(0.3)
    scene = s.app.stack.top
    assert isinstance(scene, ReplayViewer) and scene.replay is not None, "the replay opened"
    scene.go(scene.replay.last * 2 // 3)
    scene.set_view(view)
    s.settle(0.3)


def _play_cpu_match(s: Shooter) -> None:
    """The analysis shots' match (a fixed order of cells) without opening the analysis."""
    from mineduel.shared.rules.bitboard import cells
    from mineduel.shared.rules.engine import Phase

    order = [27, 36, 0, 63, 7, 56, 18, 45, 9, 54, 20, 43, 11, 52, 2, 61, 16, 47, 25, 38]
    s.click_button("start")
    s.settle(0.5)
    game = s.game
    for _ in range(400):
        if game.ended is not None:
            break
        view = game.view()
        assert view is not None
        if view.to_move != view.seat:
            s.frame(0.66)
            continue
        if view.phase is Phase.END_WAIT:
            s.click_button("end_turn")
            continue
        target = view.explorable
        if not target:
            s.click_button("mode:unflag")
            target = view.recoverable
        s.click(game.board.cell_center(next((c for c in order if target >> c & 1), next(cells(target)))))
    s.settle(2.0)


@shot("replay_result_popup")
def _replay_result(s: Shooter) -> None:
    """The CPU result popup with Export, Analysis and Replay sharing the last row."""
    _play_cpu_match(s)


@shot("replay_view_seat0")
def _replay_seat0(s: Shooter) -> None:
    _replay_viewer(s, "0")


@shot("replay_view_seat1")
def _replay_seat1(s: Shooter) -> None:
    _replay_viewer(s, "1")


@shot("replay_view_full")
def _replay_full(s: Shooter) -> None:
    _replay_viewer(s, "full")


@shot("replay_bad_file")
def _replay_bad(s: Shooter) -> None:
    """A file that is not a record: the message screen."""
    from mineduel.client.scenes.replay_viewer import ReplayViewer

    s.app.stack.close_popup()
    s.app.stack.push(ReplayViewer(s.app.ctx, '{"format": "mine-duel-record/1", "variant": "cpu"}', on_back=lambda: None))
    s.settle(0.2)


@shot("replay_saved_matches")
def _replay_saved(s: Shooter) -> None:
    """The saved matches list after three finished matches (newest first)."""
    import json

    from mineduel.client.scenes.saved_matches import open_saved

    records = s.app.ctx.records
    base = {"format": "mine-duel-record/1", "variant": "cpu", "actions": []}
    for i, (started, winner, turns, level) in enumerate([("2026-11-28T19:05:00Z", 0, 9, "normal"),
                                                         ("2026-11-30T20:40:00Z", 1, 14, "expert"),
                                                         ("2026-12-01T08:15:00Z", None, 21, "hard")]):
        data = dict(base, times={"started": started, "elapsed_seconds": 95.0 + 40 * i, "turns": turns},
                    players=[{"seat": 0, "kind": "human"}, {"seat": 1, "kind": "cpu", "difficulty": level, "seed": i}],
                    result={"winner": winner, "reason": "ko" if winner is not None else "score"})
        records.save(f"cpu-{i}", json.dumps(data))
    online = dict(base, variant="online", players=[{"seat": 0, "name": "Ann"}, {"seat": 1, "name": "민준"}],
                  times={"started": 1764400000.0, "elapsed": 310.0, "turns": 17},
                  result={"over": True, "winner": 1, "reason": "score", "scores": [20, 23]})
    records.save("online-1", json.dumps(online))
    s.app.stack.close_popup()
    open_saved(s.app.ctx)
    s.settle(0.2)
