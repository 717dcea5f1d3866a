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
    try:
        return _Template(text).substitute({name: str(value) for name, value in params.items()})
    except KeyError as missing:
        raise MissingPlaceholder(f"{key!r} ({code}) needs %{{{missing.args[0]}}}; got {sorted(params)}") from None


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


# Characters that must not start a line (closing punctuation, small kana, prolonged sound mark) or
# end one (opening brackets): a small kinsoku set, enough for the catalogs' strings.
_NO_LINE_START = frozenset(
    "、。，．,.:;：；!?！？)]}）」』】〕〉》”’…‥ー・〜~%％ぁぃぅぇぉっゃゅょゎァィゥェォッャュョヮヵヶ々"
)
_NO_LINE_END = frozenset("([{（「『【〔〈《“‘")


def _breaks_anywhere(ch: str) -> bool:
    """Kana, Han and full-width forms: a line may break before or after any of them."""
    code = ord(ch)
    return (
        0x2E80 <= code <= 0x9FFF  # CJK radicals, punctuation, kana, Han
        or 0xF900 <= code <= 0xFAFF  # compatibility ideographs
        or 0xFF00 <= code <= 0xFFEF  # full-width forms
        or 0x20000 <= code <= 0x3FFFF
    )


def _break_allowed(before: str, after: str) -> bool:
    if after in _NO_LINE_START or before in _NO_LINE_END or after == " ":
        return False
    if before.isascii() and before.isdigit():  # keep a number with its counter: 1つ, 20秒, 8칸
        return False
    return before == " " or _breaks_anywhere(before) or _breaks_anywhere(after)


def wrap(text: str, max_width: float, measure: Callable[[str], float]) -> list[str]:
    """Lines of ``text`` no wider than ``max_width``, breaking the way each script expects.

    pygame_gui wraps only at spaces (and hyphenates Japanese and Chinese mid-word), so multi-line
    text is wrapped here: at spaces for English and Korean, between any two kana/Han characters for
    Japanese and Chinese, never before closing punctuation such as 、。！ or after an opening bracket.
    ``measure`` gives a string's width, e.g. ``lambda s: font.size(s)[0]``; a word wider than a line
    is cut between characters. Line breaks in ``text`` are kept. Join the result with ``"<br>"`` for a
    UITextBox, or draw the lines one by one.
    """
    lines: list[str] = []
    for paragraph in text.split("\n"):
        segments: list[str] = []
        for ch in paragraph:
            if segments and _break_allowed(segments[-1][-1], ch):
                segments.append(ch)
            elif segments:
                segments[-1] += ch
            else:
                segments.append(ch)
        line = ""
        for segment in segments:
            if not line or measure((line + segment).rstrip()) <= max_width:
                line += segment
            else:
                lines.append(line.rstrip())
                line = segment.lstrip()
            while measure(line.rstrip()) > max_width and len(line.rstrip()) > 1:  # one over-long word
                cut = len(line) - 1
                while cut > 1 and measure(line[:cut]) > max_width:
                    cut -= 1
                lines.append(line[:cut])
                line = line[cut:]
        lines.append(line.rstrip())
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
