"""The match screen's menus, popups and the in-screen result panel.

:class:`MatchFlow` opens what the player asks for — the menu, the rules, the language, restart
or resign, the result (a popup for a CPU match; the in-screen :class:`ResultPanel` with Rematch
and Verify when the controller offers a rematch, O14), the record export (E2) — from the
controller's capabilities and the session's offers, never from the kind of controller.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import pygame

from mineduel.client.i18n import wrap
from mineduel.client.records import WriteResult
from mineduel.client.scenes.base import Context, Popup
from mineduel.client.scenes.match_paint import PANEL, STATUS
from mineduel.client.scenes.match_words import round_of
from mineduel.client.scenes.popups import (
    PAD,
    ConfirmPopup,
    LanguagePopup,
    MenuItem,
    MenuPopup,
    RulesPopup,
)
from mineduel.client.scenes.rating_words import change_text, rating_text
from mineduel.client.scenes.result_popup import ResultInfo, ResultPopup
from mineduel.client.scenes.saved_matches import open_saved
from mineduel.client.scenes.settings_popup import open_settings
from mineduel.client.ui import palette, shapes
from mineduel.client.ui.input import InputEvent, KeyEvent, PointerEvent
from mineduel.client.ui.text import FontBook, blit_paragraph, blit_text, paragraph_height
from mineduel.client.ui.widgets import Button, WidgetGroup
from mineduel.client.witness import WitnessJson
from mineduel.shared.fairness.verify import Check, VerifyReport, verify_record
from mineduel.shared.rules.vocabulary import Variant
from mineduel.shared.wire.messages import RecordJson

if TYPE_CHECKING:
    from mineduel.client.scenes.game import GameScene

log = logging.getLogger(__name__)


class OnlineRulesPopup(RulesPopup):
    """The rules with ONLINE's endings and deadline instead of the CPU draw."""

    rule_keys = ("rules.board", "rules.colors", "rules.opening", "rules.turn", "rules.numbers_all", "rules.overlap",
                 "rules.flags", "rules.lose", "rules.score_online", "rules.deadline_online", "rules.keys")
    rule_icons = ("grid", "person", "explore", "restart", "eye", "mine", "flag", "mine", "trophy", "warning", "menu")
    offers_tutorial = False  # U7: the match's deadlines run on the server meanwhile (tutorial helper)


@dataclass(frozen=True, slots=True)
class VerifyOutcome:
    """What Verify found: the verifier's report (``None`` when it could not run: then ``problem``), and
    whether a witness was given (the report's ``witnessed`` says whether it was this match's)."""

    report: VerifyReport | None
    witnessed: bool
    problem: str = ""


def check_match(record: RecordJson, witness: WitnessJson | None) -> VerifyOutcome:
    """The record the server sent, held to what this client saw (its witness) by the same verifier as
    ``mine-duel verify RECORD --witness FILE``; never raises (a verifier problem is logged and said)."""
    try:
        report = verify_record(record, witness)
    except Exception as exc:  # a verifier bug must become a message, not a frozen window (logged)
        log.exception("verify: the verifier failed")
        return VerifyOutcome(None, witness is not None, type(exc).__name__)
    return VerifyOutcome(report, witness is not None)


class VerifyPopup(Popup):
    """What ``mine-duel verify`` checked for this match: every check by name with its outcome, and
    for a failed one what differs; whether it was held to this device's witness."""

    ROW = 22  # one check
    DETAIL = 13  # a failed check's detail (the verifier's words and values)

    def __init__(self, ctx: Context, outcome: VerifyOutcome | VerifyReport) -> None:
        super().__init__(ctx, card_width=366)
        self.outcome = outcome if isinstance(outcome, VerifyOutcome) else VerifyOutcome(outcome, True)
        self._details: dict[int, list[str]] = {}
        self.relayout()

    @property
    def report(self) -> VerifyReport | None:
        return self.outcome.report

    # ----- what it says ----------------------------------------------------------------------------------------
    def _readable(self) -> bool:
        """The verifier could read the record (its ``record`` check holds): the checks are shown."""
        report = self.report
        return report is not None and bool(report.checks) and report.checks[0].ok is True

    def _title(self) -> tuple[str, bool | None]:
        report = self.report
        if report is None or not self._readable():
            return self.ctx.t("verify.unverifiable"), None
        if report.ok and not report.witnessed:  # consistent, but nothing held it to what was seen
            return self.ctx.t("verify.record_only"), None
        return self.ctx.t("online.verify_ok" if report.ok else "online.verify_failed"), report.ok

    def _note(self) -> tuple[str, palette.Color]:
        """The sentence under the title: what the checks were held to, or why nothing could be checked."""
        t = self.ctx.t
        report = self.report
        if report is None:
            return t("verify.broken", detail=self.outcome.problem), palette.WARN
        if not self._readable():
            detail = report.checks[0].detail if report.checks else ""
            return t("verify.invalid") + ("\n" + detail if detail else ""), palette.WARN
        if not report.valid:  # the record was read; the witness was not one
            return t("verify.bad_witness"), palette.WARN
        if not report.witnessed:
            return t("verify.no_witness"), palette.WARN
        return t("verify.with_witness"), palette.INK_SOFT

    def _rows(self) -> tuple[Check, ...]:
        report = self.report
        return report.checks if report is not None and self._readable() else ()

    # ----- layout ------------------------------------------------------------------------------------------------
    def _inner(self) -> int:
        return self.card.width - 2 * PAD

    def relayout(self) -> None:
        fonts = self.ctx.fonts
        inner = self._inner()
        note, _ = self._note()
        self._note_h = paragraph_height(fonts, note, 13, inner)
        rows = self._rows()
        fixed = PAD + 66 + self._note_h + 12 + len(rows) * self.ROW + 14 + 50 + PAD
        # Failed checks say what differs, as far as the window allows (two lines each, then one).
        room = self.ctx.size[1] - 24 - fixed
        step = fonts.line_height(12) + 1
        self._details = {}
        failed = [i for i, c in enumerate(rows) if c.ok is False and c.detail]
        for per_check in (2, 1):
            lines = {i: fonts.wrap(rows[i].detail, 12, inner - 28)[:per_check] for i in failed}
            if sum(len(v) for v in lines.values()) * step <= room or per_check == 1:
                break
        for i in failed:
            take = lines[i]
            if room < len(take) * step:
                take = take[: max(0, room // step)]
            if take:
                full = fonts.wrap(rows[i].detail, 12, inner - 28)
                if len(full) > len(take):
                    take[-1] = _ellipsized(fonts, take[-1], inner - 28)
                self._details[i] = take
                room -= len(take) * step
        extra = sum(len(v) for v in self._details.values()) * step
        self.set_card_height(fixed + extra)
        self.widgets.set([Button(pygame.Rect(self.card.left + PAD, self.card.bottom - PAD - 50, inner, 50),
                                 lambda: self.ctx.t("action.close"), self.close, name="close")])
        self.widgets.focus_name("close")

    def draw_content(self, surface: pygame.Surface, card: pygame.Rect) -> None:
        ctx = self.ctx
        fonts = ctx.fonts
        inner = self._inner()
        title, ok = self._title()
        color = palette.GOOD if ok else palette.WARN
        icon = shapes.icon("check" if ok else "warning", 28, color)
        surface.blit(icon, icon.get_rect(midtop=(card.centerx, card.top + PAD - 4)))
        size = fonts.fit_size(title, 18, inner, True)
        blit_text(surface, fonts, title, size, color, bold=True, center=(card.centerx, card.top + PAD + 42))
        note, note_color = self._note()
        y = card.top + PAD + 66
        blit_paragraph(surface, fonts, note, 13, note_color, pygame.Rect(card.left + PAD, y, inner, self._note_h + 4),
                       align="center")
        y += self._note_h + 12
        step = fonts.line_height(12) + 1
        for i, check in enumerate(self._rows()):
            if check.ok:
                mark, color = "check", palette.GOOD
            elif check.ok is False:
                mark, color = "warning", palette.WARN
            else:
                mark, color = "equal", palette.INK_FAINT
            mid = y + self.ROW // 2
            surface.blit(shapes.icon(mark, 16, color), (card.left + PAD, mid - 8))
            key = f"verify.check.{check.name}"
            name = ctx.t(key) if ctx.tr.has(key) else check.name
            state = ctx.t("verify.pass" if check.ok else "verify.fail" if check.ok is False else "verify.na")
            blit_text(surface, fonts, state, 12, color, bold=True, midright=(card.right - PAD, mid))
            avail = inner - 26 - fonts.width(state, 12, True) - 8
            blit_text(surface, fonts, name, fonts.fit_size(name, 14, avail), palette.INK if check.ok is not None else
                      palette.INK_SOFT, midleft=(card.left + PAD + 26, mid))
            y += self.ROW
            for line in self._details.get(i, ()):
                blit_text(surface, fonts, line, 12, palette.WARN, topleft=(card.left + PAD + 26, y - 2))
                y += step


def _short_path(path: Path) -> str:
    """An exported copy's place as a player reads it: the home folder as ``~`` and the file name on
    a line of its own, so a long path breaks between the folder and the name, not mid-word."""
    folder = path.parent
    try:
        where = str(Path("~") / folder.relative_to(Path.home()))
    except ValueError:
        where = str(folder)
    return f"{where.rstrip(os.sep)}{os.sep}\n{path.name}"


def _ellipsized(fonts: FontBook, line: str, width: int) -> str:
    while line and fonts.width(line + "...", 12) > width:
        line = line[:-1]
    return line + "..."


class ResultPanel:
    """E1/O14 in the screen: reason, both scores, turns and time, Rematch with both seats'
    agreement, View board (the O13 reveal), Verify, Back to the room."""

    def __init__(self, scene: GameScene) -> None:
        self.scene = scene
        self.ctx = scene.ctx
        self.open = False
        self.widgets = WidgetGroup(scene.ctx.invalidate, lambda: self.ctx.keyboard)
        self._rematch_y = PANEL.top + 210
        self._shown: object = None

    def build(self) -> None:
        scene = self.scene
        controller = scene.controller
        if controller is None:
            return
        caps = controller.capabilities
        t = self.ctx.t
        info = None if caps.rematch is None else caps.rematch.rematch_info()
        agreed = info is not None and info.me
        self._shown = info
        left, inner = PANEL.left + 16, PANEL.width - 32
        y = self._rematch_y
        rematch = caps.rematch
        request_rematch = rematch.request_rematch if rematch else lambda: None
        pair_y = PANEL.bottom - 16 - 50 - 10 - 48  # View board | Verify | Analysis, above Back to the room
        third = (inner - 2 * 8) // 3
        buttons = [
            Button(pygame.Rect(left, y, inner, 52), lambda: t("online.rematch"), request_rematch,
                   style="selected" if agreed else "primary", icon="check" if agreed else "restart",
                   enabled=not agreed and info is not None and info.possible, text_size=18, name="rematch"),
            Button(pygame.Rect(left, pair_y, third, 48), lambda: t("action.view_board"), scene.flow.view_board,
                   icon="eye", icon_color=palette.ME_LIGHT, name="view_board", text_size=15, layout="stack"),
            Button(pygame.Rect(left + third + 8, pair_y, third, 48), lambda: t("online.verify"),
                   scene.flow.verify, icon="check", icon_color=palette.GOOD, name="verify", text_size=15,
                   enabled=caps.verify is not None and caps.verify.record() is not None, layout="stack"),
            Button(pygame.Rect(left + 2 * (third + 8), pair_y, inner - 2 * (third + 8), 48), lambda: t("analysis.open"),
                   scene.flow.open_analysis, icon="grid", icon_color=palette.PRIMARY, name="analysis", text_size=15,
                   layout="stack"),
            Button(pygame.Rect(left, PANEL.bottom - 16 - 50, inner - third - 8, 50), lambda: t("online.to_lobby"),
                   scene.flow.to_lobby, style="ghost", icon="back", name="to_lobby", text_size=15),
            Button(pygame.Rect(left + inner - third, PANEL.bottom - 16 - 50, third, 50), lambda: t("replay.open"),
                   scene.flow.open_replay, style="ghost", icon="restart", icon_color=palette.ME_LIGHT, name="replay",
                   enabled=controller.record_text() is not None, text_size=15),  # replay (issue 19): shares the row
        ]
        self.widgets.set(buttons)

    def refresh(self) -> None:
        """The rematch agreement or the opponent's connection changed: rebuild and redraw (only then)."""
        controller = self.scene.controller
        rematch = None if controller is None else controller.capabilities.rematch
        info = None if rematch is None else rematch.rematch_info()
        if self.open and info != self._shown:
            self.build()
            self.ctx.invalidate(PANEL)

    def handle(self, event: InputEvent) -> bool:
        if not self.open:
            return False
        if isinstance(event, PointerEvent):
            return self.widgets.handle(event) or PANEL.collidepoint(event.pos)
        if isinstance(event, KeyEvent) and event.key in (pygame.K_TAB, pygame.K_RETURN, pygame.K_KP_ENTER, pygame.K_SPACE):
            return self.widgets.handle(event)
        return False

    def draw(self, canvas: pygame.Surface) -> None:
        scene = self.scene
        ctx = self.ctx
        t = ctx.t
        ended, controller = scene.ended, scene.controller
        if ended is None or controller is None:
            return
        canvas.blit(shapes.shadow(PANEL.size, 20, palette.SHADOW, 60, 14), (PANEL.x - 14, PANEL.y - 8))
        canvas.blit(shapes.rounded(PANEL.size, 20, palette.CARD, 1, palette.CARD_BORDER), PANEL)
        kind = scene.words.result_kind()
        color = {"win": palette.PRIMARY, "loss": palette.OPP, "draw": palette.ME_LIGHT, "void": palette.INK_SOFT}[kind]
        cx = PANEL.centerx
        icon = shapes.icon("trophy" if kind == "win" else "mine" if kind == "loss" else "equal", 34, color)
        canvas.blit(icon, icon.get_rect(midtop=(cx, PANEL.top + 16)))
        blit_text(canvas, ctx.fonts, t(f"result.title.{kind}"), 28, color, bold=True, center=(cx, PANEL.top + 76))
        self._rating(canvas)
        reason = scene.words.reason_text()
        inner = PANEL.width - 40
        h = paragraph_height(ctx.fonts, reason, 16, inner)
        blit_paragraph(canvas, ctx.fonts, reason, 16, palette.INK, pygame.Rect(PANEL.left + 20, PANEL.top + 100, inner, h + 4),
                       align="center", max_lines=2)
        timing = controller.timing()
        chips = (t("result.round_turn", rounds=round_of(timing.turn), turns=timing.turn),
                 t("result.time", duration=ctx.tr.duration(timing.elapsed)))
        half = (PANEL.width - 32 - 10) // 2
        for i, text in enumerate(chips):
            rect = pygame.Rect(PANEL.left + 16 + i * (half + 10), PANEL.top + 152, half, 38)
            canvas.blit(shapes.rounded(rect.size, 12, palette.CARD_RAISED), rect)
            size = ctx.fonts.fit_size(text, 16, rect.width - 12, True)
            blit_text(canvas, ctx.fonts, text, size, palette.INK, bold=True, center=rect.center)
        # O14: the rematch agreement of both seats (hidden while viewing the board: the panel is closed then).
        rematch = controller.capabilities.rematch
        if rematch is not None:
            state = rematch.rematch_info()
            y = self._rematch_y + 52 + 18
            if not state.possible and not (state.me and state.opponent):
                line, col = t("online.rematch_unavailable"), palette.INK_FAINT
            elif state.opponent:
                line, col = t("online.opponent_agreed"), palette.GOOD
            elif state.me:
                line, col = t("online.rematch_waiting"), palette.INK_SOFT
            else:
                line, col = t("online.rematch_hint"), palette.INK_FAINT
            size = ctx.fonts.fit_size(line, 15, inner, True)
            blit_text(canvas, ctx.fonts, line, size, col, bold=True, center=(cx, y))
        self.widgets.draw(canvas, ctx.fonts, PANEL)


    def _rating(self, canvas: pygame.Surface) -> None:
        """Issue 20: a rated match's change (``match_end.rating``) as a badge at the panel's top right:
        ``+62`` (green; a loss red; a void ``+0``) over ``Rating 1562?``."""
        controller = self.scene.controller
        source = None if controller is None else controller.capabilities.rating
        change = None if source is None else source.ratings().change
        if change is None:
            return
        fonts, t = self.ctx.fonts, self.ctx.t
        delta = change_text(change.change)
        tone = palette.GOOD if change.change >= 0.5 else palette.OPP if change.change <= -0.5 else palette.INK_SOFT
        unrated = f"rating.unrated.{change.unrated}"  # void, or this pair's rated games of the day are used
        after = t(unrated) if change.unrated and self.ctx.tr.has(unrated) else t(
            "rating.after", rating=rating_text(change.after, change.provisional))
        # Right of the icon and of the title (it reaches the badge's last rows): a reason too long
        # for one line (e.g. "Not rated (same network)") takes two smaller ones instead of covering them.
        title = fonts.width(t(f"result.title.{self.scene.words.result_kind()}"), 28, True)
        room = max(96, PANEL.right - 14 - (PANEL.centerx + max(24, title // 2 + 8)))
        size = fonts.fit_size(after, 12, room - 20)
        lines = [after]
        if fonts.width(after, size) > room - 20:
            lines = wrap(after, room - 16, lambda piece: fonts.width(piece, 11))[:2]
        size = size if len(lines) == 1 else 11
        w = min(room, max(fonts.width(delta, 22, True), *(fonts.width(line, size) for line in lines)) + 24)
        rect = pygame.Rect(PANEL.right - 14 - w, PANEL.top + 14, w, 56)
        canvas.blit(shapes.rounded(rect.size, 14, palette.mix(palette.CARD, tone, 0.16), 1, tone), rect)
        if len(lines) == 1:
            blit_text(canvas, fonts, delta, 22, tone, bold=True, center=(rect.centerx, rect.top + 20))
            blit_text(canvas, fonts, after, size, palette.INK_SOFT, center=(rect.centerx, rect.top + 42))
            return
        blit_text(canvas, fonts, delta, 18, tone, bold=True, center=(rect.centerx, rect.top + 15))
        for i, line in enumerate(lines):
            blit_text(canvas, fonts, line, size, palette.INK_SOFT, center=(rect.centerx, rect.top + 32 + 13 * i))


class MatchFlow:
    """Menus, popups, the result and the record around one :class:`GameScene`."""

    def __init__(self, scene: GameScene) -> None:
        self.scene = scene
        self.ctx = scene.ctx
        self.result_popup: ResultPopup | None = None
        self.record_result: WriteResult | None = None
        self.export_result: WriteResult | None = None
        self.everything = False  # E2 after a CPU match: Show everything (the O13 reveal) is on

    def reset(self) -> None:
        self.result_popup = None
        self.record_result = self.export_result = None
        self.everything = False

    # ----- the menu ----------------------------------------------------------------------------------------
    def open_menu(self) -> None:
        scene, ctx = self.scene, self.ctx
        controller = scene.controller
        resign = None if controller is None else controller.capabilities.resign
        running = scene.ended is None and controller is not None
        items = [MenuItem("menu.rules", "rules", self.open_rules), MenuItem("menu.language", "globe", self.open_language)]
        items += [MenuItem("menu.tutorial", "explore", ctx.open_tutorial)] if scene.session.can_restart else []  # tutorial
        items.append(MenuItem("menu.settings", "sound", lambda: open_settings(ctx, self.choose_language)))  # sound, name
        if scene.session.can_restart:
            items.append(MenuItem("action.restart", "restart", self.confirm_restart, enabled=controller is not None))
        else:
            items.append(MenuItem("online.resign", "quit", self.confirm_resign, enabled=running and resign is not None,
                                  danger=True))
        if ctx.allowed.online and scene.session.can_restart:
            items.append(MenuItem("menu.online", "online", scene.open_online))
        if scene.ended is not None and controller is not None and controller.record_text() is not None and ctx.allowed.files:
            items.append(MenuItem("result.export_copy", "export", self.export_record))
        if not scene.session.can_restart:
            items.append(MenuItem("online.to_lobby", "back", self.to_lobby, enabled=not running))
        if ctx.allowed.files:
            items.append(MenuItem("menu.saved_matches", "grid", lambda: open_saved(ctx)))  # replay (issue 19)
        if ctx.allowed.quit:
            items.append(MenuItem("menu.quit", "quit", ctx.quit, danger=True))
        ctx.stack.open_popup(MenuPopup(ctx, items))

    def open_rules(self) -> None:
        """U7 online: the popup blocks input only; the match's deadlines keep running on the server."""
        view = self.scene.view()
        online = view is not None and view.variant is Variant.ONLINE
        self.ctx.stack.open_popup(OnlineRulesPopup(self.ctx) if online else RulesPopup(self.ctx))

    def open_language(self) -> None:
        self.ctx.stack.open_popup(LanguagePopup(self.ctx, self.choose_language))

    def choose_language(self, code: str) -> None:
        """U5: switch and save; the board, turn and result stay exactly as they are (E1)."""
        self.ctx.tr.set_language(code)
        self.ctx.save_settings(replace(self.ctx.settings, language=code))
        self.ctx.stack.relayout()

    def confirm_restart(self) -> None:
        scene = self.scene
        self.ctx.stack.open_popup(ConfirmPopup(
            self.ctx, title_key="confirm.restart.title",
            body_key="confirm.restart.body" if scene.ended is None else "confirm.restart.body_after_end",
            confirm_key="action.restart", on_confirm=lambda: scene.session.restart(scene),
            on_cancel=self.show_result if scene.ended is not None and not scene.viewing_board else None,
        ))

    def confirm_resign(self) -> None:
        controller = self.scene.controller
        resign = None if controller is None else controller.capabilities.resign
        if resign is not None:
            self.ctx.stack.open_popup(ConfirmPopup(
                self.ctx, title_key="online.resign_confirm.title", body_key="online.resign_confirm.body",
                confirm_key="online.resign", on_confirm=resign,
            ))

    def to_lobby(self) -> None:
        self.scene.session.to_lobby(self.scene)

    # ----- the result (C4, E1, E2) -------------------------------------------------------------------------
    def show_result(self) -> None:
        """E2: View result — the same popup (or panel) again, as often as wanted."""
        scene = self.scene
        controller = scene.controller
        if scene.ended is None or controller is None:
            return
        scene.viewing_board = False
        if scene.words.in_screen_result():
            scene.panel.open = True
            scene.panel.build()
            scene.controls.refresh()
            self.ctx.invalidate(None)
            return
        popup = ResultPopup(
            self.ctx, ResultInfo(scene.ended, controller.seat, scene.session.difficulty, self.record_line,
                                 scene.hint.used),
            on_view_board=self.view_board, on_restart=self.confirm_restart, on_menu=self.open_menu,
            on_export=self.export_record if controller.record_text() is not None and self.ctx.allowed.files else None,
            on_show_everything=self.show_everything if self.reveal_on_request() else None,
            on_analysis=self.open_analysis,
            on_replay=self.open_replay if controller.record_text() is not None else None,
        )
        self.result_popup = popup
        self.ctx.stack.open_popup(popup)
        scene.controls.refresh()
        self.ctx.invalidate(STATUS)

    def open_replay(self) -> None:
        """Issue 19: the finished match in the replay viewer over the match screen (client/scenes/replay_viewer.py)."""
        from mineduel.client.scenes.replay_viewer import open_replay

        open_replay(self)

    def open_analysis(self) -> None:
        """Issue 18: the post-match analysis over the match screen (client/scenes/analysis.py)."""
        from mineduel.client.scenes.analysis import open_analysis

        open_analysis(self)

    def view_board(self) -> None:
        """E2: View board — close the result; the board takes no input meanwhile."""
        scene = self.scene
        scene.viewing_board = True
        if scene.panel.open:
            scene.panel.open = False
            scene.controls.refresh()
            self.ctx.invalidate(None)
            return
        if self.result_popup is not None:
            self.result_popup.close()
        scene.controls.refresh()
        self.ctx.invalidate(STATUS)

    # ----- Show everything (E2, O13, V3) --------------------------------------------------------------
    def reveal_on_request(self) -> bool:
        """E2: the match offers the O13 reveal only when asked (CPU: the human's view by default)."""
        controller = self.scene.controller
        return controller is not None and controller.capabilities.reveal is not None and controller.capabilities.reveal_on_request

    def reveal_shown(self) -> bool:
        """The final board shows the O13 reveal: always online (E2), after *Show everything* for the CPU."""
        scene = self.scene
        controller = scene.controller
        if scene.ended is None or controller is None or controller.capabilities.reveal is None:
            return False
        return self.everything or not controller.capabilities.reveal_on_request

    def show_everything(self) -> None:
        """From the result popup: View board with the O13 reveal on (the board's toggle turns it off)."""
        self.view_board()
        self.set_everything(True)

    def toggle_everything(self) -> None:
        """The board's *Show everything* toggle after a CPU match; the board stays the final one (E2)."""
        self.set_everything(not self.everything)

    def set_everything(self, on: bool) -> None:
        if self.scene.ended is None or not self.reveal_on_request():
            return  # V3: nothing of the CPU's before the end
        self.everything = on
        self.scene.controls.refresh()
        self.ctx.invalidate(None)

    def verify(self) -> None:
        """Run the same checks as ``mine-duel verify --witness`` on the record the server sent and
        what this client saw of the match, and show them (a missing witness is said plainly)."""
        controller = self.scene.controller
        source = None if controller is None else controller.capabilities.verify
        record = None if source is None else source.record()
        if source is not None and record is not None:
            self.ctx.stack.open_popup(VerifyPopup(self.ctx, check_match(record, source.witness())))

    # ----- records -----------------------------------------------------------------------------------------
    def save_record(self) -> None:
        controller = self.scene.controller
        text = controller.record_text() if controller is not None else None
        if controller is not None and text is not None:
            self.record_result = self.ctx.records.save(controller.record_name, text)
            if self.record_result.ok:
                log.info("records: saved %s", self.record_result.path)  # the full path, for whoever looks for it

    def export_record(self) -> None:
        controller = self.scene.controller
        text = controller.record_text() if controller is not None else None
        if controller is None or text is None:
            return
        self.export_result = self.ctx.records.export(controller.record_name, text)
        if self.result_popup is not None and self.ctx.stack.popup is self.result_popup:
            self.result_popup.refresh_record_line()
        else:
            self.show_result()

    def record_line(self) -> tuple[str, bool]:
        if not self.ctx.allowed.files:
            return "", False  # a kiosk: where records go is the operator's business
        t = self.ctx.t
        result, ok_key, fail_key = (self.export_result, "record.exported", "record.export_failed")
        if result is None:
            result, ok_key, fail_key = (self.record_result, "record.saved", "record.failed")
        if result is None:
            return "", False
        if result.ok and result.path is not None:
            if result is self.record_result:  # saved among the player's matches: the file name is enough
                return t("result.saved_as", name=result.path.name), False
            return t(ok_key, path=_short_path(result.path)), False  # an exported copy: where to find it
        if result.ok:
            return t(ok_key, path=""), False
        return t(fail_key, error=t(f"record.error.{result.error}")), True
