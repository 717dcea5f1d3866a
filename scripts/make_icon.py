#!/usr/bin/env python3
"""Draw MINE DUEL's application icon into assets/icons/ (committed; run again when the look changes).

    .venv/bin/python scripts/make_icon.py            # write assets/icons/
    .venv/bin/python scripts/make_icon.py --check    # exit 1 if the committed files differ

The icon is the game's own mine (``shapes.icon("mine", …)`` in the amber of the primary button) on a
rounded tile of the board's navy, with the two seats' colours (blue for me, pink for the opponent)
as a thin band on the tile's lower edge from 32 px up — the same drawing code the game uses, so the
window icon, the desktop icon and the board agree.

Outputs, one drawing at each size the desktops ask for:
  mine-duel-<N>.png for N in 16 24 32 48 64 128 256 512 (hicolor theme sizes; the window icon is 64)
  mine-duel.ico  (Windows: 16–256 as PNG entries; PyInstaller's ``icon=``)
  mine-duel.icns (macOS: 16–512 as PNG entries; the .app bundle)

Deterministic: the PNG bytes are written here (no timestamps, fixed zlib level) from the pixels
pygame draws, so the same pygame-ce gives the same files; tests/test_packaging.py checks sizes and
format and that a fresh drawing matches the committed pixels.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
import zlib
from pathlib import Path

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

import pygame  # after the two settings above

from mineduel.client.ui import palette, shapes

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "assets" / "icons"
SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
# .icns entry types that hold PNG data, by pixel size (Apple's icns format).
ICNS_TYPES = {16: b"icp4", 32: b"icp5", 64: b"icp6", 128: b"ic07", 256: b"ic08", 512: b"ic09"}
SUPER = 4  # supersampling for the tile; the mine supersamples itself (shapes.SS)


def png_name(size: int) -> str:
    return f"mine-duel-{size}.png"


def draw(size: int) -> pygame.Surface:
    """The icon at ``size``×``size`` pixels, transparent outside the tile."""
    big_size = size * SUPER
    big = pygame.Surface((big_size, big_size), pygame.SRCALPHA)
    margin = round(big_size * (0.03 if size <= 24 else 0.06))  # hicolor icons keep a little air
    tile = pygame.Rect(margin, margin, big_size - 2 * margin, big_size - 2 * margin)
    radius = round(tile.width * 0.22)
    pygame.draw.rect(big, palette.TILE_EDGE, tile, border_radius=radius)
    edge = max(SUPER, round(tile.width * 0.035))
    pygame.draw.rect(big, palette.CARD, tile.inflate(-2 * edge, -2 * edge), border_radius=max(1, radius - edge))
    if size >= 32:
        # The two seats on the tile's lower edge: blue (me) left, pink (the opponent) right.
        band = pygame.Surface(tile.size, pygame.SRCALPHA)
        pygame.draw.rect(band, (255, 255, 255, 255), band.get_rect(), border_radius=radius)
        colours = pygame.Surface(tile.size, pygame.SRCALPHA)
        height = round(tile.height * 0.12)
        half = tile.width // 2
        colours.fill(palette.ME, pygame.Rect(0, tile.height - height, half, height))
        colours.fill(palette.OPP, pygame.Rect(half, tile.height - height, tile.width - half, height))
        colours.blit(band, (0, 0), special_flags=pygame.BLEND_RGBA_MIN)
        big.blit(colours, tile.topleft)
    glyph = round(tile.width * (0.86 if size <= 24 else 0.74))
    mine = shapes.icon("mine", glyph, palette.PRIMARY)
    lift = 0 if size < 32 else round(tile.height * 0.04)
    big.blit(mine, mine.get_rect(center=(tile.centerx, tile.centery - lift)))
    return pygame.transform.smoothscale(big, (size, size))


def png_bytes(surface: pygame.Surface) -> bytes:
    """An RGBA PNG of ``surface``: signature, IHDR, one IDAT, IEND — nothing time- or host-dependent."""
    width, height = surface.get_size()
    pixels = pygame.image.tobytes(surface, "RGBA")
    rows = b"".join(b"\x00" + pixels[y * width * 4:(y + 1) * width * 4] for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)  # 8-bit RGBA, no interlace
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")


def ico_bytes(pngs: dict[int, bytes]) -> bytes:
    """A Windows .ico whose entries are PNG images (valid since Windows Vista)."""
    sizes = [s for s in ICO_SIZES if s in pngs]
    header = struct.pack("<HHH", 0, 1, len(sizes))
    offset = 6 + 16 * len(sizes)
    entries, blobs = b"", b""
    for s in sizes:
        data = pngs[s]
        entries += struct.pack("<BBBBHHII", s % 256, s % 256, 0, 0, 1, 32, len(data), offset + len(blobs))
        blobs += data
    return header + entries + blobs


def icns_bytes(pngs: dict[int, bytes]) -> bytes:
    """A macOS .icns made of PNG entries."""
    body = b"".join(kind + struct.pack(">I", 8 + len(pngs[s])) + pngs[s] for s, kind in ICNS_TYPES.items())
    return b"icns" + struct.pack(">I", 8 + len(body)) + body


def outputs() -> dict[str, bytes]:
    """Every file of assets/icons/, by name."""
    pygame.display.init()
    pngs = {size: png_bytes(draw(size)) for size in SIZES}
    files = {png_name(size): data for size, data in pngs.items()}
    files["mine-duel.ico"] = ico_bytes(pngs)
    files["mine-duel.icns"] = icns_bytes(pngs)
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--check", action="store_true", help="compare with the files in --out instead of writing")
    args = parser.parse_args()
    files = outputs()
    if args.check:
        stale = [name for name, data in files.items()
                 if not (args.out / name).is_file() or (args.out / name).read_bytes() != data]
        for name in stale:
            print(f"make_icon: {args.out / name} differs from a fresh drawing", file=sys.stderr)
        return 1 if stale else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (args.out / name).write_bytes(data)
        print(f"wrote {args.out / name} ({len(data):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
