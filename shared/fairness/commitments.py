"""Provably fair randomness for ONLINE matches (RULES.md §9, R1–R3b).

Everything here is pure: standard library hashing only, no global random generator, no
clock. Entropy (server seeds, salts) is always passed in, so the server's draws and an outside
verifier's recomputation run the very same code path.

R1 — commitment and stream
    ``commitment = hex(SHA3-256(UTF-8(server_seed)))`` is published before the match.
    ``round_signature = hex(SHA3-256(UTF-8("{server_seed}:{c1}[:{c2}]:{nonce}")))`` where
    ``c1`` is the client seed of the seat that joined first and ``c2`` (if any) the second.
    The stream is SHAKE256 of the signature's (lowercase hex) UTF-8 bytes, read as big-endian
    unsigned 32-bit integers: integer ``i`` is output bytes ``4i … 4i+3``. With one client seed
    this is byte-for-byte the reference program of ``seeds/001_f198c4cf75cbfc57.txt``
    (``tests/vectors/fairness_reference.json`` holds vectors made by running it).
    An integer nonce is written in decimal; the reference program formats a JavaScript number,
    so the two agree for integers of magnitude below 2**53.

R2 — uniform pick among ``P`` options
    Draw ``x``; reject while ``x >= floor(2**32 / P) * P``; answer ``x % P``. Options are always
    listed in a canonical order before the pick: cells ascending by ``row*8+col``
    (:func:`canonical_cells`), seats by join order (first joined = option 0). The first-player
    draw (O3) is therefore ``stream.choice(seats_in_join_order)``.

R3 — verification
    After the match the server reveals ``server_seed``; :func:`commitment`,
    :func:`round_signature` and :class:`FairStream` recompute every draw. ``FairStream.consumed``
    says how many integers a sequence of picks used.

R3b — mine commitments and transcript (version 1; outside verifiers reimplement this)
    Each plant is committed as::

        entry = hex(SHA3-256(UTF-8("mine-duel/mine/1|{match_id}|{seq}|{seat}|{row},{col}|{salt}")))

    ``match_id`` is the match id string as issued; ``seq``, ``seat``, ``row``, ``col`` are
    non-negative integers in plain decimal (no sign, no leading zeros); ``seat`` is the record's
    seat number (RECORD.md: 0 = first player, 1 = second); ``row, col`` are the cell (B1) with
    ``cell = row*8 + col``; ``salt`` is the plant's secret salt as lowercase hex (an even number
    of digits, at least 2; :func:`new_salt` makes 16 random bytes = 32 digits). Only
    ``match_id`` may contain ``|``; every field after it cannot, so the text splits uniquely
    from the right and the encoding is unambiguous.

    The transcript hash starts at::

        h0 = hex(SHA3-256(UTF-8("mine-duel/transcript/1|" + match_id)))

    and every entry, in plant order, is folded in as::

        h = hex(SHA3-256(UTF-8("mine-duel/chain/1|" + h + "|" + entry)))

    All hex values are lowercase; ``h`` and ``entry`` are 64 digits each.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, TypeVar

__all__ = [
    "BOARD_CELLS",
    "BOARD_COLS",
    "SALT_BYTES",
    "U32_RANGE",
    "FairStream",
    "U32Source",
    "canonical_cells",
    "chain",
    "commitment",
    "mine_commitment",
    "new_salt",
    "pick_index",
    "pick_unique_positions",
    "round_signature",
    "transcript_hash",
    "transcript_start",
]

T = TypeVar("T")

U32_RANGE = 1 << 32
"""Number of distinct 32-bit stream values (R1, R2)."""

BOARD_COLS = 8
"""Columns per row (B1); cell index = row * BOARD_COLS + col."""

BOARD_CELLS = 64
"""Cells on the board (B1); also the width of a cell bitmask."""

SALT_BYTES = 16
"""Random bytes per mine-commitment salt (R3b): 128 bits defeat guessing the 64 cells."""

MINE_DOMAIN = "mine-duel/mine/1"
TRANSCRIPT_DOMAIN = "mine-duel/transcript/1"
CHAIN_DOMAIN = "mine-duel/chain/1"

_HEX64 = re.compile(r"[0-9a-f]{64}")
_SALT = re.compile(r"(?:[0-9a-f]{2})+")

_INITIAL_STREAM_BYTES = 256
"""First SHAKE256 output length (64 integers): one 24-draw round never extends it."""


def _sha3_hex(text: str) -> str:
    return hashlib.sha3_256(text.encode("utf-8")).hexdigest()


def _check_hex64(name: str, value: str) -> None:
    if not isinstance(value, str) or _HEX64.fullmatch(value) is None:
        raise ValueError(f"{name} must be 64 lowercase hex digits, got {value!r}")


def _check_count(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")


# --- R1: commitment, round signature, stream ---------------------------------------------


def commitment(server_seed: str) -> str:
    """Return the R1 commitment, published before the match so the seed cannot change later."""
    return _sha3_hex(server_seed)


def round_signature(server_seed: str, client_seeds: Sequence[str], nonce: int | str) -> str:
    """Return the R1 round signature that seeds the stream.

    ``client_seeds`` holds one seed (the reference program) or two, first-joined seat first.
    Seeds are used verbatim, exactly like the reference program; an int ``nonce`` is written
    in decimal.
    """
    if isinstance(client_seeds, str):
        raise TypeError("client_seeds must be a sequence of seeds, not a single str")
    if len(client_seeds) not in (1, 2):
        raise ValueError(f"expected 1 or 2 client seeds, got {len(client_seeds)}")
    if isinstance(nonce, bool) or not isinstance(nonce, (int, str)):
        raise TypeError(f"nonce must be an int or str, got {nonce!r}")
    return _sha3_hex(":".join([server_seed, *client_seeds, str(nonce)]))


class U32Source(Protocol):
    """Anything that yields 32-bit integers: a :class:`FairStream` or a test double."""

    def next_u32(self) -> int: ...


def pick_index(source: U32Source, options: int) -> int:
    """Return a uniform index in ``range(options)`` by R2 rejection sampling.

    Plain ``x % P`` would favour small indices whenever ``P`` does not divide ``2**32``;
    rejecting the top ``2**32 mod P`` values removes that bias.
    """
    if isinstance(options, bool) or not isinstance(options, int):
        raise TypeError(f"number of options must be an int, got {options!r}")
    if not 1 <= options <= U32_RANGE:
        raise ValueError(f"cannot pick uniformly among {options} options with 32-bit draws")
    accept_below = U32_RANGE // options * options
    while True:
        x = source.next_u32()
        if x < accept_below:
            return x % options


class FairStream:
    """The R1 stream: SHAKE256 of a round signature, read as big-endian uint32 values.

    Unbounded: the digest is recomputed at double length when it runs out (a SHAKE256 output
    is a prefix of any longer output from the same input), unlike the reference program's
    fixed 48 numbers. ``consumed`` counts integers read so far, so a verifier can check that a
    replay used the stream exactly as the server did. Also serves as the injected random
    source of server code via :meth:`pick` and :meth:`choice`.
    """

    __slots__ = ("_buffer", "_consumed", "_seed_bytes", "signature")

    def __init__(self, signature: str) -> None:
        _check_hex64("round signature", signature)
        self.signature = signature
        self._seed_bytes = signature.encode("utf-8")
        self._buffer = hashlib.shake_256(self._seed_bytes).digest(_INITIAL_STREAM_BYTES)
        self._consumed = 0

    @classmethod
    def from_seeds(
        cls, server_seed: str, client_seeds: Sequence[str], nonce: int | str
    ) -> FairStream:
        """Build the stream of a round straight from its revealed inputs (R1, R3)."""
        return cls(round_signature(server_seed, client_seeds, nonce))

    @property
    def consumed(self) -> int:
        """How many 32-bit integers have been read (R3 verifiers compare this)."""
        return self._consumed

    def next_u32(self) -> int:
        """Return integer ``consumed`` of the stream (bytes ``4i … 4i+3``, big-endian)."""
        start = 4 * self._consumed
        if start + 4 > len(self._buffer):
            length = max(2 * len(self._buffer), start + 4)
            self._buffer = hashlib.shake_256(self._seed_bytes).digest(length)
        self._consumed += 1
        return int.from_bytes(self._buffer[start : start + 4], "big")

    def pick(self, options: int) -> int:
        """Return a uniform index in ``range(options)`` (R2)."""
        return pick_index(self, options)

    def choice(self, options: Sequence[T]) -> T:
        """Return a uniform element of ``options``, already in canonical order (R2)."""
        return options[pick_index(self, len(options))]

    def __repr__(self) -> str:
        return f"FairStream({self.signature!r}, consumed={self._consumed})"


def pick_unique_positions(stream: U32Source, count: int, total: int) -> list[int]:
    """Draw ``count`` distinct 1-based positions out of ``total``, as the reference program does.

    Each draw picks (R2) an index into the list of positions still available and removes it;
    the result is sorted and shifted to start at 1. Kept identical to the seed's program so
    its output is a test vector for this module.
    """
    _check_count("count", count)
    _check_count("total", total)
    if count > total:
        raise ValueError(f"cannot draw {count} distinct positions out of {total}")
    available = list(range(total))
    result = [available.pop(pick_index(stream, len(available))) for _ in range(count)]
    return [position + 1 for position in sorted(result)]


# --- R2: canonical option order -----------------------------------------------------------


def canonical_cells(cells: int | Iterable[int]) -> list[int]:
    """Return cell indices (``row*8+col``) ascending: the R2 order of cell options.

    ``cells`` is either a 64-bit mask (bit ``i`` set = cell ``i``) or an iterable of cell
    indices. Duplicates are refused, since a repeated option would be drawn twice as often.
    """
    if isinstance(cells, bool):
        raise TypeError("a bool is not a cell mask")
    if isinstance(cells, int):
        if not 0 <= cells < 1 << BOARD_CELLS:
            raise ValueError(f"cell mask out of range: {cells:#x}")
        return [i for i in range(BOARD_CELLS) if cells >> i & 1]
    result = sorted(cells)
    for i, cell in enumerate(result):
        if isinstance(cell, bool) or not isinstance(cell, int):
            raise TypeError(f"cell must be an int, got {cell!r}")
        if not 0 <= cell < BOARD_CELLS:
            raise ValueError(f"cell out of range: {cell}")
        if i and result[i - 1] == cell:
            raise ValueError(f"duplicate cell: {cell}")
    return result


# --- R3b: mine commitments and the transcript hash ----------------------------------------


def new_salt(randbytes: Callable[[int], bytes], nbytes: int = SALT_BYTES) -> str:
    """Return a fresh R3b salt as lowercase hex; entropy comes from ``randbytes`` (injected).

    The server passes ``secrets.token_bytes``; tests pass a deterministic function.
    """
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 1:
        raise ValueError(f"salt length must be a positive int, got {nbytes!r}")
    raw = randbytes(nbytes)
    if len(raw) != nbytes:
        raise ValueError(f"randbytes returned {len(raw)} bytes, expected {nbytes}")
    return bytes(raw).hex()


def mine_commitment(salt_hex: str, match_id: str, seq: int, seat: int, cell: int) -> str:
    """Return the R3b commitment of one plant; the cell stays hidden until the salt is revealed.

    The encoding is given in the module docstring (version ``mine-duel/mine/1``).
    """
    if not isinstance(salt_hex, str) or _SALT.fullmatch(salt_hex) is None:
        raise ValueError(f"salt must be lowercase hex with an even number of digits: {salt_hex!r}")
    if not isinstance(match_id, str) or not match_id:
        raise ValueError("match_id must be a non-empty str")
    _check_count("seq", seq)
    _check_count("seat", seat)
    _check_count("cell", cell)
    if cell >= BOARD_CELLS:
        raise ValueError(f"cell out of range: {cell}")
    row, col = divmod(cell, BOARD_COLS)
    return _sha3_hex(f"{MINE_DOMAIN}|{match_id}|{seq}|{seat}|{row},{col}|{salt_hex}")


def transcript_start(match_id: str) -> str:
    """Return the initial R3b transcript hash, bound to the match so transcripts never mix."""
    if not isinstance(match_id, str) or not match_id:
        raise ValueError("match_id must be a non-empty str")
    return _sha3_hex(f"{TRANSCRIPT_DOMAIN}|{match_id}")


def chain(prev_hex: str, entry_hex: str) -> str:
    """Fold one mine commitment into the R3b transcript hash (order-sensitive by design)."""
    _check_hex64("previous transcript hash", prev_hex)
    _check_hex64("transcript entry", entry_hex)
    return _sha3_hex(f"{CHAIN_DOMAIN}|{prev_hex}|{entry_hex}")


def transcript_hash(match_id: str, entries: Iterable[str]) -> str:
    """Return the R3b transcript hash after ``entries`` (in plant order), for verifiers."""
    value = transcript_start(match_id)
    for entry in entries:
        value = chain(value, entry)
    return value
