"""The match screen, for CPU and online matches alike: header, both players, the status line,
the board, End turn and the mode bar — plus the panels a match's capabilities feed.

It talks to a :class:`~mineduel.client.controller.MatchController` only; ONLINE's extras (the
deadline, presence, the reveal at the end, rematch, verify, resign) appear exactly when the
controller's ``capabilities`` offer them (:mod:`.match_paint`, :mod:`.match_panels`). The flow
around matches — choosing a language and difficulty, restarting, going back to the room — belongs
to a :class:`Session` the app (or the online lobby) passes in.

Rules this screen carries out:

* U3 — board input only on the local seat's turn, with no popup, before the end; entering
  EXPLORE / PLANT / END_WAIT switches the input mode (explore / mine / flag) by itself; the mode
  bar offers exactly the modes with legal cells (the engine's ``SeatView.targets``, which is also
  the raised-tile hint), so Plant is never selectable while exploring, nor Explore while planting;
* the status line says what to do next (``status.*``) and, below, what just happened
  (``event.*``) or why something was refused (``refusal.<code>``, ``match.why.*`` for a disabled
  End turn or mode); a :class:`~.match_words.MessageLine` keeps a refusal readable for a moment
  and never lets one hide the server's move made for the player (O4); the last five seconds of a
  deadline say so (U6);
* AI6 — a popup, or the window being minimised / hidden / unfocused, pauses the match's clock
  (the controller decides what pausing means: the CPU stops its countdown, online ignores it, U7);
* C4/E1/E2 — the result (popup, or the in-screen panel when a rematch is offered); View board /
  View result toggle without limit while the board takes no input (View result stays reachable
  by pointer whatever popup came and went); a CPU match keeps the human's view and offers *Show
  everything* (the O13 reveal, drawn as online); the finished record is saved once (RECORD.md)
  and can be exported;
* issue 18 item 4 — with hints on (settings) a CPU match has Hint beside End turn (and H): the
  safest cells to explore ring until the board changes (:mod:`.match_hint`); never online.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Protocol

import pygame

from mineduel.client.controller import Applied, Ended, MatchController, Notice, Refused
from mineduel.client.scenes.base import Context, Scene
from mineduel.client.scenes.match_hint import MatchHint
from mineduel.client.scenes.match_paint import (
    BOARD_TOP,
    END_TURN,
    HEADER,
    INFO,
    INFO_Y,
    MODE_BAR,
    PLAYERS,
    PLAYERS_H,
    PLAYERS_Y,
    SHAKE_TIME,
    STATUS,
    MatchPainter,
)
from mineduel.client.scenes.match_panels import MatchFlow, ResultPanel
from mineduel.client.scenes.match_words import MatchWords, MessageLine
from mineduel.client.sound_cues import MatchCues
from mineduel.client.ui import palette
from mineduel.client.ui.board import BoardView
from mineduel.client.ui.input import InputEvent, KeyEvent, PointerEvent, PointerKind
from mineduel.client.ui.widgets import Button, WidgetGroup
from mineduel.shared.rules.bitboard import COLS
from mineduel.shared.rules.engine import Action, ActionType, Phase
from mineduel.shared.rules.views import SeatView

__all__ = ["BOARD_TOP", "END_TURN", "HEADER", "INFO_Y", "MODE_BAR", "PLAYERS_H", "PLAYERS_Y", "STATUS", "GameScene", "Session"]

MODES = ("explore", "mine", "flag", "unflag")
MODE_ACTION = {"explore": ActionType.EXPLORE, "mine": ActionType.PLANT, "flag": ActionType.FLAG, "unflag": ActionType.UNFLAG}
MODE_KEYS = {pygame.K_1: "explore", pygame.K_2: "mine", pygame.K_3: "flag", pygame.K_4: "unflag"}
RESULT_DELAY = 0.8  # seconds between the last move and the result popup: see the KO first
DOTS_PERIOD = 0.3
WARN_SECONDS = 5  # U6: the last seconds of my deadline are announced and the pill pulses
PULSE_PERIOD = 0.25  # one pulse step (on / off) of the deadline pill
ARROWS = {pygame.K_LEFT: (0, -1), pygame.K_RIGHT: (0, 1), pygame.K_UP: (-1, 0), pygame.K_DOWN: (1, 0)}
HINT_W = 112  # the Hint button beside End turn, when hints are on in a CPU match (issue 18 item 4)


class Session(Protocol):
    """The flow around matches on this screen (CPU: language → rules/difficulty → match → restart;
    online: the lobby starts matches and takes the player back to the room)."""

    @property
    def difficulty(self) -> str | None:
        """The running match's difficulty, when it has one (CPU)."""
        ...

    @property
    def can_restart(self) -> bool:
        """Restart (E4) and Online play are offered; otherwise Back to the room."""
        ...

    @property
    def language_button(self) -> bool:
        """A language button in the header (the online screens have one on every page)."""
        ...

    def begin(self, scene: GameScene) -> None:
        """The screen is shown for the first time."""

    def restart(self, scene: GameScene) -> None:
        """The player confirmed a restart (E4)."""

    def to_lobby(self, scene: GameScene) -> None:
        """Back to the room (after an online match)."""


def _phase_mode(view: SeatView) -> str:
    """The input mode a phase starts in (U3): explore, mine, flag after both (F2); unflag when the
    turn is held so that one of my flags must go first (C1.3, C2)."""
    phase = view.phase
    if phase in (Phase.EXPLORE, Phase.OPEN_EXPLORE, Phase.PLANT, Phase.OPEN_PLANT):
        if not view.explorable and view.recoverable:  # S1 = S3: nowhere to explore or plant
            return "unflag"
        return "explore" if phase in (Phase.EXPLORE, Phase.OPEN_EXPLORE) else "mine"
    return "flag"


class MatchControls:
    """End turn / View result (and, after a CPU match, Show everything), the menu (and language)
    buttons and the mode bar, kept in step. A disabled End turn or mode says why when pressed."""

    def __init__(self, scene: GameScene) -> None:
        self.scene = scene
        self.ctx = scene.ctx
        self.widgets = WidgetGroup(scene.ctx.invalidate, lambda: self.ctx.keyboard)
        self.hint_built = False  # whether the last build made room for the Hint button

    def build(self) -> None:
        ctx, scene, flow = self.ctx, self.scene, self.scene.flow
        buttons = [
            Button(pygame.Rect(HEADER.right - 54, 8, 46, 46), lambda: "", flow.open_menu, style="ghost", icon="menu",
                   icon_color=palette.INK, radius=12, name="menu"),
        ]
        if scene.ended is not None and flow.reveal_on_request():
            # E2 after a CPU match: View result | Show everything (the O13 reveal on request).
            half = (END_TURN.width - 10) // 2
            buttons += [
                Button(pygame.Rect(END_TURN.left, END_TURN.top, half, END_TURN.height), self._end_label, self._end_pressed,
                       style="primary", text_size=17, name="end_turn"),
                Button(pygame.Rect(END_TURN.left + half + 10, END_TURN.top, END_TURN.width - half - 10, END_TURN.height),
                       partial(ctx.t, "result.show_everything"), flow.toggle_everything, icon="eye",
                       icon_color=palette.OPP, text_size=17, name="show_everything"),
            ]
        elif scene.hint.offered():
            end = pygame.Rect(END_TURN.left, END_TURN.top, END_TURN.width - HINT_W - 10, END_TURN.height)
            buttons += [
                Button(end, self._end_label, self._end_pressed, style="primary", text_size=19, name="end_turn",
                       on_disabled=self.explain_end_turn),
                Button(pygame.Rect(end.right + 10, END_TURN.top, HINT_W, END_TURN.height), partial(ctx.t, "hint.button"),
                       scene.hint.ask, icon="hint", icon_color=palette.GOOD, text_size=17, name="hint"),
            ]
        else:
            buttons.append(Button(END_TURN.copy(), self._end_label, self._end_pressed, style="primary", text_size=19,
                                  name="end_turn", on_disabled=self.explain_end_turn))
        self.hint_built = scene.ended is None and scene.hint.offered()
        gap = 8
        w = (MODE_BAR.width - 3 * gap) // 4
        for i, mode in enumerate(MODES):
            width = w if i < 3 else MODE_BAR.width - 3 * (w + gap)
            rect = pygame.Rect(MODE_BAR.left + i * (w + gap), MODE_BAR.top, width, MODE_BAR.height)
            buttons.append(Button(rect, partial(ctx.t, f"mode.{mode}"), partial(scene.set_mode, mode),
                                  icon=mode, icon_color=palette.MODE_COLORS[mode], layout="stack", text_size=14,
                                  radius=16, name=f"mode:{mode}", on_disabled=partial(self.explain_mode, mode)))
        if scene.session.language_button:
            buttons.append(Button(pygame.Rect(HEADER.right - 104, 8, 46, 46), lambda: "", flow.open_language, style="ghost",
                                  icon="globe", icon_color=palette.INK, radius=12, name="language"))
        self.widgets.set(buttons)
        self.refresh()

    def _end_label(self) -> str:
        return self.ctx.t("action.view_result" if self.scene.ended is not None else "action.end_turn")

    def _end_pressed(self) -> None:
        if self.scene.ended is not None:
            self.scene.flow.show_result()
        else:
            self.scene.end_turn()

    def explain_mode(self, mode: str) -> None:
        """A disabled mode was asked for (button, 1–4, F/U): say why, in the phase's words."""
        key = self.scene.words.mode_refusal(mode)
        if key is not None:
            self.scene.line.say(key, {}, "refusal")

    def explain_end_turn(self) -> None:
        """The disabled End turn was pressed (or E): say why (A5, in the phase's words)."""
        key = self.scene.words.end_turn_refusal()
        if key is not None:
            self.scene.line.say(key, {}, "refusal")

    def mode_enabled(self, mode: str) -> bool:
        """A mode is offered exactly when it has legal cells on my turn (``SeatView.targets``: F1 no
        markers in the opening, F2 explore then plant, A3 one new marker a turn, A4 own markers)."""
        scene = self.scene
        view = scene.view()
        if view is None or scene.ended is not None or not scene.my_turn():
            return False
        return view.targets(MODE_ACTION[mode]) != 0

    def refresh(self) -> None:
        scene = self.scene
        view = scene.view()
        end = self.widgets.by_name("end_turn")
        if scene.ended is not None:
            # E2: View result is reachable whenever the result is not on screen — after View board,
            # and after a popup opened from the result (Menu, Restart's Cancel) has gone.
            enabled = not scene.panel.open
            end.icon = "eye"
            everything = next((b for b in self.widgets.buttons if b.name == "show_everything"), None)
            if everything is not None:
                on = scene.flow.everything
                everything.icon = "check" if on else "eye"
                self._set(everything, enabled=True, style="selected" if on else "secondary")
        else:
            enabled = view is not None and scene.input_open() and view.phase is Phase.END_WAIT
            end.icon = None
        self._set(end, enabled=enabled, style="primary")
        for mode in MODES:
            b = self.widgets.by_name(f"mode:{mode}")
            selected = mode == scene.mode and self.mode_enabled(mode)
            self._set(b, enabled=self.mode_enabled(mode), style="accent" if selected else "secondary",
                      accent=palette.MODE_COLORS[mode])

    def _set(self, b: Button, *, enabled: bool, style: str, accent: palette.Color | None = None) -> None:
        if (b.enabled, b.style, b.accent) != (enabled, style, accent if accent is not None else b.accent):
            b.enabled, b.style = enabled, style
            if accent is not None:
                b.accent = accent
            self.widgets.invalidate(b)


class GameScene(Scene):
    """See the module docstring."""

    def __init__(self, ctx: Context, session: Session) -> None:
        super().__init__(ctx)
        self.session = session
        self.controller: MatchController | None = None
        self.board = BoardView(ctx.fonts, ctx.invalidate, top=BOARD_TOP)
        self.mode = "explore"
        # The status line's second line (what happened, or why not), redrawn whenever it changes.
        self.line = MessageLine(ctx.clock, partial(ctx.invalidate, STATUS.inflate(16, 4)))
        self.ended: Ended | None = None
        self.viewing_board = False
        self.deadline_warning: int | None = None  # U6: whole seconds left in my last WARN_SECONDS
        self.pulse = 0
        self.focus_cell = 3 * COLS + 3
        self.pauses: set[str] = set()
        self.dots_phase = 0
        self._result_due: float | None = None
        self._pressed_cell: int | None = None
        self._turn_key: tuple[Phase, int | None, bool] | None = None
        self._shown: tuple[object, ...] = ()
        self._watching = 0  # issue 19: the spectators the header's pill counts
        self.words = MatchWords(self)
        self.hint = MatchHint(self)  # issue 18 item 4: CPU matches, when the settings turn hints on
        self.cues = MatchCues(ctx)  # the match's sounds (client/sound_cues.py)
        self.flow = MatchFlow(self)
        self.panel = ResultPanel(self)
        self.paint = MatchPainter(self)
        self.controls = MatchControls(self)
        self.widgets = self.controls.widgets
        self.controls.build()

    # ----- session hooks --------------------------------------------------------------------------
    def enter(self) -> None:
        self.session.begin(self)

    def attach(self, controller: MatchController) -> None:
        """Show a new match (Start pressed, or a rematch: O14 drops everything about the last one)."""
        self.detach()
        self.controller = controller
        for reason in self.pauses:
            controller.set_paused(reason, True)
        self.board.set_view(controller.view(), self.ctx.clock(), animate=False)
        self.line.say("event.match_started", {}, "event")
        self._sync(self.ctx.clock())
        self.ctx.invalidate(None)

    def detach(self) -> None:
        """Drop the current match and everything shown about it (E4: a restart keeps only the language)."""
        if self.controller is not None:
            self.controller.close()
        self.controller = None
        self.ended = None
        self.viewing_board = False
        self.deadline_warning = None
        self.panel.open = False
        self.flow.reset()
        self.line.clear()
        self._result_due = None
        self._turn_key = None
        self.mode = "explore"
        self.cues.reset()
        self.hint.clear()
        self.board.reset()
        self.controls.build()  # the full-width End turn again
        self._sync(self.ctx.clock())

    def open_online(self) -> None:
        from mineduel.client.scenes.online import OnlineScene

        self.ctx.stack.push(OnlineScene(self.ctx))

    # ----- pausing (AI6) -----------------------------------------------------------------------------
    def pause(self, reason: str) -> None:
        self.pauses.add(reason)
        if self.controller is not None:
            self.controller.set_paused(reason, True)
        self._sync_targets()

    def resume(self, reason: str) -> None:
        self.pauses.discard(reason)
        if self.controller is not None:
            self.controller.set_paused(reason, False)
        self._sync_targets()

    # ----- derived state -------------------------------------------------------------------------------
    def view(self) -> SeatView | None:
        return self.controller.view() if self.controller is not None else None

    def my_turn(self) -> bool:
        view = self.view()
        return view is not None and view.outcome is None and view.to_move == view.seat

    def input_open(self) -> bool:
        """U3: the board takes input only on my turn, with no popup, before the end."""
        return self.my_turn() and "popup" not in self.pauses and self.ended is None

    @property
    def message(self) -> tuple[str, dict[str, object], str] | None:
        """The shown message line as (key, params, "event"|"refusal"), ``None`` when there is none."""
        current = self.line.current
        return None if current is None else (current.key, dict(current.params), current.kind)

    # ----- actions --------------------------------------------------------------------------------------
    def set_mode(self, mode: str) -> None:
        """Switch the input mode; free, not an action (F4). Only a mode with legal cells now (U3);
        asking for another says why instead."""
        if not self.controls.mode_enabled(mode):
            self.controls.explain_mode(mode)
            return
        if mode == self.mode:
            return
        self.mode = mode
        self.controls.refresh()
        self._sync_targets()

    def act(self, cell: int, mode: str | None = None) -> None:
        """Act on ``cell`` in ``mode`` (default: the current mode), if the board takes input (U3)."""
        controller = self.controller
        if controller is None or self.ended is not None:
            return  # E2: the final board takes no input
        if not self.input_open():
            if not self.my_turn():
                self.line.say("refusal.not_your_turn", {}, "refusal")
                self.cues.play("refused")
            return
        controller.submit(Action(controller.seat, MODE_ACTION[mode or self.mode], cell))
        self._drain()

    def end_turn(self) -> None:
        """A5: end the turn in END_WAIT; anywhere else say why (nothing is sent)."""
        controller = self.controller
        if controller is None or self.ended is not None:
            return
        if self.words.end_turn_refusal() is not None:
            self.controls.explain_end_turn()
            return
        if not self.input_open():
            return
        controller.submit(Action(controller.seat, ActionType.END_TURN))
        self._drain()

    # ----- events from the match -------------------------------------------------------------------------
    def _drain(self) -> None:
        controller = self.controller
        if controller is None:
            return
        events = controller.poll()
        if not events:
            return
        now = self.ctx.clock()
        me = controller.seat
        for event in events:
            if isinstance(event, Refused):
                self.line.say(f"refusal.{event.refusal}", {}, "refusal")
            elif isinstance(event, Notice):
                self.line.say(event.key, dict(event.params), "refusal")
            elif isinstance(event, Applied):
                key = self.words.applied_key(event, me)
                if key is not None:  # the server's move made for a seat (O4) outranks any refusal
                    self.line.say(key, {} if event.cell is None else {"cell": event.cell}, "event",
                              "auto" if event.auto else "event")
                if event.seat != me and event.cell is not None:
                    self.board.set_highlight(event.cell, now)
            else:  # Ended: fixed once (C4, E1); the record is saved and the result shown shortly after
                self.ended = event
                self.board.set_ko(event.ko_cell)
                self.line.say(self.words.ending_key(event), {}, "event", "end")
                if self.words.in_screen_result():
                    self.line.clear()  # the result lines above the board say it all
                self.controls.build()  # View result (| Show everything)
                self.flow.save_record()
                self._result_due = now + RESULT_DELAY
        self.cues.drained(events, me, self.board.view, controller.view())
        self.board.set_view(controller.view(), now)
        self._sync(now)

    def _sync(self, now: float) -> None:
        """After any change: the mode follows the phase (U3) — switched on entering EXPLORE / PLANT /
        END_WAIT (or a held turn, C1.3/C2: unflag), and moved back to the phase's own mode when the
        chosen one has no legal cell left (a flag placed while exploring) — then the hints."""
        view = self.view()
        if view is not None and view.to_move == view.seat and view.outcome is None:
            preferred = _phase_mode(view)
            key = (view.phase, view.to_move, preferred == "unflag")
            if key != self._turn_key or (not self.controls.mode_enabled(self.mode)
                                         and self.controls.mode_enabled(preferred)):
                self.mode = preferred
            self._turn_key = key
        else:
            self._turn_key = None if view is None else (view.phase, view.to_move, False)
        self.controls.refresh()
        self._sync_targets()
        for rect in (HEADER, PLAYERS, STATUS.inflate(16, 4), pygame.Rect(0, INFO_Y, 390, 32)):
            self.ctx.invalidate(rect)

    def _sync_targets(self) -> None:
        """The raised-tile hint: the engine's legal cells for the current mode (S1–S3, A3, A4)."""
        view = self.view()
        targets = view.targets(MODE_ACTION[self.mode]) if view is not None and self.input_open() else 0
        self.board.set_actionable(targets, self.mode)
        self.board.set_focus(self.focus_cell, self.ctx.keyboard and self.widgets.focus is None and self.controller is not None)

    # ----- the frame ----------------------------------------------------------------------------------------
    def update(self, now: float) -> None:
        controller = self.controller
        if controller is not None:
            controller.update()
            self._drain()
        if self.controls.hint_built != (self.ended is None and self.hint.offered()):
            self.controls.build()  # hints turned on or off in the settings: the button comes or goes
        self.hint.follow()
        self.cues.update(now)
        self.line.update()  # a waiting message's turn (a refusal has been readable long enough)
        if self._result_due is not None and now >= self._result_due:
            self._result_due = None
            if self.ctx.stack.popup is None and not self.viewing_board:
                self.flow.show_result()
            else:
                self.controls.refresh()
        self.board.update(now)
        if self.line.shake_at is not None:
            if now - self.line.shake_at >= SHAKE_TIME:
                self.line.shake_at = None
            self.ctx.invalidate(STATUS.inflate(16, 4))
        caps = None if controller is None else controller.capabilities
        if (controller is not None and caps is not None and caps.deadline is None
                and controller.opponent_to_move and not self.pauses):
            phase = int(now / DOTS_PERIOD) % 3
            if phase != self.dots_phase:
                self.dots_phase = phase
                self.ctx.invalidate(pygame.Rect(195, PLAYERS_Y, 195, PLAYERS_H))
        if caps is not None:
            self._follow_capabilities(now)
        self.board.set_focus(self.focus_cell, self.ctx.keyboard and self.widgets.focus is None and controller is not None)

    def _follow_capabilities(self, now: float) -> None:
        """Redraw the deadline, presence and rematch parts only when what they show changed."""
        controller = self.controller
        assert controller is not None
        caps = controller.capabilities
        seconds = None if caps.deadline is None else caps.deadline.seconds_left()
        self.cues.deadline(seconds, self.my_turn())
        # U6: my last WARN_SECONDS are unmistakable — the status line counts them down and my
        # seconds pill pulses in the warning colour (the tick is the sound cues' business).
        warn = None
        if seconds is not None and 0 < seconds <= WARN_SECONDS and self.my_turn() and self.ended is None:
            warn = math.ceil(seconds)
        pulse = int(now / PULSE_PERIOD) % 2 if warn is not None else 0
        if warn != self.deadline_warning or pulse != self.pulse:
            if warn != self.deadline_warning:
                self.ctx.invalidate(STATUS.inflate(16, 4))
            self.deadline_warning, self.pulse = warn, pulse
            self.ctx.invalidate(PLAYERS)
            self.ctx.invalidate(INFO.inflate(4, 4))
        presence = None if caps.presence is None else caps.presence.presence()
        watching = 0 if presence is None else presence.spectators
        if watching != self._watching:
            self._watching = watching
            self.ctx.invalidate(HEADER)
        shown = (None if seconds is None else math.ceil(seconds),
                 None if presence is None else (
                     presence.connected, presence.reconnecting, presence.opponent_away, presence.opponent_gone,
                     None if presence.retry_in is None else math.ceil(presence.retry_in),
                     None if presence.opponent_seconds is None else math.ceil(presence.opponent_seconds),
                 ))
        if shown != self._shown:
            if self._shown:
                self.ctx.invalidate(PLAYERS)
                self.ctx.invalidate(INFO.inflate(4, 4))
                self.ctx.invalidate(STATUS.inflate(16, 4))
            self._shown = shown
        self.panel.refresh()

    def next_wakeup(self, now: float) -> float | None:
        times = []
        if self.board.animating() or self.line.shake_at is not None:
            times.append(now)
        if self._result_due is not None:
            times.append(self._result_due)
        waiting = self.line.next_change()
        if waiting is not None:
            times.append(waiting)
        if self.deadline_warning is not None:
            times.append((int(now / PULSE_PERIOD) + 1) * PULSE_PERIOD)
        if self.controller is not None:
            wake = self.controller.next_wakeup()
            if wake is not None:
                times.append(wake)
            if self.controller.capabilities.deadline is None and self.controller.opponent_to_move and not self.pauses:
                times.append((int(now / DOTS_PERIOD) + 1) * DOTS_PERIOD)
        return min(times) if times else None

    # ----- input -----------------------------------------------------------------------------------------------
    def process_event(self, event: InputEvent) -> bool:
        if self.panel.handle(event):
            return True
        if isinstance(event, KeyEvent):
            return self._key(event)
        if isinstance(event, PointerEvent):
            if self.widgets.focus is not None and event.kind is PointerKind.DOWN:
                self.widgets.clear_focus()
            if self.widgets.handle(event):
                return True
            return self._pointer(event)
        return False

    def _pointer(self, event: PointerEvent) -> bool:
        cell = self.board.cell_at(event.pos)
        if event.kind is PointerKind.MOVE:
            self.board.set_hover(None if event.touch else cell)
            return cell is not None
        if event.kind is PointerKind.DOWN:
            self._pressed_cell = cell
            return cell is not None
        if event.kind is PointerKind.CANCEL:
            self._pressed_cell = None
            return False
        pressed, self._pressed_cell = self._pressed_cell, None
        if cell is not None and cell == pressed:
            self.focus_cell = cell
            self.act(cell)
            return True
        return cell is not None

    def _key(self, event: KeyEvent) -> bool:
        key = event.key
        if key == pygame.K_ESCAPE:
            self.flow.open_menu()
        elif key in ARROWS:
            self.widgets.clear_focus()
            dr, dc = ARROWS[key]
            row, col = divmod(self.focus_cell, COLS)
            self.focus_cell = max(0, min(7, row + dr)) * COLS + max(0, min(7, col + dc))
            self._sync_targets()
            self.ctx.ensure_visible(self.board.cell_rect(self.focus_cell))
        elif key == pygame.K_TAB:
            self.widgets.handle(event)
            self._sync_targets()
            focused = self.widgets.focused()
            if focused is not None:
                self.ctx.ensure_visible(focused.rect)
        elif key in (pygame.K_RETURN, pygame.K_KP_ENTER, pygame.K_SPACE):
            if self.widgets.focused() is not None:
                return self.widgets.handle(event)
            self.act(self.focus_cell)
        elif key in (pygame.K_f, pygame.K_u):
            mode = "flag" if key == pygame.K_f else "unflag"
            if not self.my_turn() or self.ended is not None:
                self.act(self.focus_cell, mode)  # says why (not my turn) or nothing (the final board)
            elif self.controls.mode_enabled(mode):
                self.set_mode(mode)
                self.act(self.focus_cell, mode)
            else:
                self.controls.explain_mode(mode)
        elif key == pygame.K_e:
            if self.ended is not None:
                self.flow.show_result()
            else:
                self.end_turn()
        elif key in MODE_KEYS:
            self.set_mode(MODE_KEYS[key])  # a mode without legal cells says why instead
        elif key == pygame.K_h and self.hint.offered():
            self.hint.ask()
        else:
            return False
        return True

    # ----- drawing ---------------------------------------------------------------------------------------------
    def relayout(self) -> None:
        if self.panel.open:
            self.panel.build()
        self.ctx.invalidate(None)

    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        self.paint.draw(canvas, area)
        self.hint.draw(canvas, area)
