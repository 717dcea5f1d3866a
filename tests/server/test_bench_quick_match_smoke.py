"""Smoke test of benchmarks/bench_quick_match.py, through bench_server.py --mode quick-match (issue 20).

No timing assertions: only that everyone is matched and the figures come out.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_server.py"


def test_quick_match_mode_matches_everyone_and_reports(tmp_path):
    out = tmp_path / "result.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--mode", "quick-match", "--players", "600", "--runs", "1", "--json", str(out)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "time to a match" in proc.stdout
    (run,) = json.loads(out.read_text())
    # Everyone is matched, or gone after failing a Ready check (one per such pair), or the last one left.
    assert run["matched"] + run["not_ready"] + run["left_waiting"] == 600 and run["left_waiting"] <= 1
    assert 0 <= run["wait_s_p50"] <= run["wait_s_p95"] <= run["wait_s_max"]
    assert run["gap_p50"] <= run["gap_max"] and run["arrival_ms_p50"] > 0


def test_crowd_scenario_reports_both_moments(tmp_path):
    out = tmp_path / "crowd.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH.parent / "bench_quick_match.py"), "--scenario", "crowd", "--rate", "5", "--json", str(out)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads(out.read_text())
    assert set(result) == {"t=10s", "t=100s"}
    assert all(r["pairs"] == r["arrivals"] for r in result.values())  # each stranger met one of the crowd


def test_server_mode_matches_bots_on_a_real_server(tmp_path):
    """--server: a real mine-duel-server on loopback, 20 bots (any opponent after 1 s so the last
    ones do not wait a minute); everyone is matched and starts a match."""
    out = tmp_path / "server.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH.parent / "bench_quick_match.py"), "--server", "--players", "20", "--rate", "50",
         "--server-arg=--quick-any-after=1", "--json", str(out)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "matched 20 of 20, match started 20, bot failures 0" in proc.stdout
    result = json.loads(out.read_text())
    assert result["server_error_lines"] == 0 and result["server_cpu_ms_per_player"] > 0
