"""Build the one-file executables with PyInstaller, then smoke-test and measure them.

    python scripts/build.py            # both: dist/mine-duel and dist/mine-duel-server
    python scripts/build.py --only server
    python scripts/build.py --no-build # smoke-test what is already in dist/

Needs the build extra: ``pip install -e '.[build]'``. Prints build time, size and the smoke
results; exits non-zero if a build or a smoke test fails. Targets (docs/PERFORMANCE.md):
client ≤ 32 MB, server ≤ 22 MB, first frame ≤ 2 s from the bundle.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPECS = {"client": "mine-duel.spec", "server": "mine-duel-server.spec"}
NAMES = {"client": "mine-duel", "server": "mine-duel-server"}
HEADLESS = {"SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy", "PYGAME_HIDE_SUPPORT_PROMPT": "1"}


def build(kind: str, dist: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "PyInstaller", "--noconfirm", "--log-level", "WARN",
         "--distpath", str(dist), "--workpath", str(ROOT / "build" / "pyinstaller"),
         str(ROOT / "packaging" / SPECS[kind])],
        check=True,
        cwd=ROOT,
    )
    return time.perf_counter() - started


def smoke_client(exe: Path) -> dict[str, object]:
    """`mine-duel --self-test`: every main screen renders; the first frame's time from exec."""
    env = {**os.environ, **HEADLESS}
    started = time.perf_counter()
    proc = subprocess.Popen([str(exe), "--self-test"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
    first_frame = None
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line.rstrip())
        if first_frame is None and line.startswith("first frame"):
            first_frame = time.perf_counter() - started
    code = proc.wait(timeout=120)
    return {"ok": code == 0, "first_frame_s": first_frame, "output": lines}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def smoke_server(exe: Path) -> dict[str, object]:
    """Start on a free loopback port, answer `hello`, shut down cleanly on SIGTERM."""
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="mineduel-build-") as tmp:
        proc = subprocess.Popen(
            [str(exe), "--host", "127.0.0.1", "--port", str(port), "--no-discovery", "--db", str(Path(tmp) / "smoke.db")],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        welcome = None
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and welcome is None:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
                        sock.sendall(b'{"type":"hello","protocol":1,"client":"build-smoke/1"}\n')
                        ready, _, _ = select.select([sock], [], [], 5)
                        if ready:
                            welcome = json.loads(sock.makefile("rb").readline())
                except OSError:
                    time.sleep(0.2)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = -9
        return {"ok": bool(welcome and welcome.get("type") == "welcome") and code == 0, "welcome": welcome, "exit": code}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(SPECS), action="append")
    parser.add_argument("--dist", type=Path, default=ROOT / "dist")
    parser.add_argument("--no-build", action="store_true", help="only smoke-test the existing executables")
    args = parser.parse_args()
    kinds = args.only or ["client", "server"]
    failed = False
    for kind in kinds:
        exe = args.dist / NAMES[kind]
        seconds = None if args.no_build else build(kind, args.dist)
        size = exe.stat().st_size / 1e6
        result = smoke_client(exe) if kind == "client" else smoke_server(exe)
        failed |= not result["ok"]
        built = "" if seconds is None else f"built in {seconds:.1f} s, "
        extra = f", first frame {result['first_frame_s']:.2f} s" if kind == "client" and result["first_frame_s"] else ""
        print(f"{NAMES[kind]}: {built}{size:.1f} MB, smoke {'ok' if result['ok'] else 'FAILED'}{extra}")
        if not result["ok"]:
            print(json.dumps(result, indent=1, default=str))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
