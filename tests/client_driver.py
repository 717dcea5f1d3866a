"""Drive the real client app headless: a fake clock, real pygame events, one frame at a time.

The app's frame function is called directly (no reactor), so tests control time exactly and
never sleep.
"""

from __future__ import annotations

from pathlib import Path

import pygame

from mineduel.client.app import App


class FakeClock:
    """A monotonic clock that moves only when told."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Driver:
    """An :class:`App` plus helpers that post the events a player would cause."""

    def __init__(self, tmp_path: Path, *, size: tuple[int, int] = (390, 844), language: str | None = None,
                 seed: int | None = 1234, **kwargs: object) -> None:
        self.clock = FakeClock()
        self.app = App(size=size, language=language, seed=seed, profile_dir=tmp_path,
                       export_dir=tmp_path / "exports", clock=self.clock, wall_clock=lambda: 1_700_000_000.0, **kwargs)
        self.last_delay = self.app.frame()

    # time
    def frame(self, dt: float = 1 / 60) -> float | None:
        self.clock.advance(dt)
        self.last_delay = self.app.frame()
        return self.last_delay

    def wait(self, seconds: float, step: float = 0.05) -> None:
        steps = max(1, round(seconds / step))
        for _ in range(steps):
            self.frame(seconds / steps)

    # where things are, in window pixels
    def to_window(self, pos: tuple[float, float]) -> tuple[int, int]:
        vp = self.app.viewport
        m = vp.mapping
        return (round(pos[0] * m.scale + m.offset[0]), round(pos[1] * m.scale + m.offset[1] - vp.scroll))

    def cell_pos(self, cell: int) -> tuple[int, int]:
        return self.to_window(self.app.game.board.cell_center(cell))

    def button_pos(self, name: str) -> tuple[int, int]:
        popup = self.app.stack.popup
        group = popup.widgets if popup is not None else self.app.game.widgets
        return self.to_window(group.by_name(name).rect.center)

    # input
    def post(self, etype: int, **attrs: object) -> None:
        pygame.event.post(pygame.event.Event(etype, attrs))

    def press(self, pos: tuple[int, int]) -> None:
        self.post(pygame.MOUSEBUTTONDOWN, pos=pos, button=1)

    def release(self, pos: tuple[int, int]) -> None:
        self.post(pygame.MOUSEBUTTONUP, pos=pos, button=1)

    def click(self, pos: tuple[int, int]) -> None:
        self.press(pos)
        self.release(pos)
        self.frame()

    def click_cell(self, cell: int) -> None:
        self.click(self.cell_pos(cell))

    def click_button(self, name: str) -> None:
        self.click(self.button_pos(name))

    def key(self, key: int, mod: int = 0) -> None:
        self.post(pygame.KEYDOWN, key=key, mod=mod, unicode="")
        self.frame()

    def tap(self, pos: tuple[int, int]) -> None:
        """A finger tap: FINGERDOWN/UP with normalised coordinates (and SDL's synthetic mouse copies)."""
        w, h = self.app.viewport.mapping.window
        x, y = pos[0] / w, pos[1] / h
        self.post(pygame.FINGERDOWN, x=x, y=y, dx=0.0, dy=0.0, touch_id=1, finger_id=1, pressure=1.0)
        self.post(pygame.MOUSEBUTTONDOWN, pos=pos, button=1, touch=True)
        self.post(pygame.FINGERUP, x=x, y=y, dx=0.0, dy=0.0, touch_id=1, finger_id=1, pressure=0.0)
        self.post(pygame.MOUSEBUTTONUP, pos=pos, button=1, touch=True)
        self.frame()

    def pixel(self, logical: tuple[int, int]) -> tuple[int, int, int]:
        """A pixel of the logical canvas as last drawn."""
        c = self.app.screenshot().get_at(logical)
        return (c.r, c.g, c.b)

    def close(self) -> None:
        self.app.close()
