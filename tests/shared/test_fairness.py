"""Tests for the provably fair primitives (RULES.md §9, R1–R3b).

The reference vectors in ``vectors/fairness_reference.json`` were made by running the Node.js
program at the end of ``seeds/001_f198c4cf75cbfc57.txt`` (Node v20.20.2, js-sha3 0.13.0),
unchanged except for its input lines, once per case; the file's ``how_made`` field gives the
exact procedure. These tests only read that JSON: they never need Node.
"""

from __future__ import annotations

import ast
import hashlib
import json
import struct
from pathlib import Path
from typing import Any

import pytest

from mineduel.shared.fairness import commitments as fairness
from mineduel.shared.fairness.commitments import (
    FairStream,
    canonical_cells,
    chain,
    commitment,
    mine_commitment,
    new_salt,
    pick_index,
    pick_unique_positions,
    round_signature,
    transcript_hash,
    transcript_start,
)

VECTORS_PATH = Path(__file__).resolve().parents[1] / "support" / "vectors" / "fairness_reference.json"
REFERENCE: dict[str, Any] = json.loads(VECTORS_PATH.read_text(encoding="utf-8"))
VECTORS: list[dict[str, Any]] = REFERENCE["vectors"]
GRID = REFERENCE["grid_size"]


class ListSource:
    """A stream double that yields hand-crafted integers and counts them."""

    def __init__(self, values: list[int]) -> None:
        self.values = list(values)
        self.consumed = 0

    def next_u32(self) -> int:
        value = self.values[self.consumed]  # IndexError = drew more than the test expected
        self.consumed += 1
        return value


def _vector_id(vector: dict[str, Any]) -> str:
    return f"{vector['server_seed'][:12]}-{vector['nonce']}-m{vector['mines']}"


def _sha3(text: str) -> str:
    return hashlib.sha3_256(text.encode("utf-8")).hexdigest()


def _accept_below(options: int) -> int:
    return (1 << 32) // options * options


def _stream_values(signature: str, count: int) -> list[int]:
    """The first ``count`` stream integers, straight from hashlib (independent of FairStream)."""
    digest = hashlib.shake_256(signature.encode("utf-8")).digest(4 * count)
    return list(struct.unpack(f">{count}I", digest))


def _first_rejected_draw(vector: dict[str, Any]) -> int | None:
    """Index of the first draw the reference rejects in a 25-cell round, if any."""
    prefix = _stream_values(vector["round_signature"], vector["mines"])
    for draw in range(vector["mines"]):
        if prefix[draw] >= _accept_below(GRID - draw):
            return draw
    return None


# --- reference vectors (R1, R2) ------------------------------------------------------------


def test_reference_vectors_cover_the_required_cases() -> None:
    """R1/R2: the committed vectors span 1–24 mines, non-ASCII seeds, large nonces and rejection."""
    assert "how_made" in REFERENCE and "js-sha3" in REFERENCE["how_made"]
    assert len(VECTORS) >= 40
    assert {v["mines"] for v in VECTORS} == set(range(1, 25))
    assert any(not (v["server_seed"] + v["client_seed"]).isascii() for v in VECTORS)
    assert {1, 2} <= {v["nonce"] for v in VECTORS}
    assert max(v["nonce"] for v in VECTORS) == 2**53 - 1
    assert sum(_first_rejected_draw(v) is not None for v in VECTORS) >= 2


@pytest.mark.parametrize("vector", VECTORS, ids=_vector_id)
def test_commitment_matches_reference(vector: dict[str, Any]) -> None:
    """R1: the commitment equals the reference program's SHA3-256 of the server seed."""
    assert commitment(vector["server_seed"]) == vector["commitment"]


@pytest.mark.parametrize("vector", VECTORS, ids=_vector_id)
def test_round_signature_matches_reference(vector: dict[str, Any]) -> None:
    """R1: with one client seed the round signature equals the reference program's."""
    signature = round_signature(vector["server_seed"], [vector["client_seed"]], vector["nonce"])
    assert signature == vector["round_signature"]


@pytest.mark.parametrize("vector", VECTORS, ids=_vector_id)
def test_stream_prefix_matches_reference(vector: dict[str, Any]) -> None:
    """R1: the first 16 stream integers equal the reference's big-endian SHAKE256 reads."""
    stream = FairStream(vector["round_signature"])
    assert [stream.next_u32() for _ in range(16)] == vector["stream_prefix_u32"]
    assert stream.consumed == 16


@pytest.mark.parametrize("vector", VECTORS, ids=_vector_id)
def test_mine_positions_match_reference(vector: dict[str, Any]) -> None:
    """R2: drawing the mines from the seeds gives the reference program's positions."""
    stream = FairStream.from_seeds(vector["server_seed"], [vector["client_seed"]], vector["nonce"])
    assert pick_unique_positions(stream, vector["mines"], GRID) == vector["mine_positions"]
    rejected = _first_rejected_draw(vector)
    assert stream.consumed == vector["mines"] + (rejected is not None)


def test_rejection_vectors_differ_from_plain_modulo() -> None:
    """R2: in the rejection vectors, skipping the rejection would change the mine positions."""
    rejection_vectors = [v for v in VECTORS if _first_rejected_draw(v) is not None]
    assert rejection_vectors
    for vector in rejection_vectors:
        prefix = iter(_stream_values(vector["round_signature"], vector["mines"]))
        available = list(range(GRID))
        naive = sorted(available.pop(next(prefix) % len(available)) for _ in range(vector["mines"]))
        assert [p + 1 for p in naive] != vector["mine_positions"]


# --- R2 with hand-crafted integers ---------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "draws", "expected", "consumed"),
    [
        # 2**32 = 3 * 1431655765 + 1: accept below 4294967295, so only 2**32 - 1 is rejected.
        (3, [4294967295, 4294967294], 4294967294 % 3, 2),
        (3, [4294967295, 4294967295, 5], 2, 3),
        # 2**32 mod 25 = 21: 4294967275 … 4294967295 are rejected, 4294967274 is the top accepted.
        (25, [4294967275, 4294967295, 7], 7, 3),
        (25, [4294967274], 24, 1),
        # 2**32 mod 23 = 12: 0xfffffff4 (the reference vector's rejected draw) is rejected.
        (23, [0xFFFFFFF4, 0xFFFFFFF3], 0xFFFFFFF3 % 23, 2),
        # A power of two divides 2**32: nothing is ever rejected.
        (16, [4294967295], 15, 1),
        (1 << 32, [4294967295], 4294967295, 1),
    ],
)
def test_pick_rejects_the_biased_top_values(
    options: int, draws: list[int], expected: int, consumed: int
) -> None:
    """R2: values >= floor(2**32/P)*P are skipped and the next value is taken modulo P."""
    assert _accept_below(options) == (1 << 32) - (1 << 32) % options
    source = ListSource(draws)
    assert pick_index(source, options) == expected
    assert source.consumed == consumed


def test_accept_limits_for_board_sizes() -> None:
    """R2: the rejection thresholds for P = 3 and 25 are the hand-computed values."""
    assert _accept_below(3) == 4294967295
    assert _accept_below(25) == 4294967275


@pytest.mark.parametrize("value", [0, 1, 123456789, 4294967295])
def test_pick_among_one_option_draws_once_and_answers_zero(value: int) -> None:
    """R2: with P = 1 every value is accepted and exactly one integer is consumed (the seed too)."""
    source = ListSource([value])
    assert pick_index(source, 1) == 0
    assert source.consumed == 1


@pytest.mark.parametrize("options", [0, -1, (1 << 32) + 1])
def test_pick_refuses_impossible_option_counts(options: int) -> None:
    """R2: P < 1 (nothing to pick) and P > 2**32 (32-bit draws cannot cover it) raise ValueError."""
    with pytest.raises(ValueError):
        pick_index(ListSource([]), options)
    with pytest.raises(ValueError):
        FairStream(VECTORS[0]["round_signature"]).pick(options)


def test_pick_refuses_non_int_option_counts() -> None:
    """R2: a bool or float option count is a caller bug, not a number of options."""
    with pytest.raises(TypeError):
        pick_index(ListSource([0]), True)
    with pytest.raises(TypeError):
        pick_index(ListSource([0]), 2.0)  # type: ignore[arg-type]


def test_choice_picks_by_index_in_the_given_order() -> None:
    """R2: choice() draws an index with the same rejection rule and returns that option."""
    stream = FairStream(VECTORS[0]["round_signature"])
    first = VECTORS[0]["stream_prefix_u32"][0]
    seats = ["joined-first", "joined-second"]
    assert stream.choice(seats) == seats[first % 2]
    assert stream.consumed == 1
    with pytest.raises(ValueError):
        stream.choice([])


def test_pick_unique_positions_edge_counts() -> None:
    """R2: zero mines draw nothing, a full grid gives every position, too many is refused."""
    stream = FairStream(VECTORS[0]["round_signature"])
    assert pick_unique_positions(stream, 0, GRID) == []
    assert stream.consumed == 0
    assert pick_unique_positions(stream, GRID, GRID) == list(range(1, GRID + 1))
    assert stream.consumed == GRID
    with pytest.raises(ValueError):
        pick_unique_positions(stream, GRID + 1, GRID)
    with pytest.raises(ValueError):
        pick_unique_positions(stream, -1, GRID)


# --- R1 stream and signature ---------------------------------------------------------------


def test_stream_is_unbounded_and_prefix_consistent() -> None:
    """R1: 10,000 integers equal a single long SHAKE256 digest read as big-endian uint32."""
    signature = VECTORS[-1]["round_signature"]
    stream = FairStream(signature)
    values = [stream.next_u32() for _ in range(10_000)]
    assert values == _stream_values(signature, 10_000)
    assert stream.consumed == 10_000


def test_stream_refuses_a_non_signature() -> None:
    """R1: the stream is seeded by a lowercase 64-hex round signature, never by a raw seed."""
    with pytest.raises(ValueError):
        FairStream("your_server_seed")
    with pytest.raises(ValueError):
        FairStream(VECTORS[0]["round_signature"].upper())


def test_two_client_seed_signature_format() -> None:
    """R1: two seeds give SHA3-256 of "server:first_joined:second:nonce", in join order."""
    signature = round_signature("srv", ["alice", "bob"], 7)
    assert signature == _sha3("srv:alice:bob:7")
    assert signature != round_signature("srv", ["bob", "alice"], 7)
    assert round_signature("srv", ("alice", "bob"), "7") == signature


def test_round_signature_refuses_malformed_inputs() -> None:
    """R1: zero or three client seeds, a bare string and a bool nonce are caller bugs."""
    with pytest.raises(ValueError):
        round_signature("srv", [], 1)
    with pytest.raises(ValueError):
        round_signature("srv", ["a", "b", "c"], 1)
    with pytest.raises(TypeError):
        round_signature("srv", "alice", 1)
    with pytest.raises(TypeError):
        round_signature("srv", ["alice"], True)


# --- R2 canonical option order -------------------------------------------------------------


def test_canonical_cells_from_mask_and_iterable_agree() -> None:
    """R2: cells come out ascending by row*8+col, whether given as a bitmask or as indices."""
    cells = [63, 0, 9, 17, 8]
    mask = sum(1 << c for c in cells)
    assert canonical_cells(mask) == [0, 8, 9, 17, 63]
    assert canonical_cells(cells) == [0, 8, 9, 17, 63]
    assert canonical_cells(set(cells)) == [0, 8, 9, 17, 63]
    assert canonical_cells(0) == []
    assert canonical_cells((1 << 64) - 1) == list(range(64))


@pytest.mark.parametrize(
    ("cells", "error"),
    [
        (1 << 64, ValueError),
        (-1, ValueError),
        ([3, 3], ValueError),
        ([64], ValueError),
        ([-1], ValueError),
        (True, TypeError),
    ],
)
def test_canonical_cells_refuses_bad_input(cells: Any, error: type[Exception]) -> None:
    """R2: out-of-board cells and duplicates (which would bias a draw) are refused."""
    with pytest.raises(error):
        canonical_cells(cells)


# --- R3b mine commitments and transcript ---------------------------------------------------

SALT = "00112233445566778899aabbccddeeff"
BASE = {"salt_hex": SALT, "match_id": "m-42", "seq": 3, "seat": 1, "cell": 2 * 8 + 5}


def test_mine_commitment_uses_the_documented_encoding() -> None:
    """R3b: the commitment is SHA3-256 of "mine-duel/mine/1|match|seq|seat|row,col|salt"."""
    expected = _sha3(f"mine-duel/mine/1|m-42|3|1|2,5|{SALT}")
    assert mine_commitment(**BASE) == expected
    assert fairness.__doc__ is not None
    assert "mine-duel/mine/1|{match_id}|{seq}|{seat}|{row},{col}|{salt}" in fairness.__doc__


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("salt_hex", "00112233445566778899aabbccddeef0"),
        ("match_id", "m-43"),
        ("seq", 4),
        ("seat", 0),
        ("cell", 2 * 8 + 6),
        ("cell", 5 * 8 + 2),
    ],
)
def test_mine_commitment_changes_with_every_field(field: str, value: Any) -> None:
    """R3b: changing any one of salt, match, sequence, seat or cell changes the commitment."""
    assert mine_commitment(**{**BASE, field: value}) != mine_commitment(**BASE)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("salt_hex", SALT.upper()),
        ("salt_hex", SALT[:-1]),
        ("salt_hex", ""),
        ("match_id", ""),
        ("seq", -1),
        ("seat", True),
        ("cell", 64),
    ],
)
def test_mine_commitment_refuses_non_canonical_fields(field: str, value: Any) -> None:
    """R3b: only the canonical form of each field is accepted, so one plant has one encoding."""
    with pytest.raises(ValueError):
        mine_commitment(**{**BASE, field: value})


def test_transcript_start_and_chain_are_documented_hashes() -> None:
    """R3b: the transcript starts at SHA3-256("mine-duel/transcript/1|" + match id) and chains."""
    start = transcript_start("m-42")
    assert start == _sha3("mine-duel/transcript/1|m-42")
    entry = mine_commitment(**BASE)
    assert chain(start, entry) == _sha3(f"mine-duel/chain/1|{start}|{entry}")
    assert transcript_hash("m-42", []) == start
    assert transcript_hash("m-42", [entry]) == chain(start, entry)
    assert transcript_start("m-43") != start


def test_chain_is_order_sensitive() -> None:
    """R3b: swapping two plants changes the transcript hash, so reordering is detectable."""
    first = mine_commitment(**BASE)
    second = mine_commitment(**{**BASE, "seq": 4, "seat": 0})
    assert transcript_hash("m-42", [first, second]) != transcript_hash("m-42", [second, first])
    assert chain(first, second) != chain(second, first)


def test_chain_refuses_non_hashes() -> None:
    """R3b: chain links are 64 lowercase hex digits, never free text."""
    start = transcript_start("m-42")
    with pytest.raises(ValueError):
        chain(start, "not a hash")
    with pytest.raises(ValueError):
        chain(start.upper(), start)


def test_new_salt_takes_its_entropy_from_the_caller() -> None:
    """R3b: the salt is the injected bytes in lowercase hex, 16 bytes unless told otherwise."""
    requested: list[int] = []

    def fake_randbytes(n: int) -> bytes:
        requested.append(n)
        return bytes(range(n))

    assert new_salt(fake_randbytes) == bytes(range(16)).hex()
    assert new_salt(fake_randbytes, 4) == "00010203"
    assert requested == [16, 4]
    with pytest.raises(ValueError):
        new_salt(lambda n: b"\x00")
    with pytest.raises(ValueError):
        new_salt(fake_randbytes, 0)


# --- purity --------------------------------------------------------------------------------


def test_fairness_module_imports_only_the_standard_library() -> None:
    """R1–R3b: the primitives stay pure (no global random, no clock, no third-party code)."""
    tree = ast.parse(Path(fairness.__file__).read_text(encoding="utf-8"))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert imported <= {"__future__", "hashlib", "re", "collections", "typing"}
