"""The online match screen: the CPU mode's board and controls, with what ONLINE adds (O4–O14, U6, U7, E1–E2).

It is the :class:`~mineduel.client.scenes.game.GameScene` (same board widget, same input rules U3,
same status line) driven by an :class:`~mineduel.client.online_match.OnlineMatch`, plus:

* seat-relative colours (me blue, the opponent pink) and the seconds left on the current deadline,
  counted on the local clock from the server's deadline (display only, O6);
* whose turn and which phase in the status line; the server's refusals there too;
* Resign in the menu, behind a confirmation (O11); the rules popup only blocks input — the server's
  deadlines keep running (U7);
* a banner under the board when the opponent is away (with the seconds it has left to return, O12) or
  when this client lost the connection and is reconnecting by itself;
* after the end: a result line at the top and an in-screen, collapsible result panel — reason, both
  scores, turns and time from the server (E1) — with Rematch and the opponent's agreement (O14), View
  board / View result (E2: the board then shows the full reveal of O13: both seats' mines, overlaps,
  and each marker right or wrong), and Verify this match (the same checks as ``mine-duel verify``).

A new match id (a rematch) drops everything shown about the previous match (O14).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pygame

from mineduel.client.controller import Applied, Ended
from mineduel.client.online_client import Conn, OnlineClient, error_key
from mineduel.client.online_match import OnlineMatch
from mineduel.client.scenes.base import Context, Popup
from mineduel.client.scenes.game import BOARD_TOP, END_TURN, HEADER, INFO_Y, PLAYERS_H, PLAYERS_Y, STATUS, GameScene
from mineduel.client.scenes.popups import PAD, ConfirmPopup, MenuItem, MenuPopup, RulesPopup
from mineduel.client.ui import palette, shapes
from mineduel.client.ui.input import InputEvent, KeyEvent, PointerEvent
from mineduel.client.ui.text import blit_paragraph, blit_text, paragraph_height
from mineduel.client.ui.widgets import Button, WidgetGroup
from mineduel.shared.rules.engine import ActionType, Reason
from mineduel.shared.fairness.verify import CHECK_NAMES, VerifyReport, verify_record

PANEL = pygame.Rect(8, BOARD_TOP - 2, 374, END_TURN.top - 8 - (BOARD_TOP - 2))
INFO = pygame.Rect(8, INFO_Y, 374, 34)
PLAYERS = pygame.Rect(0, PLAYERS_Y - 4, 390, PLAYERS_H + 8)


class _OnlineSession:
    """The Session hooks of the match screen: online matches start on the server, not here."""

    difficulty = None

    def begin(self, scene: GameScene) -> None:
        pass

    def restart(self, scene: GameScene) -> None:
        pass


class OnlineRulesPopup(RulesPopup):
    """The rules with ONLINE's endings and deadline instead of the CPU draw."""

    rule_keys = ("rules.board", "rules.opening", "rules.turn", "rules.numbers", "rules.flags", "rules.lose",
                 "rules.score_online", "rules.deadline_online", "rules.keys")
    rule_icons = ("grid", "explore", "restart", "eye", "flag", "mine", "trophy", "warning", "menu")


class VerifyPopup(Popup):
    """What ``mine-duel verify`` checked for this match, each check with its outcome."""

    def __init__(self, ctx: Context, report: VerifyReport) -> None:
        super().__init__(ctx, card_width=358)
        self.report = report
        self.relayout()

    def relayout(self) -> None:
        rows = len(self.report.checks)
        self.set_card_height(PAD + 44 + 30 + rows * 34 + 14 + 50 + PAD)
        self.widgets.set([Button(pygame.Rect(self.card.left + PAD, self.card.bottom - PAD - 50, self.card.width - 2 * PAD, 50),
                                 lambda: self.ctx.t("action.close"), self.close, name="close")])
        self.widgets.focus_name("close")

    def draw_content(self, surface: pygame.Surface, card: pygame.Rect) -> None:
        ctx = self.ctx
        ok = self.report.ok
        title = ctx.t("online.verify_ok" if ok else "online.verify_failed")
        icon = shapes.icon("check" if ok else "warning", 28, palette.GOOD if ok else palette.WARN)
        surface.blit(icon, icon.get_rect(midtop=(card.centerx, card.top + PAD - 4)))
        size = ctx.fonts.fit_size(title, 18, card.width - 2 * PAD, True)
        blit_text(surface, ctx.fonts, title, size, palette.GOOD if ok else palette.WARN, bold=True,
                  center=(card.centerx, card.top + PAD + 42))
        y = card.top + PAD + 44 + 30
        for check in self.report.checks:
            mark, color = ("check", palette.GOOD) if check.ok else ("warning", palette.WARN) if check.ok is False else ("equal", palette.INK_FAINT)
            surface.blit(shapes.icon(mark, 18, color), (card.left + PAD, y + 4))
            name = ctx.t(f"verify.check.{check.name}") if check.name in CHECK_NAMES else check.name
            state = ctx.t("verify.pass" if check.ok else "verify.fail" if check.ok is False else "verify.na")
            blit_text(surface, ctx.fonts, state, 13, color, bold=True, midright=(card.right - PAD, y + 13))
            avail = card.width - 2 * PAD - 30 - ctx.fonts.width(state, 13, True) - 8
            blit_text(surface, ctx.fonts, name, ctx.fonts.fit_size(name, 15, avail), palette.INK, midleft=(card.left + PAD + 28, y + 13))
            y += 34


class OnlineGameScene(GameScene):
    """See the module docstring."""

    def __init__(self, ctx: Context, client: OnlineClient, *, on_leave: Callable[[str], None] | None = None,
                 hosting: str | None = None) -> None:
        self.client = client
        self.on_leave = on_leave
        self.hosting = hosting
        self.panel_open = False
        self.panel = WidgetGroup(ctx.invalidate, lambda: self.ctx.keyboard)
        self.verify_report: VerifyReport | None = None
        self._timeout_seat: int | None = None
        self._shown: tuple[Any, ...] = ()
        self._client_version = -1
        self._notice_seen: object = client.notice
        super().__init__(ctx, _OnlineSession())

    @property
    def match(self) -> OnlineMatch | None:
        c = self.controller
        return c if isinstance(c, OnlineMatch) else None

    # ----- match lifecycle --------------------------------------------------------------------------------------
    def attach(self, controller: Any) -> None:
        """A new match (or a rematch, O14): the previous board, result and viewing state are dropped."""
        self.panel_open = False
        self.verify_report = None
        self._timeout_seat = None
        super().attach(controller)
        self.ctx.invalidate(None)

    def leave_match(self) -> None:
        """Back to the room (after the end): the waiting room offers Ready (a rematch) or Leave."""
        match = self.match
        if self.on_leave is not None and match is not None:
            self.on_leave(match.match_id)
        if self in self.ctx.stack.scenes:
            while self.ctx.stack.top is not self:
                self.ctx.stack.pop()
            self.ctx.stack.pop()

    def leave(self) -> None:
        """Removed from the stack: the OnlineClient keeps the match; nothing to close here."""
        self.controller = None

    # ----- widgets ------------------------------------------------------------------------------------------------
    def _build_widgets(self) -> None:
        super()._build_widgets()
        globe = Button(pygame.Rect(HEADER.right - 104, 8, 46, 46), lambda: "", self.open_language, style="ghost", icon="globe",
                       icon_color=palette.INK, radius=12, name="language")
        self.widgets.set([*self.widgets.buttons, globe])

    def open_menu(self) -> None:
        ctx = self.ctx
        running = self.ended is None and self.match is not None
        items = [
            MenuItem("menu.rules", "rules", self.open_rules),
            MenuItem("menu.language", "globe", self.open_language),
            MenuItem("online.resign", "quit", self.confirm_resign, enabled=running, danger=True),
        ]
        if self.ended is not None and self.controller is not None and self.controller.record_text() is not None and ctx.allowed.files:
            items.append(MenuItem("action.export_record", "export", self.export_record))
        items.append(MenuItem("online.to_lobby", "back", self.leave_match, enabled=not running))
        if ctx.allowed.quit:
            items.append(MenuItem("menu.quit", "quit", ctx.quit, danger=True))
        ctx.stack.open_popup(MenuPopup(ctx, items))

    def open_rules(self) -> None:
        """U7: the popup blocks input only; the match's deadlines keep running on the server."""
        self.ctx.stack.open_popup(OnlineRulesPopup(self.ctx))

    def confirm_resign(self) -> None:
        self.ctx.stack.open_popup(ConfirmPopup(self.ctx, title_key="online.resign_confirm.title", body_key="online.resign_confirm.body",
                                               confirm_key="online.resign", on_confirm=self.client.resign))

    def verify(self) -> None:
        """Run the same checks as ``mine-duel verify`` on the record the server sent, and show them."""
        match = self.match
        record = match.record() if match is not None else None
        if record is None:
            return
        self.verify_report = verify_record(record)
        self.ctx.stack.open_popup(VerifyPopup(self.ctx, self.verify_report))

    # ----- the result panel (U6, E2) -------------------------------------------------------------------------
    def show_result(self) -> None:
        if self.ended is None or self.controller is None:
            return
        self.viewing_board = False
        self.panel_open = True
        self._build_panel()
        self._refresh_widgets()
        self.ctx.invalidate(None)

    def view_board(self) -> None:
        self.viewing_board = True
        self.panel_open = False
        self._refresh_widgets()
        self.ctx.invalidate(None)

    def _rematch_possible(self) -> bool:
        room = self.client.room or {}
        opponent = room.get("opponent")
        return self.client.connected and isinstance(opponent, dict) and bool(opponent.get("connected"))

    def _build_panel(self) -> None:
        t = self.ctx.t
        agreed = self.client.rematch_state.get("me", False)
        left, inner = PANEL.left + 16, PANEL.width - 32
        half = (inner - 10) // 2
        y = PANEL.top + 210
        self._panel_rematch_y = y
        buttons = [
            Button(pygame.Rect(left, y, inner, 52), lambda: t("online.rematch"), self.client.rematch,
                   style="selected" if agreed else "primary", icon="check" if agreed else "restart",
                   enabled=not agreed and self._rematch_possible(), text_size=18, name="rematch"),
            Button(pygame.Rect(left, PANEL.bottom - 16 - 50 - 10 - 48, half, 48), lambda: t("action.view_board"), self.view_board,
                   icon="eye", icon_color=palette.ME_LIGHT, name="view_board", text_size=15),
            Button(pygame.Rect(left + half + 10, PANEL.bottom - 16 - 50 - 10 - 48, inner - half - 10, 48), lambda: t("online.verify"),
                   self.verify, icon="check", icon_color=palette.GOOD, name="verify", text_size=15,
                   enabled=self.match is not None and self.match.record() is not None),
            Button(pygame.Rect(left, PANEL.bottom - 16 - 50, inner, 50), lambda: t("online.to_lobby"), self.leave_match,
                   style="ghost", icon="back", name="to_lobby", text_size=15),
        ]
        self.panel.set(buttons)

    def result_kind(self) -> str:
        assert self.ended is not None
        outcome = self.ended.outcome
        if outcome.reason is Reason.VOID:
            return "void"
        if outcome.winner is None:
            return "draw"
        return "win" if self.controller is not None and outcome.winner == self.controller.seat else "loss"

    def reason_text(self) -> str:
        """The reason (KO, score with both scores, resign, disconnect, void), seat-relative."""
        assert self.ended is not None
        t = self.ctx.t
        outcome = self.ended.outcome
        reason = outcome.reason
        kind = self.result_kind()
        if reason is Reason.SCORE and outcome.scores is not None and self.controller is not None:
            me = self.controller.seat
            return t("online.reason.score", me=outcome.scores[me], opponent=outcome.scores[1 - me])
        if reason is Reason.VOID:
            return t("online.reason.void")
        side = "win" if kind == "win" else "loss"
        if reason in (Reason.KO, Reason.RESIGN, Reason.DISCONNECT):
            return t(f"online.reason.{reason.value}_{side}")
        return t(f"result.detail.{reason.value}")

    # ----- text --------------------------------------------------------------------------------------------------
    def instruction(self) -> str:
        t = self.ctx.t
        view = self.view()
        if self.ended is not None:
            return t("online.result_line", title=t(f"result.title.{self.result_kind()}"), reason=self.reason_text())
        if self.client.conn in (Conn.RECONNECTING, Conn.CONNECTING):
            return t("online.reconnecting")
        if view is not None and view.outcome is None and view.to_move is not None and view.to_move != view.seat:
            return t(f"online.opponent_phase.{view.phase.value}")
        return super().instruction()

    EVENT_VERBS = {**GameScene.EVENT_VERBS, ActionType.TIMEOUT: "timeout"}
    OPPONENT_EVENT_PREFIX = "opponent"

    def _event_verb(self, event: Applied) -> str | None:
        verb = super()._event_verb(event)
        if verb in ("explored", "planted") and self._timeout_seat == event.seat:
            verb = f"auto_{verb}"  # O4: the server acted for a seat whose opening step ran out
        return verb

    def _on_applied(self, event: Applied, me: int, now: float) -> None:
        super()._on_applied(event, me, now)
        self._timeout_seat = event.seat if event.kind is ActionType.TIMEOUT else None

    def _on_ended(self, event: Ended, now: float) -> None:
        super()._on_ended(event, now)
        self.message = None  # the result line above the board says it all online

    # ----- the frame -----------------------------------------------------------------------------------------------
    def update(self, now: float) -> None:
        client = self.client
        if client.conn == Conn.FAILED:
            self.leave_match()  # the online screen below shows why, with a way back
            return
        super().update(now)
        match = self.match
        if match is not None:
            while match.notices:
                code = match.notices.pop(0)
                self._say(error_key(code), {"detail": code}, "refusal")
        if client.notice is not None and client.notice is not self._notice_seen:
            self._notice_seen = client.notice
            key, params = client.notice
            self._say(key, params, "refusal")
        if client.version != self._client_version:
            self._client_version = client.version
            if self.panel_open:
                self._build_panel()
            self.ctx.invalidate(PANEL if self.panel_open else INFO)
        seconds = None if match is None else match.seconds_left()
        away = client.opponent_seconds_left()
        retry = client.next_retry_in()
        shown = (None if seconds is None else math.ceil(seconds), None if away is None else math.ceil(away),
                 None if retry is None else math.ceil(retry), client.conn)
        if shown != self._shown:
            self._shown = shown
            self.ctx.invalidate(PLAYERS)
            self.ctx.invalidate(INFO.inflate(4, 4))
            self.ctx.invalidate(STATUS.inflate(16, 4))

    # ----- input ----------------------------------------------------------------------------------------------------
    def process_event(self, event: InputEvent) -> bool:
        if self.panel_open:
            if isinstance(event, PointerEvent):
                if self.panel.handle(event) or PANEL.collidepoint(event.pos):
                    return True
            elif isinstance(event, KeyEvent) and event.key in (pygame.K_TAB, pygame.K_RETURN, pygame.K_KP_ENTER, pygame.K_SPACE):
                if self.panel.handle(event):
                    return True
        return super().process_event(event)

    # ----- drawing ----------------------------------------------------------------------------------------------------
    def relayout(self) -> None:
        if self.panel_open:
            self._build_panel()
        super().relayout()

    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        super().draw(canvas, area)
        match = self.match
        if self.ended is not None and match is not None and match.reveal is not None and not self.panel_open:
            self._draw_reveal(canvas, area, match)
        if self.panel_open and area.colliderect(PANEL):
            self._draw_panel(canvas)

    def _draw_header(self, canvas: pygame.Surface) -> None:
        ctx = self.ctx
        canvas.blit(shapes.circle(32, palette.CARD_RAISED), (14, 15))
        canvas.blit(shapes.icon("mine", 22, palette.PRIMARY), (19, 20))
        blit_text(canvas, ctx.fonts, ctx.t("app.title"), 21, palette.INK, bold=True, midleft=(54, 31))
        view = self.view()
        if view is None:
            return
        text = ctx.t("status.turn", turn=view.turn) if view.turn else ctx.t("status.opening")
        size = 13
        w = ctx.fonts.width(text, size, True) + 20
        rect = pygame.Rect(HEADER.right - 110 - w, 18, w, 26)
        canvas.blit(shapes.rounded(rect.size, 13, palette.CARD_RAISED, 1, palette.CARD_BORDER), rect)
        blit_text(canvas, ctx.fonts, text, size, palette.INK, bold=True, center=rect.center)

    OPPONENT_BADGE = "person"

    def opponent_key(self) -> str:
        return "status.opponent"  # always a person online, even before the match controller exists

    def _draw_player_extras(
        self, canvas: pygame.Surface, rect: pygame.Rect, badge: pygame.Rect, seat_is_me: bool, active: bool, color: palette.Color
    ) -> None:
        """Online: a warning dot on whoever is away, and the deadline's seconds on the seat to move."""
        ctx = self.ctx
        away = not seat_is_me and self.client.opponent_away_until is not None and self.ended is None
        offline = seat_is_me and not self.client.connected
        if away or offline:
            canvas.blit(shapes.circle(12, palette.WARN), (badge.right - 10, badge.top - 1))
        match = self.match
        seconds = match.seconds_left() if match is not None else None
        if active and seconds is not None:
            # U6: seconds left on the current deadline (the server's; display only).
            secs = math.ceil(seconds)
            urgent = secs <= 5
            text = ctx.t("online.seconds", seconds=secs)
            size = ctx.fonts.fit_size(text, 15, 74, True)
            pill_w = max(44, ctx.fonts.width(text, size, True) + 14)
            pill = pygame.Rect(rect.right - 8 - pill_w, rect.bottom - 30, pill_w, 24)
            canvas.blit(shapes.rounded(pill.size, 12, palette.WARN if urgent else color), pill)
            blit_text(canvas, ctx.fonts, text, size, palette.ON_ACCENT, bold=True, center=pill.center)

    def _banner(self) -> tuple[str, palette.Color] | None:
        t = self.ctx.t
        c = self.client
        if c.conn in (Conn.RECONNECTING, Conn.CONNECTING):
            left = c.next_retry_in()
            text = t("online.reconnecting")
            if left is not None and left >= 0.5:
                text = f"{t('online.connection_lost')} - {t('online.reconnect_in', seconds=math.ceil(left))}"
            return text, palette.DANGER
        if self.ended is None and c.opponent_away_until is not None:
            if c.opponent_grace_expired:
                return t("online.opponent_gone"), palette.DANGER
            left = c.opponent_seconds_left() or 0.0
            return t("online.opponent_disconnected", seconds=math.ceil(left)), palette.OPP_DEEP
        return None

    def _draw_info(self, canvas: pygame.Surface) -> None:
        banner = self._banner()
        ctx = self.ctx
        if banner is not None:
            text, color = banner
            canvas.fill(palette.BACKGROUND, INFO.inflate(4, 4))
            canvas.blit(shapes.rounded(INFO.size, 12, color), INFO)
            canvas.blit(shapes.icon("warning", 18, palette.ON_ACCENT), (INFO.left + 10, INFO.centery - 9))
            size = ctx.fonts.fit_size(text, 14, INFO.width - 44, True)
            blit_text(canvas, ctx.fonts, text, size, palette.ON_ACCENT, bold=True, midleft=(INFO.left + 36, INFO.centery))
            return
        match = self.match
        if self.ended is not None and match is not None and match.reveal is not None:
            self._draw_reveal_legend(canvas)
            return
        super()._draw_info(canvas)

    def _draw_reveal_legend(self, canvas: pygame.Surface) -> None:
        ctx = self.ctx
        y = INFO_Y + 14
        x = 12
        items = (("mine", palette.OPP, "online.legend.opponent_mine"), ("overlap", palette.PRIMARY, "online.legend.overlap"),
                 ("check", palette.GOOD, "online.legend.right"), ("close", palette.WARN, "online.legend.wrong"))
        for icon, color, key in items:
            if icon == "overlap":
                canvas.blit(shapes.ring((18, 18), 5, color, 2), (x, y - 9))
            else:
                canvas.blit(shapes.icon(icon, 18, color), (x, y - 9))
            text = ctx.t(key)
            size = ctx.fonts.fit_size(text, 13, 62, True)
            r = blit_text(canvas, ctx.fonts, text, size, palette.INK_SOFT, bold=True, midleft=(x + 21, y))
            x = r.right + 10

    def _draw_reveal(self, canvas: pygame.Surface, area: pygame.Rect, match: OnlineMatch) -> None:
        """O13 on the final board: the opponent's mines, overlaps, and every marker right or wrong."""
        reveal = match.reveal
        assert reveal is not None
        view = match.view()
        clip = canvas.get_clip()
        canvas.set_clip(area.clip(clip) if clip else area)
        try:
            for cell in self.board.cells_in(area):
                b = 1 << cell
                rect = self.board.cell_rect(cell)
                if view.revealed & b or cell == reveal.ko_cell:
                    continue
                if reveal.opponent_mines & b:
                    marked = bool((reveal.my_markers | reveal.opponent_markers) & b)
                    size = 16 if marked or reveal.overlaps & b else 24
                    where = (rect.left + size // 2 + 3, rect.bottom - size // 2 - 4) if size == 16 else rect.center
                    mine = shapes.icon("mine", size, palette.OPP)
                    canvas.blit(mine, mine.get_rect(center=where))
                if reveal.overlaps & b:
                    canvas.blit(shapes.ring(rect.size, 7, palette.PRIMARY, 2), rect)
                if (reveal.right | reveal.wrong) & b:
                    good = bool(reveal.right & b)
                    badge = pygame.Rect(rect.right - 15, rect.top - 3, 17, 17)
                    canvas.blit(shapes.circle(17, palette.GOOD if good else palette.WARN), badge)
                    canvas.blit(shapes.icon("check" if good else "close", 13, palette.INK_DARK), (badge.x + 2, badge.y + 2))
        finally:
            canvas.set_clip(clip)

    def _draw_panel(self, canvas: pygame.Surface) -> None:
        ctx = self.ctx
        t = ctx.t
        if self.ended is None:
            return
        canvas.blit(shapes.shadow(PANEL.size, 20, palette.SHADOW, 60, 14), (PANEL.x - 14, PANEL.y - 8))
        canvas.blit(shapes.rounded(PANEL.size, 20, palette.CARD, 1, palette.CARD_BORDER), PANEL)
        kind = self.result_kind()
        color = {"win": palette.PRIMARY, "loss": palette.OPP, "draw": palette.ME_LIGHT, "void": palette.INK_SOFT}[kind]
        cx = PANEL.centerx
        icon = shapes.icon("trophy" if kind == "win" else "mine" if kind == "loss" else "equal", 34, color)
        canvas.blit(icon, icon.get_rect(midtop=(cx, PANEL.top + 16)))
        title = t(f"result.title.{kind}")
        blit_text(canvas, ctx.fonts, title, 28, color, bold=True, center=(cx, PANEL.top + 76))
        reason = self.reason_text()
        inner = PANEL.width - 40
        h = paragraph_height(ctx.fonts, reason, 16, inner)
        blit_paragraph(canvas, ctx.fonts, reason, 16, palette.INK, pygame.Rect(PANEL.left + 20, PANEL.top + 100, inner, h + 4), align="center",
                       max_lines=2)
        timing = self.controller.timing() if self.controller is not None else None
        turns = self.ended.turns if timing is None else timing.turn
        elapsed = self.ended.elapsed if timing is None else timing.elapsed
        chips = (t("result.turns", turns=turns), t("result.time", duration=ctx.tr.duration(elapsed)))
        half = (PANEL.width - 32 - 10) // 2
        for i, text in enumerate(chips):
            rect = pygame.Rect(PANEL.left + 16 + i * (half + 10), PANEL.top + 152, half, 38)
            canvas.blit(shapes.rounded(rect.size, 12, palette.CARD_RAISED), rect)
            size = ctx.fonts.fit_size(text, 16, rect.width - 12, True)
            blit_text(canvas, ctx.fonts, text, size, palette.INK, bold=True, center=rect.center)
        # O14: the rematch agreement of both seats (hidden while viewing the board: the panel is closed then).
        state = self.client.rematch_state
        y = self._panel_rematch_y + 52 + 18
        if not self._rematch_possible() and not (state.get("me") and state.get("opponent")):
            line, col = t("online.rematch_unavailable"), palette.INK_FAINT
        elif state.get("opponent"):
            line, col = t("online.opponent_agreed"), palette.GOOD
        elif state.get("me"):
            line, col = t("online.rematch_waiting"), palette.INK_SOFT
        else:
            line, col = t("online.rematch_hint"), palette.INK_FAINT
        size = ctx.fonts.fit_size(line, 15, inner, True)
        blit_text(canvas, ctx.fonts, line, size, col, bold=True, center=(cx, y))
        self.panel.draw(canvas, ctx.fonts, PANEL)

