"""A new player's path in a real window: clicks and seconds from launch to a goal (issue 16).

Runs the real game (client/app.py's App on Twisted's reactor, as ``mine-duel`` does) in an X11
window under Xvfb with a fresh profile, and plays it with real mouse clicks sent by ``xdotool``
from outside the process. Each path is a list of steps; a step waits until the named button (or
a board cell) is on screen and enabled, then clicks it. Printed per path: clicks, and seconds
from launch to the goal *without* a human's reading time (what the game itself costs), plus the
time the window took to show its first frame.

    python benchmarks/first_hour.py [--paths cpu,host,lan,join] [--rounds 3] [--returning]

``cpu``: launch → the first explore against the CPU; ``host``: launch → seated in a room of one's
own (the invite shown); ``lan``: launch → seated in a room a friend made on the network; ``join``:
the game opened by a clicked invite link → seated. A new player answers the language picker, the
tutorial offer (Skip) and the name popup once; ``--returning`` has all three saved.

Needs Xvfb and xdotool (Debian: xvfb, xdotool). Starts its own Xvfb on a free display when
DISPLAY is not set. Everything listens on loopback only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STEP_TIMEOUT = 20.0  # seconds a step may wait for its target before the path is reported as stuck


@dataclass
class Step:
    """Click the button ``target`` (or ``cell:N``) once it is visible and enabled."""

    target: str


@dataclass
class Path_:
    name: str
    steps: list[Step]
    goal: Callable[[Any], bool]  # App -> reached?
    join_link: bool = False  # launch as `mine-duel LINK` (a link clicked in another app)


@dataclass
class Result:
    clicks: int = 0
    seconds: float = 0.0
    first_frame: float = 0.0
    stuck: str | None = None
    trace: list[str] = field(default_factory=list)


def _start_xvfb() -> subprocess.Popen[bytes] | None:
    if os.environ.get("DISPLAY"):
        return None
    for display in range(91, 120):
        if not Path(f"/tmp/.X11-unix/X{display}").exists():
            proc = subprocess.Popen(["Xvfb", f":{display}", "-screen", "0", "800x1000x24", "-nolisten", "tcp"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(100):
                if Path(f"/tmp/.X11-unix/X{display}").exists():
                    break
                time.sleep(0.05)
            os.environ["DISPLAY"] = f":{display}"
            return proc
    raise SystemExit("no free X display")


def _window_origin() -> tuple[int, int]:
    # By process id: without a window manager xdotool's --name search does not see SDL's title.
    window = subprocess.run(["xdotool", "search", "--pid", str(os.getpid())],
                            capture_output=True, text=True, timeout=5).stdout.split()[0]
    out = subprocess.run(["xdotool", "getwindowgeometry", "--shell", window], capture_output=True, text=True, timeout=5).stdout
    values = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    return int(values.get("X", 0)), int(values.get("Y", 0))


def _find(app: Any, target: str) -> tuple[int, int] | None:
    """The window position of ``target`` if a player can click it now."""
    from mineduel.client.scenes.game import GameScene

    vp = app.viewport
    m = vp.mapping

    def to_window(pos: tuple[float, float]) -> tuple[int, int]:
        return (round(pos[0] * m.scale + m.offset[0]), round(pos[1] * m.scale + m.offset[1] - vp.scroll))

    if target.startswith("cell:"):
        if app.stack.popup is not None or not isinstance(app.stack.top, GameScene):
            return None
        scene = app.stack.top
        if not scene.input_open():
            return None
        return to_window(scene.board.cell_center(int(target[5:])))
    popup = app.stack.popup
    groups = [popup.widgets] if popup is not None else []
    top = app.stack.top
    if popup is None:
        panel = getattr(top, "panel", None)
        if panel is not None and getattr(panel, "open", False):
            groups.append(panel.widgets)
        groups.append(top.widgets)
    for group in groups:
        for button in group.buttons:
            matches = button.name.startswith(target[:-1]) if target.endswith("*") else button.name == target
            if matches and button.enabled:
                return to_window(button.rect.center)
    return None


RETURNING = {"version": 1, "language": "en", "player_name": "Mina", "tutorial": "skipped"}


def run_path(path: Path_, *, link: str | None = None, returning: bool = False) -> Result:
    """One player along ``path`` (new: an empty profile; returning: language, name and tutorial
    already settled); the reactor is run and stopped here."""
    from twisted.internet import reactor, task

    from mineduel.client.app import App

    profile = Path(tempfile.mkdtemp(prefix="first-hour-"))
    if returning:
        (profile / "settings.json").write_text(json.dumps(RETURNING), encoding="utf-8")
    result = Result()
    t0 = time.perf_counter()
    app = App(profile_dir=profile, join=link, size=(390, 844))
    app.frame()
    result.first_frame = time.perf_counter() - t0
    origin = _window_origin()
    steps = list(path.steps)
    state: dict[str, float] = {"since": time.perf_counter()}

    def tick() -> None:
        delay = app.frame()
        loop.interval = 1 / 60 if delay is None else min(delay, 1 / 30)
        now = time.perf_counter()
        if path.goal(app):
            result.seconds = now - t0
            stop()
            return
        if steps:
            where = _find(app, steps[0].target)
            if where is not None:
                step = steps.pop(0)
                subprocess.run(["xdotool", "mousemove", "--sync", str(origin[0] + where[0]), str(origin[1] + where[1]),
                                "click", "1"], check=True, timeout=5)
                result.clicks += 1
                result.trace.append(step.target)
                state["since"] = now
                return
        if now - state["since"] > STEP_TIMEOUT:
            result.stuck = steps[0].target if steps else "goal"
            stop()

    def stop() -> None:
        if loop.running:
            loop.stop()
        reactor.callLater(0, reactor.stop)

    loop = task.LoopingCall(tick)
    loop.start(1 / 60)
    reactor.run()
    app.close()
    shutil.rmtree(profile, ignore_errors=True)
    return result


# A target is a button name (``room:*``: the first button whose name starts with ``room:``) or ``cell:N``.
PLANS: dict[str, list[str]] = {  # a player who has never run the game: language, tutorial offer, name once
    "cpu": ["lang:en", "tutorial.skip", "start", "cell:27"],
    "host": ["lang:en", "tutorial.skip", "friend", "host", "name_ok"],
    "lan": ["lang:en", "tutorial.skip", "friend", "room:*", "name_ok"],
    "join": ["join", "name_ok"],
}
RETURNING_PLANS: dict[str, list[str]] = {  # the same player on a later day
    "cpu": ["start", "cell:27"],
    "host": ["friend", "host"],
    "lan": ["friend", "room:*"],
    "join": ["join"],
}


def _one(name: str, plan: list[str], returning: bool) -> dict[str, Any]:
    """One path in this process (Twisted's reactor runs once per process)."""
    from mineduel.client.scenes.game import GameScene

    def first_move(app: Any) -> bool:
        top = app.stack.top
        view = top.view() if isinstance(top, GameScene) else None
        return view is not None and bool(view.revealed)

    def seated(app: Any) -> bool:
        session = app.online_session
        return session is not None and session.seated

    goals = {"cpu": first_move, "host": seated, "join": seated, "lan": seated}
    link = _waiting_room_link(listed=name == "lan")
    result = run_path(Path_(name, [Step(t) for t in plan], goals[name]), link=link if name == "join" else None,
                      returning=returning)
    return {"path": name, "clicks": result.clicks, "seconds": round(result.seconds, 2),
            "first_frame_s": round(result.first_frame, 2), "stuck_at": result.stuck, "clicked": result.trace}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--paths", default="cpu,host,lan,join")
    parser.add_argument("--returning", action="store_true",
                        help="a player whose language, name and tutorial choice are already saved")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--plan", type=Path, default=None,
                        help="a JSON file {path: [targets...]} replacing the built-in steps (to measure an older tree)")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    plans = dict(RETURNING_PLANS if args.returning else PLANS)
    if args.plan is not None:
        plans.update(json.loads(args.plan.read_text()))
    if args.one is not None:
        os.environ["SDL_VIDEODRIVER"] = "x11"
        os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
        print(json.dumps(_one(args.one, plans[args.one], args.returning)), flush=True)
        return 0
    if shutil.which("xdotool") is None or (not os.environ.get("DISPLAY") and shutil.which("Xvfb") is None):
        print("first_hour: needs xdotool and Xvfb (Debian: xvfb, xdotool)", file=sys.stderr)
        return 2
    xvfb = _start_xvfb()
    failed = False
    try:
        for name in args.paths.split(","):
            runs = []
            for _ in range(args.rounds):
                cmd = [sys.executable, __file__, "--one", name] + (["--plan", str(args.plan)] if args.plan else [])
                cmd += ["--returning"] if args.returning else []
                out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
                lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
                if out.returncode or not lines:
                    print(f"first_hour: {name} failed:\n{out.stderr[-2000:]}", file=sys.stderr)
                    failed = True
                    break
                runs.append(json.loads(lines[-1]))
            if not runs:
                continue
            stuck = [r["stuck_at"] for r in runs if r["stuck_at"]]
            failed = failed or bool(stuck)
            print(json.dumps({"path": name, "player": "returning" if args.returning else "new",
                              "clicks": runs[0]["clicks"], "clicked": runs[0]["clicked"],
                              "median_seconds": statistics.median(r["seconds"] for r in runs),
                              "median_first_frame_s": statistics.median(r["first_frame_s"] for r in runs),
                              "rounds": len(runs), "stuck_at": stuck or None}), flush=True)
        return 1 if failed else 0
    finally:
        if xvfb is not None:
            xvfb.terminate()


def _waiting_room_link(*, listed: bool) -> str:
    """Start ``mine-duel-server --port 0`` and create a room with a line client; the invite link.
    ``listed``: the room is offered on LAN discovery's default port, where the game looks."""
    folder = Path(tempfile.mkdtemp(prefix="first-hour-server-"))
    udp = "47651" if listed else "0"
    proc = subprocess.Popen([sys.executable, "-m", "mineduel.server", "--port", "0", "--udp-port", udp,
                             "--db", str(folder / "db.sqlite")], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    port = None
    while port is None:  # log lines, then {"event": "listening", "tcp": PORT, ...}
        line = proc.stdout.readline()
        if not line:
            raise SystemExit("first_hour: the server stopped before listening")
        if line.startswith("{") and json.loads(line).get("event") == "listening":
            port = json.loads(line)["tcp"]
    import socket

    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    f = sock.makefile("rw", encoding="utf-8", newline="\n")
    f.write(json.dumps({"type": "hello", "protocol": 1}) + "\n")
    f.write(json.dumps({"type": "create_room", "name": "Ann", "listed": listed}) + "\n")
    f.flush()
    code = None
    while code is None:
        msg = json.loads(f.readline())
        if msg.get("type") == "room_created":
            code = msg["room"]
    _KEEP.append((proc, sock))
    return f"mineduel://127.0.0.1:{port}/join/{code}"


_KEEP: list[Any] = []

if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        for proc, sock in _KEEP:
            sock.close()
            proc.terminate()
