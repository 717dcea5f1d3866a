#!/usr/bin/env python3
"""The client's players screens (issue 20): what a frame of each costs, headless.

    SDL_VIDEODRIVER=dummy .venv/bin/python benchmarks/bench_client_players.py [--frames 300] [--runs 3]

The real :class:`mineduel.client.app.App` on the scripted §17 server of ``mine-duel screenshots``
(``client/players_script.py`` over the in-process core), frame by frame on a fake clock; each
figure is the median over ``--runs`` runs of that run's median and p99 (``time.perf_counter``
around ``App.frame``):

* **searching** — the quick-match screen at 20 frames a second (the radar's pulse repaints its
  220-pixel band, the elapsed time ticks once a second);
* **leaderboard scroll** — the top 100, one row (an arrow key) per frame down to the end and
  back (only the list's rectangle is redrawn);
* **profile** — a full redraw of a profile with 20 recent matches (a language switch);
* **snapshot** — ``PlayerSession.snapshot()`` alone, which the lobby compares every frame.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def run_once(frames: int) -> dict[str, tuple[float, float]]:
    import pygame

    from mineduel.client import online_screenshots as shots
    from mineduel.client.screenshots import Shooter

    out: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        s = Shooter(Path(tmp), "en", Path(tmp))
        try:
            rig = shots._players_searching(s, 0.5)[0]
            times = []
            for _ in range(frames):
                s.now += 0.05
                start = time.perf_counter()
                s.app.frame()
                times.append(time.perf_counter() - start)
            out["searching"] = (statistics.median(times), _p99(times))
            client = rig.client
            times = []
            for _ in range(2000):
                start = time.perf_counter()
                client.players.snapshot()
                times.append(time.perf_counter() - start)
            out["snapshot"] = (statistics.median(times), _p99(times))
        finally:
            s.close()
        s = Shooter(Path(tmp), "en", Path(tmp))
        try:
            shots._players_leaderboard(s)
            scene = s.app.stack.top
            rows = scene.rows  # type: ignore[attr-defined]
            times = []
            key = pygame.K_DOWN
            moved = 0
            for _ in range(frames):
                if rows.offset >= rows.limit():
                    key = pygame.K_UP
                elif rows.offset <= 0:
                    key = pygame.K_DOWN
                before = rows.offset
                pygame.event.post(pygame.event.Event(pygame.KEYDOWN, key=key, mod=0, unicode=""))
                s.now += 1 / 60
                start = time.perf_counter()
                s.app.frame()
                times.append(time.perf_counter() - start)
                moved += rows.offset != before
            assert moved == frames, f"the list moved on {moved} of {frames} frames"
            out["leaderboard scroll"] = (statistics.median(times), _p99(times))
        finally:
            s.close()
        s = Shooter(Path(tmp), "en", Path(tmp))
        try:
            shots._players_profile(s)
            times = []
            for i in range(frames // 4):
                s.app.ctx.tr.set_language(("en", "ko", "ja", "zh-CN")[i % 4])
                s.app.stack.relayout()
                s.now += 1 / 60
                start = time.perf_counter()
                s.app.frame()
                times.append(time.perf_counter() - start)
            out["profile full redraw"] = (statistics.median(times), _p99(times))
        finally:
            s.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    runs = [run_once(args.frames) for _ in range(args.runs)]
    print(f"players screens, {args.runs} runs of {args.frames} frames (ms; snapshot in µs)")
    for name in runs[0]:
        med = statistics.median(r[name][0] for r in runs)
        p99 = statistics.median(r[name][1] for r in runs)
        scale, unit = (1e6, "µs") if name == "snapshot" else (1e3, "ms")
        print(f"  {name:22s} median {med * scale:8.3f} {unit}   p99 {p99 * scale:8.3f} {unit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
