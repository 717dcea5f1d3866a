"""A player's profile (issue 20, PROTOCOL.md §17): rating, deviation, games and results, recent matches.

The player's own (from the online screen) or another player's (a leaderboard row), asked for with
``get_profile`` when the screen opens. The card says the rating as every screen does
(``rating_words``: ``1500?`` while provisional, with the word *Provisional*), the deviation as
``±``, then games, wins, losses and draws, then the recent rated matches (at most 20, scrolled):
result, opponent, change, date. The player's own profile ends with the player key's Export and
Import (``profile_keys.py``): how an identity moves to another computer.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pygame

from mineduel.client.scenes.base import Context
from mineduel.client.scenes.leaderboard_rows import RowsScene, ScrollRows
from mineduel.client.scenes.profile_keys import ExportKeyPopup, ImportKeyPopup
from mineduel.client.scenes.quick_match_lobby import reconnect_for_identity
from mineduel.client.scenes.rating_words import change_text, fit_name, rating_text
from mineduel.client.ui import palette, shapes
from mineduel.client.ui.text import blit_paragraph, blit_text
from mineduel.client.ui.widgets import Button
from mineduel.shared.wire.messages import Profile

if TYPE_CHECKING:
    from mineduel.client.scenes.online import OnlineScene

W, LEFT, INNER = 390, 8, 374
TITLE_Y = 84
CARD_Y = 112
STATS_Y = 272
RECENT_Y = 352
ROW_H = 50
KEYS_Y = 844 - 16 - 50
RESULT_COLORS = {"win": palette.GOOD, "loss": palette.OPP, "draw": palette.ME_LIGHT}


def date_text(at: float) -> str:
    """A match's day as ``2026-12-01`` (local time): the same in the four languages, never ambiguous."""
    try:
        return time.strftime("%Y-%m-%d", time.localtime(at))
    except (OverflowError, OSError, ValueError):
        return ""


class ProfileScene(RowsScene):
    """See the module docstring; ``player`` ``None``: the player's own profile."""

    def __init__(self, ctx: Context, lobby: OnlineScene, *, player: str | None = None) -> None:
        super().__init__(ctx, lobby)
        self.player = player
        self.rows = ScrollRows(pygame.Rect(LEFT, RECENT_Y + 34, INNER, 10), ROW_H, invalidate=ctx.invalidate)
        self.keys_y = KEYS_Y

    @property
    def own(self) -> bool:
        players = self.players
        return self.player is None or (players is not None and players.identity is not None
                                       and players.identity.player == self.player)

    def resume(self, reason: str) -> None:
        if reason == "covered":  # back from another profile: ask for this one again
            self.refresh()

    def refresh(self) -> None:
        players = self.players
        if players is not None and self.lobby.client is not None and self.lobby.client.connected:
            players.get_profile(self.player)
        self._rebuild()

    def export_key(self) -> None:
        players = self.players
        client = self.lobby.client
        if players is None or client is None or players.loaded.key is None:
            return
        self.ctx.stack.open_popup(ExportKeyPopup(self.ctx, players.loaded.key, client.services.clipboard))

    def import_key(self) -> None:
        players = self.players
        if players is None:
            return
        current = None if players.identity is None else players.identity.display
        self.ctx.stack.open_popup(ImportKeyPopup(self.ctx, players, current=current, on_done=self._imported))

    def _imported(self) -> None:
        reconnect_for_identity(self.lobby)
        self.back()

    def _profile(self) -> Profile | None:
        players = self.players
        if players is None or players.profile is None or players.profile_of != self.player:
            return None
        return players.profile

    def _state(self) -> object:
        players = self.players
        return None if players is None else (players.profile, players.profile_error, players.loaded.key is not None)

    def _rebuild(self) -> None:
        self._seen = self._state()
        t = self.ctx.t
        shown = min(844, self.ctx.visible().height)  # a short window: the key row and the list's end in view
        self.keys_y = shown - 16 - 50
        bottom = self.keys_y - 34 if self.player is None and self.ctx.allowed.files else shown - 16
        self.rows.rect = pygame.Rect(LEFT, RECENT_Y + 34, INNER, max(ROW_H, bottom - RECENT_Y - 34))
        profile = self._profile()
        self.rows.count = 0 if profile is None else len(profile.recent)
        self.rows.scroll_to(self.rows.offset)
        players = self.players
        buttons = [Button(pygame.Rect(LEFT, 8, 46, 46), lambda: "", self.back, style="ghost", icon="back",
                          icon_color=palette.INK, radius=12, name="profile_back")]
        if self.own and self.player is None and self.ctx.allowed.files:  # a kiosk: no key to carry away
            half = (INNER - 10) // 2
            has_key = players is not None and players.loaded.key is not None
            buttons += [
                Button(pygame.Rect(LEFT, self.keys_y, half, 50), lambda: t("player.export"), self.export_key, icon="export",
                       icon_color=palette.ME_LIGHT, name="key_export", enabled=has_key, text_size=15),
                Button(pygame.Rect(LEFT + half + 10, self.keys_y, INNER - half - 10, 50), lambda: t("player.import"),
                       self.import_key, icon="person", icon_color=palette.ME_LIGHT, name="key_import", text_size=15),
            ]
        self.widgets.set(buttons)
        self.ctx.invalidate(None)

    # ----- drawing ----------------------------------------------------------------------------------------
    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        ctx = self.ctx
        t = ctx.t
        fonts = ctx.fonts
        canvas.fill(palette.BACKGROUND, area)
        blit_text(canvas, fonts, t("profile.title"), 22, palette.INK, bold=True, midleft=(LEFT + 4, TITLE_Y))
        if self.player is None and self.ctx.allowed.files:
            self._key_title(canvas)
        self.widgets.draw(canvas, fonts, area)
        players = self.players
        profile = self._profile()
        error = None if players is None else players.profile_error
        if profile is None:
            text = t(error) if error is not None else t("profile.loading")
            blit_paragraph(canvas, fonts, text, 17, palette.WARN if error else palette.INK_SOFT,
                           pygame.Rect(LEFT + 20, 300, INNER - 40, 120), bold=True, align="center")
            return
        card = pygame.Rect(LEFT, CARD_Y, INNER, 148)
        canvas.blit(shapes.rounded(card.size, 18, palette.CARD, 1, palette.CARD_BORDER), card)
        canvas.blit(shapes.circle(52, palette.ME if self.own else palette.OPP), (card.left + 16, card.top + 16))
        canvas.blit(shapes.icon("person", 32, palette.ON_ACCENT), (card.left + 26, card.top + 26))
        name, size = fit_name(fonts, profile.display, 20, card.width - 100)
        blit_text(canvas, fonts, name, size, palette.INK, bold=True,
                  midleft=(card.left + 82, card.top + 32))
        if self.own:
            blit_text(canvas, fonts, t("profile.you"), 13, palette.INK_SOFT, midleft=(card.left + 82, card.top + 56))
        rating = profile.rating
        label = t("rating.label")
        blit_text(canvas, fonts, label, 13, palette.INK_SOFT, bold=True, midleft=(card.left + 18, card.top + 92))
        big = rating_text(rating.value, rating.provisional)
        r = blit_text(canvas, fonts, big, 40, palette.PRIMARY, bold=True, midleft=(card.left + 16, card.top + 122))
        dev = t("rating.deviation", deviation=str(round(rating.deviation)))
        blit_text(canvas, fonts, dev, 15, palette.INK_SOFT, midleft=(r.right + 12, card.top + 128))
        if rating.provisional:
            chip = t("rating.provisional")
            w = fonts.width(chip, 13, True) + 22
            rect = pygame.Rect(card.right - 16 - w, card.top + 110, w, 26)
            canvas.blit(shapes.rounded(rect.size, 13, palette.mix(palette.CARD, palette.WARN, 0.2)), rect)
            blit_text(canvas, fonts, chip, 13, palette.WARN, bold=True, center=rect.center)
        # Games, wins, losses, draws.
        stats = ((t("profile.games"), profile.games, palette.INK), (t("profile.wins"), profile.wins, palette.GOOD),
                 (t("profile.losses"), profile.losses, palette.OPP), (t("profile.draws"), profile.draws, palette.ME_LIGHT))
        w = (INNER - 3 * 8) // 4
        for i, (text, count, color) in enumerate(stats):
            rect = pygame.Rect(LEFT + i * (w + 8), STATS_Y, w, 66)
            canvas.blit(shapes.rounded(rect.size, 14, palette.CARD_RAISED), rect)
            blit_text(canvas, fonts, str(count), fonts.fit_size(str(count), 22, w - 10, True), color, bold=True,
                      center=(rect.centerx, rect.top + 24))
            blit_text(canvas, fonts, text, fonts.fit_size(text, 13, w - 10), palette.INK_SOFT,
                      center=(rect.centerx, rect.top + 50))
        blit_text(canvas, fonts, t("profile.recent"), 15, palette.INK_SOFT, bold=True, midleft=(LEFT + 4, RECENT_Y + 14))
        if not profile.recent:
            blit_paragraph(canvas, fonts, t("profile.no_recent"), 14, palette.INK_FAINT,
                           pygame.Rect(LEFT + 4, RECENT_Y + 38, INNER - 8, 60))
            return
        self.rows.draw(canvas, lambda surface, i, rect: self._row(surface, i, rect))

    def _key_title(self, canvas: pygame.Surface) -> None:
        blit_text(canvas, self.ctx.fonts, self.ctx.t("player.key_title"), 13, palette.INK_FAINT, bold=True,
                  midleft=(LEFT + 4, self.keys_y - 16))

    def _row(self, canvas: pygame.Surface, index: int, rect: pygame.Rect) -> None:
        ctx = self.ctx
        fonts = ctx.fonts
        profile = self._profile()
        if profile is None:
            return
        item = profile.recent[index]
        canvas.blit(shapes.rounded(rect.size, 12, palette.CARD, 1, palette.CARD_BORDER), rect)
        color = RESULT_COLORS.get(item.result, palette.INK_SOFT)
        word = ctx.t(f"profile.result.{item.result}") if item.result in RESULT_COLORS else item.result
        pill = pygame.Rect(rect.left + 8, rect.top + 10, 66, rect.height - 20)
        canvas.blit(shapes.rounded(pill.size, 10, palette.mix(palette.CARD, color, 0.28)), pill)
        blit_text(canvas, fonts, word, fonts.fit_size(word, 14, pill.width - 8, True), color, bold=True, center=pill.center)
        name_w = rect.width - 74 - 16 - 70
        name, size = fit_name(fonts, item.opponent, 15, name_w)
        blit_text(canvas, fonts, name, size, palette.INK, bold=True,
                  midleft=(pill.right + 10, rect.top + 17))
        blit_text(canvas, fonts, date_text(item.at), 12, palette.INK_FAINT, midleft=(pill.right + 10, rect.top + 36))
        change = change_text(item.change)
        tone = palette.GOOD if item.change >= 0.5 else palette.OPP if item.change <= -0.5 else palette.INK_SOFT
        blit_text(canvas, fonts, change, 17, tone, bold=True, midright=(rect.right - 14, rect.centery))
