"""The character rules of a player's name (PROTOCOL.md §17), one copy for both ends.

The server refuses a name that breaks one of these with ``bad_name`` (``server/players.py``,
which adds its own deny list); the client checks the same rules before sending, so the player is
told which rule in their language instead of meeting the server's refusal later
(``client/settings.py``). Pure: ``unicodedata`` only, no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from enum import StrEnum

NAME_MAX = 20
"""A player's name: 1 to 20 characters after trimming (§17)."""

MARKS_MAX = 3
"""Combining marks (Mn, Me) in a row on one letter: enough for every script's accents, tones and
stacks (Tibetan's two subjoined letters and a vowel), too few for a "Zalgo" stack that draws over
the lines around it."""

REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Unicode categories a name may not hold: controls, invisible formatting (bidirectional
overrides, zero-width characters), surrogates, private use, unassigned, line and paragraph breaks."""

INVISIBLE = frozenset(
    "\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180e\u180f\u2800\u3164\uffa0"
)
"""Characters of visible-looking categories that draw nothing (Unicode's default-ignorable fillers,
the combining grapheme joiner, Mongolian selectors, the braille blank): a name of them is blank."""

_VARIATION = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef]")


class NameRule(StrEnum):
    """Which rule a name breaks (the client's locale keys are ``player.name_rule.<word>``)."""

    LENGTH = "length"
    INVISIBLE = "invisible"
    ACCENTS = "accents"
    SPACES = "spaces"
    HASH = "hash"


def trimmed(raw: str) -> str:
    """The name as the server keeps it: NFC, spaces around it removed."""
    return unicodedata.normalize("NFC", raw).strip()


def length_problem(name: str) -> NameRule | None:
    """:attr:`NameRule.LENGTH` unless the (trimmed) name has 1 to :data:`NAME_MAX` characters."""
    return None if 1 <= len(name) <= NAME_MAX else NameRule.LENGTH


def character_problem(name: str) -> NameRule | None:
    """The first character rule ``name`` breaks, else ``None`` (red-team review of issue 20).

    None of the refused categories or invisible fillers, no combining mark first or more than
    :data:`MARKS_MAX` in a row, a variation selector only after a symbol (an emoji's), no two
    spaces in a row (a tag pushed out of sight), no ``#`` or a look-alike once NFKC-normalised (the
    tag's separator: ``Ann#4b52`` as a name would fake another's display). The length is not
    checked here (room seats' names have their own bound).
    """
    marks = 0
    previous = ""
    for c in name:
        category = unicodedata.category(c)
        if category in REFUSED_CATEGORIES or c in INVISIBLE:
            return NameRule.INVISIBLE
        if _VARIATION.match(c):
            if unicodedata.category(previous or " ") != "So":
                return NameRule.INVISIBLE
        elif category in ("Mn", "Me"):
            marks += 1
            if not previous or marks > MARKS_MAX:
                return NameRule.ACCENTS
        else:
            marks = 0
        if c.isspace() and previous.isspace():
            return NameRule.SPACES
        previous = c
    if "#" in unicodedata.normalize("NFKC", name):
        return NameRule.HASH
    return None


def name_problem(raw: str) -> NameRule | None:
    """The rule a player's name breaks once trimmed (length first, then characters), else ``None``."""
    name = trimmed(raw)
    return length_problem(name) or character_problem(name)
