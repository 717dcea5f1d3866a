#!/usr/bin/env python3
"""Spectator screen benchmark (issue 19, headless): what one ``spectate_state`` costs the watching
client, and what the screen costs while nothing happens.

    SDL_VIDEODRIVER=dummy .venv/bin/python benchmarks/bench_watch.py [--matches 20] [--seed 1]

The real app (``App``) watches rooms of the real server core in process (``server/inprocess.py``)
whose two players are scripted peers playing safe moves to the end (then a KO), through the
lobby's Watch — the same path as a player's click. For every view the server sends, it measures:

* ``view`` — the watcher taking the view in: the codec's typed message checked (``check_view``),
  the events named (``spectate_events.changes``), the board view built (``public_view``);
* ``frame`` — the app's whole frame that shows it (input, update, the redraw of what changed,
  present), at 390×844;
* ``idle`` — the second after the board's animations while nothing arrives (the deadline pill
  ticks once a second): how many frames redrew anything, and their time.

Prints medians and p99 in milliseconds. Times are this machine's; the figures go to
docs/PERFORMANCE.md (never into tests).
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


def _p(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)

    from mineduel.client.app import App
    from mineduel.client.online_client import OnlineServices
    from mineduel.client.scenes.online import OnlineScene
    from mineduel.client.scenes.spectate import SpectateScene
    from mineduel.client.sound import SilentSounds
    from mineduel.client.tokens import TokenStore
    from mineduel.server.inprocess import InProcessServer
    from mineduel.shared.rules.bitboard import FULL, cells
    from mineduel.shared.rules.engine import Phase

    views: list[float] = []
    frames: list[float] = []
    idle: list[float] = []
    idle_drawn = idle_frames = 0
    for m in range(args.matches):
        srv = InProcessServer(seed=args.seed + m)
        with tempfile.TemporaryDirectory() as tmp:
            now = [1000.0]
            services = OnlineServices(connect=srv.connector(), tokens=TokenStore(Path(tmp) / "data"))
            app = App(size=(390, 844), language="en", seed=7, profile_dir=Path(tmp), clock=lambda now=now: now[0],
                      online_services=lambda services=services: services)
            app.ctx.sounds = SilentSounds()
            a, b = srv.peer(), srv.peer()
            code = a.send(type="create_room", name="Ann", client_seed="a")[0]["room"]
            b.send(type="join", room=code, name="Bob", client_seed="b")
            a.send(type="ready")
            b.send(type="ready")
            lobby = OnlineScene(app.ctx)
            app.stack.close_popup()  # the CPU game's start popup: the watcher came by the online screen
            app.stack.replace(lobby)
            app.frame()
            lobby.watching.watch_at("h", 1, code)
            app.frame()
            scene = app.stack.top
            assert isinstance(scene, SpectateScene)
            watcher = scene.watcher
            real_view = watcher._view

            def timed(msg, real_view=real_view):  # noqa: ANN001, ANN202
                t0 = time.perf_counter()
                real_view(msg)
                views.append(time.perf_counter() - t0)

            watcher._view = timed  # type: ignore[method-assign]
            peers = {p.last("match_start")["seat"]: p for p in (a, b)}
            for step in range(400):
                st = srv.truth(code)
                if st.outcome() is not None:
                    break
                seat = st.to_move
                safe = FULL & ~(st.revealed | st.any_marker | st.any_mine)
                srv.advance(1.0)
                if st.phase in (Phase.OPEN_EXPLORE, Phase.EXPLORE):
                    target = safe if step < 60 or not st.mines[1 - seat] & ~st.mines[seat] & ~st.revealed & ~st.any_marker else (
                        st.mines[1 - seat] & ~st.mines[seat] & ~st.revealed & ~st.any_marker)
                    peers[seat].send(type="explore", cell=list(divmod(next(cells(target or safe)), 8)))
                elif st.phase in (Phase.OPEN_PLANT, Phase.PLANT):
                    plantable = st.plantable(seat)
                    peers[seat].send(type="plant", cell=list(divmod(next(cells(safe & plantable or plantable)), 8)))
                else:
                    peers[seat].send(type="end_turn")
                now[0] += 1 / 60
                t0 = time.perf_counter()
                app.frame()
                frames.append(time.perf_counter() - t0)
                for _ in range(40):  # the board's reveal and number animations (a few frames)
                    now[0] += 1 / 60
                    app.frame()
                for _ in range(60):  # then a second of nothing: the countdown's tick, else no drawing
                    now[0] += 1 / 60
                    before = app.frames_drawn
                    t0 = time.perf_counter()
                    app.frame()
                    idle.append(time.perf_counter() - t0)
                    idle_frames += 1
                    idle_drawn += app.frames_drawn - before
            app.close()
    ms = 1000.0
    print(f"bench_watch: {args.matches} matches, {len(views)} spectate_state views, {len(frames)} frames showing one")
    print(f"  view taken in     median {statistics.median(views) * ms:.3f} ms  p99 {_p(views, 0.99) * ms:.3f} ms")
    print(f"  frame showing it  median {statistics.median(frames) * ms:.3f} ms  p99 {_p(frames, 0.99) * ms:.3f} ms")
    print(f"  idle frames       median {statistics.median(idle) * ms:.3f} ms  p99 {_p(idle, 0.99) * ms:.3f} ms;"
          f" {idle_drawn} of {idle_frames} redrew anything")
    return 0


if __name__ == "__main__":
    sys.exit(main())
