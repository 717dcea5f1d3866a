"""Popups in a short window (issue 16 item 6, U4): at 320×568 every popup fits what the window shows,
and a tall one scrolls by wheel, by mouse or finger drag and for the keyboard focus, with a visible
hint that there is more. The real app (client_driver.Driver), real pygame events."""

from __future__ import annotations

import pygame
import pytest
from support.client_driver import Driver

from mineduel.client.scenes.base import Popup
from mineduel.client.scenes.popups import RulesPopup
from mineduel.client.ui import palette
from mineduel.client.ui.widgets import Button

SMALL = (320, 568)


@pytest.fixture
def small(tmp_path):
    d = Driver(tmp_path, size=SMALL, language="en")
    yield d
    d.close()


def wheel(d: Driver, notches: float) -> None:
    d.post(pygame.MOUSEWHEEL, x=0, y=notches, precise_x=0.0, precise_y=float(notches), flipped=False)
    d.frame()


def mouse_drag(d: Driver, start: tuple[int, int], end: tuple[int, int]) -> None:
    d.press(start)
    d.frame()
    for t in (0.25, 0.5, 0.75, 1.0):
        pos = (round(start[0] + (end[0] - start[0]) * t), round(start[1] + (end[1] - start[1]) * t))
        d.post(pygame.MOUSEMOTION, pos=pos, rel=(0, 0), buttons=(1, 0, 0))
        d.frame()
    d.release(end)
    d.frame()


def finger_drag(d: Driver, start: tuple[int, int], end: tuple[int, int]) -> None:
    w, h = d.app.viewport.mapping.window
    d.post(pygame.FINGERDOWN, x=start[0] / w, y=start[1] / h, dx=0.0, dy=0.0, touch_id=1, finger_id=1, pressure=1.0)
    d.frame()
    for t in (0.25, 0.5, 0.75, 1.0):
        x = start[0] + (end[0] - start[0]) * t
        y = start[1] + (end[1] - start[1]) * t
        d.post(pygame.FINGERMOTION, x=x / w, y=y / h, dx=0.0, dy=0.0, touch_id=1, finger_id=1, pressure=1.0)
        d.frame()
    d.post(pygame.FINGERUP, x=end[0] / w, y=end[1] / h, dx=0.0, dy=0.0, touch_id=1, finger_id=1, pressure=0.0)
    d.frame()


def on_screen(d: Driver, rect: pygame.Rect) -> bool:
    """``rect`` (canvas coordinates) lies wholly inside the window."""
    top, bottom = d.to_window(rect.topleft), d.to_window(rect.bottomright)
    w, h = d.app.viewport.mapping.window
    return min(top) >= 0 and bottom[0] <= w and bottom[1] <= h


def test_the_start_popup_fits_and_start_is_in_view(small):
    """Issue 16 item 6: the start popup's Start (and Play with a friend, Tutorial) are on screen
    at 320×568 without scrolling anything; one click starts."""
    d = small
    popup = d.app.stack.popup
    assert isinstance(popup, RulesPopup)
    assert popup.frame.height <= d.app.ctx.visible().height
    for name in ("start", "friend", "tutorial", "difficulty:hard"):
        assert on_screen(d, popup.widgets.by_name(name).rect), name
    d.click_button("start")
    assert d.app.stack.popup is None and d.app.game.controller is not None


def test_rules_text_scrolls_by_wheel_and_drag(small):
    """The rules text scrolls by wheel, mouse drag and finger drag (and back); the window behind
    stays where it is, and a drag clicks nothing."""
    d = small
    popup = d.app.stack.popup
    assert isinstance(popup, RulesPopup) and popup.scroll_limit() > 0
    wheel(d, -2)
    assert popup.scroll > 0 and d.app.viewport.scroll == 0
    wheel(d, 5)
    assert popup.scroll == 0
    body = popup.scroll_area()
    assert body is not None
    mouse_drag(d, d.to_window((body.centerx, body.bottom - 20)), d.to_window((body.centerx, body.top + 20)))
    dragged = popup.scroll
    assert dragged > 100 and d.app.stack.popup is popup
    finger_drag(d, d.to_window((body.centerx, body.top + 20)), d.to_window((body.centerx, body.bottom - 20)))
    assert popup.scroll < dragged and d.app.viewport.scroll == 0 and d.app.stack.popup is popup
    d.key(pygame.K_END)
    assert popup.scroll == popup.scroll_limit()
    d.key(pygame.K_HOME)
    assert popup.scroll == 0


class TallPopup(Popup):
    """A card taller than any window: twelve buttons in a column."""

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.clicked: list[str] = []
        self.relayout()

    def relayout(self) -> None:
        self.set_card_height(22 + 12 * 70 + 22)
        buttons = []
        for i in range(12):
            rect = pygame.Rect(self.card.left + 22, self.card.top + 22 + i * 70, self.card.width - 44, 56)
            buttons.append(Button(rect, lambda i=i: f"Item {i}", lambda i=i: self.clicked.append(f"b{i}"), name=f"b{i}"))
        self.widgets.set(buttons)


@pytest.mark.parametrize("size", [SMALL, (390, 844)])
def test_a_tall_popup_scrolls_as_a_whole(tmp_path, size):
    """A popup taller than the window is cut to it and scrolls: wheel, drag (which clicks nothing),
    and Tab keeps the focused button in view; a button scrolled into view is clicked where it is
    seen; the fade and scroll bar say there is more."""
    d = Driver(tmp_path, size=size, language="en")
    try:
        d.click_button("start")
        popup = TallPopup(d.app.ctx)
        d.app.stack.open_popup(popup)
        d.wait(0.3)
        visible = d.app.ctx.visible()
        assert popup.frame.height <= visible.height - 24 < popup.card.height
        assert visible.contains(popup.frame)
        # The scroll bar's thumb is drawn at the frame's right edge.
        thumb = (popup.frame.right - 5, popup.frame.top + 14)
        assert max(abs(a - b) for a, b in zip(d.pixel(thumb), palette.INK_SOFT, strict=True)) <= 6
        wheel(d, -3)
        assert popup.card_scroll > 0
        wheel(d, 10)
        assert popup.card_scroll == 0
        # A drag that starts on a button scrolls and clicks nothing.
        start = d.to_window((popup.frame.centerx, popup.frame.bottom - 40))
        mouse_drag(d, start, d.to_window((popup.frame.centerx, popup.frame.top + 40)))
        assert popup.card_scroll > 0 and popup.clicked == []
        # The keyboard: Tab to the last button brings it into view.
        d.key(pygame.K_HOME)
        assert popup.card_scroll == 0
        for _ in range(12):
            d.key(pygame.K_TAB)
        last = popup.widgets.by_name("b11")
        assert popup.widgets.focused() is last
        shown_top = popup.frame.top + popup.card_scroll
        assert shown_top <= last.rect.top and last.rect.bottom <= shown_top + popup.frame.height
        # Clicked where it is seen (scrolled), it is the one that answers.
        seen = (last.rect.centerx, last.rect.centery - popup.card_scroll)
        d.click(d.to_window(seen))
        assert popup.clicked == ["b11"]
    finally:
        d.close()


def test_the_window_does_not_scroll_behind_an_open_popup(small):
    """A finger drag with a popup open scrolls the popup's text, never the window behind it."""
    d = small
    d.click_button("start")
    d.key(pygame.K_ESCAPE)
    d.click_button("menu.rules")
    popup = d.app.stack.popup
    assert isinstance(popup, RulesPopup)
    finger_drag(d, d.to_window((195, 500)), d.to_window((195, 200)))
    assert d.app.viewport.scroll == 0
    assert popup.frame.top >= d.app.ctx.visible().top
