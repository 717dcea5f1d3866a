"""The settings popup's "Invite links open MINE DUEL" row (issue 16, two clicks to a friend):
client/desktop_links.py over client/desktop.py, through the real app on the Driver.

Always in a temporary XDG_DATA_HOME / XDG_CONFIG_HOME / XDG_DATA_DIRS / HOME: the real home is never
touched. The desktop tools are a recording fake except in the one test that runs the real xdg-mime.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pygame
import pytest
from support.client_driver import Driver

from mineduel.client import desktop, desktop_links
from mineduel.client.desktop import APP_ID
from mineduel.client.kiosk import KioskConfig
from mineduel.client.scenes.popups import MenuPopup
from mineduel.client.scenes.settings_popup import SettingsPopup

ENTRY = Path("applications") / f"{APP_ID}.desktop"


class Tools:
    """A fake runner for update-desktop-database / xdg-mime: records, succeeds."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, argv):
        self.calls.append(list(argv))
        return subprocess.CompletedProcess(argv, 0)


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    data, config = tmp_path / "xdg" / "data", tmp_path / "xdg" / "config"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.setenv("XDG_DATA_DIRS", str(tmp_path / "xdg" / "system"))
    monkeypatch.setenv("HOME", str(tmp_path / "xdg" / "home"))
    return data, config


@pytest.fixture
def tools(monkeypatch: pytest.MonkeyPatch) -> Tools:
    fake = Tools()
    monkeypatch.setattr(desktop_links, "bounded_runner", fake)
    return fake


def _tree(root: Path) -> dict[str, bytes]:
    if not root.exists():
        return {}
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()} | {
        p.relative_to(root).as_posix() + "/": b"" for p in root.rglob("*") if p.is_dir()
    }


def _start(tmp_path: Path, **kwargs: object) -> Driver:
    d = Driver(tmp_path / "profile", language="en", **kwargs)
    popup = d.app.stack.popup
    if popup is not None and any(b.name == "tutorial.skip" for b in popup.widgets.buttons):
        d.click_named("tutorial.skip")
        d.wait(0.3)
    d.click_named("start")
    d.wait(0.5)
    return d


def open_settings(d: Driver) -> SettingsPopup:
    d.key(pygame.K_ESCAPE)
    assert isinstance(d.app.stack.popup, MenuPopup)
    d.click_named("menu.settings")
    d.wait(0.3)
    popup = d.app.stack.popup
    assert isinstance(popup, SettingsPopup)
    return popup


@pytest.fixture
def d(tmp_path: Path, homes: tuple[Path, Path], tools: Tools):
    driver = _start(tmp_path)
    yield driver
    driver.close()


def exec_line(data: Path) -> str:
    return next(line for line in (data / ENTRY).read_text(encoding="utf-8").splitlines() if line.startswith("Exec="))


# ----- through the popup -----------------------------------------------------------------------------------


def test_turn_on_then_off_from_the_settings(d, homes, tools) -> None:
    """Off at first; Turn on writes what install-desktop writes (Exec = this game's launcher) and
    registers both schemes; Turn off removes all of it; the row says each state."""
    data, _ = homes
    popup = open_settings(d)
    assert popup.link_state == "off" and popup._links_line()[0] == d.app.ctx.t("settings.links_off")
    assert popup.widgets.by_name("links").label() == "Turn on"
    d.click_named("links")
    assert popup.link_state == "on" and popup.link_failure is None
    assert exec_line(data) == f"Exec={' '.join(desktop.exec_argument(a) for a in desktop.launcher_command())} %u"
    assert ["xdg-mime", "default", f"{APP_ID}.desktop", *desktop.MIME_TYPES] in tools.calls or shutil.which("xdg-mime") is None
    assert popup.widgets.by_name("links").label() == "Turn off"
    assert d.app.stack.popup is popup  # the popup stays open
    d.click_named("links")
    assert popup.link_state == "off"
    assert _tree(data) == {}  # nothing of the install is left (the fake tools wrote no cache)
    # The state is read from the files: a new popup sees what the last one did.
    d.click_named("links")
    d.click_named("close")
    assert open_settings(d).link_state == "on"


def test_the_button_works_by_keyboard_and_keeps_the_card_still(d, homes) -> None:
    popup = open_settings(d)
    button = popup.widgets.by_name("links")
    card = popup.card.copy()
    popup.widgets.focus_name("links")
    d.key(pygame.K_RETURN)
    assert popup.link_state == "on"
    assert popup.card == card and popup.widgets.by_name("links").rect == button.rect  # nothing jumps
    assert popup.widgets.focused().name == "links"


def test_an_entry_that_starts_another_copy_is_said_and_repaired(tmp_path, homes, tools) -> None:
    data, _ = homes
    desktop.install(data, ["/opt/old/mine-duel"], runner=Tools())  # an older venv, moved since
    d = _start(tmp_path)
    try:
        popup = open_settings(d)
        assert popup.link_state == "moved"
        assert popup._links_line() == (d.app.ctx.t("settings.links_moved"), pytest.approx(popup._links_line()[1]))
        assert popup.widgets.by_name("links").label() == "Repair"
        d.click_named("links")
        assert popup.link_state == "on"
        assert "/opt/old/" not in exec_line(data)
    finally:
        d.close()


def test_another_default_handler_is_said_and_repaired(tmp_path, homes, tools) -> None:
    data, config = homes
    desktop.install(data, desktop.launcher_command(), runner=Tools())
    manifest = desktop.Manifest.load(data / desktop.MANIFEST)
    manifest.mime_defaults = list(desktop.MIME_TYPES)  # as a real xdg-mime default would have left it
    manifest.save(data / desktop.MANIFEST)
    config.mkdir(parents=True)
    (config / "mimeapps.list").write_text("[Default Applications]\nx-scheme-handler/mineduel=other.desktop;\n",
                                          encoding="utf-8")
    d = _start(tmp_path)
    try:
        popup = open_settings(d)
        assert popup.link_state == "other"
        assert popup.widgets.by_name("links").label() == "Repair"
        d.click_named("links")
        assert ["xdg-mime", "default", f"{APP_ID}.desktop", *desktop.MIME_TYPES] in tools.calls \
            or shutil.which("xdg-mime") is None
    finally:
        d.close()


def test_an_unwritable_folder_changes_nothing_and_says_so_in_one_line(d, homes, monkeypatch) -> None:
    """The third file cannot be written (as a read-only folder would refuse it; the tests may run as
    root, where chmod does not stop a write): everything written before it is taken back."""
    data, config = homes
    data.mkdir(parents=True)
    (data / "applications").mkdir()
    (data / "applications" / "other.desktop").write_text("[Desktop Entry]\nName=Other\n", encoding="utf-8")
    before, before_config = _tree(data), _tree(config)
    popup = open_settings(d)
    real_write = Path.write_bytes
    writes: list[Path] = []

    def refuse(self: Path, content: bytes) -> int:
        writes.append(self)
        if len(writes) >= 3:
            raise PermissionError(13, "Permission denied", str(self))
        return real_write(self, content)

    monkeypatch.setattr(Path, "write_bytes", refuse)
    d.click_named("links")
    monkeypatch.setattr(Path, "write_bytes", real_write)
    assert len(writes) >= 3
    assert _tree(data) == before and _tree(config) == before_config  # nothing changed
    assert popup.link_state == "off" and d.app.stack.popup is popup
    assert popup.link_failure is not None and popup.link_failure.key == "settings.links_failed"
    text, color = popup._links_line()
    assert text.startswith("Nothing was changed:") and "\n" not in text and "Traceback" not in text
    assert popup.link_failure.folder.startswith(str(data))  # a folder, not a file
    assert not popup.link_failure.folder.endswith(".png")
    d.frame()  # and it draws


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes through chmod 0o555")
def test_a_read_only_data_folder_changes_nothing(d, homes) -> None:
    data, _ = homes
    data.mkdir(parents=True)
    data.chmod(0o555)
    try:
        popup = open_settings(d)
        d.click_named("links")
        assert popup.link_failure is not None and popup.link_failure.key == "settings.links_failed"
        assert _tree(data) == {}
    finally:
        data.chmod(0o755)


def test_a_removal_that_fails_half_way_puts_everything_back(d, homes, monkeypatch) -> None:
    data, _ = homes
    popup = open_settings(d)
    d.click_named("links")
    installed = _tree(data)
    real_unlink = Path.unlink
    count = [0]

    def refuse(self: Path, missing_ok: bool = False) -> None:
        count[0] += 1
        if count[0] == 4:
            raise PermissionError(13, "Permission denied", str(self))
        real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", refuse)
    d.click_named("links")
    monkeypatch.setattr(Path, "unlink", real_unlink)
    assert _tree(data) == installed
    assert popup.link_state == "on" and popup.link_failure is not None
    assert popup.link_failure.key == "settings.links_failed"


def test_a_file_another_program_wrote_is_never_overwritten(d, homes) -> None:
    data, _ = homes
    (data / ENTRY).parent.mkdir(parents=True)
    (data / ENTRY).write_text("[Desktop Entry]\nName=Mine, by hand\n", encoding="utf-8")
    before = _tree(data)
    popup = open_settings(d)
    d.click_named("links")
    assert _tree(data) == before
    assert popup.link_failure is not None and popup.link_failure.key == "settings.links_blocked"
    assert popup.link_state == "off"


def test_a_damaged_install_list_is_said_without_a_button(tmp_path, homes, tools) -> None:
    data, _ = homes
    (data / desktop.MANIFEST).parent.mkdir(parents=True)
    (data / desktop.MANIFEST).write_text('{"files": "everything"}', encoding="utf-8")
    d = _start(tmp_path)
    try:
        popup = open_settings(d)
        assert popup.link_state == "damaged"
        assert "links" not in [b.name for b in popup.widgets.buttons]
        assert "desktop-install.json" in popup._links_line()[0]
        d.frame()
    finally:
        d.close()


def test_without_xdg_utils_the_entry_still_goes_in_and_the_row_says_so(d, homes, tools, monkeypatch) -> None:
    """A missing xdg-mime is not a failure (as for install-desktop): the entry's MimeType is enough
    for most desktops; the row says the desktop picks the handler."""
    data, _ = homes
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    popup = open_settings(d)
    d.click_named("links")
    assert tools.calls == []  # neither tool was there to run
    assert popup.link_state == "on" and popup.link_failure is None
    assert popup._links_line()[0] == d.app.ctx.t("settings.links_no_xdg")
    assert (data / ENTRY).is_file()


def test_a_system_package_entry_is_shown_as_on_without_a_button(tmp_path, homes, tools) -> None:
    system = Path(os.environ["XDG_DATA_DIRS"]) / ENTRY
    system.parent.mkdir(parents=True)
    system.write_text("[Desktop Entry]\nExec=/usr/bin/mine-duel %u\n", encoding="utf-8")
    d = _start(tmp_path)
    try:
        popup = open_settings(d)
        assert popup.link_state == "system"
        assert "links" not in [b.name for b in popup.widgets.buttons]
    finally:
        d.close()


def test_hidden_in_a_kiosk(tmp_path, homes, tools) -> None:
    d = Driver(tmp_path / "profile", size=(1280, 800), kiosk=KioskConfig())
    try:
        d.click_named("lang:en")
        d.wait(0.3)
        popup = d.app.stack.popup
        if popup is not None and any(b.name == "tutorial.skip" for b in popup.widgets.buttons):
            d.click_named("tutorial.skip")
            d.wait(0.3)
        d.click_named("start")
        d.wait(0.3)
        popup = open_settings(d)
        assert not popup.show_links and "links" not in [b.name for b in popup.widgets.buttons]
    finally:
        d.close()


@pytest.mark.parametrize("platform", ["win32", "darwin"])
def test_hidden_on_windows_and_macos(d, homes, monkeypatch, platform) -> None:
    monkeypatch.setattr(sys, "platform", platform)
    popup = open_settings(d)
    assert not popup.show_links and "links" not in [b.name for b in popup.widgets.buttons]
    d.frame()
    assert not homes[0].exists()


# ----- the pure parts ----------------------------------------------------------------------------------------


def test_link_state_reads_what_install_wrote(homes) -> None:
    data, config = homes
    command = ["/opt/mine duel/mine-duel"]
    assert desktop.link_state(data, config, command) == "off"
    desktop.install(data, command, runner=Tools())
    assert desktop.link_state(data, config, command) == "on"
    assert desktop.link_state(data, config, ["/elsewhere/mine-duel"]) == "moved"
    (data / ENTRY).unlink()
    assert desktop.link_state(data, config, command) == "off"  # listed but gone: not working


def test_a_hung_tool_is_cut_off_and_the_install_stands(homes) -> None:
    """desktop._run_tool treats a tool past its timeout as not run; bounded_runner has a short one."""
    data, config = homes

    def hangs(argv):
        raise subprocess.TimeoutExpired(list(argv), desktop_links.TOOL_TIMEOUT)

    desktop.install(data, ["/usr/bin/mine-duel"], runner=hangs)
    assert desktop.link_state(data, config, ["/usr/bin/mine-duel"]) == "on"
    assert desktop_links.TOOL_TIMEOUT <= 2.0


def test_shown_paths_use_a_tilde_for_home(homes) -> None:
    home = Path(os.environ["HOME"])
    assert desktop_links.shown(home / ".local" / "share") == "~/.local/share"
    assert desktop_links.shown("/srv/data") == "/srv/data"


@pytest.mark.skipif(shutil.which("xdg-mime") is None, reason="xdg-mime not installed (Debian: xdg-utils)")
def test_with_the_real_xdg_mime_the_popup_registers_and_unregisters(tmp_path, homes, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CURRENT_DESKTOP", "X-Generic")
    monkeypatch.delenv("DISPLAY", raising=False)
    Path(os.environ["HOME"]).mkdir(parents=True)
    d = _start(tmp_path)
    try:
        popup = open_settings(d)
        d.click_named("links")
        assert popup.link_state == "on", popup.link_failure

        def query(mime: str) -> str:
            return subprocess.run(["xdg-mime", "query", "default", mime], capture_output=True, text=True,
                                  check=False, timeout=30).stdout.strip()

        assert [query(m) for m in desktop.MIME_TYPES] == [f"{APP_ID}.desktop"] * 2
        d.click_named("links")
        assert popup.link_state == "off"
        assert [query(m) for m in desktop.MIME_TYPES] == ["", ""]
    finally:
        d.close()
