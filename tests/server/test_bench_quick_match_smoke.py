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
         "--not-ready", "0", "--server-arg=--quick-any-after=1", "--json", str(out)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "matched and started 20 of 20; never confirming (--not-ready 0) 0 (" in proc.stdout
    assert "back in the queue 0; bot failures 0" in proc.stdout
    result = json.loads(out.read_text())
    assert result["server_error_lines"] == 0 and result["server_cpu_ms_per_player"] > 0


def test_server_mode_with_players_who_never_confirm(tmp_path):
    """--server --not-ready: the bots that never press Ready are put out after the (shortened)
    confirmation, their opponents go back in the queue and still start a match."""
    proc = subprocess.run(
        [sys.executable, str(BENCH.parent / "bench_quick_match.py"), "--server", "--players", "20", "--rate", "50",
         "--not-ready", "0.3", "--seed", "3", "--server-arg=--quick-any-after=1", "--server-arg=--quick-confirm-seconds=1"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    line = next(ln for ln in proc.stdout.splitlines() if "never confirming" in ln)
    started, total = (int(x) for x in line.split("started ")[1].split(";")[0].split(" of "))
    no_shows = int(line.split("(--not-ready 0.3) ")[1].split(" ")[0])
    put_out = int(line.split("(--not-ready 0.3) ")[1].split("(")[1].split(" ")[0])
    requeued = int(line.split("back in the queue ")[1].split(";")[0])
    assert started + no_shows == total == 20 and "bot failures 0" in line
    assert put_out >= 1 and requeued >= 1  # the dissolution path ran: a no-show's opponent went back and still played
