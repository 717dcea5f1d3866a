"""Build the one-file executables with PyInstaller, then smoke-test and measure them.

    python scripts/build.py            # both: dist/mine-duel and dist/mine-duel-server
    python scripts/build.py --only server
    python scripts/build.py --no-build # smoke-test what is already in dist/
    python scripts/build.py --only client --deb   # also dist/mine-duel_<version>_<arch>.deb
    python scripts/build.py --no-build --only client --deb   # the .deb from the dist/mine-duel there

Needs the build extra: ``pip install -e '.[build]'``. Prints build time, size and the smoke
results; exits non-zero if a build or a smoke test fails. Targets (docs/PERFORMANCE.md):
client ≤ 32 MB, server ≤ 22 MB, first frame ≤ 2 s from the bundle, the .deb ≤ 40 MB.

``--deb``: the single-file Linux desktop package (docs/DESKTOP.md says why a .deb and not an
AppImage): the one-file game as ``/usr/bin/mine-duel`` with its desktop entry (``Exec=/usr/bin/mine-duel
%u``, the ``mineduel://`` and ``mineduels://`` handler), AppStream metainfo and the icons at every
hicolor size, all written by client/desktop.py, built with ``dpkg-deb``. Its smoke test reads the
package back (``dpkg-deb --info``/``--contents``), extracts it into a temporary folder, validates the
entry (``desktop-file-validate``, when installed) and runs the extracted game's ``--self-test``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import textwrap
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
        env={**os.environ, "PYGAME_HIDE_SUPPORT_PROMPT": "1"},  # PyInstaller's analysis imports pygame
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


def _version() -> str:
    from mineduel.shared.version import VERSION

    return VERSION


def _deb_depends() -> str:
    """The C library the one-file build was linked against, at least (PyInstaller bundles the rest)."""
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libc6"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "libc6"
    return f"libc6 (>= {out.split('-')[0]})"


def build_deb(exe: Path, dist: Path) -> Path:
    """``dist/mine-duel_<version>_<arch>.deb`` around the one-file ``exe`` (see the module docstring)."""
    from mineduel.client import desktop

    arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True, check=True).stdout.strip()
    version = _version()
    root = ROOT / "build" / "deb" / f"mine-duel_{version}_{arch}"
    shutil.rmtree(root, ignore_errors=True)
    files: dict[str, bytes] = {
        "usr/share/applications/" + f"{desktop.APP_ID}.desktop": desktop.desktop_entry(["/usr/bin/mine-duel"]).encode(),
        "usr/share/metainfo/" + f"{desktop.APP_ID}.metainfo.xml": desktop.metainfo().encode(),
        "usr/share/doc/mine-duel/copyright": (
            b"MINE DUEL: the game is under the MIT licence; the bundled font is a subset of Noto Sans CJK under\n"
            b"the SIL Open Font License 1.1. Both texts follow.\n\n"
        ) + (ROOT / "LICENSE").read_bytes() + b"\n" + (ROOT / "assets" / "fonts" / "OFL.txt").read_bytes(),
    }
    for size in desktop.ICON_SIZES:
        files[f"usr/share/icons/hicolor/{size}x{size}/apps/{desktop.APP_ID}.png"] = (
            ROOT / "assets" / "icons" / desktop.icon_file(size)).read_bytes()
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        (root / rel).chmod(0o644)
    (root / "usr" / "bin").mkdir(parents=True)
    shutil.copy2(exe, root / "usr" / "bin" / "mine-duel")
    (root / "usr" / "bin" / "mine-duel").chmod(0o755)
    installed_kb = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) // 1024
    (root / "DEBIAN").mkdir()
    words = desktop.texts()
    long_text = words["desktop.description"][""]
    (root / "DEBIAN" / "control").write_text(
        "Package: mine-duel\n"
        f"Version: {version}\n"
        f"Architecture: {arch}\n"
        # No project address exists yet: a reserved .invalid domain (RFC 2606) instead of an invented one.
        "Maintainer: MINE DUEL authors <maintainers@mine-duel.invalid>\n"
        f"Installed-Size: {installed_kb}\n"
        f"Depends: {_deb_depends()}\n"
        "Recommends: xdg-utils\n"
        "Section: games\n"
        "Priority: optional\n"
        f"Description: {words['desktop.comment']['']}\n"
        + "".join(f" {line}\n" for line in textwrap.wrap(long_text, 78))
        + " .\n"
        + " One self-contained program (Python, pygame-ce and Twisted inside), registered as\n"
        " the handler of mineduel:// and mineduels:// invite links.\n",
        encoding="utf-8",
    )
    for folder in [root, *[p for p in root.rglob("*") if p.is_dir()]]:
        folder.chmod(0o755)
    out = dist / f"mine-duel_{version}_{arch}.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zxz", "--build", str(root), str(out)], check=True,
                   stdout=subprocess.DEVNULL)
    return out


def smoke_deb(deb: Path) -> dict[str, object]:
    """Read the package back, extract it, validate its entry, run the extracted game's self-test."""
    from mineduel.client import desktop

    info = subprocess.run(["dpkg-deb", "--info", str(deb)], capture_output=True, text=True, check=False)
    contents = subprocess.run(["dpkg-deb", "--contents", str(deb)], capture_output=True, text=True, check=False).stdout
    expected = ["./usr/bin/mine-duel", f"./usr/share/applications/{desktop.APP_ID}.desktop",
                f"./usr/share/metainfo/{desktop.APP_ID}.metainfo.xml",
                *[f"./usr/share/icons/hicolor/{s}x{s}/apps/{desktop.APP_ID}.png" for s in desktop.ICON_SIZES]]
    listed = {line.split()[-1] for line in contents.splitlines() if line.split()}
    missing = [path for path in expected if path not in listed]
    with tempfile.TemporaryDirectory(prefix="mineduel-deb-") as tmp:
        subprocess.run(["dpkg-deb", "-x", str(deb), tmp], check=True)
        entry = Path(tmp) / "usr" / "share" / "applications" / f"{desktop.APP_ID}.desktop"
        validated = None
        if shutil.which("desktop-file-validate"):
            check = subprocess.run(["desktop-file-validate", str(entry)], capture_output=True, text=True, check=False)
            validated = check.returncode == 0 and not check.stdout.strip()
        client = smoke_client(Path(tmp) / "usr" / "bin" / "mine-duel")
    exec_ok = "Exec=/usr/bin/mine-duel %u" in entry_text(deb, desktop.APP_ID)
    ok = info.returncode == 0 and not missing and validated is not False and bool(client["ok"]) and exec_ok
    return {"ok": ok, "missing": missing, "desktop_file_validate": validated, "exec_line": exec_ok,
            "first_frame_s": client["first_frame_s"], "self_test": client["output"][-1:] if client["output"] else []}


def entry_text(deb: Path, app_id: str) -> str:
    """The desktop entry inside ``deb`` (read with dpkg-deb --fsys-tarfile, not from the build folder)."""
    tar_bytes = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(deb)], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as archive:
        member = archive.extractfile(f"./usr/share/applications/{app_id}.desktop")
        return member.read().decode("utf-8") if member is not None else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(SPECS), action="append")
    parser.add_argument("--dist", type=Path, default=ROOT / "dist")
    parser.add_argument("--no-build", action="store_true", help="only smoke-test the existing executables")
    parser.add_argument("--deb", action="store_true",
                        help="also package the one-file game as a .deb with its desktop entry, metainfo and icons")
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
        sized = f"{size:.1f} MB, " if size >= 0.1 else ""  # not for an installed console script (.ci/run)
        print(f"{NAMES[kind]}: {built}{sized}smoke {'ok' if result['ok'] else 'FAILED'}{extra}")
        if not result["ok"]:
            print(json.dumps(result, indent=1, default=str))
    if args.deb:
        started = time.perf_counter()
        deb = build_deb(args.dist / NAMES["client"], args.dist)
        seconds = time.perf_counter() - started
        result = smoke_deb(deb)
        failed |= not result["ok"]
        frame = f", first frame {result['first_frame_s']:.2f} s" if result["first_frame_s"] else ""
        print(f"{deb.name}: packaged in {seconds:.1f} s, {deb.stat().st_size / 1e6:.1f} MB, "
              f"smoke {'ok' if result['ok'] else 'FAILED'}{frame}")
        if not result["ok"]:
            print(json.dumps(result, indent=1, default=str))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
