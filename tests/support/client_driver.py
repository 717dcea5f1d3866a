"""Drive the real client app headless: a fake clock, real pygame events, one frame at a time.

The app's frame function is called directly (no reactor), so tests control time exactly and
never sleep.
"""

from __future__ import annotations

from pathlib import Path

import pygame

from mineduel.client.app import App
from mineduel.client.scenes.game import GameScene
from mineduel.shared.rules.engine import Phase


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

    def click_named(self, name: str) -> None:
        """Click the enabled button ``name`` where a player sees it: the open popup's, else the
        match screen's open panel's, else the scene's own."""
        popup = self.app.stack.popup
        top = self.app.stack.top
        if popup is not None:
            group = popup.widgets
        elif isinstance(top, GameScene) and top.panel.open and any(b.name == name for b in top.panel.widgets.buttons):
            group = top.panel.widgets
        else:
            group = top.widgets
        button = group.by_name(name)
        assert button.enabled, name
        self.click(self.to_window(button.rect.center))

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


# ----- a deterministic human (the end-to-end and kiosk suites) ---------------------------

MY_PLAN = [27, 36, 0, 63, 7, 56, 18, 45, 9, 54, 20, 43, 11, 52, 2, 61, 16, 47, 25, 38]


def first_of(mask: int, order: list[int] = MY_PLAN) -> int:
    """The first cell of ``mask`` in a fixed order (then ascending): a deterministic human."""
    for cell in order:
        if mask >> cell & 1:
            return cell
    return (mask & -mask).bit_length() - 1


def play_to_the_end(d: Driver, *, keyboard: bool = False, max_steps: int = 400) -> None:
    """Play the human side with clicks (or keys only) until the match ends; wait for the CPU."""
    game = d.app.game
    for _ in range(max_steps):
        if game.ended is not None:
            return
        view = game.view()
        assert view is not None
        if view.to_move != view.seat:
            d.frame(0.66)  # AI6: one CPU step per 650 ms
            continue
        if view.phase is Phase.END_WAIT:
            if keyboard:
                d.key(pygame.K_e)
            else:
                d.click_button("end_turn")
            continue
        target = view.explorable
        if not target:  # C1.3/C2 hold the turn: take back one of my markers
            cell = first_of(view.recoverable)
            if keyboard:
                move_focus(d, cell)
                d.key(pygame.K_u)
            else:
                d.click_button("mode:unflag")
                d.click_cell(cell)
            continue
        cell = first_of(target)
        if keyboard:
            move_focus(d, cell)
            d.key(pygame.K_RETURN)
        else:
            d.click_cell(cell)
    raise AssertionError("the match did not end")


def move_focus(d: Driver, cell: int) -> None:
    game = d.app.game
    row, col = divmod(cell, 8)
    while game.focus_cell != cell:
        frow, fcol = divmod(game.focus_cell, 8)
        key = (pygame.K_DOWN if row > frow else pygame.K_UP) if row != frow else (pygame.K_RIGHT if col > fcol else pygame.K_LEFT)
        d.key(key)
