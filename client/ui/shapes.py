"""Anti-aliased shapes and icons, drawn once at 3× and smoothed down, then cached.

pygame's own rounded rectangles and polygons have hard edges; drawing big and scaling down
gives soft edges at a one-off cost. Every function here returns a cached surface for a given
size and colour, so a frame only blits.
"""

from __future__ import annotations

import math
from functools import lru_cache

import pygame

Color = tuple[int, int, int]
RGBA = tuple[int, int, int, int]

SS = 3  # supersampling factor
POLE = (214, 224, 238)  # flag poles: light, for the dark tiles and buttons


def _down(big: pygame.Surface, size: tuple[int, int]) -> pygame.Surface:
    return pygame.transform.smoothscale(big, size)


def _box(s: float, x: float, y: float, w: float, h: float) -> pygame.Rect:
    """The rectangle at ``(x, y)`` of size ``(w, h)``, each a fraction of the icon size ``s``."""
    return pygame.Rect(round(s * x), round(s * y), round(s * w), round(s * h))


@lru_cache(maxsize=512)
def rounded(
    size: tuple[int, int], radius: int, color: Color | RGBA, border: int = 0, border_color: Color | None = None,
) -> pygame.Surface:
    """A filled rounded rectangle with soft corners (and an optional inner border)."""
    w, h = size
    big = pygame.Surface((w * SS, h * SS), pygame.SRCALPHA)
    r = radius * SS
    if border and border_color is not None:
        pygame.draw.rect(big, border_color, big.get_rect(), border_radius=r)
        inner = big.get_rect().inflate(-2 * border * SS, -2 * border * SS)
        pygame.draw.rect(big, color, inner, border_radius=max(0, r - border * SS))
    else:
        pygame.draw.rect(big, color, big.get_rect(), border_radius=r)
    return _down(big, size)


@lru_cache(maxsize=256)
def ring(size: tuple[int, int], radius: int, color: Color | RGBA, width: int) -> pygame.Surface:
    """A rounded-rectangle outline ``width`` pixels thick."""
    w, h = size
    big = pygame.Surface((w * SS, h * SS), pygame.SRCALPHA)
    pygame.draw.rect(big, color, big.get_rect(), width=width * SS, border_radius=radius * SS)
    return _down(big, size)


@lru_cache(maxsize=128)
def shadow(size: tuple[int, int], radius: int, color: Color, alpha: int, blur: int) -> pygame.Surface:
    """A soft drop shadow for a card of ``size``; the surface is ``blur`` larger on every side."""
    w, h = size
    pad = blur
    base = pygame.Surface((w + 2 * pad, h + 2 * pad), pygame.SRCALPHA)
    pygame.draw.rect(base, (*color, alpha), pygame.Rect(pad, pad, w, h), border_radius=radius)
    # A cheap blur: shrink and grow twice.
    factor = max(2, blur // 2)
    small = pygame.transform.smoothscale(base, (max(1, base.get_width() // factor), max(1, base.get_height() // factor)))
    return pygame.transform.smoothscale(small, base.get_size())


@lru_cache(maxsize=64)
def circle(diameter: int, color: Color | RGBA) -> pygame.Surface:
    big = pygame.Surface((diameter * SS, diameter * SS), pygame.SRCALPHA)
    c = diameter * SS / 2
    pygame.draw.circle(big, color, (c, c), c)
    return _down(big, (diameter, diameter))


@lru_cache(maxsize=32)
def scrim(size: tuple[int, int], rgba: RGBA) -> pygame.Surface:
    surface = pygame.Surface(size, pygame.SRCALPHA)
    surface.fill(rgba)
    return surface


# ----- icons ---------------------------------------------------------------------------------
# Each icon is drawn in a unit box of ``size`` pixels by a function taking (surface, s, color)
# where ``s`` is the supersampled size; shapes differ so meaning never rests on colour.

def _flag_pennant(big: pygame.Surface, s: float, color: Color) -> None:
    """The human's flag: a triangular pennant on a pole."""
    pole = max(2, round(s * 0.07))
    x = s * 0.30
    pygame.draw.rect(big, POLE, pygame.Rect(round(x), round(s * 0.14), pole, round(s * 0.72)))
    pygame.draw.rect(big, POLE, pygame.Rect(round(s * 0.18), round(s * 0.82), round(s * 0.36), pole))
    pygame.draw.polygon(big, color, [(x + pole, s * 0.14), (s * 0.84, s * 0.31), (x + pole, s * 0.50)])


def _flag_swallowtail(big: pygame.Surface, s: float, color: Color) -> None:
    """The opponent's flag: a square banner with a swallow-tail notch, on a pole."""
    pole = max(2, round(s * 0.07))
    x = s * 0.30
    pygame.draw.rect(big, POLE, pygame.Rect(round(x), round(s * 0.14), pole, round(s * 0.72)))
    pygame.draw.rect(big, POLE, pygame.Rect(round(s * 0.18), round(s * 0.82), round(s * 0.36), pole))
    pygame.draw.polygon(
        big,
        color,
        [(x + pole, s * 0.14), (s * 0.84, s * 0.14), (s * 0.68, s * 0.31), (s * 0.84, s * 0.48), (x + pole, s * 0.48)],
    )


def _mine(big: pygame.Surface, s: float, color: Color) -> None:
    c = s / 2
    r = s * 0.26
    for k in range(8):
        a = k * math.pi / 4
        dx, dy = math.cos(a), math.sin(a)
        ray = s * 0.40
        pygame.draw.line(big, color, (c - dx * ray, c - dy * ray), (c + dx * ray, c + dy * ray), max(2, round(s * 0.07)))
    pygame.draw.circle(big, color, (c, c), r)
    pygame.draw.circle(big, (255, 255, 255), (c - r * 0.35, c - r * 0.35), r * 0.28)


def _magnifier(big: pygame.Surface, s: float, color: Color) -> None:
    w = max(2, round(s * 0.11))
    pygame.draw.circle(big, color, (s * 0.42, s * 0.42), s * 0.26, w)
    pygame.draw.line(big, color, (s * 0.61, s * 0.61), (s * 0.86, s * 0.86), round(w * 1.4))


def _unflag(big: pygame.Surface, s: float, color: Color) -> None:
    _flag_pennant(big, s, color)
    w = max(2, round(s * 0.09))
    pygame.draw.line(big, (214, 48, 49), (s * 0.12, s * 0.88), (s * 0.88, s * 0.12), w)


def _menu(big: pygame.Surface, s: float, color: Color) -> None:
    h = max(2, round(s * 0.09))
    for y in (0.28, 0.5, 0.72):
        pygame.draw.rect(big, color, pygame.Rect(round(s * 0.18), round(s * y - h / 2), round(s * 0.64), h), border_radius=h)


def _check(big: pygame.Surface, s: float, color: Color) -> None:
    stroke = [(s * 0.2, s * 0.52), (s * 0.42, s * 0.74), (s * 0.82, s * 0.28)]
    pygame.draw.lines(big, color, False, stroke, max(3, round(s * 0.12)))


def _warning(big: pygame.Surface, s: float, color: Color) -> None:
    pygame.draw.polygon(big, color, [(s * 0.5, s * 0.08), (s * 0.95, s * 0.9), (s * 0.05, s * 0.9)])
    w = max(2, round(s * 0.1))
    pygame.draw.rect(big, (255, 255, 255), pygame.Rect(round(s * 0.5 - w / 2), round(s * 0.34), w, round(s * 0.3)))
    pygame.draw.rect(big, (255, 255, 255), pygame.Rect(round(s * 0.5 - w / 2), round(s * 0.7), w, w))


def _burst(big: pygame.Surface, s: float, color: Color) -> None:
    c = s / 2
    points = []
    for k in range(16):
        r = s * (0.48 if k % 2 == 0 else 0.26)
        a = k * math.pi / 8
        points.append((c + r * math.cos(a), c + r * math.sin(a)))
    pygame.draw.polygon(big, color, points)


def _globe(big: pygame.Surface, s: float, color: Color) -> None:
    c = s / 2
    w = max(2, round(s * 0.07))
    pygame.draw.circle(big, color, (c, c), s * 0.42, w)
    pygame.draw.ellipse(big, color, _box(s, 0.3, 0.08, 0.4, 0.84), w)
    pygame.draw.line(big, color, (s * 0.08, c), (s * 0.92, c), w)
    pygame.draw.line(big, color, (s * 0.16, s * 0.3), (s * 0.84, s * 0.3), w)
    pygame.draw.line(big, color, (s * 0.16, s * 0.7), (s * 0.84, s * 0.7), w)


def _grid(big: pygame.Surface, s: float, color: Color) -> None:
    w = max(2, round(s * 0.07))
    pygame.draw.rect(big, color, _box(s, 0.14, 0.14, 0.72, 0.72), w, border_radius=round(s * 0.08))
    for t in (0.38, 0.62):
        pygame.draw.line(big, color, (s * t, s * 0.14), (s * t, s * 0.86), w)
        pygame.draw.line(big, color, (s * 0.14, s * t), (s * 0.86, s * t), w)


def _trophy(big: pygame.Surface, s: float, color: Color) -> None:
    cup = round(s * 0.24)
    pygame.draw.rect(big, color, _box(s, 0.26, 0.1, 0.48, 0.42), border_bottom_left_radius=cup, border_bottom_right_radius=cup)
    w = max(2, round(s * 0.07))
    pygame.draw.circle(big, color, (s * 0.24, s * 0.26), s * 0.13, w)
    pygame.draw.circle(big, color, (s * 0.76, s * 0.26), s * 0.13, w)
    pygame.draw.rect(big, color, _box(s, 0.45, 0.5, 0.1, 0.2))
    pygame.draw.rect(big, color, _box(s, 0.28, 0.7, 0.44, 0.14), border_radius=round(s * 0.04))


def _equal(big: pygame.Surface, s: float, color: Color) -> None:
    h = round(s * 0.12)
    pygame.draw.rect(big, color, pygame.Rect(round(s * 0.2), round(s * 0.32), round(s * 0.6), h), border_radius=h // 2)
    pygame.draw.rect(big, color, pygame.Rect(round(s * 0.2), round(s * 0.56), round(s * 0.6), h), border_radius=h // 2)


def _back(big: pygame.Surface, s: float, color: Color) -> None:
    w = max(3, round(s * 0.1))
    pygame.draw.lines(big, color, False, [(s * 0.6, s * 0.2), (s * 0.3, s * 0.5), (s * 0.6, s * 0.8)], w)


def _close(big: pygame.Surface, s: float, color: Color) -> None:
    w = max(3, round(s * 0.1))
    pygame.draw.line(big, color, (s * 0.25, s * 0.25), (s * 0.75, s * 0.75), w)
    pygame.draw.line(big, color, (s * 0.75, s * 0.25), (s * 0.25, s * 0.75), w)


def _restart(big: pygame.Surface, s: float, color: Color) -> None:
    w = max(3, round(s * 0.1))
    rect = _box(s, 0.18, 0.18, 0.64, 0.64)
    pygame.draw.arc(big, color, rect, math.radians(40), math.radians(330), w)
    tip = (s * 0.82, s * 0.36)
    head = [(tip[0] - s * 0.16, tip[1] - s * 0.02), (tip[0] + s * 0.06, tip[1] - s * 0.16), (tip[0] + s * 0.04, tip[1] + s * 0.1)]
    pygame.draw.polygon(big, color, head)


def _book(big: pygame.Surface, s: float, color: Color) -> None:
    w = max(2, round(s * 0.07))
    pygame.draw.rect(big, color, _box(s, 0.18, 0.14, 0.64, 0.72), w, border_radius=round(s * 0.06))
    for y in (0.34, 0.5, 0.66):
        pygame.draw.line(big, color, (s * 0.32, s * y), (s * 0.68, s * y), w)


def _network(big: pygame.Surface, s: float, color: Color) -> None:
    w = max(2, round(s * 0.07))
    pts = [(s * 0.5, s * 0.2), (s * 0.2, s * 0.78), (s * 0.8, s * 0.78)]
    pygame.draw.lines(big, color, True, pts, w)
    for p in pts:
        pygame.draw.circle(big, color, p, s * 0.12)


def _export(big: pygame.Surface, s: float, color: Color) -> None:
    w = max(3, round(s * 0.09))
    pygame.draw.line(big, color, (s * 0.5, s * 0.12), (s * 0.5, s * 0.6), w)
    pygame.draw.lines(big, color, False, [(s * 0.3, s * 0.4), (s * 0.5, s * 0.62), (s * 0.7, s * 0.4)], w)
    tray = [(s * 0.16, s * 0.6), (s * 0.16, s * 0.86), (s * 0.84, s * 0.86), (s * 0.84, s * 0.6)]
    pygame.draw.lines(big, color, False, tray, w)


def _eye(big: pygame.Surface, s: float, color: Color) -> None:
    w = max(2, round(s * 0.08))
    pygame.draw.ellipse(big, color, _box(s, 0.08, 0.26, 0.84, 0.48), w)
    pygame.draw.circle(big, color, (s * 0.5, s * 0.5), s * 0.14)


def _quit(big: pygame.Surface, s: float, color: Color) -> None:
    w = max(3, round(s * 0.09))
    pygame.draw.arc(big, color, _box(s, 0.16, 0.2, 0.68, 0.68), math.radians(120), math.radians(420), w)
    pygame.draw.line(big, color, (s * 0.5, s * 0.1), (s * 0.5, s * 0.5), w)


def _cpu(big: pygame.Surface, s: float, color: Color) -> None:
    """The CPU's badge: a chip — a square with a notched corner and pins."""
    w = max(2, round(s * 0.06))
    body = [(s * 0.24, s * 0.24), (s * 0.62, s * 0.24), (s * 0.76, s * 0.38), (s * 0.76, s * 0.76), (s * 0.24, s * 0.76)]
    pygame.draw.polygon(big, color, body)
    for t in (0.36, 0.5, 0.64):
        pygame.draw.line(big, color, (s * t, s * 0.08), (s * t, s * 0.24), w)
        pygame.draw.line(big, color, (s * t, s * 0.76), (s * t, s * 0.92), w)
        pygame.draw.line(big, color, (s * 0.08, s * t), (s * 0.24, s * t), w)
        pygame.draw.line(big, color, (s * 0.76, s * t), (s * 0.92, s * t), w)


def _person(big: pygame.Surface, s: float, color: Color) -> None:
    """The human's badge: a round head and shoulders."""
    pygame.draw.circle(big, color, (s * 0.5, s * 0.34), s * 0.18)
    pygame.draw.ellipse(big, color, _box(s, 0.18, 0.56, 0.64, 0.5))


def _sound(big: pygame.Surface, s: float, color: Color, muted: bool = False) -> None:
    """A loudspeaker with two waves (the settings' sound), or with a cross when muted."""
    body = [(s * 0.1, s * 0.36), (s * 0.3, s * 0.36), (s * 0.52, s * 0.14), (s * 0.52, s * 0.86), (s * 0.3, s * 0.64),
            (s * 0.1, s * 0.64)]
    pygame.draw.polygon(big, color, body)
    w = max(3, round(s * 0.08))
    if muted:
        pygame.draw.line(big, color, (s * 0.64, s * 0.36), (s * 0.92, s * 0.64), w)
        pygame.draw.line(big, color, (s * 0.64, s * 0.64), (s * 0.92, s * 0.36), w)
        return
    for r in (0.2, 0.36):
        pygame.draw.arc(big, color, _box(s, 0.5 - r, 0.5 - r, 2 * r, 2 * r), -0.9, 0.9, w)


def _sound_off(big: pygame.Surface, s: float, color: Color) -> None:
    _sound(big, s, color, muted=True)


def _bulb(big: pygame.Surface, s: float, color: Color) -> None:
    """A light bulb (the CPU match's Hint): a round glass, a narrowing neck and two base bands."""
    pygame.draw.circle(big, color, (s * 0.5, s * 0.4), s * 0.27)
    pygame.draw.polygon(big, color, [(s * 0.32, s * 0.52), (s * 0.68, s * 0.52), (s * 0.62, s * 0.7), (s * 0.38, s * 0.7)])
    h = max(2, round(s * 0.07))
    for y in (0.76, 0.86):
        pygame.draw.rect(big, color, _box(s, 0.38, y, 0.24, 0.07), border_radius=h)


ICONS = {
    "hint": _bulb,
    "flag": _flag_pennant,
    "flag_opponent": _flag_swallowtail,
    "mine": _mine,
    "explore": _magnifier,
    "unflag": _unflag,
    "menu": _menu,
    "check": _check,
    "warning": _warning,
    "burst": _burst,
    "globe": _globe,
    "grid": _grid,
    "trophy": _trophy,
    "equal": _equal,
    "back": _back,
    "close": _close,
    "restart": _restart,
    "rules": _book,
    "online": _network,
    "export": _export,
    "eye": _eye,
    "quit": _quit,
    "cpu": _cpu,
    "person": _person,
    "sound": _sound,
    "sound_off": _sound_off,
}


@lru_cache(maxsize=256)
def icon(name: str, size: int, color: Color) -> pygame.Surface:
    """The icon ``name`` in a ``size``×``size`` transparent square."""
    big = pygame.Surface((size * SS, size * SS), pygame.SRCALPHA)
    ICONS[name](big, size * SS, color)
    return _down(big, (size, size))


def clear_caches() -> None:
    """Forget every cached shape (tests use it to measure cold start)."""
    for fn in (rounded, ring, shadow, circle, scrim, icon):
        fn.cache_clear()
