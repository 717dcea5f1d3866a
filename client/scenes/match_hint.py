"""The match screen's Hint (issue 18 item 4): the safest cells to explore, ringed, on request.

Offered only when the player turned hints on (settings ``hints``, off by default) and the match
can answer — a CPU match (:meth:`mineduel.client.cpu_match.CpuMatch.hint`); an online match or
the tutorial has no ``hint`` and so never shows the button, whatever the setting says.

The answer comes from ``shared.ai.analysis.hint`` over the human seat's own view and memory (V3:
nothing of the CPU's hidden mines), computed once when asked — never per frame — and shown until
the board changes. Asked at any other moment than the player's explore, it says politely why not
and changes nothing. Each use is counted in the match's record (RECORD.md ``hints``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import pygame

from mineduel.client.ui import palette, shapes
from mineduel.shared.rules.bitboard import Mask, cells

if TYPE_CHECKING:
    from mineduel.client.scenes.game import GameScene

log = logging.getLogger(__name__)


class HintAnswer(Protocol):
    """One answer (``cpu_match.Hint``): the safest explorable cells and their chance of a mine (0–1)."""

    @property
    def cells(self) -> Mask: ...

    @property
    def probability(self) -> float: ...


@runtime_checkable
class HintSource(Protocol):
    """What a match offers to be hinted (the CPU match; the screen never imports it, STYLE.md)."""

    def hint_allowed(self) -> bool: ...

    def hint(self) -> HintAnswer | None: ...

    @property
    def hints_used(self) -> int: ...


class MatchHint:
    """The hint of one :class:`GameScene`: whether it is offered, asking, and the rings."""

    def __init__(self, scene: GameScene) -> None:
        self.scene = scene
        self.ctx = scene.ctx
        self.cells: Mask = 0
        self._shown_for: object = None  # the view the rings belong to: any change clears them

    def source(self) -> HintSource | None:
        controller = self.scene.controller
        return controller if isinstance(controller, HintSource) else None

    def offered(self) -> bool:
        """The Hint button and key exist: hints on in the settings, a match that can answer, not over."""
        return self.ctx.settings.hints and self.source() is not None and self.scene.ended is None

    @property
    def used(self) -> int:
        source = self.source()
        return 0 if source is None else source.hints_used

    def ask(self) -> None:
        """Hint pressed (or H): ring the safest cells, or say why there is nothing to ring now."""
        scene = self.scene
        source = self.source()
        if source is None or not self.offered():
            return
        if not scene.input_open() or not source.hint_allowed():
            scene.line.say("hint.not_now", {}, "refusal")
            scene.cues.play("refused")
            return
        try:
            found = source.hint()
        except ValueError:  # the position admits no arrangement (a bug, not the player's): say so, play on
            log.exception("hint: the probability count failed")
            found = None
        if found is None:
            scene.line.say("hint.unavailable", {}, "refusal")
            return
        view = scene.view()
        self.clear()
        self.cells = found.cells
        self._shown_for = view
        if view is not None and found.cells == view.explorable:
            key = "hint.all_equal"
        else:
            key = "hint.shown_safe" if found.probability == 0 else "hint.shown"
        scene.line.say(key, {"chance": _percent(found.probability), "count": found.cells.bit_count()}, "event")
        self._invalidate()

    def follow(self) -> None:
        """After any change: rings shown for an earlier board go (the hint was about that board)."""
        if self.cells and self.scene.view() is not self._shown_for:
            self.clear()

    def clear(self) -> None:
        if self.cells:
            self._invalidate()
        self.cells = 0
        self._shown_for = None

    def _invalidate(self) -> None:
        board = self.scene.board
        for cell in cells(self.cells):
            self.ctx.invalidate(board.cell_rect(cell).inflate(10, 10))

    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        """A green ring and a small bulb on each hinted cell (shape as well as colour)."""
        if not self.cells:
            return
        board = self.scene.board
        for cell in cells(self.cells):
            rect = board.cell_rect(cell).inflate(6, 6)
            if not rect.colliderect(area):
                continue
            canvas.blit(shapes.ring(rect.size, 10, palette.GOOD, 3), rect)
            bulb = shapes.icon("hint", 16, palette.GOOD)
            canvas.blit(bulb, bulb.get_rect(center=(rect.right - 11, rect.top + 11)))


def _percent(p: float) -> str:
    """A probability as the hint says it: "0%", "<1%", or whole per cent (never a rounded "0%" for a risk)."""
    if p <= 0:
        return "0%"
    if p < 0.01:
        return "<1%"
    return f"{round(p * 100)}%"
