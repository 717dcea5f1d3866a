"""Buttons and a focus group: the only interactive widgets the screens need besides the board.

A :class:`Button` maps pointer press+release inside its rectangle to a click (a disabled one may
say why through ``on_disabled`` instead); a
:class:`WidgetGroup` owns a list of buttons, routes pointer events, moves keyboard focus with
arrows/Tab and activates with Enter/Space. Widgets report what to redraw through the
``invalidate`` callback they are given, so a hover repaints one button, not the screen.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pygame

from mineduel.client.ui import palette, shapes
from mineduel.client.ui.input import InputEvent, KeyEvent, PointerEvent, PointerKind
from mineduel.client.ui.text import FontBook

Invalidate = Callable[[pygame.Rect | None], None]

STYLES: dict[str, tuple[palette.Color, palette.Color]] = {
    # style: (fill, ink) — the theme's primary (amber), secondary, danger and selected buttons
    "primary": (palette.PRIMARY, palette.INK_DARK),
    "secondary": (palette.BUTTON_SECONDARY, palette.INK),
    "danger": (palette.DANGER, palette.ON_ACCENT),
    "ghost": (palette.CARD, palette.INK),
    "selected": (palette.ME, palette.ON_ACCENT),
}
LIGHT_FILLS = ("primary", "danger", "accent", "selected")


@dataclass(eq=False)
class Button:
    """A tappable rectangle with a label (and maybe an icon); at least 44 px tall (U4)."""

    rect: pygame.Rect
    label: Callable[[], str]
    on_click: Callable[[], None]
    style: str = "secondary"
    icon: str | None = None
    icon_color: palette.Color | None = None
    enabled: bool = True
    text_size: int = 17
    radius: int = 14
    name: str = ""
    layout: str = "row"  # "row": icon then label, centred; "stack": icon over label; "list": left-aligned
    accent: palette.Color | None = None  # the fill when style == "accent"
    # Pressed while disabled: the screen says why (e.g. "Explore a cell first"); None: nothing to say.
    on_disabled: Callable[[], None] | None = None
    hovered: bool = field(default=False, init=False)
    pressed: bool = field(default=False, init=False)

    def contains(self, pos: tuple[float, float]) -> bool:
        return self.rect.collidepoint(pos)

    def colors(self) -> tuple[palette.Color, palette.Color]:
        if not self.enabled:
            return palette.BUTTON_DISABLED, palette.INK_DISABLED
        if self.style == "accent" and self.accent is not None:
            return self.accent, palette.ON_ACCENT
        fill, ink = STYLES[self.style]
        if self.pressed:
            fill = palette.mix(fill, (0, 0, 0), 0.12)
        elif self.hovered:
            fill = palette.mix(fill, (255, 255, 255), 0.1)
        return fill, ink

    def draw(self, surface: pygame.Surface, book: FontBook, *, focused: bool = False) -> None:
        fill, ink = self.colors()
        rect = self.rect
        if self.style in ("ghost", "secondary") and self.enabled:
            surface.blit(shapes.rounded(rect.size, self.radius, fill, 1, palette.CARD_BORDER), rect)
        else:
            surface.blit(shapes.rounded(rect.size, self.radius, fill), rect)
        text = self.label()
        icon_color = ink if (self.icon_color is None or not self.enabled or self.style in LIGHT_FILLS) else self.icon_color
        if self.layout == "stack":
            isize = 26
            size = book.fit_size(text, self.text_size, rect.width - 8, True)
            th = book.line_height(size, True)
            top = rect.centery - (isize + th) // 2
            if self.icon:
                surface.blit(shapes.icon(self.icon, isize, icon_color), (rect.centerx - isize // 2, top))
            image = book.render(text, size, ink, True)
            surface.blit(image, image.get_rect(midtop=(rect.centerx, top + isize)))
        elif self.layout == "list":
            x = rect.left + 16
            if self.icon:
                isize = 24
                surface.blit(shapes.icon(self.icon, isize, icon_color), (x, rect.centery - isize // 2))
                x += isize + 14
            size = book.fit_size(text, self.text_size, rect.right - 12 - x, True)
            image = book.render(text, size, ink, True)
            surface.blit(image, image.get_rect(midleft=(x, rect.centery)))
        else:
            isize = 22 if self.icon else 0
            gap = 8 if self.icon else 0
            avail = rect.width - 20 - isize - gap
            size = book.fit_size(text, self.text_size, avail, True)
            image = book.render(text, size, ink, True)
            total = isize + gap + image.get_width()
            x = rect.centerx - total // 2
            if self.icon:
                surface.blit(shapes.icon(self.icon, isize, icon_color), (x, rect.centery - isize // 2))
            surface.blit(image, image.get_rect(midleft=(x + isize + gap, rect.centery)))
        if focused:
            draw_focus(surface, rect, self.radius)


def draw_focus(surface: pygame.Surface, rect: pygame.Rect, radius: int) -> None:
    """The keyboard focus ring: amber, outside the element, three pixels thick."""
    outer = rect.inflate(8, 8)
    surface.blit(shapes.ring(outer.size, radius + 4, palette.FOCUS, 3), outer)


class WidgetGroup:
    """Buttons with pointer routing and keyboard focus (Tab/arrows move, Enter/Space click)."""

    def __init__(self, invalidate: Invalidate, keyboard_visible: Callable[[], bool]) -> None:
        self.buttons: list[Button] = []
        self.focus: int | None = None
        self._invalidate = invalidate
        self._keyboard_visible = keyboard_visible
        self._pressed: Button | None = None

    def set(self, buttons: Sequence[Button]) -> None:
        focus_name = self.buttons[self.focus].name if self.focus is not None and self.focus < len(self.buttons) else None
        self.buttons = list(buttons)
        self.focus = None
        if focus_name:
            for i, b in enumerate(self.buttons):
                if b.name == focus_name:
                    self.focus = i
        self._pressed = None

    def by_name(self, name: str) -> Button:
        for b in self.buttons:
            if b.name == name:
                return b
        raise KeyError(name)

    def invalidate(self, button: Button) -> None:
        self._invalidate(button.rect.inflate(12, 12))

    def focus_name(self, name: str) -> None:
        for i, b in enumerate(self.buttons):
            if b.name == name:
                self._set_focus(i)

    def clear_focus(self) -> None:
        """No button has the keyboard focus (e.g. the board took it back)."""
        if self.focus is not None:
            self._set_focus(None)

    def _set_focus(self, index: int | None) -> None:
        if self.focus is not None and self.focus < len(self.buttons):
            self.invalidate(self.buttons[self.focus])
        self.focus = index
        if index is not None:
            self.invalidate(self.buttons[index])

    def focused(self) -> Button | None:
        return self.buttons[self.focus] if self.focus is not None and self.focus < len(self.buttons) else None

    def handle(self, event: InputEvent) -> bool:
        """Route one event; True when a button used it."""
        if isinstance(event, PointerEvent):
            return self._pointer(event)
        if isinstance(event, KeyEvent):
            return self._key(event)
        return False

    def _pointer(self, event: PointerEvent) -> bool:
        if event.kind is PointerKind.CANCEL:
            pressed, self._pressed = self._pressed, None
            if pressed is not None:
                pressed.pressed = False
                self.invalidate(pressed)
            return False
        hit = next((b for b in self.buttons if b.contains(event.pos)), None)
        if event.kind is PointerKind.MOVE:
            for b in self.buttons:
                over = b is hit and b.enabled and not event.touch
                if b.hovered != over:
                    b.hovered = over
                    self.invalidate(b)
                if b.pressed and b is not hit:
                    b.pressed = False
                    self.invalidate(b)
            return False
        if event.kind is PointerKind.DOWN:
            if hit is not None and hit.enabled:
                hit.pressed = True
                self._pressed = hit
                self.invalidate(hit)
                return True
            self._pressed = hit if hit is not None and hit.on_disabled is not None else None
            return hit is not None
        # UP
        pressed, self._pressed = self._pressed, None
        if pressed is not None:
            was = pressed.pressed
            pressed.pressed = False
            self.invalidate(pressed)
            if event.touch:
                pressed.hovered = False
            if was and pressed is hit and pressed.enabled:
                pressed.on_click()
            elif pressed is hit and not pressed.enabled and pressed.on_disabled is not None:
                pressed.on_disabled()  # press and release on a disabled button: say why, change nothing
            return True
        return hit is not None

    def _key(self, event: KeyEvent) -> bool:
        enabled = [i for i, b in enumerate(self.buttons) if b.enabled]
        if not enabled:
            return False
        key = event.key
        if key in (pygame.K_TAB, pygame.K_DOWN, pygame.K_RIGHT, pygame.K_UP, pygame.K_LEFT):
            backwards = key in (pygame.K_UP, pygame.K_LEFT) or (key == pygame.K_TAB and event.mod & pygame.KMOD_SHIFT)
            if self.focus not in enabled:
                self._set_focus(enabled[-1] if backwards else enabled[0])
            else:
                pos = enabled.index(self.focus)
                self._set_focus(enabled[(pos + (-1 if backwards else 1)) % len(enabled)])
            return True
        if key in (pygame.K_RETURN, pygame.K_KP_ENTER, pygame.K_SPACE):
            button = self.focused()
            if button is not None and button.enabled:
                button.on_click()
                return True
            if button is not None and button.on_disabled is not None:
                button.on_disabled()
                return True
        return False

    def draw(self, surface: pygame.Surface, book: FontBook, area: pygame.Rect) -> None:
        show_focus = self._keyboard_visible()
        for i, b in enumerate(self.buttons):
            if b.rect.inflate(12, 12).colliderect(area):
                b.draw(surface, book, focused=show_focus and i == self.focus)
