"""Issue 17's "done when": a click on a ``mineduel://`` link in a desktop session opens the game on that
room. scripts/check_desktop_link.py does it for real (Xvfb, a real server and room, ``install-desktop``,
``xdg-open``, the game's window, its argument, the server seeing it, ``uninstall-desktop``); this runs it
with the ``mine-duel`` installed beside this Python (the editable install, or the wheel in .ci/run).
Skipped, with the reason, where Debian's xvfb, xdg-utils, xdotool or imagemagick are not installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "check_desktop_link.py"
BIN = Path(sys.executable).parent


@pytest.mark.skipif(not (BIN / "mine-duel").is_file(), reason="no mine-duel console script beside this Python")
def test_xdg_open_on_an_invite_link_opens_the_game_on_the_room(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--game", str(BIN / "mine-duel"), "--server", str(BIN / "mine-duel-server"),
         "--shot", str(tmp_path / "link.png"), "--timeout", "60"],
        capture_output=True, text=True, timeout=400, check=False,
    )
    if result.returncode == 77:
        pytest.skip(json.loads(result.stdout)["skipped"])
    report = json.loads(result.stdout)
    assert report["handler"] == "org.example.MineDuel.desktop", report
    assert report["game_argv_has_link"], report  # the desktop ran `mine-duel LINK` (%u)
    assert report["server_saw_the_game"], report  # ... which connected to that server
    assert report["left_after_uninstall"] == [], report
    assert result.returncode == 0, result.stdout + result.stderr
