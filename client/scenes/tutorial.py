"""The interactive tutorial: the real match screen on a scripted match, with a coach.

It composes the match screen (a :class:`GameScene` of its own, on a :class:`TutorialMatch`) and
never changes it: the board, numbers, mode bar, End turn and the final reveal are the ones a match
has, fed by the real engine (:mod:`mineduel.client.tutorial_script` is the script). On top of it:

* a coach card with one or two sentences per step, *Next* where a step only explains, and *Skip
  tutorial* always; it sits where the window shows it and never over what the step points at;
* a pulsing ring on the one thing to touch (a cell, a mode button, End turn or *Next*) and a
  steady ring on the cells the sentence talks about;
* every other input gently refused: nothing reaches the match, the card says what to do instead
  (touch the ringed cell, use the arrow keys and Enter, wait for the opponent);
* the same input as a match: mouse, touch, and keys (arrows move, Enter/Space act, F flag,
  1–4 modes, E end turn; Tab reaches the card's buttons, Escape skips);
* progress kept in the settings (``tutorial``: ``step-N`` at each step, ``done`` at the end,
  ``skipped``): a tutorial left half-way resumes at its step (the moves before it replayed).
  A kiosk keeps it only for the current player (``Context.save_settings``).

It is pushed over the screen it was opened from; when it ends it pops itself, and a match screen
without a match (the first launch, the start popup) shows its start popup again.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pygame

from mineduel.client import tutorial_script as script
from mineduel.client.scenes.base import Context, Scene
from mineduel.client.scenes.game import MODE_KEYS, GameScene
from mineduel.client.scenes.match_paint import STATUS
from mineduel.client.tutorial_match import TutorialMatch
from mineduel.client.tutorial_script import Kind, Step
from mineduel.client.ui import palette, shapes
from mineduel.client.ui.input import InputEvent, KeyEvent, PointerEvent, PointerKind
from mineduel.client.ui.text import blit_paragraph, blit_text, paragraph_height
from mineduel.client.ui.widgets import Button, WidgetGroup

PAD = 16
TEXT_SIZE = 16
HINT_SIZE = 14
PULSE_PERIOD = 1.2  # seconds per pulse of the ring
PULSE_LEVELS = 8  # the ring's brightness steps (each step redraws only the ring)
SHAKE_TIME = 0.3
ARROW_KEYS = (pygame.K_LEFT, pygame.K_RIGHT, pygame.K_UP, pygame.K_DOWN)
ACT_KEYS = (pygame.K_RETURN, pygame.K_KP_ENTER, pygame.K_SPACE)


def open_tutorial(ctx: Context) -> None:
    """Start the tutorial over the current screen: at the saved step if one was left half-way."""
    saved = script.parse_progress(ctx.settings.tutorial)
    ctx.stack.close_popup()
    ctx.stack.push(TutorialScene(ctx, start=saved or 0))


class TutorialSession:
    """The match screen's :class:`~mineduel.client.scenes.game.Session` inside the tutorial."""

    difficulty: str | None = None
    can_restart = False
    language_button = False

    def __init__(self, match: TutorialMatch) -> None:
        self.match = match

    def begin(self, scene: GameScene) -> None:
        scene.attach(self.match)

    def restart(self, scene: GameScene) -> None:
        """Not offered: the coach's Skip is the way out."""

    def to_lobby(self, scene: GameScene) -> None:
        """No room."""


class CoachCard:
    """The coach card: step n/13, the step's sentences, a hint after a refused input, Skip and Next.

    It sits at the top of what the window shows (over the header and the status line), or at the
    bottom when the top would cover what the step points at.
    """

    def __init__(self, scene: TutorialScene) -> None:
        self.scene = scene
        self.ctx = scene.ctx
        self.widgets = WidgetGroup(scene.ctx.invalidate, lambda: self.ctx.keyboard)
        self.rect = pygame.Rect(8, 8, 374, 120)
        self.hint: str | None = None
        self.hint_at: float | None = None
        self.pulse = -1
        self.visible = self.ctx.visible()
        self._text_y = self._hint_y = 0

    def text(self) -> str:
        return self.ctx.t(self.scene.step.text_key)

    def layout(self) -> None:
        ctx, scene = self.ctx, self.scene
        visible = ctx.visible()
        self.visible = visible.copy()
        width = 374
        inner = width - 2 * PAD
        text_h = paragraph_height(ctx.fonts, self.text(), TEXT_SIZE, inner)
        hint_h = paragraph_height(ctx.fonts, ctx.t(self.hint), HINT_SIZE, inner - 22) + 8 if self.hint else 0
        last = scene.index + 1 >= len(script.STEPS)
        has_next = scene.step.kind is Kind.NEXT
        height = PAD + 44 + 6 + text_h + hint_h + (56 if has_next else 0) + PAD
        avoid = [r for r in [scene.target_rect(), *scene.ring_rects()] if r is not None]
        top = pygame.Rect(8, visible.top + 8, width, height)
        if visible.top < STATUS.bottom and top.bottom < STATUS.bottom + 2:
            grown = pygame.Rect(8, top.top, width, STATUS.bottom + 2 - top.top)  # covers the status line whole
            if not any(grown.colliderect(r) for r in avoid):
                top = grown
        bottom = pygame.Rect(8, visible.bottom - 8 - height, width, height)
        hides = any(top.colliderect(r) for r in avoid) and not any(bottom.colliderect(r) for r in avoid)
        self.rect = card = bottom if hides else top
        skip_w = min(180, max(96, ctx.fonts.width(ctx.t("tutorial.skip"), 14, True) + 28))
        buttons = [Button(pygame.Rect(card.right - PAD + 6 - skip_w, card.top + 8, skip_w, 44), lambda: ctx.t("tutorial.skip"),
                          scene.skip, style="ghost", text_size=14, name="tutorial.skip")]
        if has_next:
            label = "tutorial.finish" if last else "tutorial.next"
            buttons.append(Button(pygame.Rect(card.right - PAD - 150, card.bottom - PAD - 46, 150, 46),
                                  lambda: ctx.t(label), scene.next, style="primary", text_size=17, name="tutorial.next"))
        self.widgets.set(buttons)
        self._text_y = card.top + PAD + 44 + 6
        self._hint_y = self._text_y + text_h + 8
        ctx.invalidate(None)

    def refuse(self, hint: str) -> None:
        """Nothing happens; the card says what to do instead (and gives a little shake)."""
        self.hint_at = self.ctx.clock()
        if hint != self.hint:
            self.hint = hint
            self.layout()
        self.ctx.invalidate(self.rect.inflate(16, 8))

    def update(self, now: float) -> None:
        if self.ctx.visible() != self.visible:  # the window scrolled or was resized
            self.layout()
        level = self.pulse_level(now)
        if level != self.pulse:
            self.pulse = level
            for rect in self.pulse_rects():
                self.ctx.invalidate(rect.inflate(8, 8))
        if self.hint_at is not None:
            if now - self.hint_at >= SHAKE_TIME:
                self.hint_at = None
            self.ctx.invalidate(self.rect.inflate(16, 8))

    @staticmethod
    def pulse_level(now: float) -> int:
        phase = (now % PULSE_PERIOD) / PULSE_PERIOD
        return round((0.5 - 0.5 * math.cos(phase * 2 * math.pi)) * (PULSE_LEVELS - 1))

    def pulse_rects(self) -> list[pygame.Rect]:
        """Where the pulsing ring goes: the one thing to touch."""
        expected = self.scene.expected()
        if expected is None:
            return []
        if expected[0] == "next":
            return [self.widgets.by_name("tutorial.next").rect.inflate(10, 10)]
        target = self.scene.target_rect()
        return [] if target is None else [target.inflate(10, 10)]

    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        ctx = self.ctx
        dx = 0
        if self.hint_at is not None:
            t = min(1.0, (ctx.clock() - self.hint_at) / SHAKE_TIME)
            dx = round(math.sin(t * math.pi * 5) * 5 * (1 - t))
        card = self.rect
        canvas.blit(shapes.shadow(card.size, 18, palette.SHADOW, 80, 12), (card.x - 12, card.y - 8))
        face = shapes.rounded(card.size, 18, palette.CARD, 2, palette.PRIMARY)
        canvas.blit(face, card)
        canvas.blit(face, card)  # twice: the smoothed edge leaves the face a hair short of opaque
        inner = card.width - 2 * PAD
        # The badge and the step count: "Tutorial 3/13".
        canvas.blit(shapes.circle(30, palette.PRIMARY), (card.left + PAD, card.top + 15))
        canvas.blit(shapes.icon("rules", 18, palette.INK_DARK), (card.left + PAD + 6, card.top + 21))
        label = ctx.t("tutorial.progress", step=self.scene.index + 1, steps=len(script.STEPS))
        skip = self.widgets.by_name("tutorial.skip").rect
        size = ctx.fonts.fit_size(label, 15, skip.left - card.left - PAD - 46, True)
        blit_text(canvas, ctx.fonts, label, size, palette.INK_SOFT, bold=True, midleft=(card.left + PAD + 40, card.top + 30))
        blit_paragraph(canvas, ctx.fonts, self.text(), TEXT_SIZE, palette.INK,
                       pygame.Rect(card.left + PAD, self._text_y, inner, card.bottom - self._text_y))
        if self.hint:
            x = card.left + PAD + dx
            canvas.blit(shapes.icon("warning", 16, palette.PRIMARY), (x, self._hint_y + 1))
            blit_paragraph(canvas, ctx.fonts, ctx.t(self.hint), HINT_SIZE, palette.PRIMARY,
                           pygame.Rect(x + 22, self._hint_y, inner - 22, card.bottom - self._hint_y))
        self.widgets.draw(canvas, ctx.fonts, area)


class TutorialInput:
    """What reaches the match screen: only the step's one input; everything else is refused gently."""

    def __init__(self, scene: TutorialScene) -> None:
        self.scene = scene
        self._pressed: str | None = None  # what a press went down on: "pass" (forwarded), "refuse", or nothing

    def refusal(self) -> str:
        """The hint for an input that is not the step's."""
        expected = self.scene.expected()
        if expected is None:
            return "tutorial.hint.wait"
        kind = expected[0]
        if kind == "next":
            return "tutorial.hint.next"
        if kind == "button":
            return "tutorial.hint.button"
        return "tutorial.hint.keys" if self.scene.ctx.keyboard else "tutorial.hint.cell"

    def pointer(self, event: PointerEvent) -> bool:
        scene = self.scene
        card = scene.card
        if card.widgets.handle(event):
            return True
        if event.kind is PointerKind.MOVE:
            scene.game.process_event(event)  # hover only: a move does nothing else
            return True
        if event.kind is PointerKind.CANCEL:
            self._pressed = None
            scene.game.process_event(event)
            return False
        if event.kind is PointerKind.DOWN:
            if card.rect.collidepoint(event.pos):
                self._pressed = None
            elif self._allowed_at(event.pos):
                self._pressed = "pass"
                scene.game.process_event(event)
            else:
                self._pressed = "refuse" if self._touchable(event.pos) else None
            return True
        pressed, self._pressed = self._pressed, None  # UP
        if pressed == "pass":
            scene.game.process_event(event)
        elif pressed == "refuse":
            card.refuse(self.refusal())
        return True

    def _touchable(self, pos: tuple[float, float]) -> bool:
        """A cell or a button of the match screen (a press elsewhere is just ignored)."""
        game = self.scene.game
        return game.board.cell_at(pos) is not None or any(b.contains(pos) for b in game.widgets.buttons)

    def _allowed_at(self, pos: tuple[float, float]) -> bool:
        expected = self.scene.expected()
        if expected is None:
            return False
        kind, what = expected
        if kind == "cell":
            return self.scene.game.board.cell_at(pos) == what
        if kind == "button":
            return bool(self.scene.game.widgets.by_name(str(what)).contains(pos))
        return False

    def key(self, event: KeyEvent) -> bool:
        scene = self.scene
        key, game, card = event.key, scene.game, scene.card
        if key == pygame.K_ESCAPE:
            scene.skip()
            return True
        if key == pygame.K_TAB:
            card.widgets.handle(event)
            scene.ctx.invalidate(card.rect.inflate(16, 16))
            return True
        if key in ARROW_KEYS:
            card.widgets.clear_focus()
            game.process_event(event)
            return True
        if key in ACT_KEYS and card.widgets.focused() is not None:
            return card.widgets.handle(event)
        expected = scene.expected()
        kind, what = expected if expected is not None else ("", "")
        step_cell = None if scene.step.action is None else scene.step.action.cell
        if key in ACT_KEYS:
            if kind == "next":
                scene.next()
            elif kind == "button":
                scene.press(str(what))
            elif kind == "cell" and game.focus_cell == what:
                game.process_event(event)
            else:
                card.refuse(self.refusal() if kind != "cell" else "tutorial.hint.keys")
        elif key == pygame.K_f and kind in ("cell", "button") and scene.step.mode == "flag":
            if game.focus_cell == step_cell:
                game.process_event(event)  # F: flag mode and the flag at once
            else:
                card.refuse("tutorial.hint.keys")
        elif (key in MODE_KEYS and kind == "button" and what == f"mode:{MODE_KEYS[key]}") or (
                key == pygame.K_e and kind == "button" and what == "end_turn"):
            game.process_event(event)
        elif key in (pygame.K_f, pygame.K_u, pygame.K_e, *MODE_KEYS):
            card.refuse(self.refusal())
        else:
            return False
        return True


class TutorialScene(Scene):
    """See the module docstring."""

    def __init__(self, ctx: Context, start: int = 0) -> None:
        super().__init__(ctx)
        self.index = script.resume_point(start)
        self.match = TutorialMatch(script.state_at(self.index), clock=ctx.clock)
        self.game = GameScene(ctx, TutorialSession(self.match))
        self.card = CoachCard(self)
        self.input = TutorialInput(self)
        self.finished = False
        self._done_at = len(self.match.actions)

    # ----- the step ---------------------------------------------------------------------------
    @property
    def step(self) -> Step:
        return script.STEPS[self.index]

    def enter(self) -> None:
        self.game.enter()
        self._begin_step()

    def leave(self) -> None:
        self.game.detach()

    def pause(self, reason: str) -> None:
        self.game.pause(reason)

    def resume(self, reason: str) -> None:
        self.game.resume(reason)

    def _begin_step(self) -> None:
        """Show the current step: progress saved, the card laid out, its target brought into view."""
        self.card.hint = None
        self._done_at = len(self.match.actions)
        self.ctx.save_settings(replace(self.ctx.settings, tutorial=script.progress_value(self.index)))
        self.card.layout()
        target = self.target_rect()
        if target is not None:
            self.ctx.ensure_visible(target)
            self.card.layout()
        self.ctx.invalidate(None)

    def _next_step(self) -> None:
        if self.index + 1 >= len(script.STEPS):
            self.finish(done=True)
            return
        self.index += 1
        self._begin_step()

    def _check_progress(self) -> None:
        """Move on when the step's move was played (its opponent moves queued) or the opponent is done."""
        step = self.step
        if step.kind in (Kind.CELL, Kind.BUTTON):
            if step.action in self.match.actions[self._done_at:]:
                if step.opponent:
                    self.match.queue(step.opponent)
                self._next_step()
        elif step.kind is Kind.WATCH:
            state = self.match.state
            over = state.outcome() is not None and self.game.ended is not None
            if not self.match.opponent_busy and (over or state.to_move == script.PLAYER):
                self._next_step()

    def next(self) -> None:
        """The card's Next (Finish on the last step)."""
        if self.step.kind is Kind.NEXT:
            self._next_step()

    def skip(self) -> None:
        self.finish(done=False)

    def finish(self, *, done: bool) -> None:
        """Leave: ``done`` after the last step, else skipped. A match screen without a match begins again."""
        if self.finished:
            return
        self.finished = True
        self.ctx.save_settings(replace(self.ctx.settings, tutorial="done" if done else "skipped"))
        stack = self.ctx.stack
        if stack.top is self:
            stack.pop()
        below = stack.top
        if isinstance(below, GameScene) and below.controller is None and stack.popup is None:
            below.session.begin(below)  # the first launch or the start popup: offer the match again

    def press(self, name: str) -> None:
        """Enter on a button step: the ringed button, as if touched."""
        button = self.game.widgets.by_name(name)
        if button.enabled:
            button.on_click()
        else:
            self.card.refuse("tutorial.hint.wait")

    # ----- what the step points at ----------------------------------------------------------------
    def expected(self) -> tuple[str, str | int] | None:
        """The one thing to touch now: ("cell", cell), ("button", name) or ("next", "next")."""
        step = self.step
        if step.kind is Kind.NEXT:
            return ("next", "next")
        if step.kind is Kind.BUTTON and step.button is not None:
            return ("button", step.button)
        if step.kind is Kind.CELL and step.action is not None and step.action.cell is not None:
            if step.mode is not None and self.game.mode != step.mode:
                return ("button", f"mode:{step.mode}")
            return ("cell", step.action.cell)
        return None

    def target_rect(self) -> pygame.Rect | None:
        expected = self.expected()
        if expected is None or expected[0] == "next":
            return None  # Next is on the card
        kind, what = expected
        if kind == "cell":
            assert isinstance(what, int)
            return self.game.board.cell_rect(what)
        return self.game.widgets.by_name(str(what)).rect.copy()

    def ring_rects(self) -> list[pygame.Rect]:
        """The cells the step's sentences talk about (a steady ring)."""
        return [self.game.board.cell_rect(c).inflate(8, 8) for c in self.step.ring]

    # ----- input and the frame ---------------------------------------------------------------------
    def process_event(self, event: InputEvent) -> bool:
        if self.finished:
            return True
        if isinstance(event, PointerEvent):
            handled = self.input.pointer(event)
        elif isinstance(event, KeyEvent):
            handled = self.input.key(event)
        else:
            return False  # the wheel scrolls a short window
        if not self.finished:
            self._check_progress()
        return handled

    def update(self, now: float) -> None:
        if self.finished:
            return
        self.game.update(now)
        if self.game.ended is not None and not self.game.viewing_board:
            self.game.viewing_board = True  # the coach explains the end: no result popup over it
            self.game.controls.refresh()
        self._check_progress()
        if not self.finished:
            self.card.update(now)

    def next_wakeup(self, now: float) -> float | None:
        times = [t for t in (self.game.next_wakeup(now),) if t is not None]
        if self.card.pulse_rects():
            times.append(now + PULSE_PERIOD / (2 * (PULSE_LEVELS - 1)))
        if self.card.hint_at is not None:
            times.append(now)
        return min(times) if times else None

    def relayout(self) -> None:
        self.game.relayout()
        self.card.layout()

    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        self.game.draw(canvas, area)
        for rect in self.ring_rects():
            if rect.colliderect(area):
                canvas.blit(shapes.ring(rect.size, 11, (*palette.PRIMARY, 150), 2), rect)
        alpha = 90 + round(165 * max(0, self.card.pulse) / (PULSE_LEVELS - 1))
        for rect in self.card.pulse_rects():
            if rect.colliderect(area):
                canvas.blit(shapes.ring(rect.size, 14, (*palette.PRIMARY, alpha), 4), rect)
        if self.card.rect.inflate(16, 16).colliderect(area):
            self.card.draw(canvas, area)
