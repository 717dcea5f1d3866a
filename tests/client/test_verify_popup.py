"""The in-game *Verify* (issue 14): the server's record held to this client's witness by
the shared verifier, every check shown by name, what differs said; a missing witness, a malformed
record or witness and a verifier problem each give a clear message on screen, never a traceback."""

from __future__ import annotations

from dataclasses import replace

import pytest
from support.client_driver import Driver
from support.inprocess import InProcessServer

from mineduel.client.online_client import OnlineServices
from mineduel.client.scenes.game import GameScene
from mineduel.client.scenes.match_panels import VerifyOutcome, VerifyPopup, check_match
from mineduel.client.scenes.online import OnlineScene
from mineduel.client.tokens import TokenStore
from mineduel.client.witness import WitnessStore
from mineduel.shared.fairness.verify import WITNESS_CHECKS


class Played:
    """A headless app that joined a room on an in-process server, played a match and won it (the
    scripted opponent resigned): the result panel is open."""

    def __init__(self, tmp_path, *, witnesses: WitnessStore | None = None, language: str = "en") -> None:
        self.srv = InProcessServer()
        self.peer = self.srv.peer()
        code = self.peer.send(type="create_room", client_seed="peer-0")[0]["room"]
        services = OnlineServices(connect=self.srv.connector(), tokens=TokenStore(tmp_path / "data"), witnesses=witnesses)
        self.d = Driver(tmp_path, language=language, join=f"mineduel://127.0.0.1:47650/join/{code}",
                        online_services=lambda: services)
        self.d.app.ctx.settings = replace(self.d.app.ctx.settings, player_name="Tester")  # named already (name_popup.py)
        lobby = self.d.app.stack.top
        assert isinstance(lobby, OnlineScene)
        self.lobby = lobby
        self.d.frame()
        self.click(lobby.widgets, "join")
        self.click(lobby.widgets, "ready")
        self.peer.send(type="ready", client_seed="peer-1")
        self.d.frame()
        self.srv.advance(3.0)
        self.peer.send(type="resign")
        self.d.wait(1.0)
        game = self.d.app.stack.top
        assert isinstance(game, GameScene) and game.panel.open
        self.game = game

    def click(self, group, name: str) -> None:
        self.d.click(self.d.to_window(group.by_name(name).rect.center))
        self.d.frame()

    @property
    def match(self):
        match = self.lobby.client.match
        assert match is not None and match.end is not None
        return match

    def verify(self) -> VerifyPopup:
        self.click(self.game.panel.widgets, "verify")
        popup = self.d.app.stack.popup
        assert isinstance(popup, VerifyPopup)
        self.d.frame()  # drawn without a problem
        self.d.app.render()
        return popup


@pytest.fixture
def played(tmp_path):
    p = Played(tmp_path)
    yield p
    p.d.close()


def test_an_honest_match_verifies_against_its_witness(played):
    popup = played.verify()
    report = popup.report
    assert report is not None and report.valid and report.ok and report.witnessed
    for name in WITNESS_CHECKS:
        check = report.check(name)
        # The opponent resigned before any plant: nothing to compare there (test_witness.py plays plants).
        assert check.ok is (None if name in ("previous_match", "plants_seen") else True), (name, check.detail)
    assert popup._title() == ("Verified: this match was fair", True)
    assert popup._note()[0] == "Checked against what this device saw during the match."
    played.click(popup.widgets, "close")
    assert played.d.app.stack.popup is None


def test_a_forged_record_fails_the_named_check_with_what_differs(played):
    """The operator's record names the seeds the other way round: this seat's seed is not the one it sent."""
    fairness = played.match.end.record["fairness"]
    fairness["client_seeds"] = list(reversed(fairness["client_seeds"]))
    popup = played.verify()
    report = popup.report
    assert report is not None and not report.ok
    failed = {c.name for c in report.failed}
    assert "seat_and_seed" in failed
    rows = popup._rows()
    shown = {rows[i].name for i in popup._details}
    assert "seat_and_seed" in shown and all(popup._details[i] for i in popup._details)  # what differs, on screen
    assert popup._title()[0] == "Verification failed: the record doesn't match"
    assert popup.card.height <= 844 - 24


@pytest.mark.parametrize("language", ["ko", "ja", "en", "zh-CN"])
def test_the_popup_fits_in_every_language(tmp_path, language):
    p = Played(tmp_path, language=language)
    try:
        fairness = p.match.end.record["fairness"]
        fairness["client_seeds"] = list(reversed(fairness["client_seeds"]))
        popup = p.verify()
        names = [popup.ctx.t(f"verify.check.{c.name}") for c in popup._rows()]
        assert len(names) == len(popup._rows())  # every check has its words in this language
        assert popup.card.top >= 0 and popup.card.bottom <= 844
        assert popup.widgets.by_name("close").rect.bottom <= popup.card.bottom
    finally:
        p.d.close()


def test_without_a_witness_the_popup_says_only_the_record_was_checked(tmp_path):
    """A data folder that took no file and a restart before the start: no witness with the seed sent.
    The record's own checks are shown; the witness checks are n/a and the popup says so plainly."""
    (tmp_path / "blocked").write_text("not a folder")
    p = Played(tmp_path, witnesses=WitnessStore(tmp_path / "blocked" / "w"))
    try:
        p.match.proof.witnessed = lambda: None  # what a restarted client without its files has: nothing complete
        popup = p.verify()
        report = popup.report
        assert report is not None and report.valid and report.ok and not report.witnessed
        assert all(report.check(name).ok is None for name in WITNESS_CHECKS)
        note, _ = popup._note()
        assert note.startswith("No witness was kept for this match: only the record's own consistency was checked.")
        assert popup._title() == ("Only the record itself checks out", None)
    finally:
        p.d.close()


def test_a_malformed_record_gives_a_message_not_a_traceback(played):
    played.match.end.record["fairness"]["mine_commitments"] = ["not 64 hex digits"]
    popup = played.verify()
    assert popup.report is not None and not popup.report.valid and popup._rows() == ()
    assert popup._title()[0] == "Can't verify this match"
    assert popup._note()[0].startswith("This record can't be verified: it is malformed.")


def test_a_malformed_witness_is_said_and_the_record_still_checked(played):
    witness = played.match.proof.witness()
    assert witness is not None
    witness["client_seed"] = 7
    played.match.proof.witnessed = lambda: witness
    popup = played.verify()
    report = popup.report
    assert report is not None and not report.valid and report.check("witness").ok is False
    assert popup._note()[0] == "This device's witness of the match can't be read: only the record's own consistency was checked."
    assert len(popup._rows()) == len(report.checks)


def test_a_verifier_problem_is_a_message(monkeypatch, played):
    def broken(record, witness=None):
        raise RuntimeError("boom")

    monkeypatch.setattr("mineduel.client.scenes.match_panels.verify_record", broken)
    popup = played.verify()
    assert popup.report is None and popup._title()[0] == "Can't verify this match"
    assert popup._note()[0] == "The check couldn't run (RuntimeError). Nothing was verified."


@pytest.mark.parametrize("record", [{}, {"format": "mine-duel-record/1"}, {"fairness": {"mine_commitments": [1]}}, []])
def test_check_match_never_raises(record):
    outcome = check_match(record, {"format": "nope"})
    assert isinstance(outcome, VerifyOutcome) and outcome.report is not None and not outcome.report.valid
