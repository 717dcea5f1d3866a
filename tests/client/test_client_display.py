"""The window (U4): a 390×844 canvas kept in proportion, scrolled when too short; and the import
arrows (STYLE.md): in the client only the entry point and the networking module import Twisted."""

from __future__ import annotations

import ast
from pathlib import Path

import pygame
import pytest

from mineduel.client.display import LOGICAL_SIZE, MIN_SCALE, Mapping
from mineduel.client.ui.input import KeyEvent, PointerEvent, PointerKind, translate

CLIENT = Path(__file__).resolve().parents[2] / "client"


@pytest.mark.parametrize(
    ("window", "scale", "offset", "scroll"),
    [
        ((390, 844), 1.0, (0, 0), 0),
        ((780, 1688), 2.0, (0, 0), 0),
        ((1920, 1080), 1080 / 844, ((1920 - round(390 * 1080 / 844)) // 2, 0), 0),
        ((480, 900), 900 / 844, ((480 - round(390 * 900 / 844)) // 2, 0), 0),
        ((320, 568), 320 / 390, (0, 0), round(844 * 320 / 390) - 568),
        ((800, 500), MIN_SCALE, ((800 - round(390 * MIN_SCALE)) // 2, 0), round(844 * MIN_SCALE) - 500),
    ],
)
def test_canvas_fits_the_window(window, scale, offset, scroll):
    """U4: aspect kept; centred; too short a window fits the width (at most 0.85×) and scrolls."""
    m = Mapping.fit(window)
    assert m.scale == pytest.approx(scale)
    assert m.offset == offset
    assert m.max_scroll == scroll
    assert m.identity == (window == LOGICAL_SIZE)


def test_pointer_positions_map_to_the_canvas():
    """Mouse pixels and finger fractions land on the same canvas point at any scale and scroll."""
    pygame.display.init()
    try:
        from mineduel.client.display import Viewport

        window = pygame.display.set_mode((320, 568))
        vp = Viewport(window)
        vp.scroll_by(50)
        to_logical = vp.to_logical
        mouse = translate(pygame.event.Event(pygame.MOUSEBUTTONDOWN, pos=(160, 300), button=1), to_logical, (320, 568))
        finger = translate(pygame.event.Event(pygame.FINGERUP, x=0.5, y=300 / 568, dx=0.0, dy=0.0, touch_id=1, finger_id=0,
                                              pressure=1.0), to_logical, (320, 568))
        assert isinstance(mouse, PointerEvent) and mouse.kind is PointerKind.DOWN and not mouse.touch
        assert isinstance(finger, PointerEvent) and finger.kind is PointerKind.UP and finger.touch
        assert mouse.pos == pytest.approx(finger.pos)
        assert mouse.pos == pytest.approx((160 / vp.scale, (300 + 50) / vp.scale))
        synthetic = pygame.event.Event(pygame.MOUSEBUTTONDOWN, pos=(160, 300), button=1, touch=True)
        assert translate(synthetic, to_logical, (320, 568)) is None
        key = translate(pygame.event.Event(pygame.KEYDOWN, key=pygame.K_e, mod=0, unicode="e"), to_logical, (320, 568))
        assert key == KeyEvent(pygame.K_e, 0, "e")
    finally:
        pygame.display.quit()


def test_partial_presents_match_a_full_redraw():
    """Scaled dirty-rectangle presents give the same window as scaling the whole canvas."""
    pygame.display.init()
    try:
        from mineduel.client.display import Viewport

        window = pygame.display.set_mode((585, 1266))
        vp = Viewport(window)
        canvas = vp.canvas
        for i in range(0, 390, 13):
            pygame.draw.rect(canvas, (i % 255, (i * 3) % 255, 200), pygame.Rect(i, i * 2, 13, 40))
        vp.present(None)
        full = pygame.image.tobytes(window, "RGB")
        window.fill((0, 0, 0))
        tiles = [pygame.Rect(x, y, 78, 211) for x in range(0, 390, 78) for y in range(0, 844, 211)]
        vp.present(tiles)
        assert pygame.image.tobytes(window, "RGB") == full
    finally:
        pygame.display.quit()


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_only_the_entry_point_and_networking_import_twisted():
    """STYLE.md: scenes, controllers and the drawing kit never import Twisted."""
    allowed = {"app.py", "net.py", "network.py", "online_match.py"}
    offenders = [str(p.relative_to(CLIENT)) for p in CLIENT.rglob("*.py") if p.name not in allowed and "twisted" in _imports(p)]
    assert offenders == []


def _module_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return names


def test_scenes_do_not_know_the_cpu_match():
    """STYLE.md: screens talk to the MatchController interface only, never to the CPU match or AI."""
    for path in (CLIENT / "scenes").glob("*.py"):
        imported = _module_imports(path)
        assert not {"mineduel.client.cpu_match", "mineduel.shared.ai.cpu"} & imported, path.name
