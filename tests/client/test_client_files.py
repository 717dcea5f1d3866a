"""Settings (U5) and record files (RECORD.md, E1): defaults on bad files, clear errors on bad folders."""

from __future__ import annotations

import errno
import json
import logging
import os

import pytest

from mineduel.client.records import RecordStore, WriteError, classify
from mineduel.client.settings import Settings, SettingsStore


@pytest.mark.parametrize(
    "content",
    [b"{not json", b"\xff\xfe\x00garbage", b"[1, 2, 3]", b'{"language": "xx"}', b'{"language": 5}', b""],
    ids=["bad-json", "bad-bytes", "not-an-object", "unknown-language", "wrong-type", "empty"],
)
def test_corrupt_settings_mean_defaults_and_a_log_note(tmp_path, caplog, content):
    """U5: a corrupt settings file gives the defaults (language picker again) and a log line, no crash."""
    (tmp_path / "settings.json").write_bytes(content)
    with caplog.at_level(logging.WARNING, logger="mineduel.client.settings"):
        settings = SettingsStore(tmp_path).load()
    assert settings == Settings()
    assert caplog.records, "the problem is noted in the log"


def test_missing_settings_are_defaults_silently(tmp_path, caplog):
    """U1: no file yet — defaults, nothing to complain about."""
    with caplog.at_level(logging.WARNING):
        assert SettingsStore(tmp_path / "new").load() == Settings()
    assert not caplog.records


def test_settings_round_trip(tmp_path):
    """U5: the chosen language is saved and reused."""
    store = SettingsStore(tmp_path / "cfg")
    assert store.save(Settings(language="zh-CN"))
    assert store.load() == Settings(language="zh-CN")
    assert json.loads((tmp_path / "cfg" / "settings.json").read_text())["language"] == "zh-CN"


def test_unwritable_settings_folder_is_not_fatal(tmp_path):
    """U5: a folder that cannot be created (a file is in the way) makes save return False."""
    (tmp_path / "blocked").write_text("a file, not a folder")
    assert SettingsStore(tmp_path / "blocked" / "cfg").save(Settings(language="ko")) is False


def test_app_starts_with_a_corrupt_settings_file(tmp_path):
    """U1/U5: the app starts normally and asks for the language when the settings file is corrupt."""
    from support.client_driver import Driver

    from mineduel.client.scenes.popups import LanguagePopup

    (tmp_path / "settings.json").write_text("{{{")
    d = Driver(tmp_path)
    try:
        assert isinstance(d.app.stack.popup, LanguagePopup)
    finally:
        d.close()


def test_records_are_saved_and_exported_without_overwriting(tmp_path):
    """E1/RECORD.md: a record goes to the data folder; an export is a copy, never over another file."""
    store = RecordStore(tmp_path / "records", tmp_path / "exports")
    first = store.save("cpu-x", '{"a": 1}')
    second = store.save("cpu-x", '{"a": 2}')
    assert first.ok and second.ok and first.path != second.path
    assert first.path.read_text() == '{"a": 1}\n'
    exported = store.export("cpu-x", '{"a": 1}')
    assert exported.ok and exported.path.parent == tmp_path / "exports"


def test_unwritable_record_folder_gives_a_clear_error(tmp_path):
    """A folder that cannot be written gives an error kind the screen words clearly, not a crash."""
    (tmp_path / "file").write_text("in the way")
    result = RecordStore(tmp_path / "file" / "records").save("cpu-x", "{}")
    assert not result.ok and result.path is None and result.error in (WriteError.PERMISSION, WriteError.OTHER)


def test_full_disk_gives_a_clear_error(tmp_path, monkeypatch):
    """A full disk (ENOSPC while writing) is reported as disk_full and leaves no partial file."""
    real_fdopen = os.fdopen

    class FullDisk:
        def __init__(self, fd, *args, **kwargs):
            self.inner = real_fdopen(fd, *args, **kwargs)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.inner.close()

        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fdopen", FullDisk)
    result = RecordStore(tmp_path / "records").save("cpu-x", "{}")
    assert result.error is WriteError.DISK_FULL
    assert list((tmp_path / "records").iterdir()) == []


def test_error_kinds():
    """errno values map to the three messages the player can get."""
    assert classify(OSError(errno.ENOSPC, "full")) is WriteError.DISK_FULL
    assert classify(PermissionError(errno.EACCES, "no")) is WriteError.PERMISSION
    assert classify(OSError(errno.EROFS, "ro")) is WriteError.PERMISSION
    assert classify(OSError(errno.EIO, "io")) is WriteError.OTHER


def test_failed_record_save_is_shown_on_the_result(tmp_path):
    """C4/E1: when the record cannot be saved, the result popup says so in the player's language."""
    from support.client_driver import Driver

    from mineduel.client.cpu_match import CpuMatch
    from mineduel.client.screenshots import MID_GAME
    from mineduel.shared.rules.notation import from_ascii

    (tmp_path / "records").write_text("a file where the records folder should be")
    d = Driver(tmp_path, language="ja")
    try:
        d.app.ctx.new_cpu_match = lambda **kw: CpuMatch(clock=d.clock, state=from_ascii(MID_GAME), **kw)
        d.click_button("start")
        d.click_cell(1 * 8 + 4)  # KO
        d.wait(1.0)
        text, is_error = d.app.game.flow.record_line()
        assert is_error and text.startswith("記録を保存できませんでした")
    finally:
        d.close()


def test_settings_fields_round_trip_and_bad_fields_fall_back_one_by_one(tmp_path, caplog):
    """U5: name, sound and tutorial progress survive a restart; one bad field does not reset the others."""
    store = SettingsStore(tmp_path)
    kept = Settings(language="ja", player_name="Mina", sound_volume=0.25, sound_muted=True, tutorial="step-3")
    assert store.save(kept) and store.load() == kept
    (tmp_path / "settings.json").write_text(json.dumps({
        "version": 1, "language": "ko", "player_name": "\x07bell", "sound_volume": 7, "sound_muted": "yes",
        "tutorial": "step-x",
    }))
    with caplog.at_level(logging.WARNING, logger="mineduel.client.settings"):
        loaded = store.load()
    assert loaded == Settings(language="ko")
    assert len(caplog.records) == 4


def test_player_names_are_trimmed_and_bounded():
    from mineduel.client.settings import NAME_MAX, valid_player_name

    assert valid_player_name("  Mina   Kim ") == "Mina Kim"
    assert valid_player_name("x" * NAME_MAX) == "x" * NAME_MAX
    assert valid_player_name("x" * (NAME_MAX + 1)) is None
    assert valid_player_name("   ") is None and valid_player_name(3) is None and valid_player_name("a\u200bb") is None
