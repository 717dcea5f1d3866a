"""``mine-duel install-desktop`` / ``uninstall-desktop`` (client/desktop.py), always in a temporary
XDG_DATA_HOME / XDG_CONFIG_HOME: the real home is never touched.

Where Debian's ``desktop-file-validate``, ``appstreamcli`` and ``xdg-mime`` are installed the files are
also checked by them (skipped with the reason otherwise); the click on a link under Xvfb is
``scripts/check_desktop_link.py`` (tests/test_desktop_link.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mineduel.client import desktop
from mineduel.client.desktop import APP_ID, DesktopError, Manifest

COMMAND = ["/opt/mine duel/bin/mine-duel"]


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()} | {
        p.relative_to(root).as_posix() + "/": b"" for p in root.rglob("*") if p.is_dir()
    }


class Tools:
    """A fake runner: records the desktop tools install/uninstall run, succeeds."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, argv):
        self.calls.append(list(argv))
        return subprocess.CompletedProcess(argv, 0)


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    data, config = tmp_path / "data", tmp_path / "config"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return data, config


def test_the_entry_opens_both_link_schemes_with_an_absolute_command() -> None:
    entry = desktop.desktop_entry(COMMAND)
    lines = entry.splitlines()
    assert lines[0] == "[Desktop Entry]"
    assert 'Exec="/opt/mine duel/bin/mine-duel" %u' in lines  # quoted: the path has a space
    assert "MimeType=x-scheme-handler/mineduel;x-scheme-handler/mineduels;" in lines
    assert f"Icon={APP_ID}" in lines
    assert "Name=MINE DUEL" in lines
    for locale in ("ko", "ja", "zh_CN"):  # the catalogs' desktop.* texts, in every language
        assert any(line.startswith(f"Comment[{locale}]=") for line in lines)


@pytest.mark.parametrize(
    ("arg", "written"),
    [
        ("/usr/bin/mine-duel", "/usr/bin/mine-duel"),
        ("/home/a b/mine-duel", '"/home/a b/mine-duel"'),
        ('/x/"q"$`\\', '"/x/\\\\"q\\\\"\\\\$\\\\`\\\\\\\\"'),  # the spec's quoting, then the string escape
        ("/x/100%", "/x/100%%"),
    ],
)
def test_exec_arguments_are_quoted_as_the_spec_says(arg: str, written: str) -> None:
    assert desktop.exec_argument(arg) == written


def test_the_launcher_command_is_absolute() -> None:
    command = desktop.launcher_command()
    assert Path(command[0]).is_absolute()


def test_install_writes_the_entry_metainfo_and_every_icon_then_registers(homes) -> None:
    data, _ = homes
    tools = Tools()
    report = desktop.install(data, COMMAND, runner=tools)
    entry = data / "applications" / f"{APP_ID}.desktop"
    assert entry.read_text(encoding="utf-8") == desktop.desktop_entry(COMMAND)
    assert (data / "metainfo" / f"{APP_ID}.metainfo.xml").is_file()
    for size in desktop.ICON_SIZES:
        icon = data / "icons" / "hicolor" / f"{size}x{size}" / "apps" / f"{APP_ID}.png"
        assert icon.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    ran = [call[0] for call in tools.calls]
    if shutil.which("xdg-mime"):
        assert ["xdg-mime", "default", f"{APP_ID}.desktop", *desktop.MIME_TYPES] in tools.calls
    if shutil.which("update-desktop-database"):
        assert "update-desktop-database" in ran
    assert any(line.startswith("wrote ") for line in report)


def test_uninstall_removes_exactly_what_install_wrote(homes) -> None:
    data, config = homes
    (data / "applications").mkdir(parents=True)
    (data / "applications" / "other.desktop").write_text("[Desktop Entry]\nName=Other\n", encoding="utf-8")
    config.mkdir()
    mimeapps = config / "mimeapps.list"
    mimeapps.write_text("[Default Applications]\ntext/html=firefox.desktop\n", encoding="utf-8")
    before = _tree(data)
    desktop.install(data, COMMAND, runner=Tools())
    # What xdg-mime default would add (the fake runner did not), plus a handler list sharing a line.
    mimeapps.write_text(
        "[Default Applications]\ntext/html=firefox.desktop\n"
        f"x-scheme-handler/mineduel={APP_ID}.desktop;\nx-scheme-handler/mineduels=other.desktop;{APP_ID}.desktop;\n",
        encoding="utf-8",
    )
    assert _tree(data) != before
    desktop.uninstall(data, config, runner=Tools())
    assert _tree(data) == before  # the user's own files and folders stay, byte for byte
    assert mimeapps.read_text(encoding="utf-8") == (
        "[Default Applications]\ntext/html=firefox.desktop\nx-scheme-handler/mineduels=other.desktop;\n"
    )


def test_install_twice_then_uninstall_leaves_nothing(homes) -> None:
    data, config = homes
    desktop.install(data, COMMAND, runner=Tools())
    desktop.install(data, ["/elsewhere/mine-duel"], runner=Tools())  # an upgrade moved the program
    assert 'Exec=/elsewhere/mine-duel %u' in (data / "applications" / f"{APP_ID}.desktop").read_text(encoding="utf-8")
    desktop.uninstall(data, config, runner=Tools())
    assert _tree(data) == {}


def test_a_file_install_did_not_write_is_never_overwritten(homes) -> None:
    """Bad input: a clear error and nothing changes."""
    data, _ = homes
    theirs = data / "applications" / f"{APP_ID}.desktop"
    theirs.parent.mkdir(parents=True)
    theirs.write_text("[Desktop Entry]\nName=Mine, edited by hand\n", encoding="utf-8")
    before = _tree(data)
    with pytest.raises(DesktopError, match="not overwriting"):
        desktop.install(data, COMMAND, runner=Tools())
    assert _tree(data) == before


def test_uninstall_without_install_changes_nothing(homes) -> None:
    data, config = homes
    data.mkdir()
    assert "nothing to remove" in desktop.uninstall(data, config, runner=Tools())[0]
    assert _tree(data) == {}


def test_a_damaged_manifest_is_reported_not_guessed(homes) -> None:
    data, config = homes
    (data / "mine-duel").mkdir(parents=True)
    (data / "mine-duel" / "desktop-install.json").write_text('{"files": "everything"}', encoding="utf-8")
    with pytest.raises(DesktopError):
        Manifest.load(data / "mine-duel" / "desktop-install.json")
    with pytest.raises(DesktopError):
        desktop.uninstall(data, config, runner=Tools())


@pytest.mark.skipif(shutil.which("desktop-file-validate") is None,
                    reason="desktop-file-validate not installed (Debian: desktop-file-utils)")
def test_the_entry_passes_desktop_file_validate(tmp_path: Path) -> None:
    path = tmp_path / f"{APP_ID}.desktop"
    path.write_text(desktop.desktop_entry(COMMAND), encoding="utf-8")
    result = subprocess.run(["desktop-file-validate", str(path)], capture_output=True, text=True, check=False, timeout=60)
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


@pytest.mark.skipif(shutil.which("appstreamcli") is None, reason="appstreamcli not installed (Debian: appstream)")
def test_the_metainfo_passes_appstreamcli_validate(tmp_path: Path) -> None:
    path = tmp_path / f"{APP_ID}.metainfo.xml"
    path.write_text(desktop.metainfo(), encoding="utf-8")
    result = subprocess.run(["appstreamcli", "validate", "--no-net", str(path)], capture_output=True, text=True,
                            check=False, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "E:" not in result.stdout and "W:" not in result.stdout, result.stdout


@pytest.mark.skipif(shutil.which("xdg-mime") is None, reason="xdg-mime not installed (Debian: xdg-utils)")
def test_the_command_registers_and_unregisters_the_link_handler(tmp_path: Path) -> None:
    """The real sub-commands with the real xdg-mime, in a throw-away home."""
    env = {**os.environ, "HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "data"),
           "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_CURRENT_DESKTOP": "X-Generic"}
    env.pop("DISPLAY", None)
    (tmp_path / "home").mkdir()

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, capture_output=True, text=True, env=env, check=False, timeout=120)

    installed = run(sys.executable, "-m", "mineduel.client.cli", "install-desktop")
    assert installed.returncode == 0, installed.stderr
    for mime in desktop.MIME_TYPES:
        assert run("xdg-mime", "query", "default", mime).stdout.strip() == f"{APP_ID}.desktop"
    entry = (tmp_path / "data" / "applications" / f"{APP_ID}.desktop").read_text(encoding="utf-8")
    exec_line = next(line for line in entry.splitlines() if line.startswith("Exec="))
    assert exec_line.endswith(" %u") and Path(exec_line[5:].split(" ")[0].strip('"')).is_absolute()
    removed = run(sys.executable, "-m", "mineduel.client.cli", "uninstall-desktop")
    assert removed.returncode == 0, removed.stderr
    for mime in desktop.MIME_TYPES:
        assert run("xdg-mime", "query", "default", mime).stdout.strip() == ""
    assert not (tmp_path / "data" / "applications" / f"{APP_ID}.desktop").exists()


@pytest.mark.parametrize("platform", ["win32", "darwin"])
def test_install_desktop_elsewhere_points_to_the_docs_and_writes_nothing(homes, monkeypatch, capsys, platform) -> None:
    data, _ = homes
    monkeypatch.setattr(sys, "platform", platform)
    assert desktop.install_main([]) == 2
    assert "docs/DESKTOP.md" in capsys.readouterr().err
    assert not data.exists()


def test_a_link_given_to_the_command_reaches_the_game_as_join(monkeypatch) -> None:
    """``mine-duel LINK`` (what Exec=... %u runs) calls the game with ``--join LINK``."""
    import mineduel.client.app as app
    from mineduel.client import cli

    seen: list[list[str]] = []
    monkeypatch.setattr(app, "main", lambda argv: seen.append(list(argv)) or 0)
    for name in ("SDL_VIDEO_X11_WMCLASS", "SDL_VIDEO_WAYLAND_WMCLASS"):  # set by cli.main; restored after
        monkeypatch.setenv(name, "test")
    assert cli.main(["mineduel://127.0.0.1:47650/join/ABC234"]) == 0
    assert seen == [["--join", "mineduel://127.0.0.1:47650/join/ABC234"]]
