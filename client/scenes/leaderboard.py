"""The leaderboard (issue 20, PROTOCOL.md §17): the server's top 100 and the player's own place.

Asked for (``get_leaderboard``) when the screen opens and by Refresh. The player's place comes
first, under the title, so it is in view on the smallest window too: *#57 · 1623*, or why there
is none yet (only players whose rating has settled — deviation ≤ 75 — are ranked). Then the top
100, scrolled (:class:`~mineduel.client.scenes.leaderboard_rows.ScrollRows`), the player's own row
marked; a tap on a row opens that player's profile. A refusal or a broken answer is a message here
and changes nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pygame

from mineduel.client.scenes.base import Context
from mineduel.client.scenes.leaderboard_rows import RowsScene, ScrollRows
from mineduel.client.scenes.rating_words import fit_name, rating_text
from mineduel.client.ui import palette, shapes
from mineduel.client.ui.text import blit_paragraph, blit_text, paragraph_height
from mineduel.client.ui.widgets import Button

if TYPE_CHECKING:
    from mineduel.client.scenes.online import OnlineScene

W, LEFT, INNER = 390, 8, 374
TITLE_Y = 84
ME_Y = 112
ROW_H = 46


class LeaderboardScene(RowsScene):
    """See the module docstring."""

    def __init__(self, ctx: Context, lobby: OnlineScene) -> None:
        super().__init__(ctx, lobby)
        self.rows = ScrollRows(pygame.Rect(LEFT, 230, INNER, 844 - 16 - 230), ROW_H, on_tap=self.open_row,
                               invalidate=ctx.invalidate)
        self._me_h = 60

    def refresh(self) -> None:
        players = self.players
        if players is not None and self.lobby.client is not None and self.lobby.client.connected:
            players.leaderboard = None
            players.get_leaderboard()
        self._rebuild()

    def open_row(self, index: int) -> None:
        players = self.players
        board = None if players is None else players.leaderboard
        if board is None or not 0 <= index < len(board.top):
            return
        from mineduel.client.scenes.profile import ProfileScene

        self.ctx.stack.push(ProfileScene(self.ctx, self.lobby, player=board.top[index].player))

    def _state(self) -> object:
        players = self.players
        return None if players is None else (players.leaderboard, players.leaderboard_error, players.identity)

    def _me_text(self) -> tuple[str, str | None]:
        """The player's place: (the line, a note under it or ``None``)."""
        t = self.ctx.t
        players = self.players
        board = None if players is None else players.leaderboard
        if board is None:
            return "", None
        if board.me is not None:
            return t("leaderboard.your_place", rank=board.me.rank, rating=rating_text(board.me.rating, False)), None
        if players is not None and players.identity is None:
            return t("leaderboard.not_identified"), None
        return t("leaderboard.not_ranked"), t("leaderboard.not_ranked_note")

    def _rebuild(self) -> None:
        self._seen = self._state()
        players = self.players
        board = None if players is None else players.leaderboard
        _line, note = self._me_text()
        width = INNER - 32
        self._me_h = 28 + (paragraph_height(self.ctx.fonts, note, 13, width) + 4 if note else 0) + 16
        top = ME_Y + self._me_h + 44
        shown = min(844, self.ctx.visible().height)  # a short window: the list ends where it is seen
        self.rows.rect = pygame.Rect(LEFT, top, INNER, shown - 16 - top)
        self.rows.count = 0 if board is None else len(board.top)
        self.rows.scroll_to(self.rows.offset)
        self.widgets.set([
            Button(pygame.Rect(LEFT, 8, 46, 46), lambda: "", self.back, style="ghost", icon="back", icon_color=palette.INK,
                   radius=12, name="leaderboard_back"),
            Button(pygame.Rect(W - LEFT - 46, 8, 46, 46), lambda: "", self.refresh, style="ghost", icon="restart",
                   icon_color=palette.ME_LIGHT, radius=12, name="leaderboard_refresh"),
        ])
        self.ctx.invalidate(None)

    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        ctx = self.ctx
        t = ctx.t
        fonts = ctx.fonts
        canvas.fill(palette.BACKGROUND, area)
        blit_text(canvas, fonts, t("leaderboard.title"), 22, palette.INK, bold=True, midleft=(LEFT + 4, TITLE_Y))
        self.widgets.draw(canvas, fonts, area)
        players = self.players
        board = None if players is None else players.leaderboard
        error = None if players is None else players.leaderboard_error
        if board is None:
            text = t(error) if error is not None else t("leaderboard.loading")
            color = palette.WARN if error is not None else palette.INK_SOFT
            blit_paragraph(canvas, fonts, text, 17, color, pygame.Rect(LEFT + 20, 300, INNER - 40, 120), bold=True,
                           align="center")
            return
        # My place.
        line, note = self._me_text()
        card = pygame.Rect(LEFT, ME_Y, INNER, self._me_h)
        ranked = board.me is not None
        canvas.blit(shapes.rounded(card.size, 16, palette.mix(palette.CARD, palette.ME, 0.18) if ranked else palette.CARD, 1,
                                   palette.ME if ranked else palette.CARD_BORDER), card)
        canvas.blit(shapes.icon("trophy" if ranked else "person", 20, palette.ME_LIGHT), (card.left + 14, card.top + 12))
        size = fonts.fit_size(line, 17, card.width - 60, True)
        blit_text(canvas, fonts, line, size, palette.INK, bold=True, midleft=(card.left + 44, card.top + 22))
        if note:
            blit_paragraph(canvas, fonts, note, 13, palette.INK_SOFT,
                           pygame.Rect(card.left + 16, card.top + 40, card.width - 32, card.height - 44))
        # Column heads.
        head_y = card.bottom + 24
        for text, x, anchor in ((t("leaderboard.rank"), LEFT + 14, "left"), (t("leaderboard.player"), LEFT + 62, "left"),
                                (t("leaderboard.rating"), LEFT + INNER - 86, "right"),
                                (t("leaderboard.games"), LEFT + INNER - 14, "right")):
            size = fonts.fit_size(text, 12, 80, True)
            if anchor == "left":
                blit_text(canvas, fonts, text, size, palette.INK_FAINT, bold=True, midleft=(x, head_y))
            else:
                blit_text(canvas, fonts, text, size, palette.INK_FAINT, bold=True, midright=(x, head_y))
        if not board.top:
            blit_paragraph(canvas, fonts, t("leaderboard.empty"), 15, palette.INK_SOFT,
                           pygame.Rect(LEFT + 20, self.rows.rect.top + 30, INNER - 40, 80), align="center")
            return
        mine = None if players is None or players.identity is None else players.identity.player
        self.rows.draw(canvas, lambda surface, i, rect: self._row(surface, i, rect, mine))

    def _row(self, canvas: pygame.Surface, index: int, rect: pygame.Rect, mine: str | None) -> None:
        fonts = self.ctx.fonts
        players = self.players
        board = None if players is None else players.leaderboard
        if board is None:
            return
        entry = board.top[index]
        own = entry.player == mine
        fill = palette.mix(palette.CARD, palette.ME, 0.22) if own else palette.CARD
        canvas.blit(shapes.rounded(rect.size, 12, fill, 1, palette.ME if own else palette.CARD_BORDER), rect)
        medal = {1: palette.PRIMARY, 2: palette.ME_LIGHT, 3: palette.OPP}.get(entry.rank)
        rank = str(entry.rank)
        if medal is not None:
            canvas.blit(shapes.circle(30, palette.mix(palette.CARD, medal, 0.35)), (rect.left + 8, rect.centery - 15))
        blit_text(canvas, fonts, rank, 15 if entry.rank < 100 else 13, palette.INK, bold=True,
                  center=(rect.left + 23, rect.centery))
        name_w = INNER - 54 - 160
        name, size = fit_name(fonts, entry.display, 15, name_w)
        blit_text(canvas, fonts, name, size, palette.INK, bold=True,
                  midleft=(rect.left + 54, rect.centery))
        blit_text(canvas, fonts, rating_text(entry.rating, False), 16, palette.PRIMARY, bold=True,
                  midright=(rect.right - 86, rect.centery))
        blit_text(canvas, fonts, str(entry.games), 14, palette.INK_SOFT, midright=(rect.right - 14, rect.centery))
