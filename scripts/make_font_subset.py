#!/usr/bin/env python3
"""Regenerate assets/fonts/MineDuelSans-{Regular,Bold}.otf: Noto Sans CJK SC cut down to the game's text.

Run it whenever a catalog string changes (tests/test_i18n.py fails when a catalog character is not
in the shipped font):

    sudo apt-get install fonts-noto-cjk          # Debian/Ubuntu; 56 MB, needed only here, not in CI
    .venv/bin/python scripts/make_font_subset.py

What goes in: every character of every ``locales/mineduel.*.json`` string, printable ASCII, the
symbols in :data:`EXTRA_SYMBOLS` that the game or pygame_gui draws by hand, and what players type as
their names (:func:`name_characters`: the 2,350 common Hangul syllables of KS X 1001, kana, the
level-1 Han of JIS X 0208 and GB 2312, and the accented Latin letters of Latin-1; Noto Sans CJK has
no Latin Extended-A). Symbols the source face does not have are reported and left out (⚑ U+2691 and
✗ U+2717 are not in Noto Sans CJK; draw the flag as a shape and use × for "wrong"). A catalog
character missing from the source face is an error.

Which face: the ``.ttc`` holds JP, KR, SC, TC and HK faces with identical Hangul, kana and Latin but
region-specific Han shapes and punctuation. We take the face whose PostScript name is
``NotoSansCJKsc-Regular`` / ``-Bold`` (by name, not index, so a repacked collection cannot change the
result): Simplified Chinese needs its mainland shapes most, and SC's bottom-left 、。 suit Japanese too.
Its one quirk: it draws ’ ‘ “ ” · • full-width, so the English and Korean catalogs use ASCII quotes
and "..." (tests/test_i18n.py checks this).

The output is renamed "MineDuel Sans" (the OFL forbids the reserved name "Source" and the original
names on a modified version) and is byte-for-byte reproducible: the timestamps are the source's.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTCollection, TTFont

ROOT = Path(__file__).resolve().parent.parent
LOCALES = ROOT / "locales"
FONTS = ROOT / "assets" / "fonts"
SOURCE_DIR = Path("/usr/share/fonts/opentype/noto")

FAMILY = "MineDuel Sans"
# (source collection, face PostScript name, output file, style name)
FACES = (
    ("NotoSansCJK-Regular.ttc", "NotoSansCJKsc-Regular", "MineDuelSans-Regular.otf", "Regular"),
    ("NotoSansCJK-Bold.ttc", "NotoSansCJKsc-Bold", "MineDuelSans-Bold.otf", "Bold"),
)

#: Drawn by hand by the game (× multiply, arrows, bullet, check mark, ellipsis, minus, em dash) or by
#: pygame_gui's own widgets (▲▼◀▶ scroll/drop-down arrows, ╳ window close, ● and ✓ check box), plus
#: the flag and cross we would have liked (absent from the source face: reported and dropped).
EXTRA_SYMBOLS = "×→←•·✓✗⚑…−–—▲▼◀▶╳●○"

ASCII_PRINTABLE = "".join(chr(code) for code in range(0x20, 0x7F))


def catalog_characters() -> set[str]:
    """Every character used by any string of any catalog."""
    chars: set[str] = set()
    for path in sorted(LOCALES.glob("mineduel.*.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        for entries in document.values():
            for text in entries.values():
                chars.update(text)
    if not chars:
        raise SystemExit(f"no catalogs found in {LOCALES}")
    return chars


def _double_byte_rows(codec: str, first_row: int, last_row: int) -> set[str]:
    """The characters of rows ``first_row``–``last_row`` of an EUC-style two-byte character set."""
    chars: set[str] = set()
    for row in range(first_row, last_row + 1):
        for cell in range(0xA1, 0xFF):
            try:
                chars.add(bytes((row, cell)).decode(codec))
            except UnicodeDecodeError:
                continue
    return chars


def name_characters() -> set[str]:
    """What a player's name (shown to the opponent, in the LAN list) is most likely written with.

    Player names come from outside the catalogs, so without these they would show as boxes. The sets
    come from the national standards' common cores, read from Python's own codecs (no data files):
    KS X 1001's 2,350 Hangul syllables (rows 0xB0–0xC8 of EUC-KR; every Korean name in common use),
    JIS X 0208 level 1 (2,965 kanji, rows 0xB0–0xCF of EUC-JP), GB 2312 level 1 (3,755 hanzi, rows
    0xB0–0xD7), both kana blocks, and the accented Latin letters of Latin-1 (the source face has no
    Latin Extended-A). About 1.5 MB more per face; rarer Han (and the other 8,822 Hangul syllables) still show as a box.
    """
    hangul = {ch for ch in _double_byte_rows("euc_kr", 0xB0, 0xC8) if "\uac00" <= ch <= "\ud7a3"}
    han = _double_byte_rows("euc_jp", 0xB0, 0xCF) | _double_byte_rows("gb2312", 0xB0, 0xD7)
    kana = {chr(code) for code in (*range(0x3041, 0x3097), *range(0x30A1, 0x30FF))}
    latin = {chr(code) for code in range(0xC0, 0x100) if chr(code).isalpha()}
    return hangul | han | kana | latin


def open_face(collection: Path, postscript_name: str) -> TTFont:
    """The face of a .ttc whose PostScript name (name ID 6) is ``postscript_name``."""
    for index, font in enumerate(TTCollection(str(collection), lazy=True).fonts):
        if font["name"].getDebugName(6) == postscript_name:
            return TTFont(str(collection), fontNumber=index, recalcTimestamp=False)
    raise SystemExit(f"{collection} has no face named {postscript_name}")


def rename(font: TTFont, style: str) -> None:
    """Give the subset its own name; keep copyright, licence, designer and vendor records."""
    source = font["name"].getDebugName(6)
    postscript = f"{FAMILY.replace(' ', '')}-{style}"
    full = f"{FAMILY} {style}" if style != "Regular" else FAMILY
    version = font["name"].getDebugName(5) or "Version 1.000"
    name = font["name"]
    # Drop every naming record (all platforms and languages, incl. the localized CJK family names)
    # and the original's trademark line (our name is not "Noto"), then write ours.
    name.names = [record for record in name.names if record.nameID not in {1, 2, 3, 4, 6, 7, 16, 17}]
    records = {
        1: FAMILY,
        2: style,
        3: f"{postscript};subset of {source}",
        4: full,
        5: version,
        6: postscript,
        10: "Subset of Noto Sans CJK SC (SIL Open Font License 1.1) for MINE DUEL's texts.",
    }
    for name_id, text in records.items():
        name.setName(text, name_id, 3, 1, 0x409)
    cff = font["CFF "].cff
    cff.fontNames = [postscript]
    top = cff.topDictIndex[0]
    top.FullName = full
    top.FamilyName = FAMILY
    if hasattr(top, "CIDFontName"):
        top.CIDFontName = postscript


def build(collection: Path, postscript_name: str, output: Path, style: str, text: str) -> None:
    font = open_face(collection, postscript_name)
    options = subset.Options()
    options.notdef_outline = True  # a missing glyph shows as a box, so it is noticed, not blank
    # Horizontal text only, and pygame never asks for a language: vertical forms (vert, vrt2) and the
    # JP/KR/TC alternates (locl) would be dead weight (1092 instead of ~720 glyphs, +80 KB).
    options.layout_features = ["ccmp", "liga", "calt", "kern", "mark", "mkmk"]
    options.name_IDs = ["*"]
    options.name_languages = ["*"]
    options.recalc_timestamp = False
    subsetter = subset.Subsetter(options)
    subsetter.populate(text=text)
    subsetter.subset(font)
    rename(font, style)
    output.parent.mkdir(parents=True, exist_ok=True)
    font.save(str(output))
    print(f"{output.relative_to(ROOT)}: {len(font.getGlyphOrder())} glyphs, {output.stat().st_size / 1024:.1f} KB")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source-dir", type=Path, default=SOURCE_DIR, help="folder of NotoSansCJK-*.ttc")
    args = parser.parse_args(argv)

    wanted = catalog_characters() | set(ASCII_PRINTABLE) | set(EXTRA_SYMBOLS) | name_characters()
    wanted -= {"\n", "\t"}
    for ttc, postscript_name, out_name, style in FACES:
        collection = args.source_dir / ttc
        if not collection.exists():
            print(f"missing {collection}: apt-get install fonts-noto-cjk", file=sys.stderr)
            return 1
        cmap = open_face(collection, postscript_name).getBestCmap()
        absent = sorted(ch for ch in wanted if ord(ch) not in cmap)
        absent_in_catalogs = sorted(set(absent) & catalog_characters())
        if absent_in_catalogs:
            shown = ", ".join(f"{ch} U+{ord(ch):04X}" for ch in absent_in_catalogs)
            print(f"{postscript_name} lacks catalog characters: {shown}", file=sys.stderr)
            return 1
        if absent:
            print(f"{postscript_name}: dropped (not in the face): " + ", ".join(f"{ch} U+{ord(ch):04X}" for ch in absent))
        text = "".join(sorted(set(wanted) - set(absent)))
        build(collection, postscript_name, FONTS / out_name, style, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
