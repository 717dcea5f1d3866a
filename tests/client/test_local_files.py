"""Issue 15, item 7: every file the client reads survives any content (defaults, one log line, no traceback).

The files: ``settings.json`` (config folder), ``online-session.json`` (the saved seat, data folder,
read at start to resume a running match) and the kiosk's ``kiosk.toml``. Each is given each
corruption: nesting 100,000 levels deep, huge numbers (``1e400``, a 5,000-digit integer), NaN,
wrong types, binary garbage, invalid UTF-8, an empty file, a folder in its place, a 2 MiB file.
"""

from __future__ import annotations

import json
import logging
import random

import pytest
from support.client_driver import Driver

from mineduel.client import kiosk
from mineduel.client.scenes.game import GameScene
from mineduel.client.settings import Settings, SettingsStore
from mineduel.client.tokens import TokenStore
from mineduel.client.witness import LiveWitness, WitnessStore

DEEP = 100_000
GOOD_SESSION = {"version": 1, "host": "127.0.0.1", "port": 47650, "room": "NYTF23", "token": "ab" * 32,
                "playing": True, "saved_at": 1.0, "tls": False, "pin": None}


def _session(**changes: object) -> bytes:
    return json.dumps({**GOOD_SESSION, **changes}).encode()


def _raw_session(field: str, raw: str) -> bytes:
    """A saved session whose ``field`` is the JSON text ``raw`` (numbers json.dumps would not write)."""
    return _session(**{field: "__RAW__"}).replace(b'"__RAW__"', raw.encode())


# Corruptions every JSON file gets (name -> bytes); a folder in the file's place is added below.
COMMON = {
    "deep-array": b"[" * DEEP + b"]" * DEEP,
    "deep-object": b'{"a":' * DEEP + b"1" + b"}" * DEEP,
    "deep-in-a-field": b'{"language":' + b"[" * DEEP + b"]" * DEEP + b"}",
    "binary": random.Random(15).randbytes(4096),
    "invalid-utf8": b'{"language": "\xff\xfe\xc0\x80"}',
    "bom-and-garbage": b"\xef\xbb\xbf\x00\x01\x02",
    "truncated": b'{"language": "e',
    "empty": b"",
    "not-an-object": b"[1, 2, 3]",
    "a-string": b'"en"',
    "null": b"null",
    "nan": b'{"language": NaN, "port": NaN}',
    "huge-float": b'{"language": 1e400, "port": 1e400}',
    "huge-int": b'{"language": ' + b"9" * 5000 + b', "port": ' + b"9" * 5000 + b"}",
    "too-large": b'{"pad": "' + b"x" * (2 << 20) + b'"}',
}

SETTINGS = {
    **COMMON,
    "language-list": b'{"language": ["en"]}',
    "language-object": b'{"language": {"en": true}}',
    "language-number": b'{"language": 5}',
    "language-unknown": b'{"language": "xx"}',
    "language-deep-list": b'{"language": ' + b"[" * 500 + b"]" * 500 + b"}",
}

SESSIONS = {
    **COMMON,
    "port-1e400": _raw_session("port", "1e400"),
    "port-huge-int": _raw_session("port", "1" * 5000),
    "port-10**30": _session(port=10**30),
    "port-string": _session(port="47650"),
    "port-true": _session(port=True),
    "port-float": _session(port=47650.5),
    "port-negative": _session(port=-1),
    "host-list": _session(host=["127.0.0.1"]),
    "host-empty": _session(host=""),
    "host-control": _session(host="a\x00b"),
    "host-long": _session(host="h" * 5000),
    "room-number": _session(room=123456),
    "room-not-a-code": _session(room="ABC!23"),
    "room-long": _session(room="NYTF23" * 1000),
    "token-number": _session(token=5),
    "token-not-hex": _session(token="zz" * 32),
    "token-missing": json.dumps({k: v for k, v in GOOD_SESSION.items() if k != "token"}).encode(),
    "playing-string": _session(playing="yes"),
    "saved-at-1e400": _raw_session("saved_at", "1e400"),
    "saved-at-nan": _raw_session("saved_at", "NaN"),
    "saved-at-list": _session(saved_at=[1.0]),
    "tls-string": _session(tls="true"),
    "pin-number": _session(pin=5),
    "pin-not-hex": _session(tls=True, pin="not a pin"),
    "pin-deep": _raw_session("pin", "[" * DEEP + "]" * DEEP),
}

TOML = {
    "deep-array": b"idle_seconds = " + b"[" * DEEP + b"]" * DEEP,
    "deep-array-small": b"idle_seconds = " + b"[" * 20_000 + b"]" * 20_000,  # under the 64 KB limit
    "deep-table": b"languages = " + b"{a = " * 10_000 + b"1" + b"}" * 10_000,
    "huge-float": b"idle_seconds = 1e400",
    "nan": b"idle_seconds = nan",
    "huge-int": b"idle_seconds = " + b"9" * 5000,
    "binary": random.Random(15).randbytes(4096),
    "invalid-utf8": b'difficulty = "\xff\xfe"',
    "wrong-types": b'idle_seconds = "ten"\nlanguages = 5\nonline = "yes"\ndisplay = [1]\nadmin_pin = [1, 2]',
    "empty-languages": b"languages = []",
    "truncated": b'difficulty = "e',
    "too-large": b"# " + b"x" * (2 << 20),
}


def _warnings(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("name", [*SETTINGS, "folder"])
def test_settings_file_of_any_content_means_defaults_and_one_log_line(tmp_path, caplog, name):
    """settings.json: whatever it holds, the defaults (the language picker again) and exactly one log line."""
    path = tmp_path / "settings.json"
    if name == "folder":
        path.mkdir()
    else:
        path.write_bytes(SETTINGS[name])
    with caplog.at_level(logging.INFO):
        settings = SettingsStore(tmp_path).load()
    assert settings == Settings()
    assert len(caplog.records) == 1, [r.getMessage()[:200] for r in caplog.records]
    assert all(len(r.getMessage()) < 400 for r in caplog.records)


@pytest.mark.parametrize("name", [*SESSIONS, "folder"])
def test_saved_session_of_any_content_means_no_saved_session_and_one_log_line(tmp_path, caplog, name):
    """online-session.json: whatever it holds, "no saved session" (nothing to resume) and exactly one log line."""
    path = tmp_path / "online-session.json"
    if name == "folder":
        path.mkdir()
    else:
        path.write_bytes(SESSIONS[name])
    with caplog.at_level(logging.INFO):
        assert TokenStore(tmp_path).load() is None
    assert len(caplog.records) == 1, [r.getMessage()[:200] for r in caplog.records]
    assert all(len(r.getMessage()) < 400 for r in caplog.records)


def test_a_good_saved_session_still_loads(tmp_path):
    (tmp_path / "online-session.json").write_bytes(_session(pin="CD" * 32, tls=True))
    saved = TokenStore(tmp_path).load()
    assert saved is not None and saved.port == 47650 and saved.room == "NYTF23" and saved.playing
    assert saved.pin == "cd" * 32 and saved.tls


@pytest.mark.parametrize("name", [*TOML, "folder"])
def test_kiosk_config_of_any_content_means_defaults_and_a_warning_each(tmp_path, caplog, name):
    """kiosk.toml: never raises; a file that is not TOML is all defaults and one warning; a bad value keeps
    its default with one warning per key."""
    path = tmp_path / "kiosk.toml"
    if name == "folder":
        path.mkdir()
    else:
        path.write_bytes(TOML[name])
    with caplog.at_level(logging.INFO), caplog.at_level(logging.INFO, logger="mineduel.client.kiosk"):  # --kiosk-check sets it
        config, problems = kiosk.load_config(path)
    warnings = _warnings(caplog)
    assert problems and len(warnings) == len(problems)
    if name != "wrong-types":
        assert config == kiosk.KioskConfig() and len(warnings) == 1
    assert all(len(r.getMessage()) < 600 for r in warnings)


@pytest.mark.parametrize("name", [*COMMON, "folder"])
def test_witness_files_of_any_content_are_no_witness(tmp_path, caplog, name):
    """The match witnesses (``witnesses/<match_id>.json``, ``pending.json``, issue 14) are read back on a
    resume: any content is no witness (or the JSON it holds, which ``LiveWitness.resumed`` then refuses),
    with at most one log line, never an exception."""
    store = WitnessStore(tmp_path / "witnesses")
    store.folder.mkdir()
    match_id = "0123456789abcdef"
    for path in (store.path(match_id), store.folder / "pending.json"):
        if name == "folder":
            path.mkdir()
        else:
            path.write_bytes(COMMON[name])
    with caplog.at_level(logging.INFO):
        data = store.load(match_id)
        assert LiveWitness.resumed(data, match_id) is None
        assert store.load_pending() is None
    assert len(caplog.records) <= 2  # one per file at most (valid JSON of the wrong shape is refused silently)


@pytest.mark.parametrize("name", ["deep-array", "huge-int", "binary", "port-1e400", "pin-deep", "folder"])
def test_the_app_starts_with_both_files_corrupt(tmp_path, caplog, name):
    """At start the app reads settings.json and online-session.json (to resume a running match): both
    corrupt, it starts on the CPU game's language picker, with one log line per file and no traceback."""
    for file_name, contents in (("settings.json", SETTINGS), ("online-session.json", SESSIONS)):
        path = tmp_path / file_name
        if name == "folder":
            path.mkdir()
        else:
            path.write_bytes(contents.get(name, COMMON["binary"]))
    with caplog.at_level(logging.INFO):
        d = Driver(tmp_path, language=None)
    try:
        assert isinstance(d.app.stack.top, GameScene) and d.app.ctx.settings == Settings()
        for _ in range(10):
            assert d.frame() is not None
        assert not any(r.exc_info for r in caplog.records)
        warnings = [r.getMessage()[:120] for r in _warnings(caplog)]
        assert len(warnings) == 2, warnings  # one per file
    finally:
        d.close()
