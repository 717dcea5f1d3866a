"""Smoke test of benchmarks/bench_server.py: a real server subprocess, a few bot matches, figures out.

No timing assertions (the machines are shared and noisy): only that matches complete, that the
restore path brings every room back, and that the figures are produced.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_server.py"


def run_bench(tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "result.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--quick", *args, "--json", str(out)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(out.read_text())


def test_quick_saturation_completes_matches_and_reports(tmp_path):
    result = run_bench(tmp_path, "--mode", "saturation", "--matches", "4", "--seconds", "1")
    (run,) = result["saturation"]
    assert run["connections"] == 8
    assert run["actions"] > 0 and run["actions_per_s"] > 0
    assert run["matches_completed"] >= 1
    assert sum(run["reasons"].values()) == run["matches_completed"]
    assert run["rtt_samples"] > 0 and run["rtt_p50_ms"] > 0 and run["rtt_p99_ms"] >= run["rtt_p50_ms"]
    assert run["max_gap_ms"] is not None  # the lag probe inside the server reported
    assert run["server_cpu_us_per_action"] > 0
    assert not run["errors"] and run["server_error_lines"] == 0


def test_quick_restore_brings_every_room_back_and_play_goes_on(tmp_path):
    result = run_bench(tmp_path, "--mode", "restore", "--matches", "4")
    (run,) = result["restore"]
    assert run["populated"] and run["actions_stored"] > 0
    (restart,) = run["restarts"]
    assert restart["ok"] and restart["restored_rooms"] == 4
    assert restart["max_gap_ms"] is not None and restart["rss_restored_mb"] > 0
    assert run["resumed"] == 8
    assert run["completed_after_resume"] >= 1
    assert not run["errors"] and run["server_error_lines"] == 0


def test_quick_idle_scale_with_spectators_watches_every_match(tmp_path):
    """``--spectators K`` (issue 19): K watcher connections per match, each following its pair's rooms."""
    result = run_bench(tmp_path, "--mode", "idle-scale", "--matches", "4", "--spectators", "2")
    (run,) = result["idle-scale"]
    assert run["connections"] == 16 and run["spectators"] == 2 and run["watchers"] == 8
    assert run["watchers_watching"] == 8 and run["spectate_state_lines"] > 0
    assert run["spectate_state_valid"] == 8 and run["spectate_state_invalid"] == 0
    assert run["matches_completed"] >= 1 and run["actions_per_s"] > 0
    assert not run["errors"] and run["server_error_lines"] == 0
