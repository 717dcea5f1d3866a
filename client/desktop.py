"""Desktop integration on Linux and other freedesktop systems: a launcher, an icon, the link handler.

``mine-duel install-desktop`` writes, for the current user only (``$XDG_DATA_HOME``, by default
``~/.local/share``):

- ``applications/<APP_ID>.desktop`` — the launcher, registered for ``x-scheme-handler/mineduel`` and
  ``x-scheme-handler/mineduels``, ``Exec=<absolute path of this mine-duel> %u``, so that a click on an
  invite link runs ``mine-duel mineduel://HOST:PORT/join/CODE`` (which acts as ``--join LINK``);
- ``metainfo/<APP_ID>.metainfo.xml`` — AppStream metadata for software centres;
- ``icons/hicolor/<N>x<N>/apps/<APP_ID>.png`` — the icon of scripts/make_icon.py at every size;
- ``mine-duel/desktop-install.json`` — what it wrote, so that ``mine-duel uninstall-desktop`` removes
  exactly that (files, the folders it had to create when they are empty again, and its own lines in
  ``$XDG_CONFIG_HOME/mimeapps.list``) and nothing else.

Then, when they are installed, ``update-desktop-database`` (the MIME cache of that folder) and
``xdg-mime default`` (this entry becomes the handler of both schemes). A file at one of those paths
that an earlier install did not write is never overwritten: the command says so and writes nothing.

Texts come from the game's catalogs (``desktop.*``, ``app.title``), so the launcher speaks the same four
languages as the game. Windows and macOS: docs/DESKTOP.md. Only the standard library at import time
(pygame only inside :func:`window_icon`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape

from mineduel.client.resources import asset_path, locale_dir
from mineduel.shared.version import RELEASED, VERSION

if TYPE_CHECKING:
    import pygame

# The reverse-DNS id AppStream and the desktop-entry spec ask for. The project owns no domain yet, so
# this is an honest placeholder under the reserved example.org (RFC 2606) rather than somebody's real
# domain or account: change it (and the file names it gives) once the project has a home of its own;
# docs/DESKTOP.md says the same. An old install is still removed by its manifest.
APP_ID = "org.example.MineDuel"
WM_CLASS = "MineDuel"  # SDL_VIDEO_X11_WMCLASS, set by client/cli.py; StartupWMClass matches it
SCHEMES = ("mineduel", "mineduels")
MIME_TYPES = tuple(f"x-scheme-handler/{scheme}" for scheme in SCHEMES)
ICON_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
WINDOW_ICON_SIZE = 64
MANIFEST = Path("mine-duel") / "desktop-install.json"
# The catalogs' file names (client/i18n.py) and the desktop-entry / AppStream locale for each.
CATALOG_LOCALES = {"en": "", "ko": "ko", "ja": "ja", "zh": "zh_CN"}
# Characters the desktop-entry spec reserves in an Exec argument: such an argument is double-quoted.
_RESERVED = set(" \t\n\"'\\><~|&;$*?#()`")

Runner = Callable[[Sequence[str]], object]


def icon_file(size: int) -> str:
    return f"mine-duel-{size}.png"


def window_icon() -> pygame.Surface:
    """The 64 px application icon for ``pygame.display.set_icon``; the bare mine glyph if the file is missing."""
    import pygame

    try:
        return pygame.image.load(str(asset_path("icons", icon_file(WINDOW_ICON_SIZE))))
    except (OSError, pygame.error, RuntimeError):
        from mineduel.client.ui import palette, shapes

        return shapes.icon("mine", WINDOW_ICON_SIZE, palette.PRIMARY)


def texts() -> dict[str, dict[str, str]]:
    """``{key: {desktop locale ("" for the default): text}}`` for the keys the launcher and metainfo use."""
    out: dict[str, dict[str, str]] = {}
    for catalog, locale in CATALOG_LOCALES.items():
        data = json.loads((locale_dir() / f"mineduel.{catalog}.json").read_text(encoding="utf-8"))[catalog]
        for key in ("app.title", "desktop.generic_name", "desktop.comment", "desktop.description"):
            out.setdefault(key, {})[locale] = data[key]
    return out


def launcher_command() -> list[str]:
    """How a desktop starts this very installation, with absolute paths (a frozen build, a venv, pipx)."""
    if getattr(sys, "frozen", False):
        return [str(Path(sys.executable).absolute())]
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is not None and script.name == "mine-duel" and script.is_file():
        return [str(script.absolute())]  # not resolved: a pipx link keeps working across upgrades
    beside = Path(sys.executable).parent / "mine-duel"
    if beside.is_file():
        return [str(beside.absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "mineduel.client.cli"]


def exec_argument(arg: str) -> str:
    """One Exec argument, quoted as the desktop-entry spec says (then escaped as a string value)."""
    if arg and not (_RESERVED & set(arg)):
        return arg.replace("%", "%%")
    quoted = '"' + "".join("\\" + c if c in '"`$\\' else c for c in arg) + '"'
    return quoted.replace("%", "%%").replace("\\", "\\\\")


def _value(text: str) -> str:
    """A desktop-entry string value: one line, with the spec's escapes."""
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")


def desktop_entry(command: Sequence[str]) -> str:
    """The ``.desktop`` file for ``command`` (absolute), handling both link schemes with ``%u``."""
    words = texts()
    lines = ["[Desktop Entry]", "Type=Application", "Version=1.4"]
    for field_name, key in (("Name", "app.title"), ("GenericName", "desktop.generic_name"), ("Comment", "desktop.comment")):
        for locale, text in words[key].items():
            if locale and text == words[key][""]:
                continue  # the same as the default (the title): no line needed
            lines.append(f"{field_name}{f'[{locale}]' if locale else ''}={_value(text)}")
    lines += [
        f"Exec={' '.join(exec_argument(a) for a in command)} %u",
        f"Icon={APP_ID}",
        "Terminal=false",
        "Categories=Game;BoardGame;LogicGame;",
        "Keywords=minesweeper;mines;duel;multiplayer;board;",
        "MimeType=" + "".join(f"{m};" for m in MIME_TYPES),
        "StartupNotify=true",
        f"StartupWMClass={WM_CLASS}",
    ]
    return "\n".join(lines) + "\n"


def metainfo() -> str:
    """AppStream metadata (the software centres' page of the game)."""
    words = texts()

    def localised(tag: str, key: str, indent: str) -> list[str]:
        out = []
        for locale, text in words[key].items():
            lang = f' xml:lang="{locale}"' if locale else ""
            out.append(f"{indent}<{tag}{lang}>{escape(text)}</{tag}>")
        return out

    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        "<!-- Written from client/desktop.py by mine-duel install-desktop and scripts/build.py (the .deb). -->",
        '<component type="desktop-application">',
        f"  <id>{APP_ID}</id>",
        "  <metadata_license>MIT</metadata_license>",
        "  <project_license>MIT AND OFL-1.1</project_license>",
        "  <name>MINE DUEL</name>",
        *localised("summary", "desktop.comment", "  "),
        "  <description>",
        *localised("p", "desktop.description", "    "),
        "  </description>",
        "  <developer id=\"mine-duel\">",
        "    <name>The MINE DUEL authors</name>",
        "  </developer>",
        f"  <launchable type=\"desktop-id\">{APP_ID}.desktop</launchable>",
        "  <categories>",
        "    <category>Game</category>",
        "    <category>BoardGame</category>",
        "  </categories>",
        "  <keywords>",
        *[f"    <keyword>{k}</keyword>" for k in ("minesweeper", "duel", "multiplayer")],
        "  </keywords>",
        "  <provides>",
        "    <binary>mine-duel</binary>",
        *[f"    <mediatype>{m}</mediatype>" for m in MIME_TYPES],
        "  </provides>",
        "  <supports>",
        "    <control>pointing</control>",
        "    <control>keyboard</control>",
        "    <control>touch</control>",
        "  </supports>",
        '  <content_rating type="oars-1.1"/>',
        "  <releases>",
        f'    <release version="{VERSION}" date="{RELEASED}"/>',
        "  </releases>",
        "</component>",
    ]
    return "\n".join(lines) + "\n"


def data_home() -> Path:
    """``$XDG_DATA_HOME`` (an absolute path) or ``~/.local/share``, as the base-directory spec says."""
    value = os.environ.get("XDG_DATA_HOME", "")
    return Path(value) if os.path.isabs(value) else Path.home() / ".local" / "share"


def config_home() -> Path:
    value = os.environ.get("XDG_CONFIG_HOME", "")
    return Path(value) if os.path.isabs(value) else Path.home() / ".config"


def planned_files(command: Sequence[str]) -> dict[Path, bytes]:
    """What an install writes, relative to the data folder."""
    files: dict[Path, bytes] = {
        Path("applications") / f"{APP_ID}.desktop": desktop_entry(command).encode("utf-8"),
        Path("metainfo") / f"{APP_ID}.metainfo.xml": metainfo().encode("utf-8"),
    }
    for size in ICON_SIZES:
        files[Path("icons") / "hicolor" / f"{size}x{size}" / "apps" / f"{APP_ID}.png"] = asset_path(
            "icons", icon_file(size)).read_bytes()
    return files


@dataclass
class Manifest:
    """What an install wrote (paths relative to the data folder), kept between install and uninstall."""

    files: list[str] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)  # folders the install created, to remove when empty
    mime_defaults: list[str] = field(default_factory=list)  # scheme types xdg-mime made ours

    @classmethod
    def load(cls, path: Path) -> Manifest:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls()
        except (OSError, ValueError) as exc:
            raise DesktopError(f"cannot read {path}: {exc}") from None
        if not isinstance(data, dict) or not all(
            isinstance(data.get(k, []), list) and all(isinstance(v, str) for v in data.get(k, []))
            for k in ("files", "dirs", "mime_defaults")
        ):
            raise DesktopError(f"{path} is not a desktop-install manifest; remove it by hand")
        return cls(list(data.get("files", [])), list(data.get("dirs", [])), list(data.get("mime_defaults", [])))

    def save(self, path: Path) -> None:
        body = {"app_id": APP_ID, "version": VERSION, "files": self.files, "dirs": self.dirs,
                "mime_defaults": self.mime_defaults}
        path.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")


class DesktopError(Exception):
    """An install or removal that cannot go ahead; nothing was changed."""


class NotOurs(DesktopError):
    """A file at one of the install's paths that no earlier install wrote (it is never overwritten)."""


def _run_tool(runner: Runner, argv: list[str]) -> bool:
    """Run a desktop tool if it is installed; False when it is missing or fails (the install stands)."""
    if shutil.which(argv[0]) is None:
        return False
    try:
        result = runner(argv)
    except (OSError, subprocess.SubprocessError):  # a tool that cannot start, or hangs past its timeout
        return False
    return getattr(result, "returncode", 0) == 0


def _default_runner(argv: Sequence[str]) -> object:
    return subprocess.run(list(argv), check=False, capture_output=True, timeout=60)


def install(
    base: Path, command: Sequence[str], *, runner: Runner = _default_runner, register: bool = True,
) -> list[str]:
    """Write the launcher, metainfo and icons under ``base``; return what it did, one line each."""
    manifest_path = base / MANIFEST
    manifest = Manifest.load(manifest_path)
    files = planned_files(command)
    ours = set(manifest.files)
    foreign = [str(base / rel) for rel in files if (base / rel).exists() and rel.as_posix() not in ours]
    if foreign:
        raise NotOurs("not overwriting files an earlier install-desktop did not write: " + ", ".join(foreign))
    report = []
    base.mkdir(parents=True, exist_ok=True)  # the data folder itself is the user's, never removed
    for rel, data in [(MANIFEST, b""), *files.items()]:
        for part in reversed(rel.parents[:-1]):  # each folder between base and the file, outermost first
            if not (base / part).exists():
                (base / part).mkdir()
                if part.as_posix() not in manifest.dirs:
                    manifest.dirs.append(part.as_posix())
        if rel == MANIFEST:
            continue
        (base / rel).write_bytes(data)
        if rel.as_posix() not in manifest.files:
            manifest.files.append(rel.as_posix())
        manifest.save(manifest_path)  # after each file: an interrupted install can still be undone
        report.append(f"wrote {base / rel}")
    if register:
        applications = str(base / "applications")
        if _run_tool(runner, ["update-desktop-database", applications]):
            report.append(f"updated the MIME cache of {applications}")
        if _run_tool(runner, ["xdg-mime", "default", f"{APP_ID}.desktop", *MIME_TYPES]):
            manifest.mime_defaults = list(MIME_TYPES)
            report.append(f"{APP_ID}.desktop now opens {', '.join(s + '://' for s in SCHEMES)} links")
        else:
            report.append("xdg-mime is not installed: the desktop picks the handler from the entry's MimeType")
    manifest.save(manifest_path)
    return report


def _drop_mime_defaults(path: Path, mime_types: Sequence[str]) -> bool:
    """Remove this entry from ``mimeapps.list`` for ``mime_types``; other lines stay byte for byte."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    except FileNotFoundError:
        return False
    ours = f"{APP_ID}.desktop"
    changed = False
    kept = []
    for line in lines:
        key, sep, value = line.rstrip("\r\n").partition("=")
        if sep and key.strip() in mime_types:
            apps = [a for a in value.split(";") if a]
            if ours in apps:
                changed = True
                rest = [a for a in apps if a != ours]
                if not rest:
                    continue
                line = f"{key}={';'.join(rest)};\n"
        kept.append(line)
    if changed:
        path.write_text("".join(kept), encoding="utf-8")
    return changed


def uninstall(base: Path, config: Path, *, runner: Runner = _default_runner) -> list[str]:
    """Remove exactly what :func:`install` wrote under ``base`` (and its lines in ``config``/mimeapps.list)."""
    manifest_path = base / MANIFEST
    if not manifest_path.exists():
        return [f"nothing to remove: {manifest_path} does not exist (install-desktop was not run for {base})"]
    manifest = Manifest.load(manifest_path)
    report = []
    for rel in manifest.files:
        target = base / rel
        if target.is_file():
            target.unlink()
            report.append(f"removed {target}")
    manifest_path.unlink()
    for rel in sorted(manifest.dirs, key=lambda d: d.count("/"), reverse=True):
        folder = base / rel
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
            report.append(f"removed the empty folder {folder}")
    if manifest.mime_defaults and _drop_mime_defaults(config / "mimeapps.list", manifest.mime_defaults):
        report.append(f"{APP_ID}.desktop is no longer the default for {', '.join(manifest.mime_defaults)}")
    applications = base / "applications"
    if applications.is_dir() and _run_tool(runner, ["update-desktop-database", str(applications)]):
        report.append(f"updated the MIME cache of {applications}")
    return report


def supported() -> bool:
    """Whether install-desktop applies here: freedesktop systems, not Windows or macOS (docs/DESKTOP.md)."""
    return sys.platform not in ("win32", "darwin")


def _entry_exec(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return next((line[5:] for line in text.splitlines() if line.startswith("Exec=")), None)


def _default_handlers(path: Path) -> dict[str, str]:
    """The first application ``mimeapps.list`` names for each MIME type under [Default Applications]."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    out: dict[str, str] = {}
    section = ""
    for line in lines:
        line = line.strip()
        if line.startswith("["):
            section = line
        elif section == "[Default Applications]" and "=" in line:
            key, _, value = line.partition("=")
            first = next((a for a in value.split(";") if a.strip()), "")
            out.setdefault(key.strip(), first.strip())
    return out


def link_state(base: Path, config: Path, command: Sequence[str]) -> str:
    """Where this user's invite links stand, read from what :func:`install` wrote under ``base``:

    ``"off"`` (no install), ``"on"`` (the entry runs ``command``), ``"moved"`` (it runs another
    program: a moved or second installation), ``"other"`` (xdg-mime had made it the handler and
    ``config``/mimeapps.list now names another program first). A damaged manifest raises DesktopError.
    """
    manifest = Manifest.load(base / MANIFEST)
    rel = (Path("applications") / f"{APP_ID}.desktop").as_posix()
    entry = base / rel
    if rel not in manifest.files or not entry.is_file():
        return "off"
    if _entry_exec(entry) != f"{' '.join(exec_argument(a) for a in command)} %u":
        return "moved"
    handlers = _default_handlers(config / "mimeapps.list")
    if any(handlers.get(m, f"{APP_ID}.desktop") != f"{APP_ID}.desktop" for m in manifest.mime_defaults):
        return "other"
    return "on"


def system_entry() -> Path | None:
    """The entry a system package installed for every user (the .deb's), found through ``$XDG_DATA_DIRS``."""
    dirs = os.environ.get("XDG_DATA_DIRS", "") or "/usr/local/share:/usr/share"
    for folder in dirs.split(os.pathsep):
        path = Path(folder) / "applications" / f"{APP_ID}.desktop"
        if os.path.isabs(folder) and path.is_file():
            return path
    return None


def _parser(prog: str, description: str) -> argparse.ArgumentParser:
    return argparse.ArgumentParser(prog=prog, description=description)


def install_main(argv: Sequence[str]) -> int:
    """``mine-duel install-desktop [--exec PATH] [--no-register]``."""
    parser = _parser("mine-duel install-desktop",
                     "Add MINE DUEL to this user's desktop menu and make it open mineduel:// and mineduels:// links "
                     "(freedesktop desktops: GNOME, KDE, Xfce, ...; docs/DESKTOP.md). Undo with uninstall-desktop.")
    parser.add_argument("--exec", dest="command", default=None, metavar="PATH",
                        help="the program the launcher runs (default: this mine-duel, with its absolute path)")
    parser.add_argument("--no-register", action="store_true",
                        help="write the files only; do not run update-desktop-database or xdg-mime")
    args = parser.parse_args(argv)
    if not supported():
        print("mine-duel install-desktop: this writes freedesktop entries (Linux and BSD desktops); on Windows "
              "and macOS the link handler is the registry or the .app's Info.plist: see docs/DESKTOP.md", file=sys.stderr)
        return 2
    command = [str(Path(args.command).absolute())] if args.command else launcher_command()
    try:
        lines = install(data_home(), command, register=not args.no_register)
    except (DesktopError, OSError) as exc:
        print(f"mine-duel install-desktop: {exc}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


def uninstall_main(argv: Sequence[str]) -> int:
    """``mine-duel uninstall-desktop``."""
    parser = _parser("mine-duel uninstall-desktop",
                     "Remove what install-desktop wrote for this user (the launcher, metainfo, icons, link handler).")
    parser.parse_args(argv)
    try:
        lines = uninstall(data_home(), config_home())
    except (DesktopError, OSError) as exc:
        print(f"mine-duel uninstall-desktop: {exc}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0
