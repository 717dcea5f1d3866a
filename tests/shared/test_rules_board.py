"""RULES.md §1 (board, B1–B6) and §3 (cell sets, S1–S3), one scenario per rule, in ASCII notation.

Notation (``mineduel.shared.rules.notation``): ``..`` empty, ``A.``/``B.``/``X.`` seat 0's / seat 1's /
both mines, second character ``a``/``b`` a marker, ``o3``/``x3`` revealed by seat 0 / 1 showing 3.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support import reference_rules as ref
from support.rule_helpers import at

from mineduel.shared.fairness.record import cells_json
from mineduel.shared.rules.bitboard import NEIGHBOURS, cell_of, cells, mask_of
from mineduel.shared.rules.engine import (
    Action,
    ActionType,
    GameState,
    Phase,
    Refusal,
    Variant,
)
from mineduel.shared.rules.notation import from_ascii, to_ascii


def explore(seat: int, row: int, col: int) -> Action:
    return Action(seat, ActionType.EXPLORE, at(row, col))


def plant(seat: int, row: int, col: int) -> Action:
    return Action(seat, ActionType.PLANT, at(row, col))


def flag(seat: int, row: int, col: int) -> Action:
    return Action(seat, ActionType.FLAG, at(row, col))


VARIANTS = [Variant.CPU, Variant.ONLINE]


# ----- B1 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("row", "col", "index"), [(0, 0, 0), (0, 7, 7), (1, 0, 8), (3, 4, 28), (7, 0, 56), (7, 7, 63)]
)
def test_b1_cell_row_col_maps_to_row_times_8_plus_col(row: int, col: int, index: int) -> None:
    """B1: cell (row, col) with (0, 0) top-left is index row*8+col on an 8×8 board."""
    assert cell_of(row, col) == index
    state = GameState()
    state.play(explore(0, row, col))
    assert [i for i, c in enumerate(cells_json(state)) if c["revealed"]] == [index]


@pytest.mark.parametrize(("row", "col"), [(8, 0), (0, 8), (-1, 0), (0, -1), (8, 8)])
def test_b1_cells_off_the_8x8_board_do_not_exist(row: int, col: int) -> None:
    """B1: there is no cell outside rows 0–7 and columns 0–7."""
    with pytest.raises(ValueError):
        cell_of(row, col)


@pytest.mark.parametrize("index", [-1, 64, 100])
def test_b1_actions_on_cells_outside_0_to_63_are_malformed(index: int) -> None:
    """B1: a cell index outside 0..63 cannot even form an action."""
    with pytest.raises(ValueError):
        Action(0, ActionType.EXPLORE, index)


def test_b1_row_grows_downwards_in_the_notation() -> None:
    """B1: row 0 is the top line of the board and col grows to the right."""
    state = from_ascii(
        """
        .. A. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. B. ..
        """
    )
    assert state.mines == [1 << at(0, 1), 1 << at(7, 6)]


# ----- B2 -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("row", "col", "count"),
    [
        (0, 0, 3), (0, 7, 3), (7, 0, 3), (7, 7, 3),
        (0, 3, 5), (3, 0, 5), (7, 4, 5), (4, 7, 5),
        (1, 1, 8), (3, 4, 8), (6, 6, 8),
    ],
)  # fmt: skip
def test_b2_neighbour_counts_corner_3_edge_5_inside_8(row: int, col: int, count: int) -> None:
    """B2: a corner has 3 neighbours, an edge cell 5, an inside cell 8."""
    assert NEIGHBOURS[at(row, col)].bit_count() == count
    assert len(ref.neighbours(row, col)) == count


def test_b2_neighbour_table_matches_a_row_col_recount_for_every_cell() -> None:
    """B2: the engine's neighbour masks equal the (row, col) ±1 neighbours of the oracle, for all 64 cells."""
    for cell in range(64):
        row, col = divmod(cell, 8)
        assert NEIGHBOURS[cell] == mask_of([r * 8 + c for r, c in ref.neighbours(row, col)])


@pytest.mark.parametrize(("row", "col", "expected"), [(0, 0, 3), (0, 4, 5), (4, 4, 8)])
def test_b2_a_cell_surrounded_by_mines_shows_its_neighbour_count(row: int, col: int, expected: int) -> None:
    """B2/B4: a revealed cell whose every neighbour holds a mine shows exactly its neighbour count."""
    state = GameState()
    for n in cells(NEIGHBOURS[at(row, col)]):
        state.mines[n % 2] |= 1 << n
    state.revealed |= 1 << at(row, col)
    assert state.number(at(row, col)) == expected


# ----- B3 ------------------------------------------------------------------------------------------
def test_b3_revealer_never_changes_when_the_number_changes() -> None:
    """B3: the first revealer (background colour) stays, even after a later mine changes the number."""
    state = from_ascii(
        """
        o0 .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. A. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. B.
        """,
        phase=Phase.EXPLORE,
        to_move=1,
    )
    state.play(explore(1, 0, 2))
    state.play(plant(1, 1, 1))
    assert state.number(at(0, 0)) == 1
    assert state.revealer(at(0, 0)) == 0
    assert state.revealer(at(0, 2)) == 1
    assert state.view(0).revealed_by_me >> at(0, 0) & 1
    assert state.view(1).revealed_by_me >> at(0, 2) & 1


def test_b3_each_seat_has_its_own_mine_bit_on_a_cell() -> None:
    """B3: a cell records separately whether seat 0 and seat 1 have a mine there."""
    state = from_ascii(
        """
        A. B. X. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        """
    )
    assert [c["mines"] for c in cells_json(state)[:4]] == [[0], [1], [0, 1], []]


@pytest.mark.parametrize("seat", [0, 1])
@pytest.mark.parametrize("owner", ["a", "b"])
def test_b3_a_cell_holds_at_most_one_marker(seat: int, owner: str) -> None:
    """B3: a second marker on a marked cell is refused, whoever owns the first."""
    state = from_ascii(
        f"""
        .{owner} .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        A. .. .. .. .. .. .. B.
        """,
        to_move=seat,
    )
    before = state.snapshot()
    assert state.apply(flag(seat, 0, 0)) is Refusal.MARKED
    assert state.snapshot() == before


# ----- B4 --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("board", "expected"),
    [
        ("A. o? .. ..", 1),
        ("B. o? .. ..", 1),
        ("X. o? .. ..", 1),  # an overlap counts once
        ("X. o? X. ..", 2),
        ("A. o? B. ..", 2),
        (".. o? .. ..", 0),
    ],
)
def test_b4_overlap_counts_once(board: str, expected: int) -> None:
    """B4: a number counts neighbouring cells holding at least one mine; two mines on one cell count once."""
    row0 = board + " .. .. .. .."
    state = from_ascii(row0 + "\n" + "\n".join([".. " * 8] * 7))
    assert state.number(at(0, 1)) == expected
    assert state.numbers()[at(0, 1)] == expected


def test_b4_overlap_counts_once_with_all_eight_neighbours_overlapped() -> None:
    """B4: eight overlapped neighbours (16 mines) show 8, not 16."""
    state = from_ascii(
        """
        X. X. X. .. .. .. .. ..
        X. o8 X. .. .. .. .. ..
        X. X. X. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        """
    )
    assert state.number(at(1, 1)) == 8


@pytest.mark.parametrize("variant", VARIANTS)
def test_b4_numbers_are_recomputed_after_every_plant(variant: Variant) -> None:
    """B4: a plant next to a revealed cell raises its number at once; an overlap plant does not."""
    state = from_ascii(
        """
        o1 A. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. B.
        """,
        variant=variant,
        phase=Phase.PLANT,
        to_move=1,
    )
    overlap = state.copy()
    state.play(plant(1, 1, 0))
    assert state.numbers()[0] == 2
    overlap.play(plant(1, 0, 1))  # on seat 0's mine
    assert overlap.numbers()[0] == 1


def test_b4_only_revealed_cells_show_numbers() -> None:
    """B4: unrevealed cells have no number (-1 in the view, null in replay cells)."""
    state = GameState()
    state.play(explore(0, 4, 4))
    numbers = state.numbers()
    assert numbers[at(4, 4)] == 0
    assert all(numbers[c] == -1 for c in range(64) if c != at(4, 4))
    assert [c["number"] is None for c in cells_json(state)].count(False) == 1


# ----- B5 --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize(("row", "col"), [(0, 0), (4, 4), (7, 3)])
def test_b5_no_cascade_revealing_a_zero_opens_only_that_cell(variant: Variant, row: int, col: int) -> None:
    """B5: an explore that shows 0 opens exactly one cell, in the opening and in a normal turn."""
    state = GameState(variant)
    state.play(explore(0, row, col))
    assert state.number(at(row, col)) == 0
    assert state.revealed == 1 << at(row, col)
    normal = from_ascii(
        """
        A. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. ..
        .. .. .. .. .. .. .. B.
        """,
        variant=variant,
    )
    target = (row + 1) % 5 + 2, (col + 2) % 5 + 1  # a cell with no mine around it
    normal.play(explore(0, *target))
    assert normal.number(at(*target)) == 0
    assert normal.revealed == 1 << at(*target)


# ----- B6 --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", VARIANTS)
def test_b6_a_revealed_cell_never_receives_a_mine(variant: Variant) -> None:
    """B6: planting on a revealed cell is refused, in the opening and in a normal turn."""
    state = GameState(variant)
    state.play(explore(0, 0, 0))
    state.play(explore(1, 0, 1))
    for cell in ((0, 0), (0, 1)):
        before = state.snapshot()
        assert state.apply(plant(0, *cell)) is Refusal.REVEALED
        assert state.snapshot() == before
    state.play(plant(0, 5, 5))
    state.play(plant(1, 6, 6))
    state.play(explore(0, 2, 2))
    assert state.apply(plant(0, 2, 2)) is Refusal.REVEALED
    assert state.apply(plant(0, 0, 1)) is Refusal.REVEALED


@pytest.mark.parametrize("variant", VARIANTS)
def test_b6_mines_are_never_removed(variant: Variant) -> None:
    """B6: through a whole match, including its KO, the mines of each seat only ever grow."""
    actions = [
        explore(0, 0, 0), explore(1, 0, 1), plant(0, 5, 5), plant(1, 5, 5),
        explore(0, 1, 1), plant(0, 6, 6), Action(0, ActionType.END_TURN),
        explore(1, 2, 2), plant(1, 7, 7), Action(1, ActionType.END_TURN),
        explore(0, 7, 7),
    ]  # fmt: skip
    state = GameState(variant)
    previous = [0, 0]
    for action in actions:
        state.play(action)
        for seat in (0, 1):
            assert state.mines[seat] & previous[seat] == previous[seat]
        previous = list(state.mines)
    assert state.outcome() is not None and state.outcome().reason == "ko"  # type: ignore[union-attr]
    assert state.mines == [mask_of([at(5, 5), at(6, 6)]), mask_of([at(5, 5), at(7, 7)])]
    assert not state.revealed >> at(7, 7) & 1  # A1: the KO cell stays closed


# ----- S1–S3 ------------------------------------------------------------------------------------------
SETS_BOARD = """
    o? x? A. B. X. .a .b Aa
    Ab Ba Bb Xa Xb .. .. ..
    .. .. .. .. .. .. .. ..
    .. .. .. .. .. .. .. ..
    .. .. .. .. .. .. .. ..
    .. .. .. .. .. .. .. ..
    .. .. .. .. .. .. .. ..
    .. .. .. .. .. .. .. ..
"""
FIRST_ROWS = [at(0, c) for c in range(8)] + [at(1, c) for c in range(8)]


def _first_rows(mask: int) -> set[tuple[int, int]]:
    return {divmod(c, 8) for c in cells(mask) if c in FIRST_ROWS}


@pytest.mark.parametrize(
    ("seat", "expected"),
    [
        (0, {(0, 3), (1, 5), (1, 6), (1, 7)}),  # S1: B.'s cell is explorable for seat 0
        (1, {(0, 2), (1, 5), (1, 6), (1, 7)}),
    ],
)
def test_s1_explorable_is_unrevealed_unmarked_and_not_own_mine(
    seat: int, expected: set[tuple[int, int]]
) -> None:
    """S1: explorable(seat) = unrevealed ∧ no marker of anyone ∧ no mine of seat; opponent mines are inside."""
    state = from_ascii(SETS_BOARD)
    assert _first_rows(state.explorable(seat)) == expected
    assert {cell for cell in ref_sets(state, "explorable", seat) if cell[0] < 2} == expected


@pytest.mark.parametrize(
    ("seat", "expected"),
    [
        (0, {(0, 5), (1, 1)}),  # S2: own markers not on own mines (.a and Ba; Aa and Xa hold A)
        (1, {(0, 6), (1, 0)}),  # .b and Ab (Bb, Xb hold seat 1's mine)
    ],
)
def test_s2_recoverable_is_own_marker_without_own_mine(seat: int, expected: set[tuple[int, int]]) -> None:
    """S2: recoverable(seat) = unrevealed ∧ marker of seat ∧ no mine of seat."""
    state = from_ascii(SETS_BOARD)
    assert _first_rows(state.recoverable(seat)) == expected
    assert {cell for cell in ref_sets(state, "recoverable", seat) if cell[0] < 2} == expected


@pytest.mark.parametrize("seat", [0, 1])
def test_s3_plantable_equals_explorable_and_ignores_opponent_mines(seat: int) -> None:
    """S3: plantable(seat) is the same set as S1; the opponent's mine does not stop a plant (overlap)."""
    state = from_ascii(SETS_BOARD)
    assert state.plantable(seat) == state.explorable(seat)
    opponent_only = state.mines[1 - seat] & ~state.mines[seat] & ~state.any_marker
    assert opponent_only and state.plantable(seat) & opponent_only == opponent_only
    assert set(ref_sets(state, "plantable", seat)) == {divmod(c, 8) for c in cells(state.plantable(seat))}


def test_s_sets_are_computed_fresh_after_every_change() -> None:
    """S1–S3 are derived from the board each time: a new marker removes its cell at once, removal restores it."""
    state = from_ascii(SETS_BOARD, to_move=0)
    before = state.explorable(0)
    state.play(flag(0, 2, 2))
    assert state.explorable(0) == before & ~(1 << at(2, 2))
    assert state.recoverable(0) >> at(2, 2) & 1
    state.play(Action(0, ActionType.UNFLAG, at(2, 2)))
    assert state.explorable(0) == before


def ref_sets(state: GameState, name: str, seat: int) -> list[tuple[int, int]]:
    """The oracle's version of an S-set, on the same board (rebuilt from the notation)."""
    m = ref.RefMatch(str(state.variant))
    for line_no, line in enumerate(to_ascii(state).splitlines()):
        for col, token in enumerate(line.split()):
            sq = m.square((line_no, col))
            if token[0] in "ox":
                sq.revealed, sq.by = True, 0 if token[0] == "o" else 1
            else:
                sq.mine = [token[0] in "AX", token[0] in "BX"]
                sq.marker = {"a": 0, "b": 1}.get(token[1])
    return list(getattr(m, name)(seat))


@pytest.mark.parametrize("cell", [True, False])
def test_b1_a_cell_is_an_integer_not_a_boolean(cell: bool) -> None:
    """B1/RECORD.md: a cell is an integer 0..63; a boolean is malformed, as it is in a record."""
    with pytest.raises(ValueError):
        Action(0, ActionType.EXPLORE, cell)


# ----- every rule of chapters 1–7 names a test -----------------------------------------------------
RULES_MD = Path(__file__).resolve().parents[2] / "docs" / "RULES.md"
RULE_TEST_FILES = [
    "test_rules_board.py",
    "test_rules_flow.py",
    "test_rules_actions.py",
    "test_rules_cpu_endings.py",
    "test_rules_online.py",
    "test_views.py",
    "../server/test_server_rooms.py",  # O1, O15, O16 live in the server
]


def test_every_rule_id_in_chapters_1_to_7_names_a_test() -> None:
    """RULES.md: every rule ID of §1–7 appears in the name of at least one rule test."""
    text = RULES_MD.read_text(encoding="utf-8")
    chapters = text[text.index("## 1. Board") : text.index("## 8.")]
    ids = set(re.findall(r"\*\*([BVSFACO]\d+b?)\b", chapters))
    assert len(ids) >= 45
    names = []
    for name in RULE_TEST_FILES:
        names += re.findall(
            r"^def (test_\w+)", (Path(__file__).parent / name).read_text(encoding="utf-8"), re.MULTILINE
        )
    missing = sorted(
        i for i in ids if not any(f"_{i.lower()}_" in n or n.endswith(f"_{i.lower()}") for n in names)
    )
    assert missing == []
