"""Player-facing text in ko, ja, en and zh-CN: one set of catalogs for widgets and hand-drawn text.

The catalogs are ``locales/mineduel.<gui locale>.json``, in the format pygame_gui reads
(``UIManager(translation_directory_paths=[str(catalog_dir())])``): the pygame_gui locale as root key,
flat dotted keys grouped by screen (``status.explore``, ``refusal.marked``, ...), ``%{name}``
placeholders. Two readers share them:

* pygame_gui widgets are given :func:`gui_key` ``("action.end_turn")`` (``"mineduel.action.end_turn"``)
  as their text, so they re-translate live when the manager's locale changes (placeholders via
  ``text_kwargs={"seconds": "12"}``);
* text drawn by hand (and tests, and the headless replay tools) uses :class:`Translator`, which reads
  the same JSON files directly and needs no UIManager, no pygame and no display.

Language codes: the game saves and passes around *our* codes (:data:`LANGUAGES`); pygame_gui knows
Simplified Chinese as ``zh`` (``zh-CN`` would silently fall back to English and a Latin font), so the
only translation between the two is :data:`GUI_LOCALES` / :func:`to_gui_locale`.

Durations (rule E3) come from catalog patterns, never from per-language code; see
:func:`format_duration` for what short and long durations look like.
"""

from __future__ import annotations

import json
import logging
import math
import re
import string
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Protocol

from mineduel.client.resources import locale_dir

log = logging.getLogger(__name__)

#: Our language codes, in the order the language picker lists them.
LANGUAGES: tuple[str, ...] = ("ko", "ja", "en", "zh-CN")

#: Shown when nothing is saved in the ONLINE variant (U5); the CPU variant asks first (U1).
DEFAULT_LANGUAGE = "ko"

#: The one map from our language codes to pygame_gui's locales.
GUI_LOCALES: Mapping[str, str] = MappingProxyType({"ko": "ko", "ja": "ja", "en": "en", "zh-CN": "zh"})

#: The catalogs' namespace: file names start with it and pygame_gui keys are prefixed with it.
NAMESPACE = "mineduel"

_PLACEHOLDER = re.compile(r"%\{([A-Za-z_][A-Za-z0-9_]*)\}")


class UnknownLanguage(ValueError):
    """A language code that is not one of :data:`LANGUAGES`."""


class MissingTranslation(KeyError):
    """A key absent from a catalog (a bug: every catalog must hold every key)."""

    def __str__(self) -> str:  # KeyError would print the message with quotes around it
        return str(self.args[0])


class MissingPlaceholder(KeyError):
    """``t()`` was not given a value for a ``%{name}`` the catalog string uses."""

    def __str__(self) -> str:
        return str(self.args[0])


class _Template(string.Template):
    """``%{name}`` placeholders, the same substitution python-i18n (pygame_gui) performs."""

    delimiter = "%"


class _LocaleManager(Protocol):
    def set_locale(self, locale: str) -> None: ...


def _check(code: str) -> str:
    if code not in GUI_LOCALES:
        raise UnknownLanguage(f"unknown language code {code!r}; expected one of {', '.join(LANGUAGES)}")
    return code


def to_gui_locale(code: str) -> str:
    """pygame_gui's locale for one of our language codes (``zh-CN`` -> ``zh``)."""
    return GUI_LOCALES[_check(code)]


def from_gui_locale(gui_locale: str) -> str:
    """Our language code for a pygame_gui locale (``zh`` -> ``zh-CN``)."""
    for code, gui in GUI_LOCALES.items():
        if gui == gui_locale:
            return code
    raise UnknownLanguage(f"no language uses the pygame_gui locale {gui_locale!r}")


def catalog_dir() -> Path:
    """The folder of the catalogs; give ``[str(catalog_dir())]`` to UIManager's translation paths."""
    return locale_dir()


def catalog_path(code: str) -> Path:
    """The catalog file of one language, e.g. ``locales/mineduel.zh.json`` for ``zh-CN``."""
    return catalog_dir() / f"{NAMESPACE}.{to_gui_locale(code)}.json"


@cache
def load_catalog(code: str) -> Mapping[str, str]:
    """All ``key -> text`` pairs of one language (read once, then cached, read-only)."""
    path = catalog_path(code)
    gui_locale = to_gui_locale(code)
    with path.open(encoding="utf-8") as handle:
        document = json.load(handle)
    if set(document) != {gui_locale}:
        raise ValueError(f"{path}: the root key must be exactly {gui_locale!r}, found {sorted(document)}")
    entries = document[gui_locale]
    bad = [key for key, text in entries.items() if not isinstance(text, str)]
    if bad:
        raise ValueError(f"{path}: values must be strings (flat dotted keys), not for {bad}")
    return MappingProxyType(dict(entries))


def placeholders(text: str) -> frozenset[str]:
    """The ``%{name}`` placeholders a catalog string uses."""
    return frozenset(_PLACEHOLDER.findall(text))


def gui_key(key: str) -> str:
    """The text to hand a pygame_gui widget so it shows (and live-updates) ``key``."""
    return f"{NAMESPACE}.{key}"


def translate(key: str, code: str, **params: object) -> str:
    """The text of ``key`` in language ``code`` with ``%{name}`` filled from ``params``.

    Raises :class:`MissingTranslation` for an unknown key and :class:`MissingPlaceholder` when a
    placeholder has no value. Extra ``params`` are ignored (a caller may pass a shared set).
    """
    catalog = load_catalog(_check(code))
    try:
        text = catalog[key]
    except KeyError:
        raise MissingTranslation(f"no text for {key!r} in {catalog_path(code)}") from None
    values = {name: str(value) for name, value in params.items()}
    try:
        return _fill_korean(text, values) if code == "ko" else _Template(text).substitute(values)
    except KeyError as missing:
        raise MissingPlaceholder(f"{key!r} ({code}) needs %{{{missing.args[0]}}}; got {sorted(params)}") from None


# ----- Korean particles -------------------------------------------------------------------------------
# A Korean particle after a placeholder depends on the word put there: 을/를, 이/가, 은/는, 과/와,
# 아/야, 으로/로, 이나/나 ... The catalogs write the combined form Korean software traditionally
# shows ("%{cell}을(를)", "%{room}(으)로", "%{name}(이)나"); :func:`resolve_particles` picks the
# one form that fits the word just before, after substitution, so the player never sees the marker.

#: Marker -> (form after a final consonant, form after a vowel), in the order Korean software writes them.
_PAIRS: Mapping[str, tuple[str, str]] = MappingProxyType({
    "을(를)": ("을", "를"), "이(가)": ("이", "가"), "은(는)": ("은", "는"),
    "과(와)": ("과", "와"), "와(과)": ("과", "와"), "아(야)": ("아", "야"),
})
# "(으)로" (으로 / 로: ㄹ counts as a vowel here) and "(이)X" (이나 / 나, 이라고 / 라고, 이랑 / 랑 ...).
_PARTICLE = re.compile("|".join([*(re.escape(marker) for marker in _PAIRS), r"\(으\)로", r"\(이\)(?=[가-힣])"]))

_HANGUL_FIRST, _HANGUL_LAST = 0xAC00, 0xD7A3
_RIEUL = 8  # ㄹ's index among the 28 final consonants (0: none)
# How Korean reads a digit (0 영, 1 일, 2 이, 3 삼, 4 사, 5 오, 6 육, 7 칠, 8 팔, 9 구): its final consonant.
_DIGIT_FINAL = {"0": "ㅇ", "1": "ㄹ", "2": "", "3": "ㅁ", "4": "", "5": "", "6": "ㄱ", "7": "ㄹ", "8": "ㄹ", "9": ""}
# Letters read by name: 엘 엠 엔 알 end in a consonant (L and R in ㄹ); 에이, 비, 시, ... in a vowel.
_LETTER_FINAL = {"L": "ㄹ", "M": "ㅁ", "N": "ㄴ", "R": "ㄹ"}
# Trailing zeros: 10 십, 100 백, 1000 천, 10^4..10^7 만, 10^8..10^11 억, 10^12..10^15 조, then 경.
_ZEROS_FINAL = ("ㅂ", "ㄱ", "ㄴ", "ㄴ", "ㄴ", "ㄴ", "ㄴ", "ㄱ", "ㄱ", "ㄱ", "ㄱ", "", "", "", "", "ㅇ")
# Closing brackets and quotes are skipped: "(3, 5)을" reads the 5.
_TRANSPARENT = frozenset(")]}>\"'”’」』】〕〉》）］")


def _is_digit(ch: str) -> bool:
    return ch.isascii() and ch.isdigit()


def final_consonant(word: str) -> str | None:
    """The final consonant of ``word`` as Korean reads it: a jamo such as ``"ㄹ"``, ``""`` for a final
    vowel, ``None`` when it cannot be told (an empty word, kana, Han, a symbol).

    Hangul syllables by their jongseong; a number by its reading (``"C4"`` -> 사, ``"10"`` -> 십,
    ``"3,000"`` -> 천); Latin letters by the name of the last one, for cell names and codes
    (``"NYTF23"``), which is how Korean reads abbreviations (``"CPU"`` -> 유, ``"R"`` -> 알).
    A lower-case Latin word (a player's name) has no reliable reading and gives ``None``.
    """
    end = len(word)
    while end and word[end - 1] in _TRANSPARENT:
        end -= 1
    if not end:
        return None
    last = word[end - 1]
    code = ord(last)
    if _HANGUL_FIRST <= code <= _HANGUL_LAST:
        final = (code - _HANGUL_FIRST) % 28
        return "" if final == 0 else "ㄱㄲㄳㄴㄵㄶㄷㄹㄺㄻㄼㄽㄾㄿㅀㅁㅂㅄㅅㅆㅇㅈㅊㅋㅌㅍㅎ"[final - 1]
    if _is_digit(last):
        start = end
        while start and (_is_digit(word[start - 1]) or word[start - 1] == ","):
            start -= 1
        digits = word[start:end].replace(",", "")
        if start and word[start - 1] == ".":  # a decimal fraction is read digit by digit: 1.50 일 점 오 영
            return _DIGIT_FINAL[last]
        significant = digits.rstrip("0")
        zeros = len(digits) - len(significant)
        if not significant:
            return _DIGIT_FINAL["0"]
        if zeros == 0:
            return _DIGIT_FINAL[last]
        return _ZEROS_FINAL[min(zeros, len(_ZEROS_FINAL)) - 1]
    if last.isascii() and last.isalpha():
        start = end
        while start and word[start - 1].isascii() and word[start - 1].isalpha():
            start -= 1
        letters = word[start:end]
        if len(letters) > 1 and not letters.isupper():
            return None
        return _LETTER_FINAL.get(last.upper(), "")
    return None


def _particle(marker: str, before: str) -> str:
    """The form of ``marker`` after the text ``before`` (the marker itself when that cannot be read)."""
    final = final_consonant(before)
    if final is None:
        return marker
    if marker == "(으)로":
        return "으로" if final not in ("", "ㄹ") else "로"
    if marker == "(이)":
        return "이" if final else ""
    after_consonant, after_vowel = _PAIRS[marker]
    return after_consonant if final else after_vowel


def resolve_particles(text: str) -> str:
    """``text`` with each particle marker (``을(를)``, ``이(가)``, ``은(는)``, ``과(와)``/``와(과)``,
    ``아(야)``, ``(으)로``, ``(이)나``/``(이)라고``/...) replaced by the form the word before it takes.

    After a final consonant: 을 이 은 과 아 으로 이나; after a vowel: 를 가 는 와 야 로 나; 으로 also
    becomes 로 after ㄹ (``5열로``, ``L로``). Where the word cannot be read (see
    :func:`final_consonant`), the marker stays as it is: the combined form is still correct Korean.
    :func:`translate` resolves the markers of the catalog text only, never one inside a value.
    """
    return _PARTICLE.sub(lambda match: _particle(match.group(0), text[: match.start()]), text)


def _fill_korean(text: str, values: Mapping[str, str]) -> str:
    """Substitute ``values`` into a Korean catalog text and resolve its particle markers, each after
    the text substituted before it (a value that looks like a marker is left as it is)."""
    out = ""
    pos = 0
    for match in _PARTICLE.finditer(text):
        out += _Template(text[pos : match.start()]).substitute(values)
        out += _particle(match.group(0), out)
        pos = match.end()
    return out + _Template(text[pos:]).substitute(values)


def native_name(code: str) -> str:
    """A language's name in its own script (한국어, 日本語, English, 简体中文), from its catalog."""
    return translate("language.native", code)


def format_duration(seconds: float, code: str) -> str:
    """A match duration (rule E3) in language ``code``; fractions of a second are dropped.

    Under a minute it is seconds only (en ``45s``, ko ``45초``); under an hour minutes and seconds
    (154 s: ko ``2분 34초``, ja ``2分34秒``, en ``2m 34s``, zh-CN ``2分34秒``); from an hour on hours,
    minutes and seconds with no day unit (3723 s: en ``1h 02m 03s``, ko ``1시간 2분 3초``,
    ja ``1時間02分03秒``, zh-CN ``1小时02分03秒``). The patterns are the catalogs' ``duration.s``,
    ``duration.ms`` and ``duration.hms``, which may use ``h``, ``m``, ``s`` and the two-digit ``mm``,
    ``ss``: each language decides whether to pad (Korean separates units with spaces and does not).
    """
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"a duration must be a finite number of seconds >= 0, got {seconds!r}")
    total = int(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    key = "duration.hms" if hours else "duration.ms" if minutes else "duration.s"
    return translate(
        key, code, h=hours, m=minutes, s=secs, mm=f"{minutes:02d}", ss=f"{secs:02d}"
    )


def _set_gui_locale(manager: _LocaleManager, gui_locale: str) -> None:
    """``manager.set_locale`` plus a repaint of widgets shown in a non-normal state.

    pygame_gui 0.6.14 re-lays out a button's text on a locale change but, when the font stays the same
    (always, with our one font), redraws only the pre-generated states: a *selected* button (the
    current input mode) kept the old language. Redrawing each widget's active state fixes that.
    """
    manager.set_locale(gui_locale)
    group = getattr(manager, "ui_group", None)
    for sprite in group.sprites() if group is not None else ():
        shape = getattr(sprite, "drawable_shape", None)
        state = getattr(shape, "active_state", None)
        if shape is not None and state is not None and state.state_id != "normal":
            shape.redraw_state(state.state_id)


# Kinsoku (line-breaking rules of Japanese and Chinese): characters that must not start a line
# (closing punctuation and brackets, small kana, the prolonged sound mark, iteration marks) and
# characters that must not end one (opening brackets). ASCII closers are in too, for mixed text.
NO_LINE_START = frozenset(
    "、。，．,.:;：；!?！？)]}）］｝」』】〕〉》〙〗｣〟”’…‥ー・〜~%％"
    "ぁぃぅぇぉっゃゅょゎゕゖァィゥェォッャュョヮヵヶㇰㇱㇲㇳㇴㇵㇶㇷㇸㇹㇺㇻㇼㇽㇾㇿ々ゝゞヽヾ"
)
NO_LINE_END = frozenset("([{（［｛「『【〔〈《〘〖｢〝“‘")
_SPACES = " \u3000"  # an ideographic space, like a space, never starts a line


def is_cjk(ch: str) -> bool:
    """Kana, Han and full-width forms: a line may break before or after any of them (not Hangul)."""
    code = ord(ch)
    return (
        0x2E80 <= code <= 0x9FFF  # CJK radicals, punctuation, kana, Han
        or 0xF900 <= code <= 0xFAFF  # compatibility ideographs
        or 0xFF00 <= code <= 0xFFEF  # full-width forms
        or 0x20000 <= code <= 0x3FFFF
    )


def _kinsoku_ok(before: str, after: str) -> bool:
    """Whether the text may be cut between these two characters at all (even inside a word)."""
    return after not in NO_LINE_START and before not in NO_LINE_END and after not in _SPACES


def _break_allowed(text: str, after: str) -> bool:
    """A break opportunity between ``text`` and ``after``: after a space, or next to kana/Han, where
    kinsoku allows one. A number stays with its counter: 1つ, 20秒, 8칸 and Chinese 20 秒."""
    before = text[-1]
    if not _kinsoku_ok(before, after) or _is_digit(before):
        return False
    if before in _SPACES and is_cjk(after) and _is_digit(text.rstrip(_SPACES)[-1:] or "a"):
        return False
    if before in _SPACES and text.rstrip(_SPACES)[-1:] in NO_LINE_END:
        return False  # "「 あ": a space after an opening bracket is no place to end a line either
    return before in _SPACES or is_cjk(before) or is_cjk(after)


def _segments(paragraph: str) -> list[str]:
    """The paragraph cut at every break opportunity (each piece keeps its trailing spaces)."""
    segments: list[str] = []
    for ch in paragraph:
        if segments and _break_allowed(segments[-1], ch):
            segments.append(ch)
        elif segments:
            segments[-1] += ch
        else:
            segments.append(ch)
    return segments


def _split_long(segment: str, max_width: float, measure: Callable[[str], float]) -> list[str]:
    """A word wider than a line, cut between characters: as much as fits, at a place kinsoku allows
    (a closing mark stays with the character before it even if that overflows the line)."""
    pieces: list[str] = []
    rest = segment
    while len(rest.rstrip()) > 1 and measure(rest.rstrip()) > max_width:
        allowed = [cut for cut in range(1, len(rest))
                   if _kinsoku_ok(rest[cut - 1], rest[cut]) and rest[:cut].rstrip(_SPACES)[-1:] not in NO_LINE_END]
        fitting = [cut for cut in allowed if measure(rest[:cut].rstrip()) <= max_width]
        if fitting:
            cut = fitting[-1]
        elif allowed:
            cut = allowed[0]
        else:
            break
        pieces.append(rest[:cut])
        rest = rest[cut:]
    pieces.append(rest)
    return pieces


def _is_widow(line: str) -> bool:
    """A Japanese/Chinese last line holding a single kana or Han character (with its closing marks): "す。"."""
    core = [ch for ch in line.strip() if ch not in NO_LINE_START]
    return len(core) == 1 and is_cjk(core[0])


def wrap(text: str, max_width: float, measure: Callable[[str], float]) -> list[str]:
    """Lines of ``text`` no wider than ``max_width``, breaking the way each script expects.

    At spaces for English and Korean; between any two kana/Han characters for Japanese and Chinese,
    with kinsoku: no line starts with a closing mark (:data:`NO_LINE_START`: 、。！」 small kana, ー ...)
    and none ends with an opening bracket (:data:`NO_LINE_END`); a number stays with its counter
    (1つ, 20秒). A Japanese or Chinese paragraph never ends with a lone character on its last line
    ("…変わりま / す。" becomes "…変わり / ます。"). ``measure`` gives a string's width, e.g.
    ``lambda s: font.size(s)[0]``; a word wider than a line is cut between characters (where kinsoku
    allows). Line breaks in ``text`` are kept.
    """
    lines: list[str] = []
    for paragraph in text.split("\n"):
        units = [piece for segment in _segments(paragraph) for piece in _split_long(segment, max_width, measure)]
        rows: list[list[str]] = [[]]
        for unit in units:
            row = rows[-1]
            if not row or measure(("".join(row) + unit).rstrip()) <= max_width:
                row.append(unit)
            else:
                rows.append([unit.lstrip()])
        if len(rows) >= 2 and len(rows[-2]) >= 2 and _is_widow("".join(rows[-1])):
            moved = [rows[-2][-1], *rows[-1]]
            if measure("".join(moved).rstrip()) <= max_width:
                rows[-2].pop()
                rows[-1] = moved
        lines.extend("".join(row).rstrip() for row in rows)
    return lines


class Translator:
    """The current language and its text, for everything the client draws itself.

    ``bind(manager)`` ties a pygame_gui UIManager to it, so one :meth:`set_language` call switches
    widgets and hand-drawn text together. Listeners (``on_change``) are told the new code, e.g. to
    re-render cached surfaces or save the choice.
    """

    def __init__(self, language: str = DEFAULT_LANGUAGE) -> None:
        self._language = _check(language)
        self._managers: list[_LocaleManager] = []
        self._listeners: list[Callable[[str], None]] = []

    @property
    def language(self) -> str:
        """Our code of the current language (``zh-CN``, never ``zh``)."""
        return self._language

    @property
    def gui_locale(self) -> str:
        """pygame_gui's locale for the current language."""
        return to_gui_locale(self._language)

    def set_language(self, code: str) -> None:
        """Switch language; bound UIManagers re-translate their widgets, listeners are called."""
        self._language = _check(code)
        for manager in self._managers:
            _set_gui_locale(manager, self.gui_locale)
        for listener in self._listeners:
            listener(self._language)

    def bind(self, manager: _LocaleManager) -> None:
        """Follow this translator's language in a pygame_gui UIManager (set at once)."""
        self._managers.append(manager)
        _set_gui_locale(manager, self.gui_locale)

    def on_change(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(code)`` after every :meth:`set_language`."""
        self._listeners.append(listener)

    def t(self, key: str, **params: object) -> str:
        """The text of ``key`` in the current language (see :func:`translate`)."""
        try:
            return translate(key, self._language, **params)
        except (MissingTranslation, MissingPlaceholder):
            # TRY400: not log.exception, the error goes on up with its traceback; this adds what was asked for
            log.error("translation failed: key %r, language %s, params %s", key, self._language, sorted(params))  # noqa: TRY400
            raise

    def has(self, key: str) -> bool:
        """Whether the current language has a text for ``key`` (names that come from data, e.g. a check)."""
        return key in load_catalog(self._language)

    def duration(self, seconds: float) -> str:
        """A duration in the current language (see :func:`format_duration`)."""
        return format_duration(seconds, self._language)

    def native_name(self, code: str) -> str:
        """Any language's own name; the picker shows all four whatever the current language."""
        return native_name(code)
