"""One palette for the whole client, taken from ``assets/theme.json`` so the hand-drawn screens
and pygame_gui widgets (the online screen) look like one game: dark navy surfaces, blue for me,
pink for the opponent, amber for the main action, red for danger.

Meaning never rests on colour alone (brief §3): the opponent's cells also carry a corner notch,
each seat's flag has its own shape, and refusals carry an icon as well as red text.
"""

from __future__ import annotations

Color = tuple[int, int, int]

BACKGROUND: Color = (15, 27, 45)  # theme #screen
BACKGROUND_DEEP: Color = (11, 20, 34)
CARD: Color = (28, 46, 74)  # theme popup_card / window
CARD_RAISED: Color = (35, 57, 91)  # theme normal_bg
CARD_BORDER: Color = (52, 80, 122)  # theme normal_border
PANEL: Color = (22, 37, 61)  # theme panel
SHADOW: Color = (0, 0, 0)
SCRIM = (4, 9, 18, 175)

INK: Color = (232, 238, 247)  # theme normal_text
INK_SOFT: Color = (143, 163, 191)  # theme #small
INK_FAINT: Color = (91, 108, 133)  # theme disabled_text
INK_DARK: Color = (26, 20, 5)  # on amber
ON_ACCENT: Color = (255, 255, 255)

# The two seats (B3): blue is me, pink is the CPU / opponent.
ME: Color = (74, 144, 226)  # theme selected_bg
ME_LIGHT: Color = (103, 166, 238)  # theme #me
ME_CELL: Color = (207, 225, 250)
ME_CELL_EDGE: Color = (141, 184, 238)
OPP: Color = (236, 116, 151)  # theme #opponent
OPP_DEEP: Color = (214, 70, 120)
OPP_CELL: Color = (249, 213, 226)
OPP_CELL_EDGE: Color = (236, 154, 183)

# Unrevealed tiles: raised and bright when the current mode may act on them, flat otherwise.
TILE: Color = (58, 95, 152)
TILE_EDGE: Color = (86, 124, 181)
TILE_BEVEL: Color = (20, 34, 58)
TILE_IDLE: Color = (32, 51, 82)
TILE_IDLE_EDGE: Color = (40, 62, 96)
BOARD: Color = PANEL

FOCUS: Color = (245, 185, 66)  # amber, as the primary button
HOVER: Color = (232, 238, 247)
PRIMARY: Color = (245, 185, 66)  # theme #primary_button
WARN: Color = (255, 120, 120)
DANGER: Color = (229, 72, 77)  # theme #danger_button
GOOD: Color = (74, 222, 128)
GLOW: Color = (245, 185, 66)
MINE: Color = (20, 26, 40)

# Input modes (explore / mine / flag / unflag): each has its own icon too.
MODE_COLORS: dict[str, Color] = {
    "explore": ME,
    "mine": (148, 112, 236),
    "flag": PRIMARY,
    "unflag": (38, 166, 154),
}

# Number inks on the light blue and light pink cells (contrast >= 4.5:1 on both).
NUMBER_INK: tuple[Color, ...] = (
    (112, 122, 142),  # 0: present but quiet
    (29, 78, 216),
    (21, 118, 56),
    (185, 28, 28),
    (91, 33, 182),
    (146, 52, 18),
    (15, 108, 100),
    (17, 24, 39),
    (70, 80, 94),
)

BUTTON_SECONDARY: Color = CARD_RAISED
BUTTON_DISABLED: Color = (22, 37, 61)
INK_DISABLED: Color = INK_FAINT


def mix(a: Color, b: Color, t: float) -> Color:
    """``a`` moved ``t`` (0..1) of the way towards ``b``."""
    t = 0.0 if t < 0 else 1.0 if t > 1 else t
    return (
        round(a[0] + (b[0] - a[0]) * t),
        round(a[1] + (b[1] - a[1]) * t),
        round(a[2] + (b[2] - a[2]) * t),
    )
