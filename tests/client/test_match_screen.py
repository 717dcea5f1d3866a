"""The match screen after issue 16: View result always reachable (E2), Show everything after a CPU
match (E2, O13, V3), the mode bar following the phase (U3, F1, F2, A3, A4), feedback that says why
and stays readable (A5, O4, U6), and the result popup's words (E1, F3)."""

from __future__ import annotations

import logging
import random

import pygame
import pytest
from support.client_driver import Driver

from mineduel.client.controller import (
    Applied,
    Capabilities,
    RematchInfo,
    board_reveal_of,
)
from mineduel.client.cpu_match import CpuMatch
from mineduel.client.i18n import LANGUAGES
from mineduel.client.online_match import board_reveal
from mineduel.client.scenes.match_paint import reveal_marks
from mineduel.client.scenes.match_words import HOLD, MessageLine, round_of
from mineduel.client.scenes.popups import MenuPopup
from mineduel.client.scenes.result_popup import ResultPopup
from mineduel.client.screenshots import MID_GAME, late
from mineduel.client.ui import palette
from mineduel.shared.ai.randomplay import random_legal_action
from mineduel.shared.rules.bitboard import cells
from mineduel.shared.rules.engine import Action, ActionType, GameState, Phase, Variant
from mineduel.shared.rules.notation import from_ascii
from mineduel.shared.wire.board import reveal_of

MODES = ("explore", "mine", "flag", "unflag")
KO_CELL = 1 * 8 + 4  # MID_GAME: the CPU's mine
CPU_MINE = 2 * 8 + 0  # MID_GAME: another CPU mine, unmarked
FREE = 6 * 8 + 2  # MID_GAME: an empty closed cell


class Spy:
    """A controller wrapper that counts what the screen submits and can inject events."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.submitted: list[object] = []
        self.injected: list[object] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def submit(self, action: object) -> None:
        self.submitted.append(action)
        self.inner.submit(action)

    def poll(self) -> list[object]:
        events, self.injected = self.injected + self.inner.poll(), []
        return events


class OnlineLike(Spy):
    """A CPU match offering ONLINE's capabilities (a deadline, rematch, the reveal at the end):
    the screen decides by capabilities only, so this drives its online paths deterministically."""

    def __init__(self, inner: CpuMatch, deadline: FakeDeadline | None = None) -> None:
        super().__init__(inner)
        self._caps = Capabilities(deadline=deadline, reveal=inner, rematch=self)

    @property
    def capabilities(self) -> Capabilities:
        return self._caps

    def rematch_info(self) -> RematchInfo:
        return RematchInfo(False, False, True)

    def request_rematch(self) -> None:
        pass


class FakeDeadline:
    """U6: seconds left until ``ends_at`` on the driver's fake clock."""

    def __init__(self, clock: object, ends_at: float) -> None:
        self.clock = clock
        self.ends_at = ends_at

    def seconds_left(self) -> float | None:
        return max(0.0, self.ends_at - self.clock())


@pytest.fixture
def d(tmp_path):
    driver = Driver(tmp_path, language="en")
    yield driver
    driver.close()


def start_at(d: Driver, board: str | None = None, wrap: type[Spy] = Spy, **kw: object) -> Spy:
    """Press Start with the match set to ``board`` (None: a fresh match), wrapped for the test."""
    made: list[Spy] = []

    def new(**options: object) -> Spy:
        state = None if board is None else from_ascii(board, **kw)
        controller = wrap(CpuMatch(clock=d.clock, state=state, **options))
        made.append(controller)
        return controller

    d.app.ctx.new_cpu_match = new
    d.click_button("start")
    return made[0]


def ko_loss(d: Driver, *, flag_first: bool = False) -> Spy:
    """MID_GAME, then (optionally flag a CPU mine and) step on the CPU's mine: the result popup."""
    spy = start_at(d, MID_GAME, turn=9)
    if flag_first:
        d.click_button("mode:flag")
        d.click_cell(CPU_MINE)
    d.click_cell(KO_CELL)
    d.wait(1.0)
    assert isinstance(d.app.stack.popup, ResultPopup)
    return spy


def enabled_modes(d: Driver) -> set[str]:
    return {m for m in MODES if d.app.game.widgets.by_name(f"mode:{m}").enabled}


# ----- item 2: View result is never dead (E2, U2) ---------------------------------------------------


def test_view_result_is_reachable_by_pointer_after_the_result_popups_menu(d):
    """E2: result popup → Menu → close the menu: View result is enabled and opens the result again,
    by mouse and by touch (before issue 16 it stayed grey until E was pressed)."""
    ko_loss(d)
    game = d.app.game
    d.click_named("menu")
    assert isinstance(d.app.stack.popup, MenuPopup)
    d.key(pygame.K_ESCAPE)
    assert d.app.stack.popup is None and not game.viewing_board
    assert game.widgets.by_name("end_turn").enabled
    d.click_named("end_turn")
    assert isinstance(d.app.stack.popup, ResultPopup)
    d.click_named("menu")
    d.tap((4, 4))  # a background tap closes the menu (press and release outside, U2)
    assert d.app.stack.popup is None
    d.tap(d.button_pos("end_turn"))
    assert isinstance(d.app.stack.popup, ResultPopup)


def test_view_result_is_reachable_online_after_view_board_and_the_menu(d):
    """E2 with the in-screen result panel (a rematch is offered): View board, the header's menu,
    closed again — View result brings the panel back."""
    start_at(d, MID_GAME, wrap=OnlineLike, turn=9)
    game = d.app.game
    d.click_cell(KO_CELL)
    d.wait(1.0)
    assert game.panel.open
    assert not game.widgets.by_name("end_turn").enabled  # the result is on screen already
    d.click_named("view_board")
    d.click_named("menu")
    d.key(pygame.K_ESCAPE)
    assert game.widgets.by_name("end_turn").enabled
    d.click_named("end_turn")
    assert game.panel.open and not game.viewing_board


# ----- item 4: Show everything after a CPU match (E2, O13, V3) ----------------------------------------


def finished_states():
    """Finished matches of both variants, played by the uniformly random legal player (seeded)."""
    for seed in range(12):
        rng = random.Random(seed)
        state = GameState(Variant.CPU if seed % 2 else Variant.ONLINE)
        while state.outcome() is None:
            state.apply(random_legal_action(state, rng))
        yield state


def test_the_cpu_reveal_is_the_online_reveal_in_the_same_format():
    """O13: the CPU match's reveal (engine → masks) equals what the online client makes of the
    server's ``match_end`` layers for the same final state — one format, never a second one."""
    for state in finished_states():
        for seat in (0, 1):
            final = state.reveal()
            assert board_reveal_of(final, seat) == board_reveal(reveal_of(final, seat))


def test_nothing_of_the_cpu_is_visible_before_the_end(d):
    """V3: while the match runs there is no reveal, no Show everything, and asking for it does nothing;
    the CPU's mine cells draw exactly like any other closed cell."""
    spy = start_at(d, MID_GAME, turn=9)
    game = d.app.game
    assert spy.inner.reveal() is None
    assert not any(b.name == "show_everything" for b in game.widgets.buttons)
    game.flow.set_everything(True)
    assert not game.flow.everything and not game.flow.reveal_shown()
    d.frame()
    center = game.board.cell_center(CPU_MINE)
    empty = game.board.cell_center(FREE)
    assert d.pixel(center) == d.pixel(empty)


def opp_pixels(d: Driver, cell: int) -> int:
    """How many pixels of ``cell`` are drawn in the opponent's mine colour."""
    shot = d.app.screenshot()
    rect = d.app.game.board.cell_rect(cell)
    return sum(1 for x in range(rect.left, rect.right) for y in range(rect.top, rect.bottom)
               if all(abs(a - b) <= 12 for a, b in zip(tuple(shot.get_at((x, y)))[:3], palette.OPP, strict=True)))


def test_show_everything_from_the_result_and_the_boards_toggle(d):
    """E2: after a CPU match the board keeps my view; Show everything (popup, then the board's toggle)
    draws the O13 reveal — the CPU's mines, the overlap, each flag right or wrong — and off again."""
    spy = ko_loss(d, flag_first=True)
    game = d.app.game
    state: GameState = spy.inner.state
    assert not game.flow.reveal_shown() and opp_pixels(d, CPU_MINE) == 0  # E2: my own view by default
    d.click_named("show_everything")
    assert d.app.stack.popup is None and game.viewing_board and game.flow.everything and game.flow.reveal_shown()
    d.frame()
    assert opp_pixels(d, CPU_MINE) > 20
    view, reveal = game.view(), spy.inner.reveal()
    marks = {cell: reveal_marks(view, reveal, cell) for cell in range(64)}
    # What is drawn, cell by cell, from the engine's full state (O10 right/wrong, O13).
    for cell in range(64):
        b = 1 << cell
        if state.revealed & b or cell == state.ko_cell:
            assert marks[cell] == frozenset(), cell
            continue
        assert ("opponent_mine" in marks[cell]) == bool(state.mines[1] & b), cell
        assert ("overlap" in marks[cell]) == bool(state.mines[0] & state.mines[1] & b), cell
        marker = state.markers[0] | state.markers[1]
        if marker & b:
            owner = 0 if state.markers[0] & b else 1
            right = bool(state.mines[1 - owner] & b)
            assert ("right" if right else "wrong") in marks[cell], cell
        else:
            assert not {"right", "wrong"} & marks[cell], cell
    assert marks[CPU_MINE] == {"opponent_mine", "marked", "right"}  # my flag on the CPU's mine
    assert marks[1 * 8 + 3] == {"opponent_mine", "overlap"}
    assert marks[3 * 8 + 5] == {"marked", "wrong"}  # my bluff flag on my own mine
    assert game.words.instruction() == "Everything revealed"
    # The board's toggle: off (my view again), on again; the final board takes no input (E2).
    toggle = game.widgets.by_name("show_everything")
    assert toggle.style == "selected"
    d.click_named("show_everything")
    assert not game.flow.reveal_shown() and toggle.style == "secondary"
    d.frame()
    assert opp_pixels(d, CPU_MINE) == 0
    d.click_named("show_everything")
    before = list(spy.submitted)
    d.click_cell(FREE)
    assert spy.submitted == before
    d.click_named("end_turn")  # View result
    assert isinstance(d.app.stack.popup, ResultPopup)
    d.click_named("restart")
    d.click_named("confirm")
    assert not game.flow.everything and not any(b.name == "show_everything" for b in game.widgets.buttons)


# ----- item 7: the mode bar follows the phase (U3) ----------------------------------------------------


def cpu_opening_done(d: Driver) -> None:
    d.click_cell(27)
    d.wait(0.7)  # the CPU's opening explore (AI6)


@pytest.mark.parametrize(("setup", "enabled", "mode"), [
    ("opening_explore", {"explore"}, "explore"),
    ("opening_plant", {"mine"}, "mine"),
    ("explore", {"explore", "flag", "unflag"}, "explore"),
    ("plant", {"mine", "flag", "unflag"}, "mine"),
    ("after_plant", {"flag", "unflag"}, "flag"),
    ("end_wait_flag_used", {"unflag"}, "flag"),
    ("cpu_turn", set(), None),
    ("over", set(), None),
])
def test_mode_bar_offers_exactly_the_modes_with_legal_cells(d, setup, enabled, mode):
    """U3 + F1/F2/A3/A4: Plant is never selectable while exploring nor Explore while planting; no
    flags in the opening; after planting the mode is Flag by itself; on my turn the board is raised
    where the mode can act (never dimmed like the opponent's turn)."""
    if setup.startswith("opening"):
        start_at(d)
        if setup == "opening_plant":
            cpu_opening_done(d)
    elif setup in ("explore", "plant"):
        start_at(d, MID_GAME, phase=setup)
    elif setup == "after_plant":
        start_at(d, MID_GAME, phase="plant")
        d.click_cell(FREE)
    elif setup == "end_wait_flag_used":
        start_at(d, MID_GAME, phase="end_wait", marker_used=True)
    elif setup == "cpu_turn":
        start_at(d, MID_GAME, phase="end_wait", marker_used=True)
        d.click_named("end_turn")
    else:
        ko_loss(d)
        d.click_named("view_board")
    game = d.app.game
    assert enabled_modes(d) == enabled
    if mode is not None:
        assert game.mode == mode
        selected = game.widgets.by_name(f"mode:{mode}")
        assert (selected.style == "accent") == (mode in enabled)
    view = game.view()
    if setup == "after_plant":
        assert game.words.instruction() == "End your turn, or place a flag"
    if setup == "end_wait_flag_used":  # A3: nothing to place any more, and the status line says so
        assert game.words.instruction() == "End your turn (this turn's flag is used)"
    if game.my_turn() and mode in enabled:
        assert game.board.actionable == view.targets(
            {"explore": ActionType.EXPLORE, "mine": ActionType.PLANT, "flag": ActionType.FLAG,
             "unflag": ActionType.UNFLAG}[mode]) != 0


def test_a_flag_placed_while_exploring_returns_the_mode_to_explore(d):
    """A3 (one new flag a turn): once it is used, Flag has no legal cell, so the mode goes back to
    the phase's own (explore) and the board is raised for exploring again."""
    spy = start_at(d, MID_GAME, phase="explore")
    game = d.app.game
    d.click_named("mode:flag")
    d.click_cell(FREE)
    assert spy.submitted[-1].type is ActionType.FLAG
    assert game.mode == "explore" and "flag" not in enabled_modes(d)
    assert game.board.actionable == game.view().explorable


def test_a_held_turn_selects_unflag(d):
    """C1.3: nowhere to explore but one of my flags could go — the mode is Unflag by itself, and
    once the flag is removed, Explore again."""
    spy = start_at(d, late("Aa", ".a", "A.", "A."), turn=18)
    game = d.app.game
    assert game.mode == "unflag" and enabled_modes(d) == {"unflag", "flag"}
    d.click_cell(1 * 8 + 6)  # my flag on the empty cell
    assert spy.submitted[-1].type is ActionType.UNFLAG
    assert game.mode == "explore" and "explore" in enabled_modes(d)


@pytest.mark.parametrize(("setup", "mode", "key"), [
    ("explore", "mine", "match.why.explore_first"),
    ("plant", "explore", "match.why.explored_plant"),
    ("end_wait", "explore", "match.why.turn_done"),
    ("opening", "flag", "match.why.no_flags_opening"),
    ("end_wait_used", "flag", "refusal.quota_used"),
    ("cpu_turn", "explore", "refusal.not_your_turn"),
])
def test_a_disabled_mode_says_why(d, setup, mode, key):
    """A disabled mode button (and its key, 1–4) says why in the phase's words; nothing is sent."""
    if setup == "opening":
        spy = start_at(d)
    elif setup == "end_wait_used":
        spy = start_at(d, MID_GAME, phase="end_wait", marker_used=True)
    elif setup == "cpu_turn":
        spy = start_at(d, MID_GAME, phase="end_wait", marker_used=True)
        d.click_named("end_turn")
    else:
        spy = start_at(d, MID_GAME, phase=setup)
    sent = len(spy.submitted)
    before = d.app.game.mode
    d.click(d.button_pos(f"mode:{mode}"))
    assert d.app.game.message[0] == key and d.app.game.message[2] == "refusal"
    assert d.app.game.mode == before
    d.wait(2.0)
    d.key(pygame.K_1 + MODES.index(mode))
    assert d.app.game.message[0] == key and len(spy.submitted) == sent


def test_f_in_the_opening_says_why_and_sends_nothing(d):
    """F1: F (flag the focused cell) in the opening says no flags now, changes no mode, sends nothing."""
    spy = start_at(d)
    d.key(pygame.K_f)
    assert d.app.game.message[0] == "match.why.no_flags_opening"
    assert d.app.game.mode == "explore" and spy.submitted == []


# ----- item 8: feedback (A5, O4, U6) ------------------------------------------------------------------


@pytest.mark.parametrize(("setup", "key"), [
    ("explore", "match.why.explore_first"),
    ("plant", "match.why.plant_first"),
    ("opening", "match.why.opening_explore"),
])
def test_the_disabled_end_turn_says_why_by_click_and_by_e(d, setup, key):
    """A5: End turn acts only in END_WAIT; pressed (or E) before, it says what is missing, in the
    phase's words, and sends nothing."""
    spy = start_at(d) if setup == "opening" else start_at(d, MID_GAME, phase=setup)
    game = d.app.game
    assert not game.widgets.by_name("end_turn").enabled
    d.click(d.button_pos("end_turn"))
    assert game.message[0] == key and game.message[2] == "refusal"
    d.wait(2.0)
    d.key(pygame.K_e)
    assert game.message[0] == key
    assert spy.submitted == []


def test_not_your_turn_stays_readable_before_the_cpu_replaces_it(d):
    """"It's not your turn" stays at least 1.5 s although the CPU moves 650 ms later (AI6); then the
    CPU's latest step is said."""
    start_at(d, MID_GAME, phase="end_wait", marker_used=True)
    game = d.app.game
    d.click_named("end_turn")
    d.click_cell(FREE)
    assert game.message[0] == "refusal.not_your_turn"
    d.frame(0.66)  # the CPU explores
    assert game.view().revealed != from_ascii(MID_GAME).view(0).revealed
    d.wait(0.8)
    assert game.message[0] == "refusal.not_your_turn"  # 1.46 s after it was said
    d.wait(0.2)
    assert game.message[0].startswith("event.cpu_")
    assert HOLD["refusal"] >= 1.5


def test_the_servers_move_for_me_outranks_a_refusal(d):
    """O4: "the server opened … for you" is not overwritten by a refusal that follows; the refusal
    waits, and is dropped when its moment has passed."""
    spy = start_at(d, MID_GAME, phase="explore")
    game = d.app.game
    spy.injected.append(Applied(0, ActionType.EXPLORE, FREE, auto=True))
    d.frame()
    assert game.message[0] == "event.you_auto_explored"
    d.click_cell(0)  # a revealed cell: refused (A1)
    assert game.message[0] == "event.you_auto_explored"
    d.wait(HOLD["auto"] + 0.2)
    assert game.message[0] == "event.you_auto_explored"  # the stale refusal was dropped


def test_message_line_ranks_and_minimum_times():
    """The queue: higher or equal rank replaces at once; a lower one waits for the minimum time;
    the newest waiting one wins; a refusal that waited too long is dropped."""
    now = [0.0]
    changes = []
    line = MessageLine(lambda: now[0], lambda: changes.append(now[0]))

    def at(t: float) -> MessageLine:
        now[0] = t
        return line

    assert at(0.0).say("refusal.a", {}, "refusal") and line.shake_at == 0.0
    assert not at(0.1).say("event.b", {}, "event")
    assert not at(0.2).say("event.c", {}, "event")
    assert line.next_change() == HOLD["refusal"]
    assert not at(1.0).update() and line.current.key == "refusal.a"
    assert at(HOLD["refusal"]).update() and line.current.key == "event.c"
    assert at(2.0).say("event.d", {}, "event")  # events replace events at once
    assert at(3.0).say("event.auto", {}, "event", "auto")
    assert not at(3.1).say("refusal.e", {}, "refusal") and line.shake_at == 0.0  # not shown: no shake
    assert not at(3.0 + HOLD["auto"]).update() and line.current.key == "event.auto"  # stale, dropped
    assert at(6.5).say("result.x", {}, "event", "end")
    assert changes  # every change asks for a redraw


def test_the_last_five_seconds_are_unmistakable(d):
    """U6: from 5 s left on my turn the status line says the seconds left (as a warning) and my
    seconds pill pulses in the warning colour, with frames scheduled for it; a refusal is read
    first, then the count comes back; the opponent's deadline raises no alarm for me."""
    deadline = FakeDeadline(d.clock, d.clock() + 1000.0)

    def wrap(inner: CpuMatch) -> OnlineLike:
        return OnlineLike(inner, deadline)

    start_at(d, MID_GAME, wrap=wrap, phase="explore")
    game = d.app.game
    deadline.ends_at = d.clock() + 6.0
    d.frame()
    assert game.deadline_warning is None
    d.wait(1.5)  # 4.5 s left
    assert game.deadline_warning == 5
    assert game.words.event_line() == ("5 s left: hurry!", True)
    assert game.words.banner() == ("5 s left: hurry!", palette.DANGER if game.pulse else palette.WARN)  # under the board too
    now = d.clock()
    wake = game.next_wakeup(now)
    assert wake is not None and wake - now <= 0.25
    pulses = set()
    for _ in range(4):
        d.frame(0.13)
        pulses.add(game.pulse)
    assert pulses == {0, 1}
    d.click_cell(0)  # refused: the refusal is read first ...
    assert game.words.event_line() == ("That cell is already open", True)
    d.wait(HOLD["refusal"] + 0.1)
    assert game.words.event_line() == (f"{game.deadline_warning} s left: hurry!", True)  # ... then the count
    d.wait(3.0)
    assert game.deadline_warning is None  # the deadline ran out (the server decides what follows)


def test_no_warning_on_the_opponents_deadline(d):
    """U6: the alarm is for my own last seconds only."""
    deadline = FakeDeadline(d.clock, d.clock() + 1000.0)
    start_at(d, MID_GAME, wrap=lambda inner: OnlineLike(inner, deadline), phase="end_wait", marker_used=True)
    d.click_named("end_turn")
    deadline.ends_at = d.clock() + 3.0
    d.frame()
    assert d.app.game.deadline_warning is None and d.app.game.words.banner() is None


# ----- item 10: the result popup and the player cards (E1, F3) ----------------------------------------


def test_the_result_says_saved_with_the_file_name_and_logs_the_path(d, caplog):
    """The saved record is named by its file only ("Saved to your matches: …json"), never a raw
    path wrapped mid-word; the full path goes to the log."""
    with caplog.at_level(logging.INFO, logger="mineduel.client.scenes.match_panels"):
        ko_loss(d)
    text, error = d.app.game.flow.record_line()
    assert not error and text.startswith("Saved to your matches: ") and text.endswith(".json") and "/" not in text
    assert any("records: saved" in r.getMessage() and r.getMessage().endswith(text.split(": ")[1]) for r in caplog.records)


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_export_button_says_export_in_every_language(tmp_path, language):
    """The record is saved already: the button exports a copy, and says so in all four languages."""
    d = Driver(tmp_path, language=language)
    try:
        ko_loss(d)
        label = d.app.stack.popup.widgets.by_name("export").label()
        assert label == d.app.ctx.t("result.export_copy")
        assert {"ko": "사본 내보내기", "ja": "コピーを書き出す", "en": "Export a copy", "zh-CN": "导出副本"}[language] == label
    finally:
        d.close()


def test_rounds_in_the_header_and_the_result_keeps_f3s_turns(d):
    """F3/E1: 36 turns are 18 rounds (one turn of each player); the header counts rounds, the result
    says both and the record keeps the turn number."""
    assert [round_of(t) for t in (1, 2, 3, 35, 36)] == [1, 1, 2, 18, 18]
    spy = start_at(d, late("A.", "A.", "B.", "B.", "A."), phase="end_wait", turn=35, marker_used=True)
    game = d.app.game
    assert game.paint.header_layout()[2][0][0] == "Round 18"
    d.click_named("end_turn")
    d.wait(4.0)
    popup = d.app.stack.popup
    assert isinstance(popup, ResultPopup) and popup.info.ended.turns == 36
    assert spy.inner.timing().turn == 36
    assert '"turns": 36' in spy.inner.record_text()
    assert d.app.ctx.t("result.round_turn", rounds=round_of(36), turns=36) == "Round 18, turn 36"


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_header_pill_and_card_counter_fits(tmp_path, language):
    """Issue 16: the difficulty pill never disappears (Japanese, Hard, a three-digit round), and the
    player cards' labelled counters fit at readable sizes with two-digit counts."""
    d = Driver(tmp_path, language=language)
    try:
        d.click_button("difficulty:hard")
        start_at(d, MID_GAME, turn=199)
        paint = d.app.game.paint
        title, title_size, pills = paint.header_layout()
        assert [text for text, *_ in pills] == [d.app.ctx.t("match.round", round=100), d.app.ctx.t("difficulty.hard")]
        assert title_size >= 16
        view = d.app.game.view()
        for seat_is_me in (True, False):
            items = [(i, c, 88, label) for i, c, _, label in paint.counter_items(view, seat_is_me)]
            assert [label for *_, label in items][-1] == d.app.ctx.t("match.card.flags")
            number, label, _, need = paint.counter_sizes(items, (374 - 10) // 2 - 20)
            assert need <= (374 - 10) // 2 - 20 and number >= 14 and label >= 11
    finally:
        d.close()


def test_in_screen_result_title_and_reason_are_separate_lines(tmp_path):
    """The in-screen result's title and its reason are two lines, so no language strings two
    colons together ("勝利！：KO：…")."""
    d = Driver(tmp_path, language="ja")
    try:
        start_at(d, MID_GAME, wrap=OnlineLike, turn=9)
        d.click_cell(KO_CELL)
        d.wait(1.0)
        words = d.app.game.words
        assert words.instruction() == d.app.ctx.t("result.title.loss")
        line = words.event_line()
        assert line == (words.reason_text(), False) and "：" not in words.instruction()
    finally:
        d.close()


def test_only_legal_cells_in_the_phase_modes():
    """The mode bar's one source: the engine's legal cells (``SeatView.targets``) per phase (F1, F2)."""
    state = from_ascii(MID_GAME, phase="plant")
    view = state.view(0)
    assert view.targets(ActionType.EXPLORE) == 0 and view.targets(ActionType.PLANT) != 0
    assert list(cells(view.targets(ActionType.UNFLAG))) == sorted(cells(view.my_markers))
    assert from_ascii(MID_GAME, phase=Phase.END_WAIT).view(0).targets(ActionType.PLANT) == 0


@pytest.mark.parametrize("language", LANGUAGES)
def test_result_and_after_the_end_buttons_are_tall_and_their_labels_fit(tmp_path, language):
    """U4: the result popup's buttons (View board, Show everything, Restart, Menu, Export a copy) and
    the board's View result | Show everything are at least 44 px tall and their labels fit without
    shrinking more than a little, in every language."""
    d = Driver(tmp_path, language=language)
    try:
        ko_loss(d)
        groups = [("result", d.app.stack.popup.widgets)]
        d.click_named("view_board")
        groups.append(("board", d.app.game.widgets))
        fonts = d.app.ctx.fonts
        names = set()
        for where, group in groups:
            for button in group.buttons:
                names.add(button.name)
                assert button.rect.height >= 44, (where, button.name)
                text = button.label()
                if text:
                    room = button.rect.width - 20 - (30 if button.icon else 0)
                    size = fonts.fit_size(text, button.text_size, room, True)
                    assert size >= button.text_size - 4, (language, where, button.name, text)
        assert {"view_board", "show_everything", "restart", "menu", "export", "end_turn"} <= names
    finally:
        d.close()


def test_cpu_match_offers_the_reveal_on_request_and_only_after_the_end():
    """E2/V3: the CPU match's capabilities are the reveal alone, marked on request; before the end
    it is None, after it the engine's O13 reveal as the human sees it."""
    clock = [0.0]
    match = CpuMatch(clock=lambda: clock[0], state=from_ascii(MID_GAME, turn=9), seed=5)
    caps = match.capabilities
    assert caps.reveal is match and caps.reveal_on_request
    assert (caps.deadline, caps.presence, caps.rematch, caps.verify, caps.resign) == (None,) * 5
    assert match.reveal() is None
    match.submit(Action(0, ActionType.EXPLORE, KO_CELL))
    assert match.outcome is not None
    assert match.reveal() == board_reveal_of(match.state.reveal(), 0)
    assert match.reveal().opponent_mines == match.state.mines[1]
