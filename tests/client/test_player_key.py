"""The player's identity key (issue 20, client/player_key.py): made once, kept privately, never
replaced behind the player's back, carried to another computer as a checked text."""

from __future__ import annotations

import base64
import json
import logging
import os
import stat
import sys

import pytest

from mineduel.client.player_key import (
    DAMAGED_SUFFIX,
    FILE_NAME,
    BadExport,
    KeyState,
    KeyStore,
    export_text,
    fingerprint,
    new_key,
    parse_export,
    valid_key,
)


def test_a_new_key_is_43_url_safe_characters_of_32_random_bytes():
    """C3: 32 bytes from secrets, URL-safe base64 without padding."""
    keys = {new_key() for _ in range(50)}
    assert len(keys) == 50
    for key in keys:
        assert len(key) == 43 and "=" not in key and valid_key(key)
        assert len(base64.urlsafe_b64decode(key + "=")) == 32


@pytest.mark.parametrize("bad", ["", "a" * 42, "a" * 44, "+" * 43, "a" * 42 + "=", None, 43, "é" * 43])
def test_valid_key_refuses_anything_else(bad):
    assert not valid_key(bad)


def test_the_first_use_makes_the_key_and_later_uses_reuse_it(tmp_path):
    store = KeyStore(tmp_path / "data")
    assert store.load().state is KeyState.MISSING
    first = store.ensure()
    assert first.state is KeyState.READY and valid_key(first.key)
    again = KeyStore(tmp_path / "data").ensure()
    assert again.key == first.key  # a second start finds the same identity
    data = json.loads(store.path.read_text())
    assert data == {"version": 1, "key": first.key}


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_the_file_is_private_and_no_temporary_file_is_left(tmp_path):
    store = KeyStore(tmp_path)
    store.ensure()
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == [FILE_NAME]


def test_the_key_is_never_logged(tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    store = KeyStore(tmp_path)
    key = store.ensure().key
    assert key and key not in caplog.text
    assert "new identity" in caplog.text


@pytest.mark.parametrize("content", [b"", b"{", b"\xff\xfe", b"[]", b'{"key": 5}', b'{"key": "short"}',
                                     b'{"version": 1}', b"null", b"[" * 100_000])
def test_a_damaged_file_is_reported_and_never_replaced_silently(tmp_path, content):
    store = KeyStore(tmp_path)
    store.path.write_bytes(content)
    assert store.load().state is KeyState.CORRUPT
    assert store.ensure().state is KeyState.CORRUPT  # ensure does not write over it
    assert store.path.read_bytes() == content


def test_a_new_identity_over_a_damaged_file_keeps_the_old_file_aside(tmp_path):
    store = KeyStore(tmp_path)
    store.path.write_bytes(b"garbage")
    made = store.make_new()
    assert made.state is KeyState.READY and store.load().key == made.key
    assert (tmp_path / (FILE_NAME + DAMAGED_SUFFIX)).read_bytes() == b"garbage"


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="POSIX permissions (root writes anywhere)")
def test_an_unwritable_folder_is_unavailable_and_nothing_is_made(tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        loaded = KeyStore(folder).ensure()
        assert loaded.state is KeyState.UNAVAILABLE and loaded.key is None
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o700)


def test_a_folder_that_is_a_file_is_unavailable(tmp_path):
    blocker = tmp_path / "data"
    blocker.write_text("not a folder")
    assert KeyStore(blocker).ensure().state is KeyState.UNAVAILABLE


def test_export_and_import_round_trip_with_spaces_and_line_breaks(tmp_path):
    key = new_key()
    text = export_text(key)
    assert text.startswith("MD1-") and len(text) == 4 + 43 + 1 + 4
    assert parse_export(text) == key
    assert parse_export("  " + text[:20] + "\n" + text[20:] + " ") == key  # a messenger's line break
    assert parse_export("md1-" + text[4:]) == key


@pytest.mark.parametrize(("text", "reason"), [("", "empty"), ("   ", "empty"), ("hello", "not_a_key"),
                                          ("MD1-abc-ABCD", "not_a_key"), ("MD1-" + "A" * 43, "not_a_key")])
def test_import_refuses_what_is_not_an_exported_key(text, reason):
    with pytest.raises(BadExport) as err:
        parse_export(text)
    assert err.value.reason == reason


def test_import_refuses_a_typo_by_its_check():
    key = new_key()
    text = export_text(key)
    i = 10
    swapped = text[:i] + ("B" if text[i] != "B" else "C") + text[i + 1:]
    with pytest.raises(BadExport) as err:
        parse_export(swapped)
    assert err.value.reason == "typo"


def test_import_replaces_the_kept_key(tmp_path):
    store = KeyStore(tmp_path)
    old = store.ensure().key
    other = new_key()
    assert store.replace(other)
    assert store.load().key == other != old
    with pytest.raises(ValueError):
        store.replace("not a key")
    assert store.load().key == other  # nothing changed


def test_the_fingerprint_is_the_servers_public_id():
    """PROTOCOL.md §17: 16 hex of sha256("player:" + sha256hex(K))."""
    import hashlib

    key = "A" * 42 + "E"
    inner = hashlib.sha256(key.encode()).hexdigest()
    assert fingerprint(key) == hashlib.sha256(("player:" + inner).encode()).hexdigest()[:16]


def test_a_kiosk_keeps_the_key_in_memory_and_forgets_it_for_the_next_player(tmp_path):
    """docs/KIOSK.md: a shared machine; each visitor is a new player, nothing written."""
    store = KeyStore(tmp_path, memory=True)
    first = store.ensure()
    assert first.state is KeyState.READY and store.load().key == first.key
    assert list(tmp_path.iterdir()) == []
    store.forget()
    assert store.load().state is KeyState.MISSING
    assert store.ensure().key != first.key


def test_each_server_gets_its_own_key_from_the_one_kept():
    """A hostile server learns only what identifies the player there (player_key.server_key)."""
    from mineduel.client.player_key import server_key

    key = new_key()
    here = server_key(key, "duel.example.org", 47650)
    assert valid_key(here) and here != key
    assert server_key(key, "DUEL.example.org", 47650) == here  # host names ignore case
    assert server_key(key, "[::1]", 47650) == server_key(key, "::1", 47650)
    assert len({here, server_key(key, "evil.example", 47650), server_key(key, "duel.example.org", 47651),
                server_key(new_key(), "duel.example.org", 47650)}) == 4
