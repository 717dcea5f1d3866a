"""Input as the scenes see it: pointer (mouse or finger), keys and wheel, in logical coordinates.

The app turns pygame's MOUSE*/FINGER*/KEY*/MOUSEWHEEL events into these, mapping window pixels
(or a finger's normalised 0..1 position) onto the 390×844 canvas. A mouse event that SDL made up
from a touch (``event.touch``) is dropped so a tap is never handled twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

import pygame

Point = tuple[float, float]


class PointerKind(StrEnum):
    DOWN = "down"
    UP = "up"
    MOVE = "move"
    CANCEL = "cancel"  # the press turned into a scroll: forget it, act on nothing


@dataclass(frozen=True, slots=True)
class PointerEvent:
    """A primary button / finger going down, up, or moving (logical coordinates)."""

    kind: PointerKind
    pos: Point
    touch: bool = False
    pressed: bool = False  # MOVE: whether the button / finger is down


@dataclass(frozen=True, slots=True)
class KeyEvent:
    """A key pressed (``pygame.K_*`` code and modifiers)."""

    key: int
    mod: int = 0
    unicode: str = ""


@dataclass(frozen=True, slots=True)
class WheelEvent:
    """A scroll of ``dy`` notches (positive: content moves down, i.e. scroll up)."""

    dy: float
    pos: Point


@dataclass(frozen=True, slots=True)
class TextEvent:
    """Typed text (SDL's ``TEXTINPUT``): the only source of characters for text fields.

    A ``KEYDOWN``'s ``unicode`` is filled only when its ``TEXTINPUT`` is already queued, so
    fast typing (or a program typing) loses characters if fields read it from key events.
    """

    text: str


InputEvent = PointerEvent | KeyEvent | WheelEvent | TextEvent


class Swipe:
    """A horizontal drag that starts inside an area: ``feed`` says -1 (back), +1 (forward) or 0.

    Right to left is forward, as a page turns. One definition for every screen that steps through
    positions by a swipe over its board (the analysis, the replay viewer).
    """

    DISTANCE = 48  # canvas pixels the drag must travel, and more across than down

    def __init__(self) -> None:
        self._start: tuple[float, float] | None = None

    def feed(self, event: PointerEvent, area: pygame.Rect) -> int:
        if event.kind is PointerKind.DOWN:
            self._start = event.pos if area.collidepoint(event.pos) else None
        elif event.kind is PointerKind.CANCEL:
            self._start = None
        elif event.kind is PointerKind.UP and self._start is not None:
            start, self._start = self._start, None
            dx, dy = event.pos[0] - start[0], event.pos[1] - start[1]
            if abs(dx) >= self.DISTANCE and abs(dx) > abs(dy):
                return 1 if dx < 0 else -1
        return 0


def translate(
    event: pygame.event.Event,
    window_to_logical: Callable[[Point], Point],
    window_size: tuple[int, int],
    mouse_pos: Callable[[], tuple[int, int]] = pygame.mouse.get_pos,
) -> InputEvent | None:
    """The scene-level event for a pygame event, or ``None`` for events scenes do not use."""
    etype = event.type
    if etype in (pygame.MOUSEBUTTONDOWN, pygame.MOUSEBUTTONUP):
        if getattr(event, "touch", False) or event.button != 1:
            return None
        kind = PointerKind.DOWN if etype == pygame.MOUSEBUTTONDOWN else PointerKind.UP
        return PointerEvent(kind, window_to_logical(event.pos))
    if etype == pygame.MOUSEMOTION:
        if getattr(event, "touch", False):
            return None
        return PointerEvent(PointerKind.MOVE, window_to_logical(event.pos), pressed=bool(event.buttons[0]))
    if etype in (pygame.FINGERDOWN, pygame.FINGERUP, pygame.FINGERMOTION):
        w, h = window_size
        pos = window_to_logical((event.x * w, event.y * h))
        kind = {
            pygame.FINGERDOWN: PointerKind.DOWN,
            pygame.FINGERUP: PointerKind.UP,
            pygame.FINGERMOTION: PointerKind.MOVE,
        }[etype]
        return PointerEvent(kind, pos, touch=True, pressed=kind is not PointerKind.UP)
    if etype == pygame.KEYDOWN:
        return KeyEvent(event.key, event.mod, getattr(event, "unicode", ""))
    if etype == pygame.TEXTINPUT:
        return TextEvent(event.text)
    if etype == pygame.MOUSEWHEEL:
        if getattr(event, "touch", False):
            return None
        return WheelEvent(float(getattr(event, "precise_y", event.y)), window_to_logical(mouse_pos()))
    return None
