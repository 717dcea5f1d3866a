"""The replay viewer (issue 19 item 3): step through any saved match record, from either seat's eyes.

A record (RECORD.md, CPU or online) is run through the rules engine once when the screen opens;
every position is kept: both seats' :class:`SeatView` (V2, exactly what ``mine-duel replay --view
0|1 --at N`` prints) and the mines for the full board. Three ways to look — seat 0's view, seat 1's
view (never the other seat's mines: the board draws the view, which has no field for them) and the
whole truth — drawn with the match screen's :class:`BoardView` (client/scenes/replay_paint.py).

Moving: one action at a time (Previous / Next, the arrow keys, a swipe over the board), a turn at a
time (the turn buttons, Page Up / Page Down), anywhere (a tap or drag on the timeline, Home / End),
and Play / Pause (Space), which steps on the app's clock (``ctx.clock``; no sleeps, a fake clock in
tests). ``0``/``1``/``F`` switch the view. The step's events are named in the player's language.
Opened from the result popup (*Replay*), the saved matches list (client/scenes/saved_matches.py),
and ``mine-duel replay-view FILE`` / ``mine-duel FILE.json``. A record that cannot be read or run
becomes a message on the screen, never a crash.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pygame

from mineduel.client.scenes.base import Context, Scene
from mineduel.client.scenes.match_words import round_of
from mineduel.client.ui.input import InputEvent, KeyEvent, PointerEvent, PointerKind, Swipe
from mineduel.client.ui.widgets import Button, WidgetGroup
from mineduel.shared.fairness.record import InvalidRecord, Record, loads
from mineduel.shared.rules.bitboard import COLS
from mineduel.shared.rules.engine import ActionType, GameState, Refusal
from mineduel.shared.rules.events import shows_cell
from mineduel.shared.rules.views import SeatView
from mineduel.shared.rules.vocabulary import Action, Outcome, Reason

log = logging.getLogger(__name__)

__all__ = ["PLAY_INTERVAL", "VIEWS", "Replay", "ReplayStep", "ReplayViewer", "build_replay", "open_file", "open_replay"]

PLAY_INTERVAL = 0.8  # seconds between two actions while playing
VIEWS = ("0", "1", "full")


@dataclass(frozen=True, slots=True)
class ReplayStep:
    """The position after ``index`` actions, and the action that led to it (``None`` at the start)."""

    index: int
    action: Action | None
    auto: bool
    refused: bool
    views: tuple[SeatView, SeatView]
    mines: tuple[int, int]
    ko_cell: int | None
    outcome: Outcome | None
    turn: int


@dataclass(frozen=True, slots=True)
class Replay:
    """A whole record as positions; ``names`` are catalog-free labels (``None``: say "Player n")."""

    variant: str
    names: tuple[str | None, str | None]
    cpu: bool
    steps: tuple[ReplayStep, ...]

    @property
    def last(self) -> int:
        return len(self.steps) - 1

    def turn_start(self, index: int) -> int:
        """The first position of the turn ``index`` is in (the opening counts as one turn)."""
        steps = self.steps
        turn = steps[index].turn
        while index > 0 and steps[index - 1].turn == turn:
            index -= 1
        return index


def _names(record: Record) -> tuple[tuple[str | None, str | None], bool]:
    """Seat labels from the record's ``players``: a CPU record's human and CPU, an online record's names."""
    players = record.extra.get("players")
    names: list[str | None] = [None, None]
    cpu = False
    if isinstance(players, list):
        for p in players:
            if not isinstance(p, Mapping) or p.get("seat") not in (0, 1):
                continue
            seat = int(p["seat"])
            if p.get("kind") == "cpu":
                names[seat], cpu = "\x00cpu", True
            elif p.get("kind") == "human":
                names[seat] = "\x00you"
            elif isinstance(p.get("name"), str) and p["name"].strip():
                names[seat] = p["name"].strip()[:32]
    return (names[0], names[1]), cpu


def build_replay(text: str | bytes) -> Replay:
    """Every position of a record (raises :class:`InvalidRecord` for one RECORD.md rejects)."""
    record = loads(text)
    state = GameState(record.variant)
    extras = record.action_extras or tuple({} for _ in record.actions)

    def snapshot(index: int, action: Action | None, auto: bool, refused: bool) -> ReplayStep:
        return ReplayStep(index, action, auto, refused, (state.view(0), state.view(1)),
                          (state.mines[0], state.mines[1]), state.ko_cell, state.outcome(), state.turn)

    steps = [snapshot(0, None, False, False)]
    for i, (action, extra) in enumerate(zip(record.actions, extras, strict=False)):
        result = state.apply(action)
        steps.append(snapshot(i + 1, action, extra.get("auto") is True, isinstance(result, Refusal)))
    names, cpu = _names(record)
    return Replay(str(record.variant), names, cpu, tuple(steps))


def read_record_file(path: Path) -> tuple[str | None, str | None]:
    """(text, None) or (None, the reason it cannot be read) — never raises for a bad file."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return None, exc.strerror or str(exc)
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return None, "not UTF-8 text"


def open_file(ctx: Context, path: Path, on_back: Callable[[], None] | None = None) -> ReplayViewer:
    """The viewer for a file (``mine-duel replay-view FILE``); an unreadable file is its message."""
    text, problem = read_record_file(path)
    viewer = ReplayViewer(ctx, text, on_back=on_back or (lambda: None),
                          problem=None if problem is None else ctx.t("replay.unreadable", detail=problem))
    ctx.stack.push(viewer)
    return viewer


def open_replay(flow: Any) -> None:
    """The result popup's *Replay*: the finished match's record over the match screen; Back shows the result."""
    scene, ctx = flow.scene, flow.ctx
    controller = scene.controller
    if controller is None or scene.ended is None:
        return
    text = controller.record_text()
    popup = flow.result_popup
    from_popup = popup is not None and ctx.stack.popup is popup
    if popup is not None and from_popup:
        popup.close()

    def back() -> None:
        if from_popup:
            flow.show_result()

    ctx.stack.push(ReplayViewer(ctx, text, on_back=back, seat=controller.seat,
                                problem=None if text is not None else ctx.t("analysis.no_record")))


class ReplayViewer(Scene):
    """See the module docstring. ``text`` is the record; ``problem`` a message shown instead."""

    def __init__(self, ctx: Context, text: str | None, *, on_back: Callable[[], None], seat: int = 0,
                 problem: str | None = None) -> None:
        super().__init__(ctx)
        from mineduel.client.scenes.replay_paint import ReplayPainter

        self.on_back = on_back
        self.replay: Replay | None = None
        self.problem = problem
        if problem is None:
            if text is None:
                self.problem = ctx.t("analysis.no_record")
            else:
                self._build(text)
        self.index = 0
        self.view = str(seat) if seat in (0, 1) else "0"
        self.playing = False
        self.next_at: float | None = None
        self._swipe = Swipe()
        self._scrub = False
        self.widgets = WidgetGroup(ctx.invalidate, lambda: self.ctx.keyboard)
        self.paint = ReplayPainter(self)
        self.relayout()

    def _build(self, text: str) -> None:
        try:
            self.replay = build_replay(text)
        except InvalidRecord as exc:
            self.problem = self.ctx.t("replay.problem", detail=str(exc))
        except Exception as exc:  # an engine bug must become a message, not a dead window (logged)
            log.exception("replay: the record could not be replayed")
            self.problem = self.ctx.t("replay.problem", detail=type(exc).__name__)

    # ----- what is shown ------------------------------------------------------------------------------------
    @property
    def step(self) -> ReplayStep | None:
        return None if self.replay is None else self.replay.steps[self.index]

    def shown_view(self) -> SeatView | None:
        """The board's view: the chosen seat's, or seat 0's under the full board's extra mines."""
        step = self.step
        if step is None:
            return None
        return step.views[1 if self.view == "1" else 0]

    def name(self, seat: int) -> str:
        replay = self.replay
        raw = None if replay is None else replay.names[seat]
        if raw == "\x00you":
            return self.ctx.t("replay.you")
        if raw == "\x00cpu":
            return self.ctx.t("status.cpu")
        return raw if raw is not None else self.ctx.t("replay.player", n=seat + 1)

    def event_text(self) -> str:
        """The step's action in words, told from the chosen view (a hidden plant stays hidden, V2)."""
        step = self.step
        t = self.ctx.t
        if step is None or step.action is None:
            return t("replay.start")
        action = step.action
        name = self.name(action.seat)
        if step.refused:
            return t("replay.event.refused", name=name)
        kind = action.type
        params: dict[str, object] = {"name": name}
        if action.cell is not None:
            row, col = divmod(action.cell, COLS)
            params["cell"] = t("cell.name", row=row + 1, col=col + 1)
        if kind is ActionType.VOID:
            return t("replay.event.void")
        verb = {ActionType.EXPLORE: "explored", ActionType.PLANT: "planted", ActionType.FLAG: "flagged",
                ActionType.UNFLAG: "unflagged", ActionType.END_TURN: "ended", ActionType.TIMEOUT: "timeout",
                ActionType.RESIGN: "resign", ActionType.DISCONNECT: "disconnect"}[kind]
        if step.auto and verb in ("explored", "planted"):
            verb = f"auto_{verb}"
        if kind is ActionType.PLANT and self.view != "full" and not shows_cell(kind, action.seat, int(self.view)):
            verb += "_hidden"
        return t(f"replay.event.{verb}", **params)

    def outcome_text(self) -> str | None:
        step = self.step
        if step is None or step.outcome is None:
            return None
        outcome = step.outcome
        if outcome.winner is not None:
            return self.ctx.t("replay.outcome.win", name=self.name(outcome.winner))
        return self.ctx.t("result.title.void" if outcome.reason is Reason.VOID else "result.title.draw")

    def turn_label(self) -> str:
        step = self.step
        if step is None or not step.turn:
            return self.ctx.t("status.opening")
        return self.ctx.t("match.round", round=round_of(step.turn))

    # ----- moving ----------------------------------------------------------------------------------------
    def go(self, index: int, *, keep_playing: bool = False) -> None:
        replay = self.replay
        if replay is None:
            return
        index = max(0, min(replay.last, index))
        if not keep_playing:
            self.stop()
        if index != self.index:
            self.index = index
            self.relayout()
            self.ctx.invalidate(None)

    def next(self) -> None:
        self.go(self.index + 1)

    def previous(self) -> None:
        self.go(self.index - 1)

    def next_turn(self) -> None:
        replay = self.replay
        if replay is None:
            return
        turn = replay.steps[self.index].turn
        i = self.index
        while i < replay.last and replay.steps[i].turn == turn:
            i += 1
        self.go(i)

    def previous_turn(self) -> None:
        replay = self.replay
        if replay is None:
            return
        start = replay.turn_start(self.index)
        self.go(replay.turn_start(start - 1) if start == self.index and start > 0 else start)

    def set_view(self, view: str) -> None:
        if view in VIEWS and view != self.view:
            self.view = view
            self.relayout()
            self.ctx.invalidate(None)

    def toggle_play(self) -> None:
        replay = self.replay
        if replay is None:
            return
        if self.playing:
            self.stop()
            return
        if self.index >= replay.last:
            self.index = 0  # Play at the end starts again from the beginning
        self.playing = True
        self.next_at = self.ctx.clock() + PLAY_INTERVAL
        self.relayout()
        self.ctx.invalidate(None)

    def stop(self) -> None:
        if self.playing:
            self.playing = False
            self.next_at = None
            self.relayout()
            self.ctx.invalidate(None)

    def back(self) -> None:
        self.stop()
        if self.ctx.stack.top is self:
            self.ctx.stack.pop()
        self.on_back()

    # ----- layout ------------------------------------------------------------------------------------------
    def relayout(self) -> None:
        t = self.ctx.t
        paint = self.paint
        buttons = [Button(paint.BACK.copy(), lambda: t("action.back"), self.back, style="ghost", icon="back",
                          name="back", text_size=15)]
        replay = self.replay
        if replay is not None:
            labels = {"0": lambda: self.name(0), "1": lambda: self.name(1), "full": lambda: t("replay.view.full")}
            for slot, view in enumerate(VIEWS):
                buttons.append(Button(paint.tab_rect(slot), labels[view], partial(self.set_view, view),
                                      style="selected" if view == self.view else "secondary", text_size=15,
                                      radius=12, name=f"view:{view}",
                                      icon="mine" if view == "full" else None))
            last = replay.last
            buttons += [
                Button(paint.PREV.copy(), lambda: t("analysis.prev"), self.previous, enabled=self.index > 0,
                       name="prev", text_size=15),
                Button(paint.PLAY.copy(), lambda: t("replay.pause" if self.playing else "replay.play"),
                       self.toggle_play, style="primary", name="play", text_size=16),
                Button(paint.NEXT.copy(), lambda: t("analysis.next"), self.next, enabled=self.index < last,
                       name="next", text_size=15),
                Button(paint.TURN_PREV.copy(), lambda: t("replay.turn_prev"), self.previous_turn,
                       enabled=self.index > 0, name="turn_prev", text_size=14, style="ghost"),
                Button(paint.TURN_NEXT.copy(), lambda: t("replay.turn_next"), self.next_turn,
                       enabled=self.index < last, name="turn_next", text_size=14, style="ghost"),
            ]
        focus = self.widgets.focused()
        self.widgets.set(buttons)
        names = [b.name for b in buttons if b.enabled]
        if focus is not None and focus.name in names:
            self.widgets.focus_name(focus.name)
        elif self.ctx.keyboard:
            self.widgets.focus_name("play" if "play" in names else "back")
        paint.set_step(self.step, self.shown_view())

    # ----- the frame -----------------------------------------------------------------------------------------
    def process_event(self, event: InputEvent) -> bool:
        if isinstance(event, KeyEvent):
            return self._key(event)
        if isinstance(event, PointerEvent):
            if self._timeline(event) or self._swiped(event):
                return True
            return self.widgets.handle(event)
        return False

    def _key(self, event: KeyEvent) -> bool:
        key = event.key
        if key in (pygame.K_ESCAPE, pygame.K_BACKSPACE):
            self.back()
            return True
        if self.replay is None:
            return self.widgets.handle(event)
        moves: dict[int, Callable[[], None]] = {
            pygame.K_LEFT: self.previous, pygame.K_RIGHT: self.next,
            pygame.K_PAGEUP: self.previous_turn, pygame.K_PAGEDOWN: self.next_turn,
            pygame.K_UP: self.previous_turn, pygame.K_DOWN: self.next_turn,
            pygame.K_HOME: lambda: self.go(0), pygame.K_END: lambda: self.go(self.replay.last if self.replay else 0),
            pygame.K_SPACE: self.toggle_play,
            pygame.K_0: lambda: self.set_view("0"), pygame.K_KP0: lambda: self.set_view("0"),
            pygame.K_1: lambda: self.set_view("1"), pygame.K_KP1: lambda: self.set_view("1"),
            pygame.K_f: lambda: self.set_view("full"),
        }
        action = moves.get(key)
        if action is None:
            return self.widgets.handle(event)
        action()
        return True

    def _timeline(self, event: PointerEvent) -> bool:
        """A tap or drag on the timeline jumps to that action (touch and mouse alike)."""
        replay = self.replay
        if replay is None:
            return False
        track = self.paint.TRACK
        if event.kind is PointerKind.DOWN and track.inflate(24, 28).collidepoint(event.pos):
            self._scrub = True
        elif event.kind is PointerKind.CANCEL:
            self._scrub = False
            return False
        if not self._scrub:
            return False
        if event.kind is PointerKind.UP:
            self._scrub = False
        self.go(self.paint.index_at(event.pos[0], replay.last))
        return True

    def _swiped(self, event: PointerEvent) -> bool:
        """A swipe over the board steps (right to left is the next action)."""
        step = self._swipe.feed(event, self.paint.board.card)
        if step:
            (self.next if step > 0 else self.previous)()
        return step != 0

    def update(self, now: float) -> None:
        replay = self.replay
        if not self.playing or replay is None or self.next_at is None:
            return
        while self.playing and self.next_at is not None and now >= self.next_at:
            self.go(self.index + 1, keep_playing=True)
            self.next_at += PLAY_INTERVAL
            if self.index >= replay.last:
                self.stop()

    def next_wakeup(self, now: float) -> float | None:
        return self.next_at if self.playing else None

    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        self.paint.draw(canvas, area)
        self.widgets.draw(canvas, self.ctx.fonts, area)
