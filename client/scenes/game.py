"""The match screen: header, both players, the status line, the board, End turn and the mode bar.

It talks to a :class:`~mineduel.client.controller.MatchController` only, so the same screen
serves a CPU match and (later) an online one. The flow around a match — choosing a language and
difficulty, restarting — belongs to a :class:`Session` the app passes in.

Rules this screen carries out:

* U3 — board input only on the local seat's turn, with no popup, before the end; entering
  EXPLORE / PLANT switches the input mode (explore / mine) by itself;
* the status line says what just happened (``event.*``) and what to do next (``status.*``);
  a refused action says why (``refusal.<code>``);
* AI6 — a popup, or the window being minimised / hidden / unfocused, pauses the match's clock
  (the controller decides what pausing means: the CPU stops its countdown, online ignores it);
* C4/E1/E2 — the result popup; View board / View result toggle without limit while the board
  takes no input; the finished record is saved once (RECORD.md) and can be exported.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Protocol

import pygame

from mineduel.client.controller import Applied, Ended, MatchController, OpponentKind, Refused
from mineduel.client.records import WriteResult
from mineduel.client.scenes.base import Context, Scene
from mineduel.client.scenes.popups import ConfirmPopup, LanguagePopup, MenuItem, MenuPopup, ResultInfo, ResultPopup, RulesPopup
from mineduel.client.ui import palette, shapes
from mineduel.client.ui.board import BoardView
from mineduel.client.ui.input import InputEvent, KeyEvent, PointerEvent, PointerKind
from mineduel.client.ui.text import blit_paragraph, blit_text
from mineduel.client.ui.widgets import Button, WidgetGroup
from mineduel.shared.rules.bitboard import COLS, FULL
from mineduel.shared.rules.engine import Action, ActionType, Phase, Reason
from mineduel.shared.rules.views import SeatView

MODES = ("explore", "mine", "flag", "unflag")
MODE_ACTION = {"explore": ActionType.EXPLORE, "mine": ActionType.PLANT, "flag": ActionType.FLAG, "unflag": ActionType.UNFLAG}
MODE_ICON = {"explore": "explore", "mine": "mine", "flag": "flag", "unflag": "unflag"}
MODE_KEYS = {pygame.K_1: "explore", pygame.K_2: "mine", pygame.K_3: "flag", pygame.K_4: "unflag"}

# Layout of the 390×844 canvas (U4): every button is at least 44 px tall.
HEADER = pygame.Rect(0, 0, 390, 60)
PLAYERS_Y, PLAYERS_H = 66, 58
STATUS = pygame.Rect(8, 132, 374, 88)
BOARD_TOP = 230
INFO_Y = 616
END_TURN = pygame.Rect(8, 656, 374, 56)
MODE_BAR = pygame.Rect(8, 726, 374, 84)
RESULT_DELAY = 0.8  # seconds between the last move and the result popup: see the KO first
SHAKE_TIME = 0.35
DOTS_PERIOD = 0.3


class Session(Protocol):
    """The flow around matches on this screen (CPU: language → rules/difficulty → match → restart)."""

    def begin(self, scene: GameScene) -> None:
        """The screen is shown for the first time."""

    def restart(self, scene: GameScene) -> None:
        """The player confirmed a restart (E4)."""

    @property
    def difficulty(self) -> str | None:
        """The running match's difficulty, when it has one (CPU)."""


class GameScene(Scene):
    """See the module docstring."""

    def __init__(self, ctx: Context, session: Session) -> None:
        super().__init__(ctx)
        self.session = session
        self.controller: MatchController | None = None
        self.board = BoardView(ctx.fonts, ctx.invalidate, top=BOARD_TOP)
        self.widgets = WidgetGroup(ctx.invalidate, lambda: self.ctx.keyboard)
        self.mode = "explore"
        self.message: tuple[str, dict[str, object], str] | None = None  # (key, params, "event"|"refusal")
        self.ended: Ended | None = None
        self.viewing_board = False
        self.result_popup: ResultPopup | None = None
        self.record_result: WriteResult | None = None
        self.export_result: WriteResult | None = None
        self.focus_cell = 3 * COLS + 3
        self.pauses: set[str] = set()
        self._result_due: float | None = None
        self._pressed_cell: int | None = None
        self._shake_at: float | None = None
        self._dots_phase = 0
        self._turn_key: tuple[Phase, int | None] | None = None
        self._build_widgets()

    # ----- session hooks --------------------------------------------------------------------------
    def enter(self) -> None:
        self.session.begin(self)

    def attach(self, controller: MatchController) -> None:
        """Show a new match (Start pressed, or a rematch)."""
        self.detach()
        self.controller = controller
        for reason in self.pauses:
            controller.set_paused(reason, True)
        self.board.set_view(controller.view(), self.ctx.clock(), animate=False)
        self.message = ("event.match_started", {}, "event")
        self._sync(self.ctx.clock())

    def detach(self) -> None:
        """Drop the current match and everything shown about it (E4: a restart keeps only the language)."""
        if self.controller is not None:
            self.controller.close()
        self.controller = None
        self.ended = None
        self.viewing_board = False
        self.result_popup = None
        self.record_result = self.export_result = None
        self.message = None
        self._result_due = None
        self._turn_key = None
        self.mode = "explore"
        self.board.reset()
        self._sync(self.ctx.clock())

    # ----- pausing (AI6) -----------------------------------------------------------------------------
    def pause(self, reason: str) -> None:
        self.pauses.add(reason)
        if self.controller is not None:
            self.controller.set_paused(reason, True)
        self._sync_actionable()

    def resume(self, reason: str) -> None:
        self.pauses.discard(reason)
        if self.controller is not None:
            self.controller.set_paused(reason, False)
        self._sync_actionable()

    # ----- derived state -------------------------------------------------------------------------------
    def view(self) -> SeatView | None:
        return self.controller.view() if self.controller is not None else None

    def my_turn(self) -> bool:
        view = self.view()
        return view is not None and view.outcome is None and view.to_move == view.seat

    def input_open(self) -> bool:
        """U3: the board takes input only on my turn, with no popup, before the end."""
        return self.my_turn() and "popup" not in self.pauses and self.ended is None

    def opponent_key(self) -> str:
        if self.controller is not None and self.controller.opponent is OpponentKind.HUMAN:
            return "status.opponent"
        return "status.cpu"

    def actionable(self, mode: str) -> int:
        """Cells the current mode may act on now (S1–S3, A3, A4), for the raised-tile hint."""
        view = self.view()
        if view is None or not self.input_open():
            return 0
        phase = view.phase
        if mode == "explore":
            return view.explorable if phase in (Phase.EXPLORE, Phase.OPEN_EXPLORE) else 0
        if mode == "mine":
            return view.explorable if phase in (Phase.PLANT, Phase.OPEN_PLANT) else 0
        if phase not in (Phase.EXPLORE, Phase.PLANT, Phase.END_WAIT):
            return 0
        if mode == "flag":
            return (FULL & ~view.revealed & ~view.markers) if view.quota_left else 0
        return view.my_markers

    def mode_enabled(self, mode: str) -> bool:
        view = self.view()
        if view is None or self.ended is not None:
            return False
        if mode in ("flag", "unflag"):
            return view.phase not in (Phase.OPEN_EXPLORE, Phase.OPEN_PLANT)  # F1: no markers in the opening
        return True

    def instruction(self) -> str:
        """What to do next (the status line's first line)."""
        t = self.ctx.t
        view = self.view()
        if view is None:
            return t("app.tagline")
        if self.ended is not None:
            return t("status.viewing_board" if self.viewing_board else "status.game_over")
        if view.to_move != view.seat:
            return t("status.cpu_thinking" if self.opponent_key() == "status.cpu" else "status.opponent_turn")
        phase = view.phase
        if phase is Phase.OPEN_EXPLORE:
            return t("status.opening_explore")
        if phase is Phase.OPEN_PLANT:
            return t("status.opening_plant")
        if phase is Phase.EXPLORE:
            return t("status.recover_explore" if not view.explorable and view.recoverable else "status.explore")
        if phase is Phase.PLANT:
            return t("status.recover_plant" if not view.explorable and view.recoverable else "status.plant")
        return t("status.end_wait")

    def event_line(self) -> tuple[str, bool] | None:
        if self.message is None:
            return None
        key, params, kind = self.message
        params = dict(params)
        if "cell" in params and isinstance(params["cell"], int):
            row, col = divmod(params["cell"], COLS)
            params["cell"] = self.ctx.t("cell.name", row=row + 1, col=col + 1)
        return self.ctx.t(key, **params), kind == "refusal"

    # ----- widgets -------------------------------------------------------------------------------------
    def _build_widgets(self) -> None:
        ctx = self.ctx
        buttons = [
            Button(pygame.Rect(HEADER.right - 54, 8, 46, 46), lambda: "", self.open_menu, style="ghost", icon="menu",
                   icon_color=palette.INK, radius=12, name="menu"),
            Button(END_TURN.copy(), self._end_button_label, self._end_button_pressed, style="primary", text_size=19, name="end_turn"),
        ]
        gap = 8
        w = (MODE_BAR.width - 3 * gap) // 4
        for i, mode in enumerate(MODES):
            rect = pygame.Rect(MODE_BAR.left + i * (w + gap), MODE_BAR.top, w if i < 3 else MODE_BAR.width - 3 * (w + gap), MODE_BAR.height)
            buttons.append(Button(rect, (lambda m=mode: ctx.t(f"mode.{m}")), (lambda m=mode: self.set_mode(m)),
                                  icon=MODE_ICON[mode], icon_color=palette.MODE_COLORS[mode], layout="stack", text_size=14,
                                  radius=16, name=f"mode:{mode}"))
        self.widgets.set(buttons)
        self._refresh_widgets()

    def _end_button_label(self) -> str:
        if self.ended is not None:
            return self.ctx.t("action.view_result")
        return self.ctx.t("action.end_turn")

    def _end_button_pressed(self) -> None:
        if self.ended is not None:
            self.show_result()
        else:
            self.end_turn()

    def _refresh_widgets(self) -> None:
        view = self.view()
        end = self.widgets.by_name("end_turn")
        if self.ended is not None:
            enabled = self.viewing_board
            end.icon = "eye"
        else:
            enabled = view is not None and self.input_open() and view.phase is Phase.END_WAIT
            end.icon = None
        self._set_button(end, enabled=enabled, style="primary")
        for mode in MODES:
            b = self.widgets.by_name(f"mode:{mode}")
            selected = mode == self.mode and self.mode_enabled(mode)
            self._set_button(b, enabled=self.mode_enabled(mode), style="accent" if selected else "secondary", accent=palette.MODE_COLORS[mode])

    def _set_button(self, b: Button, *, enabled: bool, style: str, accent: palette.Color | None = None) -> None:
        if (b.enabled, b.style, b.accent) != (enabled, style, accent if accent is not None else b.accent):
            b.enabled, b.style = enabled, style
            if accent is not None:
                b.accent = accent
            self.widgets.invalidate(b)

    # ----- actions --------------------------------------------------------------------------------------
    def set_mode(self, mode: str) -> None:
        """Switch the input mode; free, not an action (F4)."""
        if mode == self.mode:
            return
        self.mode = mode
        self._refresh_widgets()
        self._sync_actionable()

    def act(self, cell: int, mode: str | None = None) -> None:
        """Act on ``cell`` in ``mode`` (default: the current mode), if the board takes input (U3)."""
        controller = self.controller
        if controller is None:
            return
        if self.ended is not None:
            return  # E2: the final board takes no input
        if not self.input_open():
            if not self.my_turn():
                self._say("refusal.not_your_turn", {}, "refusal")
            return
        controller.submit(Action(controller.seat, MODE_ACTION[mode or self.mode], cell))
        self._drain()

    def end_turn(self) -> None:
        controller = self.controller
        if controller is None or not self.input_open():
            return
        controller.submit(Action(controller.seat, ActionType.END_TURN))
        self._drain()

    def open_menu(self) -> None:
        ctx = self.ctx
        items = [
            MenuItem("menu.rules", "rules", self.open_rules),
            MenuItem("menu.language", "globe", self.open_language),
            MenuItem("action.restart", "restart", self.confirm_restart, enabled=self.controller is not None),
        ]
        if ctx.allowed.online:
            items.append(MenuItem("menu.online", "online", self.open_online))
        if self.ended is not None and self.controller is not None and self.controller.record_text() is not None and ctx.allowed.files:
            items.append(MenuItem("action.export_record", "export", self.export_record))
        if ctx.allowed.quit:
            items.append(MenuItem("menu.quit", "quit", ctx.quit, danger=True))
        ctx.stack.open_popup(MenuPopup(ctx, items))

    def open_rules(self) -> None:
        self.ctx.stack.open_popup(RulesPopup(self.ctx))

    def open_language(self) -> None:
        self.ctx.stack.open_popup(LanguagePopup(self.ctx, self.choose_language))

    def choose_language(self, code: str) -> None:
        """U5: switch and save; the board, turn and result stay exactly as they are (E1)."""
        self.ctx.tr.set_language(code)
        self.ctx.save_settings(replace(self.ctx.settings, language=code))
        self.ctx.stack.relayout()

    def open_online(self) -> None:
        from mineduel.client.scenes.online import OnlineScene

        self.ctx.stack.push(OnlineScene(self.ctx))

    def confirm_restart(self) -> None:
        self.ctx.stack.open_popup(ConfirmPopup(self.ctx, title_key="confirm.restart.title", body_key="confirm.restart.body",
                                               confirm_key="action.restart", on_confirm=self.restart,
                                               on_cancel=self._back_to_result if self.ended is not None and not self.viewing_board else None))

    def _back_to_result(self) -> None:
        self.show_result()

    def restart(self) -> None:
        self.session.restart(self)

    def show_result(self) -> None:
        """E2: View result — the same popup again, as often as wanted."""
        if self.ended is None or self.controller is None:
            return
        self.viewing_board = False
        popup = ResultPopup(self.ctx, ResultInfo(self.ended, self.controller.seat, self.session.difficulty, self._record_line),
                            on_view_board=self.view_board, on_restart=self.confirm_restart, on_menu=self.open_menu,
                            on_export=self.export_record if self.controller.record_text() is not None and self.ctx.allowed.files else None)
        self.result_popup = popup
        self.ctx.stack.open_popup(popup)
        self._refresh_widgets()
        self.ctx.invalidate(STATUS)

    def view_board(self) -> None:
        """E2: View board — close the result; the board takes no input meanwhile."""
        self.viewing_board = True
        if self.result_popup is not None:
            self.result_popup.close()
        self._refresh_widgets()
        self.ctx.invalidate(STATUS)

    # ----- records -----------------------------------------------------------------------------------------
    def _save_record(self) -> None:
        controller = self.controller
        text = controller.record_text() if controller is not None else None
        if controller is None or text is None:
            return
        self.record_result = self.ctx.records.save(controller.record_name, text)

    def export_record(self) -> None:
        controller = self.controller
        text = controller.record_text() if controller is not None else None
        if controller is None or text is None:
            return
        self.export_result = self.ctx.records.export(controller.record_name, text)
        if self.result_popup is not None and self.ctx.stack.popup is self.result_popup:
            self.result_popup.refresh_record_line()
        else:
            self.show_result()

    def _record_line(self) -> tuple[str, bool]:
        if not self.ctx.allowed.files:
            return "", False  # a kiosk: where records go is the operator's business
        t = self.ctx.t
        result, ok_key, fail_key = (self.export_result, "record.exported", "record.export_failed")
        if result is None:
            result, ok_key, fail_key = (self.record_result, "record.saved", "record.failed")
        if result is None:
            return "", False
        if result.ok:
            return t(ok_key, path=str(result.path)), False
        return t(fail_key, error=t(f"record.error.{result.error}")), True

    # ----- events from the match -------------------------------------------------------------------------
    def _say(self, key: str, params: dict[str, object], kind: str) -> None:
        self.message = (key, params, kind)
        if kind == "refusal":
            self._shake_at = self.ctx.clock()
        self.ctx.invalidate(STATUS.inflate(16, 4))

    # How the status line names each applied action, and who the other seat is in event keys.
    EVENT_VERBS: dict[ActionType, str] = {ActionType.EXPLORE: "explored", ActionType.PLANT: "planted",
                                          ActionType.FLAG: "flagged", ActionType.UNFLAG: "unflagged",
                                          ActionType.END_TURN: "ended"}
    OPPONENT_EVENT_PREFIX = "cpu"

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
                self._say(f"refusal.{event.refusal}", {}, "refusal")
            elif isinstance(event, Applied):
                self._on_applied(event, me, now)
            elif isinstance(event, Ended):
                self._on_ended(event, now)
        self.board.set_view(controller.view(), now)
        self._sync(now)

    def _event_verb(self, event: Applied) -> str | None:
        return self.EVENT_VERBS.get(event.kind)

    def _on_applied(self, event: Applied, me: int, now: float) -> None:
        """Say what happened (``event.<who>_<verb>``) and highlight the other seat's cell."""
        verb = self._event_verb(event)
        if verb is not None:
            who = "you" if event.seat == me else self.OPPONENT_EVENT_PREFIX
            params: dict[str, object] = {} if event.cell is None else {"cell": event.cell}
            self._say(f"event.{who}_{verb}", params, "event")
        if event.seat != me and event.cell is not None:
            self.board.set_highlight(event.cell, now)

    def _on_ended(self, event: Ended, now: float) -> None:
        """The end (C4, E1): fixed once; the record is saved and the result shown shortly after."""
        self.ended = event
        self.board.set_ko(event.ko_cell)
        self._say(self._ending_key(event), {}, "event")
        self._save_record()
        self._result_due = now + RESULT_DELAY

    def _ending_key(self, ended: Ended) -> str:
        """The status line's account of the end: who stepped on whose mine, or which draw."""
        outcome = ended.outcome
        if outcome.reason is Reason.KO and self.controller is not None:
            return "result.detail.cpu_hit_mine" if outcome.winner == self.controller.seat else "result.detail.you_hit_mine"
        return f"result.detail.{outcome.reason}"

    def _sync(self, now: float) -> None:
        """After any change: auto-switch the mode on entering EXPLORE/PLANT (U3), refresh hints."""
        view = self.view()
        if view is not None and view.to_move == view.seat and view.outcome is None:
            key = (view.phase, view.to_move)
            if key != self._turn_key:
                if view.phase in (Phase.EXPLORE, Phase.OPEN_EXPLORE):
                    self.mode = "explore"
                elif view.phase in (Phase.PLANT, Phase.OPEN_PLANT):
                    self.mode = "mine"
            self._turn_key = key
        else:
            self._turn_key = None if view is None else (view.phase, view.to_move)
        self._refresh_widgets()
        self._sync_actionable()
        self.ctx.invalidate(HEADER)
        self.ctx.invalidate(pygame.Rect(0, PLAYERS_Y - 4, 390, PLAYERS_H + 8))
        self.ctx.invalidate(STATUS.inflate(16, 4))
        self.ctx.invalidate(pygame.Rect(0, INFO_Y, 390, 32))

    def _sync_actionable(self) -> None:
        self.board.set_actionable(self.actionable(self.mode), self.mode)
        self.board.set_focus(self.focus_cell, self.ctx.keyboard and self.widgets.focus is None and self.controller is not None)

    # ----- the frame ----------------------------------------------------------------------------------------
    def update(self, now: float) -> None:
        controller = self.controller
        if controller is not None:
            controller.update()
            self._drain()
        if self._result_due is not None and now >= self._result_due:
            self._result_due = None
            if self.ctx.stack.popup is None and not self.viewing_board:
                self.show_result()
            else:
                self._refresh_widgets()
        self.board.update(now)
        if self._shake_at is not None:
            if now - self._shake_at >= SHAKE_TIME:
                self._shake_at = None
            self.ctx.invalidate(STATUS.inflate(16, 4))
        if controller is not None and controller.opponent_to_move and not self.pauses:
            phase = int(now / DOTS_PERIOD) % 3
            if phase != self._dots_phase:
                self._dots_phase = phase
                self.ctx.invalidate(pygame.Rect(195, PLAYERS_Y, 195, PLAYERS_H))
        self.board.set_focus(self.focus_cell, self.ctx.keyboard and self.widgets.focus is None and controller is not None)

    def next_wakeup(self, now: float) -> float | None:
        times = []
        if self.board.animating() or self._shake_at is not None:
            times.append(now)
        if self._result_due is not None:
            times.append(self._result_due)
        if self.controller is not None:
            wake = self.controller.next_wakeup()
            if wake is not None:
                times.append(wake)
            if self.controller.opponent_to_move and not self.pauses:
                times.append((int(now / DOTS_PERIOD) + 1) * DOTS_PERIOD)
        return min(times) if times else None

    # ----- input -----------------------------------------------------------------------------------------------
    def process_event(self, event: InputEvent) -> bool:
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
            self.open_menu()
            return True
        moves = {pygame.K_LEFT: (0, -1), pygame.K_RIGHT: (0, 1), pygame.K_UP: (-1, 0), pygame.K_DOWN: (1, 0)}
        if key in moves:
            self.widgets.clear_focus()
            dr, dc = moves[key]
            row, col = divmod(self.focus_cell, COLS)
            row, col = max(0, min(7, row + dr)), max(0, min(7, col + dc))
            self.focus_cell = row * COLS + col
            self._sync_actionable()
            self.ctx.ensure_visible(self.board.cell_rect(self.focus_cell))
            return True
        if key == pygame.K_TAB:
            self.widgets.handle(event)
            self._sync_actionable()
            focused = self.widgets.focused()
            if focused is not None:
                self.ctx.ensure_visible(focused.rect)
            return True
        if key in (pygame.K_RETURN, pygame.K_KP_ENTER, pygame.K_SPACE):
            if self.widgets.focused() is not None:
                return self.widgets.handle(event)
            self.act(self.focus_cell)
            return True
        if key == pygame.K_f:
            self.set_mode("flag")
            self.act(self.focus_cell, "flag")
            return True
        if key == pygame.K_u:
            self.set_mode("unflag")
            self.act(self.focus_cell, "unflag")
            return True
        if key == pygame.K_e:
            if self.ended is not None:
                self.show_result()
            else:
                self.end_turn()
            return True
        if key in MODE_KEYS:
            if self.mode_enabled(MODE_KEYS[key]):
                self.set_mode(MODE_KEYS[key])
            return True
        return False

    # ----- drawing ---------------------------------------------------------------------------------------------
    def relayout(self) -> None:
        self.ctx.invalidate(None)

    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        now = self.ctx.clock()
        canvas.fill(palette.BACKGROUND, area)
        if area.colliderect(HEADER):
            self._draw_header(canvas)
        if area.colliderect(pygame.Rect(0, PLAYERS_Y, 390, PLAYERS_H)):
            self._draw_players(canvas, now)
        if area.colliderect(STATUS.inflate(16, 4)):
            self._draw_status(canvas, now)
        self.board.draw(canvas, area, now)
        if area.colliderect(pygame.Rect(0, INFO_Y, 390, 32)):
            self._draw_info(canvas)
        self.widgets.draw(canvas, self.ctx.fonts, area)

    def _draw_header(self, canvas: pygame.Surface) -> None:
        ctx = self.ctx
        # The wordmark: a small mine badge and the title.
        canvas.blit(shapes.circle(32, palette.CARD_RAISED), (14, 15))
        canvas.blit(shapes.icon("mine", 22, palette.PRIMARY), (19, 20))
        title = blit_text(canvas, ctx.fonts, ctx.t("app.title"), 21, palette.INK, bold=True, midleft=(54, 31))
        view = self.view()
        pills: list[tuple[str, palette.Color]] = []
        if view is not None:
            pills.append((ctx.t("status.turn", turn=view.turn) if view.turn else ctx.t("status.opening"), palette.INK))
        if self.session.difficulty and view is not None:
            pills.append((ctx.t(f"difficulty.{self.session.difficulty}"), palette.INK_SOFT))
        x = HEADER.right - 60
        for text, color in pills:
            size = 13
            w = ctx.fonts.width(text, size, True) + 20
            rect = pygame.Rect(x - w, 18, w, 26)
            if rect.left < title.right + 6:
                break  # no room beside the title (long words in some languages): drop the rest
            canvas.blit(shapes.rounded(rect.size, 13, palette.CARD_RAISED, 1, palette.CARD_BORDER), rect)
            blit_text(canvas, ctx.fonts, text, size, color, bold=True, center=rect.center)
            x = rect.left - 6

    # The opponent's badge and name; the online scene shows a person instead of the CPU chip.
    OPPONENT_BADGE = "cpu"

    def _draw_players(self, canvas: pygame.Surface, now: float) -> None:
        """Both player cards: badge, name, counts (my mines only to me: V2), whose turn it is."""
        ctx = self.ctx
        view = self.view()
        w = (374 - 10) // 2
        for i, (seat_is_me, name_key, color, badge) in enumerate(
            ((True, "status.you", palette.ME, "person"), (False, self.opponent_key(), palette.OPP, self.OPPONENT_BADGE))
        ):
            rect = pygame.Rect(8 + i * (w + 10), PLAYERS_Y, w, PLAYERS_H)
            active = view is not None and view.outcome is None and (view.to_move == view.seat) == seat_is_me
            fill = palette.mix(palette.CARD, color, 0.16) if active else palette.CARD
            canvas.blit(shapes.rounded(rect.size, 16, fill, 2 if active else 1, color if active else palette.CARD_BORDER), rect)
            badge_rect = pygame.Rect(rect.left + 10, rect.centery - 17, 34, 34)
            canvas.blit(shapes.circle(34, color), badge_rect)
            canvas.blit(shapes.icon(badge, 22, palette.ON_ACCENT), (badge_rect.x + 6, badge_rect.y + 6))
            blit_text(canvas, ctx.fonts, ctx.t(name_key), 16, palette.INK, bold=True, midleft=(rect.left + 52, rect.top + 19))
            if view is not None:
                # Counts: markers on the board (both), my mines (me only: V2).
                y = rect.top + 41
                x = rect.left + 52
                markers = view.my_markers if seat_is_me else view.opponent_markers
                canvas.blit(shapes.icon("flag" if seat_is_me else "flag_opponent", 18, palette.ME_LIGHT if seat_is_me else palette.OPP), (x, y - 9))
                r = blit_text(canvas, ctx.fonts, str(markers.bit_count()), 14, palette.INK_SOFT, bold=True, midleft=(x + 20, y))
                if seat_is_me:
                    x = r.right + 12
                    canvas.blit(shapes.icon("mine", 16, palette.ME_LIGHT), (x, y - 8))
                    blit_text(canvas, ctx.fonts, str(view.my_mines.bit_count()), 14, palette.INK_SOFT, bold=True, midleft=(x + 19, y))
            self._draw_player_extras(canvas, rect, badge_rect, seat_is_me, active, color)

    def _draw_player_extras(
        self, canvas: pygame.Surface, rect: pygame.Rect, badge: pygame.Rect, seat_is_me: bool, active: bool, color: palette.Color
    ) -> None:
        """CPU mode: the CPU's "thinking" dots, and a dot on my card on my turn."""
        if self.view() is None:
            return
        if active and not seat_is_me and self.controller is not None and self.controller.opponent_to_move:
            # "Thinking" dots, stepping (not a smooth animation: three redraws a second).
            lit = self._dots_phase if not self.pauses else -1
            for k in range(3):
                c = color if k == lit else palette.mix(palette.CARD, color, 0.45)
                canvas.blit(shapes.circle(8, c), (rect.right - 40 + k * 11, rect.top + 15))
        if active and seat_is_me:
            canvas.blit(shapes.circle(8, color), (rect.right - 18, rect.top + 15))

    def _draw_status(self, canvas: pygame.Surface, now: float) -> None:
        ctx = self.ctx
        dx = 0
        if self._shake_at is not None:
            t = (now - self._shake_at) / SHAKE_TIME
            dx = round(math.sin(t * math.pi * 6) * 6 * (1 - t)) if t < 1 else 0
        rect = STATUS.move(dx, 0)
        view = self.view()
        line = self.event_line()
        refusal = line is not None and line[1]
        accent = palette.WARN if refusal else (palette.ME if view is None or view.to_move == view.seat or view.outcome is not None else palette.OPP)
        canvas.blit(shapes.rounded(rect.size, 16, palette.CARD, 1, palette.CARD_BORDER), rect)
        canvas.blit(shapes.rounded((5, rect.height - 24), 3, accent), (rect.left + 10, rect.top + 12))
        inner = pygame.Rect(rect.left + 26, rect.top + 12, rect.width - 40, rect.height - 20)
        # A two-line instruction (long in some languages) steps down a size, so the line about
        # what just happened still fits below it: lines are counted from the height left.
        instruction = self.instruction()
        wide = len(ctx.fonts.wrap(instruction, 17, inner.width, True)) > 1
        title_size, gap, sub_size = (15, 3, 13) if wide else (17, 6, 14)
        used = blit_paragraph(canvas, ctx.fonts, instruction, title_size, palette.INK, inner, bold=True, max_lines=2)
        if line is not None:
            text, is_refusal = line
            y = inner.top + used + gap
            x = inner.left
            step = ctx.fonts.line_height(sub_size) + 2
            lines_left = (inner.bottom - y + 2) // step
            if lines_left <= 0:
                return
            if is_refusal:
                canvas.blit(shapes.icon("warning", 16, palette.WARN), (x, y + 2))
                x += 22
            blit_paragraph(canvas, ctx.fonts, text, sub_size, palette.WARN if is_refusal else palette.INK_SOFT,
                           pygame.Rect(x, y, inner.right - x, inner.bottom - y), max_lines=lines_left)

    def _draw_info(self, canvas: pygame.Surface) -> None:
        ctx = self.ctx
        y = INFO_Y + 14
        x = 14
        # Legend: whose cells are whose (colour and notch), so colour is never the only cue.
        for key, kind in (("status.you", "me"), (self.opponent_key(), "opp")):
            swatch = pygame.Rect(x, y - 8, 16, 16)
            canvas.blit(shapes.rounded(swatch.size, 4, palette.ME_CELL if kind == "me" else palette.OPP_CELL), swatch)
            if kind == "opp":
                pygame.draw.polygon(canvas, palette.OPP, [(swatch.right - 7, swatch.top), (swatch.right - 1, swatch.top), (swatch.right - 1, swatch.top + 6)])
            r = blit_text(canvas, ctx.fonts, ctx.t(key), 13, palette.INK_SOFT, bold=True, midleft=(swatch.right + 6, y))
            x = r.right + 14
        view = self.view()
        if view is not None and self.my_turn() and view.phase in (Phase.EXPLORE, Phase.PLANT, Phase.END_WAIT):
            text = ctx.t("status.flag_left" if view.quota_left else "status.flag_used")
            size = ctx.fonts.fit_size(text, 13, 382 - x - 24, True)
            icon = shapes.icon("flag", 18, palette.PRIMARY if view.quota_left else palette.INK_FAINT)
            r = blit_text(canvas, ctx.fonts, text, size, palette.INK if view.quota_left else palette.INK_FAINT, bold=True, midright=(380, y))
            canvas.blit(icon, (r.left - 20, y - 9))

