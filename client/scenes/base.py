"""Scenes, popups and the stack that runs them (after Tuxemon's State/StateManager, STYLE.md).

A scene has ``process_event`` (consume or not), ``update(now)`` and ``draw(canvas, area)``, plus
``pause``/``resume`` when something covers or uncovers it. Popups are scenes drawn over the top
scene with a scrim. Rules kept here, not in each screen (U2, U3):

* at most one popup: opening one replaces the open one;
* while a popup is open it gets every input event, the scene below gets none (U3);
* a closable popup closes on a background click only when both the press and the release
  happen outside its card; Escape closes a closable popup; a popup that is not closable (the
  result, the first language choice, the start popup) ignores both (U2).

Everything a scene needs arrives in an explicit :class:`Context` — no globals.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import pygame

from mineduel.client.i18n import LANGUAGES
from mineduel.client.ui import palette, shapes
from mineduel.client.ui.input import InputEvent, KeyEvent, PointerEvent, PointerKind
from mineduel.client.ui.widgets import WidgetGroup

if TYPE_CHECKING:
    from mineduel.client.controller import MatchController
    from mineduel.client.i18n import Translator
    from mineduel.client.online_client import OnlineClient, OnlineServices
    from mineduel.client.records import RecordStore
    from mineduel.client.settings import Settings, SettingsStore
    from mineduel.client.ui.text import FontBook

log = logging.getLogger(__name__)

SIZE = (390, 844)


@dataclass(frozen=True, slots=True)
class Allowed:
    """What players may do here: everything on a personal computer, less on a kiosk (client/kiosk.py)."""

    quit: bool = True  # the menus' Quit game entry
    online: bool = True  # the menu's Online play entry
    files: bool = True  # Export record, and the line saying where a record was saved
    save_settings: bool = True  # a chosen language is remembered between runs (U5)


class NewCpuMatch(Protocol):
    """Makes the CPU match the rules popup's Start asks for (client/app.py: a ``CpuMatch``)."""

    def __call__(self, *, difficulty: str, seed: int | None) -> MatchController: ...


@dataclass(eq=False)
class Context:
    """Everything scenes share, passed explicitly (no session singleton)."""

    clock: Callable[[], float]
    tr: Translator
    fonts: FontBook
    settings_store: SettingsStore
    settings: Settings
    records: RecordStore
    invalidate: Callable[[pygame.Rect | None], None]
    new_cpu_match: NewCpuMatch
    quit: Callable[[], None]
    ensure_visible: Callable[[pygame.Rect], None] = lambda rect: None
    online_services: Callable[[], OnlineServices] | None = None  # the online screens' network services (client/net.py)
    # A fresh online session on these services, pumped by the app's frame loop from now on.
    open_session: Callable[[OnlineServices], OnlineClient] | None = None
    size: tuple[int, int] = SIZE
    keyboard: bool = False  # the last input came from the keyboard: show focus rings
    allowed: Allowed = Allowed()
    languages: tuple[str, ...] = LANGUAGES  # what the language pickers offer, in this order
    stack: SceneStack = field(init=False)

    def t(self, key: str, **params: object) -> str:
        return self.tr.t(key, **params)

    def save_settings(self, settings: Settings) -> None:
        self.settings = settings
        if self.allowed.save_settings:
            self.settings_store.save(settings)


class Scene:
    """One screen (or, via :class:`Popup`, one overlay)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    # lifecycle
    def enter(self) -> None:
        """Pushed on the stack."""

    def leave(self) -> None:
        """Removed from the stack."""

    def pause(self, reason: str) -> None:
        """Something covers this scene (``"popup"``) or the window is not watched (AI6)."""

    def resume(self, reason: str) -> None:
        """The cover is gone."""

    def relayout(self) -> None:
        """The language changed: rebuild anything sized by text."""

    # frame
    def process_event(self, event: InputEvent) -> bool:
        return False

    def update(self, now: float) -> None:
        pass

    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        pass

    def next_wakeup(self, now: float) -> float | None:
        """When this scene next needs a frame (an animation step), ``None`` when idle."""
        return None


class Popup(Scene):
    """A card over the scene below. Subclasses set ``card`` and fill ``widgets``."""

    closable = True
    #: Shown while the popup is open: the scrim's colour.
    scrim = palette.SCRIM
    appear_time = 0.16

    def __init__(self, ctx: Context, card_height: int = 420, card_width: int = 346) -> None:
        super().__init__(ctx)
        w, h = ctx.size
        self.card = pygame.Rect(0, 0, card_width, card_height)
        self.card.center = (w // 2, h // 2)
        self.widgets = WidgetGroup(ctx.invalidate, lambda: self.ctx.keyboard)
        self._down_outside = False
        self._opened_at: float | None = None
        self.closed = False

    def set_card_height(self, height: int) -> None:
        w, h = self.ctx.size
        self.card = pygame.Rect(0, 0, self.card.width, min(height, h - 24))
        self.card.center = (w // 2, h // 2)

    # U2: close rules live here, once.
    def process_event(self, event: InputEvent) -> bool:
        if isinstance(event, PointerEvent):
            inside = self.card.collidepoint(event.pos)
            if event.kind is PointerKind.CANCEL:
                self._down_outside = False
                self.handle_card_event(event)
                return True
            if event.kind is PointerKind.DOWN:
                self._down_outside = not inside
            elif event.kind is PointerKind.UP:
                down_outside, self._down_outside = self._down_outside, False
                if down_outside and not inside:
                    if self.closable:
                        self.dismiss()
                    return True
            if inside or event.kind is not PointerKind.DOWN:
                self.handle_card_event(event)
            return True  # modal: nothing reaches the scene below
        if isinstance(event, KeyEvent) and event.key == pygame.K_ESCAPE:
            if self.closable:
                self.dismiss()
            return True
        self.handle_card_event(event)
        return True

    def handle_card_event(self, event: InputEvent) -> bool:
        return self.widgets.handle(event)

    def dismiss(self) -> None:
        """Close by background click or Escape (only called when closable)."""
        self.close()

    def close(self) -> None:
        self.ctx.stack.close_popup(self)

    # drawing
    def progress(self, now: float) -> float:
        if self._opened_at is None:
            return 1.0
        t = (now - self._opened_at) / self.appear_time
        return 1.0 if t >= 1 else max(0.0, t)

    def enter(self) -> None:
        self._opened_at = self.ctx.clock()

    def update(self, now: float) -> None:
        if self._opened_at is not None:
            if self.progress(now) >= 1.0:
                self._opened_at = None
            self.ctx.invalidate(None)

    def next_wakeup(self, now: float) -> float | None:
        return now if self._opened_at is not None else None

    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        p = self.progress(self.ctx.clock())
        ease = 1 - (1 - p) ** 3
        r, g, b, a = self.scrim
        canvas.blit(shapes.scrim(self.ctx.size, (r, g, b, round(a * ease))), (0, 0))
        offset = round((1 - ease) * 18)
        self._shift(offset)
        try:
            card = self.card
            if card.inflate(40, 40).colliderect(area):
                canvas.blit(shapes.shadow(card.size, 22, palette.SHADOW, 70, 18), (card.x - 18, card.y - 12))
                canvas.blit(shapes.rounded(card.size, 22, palette.CARD), card)
                self.draw_content(canvas, card)
                self.widgets.draw(canvas, self.ctx.fonts, area)
        finally:
            self._shift(-offset)

    def _shift(self, dy: int) -> None:
        """Move the card and its buttons by ``dy`` (the appear animation slides them up)."""
        if dy:
            self.card.move_ip(0, dy)
            for b in self.widgets.buttons:
                b.rect.move_ip(0, dy)

    def draw_content(self, surface: pygame.Surface, card: pygame.Rect) -> None:
        """Everything on the card except the buttons."""


class SceneStack:
    """Base scenes (the top one is shown and gets input) plus at most one popup (U2)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        ctx.stack = self
        self.scenes: list[Scene] = []
        self.popup: Popup | None = None
        self._attention: set[str] = set()  # window-level pause reasons (AI6)

    @property
    def top(self) -> Scene | None:
        return self.scenes[-1] if self.scenes else None

    # ----- base scenes ------------------------------------------------------------------------
    def push(self, scene: Scene) -> None:
        if self.top is not None:
            self.top.pause("covered")
        self.scenes.append(scene)
        scene.enter()
        for reason in self._attention:
            scene.pause(reason)
        if self.popup is not None:
            scene.pause("popup")
        self.ctx.invalidate(None)

    def pop(self) -> Scene:
        scene = self.scenes.pop()
        scene.leave()
        if self.top is not None:
            self.top.resume("covered")
            self.top.relayout()
        self.ctx.invalidate(None)
        return scene

    def replace(self, scene: Scene) -> None:
        while self.scenes:
            self.scenes.pop().leave()
        self.push(scene)

    def abandon(self) -> None:
        """Drop the popup and every scene, resuming none (a frame failed: ``App.show_problem``).

        Each is still told it leaves (the online screen closes its connection); one that fails to
        is logged and dropped all the same.
        """
        popup, self.popup = self.popup, None
        scenes, self.scenes = self.scenes, []
        if popup is not None:
            popup.closed = True
        for scene in ([] if popup is None else [popup]) + scenes[::-1]:
            try:
                scene.leave()
            except Exception:
                log.exception("%s failed to leave", type(scene).__name__)
        self.ctx.invalidate(None)

    # ----- the popup ----------------------------------------------------------------------------
    def open_popup(self, popup: Popup) -> None:
        """Show ``popup``; one already open is closed first (U2: at most one)."""
        if self.popup is not None:
            old, self.popup = self.popup, None
            old.closed = True
            old.leave()
            for scene in self.scenes:
                scene.resume("popup")
        self.popup = popup
        popup.enter()
        for scene in self.scenes:
            scene.pause("popup")  # AI6: the CPU countdown stops while a popup is open
        self.ctx.invalidate(None)

    def close_popup(self, popup: Popup | None = None) -> None:
        if self.popup is None or (popup is not None and popup is not self.popup):
            return
        old, self.popup = self.popup, None
        old.closed = True
        old.leave()
        for scene in self.scenes:
            scene.resume("popup")
        self.ctx.invalidate(None)

    # ----- window attention (AI6) -------------------------------------------------------------
    def set_attention(self, reason: str, away: bool) -> None:
        """The window is minimised / hidden / unfocused (``away``) or back."""
        if away == (reason in self._attention):
            return
        if away:
            self._attention.add(reason)
        else:
            self._attention.discard(reason)
        for scene in self.scenes:
            (scene.pause if away else scene.resume)(reason)

    @property
    def away(self) -> bool:
        return bool(self._attention)

    # ----- the frame ------------------------------------------------------------------------------
    def process_event(self, event: InputEvent) -> bool:
        if self.popup is not None:
            return self.popup.process_event(event)
        top = self.top
        return top.process_event(event) if top is not None else False

    def update(self, now: float) -> None:
        # Every base scene updates (the game below a covering scene still runs its match).
        for scene in list(self.scenes):
            scene.update(now)
        if self.popup is not None:
            self.popup.update(now)

    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        canvas.set_clip(area)
        try:
            top = self.top
            if top is not None:
                top.draw(canvas, area)
            else:
                canvas.fill(palette.BACKGROUND, area)
            if self.popup is not None:
                self.popup.draw(canvas, area)
        finally:
            canvas.set_clip(None)

    def next_wakeup(self, now: float) -> float | None:
        times = [t for s in [*self.scenes, self.popup] if s is not None for t in [s.next_wakeup(now)] if t is not None]
        return min(times) if times else None

    def relayout(self) -> None:
        for scene in self.scenes:
            scene.relayout()
        if self.popup is not None:
            self.popup.relayout()
        self.ctx.invalidate(None)
