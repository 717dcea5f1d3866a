"""Coverage-guided fuzzing (atheris/libFuzzer) of the protocol decoder, its field validators and
the typed parsing of both directions (shared/wire/codec.py, shared/wire/messages.py).

    python tools/fuzz_decoder.py -runs=20000            # bounded by count
    python tools/fuzz_decoder.py -max_total_time=60     # bounded by time
    python tools/fuzz_decoder.py -runs=5000 --json      # the summary as one JSON line

Every byte string the fuzzer makes is one line a client could send. The rules, checked on each:

- ``decode`` (with orjson, and with the standard-library fallback a client without orjson uses)
  returns a dict whose ``type`` is a string, or raises :class:`ProtocolError` (``bad_json`` or
  ``bad_request``); nothing else may escape.
- A decoded message re-encodes: ``encode`` does not raise and ``decode`` of its line gives the
  same message back (no NaN, no lone surrogate, no value only one direction can carry).
- Every field validator (``cell``, ``room_code``, ``token``, ``client_seed``, ``player_name``,
  ``match_id``, ``optional_seq``, ``request_id``) either raises ``ProtocolError`` with a known
  code or returns a value that PROTOCOL.md §4 allows for that field; it is fed both the decoded
  message and values built straight from the fuzzer's bytes (any JSON type, any nesting).
- Client → server typed parsing (``request_kind``, then ``hello_request`` or ``parse_request``)
  either raises ``ProtocolError`` with a code §9 documents for those steps (``unknown_type``,
  ``unsupported_protocol``, ``bad_request``) or returns the typed request of that ``type``, whose
  fields PROTOCOL.md §4 allows and whose line (``encode_message``) parses back to the same request.
- Server → client (``decode_server``, what a client does with a hostile server's line): a typed
  server message or ``BadMessage``, never another exception; a message it returns is written again
  (``encode_message``) and reads back to the same bytes.

A rule broken is a crash: libFuzzer stops, keeps the input as ``crash-*`` in ``--artifacts``
and this script exits 1. The fuzzing runs in a child process (libFuzzer owns its process); the
parent reads libFuzzer's statistics and prints a summary: executions, corpus size, coverage at
the start and at the end, crashes. The seed corpus and dictionary are written to a temporary
folder (nothing is kept in the repository but this file).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import unicodedata
from pathlib import Path
from typing import Any

WORKER_FLAG = "--worker"
INJECT_ENV = "MINEDUEL_FUZZ_INJECT_BUG"
"""Set to ``1`` to plant a known bug in ``cell`` (the test checks the harness finds it)."""

# A few lines of each message type (PROTOCOL.md §4, §13): libFuzzer mutates from these.
SEEDS: tuple[bytes, ...] = (
    b'{"type":"hello","protocol":1,"client":"nc"}',
    b'{"type":"ping","id":7}',
    b'{"type":"pong"}',
    b'{"type":"create_room","name":"Ann","client_seed":"ann-42","id":"c1"}',
    b'{"type":"peek","room":" nytf23 "}',
    b'{"type":"join","room":"NYTF23","name":"Bob","client_seed":"bob-7"}',
    b'{"type":"resume","room":"NYTF23","token":"' + b"ab" * 32 + b'"}',
    b'{"type":"ready","ready":false,"client_seed":"x"}',
    b'{"type":"leave"}',
    b'{"type":"explore","cell":[0,0],"match_id":"b048f279829caa65","seq":3}',
    b'{"type":"plant","cell":[7,7]}',
    b'{"type":"flag","cell":[4,4],"seq":0}',
    b'{"type":"unflag","cell":[3,5]}',
    b'{"type":"end_turn","seq":8}',
    b'{"type":"resign","match_id":"9fe01f4dd917b3c7"}',
    b'{"type":"rematch","client_seed":""}',
    b'{"type":"get_record","match_id":"9fe01f4dd917b3c7","id":-5}',
    b'{"type":"bye"}\r',
    b'[{"type":"ping"}]',
    b'{"type":1e400,"cell":[1.0,-0],"id":[[[]]]}',
    b'{"type":"x","type":"ping","\\u0000":"\\ud800"}',
    # server lines (PROTOCOL.md §5), for decode_server
    b'{"type":"welcome","protocol":1,"server":{"name":"s","version":"1"},"server_time":1.5,"limits":{"max_line":8192,'
    b'"messages_per_second":20,"burst":40,"ping_interval":5.0,"idle_timeout":15.0},"rules":{"turn_seconds":20.0,'
    b'"grace_seconds":120.0},"id":"h"}',
    b'{"type":"error","code":"bad_json","message":"no","request":"join","id":3}',
    b'{"type":"ok","request":"explore","seq":4,"id":"c2"}',
    b'{"type":"room_created","room":"NYTF23","invite":"mineduel://10.0.0.2:47650/join/NYTF23","token":"' + b"ab" * 32 + b'"}',
    b'{"type":"presence","who":"opponent","connected":false,"deadline":{"at":130.0,"left":120.0},"grace_expired":false,'
    b'"server_time":10.0}',
    b'{"type":"state","match_id":"b048f279829caa65","seq":2,"seat":0,"phase":"explore","to_move":"me","turn":1,'
    b'"quota_left":1,"deadline":{"at":20.0,"left":19.5},"server_time":0.5,"board":{"numbers":["1.......",'
    b'"........","........","........","........","........","........",".......0"],"opened_by":["m.......",'
    b'"........","........","........","........","........","........",".......o"],"markers":["........",'
    b'"........","..m.....","........","........","........","........","........"],"my_mines":["........",'
    b'".x......","........","........","........","........","........","........"]},"transcript":"' + b"0" * 64
    + b'","events":[{"seq":1,"by":"opponent","action":"plant","at":0.4,"commitment":"' + b"1" * 64
    + b'","transcript":"' + b"2" * 64 + b'"}],"result":null}',
    b'{"type":"rematch","me":true,"opponent":false}',
    b'{"type":"server_closing","reason":"shutdown"}',
)

DICTIONARY: tuple[str, ...] = (
    '"type"', '"cell"', '"room"', '"token"', '"name"', '"client_seed"', '"match_id"', '"seq"',
    '"id"', '"ready"', '"protocol"', '"client"', '"explore"', '"plant"', '"flag"', '"unflag"',
    '"end_turn"', '"hello"', '"ping"', 'null', 'true', 'false', '1e400', '-0', '1E-400',
    '"welcome"', '"error"', '"ok"', '"state"', '"room"', '"match_end"', '"presence"', '"record"', '"me"',
    '"opponent"', '"board"', '"events"', '"result"', '"deadline"', '"seat"', '"server_time"', '"request"',
    '18446744073709551616', '9007199254740993', '"\\ud800"', '"\\udc00"', '"\\u0000"', 'NaN',
    'Infinity', '\\r', '\\xef\\xbb\\xbf', '\\xc0\\x80', '\\xed\\xa0\\x80', '[[[[', ']]]]',
)

KNOWN_CODES = frozenset({"bad_json", "bad_request", "room_not_found"})
"""The only error codes the decoder and the field validators may raise (PROTOCOL.md §9 3-7)."""

REQUEST_CODES = frozenset({"unknown_type", "unsupported_protocol", "bad_request"})
"""The codes of §9 steps 4-6, the only ones typed request parsing may raise (a room code is step 7)."""

CELL_TYPES = frozenset({"explore", "plant", "flag", "unflag"})
ACTION_TYPES = CELL_TYPES | {"end_turn"}

ROOM_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
HEX = frozenset("0123456789abcdef")


class RuleBroken(AssertionError):
    """A fuzz rule did not hold (libFuzzer reports it as a crash)."""


# ----- what PROTOCOL.md §4 allows, written out independently of shared/wire ---------------------
def _plain_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def allowed_cell(value: Any) -> int | None:
    """``[row, col]`` with integers 0-7 → ``row*8+col``; anything else → ``None``."""
    if isinstance(value, list) and len(value) == 2 and all(_plain_int(v) and 0 <= v <= 7 for v in value):
        return value[0] * 8 + value[1]
    return None


def allowed_room(value: Any) -> str | None:
    """Six characters of the alphabet, any ASCII case, surrounding spaces ignored."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text.isascii() or len(text) != 6 or any(c not in ROOM_ALPHABET for c in text.upper()):
        return None
    return text.upper()


def allowed_name(value: Any) -> bool:
    """At most 32 characters, none of them a control character (Unicode category Cc)."""
    return isinstance(value, str) and len(value) <= 32 and not any(unicodedata.category(c) == "Cc" for c in value)


def allowed_seed(value: Any) -> bool:
    """0-64 printable ASCII characters (the space included) other than ':'."""
    return isinstance(value, str) and len(value) <= 64 and all(" " <= c <= "~" and c != ":" for c in value)


def allowed_hex(value: Any, digits: int) -> bool:
    return isinstance(value, str) and len(value) == digits and set(value) <= HEX


def allowed_id(value: Any) -> bool:
    """A string of at most 64 characters, or an integer from -2**63 to 2**64 - 1 (§1)."""
    return (isinstance(value, str) and len(value) <= 64) or (_plain_int(value) and -(2**63) <= value < 2**64)


# ----- the harness (imported only in the worker, after atheris instruments the package) --------
class Harness:
    """The fuzz target: one input → every rule above."""

    def __init__(self, codec: Any, messages: Any, atheris: Any) -> None:
        self.codec = codec
        self.messages = messages
        self.atheris = atheris
        self.real_orjson = codec._orjson
        self.codecs = [("orjson", self.real_orjson)] if self.real_orjson is not None else []
        self.codecs.append(("json", None))  # the standard-library fallback

    # decode + re-encode, with each codec
    def decode_rules(self, line: bytes) -> list[dict[str, Any]]:
        codec = self.codec
        decoded = []
        try:
            for name, json_codec in self.codecs:
                codec._orjson = json_codec
                try:
                    msg = codec.decode(line)
                except codec.ProtocolError as exc:
                    if exc.code not in ("bad_json", "bad_request"):
                        raise RuleBroken(f"{name}: decode raised code {exc.code!r}") from None
                    continue
                if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
                    raise RuleBroken(f"{name}: decode returned {msg!r}")
                try:
                    again = codec.decode(codec.encode(msg)[:-1])
                except Exception as exc:
                    raise RuleBroken(f"{name}: decoded {line!r} does not re-encode: {exc!r}") from exc
                if again != msg:
                    raise RuleBroken(f"{name}: {line!r} -> {msg!r} re-encodes as {again!r}")
                self.request_rules(msg)  # with the codec that read it: its line is written by the same one
                decoded.append(msg)
        finally:
            codec._orjson = self.real_orjson
        return decoded

    # the validators, on one message-like mapping
    def validator_rules(self, msg: dict[str, Any]) -> None:
        p = self.codec
        checks = (
            ("cell", lambda: p.cell(msg), lambda out: out == allowed_cell(msg.get("cell")) and out is not None),
            ("room_code", lambda: p.room_code(msg.get("room")), lambda out: out == allowed_room(msg.get("room"))),
            ("token", lambda: p.token(msg.get("token")), lambda out: out == msg.get("token") and allowed_hex(out, 64)),
            ("match_id", lambda: p.match_id(msg.get("match_id")),
             lambda out: out == msg.get("match_id") and allowed_hex(out, 16)),
            ("client_seed", lambda: p.client_seed(msg),
             lambda out: out == msg.get("client_seed") and (out is None or allowed_seed(out))),
            ("player_name", lambda: p.player_name(msg), lambda out: out == msg.get("name", "") and allowed_name(out)),
            ("optional_seq", lambda: p.optional_seq(msg),
             lambda out: out == msg.get("seq") and (out is None or (_plain_int(out) and out >= 0))),
            ("request_id", lambda: p.request_id(msg), lambda out: out == msg.get("id") and (out is None or allowed_id(out))),
        )
        for name, call, holds in checks:
            try:
                out = call()
            except p.ProtocolError as exc:
                if exc.code not in KNOWN_CODES:
                    raise RuleBroken(f"{name} raised code {exc.code!r} for {msg!r}") from None
                continue
            if not holds(out):
                raise RuleBroken(f"{name} accepted {msg!r} as {out!r}, which PROTOCOL.md does not allow")

    # client → server: a decoded message read as its typed request (§9 steps 4-6)
    def _typed_request(self, msg: dict[str, Any]) -> Any:
        codec = self.codec
        kind = codec.request_kind(msg)
        if kind == "hello":
            return codec.hello_request(msg, 1)
        return codec.parse_request(kind, msg)

    def request_rules(self, msg: dict[str, Any]) -> None:
        codec = self.codec
        try:
            request = self._typed_request(msg)
        except codec.ProtocolError as exc:
            if exc.code not in REQUEST_CODES:
                raise RuleBroken(f"parse_request raised code {exc.code!r} for {msg!r}") from None
            return
        except Exception as exc:
            raise RuleBroken(f"parse_request raised {exc!r} for {msg!r}") from exc
        kind = request.type if msg["type"] in ACTION_TYPES else request.TYPE  # one class holds the five actions
        if kind != msg["type"]:
            raise RuleBroken(f"{msg!r} read as a {kind} request")
        if getattr(request, "id", None) is not None and not allowed_id(request.id):
            raise RuleBroken(f"{msg!r} read with id {request.id!r}")
        if msg["type"] in CELL_TYPES and request.cell != allowed_cell(msg.get("cell")):
            raise RuleBroken(f"{msg!r} read with cell {request.cell!r}")
        try:
            again = self._typed_request(codec.decode(codec.encode_message(request)[:-1]))
        except Exception as exc:
            raise RuleBroken(f"{request!r} (from {msg!r}) does not read back from its own line: {exc!r}") from exc
        if again != request:
            raise RuleBroken(f"{msg!r} -> {request!r} reads back as {again!r}")

    # server → client: one line from a (hostile) server
    def server_rules(self, line: bytes) -> None:
        codec, messages = self.codec, self.messages
        try:
            message = codec.decode_server(line)
        except messages.BadMessage:
            return
        except Exception as exc:
            raise RuleBroken(f"decode_server raised {exc!r} for {line!r}") from exc
        if message.TYPE.value not in messages.SERVER_MESSAGES:
            raise RuleBroken(f"decode_server returned {message!r}")
        try:
            written = codec.encode_message(message)
            again = codec.encode_message(codec.decode_server(written))
        except Exception as exc:
            raise RuleBroken(f"{message!r} (from {line!r}) does not read back from its own line: {exc!r}") from exc
        if again != written:
            raise RuleBroken(f"{line!r} -> {written!r} reads back as {again!r}")

    # values straight from the fuzzer's bytes
    def value(self, fdp: Any, depth: int = 0) -> Any:
        kind = fdp.ConsumeIntInRange(0, 9 if depth < 4 else 6)
        if kind == 0:
            return None
        if kind == 1:
            return fdp.ConsumeBool()
        if kind == 2:
            return fdp.ConsumeIntInRange(-10, 10)
        if kind == 3:
            return fdp.ConsumeInt(fdp.ConsumeIntInRange(1, 12))
        if kind == 4:
            return fdp.ConsumeRegularFloat()
        if kind == 5:
            return fdp.ConsumeUnicode(fdp.ConsumeIntInRange(0, 70))
        if kind == 6:
            return fdp.ConsumeString(fdp.ConsumeIntInRange(0, 70))  # any code point, surrogates too
        if kind == 7:
            return [self.value(fdp, depth + 1) for _ in range(fdp.ConsumeIntInRange(0, 4))]
        if kind == 8:
            return {fdp.ConsumeUnicode(3): self.value(fdp, depth + 1) for _ in range(fdp.ConsumeIntInRange(0, 3))}
        return [fdp.ConsumeIntInRange(-2, 9), fdp.ConsumeIntInRange(-2, 9)]  # cell-shaped

    def one_input(self, data: bytes) -> None:
        for msg in self.decode_rules(data):
            self.validator_rules(msg)
        self.server_rules(data)
        fdp = self.atheris.FuzzedDataProvider(data)
        fields = ("cell", "room", "token", "match_id", "client_seed", "name", "seq", "id")
        built = {field: self.value(fdp) for field in fields if fdp.ConsumeBool()}
        self.validator_rules(built)


def _worker(argv: list[str]) -> None:
    import atheris

    with atheris.instrument_imports(include=["mineduel.shared"]):
        from mineduel.shared.wire import codec, messages
    if os.environ.get(INJECT_ENV) == "1":
        real_cell = codec.cell

        def broken_cell(msg: Any) -> int:
            value = real_cell(msg)
            return 0 if value == 63 else value  # [7, 7] read as [0, 0]

        codec.cell = broken_cell
    harness = Harness(codec, messages, atheris)
    atheris.Setup(argv, harness.one_input)
    atheris.Fuzz()


# ----- the parent: run the worker, read libFuzzer's statistics, summarise ---------------------------
_STATS = re.compile(r"^#(\d+)\s+(\w+)\s+cov: (\d+) ft: (\d+) corp: (\d+)/", re.MULTILINE)
_DONE = re.compile(r"^Done (\d+) runs", re.MULTILINE)
_EXECUTED = re.compile(r"^stat::number_of_executed_units: (\d+)", re.MULTILINE)


def summarise(output: str, returncode: int) -> dict[str, Any]:
    """Executions, corpus size, coverage and crashes from libFuzzer's output."""
    stats = _STATS.findall(output)
    inited = [s for s in stats if s[1] == "INITED"]
    last = stats[-1] if stats else None
    done = _DONE.search(output)
    crashed = (
        "Uncaught Python exception" in output or "ERROR: libFuzzer" in output or "RuleBroken" in output
    )
    executed = _EXECUTED.search(output)
    executions = int(done.group(1)) if done else int(executed.group(1)) if executed else (int(last[0]) if last else 0)
    start_cov = int(inited[0][2]) if inited else (int(stats[0][2]) if stats else 0)
    end_cov = int(last[2]) if last else 0
    return {
        "executions": executions,
        "corpus": int(last[4]) if last else 0,
        "coverage_start": start_cov,
        "coverage_end": end_cov,
        "new_coverage": max(0, end_cov - start_cov),
        "features": int(last[3]) if last else 0,
        "crashes": 1 if crashed or (returncode != 0 and not done) else 0,
        "returncode": returncode,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON line")
    parser.add_argument("--artifacts", default=None, help="folder for crash inputs (default: a temporary one)")
    parser.add_argument("--timeout", type=float, default=600.0, help="kill the fuzzer after this many seconds")
    args, libfuzzer = parser.parse_known_args(argv)
    if not any(a.startswith(("-runs=", "-max_total_time=")) for a in libfuzzer):
        libfuzzer.append("-runs=10000")  # always bounded
    with tempfile.TemporaryDirectory(prefix="mineduel-fuzz-") as tmp:
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        for i, seed in enumerate(SEEDS):
            (corpus / f"seed-{i:02d}").write_bytes(seed)
        dictionary = Path(tmp) / "protocol.dict"
        dictionary.write_text("".join(f"{json.dumps(token)}\n" for token in DICTIONARY), encoding="ascii")
        artifacts = Path(args.artifacts) if args.artifacts else Path(tmp) / "artifacts"
        artifacts.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable, os.path.abspath(__file__), WORKER_FLAG, *libfuzzer,
            f"-dict={dictionary}", f"-artifact_prefix={artifacts}{os.sep}", "-print_final_stats=1", str(corpus),
        ]
        try:
            done = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=args.timeout, check=False)
            output, code = done.stdout + done.stderr, done.returncode
        except subprocess.TimeoutExpired as exc:
            output = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            code = -9
        summary = summarise(output, code)
        crash_files = sorted(p.name for p in artifacts.glob("crash-*"))
        summary["crash_inputs"] = [(artifacts / name).read_bytes().hex() for name in crash_files[:5]]
    if summary["crashes"]:
        tail = output[output.find("Uncaught Python exception") :] if "Uncaught" in output else output[-3000:]
        print(tail[:4000], file=sys.stderr)
    if args.json:
        print(json.dumps(summary))
    else:
        print(
            f"decoder fuzzing: {summary['executions']} executions, corpus {summary['corpus']} inputs, "
            f"coverage {summary['coverage_start']} -> {summary['coverage_end']} (+{summary['new_coverage']}), "
            f"{summary['crashes']} crash(es)"
        )
    return 1 if summary["crashes"] else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == WORKER_FLAG:
        _worker([sys.argv[0], *sys.argv[2:]])
    else:
        sys.exit(main())
