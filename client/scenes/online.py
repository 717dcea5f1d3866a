"""The online play screen — a placeholder the online engineer fills in.

For now it shows the screen's title and a way back. It is built on pygame_gui (``uses_gui``), the
route the full screen will need for text entry (room codes, addresses): the stack hands it the
context's UIManager, created on first use with the project theme and catalogs and bound to the
Translator, so widgets given :func:`~mineduel.client.i18n.gui_key` texts re-translate live.
Events reach pygame_gui in canvas coordinates, whatever the window's scale or scroll.

To play online later, this scene will create the online
:class:`~mineduel.client.controller.MatchController` and show the same
:class:`~mineduel.client.scenes.game.GameScene` with it.
"""

from __future__ import annotations

from typing import Any

import pygame

from mineduel.client.i18n import gui_key
from mineduel.client.scenes.base import Context, Scene
from mineduel.client.ui import palette
from mineduel.client.ui.input import InputEvent, KeyEvent


class OnlineScene(Scene):
    """Title and Back (to the CPU game, which keeps its state underneath)."""

    uses_gui = True

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self._elements: list[Any] = []
        self.back_button: Any = None

    def enter(self) -> None:
        import pygame_gui

        assert self.ctx.make_gui is not None, "the app provides pygame_gui"
        manager = self.ctx.make_gui()
        w, _ = self.ctx.size
        self.back_button = pygame_gui.elements.UIButton(pygame.Rect(12, 10, 110, 44), gui_key("action.back"), manager,
                                                        object_id="#button")
        title = pygame_gui.elements.UILabel(pygame.Rect(0, 70, w, 44), gui_key("online.title"), manager, object_id="#title")
        self._elements = [self.back_button, title]

    def leave(self) -> None:
        for element in self._elements:
            element.kill()
        self._elements = []

    def process_event(self, event: InputEvent) -> bool:
        if isinstance(event, KeyEvent) and event.key == pygame.K_ESCAPE:
            self.back()
            return True
        return False

    def gui_event(self, event: pygame.event.Event) -> None:
        """A pygame_gui event (button pressed, ...) for this scene's widgets."""
        import pygame_gui

        if event.type == pygame_gui.UI_BUTTON_PRESSED and event.ui_element is self.back_button:
            self.back()

    def back(self) -> None:
        if self.ctx.stack.top is self:
            self.ctx.stack.pop()

    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        canvas.fill(palette.BACKGROUND, area)

    def next_wakeup(self, now: float) -> float | None:
        return now + 0.25  # pygame_gui may animate (hover fades, text cursors): a few frames a second
