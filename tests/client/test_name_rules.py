"""One name rule for both ends (PROTOCOL.md §17): ``shared/wire/player_names.py``.

The server's ``bad_name`` (``server/players.py`` ``clean_name``/``check_name``) and the client's
``valid_player_name`` read the same character rules, so a name the client keeps is never refused
by the server for its characters (only the server's own deny list can still refuse it).
"""

from __future__ import annotations

import pytest

from mineduel.client.settings import player_name_problem, valid_player_name
from mineduel.server.players import clean_name
from mineduel.shared.wire.codec import ProtocolError
from mineduel.shared.wire.player_names import MARKS_MAX, NAME_MAX, NameRule, character_problem, name_problem

REFUSED = {
    "Ann#4b52": NameRule.HASH,
    "Ann\uff034b52": NameRule.HASH,  # full-width number sign: NFKC '#'
    "Ann\ufe5f1": NameRule.HASH,  # small number sign
    "A  B": NameRule.SPACES,
    "\u3164": NameRule.INVISIBLE,  # Hangul filler
    "A\u2800B": NameRule.INVISIBLE,  # braille blank
    "x\u202ey": NameRule.INVISIBLE,  # bidi override (Cf)
    "a\u200bb": NameRule.INVISIBLE,  # zero-width space
    "A\ufe0f": NameRule.INVISIBLE,  # variation selector after a letter
    "\u0301a": NameRule.ACCENTS,  # combining mark first
    "x" + "\u0301" * (MARKS_MAX + 1): NameRule.ACCENTS,  # Zalgo stack (x has no precomposed form)
    "": NameRule.LENGTH,
    "x" * (NAME_MAX + 1): NameRule.LENGTH,
}
KEPT = ["Mina 민아", "\u2764\ufe0f Ann", "x" + "\u0301" * MARKS_MAX, "ཀྵྭོ", "山田 太郎", "x" * NAME_MAX, "Zoë"]


@pytest.mark.parametrize(("name", "rule"), REFUSED.items())
def test_the_server_the_shared_rule_and_the_client_refuse_the_same_names(name, rule):
    assert name_problem(name) is rule
    with pytest.raises(ProtocolError) as caught:
        clean_name(name, ())
    assert caught.value.code == "bad_name"
    if rule is not NameRule.SPACES:  # the client keeps runs of spaces as one: "A B", which passes
        assert valid_player_name(name) is None
        assert player_name_problem(name) is rule


@pytest.mark.parametrize("name", KEPT)
def test_a_name_the_client_keeps_the_server_takes_as_is(name):
    kept = valid_player_name(name)
    assert kept is not None and player_name_problem(name) is None
    assert clean_name(kept, ()) == kept


def test_the_client_collapses_spaces_and_normalises_as_the_server_does():
    assert valid_player_name("  A   B ") == "A B" == clean_name("A B", ())
    decomposed = "Zoe\u0308"
    assert valid_player_name(decomposed) == "Zoë" == clean_name(decomposed, ())


def test_the_deny_list_is_the_servers_alone():
    assert character_problem("jerk") is None and valid_player_name("jerk") == "jerk"
    with pytest.raises(ProtocolError):
        clean_name("jerk", ("jerk",))


# ----- the screens say which rule, in the player's language --------------------------------------------
@pytest.mark.parametrize("language", ["en", "ko", "ja", "zh-CN"])
def test_the_name_popup_says_which_rule_and_keeps_nothing(tmp_path, language):
    from support.client_driver import Driver

    from mineduel.client.scenes.name_popup import NamePopup, rule_text

    d = Driver(tmp_path, language=language)
    try:
        went: list[str] = []
        popup = NamePopup(d.app.ctx, went.append, suggestion="Ann#4b52")
        d.app.ctx.stack.open_popup(popup)
        d.frame()
        d.click_named("name_ok")
        assert d.app.ctx.stack.popup is popup and went == [] and d.app.ctx.settings.player_name is None
        assert popup.problem is NameRule.HASH
        d.app.render()  # the rule's line fits the card (drawn, no error)
        assert rule_text(d.app.ctx.t, popup.problem) == d.app.ctx.t("player.name_rule.hash")
        popup.field.set_text("Ann")
        d.click_named("name_ok")
        assert went == ["Ann"] and d.app.ctx.settings.player_name == "Ann"
    finally:
        d.close()


def test_the_settings_popup_says_which_rule(tmp_path):
    from support.client_driver import Driver

    from mineduel.client.scenes.settings_popup import SettingsPopup

    d = Driver(tmp_path, language="en")
    try:
        popup = SettingsPopup(d.app.ctx, lambda: None)
        d.app.ctx.stack.open_popup(popup)
        d.frame()
        popup.name_field.text = "Ann#1"
        assert popup.save_name() is False
        assert popup.name_rule is NameRule.HASH
        assert popup._name_line()[0] == "A name can't contain # (it comes before your tag)."
    finally:
        d.close()
