"""The small popup that offers the tutorial: at the first launch right after the language is chosen,
and at a launch after a tutorial was left half-way (then it offers to continue it).

It is a choice, not a notice: it closes only by one of its two buttons (U2: not closable), so the
start popup that follows is never reached by accident.
"""

from __future__ import annotations

from collections.abc import Callable

import pygame

from mineduel.client.scenes.base import Context, Popup
from mineduel.client.scenes.popups import BUTTON_H, PAD, TITLE_SIZE
from mineduel.client.ui import palette, shapes
from mineduel.client.ui.text import blit_paragraph, paragraph_height
from mineduel.client.ui.widgets import Button

BODY = 16


class TutorialOfferPopup(Popup):
    """*Learn by playing* (or *Continue* at ``resume_step``) / *Skip*."""

    closable = False

    def __init__(self, ctx: Context, *, on_learn: Callable[[], None], on_skip: Callable[[], None],
                 resume_step: int | None = None, steps: int = 0) -> None:
        self.on_learn = on_learn
        self.on_skip = on_skip
        self.resume_step = resume_step
        self.steps = steps
        super().__init__(ctx)
        self.relayout()

    def _title(self) -> str:
        return self.ctx.t("tutorial.offer.resume_title" if self.resume_step is not None else "tutorial.offer.title")

    def _body(self) -> str:
        if self.resume_step is not None:
            return self.ctx.t("tutorial.offer.resume_body", step=self.resume_step + 1, steps=self.steps)
        return self.ctx.t("tutorial.offer.body")

    def relayout(self) -> None:
        ctx = self.ctx
        inner = self.card.width - 2 * PAD
        self._title_h = paragraph_height(ctx.fonts, self._title(), TITLE_SIZE, inner, bold=True)
        self._body_h = paragraph_height(ctx.fonts, self._body(), BODY, inner)
        height = PAD + 64 + self._title_h + 10 + self._body_h + 24 + BUTTON_H + 10 + 46 + PAD
        self.set_card_height(height)
        y = self.card.top + PAD + 64 + self._title_h + 10 + self._body_h + 24
        left = self.card.left + PAD
        learn_key = "tutorial.offer.continue" if self.resume_step is not None else "tutorial.offer.learn"
        self.widgets.set([
            Button(pygame.Rect(left, y, inner, BUTTON_H), lambda: ctx.t(learn_key), self.learn, style="primary",
                   icon="explore", text_size=18, name="tutorial.learn"),
            Button(pygame.Rect(left, y + BUTTON_H + 10, inner, 46), lambda: ctx.t("tutorial.offer.skip"), self.skip,
                   style="ghost", text_size=16, name="tutorial.skip"),
        ])
        if self.widgets.focus is None:
            self.widgets.focus_name("tutorial.learn")

    def learn(self) -> None:
        self.close()
        self.on_learn()

    def skip(self) -> None:
        self.close()
        self.on_skip()

    def draw_content(self, surface: pygame.Surface, card: pygame.Rect) -> None:
        ctx = self.ctx
        inner = card.width - 2 * PAD
        badge = pygame.Rect(0, 0, 52, 52)
        badge.midtop = (card.centerx, card.top + PAD)
        surface.blit(shapes.circle(52, palette.mix(palette.CARD, palette.PRIMARY, 0.25)), badge)
        surface.blit(shapes.icon("rules", 30, palette.PRIMARY), (badge.x + 11, badge.y + 11))
        y = card.top + PAD + 64
        blit_paragraph(surface, ctx.fonts, self._title(), TITLE_SIZE, palette.INK,
                       pygame.Rect(card.left + PAD, y, inner, self._title_h + 4), bold=True, align="center")
        y += self._title_h + 10
        blit_paragraph(surface, ctx.fonts, self._body(), BODY, palette.INK_SOFT,
                       pygame.Rect(card.left + PAD, y, inner, self._body_h + 4), align="center")
