"""Four-language text (U5, E3): catalogs, the shipped font, the theme, and pygame_gui using them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import unicodedata
import warnings

import pytest
from fontTools.ttLib import TTFont

from mineduel.client import i18n, resources

CATALOGS = {code: i18n.load_catalog(code) for code in i18n.LANGUAGES}
KEYS = sorted(CATALOGS["en"])
FONT_NAME = "mineduel_sans"

# Engine refusal codes (RULES.md A1-A6, F4, O11); each needs a `refusal.<code>` text.
REFUSAL_CODES = (
    "not_your_turn", "wrong_phase", "revealed", "marked", "own_mine", "quota_used",
    "not_your_marker", "game_over", "off_board", "no_marker", "not_online",
)


def _units(names: frozenset[str]) -> frozenset[str]:
    """Duration placeholders by unit: the padded ``mm``/``ss`` count as ``m``/``s``."""
    return frozenset(name[0] for name in names)


# --- catalogs -------------------------------------------------------------------------------------


def test_catalog_files_are_exactly_the_four_gui_locales():
    """The locales folder holds one ``mineduel.<gui locale>.json`` per language and nothing else."""
    found = sorted(path.name for path in i18n.catalog_dir().glob("mineduel.*.json"))
    assert found == sorted(f"mineduel.{gui}.json" for gui in ("ko", "ja", "en", "zh"))
    for code in i18n.LANGUAGES:
        document = json.loads(i18n.catalog_path(code).read_text(encoding="utf-8"))
        assert list(document) == [i18n.to_gui_locale(code)]


@pytest.mark.parametrize("code", i18n.LANGUAGES)
def test_every_catalog_has_the_same_keys(code):
    """No language lacks a key another has, so pygame_gui never falls back to English."""
    assert sorted(CATALOGS[code]) == KEYS


@pytest.mark.parametrize("code", i18n.LANGUAGES)
def test_placeholders_match_across_languages(code):
    """Each key uses the same ``%{names}`` in every language (durations: the same units)."""
    for key in KEYS:
        mine, english = i18n.placeholders(CATALOGS[code][key]), i18n.placeholders(CATALOGS["en"][key])
        if key.startswith("duration."):
            assert _units(mine) == _units(english), key
        else:
            assert mine == english, key


@pytest.mark.parametrize("code", i18n.LANGUAGES)
def test_no_empty_or_padded_strings(code):
    """Every text is non-empty and has no leading or trailing whitespace."""
    for key, text in CATALOGS[code].items():
        assert text.strip(), key
        assert text == text.strip(), key


@pytest.mark.parametrize("code", i18n.LANGUAGES)
def test_percent_sign_only_in_placeholders(code):
    """A bare ``%`` would break python-i18n's substitution, so it appears only as ``%{name}``."""
    for key, text in CATALOGS[code].items():
        assert "%" not in re.sub(r"%\{[A-Za-z_][A-Za-z0-9_]*\}", "", text), key


@pytest.mark.parametrize("code", i18n.LANGUAGES)
def test_no_markup_characters(code):
    """No ``<``, ``>`` or ``&``: UITextBox parses its text as HTML-like markup."""
    for key, text in CATALOGS[code].items():
        assert not set(text) & set("<>&"), key


def test_catalogs_cover_the_game_screens():
    """Keys exist for every refusal code, input mode, difficulty, result and draw reason."""
    expected = {f"refusal.{code}" for code in REFUSAL_CODES}
    expected |= {f"mode.{mode}" for mode in ("explore", "mine", "flag", "unflag")}
    expected |= {f"difficulty.{level}" for level in ("easy", "normal", "hard")}
    expected |= {f"result.title.{r}" for r in ("win", "loss", "draw", "void")}
    expected |= {f"result.detail.{r}" for r in ("all_flagged", "no_explorable", "no_plantable")}
    expected |= {f"online.reason.{r}" for r in ("ko_win", "ko_loss", "score", "resign_win", "resign_loss",
                                                 "disconnect_win", "disconnect_loss", "void")}
    expected |= {"app.title", "language.picker_title", "rules.title", "action.start", "action.end_turn",
                 "action.view_board", "action.view_result", "result.export_copy", "record.saved",
                 "record.failed", "confirm.restart.title", "online.token_unavailable"}
    assert expected <= set(KEYS)


# --- the shipped font -----------------------------------------------------------------------------


@pytest.fixture(scope="module", params=[False, True], ids=["regular", "bold"])
def font_cmap(request):
    return TTFont(resources.font_path(bold=request.param)).getBestCmap()


def test_every_catalog_character_is_in_the_font(font_cmap):
    """Each character of each catalog string has a glyph in the shipped font (no missing-glyph boxes)."""
    missing = {
        f"{ch} U+{ord(ch):04X} ({code})"
        for code, catalog in CATALOGS.items()
        for text in catalog.values()
        for ch in text
        if ord(ch) not in font_cmap
    }
    assert not missing, "run scripts/make_font_subset.py: " + ", ".join(sorted(missing))


@pytest.mark.parametrize("name", ["김민아", "박서준", "이하늘", "佐藤花子", "渡辺翔太", "さくら", "カズ", "王小明", "张伟",
                                  "李娜", "José", "Zoë", "Åsa"])
def test_common_player_names_are_in_the_font(font_cmap, name):
    """Player names come from outside the catalogs (the opponent's card, the LAN list): the common
    Hangul, kana, level-1 Han and Latin-1 letters are in the font, so they do not show as boxes."""
    assert [ch for ch in name if ord(ch) not in font_cmap] == []


def test_font_has_ascii_and_hand_drawn_symbols(font_cmap):
    """Printable ASCII and the symbols drawn by hand or by pygame_gui widgets are in the font."""
    wanted = [chr(c) for c in range(0x20, 0x7F)] + list("×→←•✓…−▲▼◀▶╳●")
    assert [ch for ch in wanted if ord(ch) not in font_cmap] == []


def test_font_is_renamed():
    """The subset carries its own name, not Noto's or the OFL-reserved "Source"."""
    for bold in (False, True):
        names = TTFont(resources.font_path(bold=bold))["name"]
        family, postscript = names.getDebugName(1), names.getDebugName(6)
        assert family == "MineDuel Sans"
        assert postscript == ("MineDuelSans-Bold" if bold else "MineDuelSans-Regular")
        assert "Source" not in family and "Noto" not in family


@pytest.mark.parametrize("code", ["en", "ko"])
def test_latin_and_korean_avoid_full_width_punctuation(code):
    """The SC face draws ’ ‘ “ ” · • … full-width, so English and Korean text uses ASCII instead."""
    for key, text in CATALOGS[code].items():
        assert not set(text) & set("’‘“”·•…"), key


def test_resources_resolve_inside_a_pyinstaller_bundle(monkeypatch, tmp_path):
    """Frozen, data files are looked up under sys._MEIPASS/mineduel/...; from source, in the packages."""
    assert (resources.locale_dir() / "mineduel.en.json").is_file()
    assert resources.theme_path().is_file()
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    assert resources.locale_dir() == tmp_path / "mineduel" / "locales"
    assert resources.font_path(bold=True) == tmp_path / "mineduel" / "assets" / "fonts" / "MineDuelSans-Bold.otf"


# --- language codes and names ---------------------------------------------------------------------


def test_languages_and_gui_locale_map():
    """Our four codes map to pygame_gui's, with zh-CN -> zh, and back."""
    assert i18n.LANGUAGES == ("ko", "ja", "en", "zh-CN")
    assert [i18n.to_gui_locale(code) for code in i18n.LANGUAGES] == ["ko", "ja", "en", "zh"]
    assert [i18n.from_gui_locale(gui) for gui in ("ko", "ja", "en", "zh")] == list(i18n.LANGUAGES)


@pytest.mark.parametrize("bad", ["zh", "zh-TW", "kr", "EN", ""])
def test_unknown_language_codes_are_refused(bad):
    """Anything but our four codes is rejected instead of silently showing English."""
    with pytest.raises(i18n.UnknownLanguage):
        i18n.to_gui_locale(bad)
    with pytest.raises(i18n.UnknownLanguage):
        i18n.Translator(bad)


def test_native_names_are_in_their_own_script():
    """Each language names itself in its own script (Hangul, Han, Latin, simplified Han)."""
    names = {code: i18n.native_name(code) for code in i18n.LANGUAGES}
    assert names == {"ko": "한국어", "ja": "日本語", "en": "English", "zh-CN": "简体中文"}
    scripts = {code: {unicodedata.name(ch).split()[0] for ch in name} for code, name in names.items()}
    assert scripts == {"ko": {"HANGUL"}, "ja": {"CJK"}, "en": {"LATIN"}, "zh-CN": {"CJK"}}


# --- durations (E3) -------------------------------------------------------------------------------

DURATIONS = {
    0: ("0초", "0秒", "0s", "0秒"),
    59: ("59초", "59秒", "59s", "59秒"),
    60: ("1분 0초", "1分00秒", "1m 00s", "1分00秒"),
    154: ("2분 34초", "2分34秒", "2m 34s", "2分34秒"),
    3599: ("59분 59초", "59分59秒", "59m 59s", "59分59秒"),
    3600: ("1시간 0분 0초", "1時間00分00秒", "1h 00m 00s", "1小时00分00秒"),
    3723: ("1시간 2분 3초", "1時間02分03秒", "1h 02m 03s", "1小时02分03秒"),
    90061: ("25시간 1분 1초", "25時間01分01秒", "25h 01m 01s", "25小时01分01秒"),
}


@pytest.mark.parametrize("seconds", sorted(DURATIONS))
def test_e3_durations_in_four_languages(seconds):
    """E3: durations read naturally in each language (154 s is 2분 34초 / 2分34秒 / 2m 34s / 2分34秒)."""
    assert tuple(i18n.format_duration(seconds, code) for code in i18n.LANGUAGES) == DURATIONS[seconds]


def test_duration_drops_fractions_and_rejects_nonsense():
    """A fraction of a second is dropped; negative or non-finite durations are errors."""
    assert i18n.format_duration(59.99, "en") == "59s"
    assert i18n.Translator("ja").duration(154.7) == "2分34秒"
    for bad in (-1, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            i18n.format_duration(bad, "en")


def test_duration_patterns_come_from_the_catalogs():
    """The unit words are catalog entries, so no language is hard-coded in the formatter."""
    for code in i18n.LANGUAGES:
        assert i18n.format_duration(154, code) == i18n.translate("duration.ms", code, m=2, s=34, mm="02", ss="34")


# --- Translator -----------------------------------------------------------------------------------


def test_translator_fills_placeholders_and_switches_language():
    """``t`` returns the current language's text with ``%{name}`` filled in."""
    tr = i18n.Translator("en")
    assert tr.t("online.reason.score", me=3, opponent=-1) == "Score 3 : -1"
    tr.set_language("zh-CN")
    assert tr.language == "zh-CN" and tr.gui_locale == "zh"
    assert tr.t("result.time", duration=tr.duration(154)) == "用时：2分34秒"


def test_missing_key_and_placeholder_raise_clearly():
    """An unknown key or a missing placeholder value raises an error naming the key."""
    tr = i18n.Translator("ko")
    with pytest.raises(i18n.MissingTranslation, match=r"no_such\.key"):
        tr.t("no_such.key")
    with pytest.raises(i18n.MissingPlaceholder, match="seconds"):
        tr.t("online.deadline")


def test_bind_and_listeners_follow_set_language():
    """A bound manager gets pygame_gui's locale (zh for zh-CN) and listeners get our code."""

    class FakeManager:
        def __init__(self):
            self.locales = []

        def set_locale(self, locale):
            self.locales.append(locale)

    manager, heard = FakeManager(), []
    tr = i18n.Translator("ja")
    tr.bind(manager)
    tr.on_change(heard.append)
    tr.set_language("zh-CN")
    assert manager.locales == ["ja", "zh"]
    assert heard == ["zh-CN"]


def test_translator_needs_neither_pygame_nor_a_ui_manager():
    """The headless tools can translate: importing and using i18n loads no pygame module."""
    code = (
        "import sys; from mineduel.client import i18n; "
        "assert i18n.Translator('zh-CN').t('result.title.win') == '胜利！'; "
        "assert i18n.format_duration(154, 'ko') == '2분 34초'; "
        "assert not [m for m in sys.modules if m.startswith(('pygame', 'i18n'))], 'pygame loaded'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- line wrapping --------------------------------------------------------------------------------


def test_wrap_breaks_cjk_between_characters_but_not_before_closing_punctuation():
    """Japanese and Chinese break between characters, never before 、。 and not inside 1つ."""
    lines = i18n.wrap("オープニング：互いに安全なマスを1つずつ開け、最初の地雷を1つずつ置きます。", 10, len)
    assert lines == ["オープニング：互いに", "安全なマスを1つずつ", "開け、最初の地雷を", "1つずつ置きます。"]
    chinese = i18n.wrap("开局：双方各翻开一个安全格，再各埋下第一颗地雷。", 4, len)
    assert all(not line.startswith(("、", "。", "，")) for line in chinese)


def test_wrap_breaks_english_and_korean_at_spaces():
    """English and Korean keep words whole; a word longer than a line is cut."""
    assert i18n.wrap("오프닝: 서로 안전한 칸을 하나씩 연 뒤", 12, len) == ["오프닝: 서로 안전한", "칸을 하나씩 연 뒤"]
    assert i18n.wrap("Explore a cell", 9, len) == ["Explore a", "cell"]
    assert i18n.wrap("abcdefghijkl", 5, len) == ["abcde", "fghij", "kl"]
    assert i18n.wrap("a\nb", 9, len) == ["a", "b"]


# --- pygame_gui: theme, font, live locale ---------------------------------------------------------


def _font_blocks(node, path=()):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "font":
                yield path, value
            yield from _font_blocks(value, (*path, key))


def test_theme_fonts_are_ours_and_never_per_locale():
    """Every theme font block names our font and has no "locale" key (so it serves every locale)."""
    theme = json.loads(resources.theme_path().read_text(encoding="utf-8"))
    assert "locale" not in json.dumps(theme)
    blocks = list(_font_blocks(theme))
    assert len(blocks) >= 10
    for path, block in blocks:
        assert block["name"] == FONT_NAME, path
        for field in ("regular_resource", "bold_resource"):
            resource = block[field]
            assert resource["package"] == resources.ASSETS_PACKAGE, path
            assert resources.asset_path(*resource["resource"].split("/")).is_file(), path


@pytest.fixture(scope="module")
def gui():
    """A headless pygame display and a UIManager with our theme and catalogs."""
    import pygame
    import pygame_gui

    pygame.init()
    screen = pygame.display.set_mode((390, 844))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        manager = pygame_gui.UIManager(
            (390, 844), str(resources.theme_path()), translation_directory_paths=[str(i18n.catalog_dir())]
        )
    assert [str(w.message) for w in caught] == []
    yield pygame, pygame_gui, screen, manager
    manager.set_locale("en")


def _snapshot(pygame, screen, manager):
    manager.update(0.05)
    screen.fill((15, 27, 45))
    manager.draw_ui(screen)
    return pygame.image.tobytes(screen, "RGB")


def test_pygame_gui_renders_every_locale_with_our_font(gui):
    """Per locale, keyed widgets show that language (not English) and every widget uses our font."""
    pygame, pygame_gui, screen, manager = gui
    from pygame_gui.core.utility import translate

    R = pygame.Rect
    picker = " / ".join(i18n.native_name(code) for code in ("ko", "ja", "zh-CN", "en"))
    label = pygame_gui.elements.UILabel(R(10, 10, 370, 30), picker, manager)
    title = pygame_gui.elements.UILabel(R(10, 45, 370, 40), i18n.gui_key("language.picker_title"), manager,
                                        object_id="#title")
    widgets = [
        label, title,
        pygame_gui.elements.UIButton(R(10, 90, 120, 44), i18n.gui_key("action.end_turn"), manager),
        pygame_gui.elements.UIButton(R(140, 90, 120, 44), i18n.gui_key("action.start"), manager,
                                     object_id="#primary_button"),
        pygame_gui.elements.UILabel(R(10, 140, 370, 24), i18n.gui_key("status.cpu_thinking"), manager,
                                    object_id="#status"),
        pygame_gui.elements.UITextBox(i18n.gui_key("rules.board"), R(10, 170, 370, 80), manager),
        pygame_gui.elements.UITextEntryLine(R(10, 260, 200, 44), manager),
        pygame_gui.elements.UIDropDownMenu([i18n.native_name(c) for c in i18n.LANGUAGES], "한국어",
                                           R(10, 310, 200, 44), manager),
    ]
    window = pygame_gui.elements.UIWindow(R(10, 360, 370, 200), manager, window_display_title=picker)
    widgets.append(window.title_bar)
    theme = manager.get_theme()
    reference = pygame.font.Font(str(resources.font_path()), 16)

    shots = {}
    for code in i18n.LANGUAGES:
        manager.set_locale(i18n.to_gui_locale(code))
        expected = CATALOGS[code]["language.picker_title"]
        assert translate(title.text) == expected
        if code != "en":
            assert expected != CATALOGS["en"]["language.picker_title"]
        for widget in widgets:
            assert theme.get_font_info(widget.combined_element_ids)["name"] == FONT_NAME, widget
        assert label.font.size(picker) == reference.size(picker)
        shots[code] = _snapshot(pygame, screen, manager)
    assert len(set(shots.values())) == len(i18n.LANGUAGES)
    for widget in [*widgets, window]:
        widget.kill()


def test_catalog_lookup_matches_pygame_gui(gui):
    """pygame_gui's translate() and Translator.t give the same text for every key and language
    (Korean after :func:`i18n.resolve_particles`, which pygame_gui does not know)."""
    _, _, _, manager = gui
    from pygame_gui.core.utility import translate

    params = {"turn": 7, "turns": 7, "duration": "2m 34s", "seconds": 12, "me": 2, "opponent": -1,
              "path": "/tmp/r.json", "error": "disk full", "h": 1, "m": 2, "s": 3, "mm": "02", "ss": "03",
              "row": 3, "col": 5, "cell": "(3, 5)", "level": "Normal",
              "address": "192.168.1.5:47650", "room": "NYTF23", "detail": "bad_request", "count": 1, "title": "Win",
              "reason": "KO"}
    for name in {name for text in CATALOGS["en"].values() for name in i18n.placeholders(text)}:
        params.setdefault(name, "A1")  # placeholders added since this list was written
    for code in i18n.LANGUAGES:
        manager.set_locale(i18n.to_gui_locale(code))
        for key in KEYS:
            gui_text = translate(i18n.gui_key(key), **params)
            if code == "ko":
                gui_text = i18n.resolve_particles(gui_text)
            assert gui_text == i18n.translate(key, code, **params), (code, key)


def test_selected_button_follows_language_change(gui):
    """A selected button (the current input mode) is redrawn in the new language via Translator.bind."""
    pygame, pygame_gui, screen, manager = gui
    button = pygame_gui.elements.UIButton(pygame.Rect(10, 10, 120, 44), i18n.gui_key("mode.explore"), manager,
                                          object_id="#mode_button")
    button.select()
    tr = i18n.Translator("ko")
    tr.bind(manager)
    before = _snapshot(pygame, screen, manager)
    tr.set_language("en")
    assert _snapshot(pygame, screen, manager) != before
    button.kill()


def test_short_button_labels_fit(gui):
    """Mode chips (~90 px) and ordinary buttons (~120 px) fit their label with 8 px padding."""
    pygame = gui[0]
    mode_font = pygame.font.Font(str(resources.font_path()), 15)
    button_font = pygame.font.Font(str(resources.font_path()), 16)
    short_buttons = [k for k in KEYS if k.startswith(("action.", "difficulty.")) and k != "difficulty.title"]
    short_buttons += ["online.join", "online.ready", "online.resign", "online.rematch", "online.copy_link"]
    for code, catalog in CATALOGS.items():
        for key in (k for k in KEYS if k.startswith("mode.")):
            assert mode_font.size(catalog[key])[0] <= 90 - 16, (code, key)
        for key in short_buttons:
            assert button_font.size(catalog[key])[0] <= 120 - 16, (code, key)
