"""The post-match analysis screen (issue 18 item 3): where the player took risks, explore by explore.

Reached from the result — the CPU result popup's *Analysis* and the online result panel's — it
replays the finished match's record (RECORD.md; CPU: the match's own record text, online: the record
the server sent at the end) through ``mineduel.shared.ai.analysis`` from the player's seat only (V2):
every figure is what that seat could have worked out at that moment from its own views, never from
the opponent's hidden mines, even though the match is over (tests/client/test_analysis_screen.py
proves two records differing only in mines the seat never saw give the same screen).

What it shows:

* a summary — how many of the player's explores were *risky*: the chosen cell's mine probability
  more than :data:`~mineduel.shared.ai.analysis.RISK_MARGIN` (5 percentage points) above the safest
  explorable cell's at that moment — and the risky ones as chips that jump to them;
* for one explore at a time (Previous / Next, the arrow keys, a swipe over the board): the board as
  the seat saw it before that explore (its numbers, its own mines and markers) with each closed cell's
  probability as a heat colour and a percentage, the chosen cell ringed amber and the safest ticked
  green, the two probabilities and a verdict, and a legend.

The analysis is worked out once when the screen opens (about 15 ms for a whole match,
docs/PERFORMANCE.md) in the frame after the first one shows *Calculating...*, and kept for the next
opening of the same record. *Back* or Escape returns to the result.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import pygame

from mineduel.client.scenes.analysis_paint import AnalysisPainter
from mineduel.client.scenes.base import Context, Scene
from mineduel.client.ui.input import InputEvent, KeyEvent, PointerEvent, Swipe
from mineduel.client.ui.widgets import Button, WidgetGroup
from mineduel.shared.ai.analysis import RISK_MARGIN, ExploreRisk, explore_risks, seat_timeline
from mineduel.shared.fairness.record import InvalidRecord, loads
from mineduel.shared.rules.views import SeatView

if TYPE_CHECKING:
    from mineduel.client.scenes.match_panels import MatchFlow

log = logging.getLogger(__name__)

__all__ = ["AnalysisScene", "ExploreStep", "MatchAnalysis", "analyse_record", "open_analysis"]

CHIPS = 4  # risky-explore chips shown at most (the last one says how many more when there are more)


@dataclass(frozen=True, slots=True)
class ExploreStep:
    """One explore of the player: its risk (the shared analysis) and the seat's view just before it."""

    risk: ExploreRisk
    view: SeatView


@dataclass(frozen=True, slots=True)
class MatchAnalysis:
    """A whole match from one seat's side: its explores in order."""

    seat: int
    steps: tuple[ExploreStep, ...]

    @property
    def risky(self) -> tuple[int, ...]:
        """Indices (into ``steps``) of the risky explores."""
        return tuple(i for i, s in enumerate(self.steps) if s.risk.risky)


_cache: dict[tuple[str, int], MatchAnalysis] = {}


def analyse_record(text: str, seat: int) -> MatchAnalysis:
    """The seat's analysis of a record (raises :class:`InvalidRecord` for one RECORD.md rejects)."""
    key = (text, seat)
    cached = _cache.get(key)
    if cached is not None:
        return cached
    record = loads(text)
    risks = explore_risks(record.actions, seat, record.variant)
    timeline = seat_timeline(record.actions, seat, record.variant)
    out = MatchAnalysis(seat, tuple(ExploreStep(r, timeline[r.index].view) for r in risks))
    _cache.clear()  # one match at a time: the one on screen
    _cache[key] = out
    return out


def open_analysis(flow: MatchFlow) -> None:
    """The result's *Analysis*: cover the match screen with the analysis; Back shows the result again."""
    scene, ctx = flow.scene, flow.ctx
    controller = scene.controller
    if controller is None or scene.ended is None:
        return
    text = controller.record_text()  # CPU: the match's record; online: the record the server sent (None: not yet)
    popup = flow.result_popup
    from_popup = popup is not None and ctx.stack.popup is popup
    if popup is not None and from_popup:
        popup.close()

    def back() -> None:
        if from_popup:
            flow.show_result()

    ctx.stack.push(AnalysisScene(ctx, text, controller.seat, on_back=back))


class AnalysisScene(Scene):
    """See the module docstring. ``text`` is the record (``None``: none arrived, said plainly)."""

    def __init__(self, ctx: Context, text: str | None, seat: int, *, on_back: Callable[[], None]) -> None:
        super().__init__(ctx)
        self.text = text
        self.seat = seat
        self.on_back = on_back
        self.analysis: MatchAnalysis | None = None
        self.problem: str | None = None if text is not None else ctx.t("analysis.no_record")
        self.index = 0
        self._drawn = False
        self._swipe = Swipe()
        self.widgets = WidgetGroup(ctx.invalidate, lambda: self.ctx.keyboard)
        self.paint = AnalysisPainter(self)
        self.relayout()

    # ----- the analysis, once ------------------------------------------------------------------------
    @property
    def pending(self) -> bool:
        return self.analysis is None and self.problem is None

    def compute(self) -> None:
        """Work the analysis out (cached per record); a record that cannot be read becomes a message."""
        if not self.pending or self.text is None:
            return
        try:
            self.analysis = analyse_record(self.text, self.seat)
        except InvalidRecord as exc:
            self.problem = self.ctx.t("analysis.failed", detail=str(exc))
        except Exception as exc:  # an engine bug must become a message, not a dead window (logged)
            log.exception("analysis: the record could not be analysed")
            self.problem = self.ctx.t("analysis.failed", detail=type(exc).__name__)
        self.widgets.clear_focus()  # a keyboard user lands on Next once there is something to step through
        self.relayout()
        self.ctx.invalidate(None)

    @property
    def steps(self) -> tuple[ExploreStep, ...]:
        return () if self.analysis is None else self.analysis.steps

    @property
    def step(self) -> ExploreStep | None:
        steps = self.steps
        return steps[self.index] if steps else None

    @property
    def margin_points(self) -> int:
        return round(RISK_MARGIN * 100)

    # ----- moving through the explores ------------------------------------------------------------
    def go(self, index: int) -> None:
        steps = self.steps
        if not steps:
            return
        index = max(0, min(len(steps) - 1, index))
        if index != self.index:
            self.index = index
            self.relayout()
            self.ctx.invalidate(None)

    def next(self) -> None:
        self.go(self.index + 1)

    def previous(self) -> None:
        self.go(self.index - 1)

    def more_risky(self) -> None:
        """The *+N more* chip: the next risky explore without a chip of its own (round to the first of them)."""
        analysis = self.analysis
        hidden = () if analysis is None else analysis.risky[CHIPS - 1:]
        if not hidden:
            return
        later = [i for i in hidden if i > self.index]
        self.go(later[0] if later else hidden[0])

    def back(self) -> None:
        if self.ctx.stack.top is self:
            self.ctx.stack.pop()
        self.on_back()

    # ----- layout ----------------------------------------------------------------------------------------
    def relayout(self) -> None:
        t = self.ctx.t
        paint = self.paint
        buttons = [Button(paint.BACK.copy(), lambda: t("action.back"), self.back, style="ghost", icon="back",
                          name="back", text_size=15)]
        analysis = self.analysis
        if analysis is not None and analysis.steps:
            risky = analysis.risky
            shown = risky if len(risky) <= CHIPS else risky[: CHIPS - 1]
            for slot, i in enumerate(shown):
                turn = analysis.steps[i].risk.turn
                buttons.append(Button(paint.chip_rect(slot), partial(t, "analysis.turn", turn=turn),
                                      partial(self.go, i), style="selected" if i == self.index else "secondary",
                                      text_size=14, radius=12, name=f"risky:{i}"))
            if len(risky) > len(shown):
                more = len(risky) - len(shown)
                buttons.append(Button(paint.chip_rect(CHIPS - 1), partial(t, "analysis.more", count=more),
                                      self.more_risky, text_size=14, radius=12, name="more"))
            last = len(analysis.steps) - 1
            buttons += [
                Button(paint.PREV.copy(), lambda: t("analysis.prev"), self.previous, enabled=self.index > 0,
                       name="prev", text_size=15),
                Button(paint.NEXT.copy(), lambda: t("analysis.next"), self.next, enabled=self.index < last,
                       style="primary", name="next", text_size=15),
            ]
        focus = self.widgets.focused()
        self.widgets.set(buttons)
        names = [b.name for b in buttons if b.enabled]
        if focus is not None and focus.name in names:
            self.widgets.focus_name(focus.name)
        elif self.ctx.keyboard:
            self.widgets.focus_name("next" if "next" in names else "back")
        self.paint.set_step(self.step)

    # ----- the frame ---------------------------------------------------------------------------------------
    def process_event(self, event: InputEvent) -> bool:
        if isinstance(event, KeyEvent):
            if event.key in (pygame.K_ESCAPE, pygame.K_BACKSPACE):
                self.back()
                return True
            if event.key in (pygame.K_LEFT, pygame.K_RIGHT, pygame.K_HOME, pygame.K_END) and self.steps:
                target = {pygame.K_LEFT: self.index - 1, pygame.K_RIGHT: self.index + 1,
                          pygame.K_HOME: 0, pygame.K_END: len(self.steps) - 1}[event.key]
                self.go(target)
                return True
            return self.widgets.handle(event)
        if isinstance(event, PointerEvent):
            if self._swiped(event):
                return True
            return self.widgets.handle(event)
        return False

    def _swiped(self, event: PointerEvent) -> bool:
        """A swipe over the board steps (right to left is the next explore)."""
        step = self._swipe.feed(event, self.paint.board.card)
        if step:
            (self.next if step > 0 else self.previous)()
        return step != 0

    def update(self, now: float) -> None:
        if self.pending and self._drawn:
            self.compute()  # the frame after "Calculating..." was shown

    def next_wakeup(self, now: float) -> float | None:
        return now if self.pending else None

    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        self.paint.draw(canvas, area)
        self.widgets.draw(canvas, self.ctx.fonts, area)
        self._drawn = True
