"""The saved matches list (issue 19 item 3): the player's records, newest first, each opening the replay viewer.

It reads ``ctx.records.folder`` (client/records.py: every finished CPU and online match is kept
there) and shows for each record its result (from the player's side when the record says which seat
was the player — a CPU record's human, an online record's seat from the witness kept beside it —
else the winner's name), the opponent, the date and the length (turns and time). Only the JSON is read
here, never the engine, so a long list opens at once; a file that is not a record is listed as
unreadable and opens as the viewer's message. Seven rows a page; Previous / Next page through.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import pygame

from mineduel.client.scenes.base import Context, Scene
from mineduel.client.scenes.replay_viewer import ReplayViewer, read_record_file
from mineduel.client.ui import palette
from mineduel.client.ui.input import InputEvent, KeyEvent, PointerEvent
from mineduel.client.ui.text import blit_paragraph, blit_text, paragraph_height
from mineduel.client.ui.widgets import Button, WidgetGroup

log = logging.getLogger(__name__)

__all__ = ["PER_PAGE", "SavedMatch", "SavedMatchesScene", "list_saved", "open_saved"]

PER_PAGE = 7
W, LEFT, INNER = 390, 16, 358
LIST_Y, ROW_H, ROW_GAP = 70, 66, 8
PAGER_Y = 640


@dataclass(frozen=True, slots=True)
class SavedMatch:
    """One record file as the list shows it (``readable`` False: not a record; the rest unknown)."""

    path: Path
    when: float  # Unix time the match started (the file's time when the record does not say)
    readable: bool
    variant: str = ""
    me: int | None = None  # the player's seat, when known
    names: tuple[str, str] = ("", "")
    difficulty: str | None = None
    winner: int | None = None
    reason: str | None = None
    turns: int | None = None
    elapsed: float | None = None


def _when(times: Any, path: Path) -> float:
    started = times.get("started") if isinstance(times, dict) else None
    if isinstance(started, (int, float)) and not isinstance(started, bool):
        return float(started)
    if isinstance(started, str):
        try:
            return datetime.fromisoformat(started.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _witness_seat(folder: Path, match_id: Any) -> int | None:
    """An online record's player seat, from the witness this client kept (RECORD.md) — if any."""
    if not isinstance(match_id, str) or not match_id.isalnum():
        return None
    try:
        data = json.loads((folder.parent / "witnesses" / f"{match_id}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    seat = data.get("seat") if isinstance(data, dict) else None
    return seat if seat in (0, 1) and not isinstance(seat, bool) else None


def summarise(path: Path) -> SavedMatch:
    """What the list says about one file; never raises."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return SavedMatch(path, _when(None, path), False)
    if not isinstance(data, dict) or data.get("format") != "mine-duel-record/1" or not isinstance(data.get("actions"), list):
        return SavedMatch(path, _when(None, path), False)
    times: dict[str, Any] = data["times"] if isinstance(data.get("times"), dict) else {}
    players: list[Any] = data["players"] if isinstance(data.get("players"), list) else []
    names = ["", ""]
    me: int | None = None
    difficulty = None
    for p in players:
        if isinstance(p, dict) and p.get("seat") in (0, 1):
            seat = int(p["seat"])
            if p.get("kind") == "human":
                me = seat
            if p.get("kind") == "cpu":
                difficulty = p.get("difficulty") if isinstance(p.get("difficulty"), str) else None
                names[seat] = "\x00cpu"
            elif isinstance(p.get("name"), str):
                names[seat] = p["name"].strip()[:32]
    if data.get("variant") == "online":
        me = _witness_seat(path.parent, data.get("match_id"))
    result: dict[str, Any] = data["result"] if isinstance(data.get("result"), dict) else {}
    winner = result.get("winner") if result.get("winner") in (0, 1) else None
    turns = times.get("turns") if isinstance(times.get("turns"), int) else None
    elapsed = times.get("elapsed_seconds", times.get("elapsed"))
    return SavedMatch(path, _when(times, path), True, str(data.get("variant")), me, (names[0], names[1]), difficulty,
                      winner, result.get("reason") if isinstance(result.get("reason"), str) else None, turns,
                      float(elapsed) if isinstance(elapsed, (int, float)) and not isinstance(elapsed, bool) else None)


def list_saved(folder: Path) -> list[SavedMatch]:
    """Every ``*.json`` in the records folder, newest first (ties: the later file name first)."""
    try:
        files = [p for p in folder.glob("*.json") if p.is_file()]
    except OSError:
        return []
    return sorted((summarise(p) for p in files), key=lambda m: (m.when, m.path.name), reverse=True)


def open_saved(ctx: Context) -> None:
    """The game menu's *Saved matches*."""
    ctx.stack.push(SavedMatchesScene(ctx))


class SavedMatchesScene(Scene):
    """See the module docstring."""

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.matches = list_saved(ctx.records.folder)
        self.page = 0
        self.widgets = WidgetGroup(ctx.invalidate, lambda: self.ctx.keyboard)
        self.relayout()

    @property
    def pages(self) -> int:
        return max(1, -(-len(self.matches) // PER_PAGE))

    def shown(self) -> list[SavedMatch]:
        return self.matches[self.page * PER_PAGE:(self.page + 1) * PER_PAGE]

    @staticmethod
    def row_rect(slot: int) -> pygame.Rect:
        return pygame.Rect(LEFT, LIST_Y + slot * (ROW_H + ROW_GAP), INNER, ROW_H)

    # ----- words -------------------------------------------------------------------------------------------
    def name(self, match: SavedMatch, seat: int) -> str:
        raw = match.names[seat]
        if raw == "\x00cpu":
            level = f" ({self.ctx.t(f'difficulty.{match.difficulty}')})" if match.difficulty else ""
            return self.ctx.t("status.cpu") + level
        return raw or self.ctx.t("replay.player", n=seat + 1)

    def result_text(self, match: SavedMatch) -> tuple[str, palette.Color]:
        t = self.ctx.t
        if match.reason is None:
            return "—", palette.INK_SOFT
        if match.winner is None:
            return t("result.title.void" if match.reason == "void" else "result.title.draw"), palette.ME_LIGHT
        if match.me is not None:
            win = match.winner == match.me
            return t("result.title.win" if win else "result.title.loss"), palette.PRIMARY if win else palette.DANGER
        return t("replay.outcome.win", name=self.name(match, match.winner)), palette.INK

    def opponent_text(self, match: SavedMatch) -> str:
        if match.me is not None:
            return self.ctx.t("replay.saved.vs", name=self.name(match, 1 - match.me))
        return f"{self.name(match, 0)} – {self.name(match, 1)}"

    def length_text(self, match: SavedMatch) -> str:
        parts = []
        if match.turns is not None:
            parts.append(self.ctx.t("replay.saved.turns", turns=match.turns))
        if match.elapsed is not None:
            parts.append(self.ctx.tr.duration(match.elapsed))
        return " · ".join(parts)

    @staticmethod
    def date_text(match: SavedMatch) -> str:
        try:
            return datetime.fromtimestamp(match.when, UTC).astimezone().strftime("%Y-%m-%d %H:%M")
        except (OverflowError, OSError, ValueError):
            return ""

    # ----- actions --------------------------------------------------------------------------------------------
    def open_match(self, match: SavedMatch) -> None:
        text, problem = read_record_file(match.path)
        seat = match.me if match.me is not None else 0
        self.ctx.stack.push(ReplayViewer(self.ctx, text, on_back=lambda: None, seat=seat,
                                         problem=None if problem is None else self.ctx.t("replay.unreadable", detail=problem)))

    def turn_page(self, delta: int) -> None:
        page = max(0, min(self.pages - 1, self.page + delta))
        if page != self.page:
            self.page = page
            self.relayout()
            self.ctx.invalidate(None)

    def back(self) -> None:
        if self.ctx.stack.top is self:
            self.ctx.stack.pop()

    def relayout(self) -> None:
        t = self.ctx.t
        buttons = [Button(pygame.Rect(8, 8, 108, 44), lambda: t("action.back"), self.back, style="ghost", icon="back",
                          name="back", text_size=15)]
        for slot, match in enumerate(self.shown()):
            buttons.append(Button(self.row_rect(slot), lambda: "", partial(self.open_match, match),
                                  name=f"match:{self.page * PER_PAGE + slot}", radius=12))
        if self.pages > 1:
            buttons += [
                Button(pygame.Rect(LEFT, PAGER_Y, 110, 44), lambda: t("analysis.prev"), lambda: self.turn_page(-1),
                       enabled=self.page > 0, name="page_prev", text_size=15),
                Button(pygame.Rect(W - LEFT - 110, PAGER_Y, 110, 44), lambda: t("analysis.next"), lambda: self.turn_page(1),
                       enabled=self.page < self.pages - 1, name="page_next", text_size=15),
            ]
        self.widgets.set(buttons)
        if self.ctx.keyboard:
            self.widgets.focus_name("match:0" if self.matches else "back")

    # ----- the frame -----------------------------------------------------------------------------------------
    def process_event(self, event: InputEvent) -> bool:
        if isinstance(event, KeyEvent):
            if event.key in (pygame.K_ESCAPE, pygame.K_BACKSPACE):
                self.back()
                return True
            if event.key in (pygame.K_PAGEUP, pygame.K_PAGEDOWN):
                self.turn_page(-1 if event.key == pygame.K_PAGEUP else 1)
                return True
        if isinstance(event, (KeyEvent, PointerEvent)):
            return self.widgets.handle(event)
        return False

    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        ctx = self.ctx
        t, fonts = ctx.t, ctx.fonts
        canvas.fill(palette.BACKGROUND, area)
        title = t("replay.saved.title")
        blit_text(canvas, fonts, title, fonts.fit_size(title, 22, W - 2 * 124, True), palette.INK, bold=True,
                  center=(W // 2, 30))
        self.widgets.draw(canvas, fonts, area)
        if not self.matches:
            text = t("replay.saved.empty")
            h = paragraph_height(fonts, text, 17, INNER - 20)
            blit_paragraph(canvas, fonts, text, 17, palette.INK_SOFT, pygame.Rect(LEFT + 10, 200, INNER - 20, h + 4),
                           align="center")
            return
        for slot, match in enumerate(self.shown()):
            rect = self.row_rect(slot)
            if not rect.colliderect(area):
                continue
            right = self.date_text(match)
            date_w = fonts.render(right, 13, palette.INK_SOFT).get_width() if right else 0
            if match.readable:
                text, color = self.result_text(match)
                second, length = self.opponent_text(match), self.length_text(match)
            else:
                text, color = t("replay.saved.unreadable"), palette.WARN
                second, length = match.path.name, ""
            avail = rect.width - 28 - date_w
            blit_text(canvas, fonts, text, fonts.fit_size(text, 17, avail, True), color, bold=True,
                      midleft=(rect.left + 12, rect.top + 22))
            blit_text(canvas, fonts, right, 13, palette.INK_SOFT, midright=(rect.right - 12, rect.top + 22))
            length_w = fonts.render(length, 13, palette.INK_SOFT).get_width() if length else 0
            blit_text(canvas, fonts, second, fonts.fit_size(second, 14, rect.width - 32 - length_w), palette.INK,
                      midleft=(rect.left + 12, rect.top + 46))
            if length:
                blit_text(canvas, fonts, length, 13, palette.INK_SOFT, midright=(rect.right - 12, rect.top + 46))
        if self.pages > 1:
            line = f"{self.page + 1} / {self.pages}"
            blit_text(canvas, fonts, line, 15, palette.INK_SOFT, center=(W // 2, PAGER_Y + 22))
