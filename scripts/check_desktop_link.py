#!/usr/bin/env python3
"""A click on an invite link opens the game on that room — checked on a real (virtual) desktop.

    python scripts/check_desktop_link.py [--game PATH] [--shot FILE]

What it does, all in a throw-away HOME and XDG folders (the real home is never touched):
1. starts ``Xvfb`` on a free display and a real ``mine-duel-server --port 0`` on loopback, and
   creates a room on it (a raw protocol client keeps the room's creator connected);
2. runs ``mine-duel install-desktop`` (the entry's ``Exec`` is ``--game``, default: the ``mine-duel``
   beside this Python);
3. runs ``xdg-open 'mineduel://127.0.0.1:PORT/join/CODE'`` — xdg-utils finds the handler through
   ``xdg-mime`` and the entry, exactly as a browser or chat program's click does;
4. waits for the game's window (``xdotool search --classname MineDuel``), for the server to log the
   game's ``hello`` (``client='mine-duel/<version>'``), and checks that the game was started with
   the link as its argument (``/proc/<pid>/cmdline``) and that the window's icon is the 64 px
   application icon (``xprop _NET_WM_ICON``, when x11-utils is installed); takes a screenshot (``import -window root``)
   once the game has asked the server about the room;
5. ends the game (SIGTERM), ``mine-duel uninstall-desktop``, stops the server and Xvfb.

Prints one JSON object (``ok``, the link, the screenshot path, what failed). Exit 0 when every check
passed, 1 when one failed, 77 when a tool is missing (Debian: xvfb, xdg-utils, xdotool, imagemagick).
tests/test_desktop_link.py runs it; docs/DESKTOP.md shows the screenshot it took.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

TOOLS = ("Xvfb", "xdg-open", "xdg-mime", "xdotool", "import")
SKIP = 77


def _free_display() -> int:
    for number in range(90, 200):
        if not Path(f"/tmp/.X11-unix/X{number}").exists() and not Path(f"/tmp/.X{number}-lock").exists():
            return number
    raise RuntimeError("no free X display number")


def _wait(predicate, seconds: float, step: float = 0.1) -> bool:  # noqa: ANN001 - a zero-argument callable
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return bool(predicate())


class Lines:
    """A process's standard output, collected on a thread (so that it never blocks on a full pipe)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        assert proc.stdout is not None
        stream = proc.stdout
        self._thread = threading.Thread(target=lambda: self.lines.extend(iter(stream.readline, "")), daemon=True)
        self._thread.start()

    def has(self, text: str) -> bool:
        return any(text in line for line in list(self.lines))


def _window_icon_matches(window: str, env: dict[str, str]) -> bool | None:
    """The window's ``_NET_WM_ICON`` is assets/icons/mine-duel-64.png (None when xprop is not installed)."""
    if shutil.which("xprop") is None:
        return None
    out = subprocess.run(["xprop", "-id", window, "-f", "_NET_WM_ICON", "32c", " = $0+", "_NET_WM_ICON"], env=env,
                         capture_output=True, text=True, timeout=30, check=False).stdout  # numbers, not xprop's picture
    numbers = [int(n) for n in out.partition("=")[2].replace(",", " ").split() if n.isdigit()]
    if numbers[:2] != [64, 64] or len(numbers) < 2 + 64 * 64:
        return False
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    import pygame

    from mineduel.client.resources import asset_path

    shipped = pygame.image.load(str(asset_path("icons", "mine-duel-64.png")))
    for index, argb in enumerate(numbers[2:2 + 64 * 64]):
        want = shipped.get_at((index % 64, index // 64))
        got = ((argb >> 16) & 255, (argb >> 8) & 255, argb & 255, argb >> 24)
        if want.a > 0 and max(abs(a - b) for a, b in zip(got, tuple(want), strict=True)) > 2:
            return False
    return True


def _create_room(port: int) -> tuple[socket.socket, str]:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    reader = sock.makefile("rb")
    sock.sendall(b'{"type":"hello","protocol":1,"client":"check-desktop-link/1"}\n')
    sock.sendall(b'{"type":"create_room","name":"Ann","client_seed":"ann-42"}\n')
    for _ in range(20):
        msg = json.loads(reader.readline())
        if msg.get("type") == "room_created":
            return sock, str(msg["room"])
    raise RuntimeError("the server did not create the room")


def run(game: Path, server: Path, shot: Path, timeout: float) -> dict[str, object]:
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        return {"ok": None, "skipped": f"not installed: {', '.join(missing)}"}
    result: dict[str, object] = {"ok": False, "game": str(game)}
    procs: list[subprocess.Popen[str]] = []
    room_socket = None
    with tempfile.TemporaryDirectory(prefix="mineduel-link-") as tmp:
        home = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "SDL_", "DISPLAY", "WAYLAND"))}
        env.update(HOME=str(home / "home"), XDG_DATA_HOME=str(home / "data"), XDG_CONFIG_HOME=str(home / "config"),
                   XDG_CACHE_HOME=str(home / "cache"), SDL_AUDIODRIVER="dummy", PYGAME_HIDE_SUPPORT_PROMPT="1")
        (home / "home").mkdir()
        # A player who has picked a language and seen the tutorial: the link lands on the room itself.
        (home / "config" / "mine-duel").mkdir(parents=True)
        (home / "config" / "mine-duel" / "settings.json").write_text(
            json.dumps({"version": 1, "language": "en", "player_name": "Bob", "tutorial": "done"}), encoding="utf-8")
        display = _free_display()
        env["DISPLAY"] = f":{display}"
        try:
            xvfb = subprocess.Popen(["Xvfb", f":{display}", "-screen", "0", "480x900x24", "-nolisten", "tcp"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
            procs.append(xvfb)
            if not _wait(lambda: Path(f"/tmp/.X11-unix/X{display}").exists(), 20):
                result["failed"] = "Xvfb did not start"
                return result
            srv = subprocess.Popen([str(server), "--host", "127.0.0.1", "--port", "0", "--no-discovery",
                                    "--db", str(home / "server.db")],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
            procs.append(srv)
            out = Lines(srv)
            if not _wait(lambda: any(line.startswith("{") for line in out.lines), timeout):
                result["failed"] = "the server did not print its ports"
                return result
            port = int(json.loads(next(line for line in out.lines if line.startswith("{")))["tcp"])
            room_socket, code = _create_room(port)
            link = f"mineduel://127.0.0.1:{port}/join/{code}"
            result["link"] = link
            installed = subprocess.run([str(game), "install-desktop", "--exec", str(game)], env=env, capture_output=True,
                                       text=True, timeout=timeout, check=False)
            result["install_desktop"] = installed.stdout.strip().splitlines()[-1:] or installed.stderr.strip()
            if installed.returncode != 0:
                result["failed"] = f"install-desktop: {installed.stderr.strip()}"
                return result
            handler = subprocess.run(["xdg-mime", "query", "default", "x-scheme-handler/mineduel"], env=env,
                                     capture_output=True, text=True, timeout=30, check=False).stdout.strip()
            result["handler"] = handler
            opener = subprocess.Popen(["xdg-open", link], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True)
            procs.append(opener)
            started = time.monotonic()
            try:
                windows = subprocess.run(["xdotool", "search", "--sync", "--classname", "MineDuel"], env=env,
                                         capture_output=True, text=True, timeout=timeout, check=False).stdout.split()
            except subprocess.TimeoutExpired:
                windows = []
            result["window_after_s"] = round(time.monotonic() - started, 2)
            if not windows:
                result["failed"] = "no MineDuel window appeared"
                if opener.poll() is None:
                    opener.kill()
                result["xdg_open_output"] = (opener.communicate()[0] or "").strip().splitlines()[-15:]
                return result
            pid = subprocess.run(["xdotool", "getwindowpid", windows[0]], env=env, capture_output=True, text=True,
                                 timeout=30, check=False).stdout.strip()
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0") if pid.isdigit() else []
            result["game_argv_has_link"] = link in argv
            # The class is set when the window is created, the icon just after: ask again for a while.
            icon: list[bool | None] = []
            _wait(lambda: icon.append(_window_icon_matches(windows[0], env)) or icon[-1] is not False, 15, step=0.5)
            result["window_icon_is_the_app_icon"] = icon[-1]
            from mineduel.shared.version import VERSION

            saw_hello = _wait(lambda: out.has(f"client='mine-duel/{VERSION}'"), timeout)
            result["server_saw_the_game"] = saw_hello
            time.sleep(2.0)  # the room_info answer drawn (a frame after it arrives)
            subprocess.run(["import", "-window", "root", str(shot)], env=env, timeout=60, check=False)
            result["screenshot"] = str(shot)
            if pid.isdigit():
                os.kill(int(pid), signal.SIGTERM)
            try:
                opener.wait(timeout=20)
            except subprocess.TimeoutExpired:
                opener.kill()
            removed = subprocess.run([str(game), "uninstall-desktop"], env=env, capture_output=True, text=True,
                                     timeout=timeout, check=False)
            # The game's own data folder (the player key, session tokens, records) is the player's,
            # which uninstall-desktop rightly keeps; only the desktop integration must be gone.
            leftover = sorted(p.relative_to(home / "data").as_posix() for p in (home / "data").rglob("*")
                              if p.is_file() and p.name != "mimeinfo.cache"
                              and p.relative_to(home / "data").parts[0] != "mine-duel")
            result["left_after_uninstall"] = leftover
            result["ok"] = (handler == "org.example.MineDuel.desktop" and bool(result["game_argv_has_link"])
                            and result["window_icon_is_the_app_icon"] is not False
                            and saw_hello and shot.is_file() and removed.returncode == 0 and not leftover)
            return result
        finally:
            if room_socket is not None:
                room_socket.close()
            for proc in reversed(procs):
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
                    try:
                        proc.wait(timeout=20)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait()
                if proc.stdout is not None:
                    proc.stdout.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = Path(sys.executable).parent
    parser.add_argument("--game", type=Path, default=here / "mine-duel", help="the mine-duel program to register")
    parser.add_argument("--server", type=Path, default=here / "mine-duel-server")
    parser.add_argument("--shot", type=Path, default=Path(tempfile.gettempdir()) / "mineduel-link.png")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds for each step")
    args = parser.parse_args()
    result = run(args.game.absolute(), args.server.absolute(), args.shot.absolute(), args.timeout)
    print(json.dumps(result, indent=1))
    if result["ok"] is None:
        return SKIP
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
