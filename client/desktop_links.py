"""The settings popup's "Invite links open MINE DUEL" row (issue 16: two clicks to a friend).

A player who installed with pip should not need a terminal for ``mine-duel install-desktop``: the
row reads where this user's link handler stands (:func:`client.desktop.link_state`) and one button
runs the same :func:`~client.desktop.install` / :func:`~client.desktop.uninstall` the sub-commands
run, in ``$XDG_DATA_HOME`` / ``$XDG_CONFIG_HOME``. Offered only where desktop.py can do it: a
freedesktop system (not Windows or macOS) and not a kiosk (a shared machine's desktop is not the
player's to change).

It runs in the frame, on the client's one thread: the files are a few kilobytes (about 7 ms), and
the two desktop tools (``update-desktop-database``, ``xdg-mime default``; 2 and 6 ms measured) are
each cut off after :data:`TOOL_TIMEOUT` seconds, so a hung tool costs at most that, once, on a click.
A failure (an unwritable folder, a file another program put at one of the paths, a damaged list of
installed files) puts back every file and folder as it was and comes back as one line to show.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mineduel.client import desktop

TOOL_TIMEOUT = 2.0
# The states of :func:`state` (desktop.link_state's, plus "system": a package installed it for every
# user; "damaged": the list of what an install wrote cannot be read) and each one's line in the row.
STATE_LINES = {
    "off": "settings.links_off",
    "on": "settings.links_on",
    "moved": "settings.links_moved",
    "other": "settings.links_other",
    "system": "settings.links_system",
    "damaged": "settings.links_damaged",
}
# What the row's button does in each state (no button where there is nothing to do from here).
ACTIONS = {"off": "install", "on": "uninstall", "moved": "install", "other": "install"}


def offered(*, kiosk: bool) -> bool:
    """Whether the settings show the row at all."""
    return desktop.supported() and not kiosk


def homes() -> tuple[Path, Path]:
    """The data and config folders the sub-commands use (the XDG base-directory spec's)."""
    return desktop.data_home(), desktop.config_home()


def manifest_path() -> Path:
    """The list of what an install wrote (install-desktop's and this row's alike)."""
    return homes()[0] / desktop.MANIFEST


def state() -> str:
    """One of :data:`STATE_LINES`' keys for the running game's launcher."""
    base, config = homes()
    try:
        found = desktop.link_state(base, config, desktop.launcher_command())
    except desktop.DesktopError:
        return "damaged"
    if found == "off" and desktop.system_entry() is not None:
        return "system"
    return found


def state_line(found: str) -> str:
    """The catalog key of the row's line for ``found`` (:func:`state`)."""
    if found == "on" and shutil.which("xdg-mime") is None:
        return "settings.links_no_xdg"  # the entry works through its MimeType; nothing named it the default
    return STATE_LINES[found]


def bounded_runner(argv: Sequence[str]) -> object:
    """desktop.py's tool runner with a short timeout (desktop._run_tool treats a timeout as "not run")."""
    return subprocess.run(list(argv), check=False, capture_output=True, stdin=subprocess.DEVNULL,
                          timeout=TOOL_TIMEOUT)


@dataclass
class Snapshot:
    """The files and folders an install or removal may touch, as they were, to put back on a failure."""

    files: dict[Path, bytes | None] = field(default_factory=dict)  # None: the file did not exist
    missing_dirs: list[Path] = field(default_factory=list)  # deepest first

    @classmethod
    def take(cls, base: Path, config: Path, command: Sequence[str]) -> Snapshot:
        rels = {*desktop.planned_files(command), desktop.MANIFEST}
        with contextlib.suppress(desktop.DesktopError):  # a damaged list: uninstall refuses before touching anything
            rels |= {Path(f) for f in desktop.Manifest.load(base / desktop.MANIFEST).files}
        paths = [base / rel for rel in rels] + [config / "mimeapps.list"]
        snap = cls()
        for path in paths:
            try:
                snap.files[path] = path.read_bytes() if path.is_file() else None
            except OSError:
                snap.files[path] = None
        folders = {parent for path in paths for parent in path.parents if not parent.exists()}
        snap.missing_dirs = sorted(folders, key=lambda p: len(p.parts), reverse=True)
        return snap

    def restore(self) -> None:
        """Best effort: whatever cannot be put back was not written in the first place."""
        for path, data in self.files.items():
            try:
                if data is None:
                    path.unlink(missing_ok=True)
                elif not path.is_file() or path.read_bytes() != data:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(data)
            except OSError:
                pass
        for folder in self.missing_dirs:
            try:
                if folder.is_dir() and not any(folder.iterdir()):
                    folder.rmdir()
            except OSError:
                pass


@dataclass(frozen=True)
class Failure:
    """Why nothing changed: a catalog key and its ``%{folder}``."""

    key: str
    folder: str


def shown(path: Path | str) -> str:
    """A path as the row shows it: the home folder as ``~``."""
    text = str(path)
    home = str(Path.home())
    if home not in ("", "/") and (text == home or text.startswith(home + "/")):
        return "~" + text[len(home):]
    return text


def apply(action: str, *, runner: desktop.Runner | None = None) -> Failure | None:
    """Run ``action`` ("install" or "uninstall") as the sub-commands do; None when it went through."""
    runner = runner or bounded_runner
    base, config = homes()
    command = desktop.launcher_command()
    snapshot = Snapshot.take(base, config, command)
    try:
        if action == "install":
            desktop.install(base, command, runner=runner)
        else:
            desktop.uninstall(base, config, runner=runner)
    except desktop.NotOurs:
        snapshot.restore()
        return Failure("settings.links_blocked", shown(base / "applications"))
    except desktop.DesktopError:
        snapshot.restore()
        return Failure("settings.links_damaged", shown(manifest_path()))
    except OSError as exc:
        snapshot.restore()
        where = Path(exc.filename) if isinstance(exc.filename, str) and exc.filename else base
        return Failure("settings.links_failed", shown(where if where.is_dir() else where.parent))  # the folder
    return None
