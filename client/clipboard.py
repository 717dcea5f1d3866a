"""Copying text to the system clipboard (the invite link), failing gracefully.

pygame-ce 2.5's ``pygame.scrap.put_text`` / ``get_text`` use SDL's clipboard directly (the older
``scrap.put``/``get`` with MIME types are the deprecated part). Without a window, a clipboard or a
display server they raise or do nothing; callers get ``False`` / ``""`` and say so on screen.
"""

from __future__ import annotations

import logging

import pygame

log = logging.getLogger(__name__)


def copy_text(text: str) -> bool:
    """Put ``text`` on the clipboard; ``False`` when there is no clipboard to put it on."""
    try:
        if not pygame.display.get_init() or pygame.display.get_surface() is None:
            return False
        pygame.scrap.put_text(text)
        return pygame.scrap.get_text() == text
    except (pygame.error, AttributeError, NotImplementedError) as exc:
        log.info("clipboard unavailable: %s", exc)
        return False


def paste_text() -> str:
    """The clipboard's text, or ``""`` when there is none."""
    try:
        if not pygame.display.get_init() or pygame.display.get_surface() is None:
            return ""
        text = pygame.scrap.get_text()
    except (pygame.error, AttributeError, NotImplementedError) as exc:
        log.info("clipboard unavailable: %s", exc)
        return ""
    return text if isinstance(text, str) else ""
