"""tools/reliability_report.py: figures add up (or keep their maximum) and land between the markers."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from support import reliability

ROOT = Path(__file__).resolve().parents[2]


def _tool():
    spec = importlib.util.spec_from_file_location("reliability_report", ROOT / "tools" / "reliability_report.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_figures_sum_per_suite_and_max_units_keep_the_largest():
    tool = _tool()
    rows = [
        {"suite": "fuzz", "figure": "lines sent", "value": 10, "unit": ""},
        {"suite": "fuzz", "figure": "lines sent", "value": 32, "unit": ""},
        {"suite": "abuse", "figure": "slowest reply", "value": 4, "unit": "max turns"},
        {"suite": "abuse", "figure": "slowest reply", "value": 3, "unit": "max turns"},
    ]
    assert tool.aggregate(rows) == {"abuse": [("slowest reply", 4.0, "max turns")], "fuzz": [("lines sent", 42.0, "")]}


def test_the_table_replaces_only_the_marked_part(tmp_path, monkeypatch):
    tool = _tool()
    doc = tmp_path / "RELIABILITY.md"
    doc.write_text(f"# Title\n\nbefore\n\n{tool.BEGIN}\nold table\n{tool.END}\n\nafter\n", encoding="utf-8")
    monkeypatch.setattr(tool, "run_suites", lambda scale, extra: (
        {"tests": 3, "failures": 0, "errors": 0, "skipped": 0},
        [{"suite": "leak", "figure": "leaks found", "value": 0, "unit": ""}], 60.0))
    assert tool.main(["--scale", "2", "--doc", str(doc)]) == 0
    text = doc.read_text(encoding="utf-8")
    assert text.startswith("# Title\n\nbefore\n\n") and text.endswith("\n\nafter\n") and "old table" not in text
    assert "| leak | leaks found | 0 |" in text and "--scale 2" in text and "3 tests passed" in text


def test_a_failed_run_leaves_the_document_alone(tmp_path, monkeypatch):
    tool = _tool()
    doc = tmp_path / "RELIABILITY.md"
    original = f"{tool.BEGIN}\nold\n{tool.END}\n"
    doc.write_text(original, encoding="utf-8")
    failed = {"tests": 3, "failures": 1, "errors": 0, "skipped": 0}
    monkeypatch.setattr(tool, "run_suites", lambda scale, extra: (failed, [], 1.0))
    assert tool.main(["--doc", str(doc)]) == 1
    assert doc.read_text(encoding="utf-8") == original


def test_record_figure_appends_only_in_a_report_run(tmp_path, monkeypatch):
    out = tmp_path / "figures.jsonl"
    monkeypatch.delenv(reliability.FIGURES_ENV, raising=False)
    reliability.record_figure("s", "f", 1)
    assert not out.exists()
    monkeypatch.setenv(reliability.FIGURES_ENV, str(out))
    monkeypatch.setenv(reliability.SCALE_ENV, "3")
    reliability.record_figure("s", "f", 2, "max ms")
    assert out.read_text().strip() == '{"suite": "s", "figure": "f", "value": 2, "unit": "max ms"}'
    assert reliability.scaled(5) == 15


@pytest.mark.parametrize("raw", ["", "x", "-4", "0"])
def test_a_bad_scale_is_one(monkeypatch, raw):
    monkeypatch.setenv(reliability.SCALE_ENV, raw)
    assert reliability.scale() == 1
