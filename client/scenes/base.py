"""Scenes, popups and the stack that runs them (after Tuxemon's State/StateManager, STYLE.md).

A scene has ``process_event`` (consume or not), ``update(now)`` and ``draw(canvas, area)``, plus
``pause``/``resume`` when something covers or uncovers it. Popups are scenes drawn over the top
scene with a scrim. Rules kept here, not in each screen (U2, U3):

* at most one popup: opening one replaces the open one;
* while a popup is open it gets every input event, the scene below gets none (U3);
* a closable popup closes on a background click only when both the press and the release
  happen outside its card; Escape closes a closable popup; a popup that is not closable (the
  result, the first language choice, the start popup) ignores both (U2);
* a card taller than the window shows scrolls (wheel, drag, keys), the focused button kept in view.

Everything a scene needs arrives in an explicit :class:`Context` — no globals.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import pygame

from mineduel.client.i18n import LANGUAGES
from mineduel.client.sound import SilentSounds, Sounds
from mineduel.client.ui import palette, shapes
from mineduel.client.ui.input import InputEvent, KeyEvent, PointerEvent, PointerKind, WheelEvent
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
    sounds: Sounds = field(default_factory=SilentSounds)  # ctx.sounds.play(cue): client/sound.py (silent by default)
    # The part of the canvas the window shows now (all of it, unless a short window scrolls it: U4).
    visible: Callable[[], pygame.Rect] = lambda: pygame.Rect((0, 0), SIZE)
    stack: SceneStack = field(init=False)

    def t(self, key: str, **params: object) -> str:
        return self.tr.t(key, **params)

    def save_settings(self, settings: Settings) -> None:
        self.settings = settings
        if self.allowed.save_settings:
            self.settings_store.save(settings)

    def open_tutorial(self) -> None:
        """Start (or resume) the interactive tutorial over the current screen (client/scenes/tutorial.py)."""
        from mineduel.client.scenes.tutorial import open_tutorial

        open_tutorial(self)


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


SCROLL_SLOP = 8  # canvas pixels a press moves before it becomes a drag (then it clicks nothing)
WHEEL_STEP = 48  # canvas pixels per wheel notch
FADE = 28  # the fade at a scrolling edge that says there is more


class Popup(Scene):
    """A card over the scene below. Subclasses set ``card`` (via :meth:`set_card_height`) and fill ``widgets``.

    A card taller than the window shows (``ctx.visible()``, e.g. 320×568) is cut to fit and its
    content scrolls — by wheel, by a finger or mouse drag, by PageUp/PageDown/Home/End, and to
    keep the focused button in view for keyboard users — with a fade at each edge that has more
    and a scroll bar. Layout stays in the card's own coordinates (``card`` is the whole content;
    ``frame`` the part on screen); scrolling only moves what is shown and where pointer events land.
    A subclass with its own scrolling part (the rules popup's text) overrides :meth:`scroll_area`,
    :meth:`scroll_offset`, :meth:`scroll_limit` and :meth:`set_scroll` and gets the same input.
    """

    closable = True
    #: Shown while the popup is open: the scrim's colour.
    scrim = palette.SCRIM
    appear_time = 0.16

    def __init__(self, ctx: Context, card_height: int = 420, card_width: int = 346) -> None:
        super().__init__(ctx)
        self.card = pygame.Rect(0, 0, card_width, card_height)
        self.frame = self.card.copy()
        self.card_scroll = 0
        self.widgets = WidgetGroup(ctx.invalidate, lambda: self.ctx.keyboard)
        self._down_outside = False
        self._opened_at: float | None = None
        self._drag: tuple[float, int] | None = None  # (where the press was, the offset then)
        self._dragging = False
        self._scratch: pygame.Surface | None = None
        self.closed = False
        self.set_card_height(card_height)

    def max_card_height(self) -> int:
        """The tallest card the window shows whole (a taller one scrolls)."""
        return self.ctx.visible().height - 24

    def set_card_height(self, height: int) -> None:
        """Lay the card out ``height`` tall, centred in what the window shows; cut and scrolled if taller."""
        visible = self.ctx.visible()
        self._visible = visible.copy()
        shown = max(80, min(height, visible.height - 24))
        self.frame = pygame.Rect(0, 0, self.card.width, shown)
        self.frame.center = visible.center
        self.card = pygame.Rect(self.frame.left, self.frame.top, self.card.width, max(height, shown))
        self.card_scroll = max(0, min(self.card_scroll, self.card.height - shown))

    # ----- scrolling: the whole card by default ------------------------------------------------
    def scroll_area(self) -> pygame.Rect | None:
        """Where a drag or the wheel scrolls (on screen), ``None`` when nothing needs to."""
        return self.frame if self.card.height > self.frame.height else None

    def scroll_offset(self) -> int:
        return self.card_scroll

    def scroll_limit(self) -> int:
        return self.card.height - self.frame.height

    def set_scroll(self, value: int) -> None:
        value = max(0, min(self.scroll_limit(), value))
        if value != self.card_scroll:
            self.card_scroll = value
            self.ctx.invalidate(self.frame.inflate(4, 4))

    def _scroll_by(self, dy: int) -> None:
        self.set_scroll(self.scroll_offset() + dy)

    def _to_card(self, event: PointerEvent) -> PointerEvent:
        """A pointer event in the card's layout coordinates (the whole-card scroll undone)."""
        if not self.card_scroll:
            return event
        return PointerEvent(event.kind, (event.pos[0], event.pos[1] + self.card_scroll), event.touch, event.pressed)

    def reveal_focus(self) -> None:
        """Scroll the card so the focused button is in view (keyboard users see where they are)."""
        button = self.widgets.focused()
        if button is None or self.card.height <= self.frame.height:
            return
        top = self.frame.top + self.card_scroll  # the shown part, in layout coordinates
        bottom = top + self.frame.height
        if button.rect.top - 10 < top:
            self._scroll_by(button.rect.top - 10 - top)
        elif button.rect.bottom + 10 > bottom:
            self._scroll_by(button.rect.bottom + 10 - bottom)

    # U2: close rules live here, once.
    def process_event(self, event: InputEvent) -> bool:
        if isinstance(event, WheelEvent):
            if self.scroll_area() is not None:
                self._scroll_by(-round(event.dy * WHEEL_STEP))
            return True  # modal: the window behind does not scroll either
        if isinstance(event, PointerEvent):
            inside = self.frame.collidepoint(event.pos)
            if self._drag_event(event):
                return True
            if event.kind is PointerKind.CANCEL:
                self._down_outside = False
                self.handle_card_event(self._to_card(event))
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
                self.handle_card_event(self._to_card(event))
            return True  # modal: nothing reaches the scene below
        if isinstance(event, KeyEvent) and event.key == pygame.K_ESCAPE:
            if self.closable:
                self.dismiss()
            return True
        if isinstance(event, KeyEvent) and event.key in _SCROLL_KEYS and self.scroll_area() is not None:
            area = self.scroll_area()
            assert area is not None
            page = max(40, area.height - 40)
            offset = self.scroll_offset()
            target = {pygame.K_PAGEDOWN: offset + page, pygame.K_PAGEUP: offset - page,
                      pygame.K_HOME: 0, pygame.K_END: self.scroll_limit()}[event.key]
            self.set_scroll(target)
            return True
        self.handle_card_event(event)
        if isinstance(event, KeyEvent):
            self.reveal_focus()
        return True

    def _drag_event(self, event: PointerEvent) -> bool:
        """A press that moves more than :data:`SCROLL_SLOP` scrolls instead of clicking; True when used."""
        area = self.scroll_area()
        if event.kind is PointerKind.DOWN:
            self._dragging = False
            self._drag = (event.pos[1], self.scroll_offset()) if area is not None and area.collidepoint(event.pos) else None
            return False
        drag = self._drag
        if drag is None:
            return False
        if event.kind in (PointerKind.UP, PointerKind.CANCEL):
            self._drag = None
            if self._dragging:
                self._dragging = False
                self._down_outside = False
                return True  # the drag ends: no click, no close
            return False
        if not event.pressed:
            return False
        moved = event.pos[1] - drag[0]
        if not self._dragging and abs(moved) > SCROLL_SLOP:
            self._dragging = True
            self.handle_card_event(self._to_card(PointerEvent(PointerKind.CANCEL, event.pos, event.touch)))
        if self._dragging:
            self.set_scroll(drag[1] - round(moved))
            return True
        return False

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
        if self.ctx.keyboard:
            self.reveal_focus()

    def update(self, now: float) -> None:
        if self.ctx.visible() != self._visible:  # the window was resized: fit the card again
            self.relayout()
            self.ctx.invalidate(None)
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
            frame = self.frame
            if frame.inflate(40, 40).colliderect(area):
                canvas.blit(shapes.shadow(frame.size, 22, palette.SHADOW, 70, 18), (frame.x - 18, frame.y - 12))
                canvas.blit(shapes.rounded(frame.size, 22, palette.CARD), frame)
                if self.card.height > frame.height:
                    self._draw_scrolled(canvas, area)
                else:
                    self.draw_content(canvas, self.card)
                    self.widgets.draw(canvas, self.ctx.fonts, area)
                self._draw_scroll_hint(canvas)
        finally:
            self._shift(-offset)

    def _draw_scrolled(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        """The card drawn whole in its own coordinates on a scratch surface, then the shown part copied."""
        frame, card = self.frame, self.card
        size = (card.right + 8, card.bottom + 8)
        if self._scratch is None or self._scratch.get_size() != size:
            self._scratch = pygame.Surface(size, pygame.SRCALPHA)
        scratch = self._scratch
        scratch.fill((0, 0, 0, 0))
        scratch.blit(shapes.rounded(card.size, 22, palette.CARD), card)
        self.draw_content(scratch, card)
        self.widgets.draw(scratch, self.ctx.fonts, card.inflate(16, 16))
        source = pygame.Rect(frame.left, frame.top + self.card_scroll, frame.width, frame.height)
        clip = canvas.get_clip()
        canvas.set_clip(frame.clip(clip) if clip else frame)
        canvas.blit(shapes.rounded(frame.size, 22, palette.CARD), frame)
        canvas.blit(scratch, frame, source)
        canvas.set_clip(clip)

    def _draw_scroll_hint(self, canvas: pygame.Surface) -> None:
        """Fades where more content hides, and a thin scroll bar, on whatever scrolls."""
        region = self.scroll_area()
        limit = self.scroll_limit()
        if region is None or limit <= 0:
            return
        offset = self.scroll_offset()
        if offset > 0:
            canvas.blit(_fade(region.width, flip=True), (region.left, region.top))
        if offset < limit:
            canvas.blit(_fade(region.width, flip=False), (region.left, region.bottom - FADE))
        track = pygame.Rect(region.right - 7, region.top + 8, 4, region.height - 16)
        canvas.blit(shapes.rounded(track.size, 2, palette.CARD_RAISED), track)
        total = region.height + limit
        thumb_h = max(24, round(track.height * region.height / total))
        thumb_y = track.top + round((track.height - thumb_h) * offset / limit)
        canvas.blit(shapes.rounded((4, thumb_h), 2, palette.INK_SOFT), (track.left, thumb_y))

    def _shift(self, dy: int) -> None:
        """Move the card and its buttons by ``dy`` (the appear animation slides them up)."""
        if dy:
            self.card.move_ip(0, dy)
            self.frame.move_ip(0, dy)
            for b in self.widgets.buttons:
                b.rect.move_ip(0, dy)

    def draw_content(self, surface: pygame.Surface, card: pygame.Rect) -> None:
        """Everything on the card except the buttons."""


_SCROLL_KEYS = (pygame.K_PAGEDOWN, pygame.K_PAGEUP, pygame.K_HOME, pygame.K_END)
_fades: dict[tuple[int, bool], pygame.Surface] = {}


def _fade(width: int, *, flip: bool) -> pygame.Surface:
    """The card's colour fading in towards a scrolling edge (``flip``: the top edge)."""
    key = (width, flip)
    surface = _fades.get(key)
    if surface is None:
        surface = pygame.Surface((width, FADE), pygame.SRCALPHA)
        for y in range(FADE):
            t = (y + 1) / FADE
            alpha = round(235 * (t if not flip else 1 - t + 1 / FADE) ** 1.5)
            surface.fill((*palette.CARD, max(0, min(255, alpha))), pygame.Rect(0, y, width, 1))
        _fades[key] = surface
    return surface


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
