"""Regenerate the README's pictures from `mine-duel screenshots` (headless).

    python scripts/update_readme_screenshots.py

Renders only the chosen screens and copies them to docs/screenshots/ under stable names.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PICKS = [  # (language, screen name as in mine-duel screenshots, file name in docs/screenshots)
    ("en", "board_explore", "en-board.png"),
    ("ko", "cpu_turn", "ko-cpu-turn.png"),
    ("ja", "result_win", "ja-result.png"),
    ("zh-CN", "online_match_deadline", "zh-online-match.png"),
    ("en", "online_result_board", "en-online-reveal.png"),
    ("en", "online_waiting_room", "en-waiting-room.png"),
    ("en", "friend_lan_rooms", "en-lan-rooms.png"),
    ("en", "tutorial_step02_numbers", "en-tutorial.png"),
    ("en", "analysis_cpu_risky", "en-analysis.png"),
]


def main() -> int:
    out = ROOT / "docs" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for lang, screen, name in PICKS:
            subprocess.run(
                [sys.executable, "-m", "mineduel.client", "screenshots", "--out", tmp, "--lang", lang, "--only", screen],
                check=True,
            )
            matches = sorted(p for p in (Path(tmp) / lang).glob(f"*_{screen}.png"))
            if not matches:
                print(f"no screenshot named {screen}", file=sys.stderr)
                return 1
            shutil.copyfile(matches[0], out / name)
            print(f"docs/screenshots/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
