"""What an installed MINE DUEL says about itself (issue 17): one version, its commands, its icon, its files.

These run against whatever ``mineduel`` is importable: the editable install and, in .ci/run, the
installed wheel (where only files of this checkout that the tests read — CHANGELOG.md, scripts/ —
come from the tree, never code).
"""

from __future__ import annotations

import importlib.util
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from mineduel.client import cli
from mineduel.client.resources import asset_path
from mineduel.shared.version import RELEASED, VERSION

ROOT = Path(__file__).resolve().parents[1]
ICON_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
BANNER = "pygame-ce "  # pygame-ce prints "pygame-ce 2.5.8 (SDL 2.32.10, Python 3.11.7)" on import


def _env_without_banner_setting() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYGAME_HIDE_SUPPORT_PROMPT"}
    env.update(SDL_VIDEODRIVER="dummy", SDL_AUDIODRIVER="dummy")
    return env


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120,
                          env=env or _env_without_banner_setting(), check=False)


# ----- one version -----


def test_version_is_semantic() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION)
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", RELEASED)


def test_changelog_newest_release_is_this_version() -> None:
    """CHANGELOG.md (Keep a Changelog 1.1.0): Unreleased first, then the newest release = shared/version.py."""
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?\s*$", text, flags=re.MULTILINE)
    assert headings[0] == ("Unreleased", "")
    assert headings[1] == (VERSION, RELEASED)
    versions = [tuple(int(p) for p in v.split(".")) for v, _ in headings[1:]]
    assert versions == sorted(versions, reverse=True), "releases newest first"
    sections = set(re.findall(r"^### (\w+)\s*$", text, flags=re.MULTILINE))
    assert sections <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def test_installed_metadata_says_this_version() -> None:
    from importlib.metadata import version

    assert version("mine-duel") == VERSION


def test_both_commands_print_the_version_and_no_banner() -> None:
    client = _run("-m", "mineduel.client.cli", "--version")
    server = _run("-m", "mineduel.server.cli", "--version")
    assert (client.returncode, client.stdout, client.stderr) == (0, f"mine-duel {VERSION}\n", "")
    assert (server.returncode, server.stdout, server.stderr) == (0, f"mine-duel-server {VERSION}\n", "")


def test_the_server_and_the_game_say_the_version_on_the_wire() -> None:
    """welcome.server.version and hello.client come from shared/version.py (PROTOCOL.md §2)."""
    from mineduel.client.online_client import OnlineServices
    from mineduel.server.config import Config

    assert Config().version == VERSION
    assert OnlineServices.__dataclass_fields__["client_name"].default == f"mine-duel/{VERSION}"


# ----- the command line -----


def test_help_lists_every_sub_command_on_one_line_each_without_the_banner() -> None:
    """``mine-duel --help`` imports pygame (the game's options); the banner must still stay off."""
    result = _run("-m", "mineduel.client.cli", "--help")
    assert result.returncode == 0, result.stderr
    assert BANNER not in result.stdout + result.stderr
    for name in cli.SUBCOMMANDS:
        lines = [line for line in result.stdout.splitlines() if line.split()[:1] == [name]]
        assert len(lines) == 1, name
        assert len(lines[0].split()) > 3, f"{name} has no description"
    assert {"replay", "simulate", "verify", "screenshots", "install-desktop", "uninstall-desktop"} <= set(cli.SUBCOMMANDS)
    for option in ("--join", "--self-test", "--version", "--lang"):
        assert option in result.stdout


def test_the_banner_check_can_fail() -> None:
    """Without the setting, importing pygame prints the banner: the test above would see it."""
    result = _run("-c", "import pygame")
    assert BANNER in result.stdout


def test_a_sub_command_does_not_print_the_banner() -> None:
    result = _run("-m", "mineduel.client.cli", "screenshots", "--help")
    assert result.returncode == 0, result.stderr
    assert BANNER not in result.stdout + result.stderr


def test_neither_command_prints_the_banner_while_running(tmp_path: Path) -> None:
    """The server never imports pygame; the game's self-test does, with the banner off."""
    result = _run("-m", "mineduel.client.cli", "--self-test")
    assert result.returncode == 0, result.stdout + result.stderr
    assert BANNER not in result.stdout + result.stderr
    assert "self-test ok" in result.stdout
    assert result.stdout.startswith(f"mine-duel {VERSION} self-test\nok   icons (8 of 8 sizes)\n")


def test_an_unknown_word_is_refused_with_a_pointer_to_help() -> None:
    result = _run("-m", "mineduel.client.cli", "replya")
    assert result.returncode == 2
    assert "'replya'" in result.stderr and "--help" in result.stderr


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["mineduel://127.0.0.1:47650/join/ABCD"], ["--join", "mineduel://127.0.0.1:47650/join/ABCD"]),
        (["mineduels://h:1/join/AB?pin=x"], ["--join", "mineduels://h:1/join/AB?pin=x"]),
        (["--lang", "ko", "mineduel://h:1/join/AB"], ["--lang", "ko", "--join", "mineduel://h:1/join/AB"]),
        (["--join", "mineduel://a:1/join/X"], ["--join", "mineduel://a:1/join/X"]),  # already explicit
        (["--size", "390x844"], ["--size", "390x844"]),
    ],
)
def test_a_positional_link_acts_as_join(argv: list[str], expected: list[str]) -> None:
    """What a desktop runs for ``Exec=mine-duel %u`` opens the online screen on that room."""
    from mineduel.client.app import build_parser

    assert cli.as_game_arguments(argv) == expected
    args = build_parser().parse_args(cli.as_game_arguments(argv))
    link = next((a for a in argv if "://" in a), None)
    assert args.join == link


# ----- the icon -----


def _png_size(data: bytes) -> tuple[int, int, int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height, depth, colour = struct.unpack(">IIBB", data[16:26])
    return width, height, depth, colour


def test_icons_are_shipped_at_every_desktop_size() -> None:
    for size in ICON_SIZES:
        assert _png_size(asset_path("icons", f"mine-duel-{size}.png").read_bytes()) == (size, size, 8, 6)  # RGBA
    ico = asset_path("icons", "mine-duel.ico").read_bytes()
    assert struct.unpack("<HHH", ico[:6]) == (0, 1, 7)
    icns = asset_path("icons", "mine-duel.icns").read_bytes()
    assert icns[:4] == b"icns" and struct.unpack(">I", icns[4:8])[0] == len(icns)


def test_icons_are_what_make_icon_draws() -> None:
    """The committed files are the script's drawing (pixels within a rounding step, so a newer pygame-ce
    that antialiases one edge differently does not fail; a changed drawing does)."""
    import pygame

    spec = importlib.util.spec_from_file_location("make_icon", ROOT / "scripts" / "make_icon.py")
    assert spec is not None and spec.loader is not None
    make_icon = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_icon)
    pygame.display.init()
    for size in ICON_SIZES:
        fresh = pygame.image.tobytes(make_icon.draw(size), "RGBA")
        shipped = pygame.image.tobytes(pygame.image.load(str(asset_path("icons", f"mine-duel-{size}.png"))), "RGBA")
        assert len(fresh) == len(shipped)
        differences = [abs(a - b) for a, b in zip(fresh, shipped, strict=True)]
        assert sum(differences) / len(differences) < 1.0 and max(differences) <= 48, size


def test_window_icon_is_the_64_px_file() -> None:
    import pygame

    from mineduel.client.desktop import window_icon

    pygame.display.init()
    icon = window_icon()
    shipped = pygame.image.load(str(asset_path("icons", "mine-duel-64.png")))
    assert icon.get_size() == (64, 64)
    assert pygame.image.tobytes(icon, "RGBA") == pygame.image.tobytes(shipped, "RGBA")


# ----- scripts/check_dist.py -----


def _check_dist():
    spec = importlib.util.spec_from_file_location("check_dist", ROOT / "scripts" / "check_dist.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_check_dist_finds_a_file_missing_from_either_archive(tmp_path: Path) -> None:
    """A tree with a new data folder, archives built without it: both are reported, exit status 1."""
    import tarfile
    import zipfile

    check_dist = _check_dist()
    tree = tmp_path / "tree"
    files = ["client/cli.py", "client/ui/new.py", "assets/icons/a.png", "LICENSE", "assets/fonts/OFL.txt", "docs/X.md"]
    for name in files:
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(name, encoding="utf-8")
    wheel, sdist = tmp_path / "x-1-py3-none-any.whl", tmp_path / "x-1.tar.gz"
    entry_points = "[console_scripts]\n" + "\n".join(check_dist.SCRIPTS) + "\n"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name in ("mineduel/client/cli.py", "mineduel/assets/fonts/OFL.txt"):
            archive.writestr(name, "")
        archive.writestr("x-1.dist-info/entry_points.txt", entry_points)
        archive.writestr("x-1.dist-info/licenses/LICENSE", "")
        archive.writestr("x-1.dist-info/licenses/assets/fonts/OFL.txt", "")
    with tarfile.open(sdist, "w:gz") as archive:
        for name in files:
            if name != "docs/X.md":
                archive.add(tree / name, arcname=f"x-1/{name}")
    code = check_dist.main([str(wheel), str(sdist), "--root", str(tree)])
    assert code == 1
    problems = check_dist.wheel_problems(wheel, check_dist.tree_files(tree))
    problems += check_dist.sdist_problems(sdist, check_dist.tree_files(tree))
    assert sorted(problems) == [
        "sdist: docs/X.md is missing",
        "wheel: assets/icons/a.png is missing (expected mineduel/assets/icons/a.png)",
        "wheel: client/ui/new.py is missing (expected mineduel/client/ui/new.py)",
    ]
