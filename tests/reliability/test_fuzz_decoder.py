"""Coverage-guided fuzzing of the protocol decoder and field validators (tools/fuzz_decoder.py).

The harness runs atheris (libFuzzer) in a subprocess for a bounded number of runs with a fixed
seed; a broken rule is a crash. A planted bug proves the harness can fail. The inputs its first
runs found are kept below as plain regression tests (they need no atheris).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.reliability import record_figure, scaled

from mineduel.shared.wire import protocol
TOOL = Path(__file__).resolve().parents[2] / "tools" / "fuzz_decoder.py"
HAVE_ATHERIS = importlib.util.find_spec("atheris") is not None
needs_atheris = pytest.mark.skipif(
    not HAVE_ATHERIS,
    reason=f"atheris is not installed here ({sys.platform}, Python {sys.version_info.major}.{sys.version_info.minor}): "
    "its wheels are for Linux and Python < 3.13 (pyproject.toml's test extra)",
)


def run_tool(*args: str, env: dict[str, str] | None = None) -> tuple[dict[str, object], subprocess.CompletedProcess[str]]:
    done = subprocess.run(
        [sys.executable, str(TOOL), "--json", "--timeout", "120", *args],
        capture_output=True, text=True, timeout=180, env={**os.environ, **(env or {})}, check=False,
    )
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    return summary, done


@pytest.mark.reliability
@needs_atheris
def test_decoder_fuzzing_finds_no_rule_broken() -> None:
    """decode: only ProtocolError escapes and a decoded message re-encodes (both codecs); every field
    validator refuses with a documented code or returns a value PROTOCOL.md §4 allows."""
    runs = scaled(20_000)
    summary, done = run_tool(f"-runs={runs}", "-seed=1")
    assert summary["crashes"] == 0, done.stderr[-4000:]
    assert done.returncode == 0
    assert summary["executions"] == runs
    assert summary["corpus"] > 0 and summary["coverage_end"] > 0
    record_figure("fuzz", "decoder executions", summary["executions"])
    record_figure("fuzz", "decoder corpus inputs", summary["corpus"], "max")
    record_figure("fuzz", "crashes found", summary["crashes"])


@needs_atheris
def test_the_harness_reports_a_planted_bug() -> None:
    """cell() made to read [7, 7] as [0, 0]: the fuzzer must report it as a crash and exit 1."""
    summary, done = run_tool("-runs=20000", "-seed=1", env={"MINEDUEL_FUZZ_INJECT_BUG": "1"})
    assert summary["crashes"] == 1 and done.returncode == 1
    assert "cell accepted" in done.stderr


# ----- what the fuzzer found, kept as plain tests -------------------------------------------------
@pytest.fixture(params=["orjson", "json"])
def codec(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test with orjson (the server's codec) and with the standard-library fallback."""
    if request.param == "json":
        monkeypatch.setattr(protocol, "_orjson", None)
    return str(request.param)


@pytest.mark.parametrize(
    "line",
    [
        b'{"type":"ping","x":' + b"[" * 5000 + b"]" * 5000 + b"}",  # the fallback raised RecursionError
        b'{"type":"ping","x":"\\ud800"}',  # a lone surrogate: the fallback accepted what cannot be encoded
        b'{"type":"ping","\\udc00":1}',
        b'{"type":"ping","x":1e400}',  # the fallback read inf, which encodes as Infinity (not JSON)
        b'{"type":"ping","x":-1E999}',
        b'{"type":"ping","x":NaN}',
    ],
)
def test_decode_refuses_what_could_not_be_encoded_again(codec: str, line: bytes) -> None:
    """§1: one UTF-8 JSON object. Found by tools/fuzz_decoder.py in the stdlib fallback."""
    with pytest.raises(protocol.ProtocolError) as info:
        protocol.decode(line)
    assert info.value.code == "bad_json"


def test_decode_keeps_what_is_fine(codec: str) -> None:
    """The same decoder still reads escaped pairs, tiny numbers and deep-but-sane nesting."""
    msg = protocol.decode(b'{"type":"ping","id":"\\ud83c\\udfb2","x":1e-400,"y":' + b"[" * 100 + b"]" * 100 + b"}")
    assert msg["id"] == "\U0001f3b2" and msg["x"] == 0.0
    assert protocol.decode(protocol.encode(msg)[:-1]) == msg


@pytest.mark.parametrize("name", ["a\x7fb", "\x80", "\x85next-line", "csi\x9b2J", "\x9f"])
def test_player_name_refuses_del_and_c1_controls(name: str) -> None:
    """§4 `name`: no control characters. DEL and C1 (U+007F-U+009F) are control characters too."""
    with pytest.raises(protocol.ProtocolError) as info:
        protocol.player_name({"name": name})
    assert info.value.code == "bad_request"


@pytest.mark.parametrize("name", ["", "Zo\u00eb", "\u00a0nbsp", "\u8a9e\U0001f3b2", "x" * 32])
def test_player_name_keeps_printable_unicode(name: str) -> None:
    assert protocol.player_name({"name": name}) == name


@pytest.mark.parametrize("code", ["\u017f\u017f\u017f\u017f\u017f\u017f", "ABCD\ufb00", "ABCDE\u017f", "ABCDE\uff26"])
def test_room_code_is_ascii_only(code: str) -> None:
    """§2: six characters of the alphabet, any case. "ſ".upper() is "S" and "ﬀ".upper() is "FF":
    such strings were accepted as codes."""
    with pytest.raises(protocol.ProtocolError) as info:
        protocol.room_code(code)
    assert info.value.code == "room_not_found"


def test_room_code_still_case_insensitive_and_trimmed() -> None:
    assert protocol.room_code(" abcd23\t") == "ABCD23"
