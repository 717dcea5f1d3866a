"""How ratings read on every screen (issue 20): one place, so the cards, the quick-match screen,
the result, the profile and the leaderboard never disagree.

A rating is a whole number, as lichess shows it (``1523``); while it is provisional (deviation
≥ 110, PROTOCOL.md §17) it carries a question mark (``1500?``). A change is signed (``+12``,
``-8``, ``+0`` for a void match). Numbers, signs and ``?`` are the same in the four languages.
"""

from __future__ import annotations

import math

from mineduel.client.ui.text import FontBook


def rating_text(value: float, provisional: bool) -> str:
    """``1523`` or, while provisional, ``1500?`` (a server's NaN or infinity never reaches here: the codec refuses them)."""
    shown = str(math.floor(value + 0.5)) if math.isfinite(value) else "?"
    return shown + ("?" if provisional else "")


def change_text(change: float) -> str:
    """``+12`` / ``-8`` / ``+0``: rounded to whole points, the sign always shown."""
    points = math.floor(abs(change) + 0.5) if math.isfinite(change) else 0
    return ("-" if change < 0 and points else "+") + str(points)


def fit_name(fonts: FontBook, text: str, size: int, width: int, bold: bool = True) -> tuple[str, int]:
    """A player's name (``Ann#3f9c``) in ``width``: at ``size``, else up to 2 px smaller, else cut with
    "..." before its ``#tag`` — the tag is what tells two players of one name apart, so it stays."""
    small = max(11, size - 2)
    fitted = fonts.fit_size(text, size, width, bold, minimum=small)
    if fonts.width(text, fitted, bold) <= width:
        return text, fitted
    name, sep, tag = text.rpartition("#")
    if not sep or not 1 <= len(tag) <= 4:
        name, tag = text, ""
    suffix = f"...#{tag}" if tag else "..."
    while len(name) > 1 and fonts.width(name + suffix, small, bold) > width:
        name = name[:-1]
    return name.rstrip() + suffix, small


def ellipsized(fonts: FontBook, text: str, size: int, width: int, bold: bool = True) -> str:
    """:func:`fit_name`'s text alone (drawn with ``fonts.fit_size`` at ``size``)."""
    return fit_name(fonts, text, size, width, bold)[0]
