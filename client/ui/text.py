"""Hand-drawn text: the shipped pan-CJK font, a render cache and line wrapping for four languages.

Every string drawn here comes from the catalogs (via the Translator) or is made of digits and
ASCII symbols, all of which the subset font covers (tests check the catalogs against its cmap).
Wrapping is :func:`mineduel.client.i18n.wrap` (spaces for English and Korean; between characters
for Japanese and Chinese, with kinsoku and never a lone character on a paragraph's last line),
measured with the real font and cached.
"""

from __future__ import annotations

import io
from collections import OrderedDict
from functools import lru_cache

import pygame

from mineduel.client.i18n import wrap
from mineduel.client.resources import font_path

Color = tuple[int, int, int]


@lru_cache(maxsize=2)
def _font_file(bold: bool) -> bytes:
    """The font file's bytes, read once per process.

    Fonts are made from memory, not from the path: pygame keeps a font opened by path open as a file
    for the font's life, one descriptor per size and weight, and a long-lived process (or a test run
    that makes many apps) would hold hundreds of them, past select()'s 1,024.
    """
    return font_path(bold=bold).read_bytes()


class FontBook:
    """Fonts by (size, bold) and rendered text by (text, size, colour, bold), both cached."""

    def __init__(self, cache_size: int = 600) -> None:
        self._fonts: dict[tuple[int, bool], pygame.font.Font] = {}
        self._cache: OrderedDict[tuple[str, int, Color, bool], pygame.Surface] = OrderedDict()
        self._cache_size = cache_size

    def font(self, size: int, bold: bool = False) -> pygame.font.Font:
        key = (size, bold)
        font = self._fonts.get(key)
        if font is None:
            font = pygame.font.Font(io.BytesIO(_font_file(bold)), size)
            self._fonts[key] = font
        return font

    def render(self, text: str, size: int, color: Color, bold: bool = False) -> pygame.Surface:
        """``text`` as an anti-aliased, transparent surface (cached, least recently used out)."""
        key = (text, size, color, bold)
        surface = self._cache.get(key)
        if surface is not None:
            self._cache.move_to_end(key)
            return surface
        surface = self.font(size, bold).render(text, True, color)
        self._cache[key] = surface
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return surface

    def width(self, text: str, size: int, bold: bool = False) -> int:
        return self.font(size, bold).size(text)[0]

    def line_height(self, size: int, bold: bool = False) -> int:
        return self.font(size, bold).get_linesize()

    def wrap(self, text: str, size: int, width: int, bold: bool = False) -> list[str]:
        """``text`` broken into lines no wider than ``width`` (explicit newlines kept)."""
        return list(_wrap(self, text, size, width, bold))

    def fit_size(self, text: str, size: int, width: int, bold: bool = False, minimum: int = 11) -> int:
        """The largest size from ``size`` down to ``minimum`` at which ``text`` fits on one line."""
        while size > minimum and self.width(text, size, bold) > width:
            size -= 1
        return size

    def clear(self) -> None:
        """Drop rendered text (e.g. after a language change); fonts stay loaded."""
        self._cache.clear()


@lru_cache(maxsize=512)
def _wrap(book: FontBook, text: str, size: int, width: int, bold: bool) -> tuple[str, ...]:
    font = book.font(size, bold)
    return tuple(wrap(text, width, lambda piece: font.size(piece)[0]))


def blit_text(
    surface: pygame.Surface,
    book: FontBook,
    text: str,
    size: int,
    color: Color,
    *,
    bold: bool = False,
    center: tuple[float, float] | None = None,
    topleft: tuple[float, float] | None = None,
    midleft: tuple[float, float] | None = None,
    midright: tuple[float, float] | None = None,
) -> pygame.Rect:
    """Draw one line of text anchored one way; returns the rectangle it covers."""
    image = book.render(text, size, color, bold)
    rect = image.get_rect()
    if center is not None:
        rect.center = (round(center[0]), round(center[1]))
    elif midleft is not None:
        rect.midleft = (round(midleft[0]), round(midleft[1]))
    elif midright is not None:
        rect.midright = (round(midright[0]), round(midright[1]))
    elif topleft is not None:
        rect.topleft = (round(topleft[0]), round(topleft[1]))
    surface.blit(image, rect)
    return rect


def blit_paragraph(
    surface: pygame.Surface,
    book: FontBook,
    text: str,
    size: int,
    color: Color,
    rect: pygame.Rect,
    *,
    bold: bool = False,
    align: str = "left",
    line_gap: int = 2,
    max_lines: int | None = None,
) -> int:
    """Wrap ``text`` into ``rect`` from its top; returns the height used."""
    lines = book.wrap(text, size, rect.width, bold)
    if max_lines is not None and len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = _ellipsize(book, lines[-1], size, rect.width, bold)
    step = book.line_height(size, bold) + line_gap
    y = rect.top
    for line in lines:
        image = book.render(line, size, color, bold)
        if align == "center":
            x = rect.centerx - image.get_width() // 2
        elif align == "right":
            x = rect.right - image.get_width()
        else:
            x = rect.left
        surface.blit(image, (x, y))
        y += step
    return len(lines) * step - (line_gap if lines else 0)


def paragraph_height(book: FontBook, text: str, size: int, width: int, *, bold: bool = False, line_gap: int = 2) -> int:
    lines = book.wrap(text, size, width, bold)
    return len(lines) * (book.line_height(size, bold) + line_gap) - (line_gap if lines else 0)


def _ellipsize(book: FontBook, line: str, size: int, width: int, bold: bool) -> str:
    # ASCII dots: the CJK font draws "…" full-width, which looks wrong after Latin and Hangul.
    while line and book.width(line + "...", size, bold) > width:
        line = line[:-1]
    return line + "..."
