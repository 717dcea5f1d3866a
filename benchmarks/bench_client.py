#!/usr/bin/env python3
"""Client benchmark (headless): frame times while animating, CPU use idle and animating, and the
time from process start to the first frame.

    SDL_VIDEODRIVER=dummy .venv/bin/python benchmarks/bench_client.py [--seconds 10]

Each scenario runs in a fresh process (Twisted's reactor runs once per process), driving the real
:class:`mineduel.client.app.App` with the same ``task.LoopingCall`` loop as ``mine-duel``:

* ``idle`` — a match on the player's turn, nothing happening: CPU = process time / wall time;
* ``animate`` — the board kept busy (the CPU's highlight ring, number pops, the pointer sweeping
  over the board every frame) at 60 fps: frame time median and p99, and CPU;
* ``first-frame`` — process start (before the interpreter) to the first frame on the window.

Sound is on (issue 16): the app's own ``MixerSounds`` on SDL's dummy audio driver, which mixes
in its own thread just as a real device does. While animating, a cue is played every
:data:`CUE_EVERY` seconds (all ten in turn, so every WAV is loaded and mixed); each run reports
how many reached the mixer. ``--no-sound`` runs with the silent service instead, for comparison.

Targets (the client issue): idle < 2 % of a core, animating <= 10 % of a core at 60 fps,
frame p99 < 8 ms, first frame < 1.5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENV = {"SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy", "PYGAME_HIDE_SUPPORT_PROMPT": "1"}
CUE_EVERY = 0.25  # seconds between sound cues while animating (a busy match: several per turn)
SOUND = os.environ.get("MINEDUEL_BENCH_SOUND", "1") == "1"


def _app(size: tuple[int, int], profile: Path):  # noqa: ANN202 - App
    from mineduel.client.app import App

    app = App(size=size, language="en", seed=7, profile_dir=profile)
    if not SOUND:
        from mineduel.client.sound import SilentSounds

        app.ctx.sounds = SilentSounds()
    app.frame()
    return app


def _sound_stats(app) -> dict:  # noqa: ANN001
    import pygame

    sounds = app.ctx.sounds
    return {"sound": type(sounds).__name__, "mixer": pygame.mixer.get_init(), "cues_played": getattr(sounds, "played", 0)}


def _start_mid_game(app) -> None:  # noqa: ANN001
    """Start a match from a mid-game position (numbers, flags, mines everywhere)."""
    from mineduel.client.cpu_match import CpuMatch
    from mineduel.client.screenshots import MID_GAME
    from mineduel.shared.rules.notation import from_ascii

    app.ctx.new_cpu_match = lambda **kw: CpuMatch(clock=app.clock, state=from_ascii(MID_GAME), **kw)
    app.stack.popup.start()


def run_loop(app, seconds: float, feed=None) -> dict:  # noqa: ANN001
    """Run ``app`` under the reactor exactly like ``mine-duel`` does; measure frames and CPU."""
    from twisted.internet import reactor, task

    durations: list[float] = []

    def tick() -> None:
        if feed is not None:
            feed()
        t0 = time.perf_counter()
        delay = app.frame()
        durations.append(time.perf_counter() - t0)
        loop.interval = delay if delay is not None else 0.05

    # Settle first (popup animations, first draws), then measure.
    for _ in range(60):
        app.frame()
        time.sleep(0.005)
    loop = task.LoopingCall(tick)
    drawn0 = app.frames_drawn
    cpu0, wall0 = time.process_time(), time.perf_counter()
    loop.start(1 / 60, now=False)
    reactor.callLater(seconds, reactor.stop)
    reactor.run()
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    drawn = app.frames_drawn - drawn0
    ms = sorted(d * 1000 for d in durations)
    return {
        "wall_s": round(wall, 2),
        "cpu_percent_of_core": round(100 * cpu / wall, 2),
        "frame_calls": len(durations),
        "frames_drawn": drawn,
        "drawn_fps": round(drawn / wall, 1),
        "frame_ms_median": round(statistics.median(ms), 3) if ms else None,
        "frame_ms_p99": round(ms[min(len(ms) - 1, int(len(ms) * 0.99))], 3) if ms else None,
        "frame_ms_max": round(ms[-1], 3) if ms else None,
    }


def scenario_idle(seconds: float, size: tuple[int, int]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        app = _app(size, Path(tmp))
        _start_mid_game(app)
        app.ctx.sounds.play("turn_start")  # as after a first move: the mixer (and SDL's audio thread) running
        return {**run_loop(app, seconds), **_sound_stats(app)}


def scenario_animate(seconds: float, size: tuple[int, int]) -> dict:
    import pygame

    from mineduel.client.sound import CUES
    from mineduel.client.ui.board import HIGHLIGHT_TIME, NUMBER_TIME

    with tempfile.TemporaryDirectory() as tmp:
        app = _app(size, Path(tmp))
        _start_mid_game(app)
        board = app.game.board
        view = app.game.view()
        revealed = [c for c in range(64) if view.revealed >> c & 1]
        state = {"highlight": 0.0, "numbers": 0.0, "i": 0, "cue": 0.0, "cues": 0}
        vp = app.viewport

        def feed() -> None:
            now = app.clock()
            if now - state["highlight"] >= HIGHLIGHT_TIME:
                state["highlight"] = now
                board.set_highlight(revealed[state["i"] % len(revealed)], now)
            if now - state["numbers"] >= NUMBER_TIME:
                state["numbers"] = now
                for k in range(3):
                    board.number_started[revealed[(state["i"] + 5 * k) % len(revealed)]] = now
            if now - state["cue"] >= CUE_EVERY:
                state["cue"] = now
                app.ctx.sounds.play(CUES[state["cues"] % len(CUES)])
                state["cues"] += 1
            state["i"] += 1
            # The pointer sweeps over the board: hover highlights change as it crosses cells.
            cell = state["i"] % 64
            x, y = board.cell_center(cell)
            m = vp.mapping
            pos = (round(x * m.scale + m.offset[0]), round(y * m.scale + m.offset[1] - vp.scroll))
            pygame.event.post(pygame.event.Event(pygame.MOUSEMOTION, pos=pos, rel=(1, 0), buttons=(0, 0, 0)))

        return {**run_loop(app, seconds, feed), **_sound_stats(app)}


def scenario_first_frame() -> dict:
    """Runs in the child: report the wall time right after the first frame was presented."""
    from mineduel.client.app import App

    with tempfile.TemporaryDirectory() as tmp:
        app = App(size=(390, 844), profile_dir=Path(tmp))  # nothing saved: the language picker
        app.frame()
        done = time.time()
        app.close()
    return {"first_frame_at": done}


def child(argv: list[str]) -> None:
    name, seconds, w, h = argv[0], float(argv[1]), int(argv[2]), int(argv[3])
    if name == "idle":
        result = scenario_idle(seconds, (w, h))
    elif name == "animate":
        result = scenario_animate(seconds, (w, h))
    else:
        result = scenario_first_frame()
    print("RESULT " + json.dumps(result))


def spawn(name: str, seconds: float = 0, size: tuple[int, int] = (390, 844)) -> tuple[dict, float]:
    env = {**os.environ, **ENV}
    started = time.time()
    out = subprocess.run(
        [sys.executable, __file__, "--child", name, str(seconds), str(size[0]), str(size[1])],
        env=env, capture_output=True, text=True, check=True,
    ).stdout
    line = next(line for line in out.splitlines() if line.startswith("RESULT "))
    return json.loads(line[len("RESULT "):]), started


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the idle and animate runs")
    parser.add_argument("--runs", type=int, default=5, help="first-frame runs (the median is reported)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--no-sound", action="store_true", help="the silent sound service instead of the mixer")
    args = parser.parse_args()
    if args.no_sound:
        os.environ["MINEDUEL_BENCH_SOUND"] = "0"  # read by the children
    results: dict[str, object] = {}
    firsts = []
    for _ in range(args.runs):
        result, started = spawn("first-frame")
        firsts.append(result["first_frame_at"] - started)
    results["first_frame_s"] = {"median": round(statistics.median(firsts), 3), "max": round(max(firsts), 3)}
    for name, size in (("idle", (390, 844)), ("animate", (390, 844)), ("animate", (468, 1013)), ("idle", (320, 568))):
        results[f"{name}_{size[0]}x{size[1]}"] = spawn(name, args.seconds, size)[0]
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        for key, value in results.items():
            print(f"{key:22s} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
