"""``mine-duel --self-test``: prove a build works — render each main screen once and exit 0.

Used on the PyInstaller bundles (scripts/build.py) and by kiosk operators after an install.
Runs headless unless ``SDL_VIDEODRIVER`` is already set. Each screen is produced by the same
scripted steps as ``mine-duel screenshots`` and must show real content (not a blank frame);
fonts, theme and catalogs are loaded from the bundle, so a missing data file fails here; so does a
missing application icon (the window and ``install-desktop`` use it). Prints the version, one line
per screen and ``self-test ok``; exit status 1 on any failure.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

MAIN_SCREENS = ("language_first_run", "rules_start", "board_explore", "refusal", "result_win", "menu", "online")
MIN_COLOURS = 12  # a blank or single-colour frame has far fewer distinct colours than any real screen


def _distinct_colours(surface: object) -> int:
    import pygame

    assert isinstance(surface, pygame.Surface)
    small = pygame.transform.scale(surface, (78, 168))
    return len({small.get_at((x, y))[:3] for x in range(0, 78, 2) for y in range(0, 168, 2)})


def _check_icons() -> int:
    """Every size of the application icon loads as a square PNG; the number of failures."""
    import pygame

    from mineduel.client.desktop import ICON_SIZES, icon_file
    from mineduel.client.resources import asset_path

    bad = []
    for size in ICON_SIZES:
        try:
            if pygame.image.load(str(asset_path("icons", icon_file(size)))).get_size() != (size, size):
                bad.append(size)
        except (OSError, pygame.error):
            bad.append(size)
    print(f"{'FAIL' if bad else 'ok  '} icons ({len(ICON_SIZES) - len(bad)} of {len(ICON_SIZES)} sizes)", flush=True)
    return 1 if bad else 0


def main(argv: Sequence[str] | None = None) -> int:
    started = time.perf_counter()
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    args = list(sys.argv[1:] if argv is None else argv)
    language = "en"
    if "--lang" in args:
        language = args[args.index("--lang") + 1]
    from mineduel.client.screenshots import SHOTS, Shooter
    from mineduel.shared.version import VERSION

    print(f"mine-duel {VERSION} self-test", flush=True)
    runs = dict(SHOTS)
    failures = _check_icons()
    with tempfile.TemporaryDirectory(prefix="mineduel-selftest-") as tmp:
        for index, name in enumerate(MAIN_SCREENS):
            run = runs.get(name)
            if run is None:
                print(f"FAIL {name}: no such screen", flush=True)
                failures += 1
                continue
            shooter = Shooter(Path(tmp), None if name == "language_first_run" else language, Path(tmp) / name)
            try:
                if index == 0:
                    print(f"first frame {time.perf_counter() - started:.3f} s after start", flush=True)
                run(shooter)
                colours = _distinct_colours(shooter.app.screenshot())
            except Exception as exc:  # noqa: BLE001 - a self-test reports every failure, whatever it is
                print(f"FAIL {name}: {type(exc).__name__}: {exc}", flush=True)
                failures += 1
                continue
            finally:
                shooter.close()
            ok = colours >= MIN_COLOURS
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name} ({colours} colours)", flush=True)
    if failures:
        print(f"self-test FAILED: {failures} screen(s)", flush=True)
        return 1
    print(f"self-test ok in {time.perf_counter() - started:.2f} s", flush=True)
    return 0
