"""A one-line text entry drawn with the game's kit (room codes, ``host:port``, invite links).

Focus by a click or Tab from the screen; type (characters come from ``TEXTINPUT``), Backspace
deletes, Ctrl+V (Cmd+V) pastes, Enter submits, Escape leaves the field. Characters outside
``allowed`` are dropped, so a field cannot hold control characters or markup.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from dataclasses import dataclass, field

import pygame

from mineduel.client.clipboard import paste_text
from mineduel.client.ui import palette, shapes
from mineduel.client.ui.input import InputEvent, KeyEvent, PointerEvent, PointerKind, TextEvent
from mineduel.client.ui.text import FontBook
from mineduel.client.ui.widgets import draw_focus

PRINTABLE = frozenset(string.ascii_letters + string.digits + string.punctuation + " ")


@dataclass(eq=False)
class TextField:
    """A rectangle holding editable text; ``on_submit`` runs on Enter."""

    rect: pygame.Rect
    placeholder: Callable[[], str]
    on_submit: Callable[[str], None] = lambda text: None
    max_len: int = 120
    allowed: frozenset[str] = PRINTABLE
    name: str = ""
    text: str = ""
    focused: bool = field(default=False)

    def set_text(self, text: str) -> None:
        self.text = "".join(ch for ch in text if ch in self.allowed)[: self.max_len]

    def handle(self, event: InputEvent) -> bool:
        """True when the field used the event."""
        if isinstance(event, PointerEvent):
            if event.kind is PointerKind.DOWN:
                self.focused = self.rect.collidepoint(event.pos)
                return self.focused
            return event.kind is PointerKind.UP and self.rect.collidepoint(event.pos)
        if isinstance(event, TextEvent):
            if not self.focused:
                return False
            self.set_text(self.text + event.text)
            return True
        if not isinstance(event, KeyEvent) or not self.focused:
            return False
        key = event.key
        if key == pygame.K_BACKSPACE:
            self.text = self.text[:-1]
            return True
        if key in (pygame.K_RETURN, pygame.K_KP_ENTER):
            self.on_submit(self.text.strip())
            return True
        if key == pygame.K_ESCAPE or key == pygame.K_TAB:
            self.focused = False
            return key == pygame.K_ESCAPE
        if key == pygame.K_v and event.mod & (pygame.KMOD_CTRL | pygame.KMOD_META):
            self.set_text(self.text + paste_text().strip())
            return True
        # Printable keys are consumed here (their characters arrive as TextEvents), so they do
        # not also act as game shortcuts while the field has focus.
        return key not in (pygame.K_UP, pygame.K_DOWN)

    def draw(self, surface: pygame.Surface, book: FontBook, *, keyboard: bool = False) -> None:
        rect = self.rect
        border = palette.ME if self.focused else palette.CARD_BORDER
        surface.blit(shapes.rounded(rect.size, 12, palette.BACKGROUND_DEEP, 2 if self.focused else 1, border), rect)
        inner_w = rect.width - 28
        if self.text:
            shown = self.text
            while len(shown) > 1 and book.width(shown, 17) > inner_w:
                shown = shown[1:]  # keep the end (where the caret is) in view
            image = book.render(shown, 17, palette.INK)
        else:
            hint = self.placeholder()
            size = book.fit_size(hint, 16, inner_w)
            image = book.render(hint, size, palette.INK_FAINT)
        pos = image.get_rect(midleft=(rect.left + 14, rect.centery))
        surface.blit(image, pos)
        if self.focused:
            x = (pos.right + 2) if self.text else rect.left + 13
            pygame.draw.rect(surface, palette.ME_LIGHT, pygame.Rect(x, rect.centery - 11, 2, 22))
            if keyboard:
                draw_focus(surface, rect, 12)
