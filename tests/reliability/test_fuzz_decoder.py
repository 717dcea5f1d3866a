"""Coverage-guided fuzzing of the protocol decoder, the field validators and the typed parsing of
both directions (tools/fuzz_decoder.py).

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

from mineduel.shared.wire import codec as wire_codec
from mineduel.shared.wire import messages as m

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
    validator refuses with a documented code or returns a value PROTOCOL.md §4 allows; typed request
    parsing refuses with a code of §9 steps 4-6 or gives a request that reads back from its own line;
    decode_server gives a typed message (that reads back to the same bytes) or BadMessage, nothing else."""
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
    # Found by the validator rule (``cell accepted ...``) or, first, by the typed request rule
    # (``... read with cell 0``): parse_request reads cells with the same validator.
    assert "cell accepted" in done.stderr or "[7, 7]} read with cell 0" in done.stderr


# ----- what the fuzzer found, kept as plain tests -------------------------------------------------
@pytest.fixture(params=["orjson", "json"])
def codec(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test with orjson (the server's codec) and with the standard-library fallback."""
    if request.param == "json":
        monkeypatch.setattr(wire_codec, "_orjson", None)
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
    with pytest.raises(wire_codec.ProtocolError) as info:
        wire_codec.decode(line)
    assert info.value.code == "bad_json"


def test_decode_keeps_what_is_fine(codec: str) -> None:
    """The same decoder still reads escaped pairs, tiny numbers and deep-but-sane nesting."""
    msg = wire_codec.decode(b'{"type":"ping","id":"\\ud83c\\udfb2","x":1e-400,"y":' + b"[" * 100 + b"]" * 100 + b"}")
    assert msg["id"] == "\U0001f3b2" and msg["x"] == 0.0
    assert wire_codec.decode(wire_codec.encode(msg)[:-1]) == msg


@pytest.mark.parametrize("name", ["a\x7fb", "\x80", "\x85next-line", "csi\x9b2J", "\x9f"])
def test_player_name_refuses_del_and_c1_controls(name: str) -> None:
    """§4 `name`: no control characters. DEL and C1 (U+007F-U+009F) are control characters too."""
    with pytest.raises(wire_codec.ProtocolError) as info:
        wire_codec.player_name({"name": name})
    assert info.value.code == "bad_request"


@pytest.mark.parametrize("name", ["", "Zo\u00eb", "\u00a0nbsp", "\u8a9e\U0001f3b2", "x" * 32])
def test_player_name_keeps_printable_unicode(name: str) -> None:
    assert wire_codec.player_name({"name": name}) == name


@pytest.mark.parametrize("code", ["\u017f\u017f\u017f\u017f\u017f\u017f", "ABCD\ufb00", "ABCDE\u017f", "ABCDE\uff26"])
def test_room_code_is_ascii_only(code: str) -> None:
    """§2: six characters of the alphabet, any case. "ſ".upper() is "S" and "ﬀ".upper() is "FF":
    such strings were accepted as codes."""
    with pytest.raises(wire_codec.ProtocolError) as info:
        wire_codec.room_code(code)
    assert info.value.code == "room_not_found"


def test_room_code_still_case_insensitive_and_trimmed() -> None:
    assert wire_codec.room_code(" abcd23\t") == "ABCD23"


# ----- typed parsing, both directions ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b'{"type":"teleport"}', "unknown_type"),
        (b'{"type":"explore"}', "bad_request"),
        (b'{"type":"explore","cell":[8,0]}', "bad_request"),
        (b'{"type":"end_turn","seq":-1}', "bad_request"),
        (b'{"type":"ready","ready":1}', "bad_request"),
        (b'{"type":"resume","room":"NYTF23","token":"AB"}', "bad_request"),
        (b'{"type":"get_record"}', "bad_request"),
        (b'{"type":"ping","id":1.5}', "bad_request"),
    ],
)
def test_a_malformed_request_is_refused_with_its_documented_code(line: bytes, code: str) -> None:
    """§9 steps 4-6: a type the protocol lacks is unknown_type, a bad field bad_request."""
    msg = wire_codec.decode(line)
    with pytest.raises(wire_codec.ProtocolError) as info:
        wire_codec.parse_request(wire_codec.request_kind(msg), msg)
    assert info.value.code == code


def test_a_request_reads_back_from_its_line_and_keeps_the_room_as_sent() -> None:
    """A room code is a credential checked at step 7: parsing keeps what was sent, even a non-string."""
    msg = wire_codec.decode(b'{"type":"join","room":7,"name":"Bo","extra":[1],"id":"j"}')
    request = wire_codec.parse_request(wire_codec.request_kind(msg), msg)
    assert request == m.Join(7, "Bo", None, "j")
    again = wire_codec.decode(wire_codec.encode_message(request)[:-1])
    assert wire_codec.parse_request(wire_codec.request_kind(again), again) == request


@pytest.mark.parametrize(
    "line",
    [
        b"\xff", b"[1]", b'{"type":7}', b'{"type":"state"}', b'{"type":"welcome","protocol":1}',
        b'{"type":"error","code":5,"message":"x"}', b'{"type":"ok","request":"explore","id":1.5}',
        b'{"type":"rematch","me":1,"opponent":0}', b'{"type":"presence","connected":true,"deadline":7}',
        b'{"type":"presence","connected":true,"deadline":{"at":1e400},"grace_expired":false,"server_time":1}',
        b'{"type":"newer_than_this_client"}',
    ],
)
def test_a_hostile_server_line_is_bad_message_never_another_exception(line: bytes) -> None:
    """decode_server: what a client does with each server line; a malformed one is BadMessage
    (an unknown type is its own BadMessage, skipped by clients)."""
    with pytest.raises(m.BadMessage):
        wire_codec.decode_server(line)
