"""Generators of match records (RECORD.md) for property and differential tests.

A record is built by playing a :class:`~reference_rules.RefMatch` (the independent oracle, never
the engine under test): each step is either a legal move chosen from the oracle's state by a
per-seat *style* (how it explores, plants and marks), or — with a per-record probability — an
action meant to be refused (wrong seat, wrong phase, revealed / marked / own-mine cell, used
quota, someone else's marker, an ONLINE-only action in a CPU record, a timeout by the seat not to
move, anything after the end). ONLINE records also get timeouts (an opening timeout is followed
by its ``"auto": true`` move, RECORD.md) and resign / disconnect / void endings. The styles are
chosen so that every ending of RULES.md §6–7 occurs (``test_replay`` checks the coverage).

The same generator runs on two sources of choices: a seeded :class:`random.Random` (thousands
of records fast, for the differential test) and Hypothesis' ``draw`` (shrinkable, for properties).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from hypothesis import strategies as st

from support.reference_rules import (
    ALL_CELLS,
    ALL_TYPES,
    FORMAT,
    NORMAL_PHASES,
    RefMatch,
    neighbours,
)

T = TypeVar("T")
Cell = tuple[int, int]
RawAction = tuple[int, str, "Cell | None"]

MAX_ACTIONS = 600
"""A guard only: the rules end every match long before (see test_engine_properties)."""


class Chooser(Protocol):
    """A source of choices: ``below(n)`` in ``range(n)``, ``chance(pct)`` true with ``pct`` %."""

    def below(self, n: int) -> int: ...

    def chance(self, pct: int) -> bool: ...


class RandomChooser:
    """Choices from a seeded :class:`random.Random` (deterministic, fast)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def below(self, n: int) -> int:
        return self.rng.randrange(n)

    def chance(self, pct: int) -> bool:
        return self.rng.randrange(100) < pct


_INTEGERS: dict[int, st.SearchStrategy[int]] = {}


def _integers_below(n: int) -> st.SearchStrategy[int]:
    if n not in _INTEGERS:  # building a strategy per draw costs more than the draw
        _INTEGERS[n] = st.integers(0, n - 1)
    return _INTEGERS[n]


class DrawChooser:
    """Choices from Hypothesis; both shrink towards 0 / ``False``."""

    def __init__(self, draw: Callable[[st.SearchStrategy[Any]], Any]) -> None:
        self.draw = draw

    def below(self, n: int) -> int:
        return int(self.draw(_integers_below(n)))

    def chance(self, pct: int) -> bool:
        return bool(self.draw(_integers_below(100)) >= 100 - pct)


def pick(ch: Chooser, items: Sequence[T]) -> T:
    return items[ch.below(len(items))]


# ----- styles ---------------------------------------------------------------------------------
EXPLORE_STYLES = ("safe", "safe", "safe", "any", "seek_ko")
PLANT_STYLES = ("any", "overlap", "far", "near", "crowd")
FLAG_STYLES = ("any", "correct", "correct", "wrong", "bluff", "bluff", "explorable")


@dataclass(frozen=True)
class SeatStyle:
    explore: str
    plant: str
    flag: str
    flag_pct: int
    unflag_pct: int


@dataclass(frozen=True)
class Style:
    variant: str
    seats: tuple[SeatStyle, SeatStyle]
    illegal_pct: int
    timeout_pct: int
    ending: str | None  # ONLINE: "resign" / "disconnect" / "void" inserted at ending_step
    ending_seat: int
    ending_step: int
    tail: int  # actions appended after the end
    cut: int | None  # stop here: a record of a match still in progress
    decorate: bool  # add keys replay must ignore


def draw_style(ch: Chooser, variant: str | None = None) -> Style:
    if variant is None:
        variant = pick(ch, ("cpu", "online"))
    # "Patient" CPU players explore only safe cells and mark mines (theirs or the opponent's):
    # the matches last long and end in the C1/C2 draws rather than in a KO.
    patient = variant == "cpu" and ch.chance(40)
    seats = tuple(
        SeatStyle(
            explore="safe" if patient else pick(ch, EXPLORE_STYLES),
            plant=pick(ch, PLANT_STYLES),
            flag=pick(ch, ("correct", "bluff")) if patient else pick(ch, FLAG_STYLES),
            flag_pct=100 if patient else pick(ch, (0, 20, 60, 100, 100, 100)),
            unflag_pct=pick(ch, (0, 0, 10, 40)),
        )
        for _ in range(2)
    )
    online = variant == "online"
    ending = pick(ch, (None, None, None, "resign", "disconnect", "void")) if online else None
    return Style(
        variant=variant,
        seats=seats,  # type: ignore[arg-type]
        illegal_pct=pick(ch, (0, 3, 10, 30)),
        timeout_pct=pick(ch, (0, 0, 5, 20)) if online else 0,
        ending=ending,
        ending_seat=ch.below(2),
        ending_step=ch.below(120),
        tail=pick(ch, (0, 0, 1, 3)),
        cut=ch.below(150) if ch.chance(10) else None,
        decorate=ch.chance(20),
    )


# ----- choosing moves from the oracle's state --------------------------------------------------
def _revealed_neighbour(m: RefMatch, cell: Cell) -> bool:
    return any(m.square(n).revealed for n in neighbours(*cell))


def _prefer(ch: Chooser, preferred: list[Cell], fallback: list[Cell]) -> Cell:
    return pick(ch, preferred) if preferred else pick(ch, fallback)


def choose_explore(ch: Chooser, m: RefMatch, seat: int, style: SeatStyle) -> Cell:
    options = m.explorable(seat)
    safe = [c for c in options if not m.square(c).mine[1 - seat]]
    deadly = [c for c in options if m.square(c).mine[1 - seat]]
    if style.explore == "safe":
        return _prefer(ch, safe, options)
    if style.explore == "seek_ko" and deadly and ch.chance(30):
        return pick(ch, deadly)
    return pick(ch, options)


def choose_plant(ch: Chooser, m: RefMatch, seat: int, style: SeatStyle) -> Cell:
    options = m.plantable(seat)
    if style.plant == "overlap":
        return _prefer(ch, [c for c in options if m.square(c).mine[1 - seat]], options)
    if style.plant == "far":
        return _prefer(ch, [c for c in options if not _revealed_neighbour(m, c)], options)
    if style.plant == "near":
        return _prefer(ch, [c for c in options if _revealed_neighbour(m, c)], options)
    if style.plant == "crowd":  # avoid the opponent's mines: own mines fill the board
        return _prefer(ch, [c for c in options if not m.square(c).mine[1 - seat]], options)
    return pick(ch, options)


def choose_flag(ch: Chooser, m: RefMatch, seat: int, style: SeatStyle) -> Cell:
    options = [sq.cell for sq in m.squares if not sq.revealed and sq.marker is None]
    if style.flag == "correct":
        return _prefer(ch, [c for c in options if m.square(c).mine[1 - seat]], options)
    if style.flag == "wrong":
        return _prefer(ch, [c for c in options if not m.square(c).mine[1 - seat]], options)
    if style.flag == "bluff":
        return _prefer(ch, [c for c in options if m.square(c).mine[seat]], options)
    if style.flag == "explorable":  # blocks cells: drives C1.3 / C2 holds and all-flagged
        return _prefer(ch, [c for c in options if not m.square(c).mine[seat]], options)
    return pick(ch, options)


def legal_move(ch: Chooser, m: RefMatch, style: Style) -> RawAction:
    """One legal action for the seat to move, following its style."""
    seat = m.to_move
    assert seat is not None
    ss = style.seats[seat]
    phase = m.phase
    if phase == "open_explore":
        return (seat, "explore", pick(ch, m.explorable(seat)))
    if phase == "open_plant":
        return (seat, "plant", choose_plant(ch, m, seat, ss))
    own_markers = [sq.cell for sq in m.squares if sq.marker == seat]
    quota = not m.placed_marker_this_turn
    flaggable = any(not sq.revealed and sq.marker is None for sq in m.squares)
    if quota and flaggable and ch.chance(ss.flag_pct // 2 if phase != "end_wait" else ss.flag_pct):
        return (seat, "flag", choose_flag(ch, m, seat, ss))
    if own_markers and ch.chance(ss.unflag_pct):
        return (seat, "unflag", pick(ch, own_markers))
    if phase == "end_wait":
        return (seat, "end_turn", None)
    needed = m.explorable(seat) if phase == "explore" else m.plantable(seat)
    if not needed:  # C1.3 / C2 hold: remove one's own marker on a recoverable cell
        return (seat, "unflag", pick(ch, m.recoverable(seat)))
    if phase == "explore":
        return (seat, "explore", choose_explore(ch, m, seat, ss))
    return (seat, "plant", choose_plant(ch, m, seat, ss))


def refused_move(ch: Chooser, m: RefMatch) -> RawAction:
    """An action aimed at one of RECORD.md's refusal kinds (the oracle decides what it is)."""
    seat = m.to_move if m.to_move is not None else ch.below(2)
    other = 1 - seat
    unrevealed = [sq.cell for sq in m.squares if not sq.revealed]
    revealed = [sq.cell for sq in m.squares if sq.revealed]
    marked = [sq.cell for sq in m.squares if sq.marker is not None]
    own_mines = [sq.cell for sq in m.squares if sq.mine[seat]]
    kind = ch.below(12)
    if kind == 0:  # F4: wrong seat
        return (other, pick(ch, ("explore", "plant", "flag", "unflag", "end_turn")), pick(ch, ALL_CELLS))
    if kind == 1:  # wrong phase
        wrong = {
            "open_explore": ("plant", "flag", "unflag", "end_turn"),
            "open_plant": ("explore", "flag", "unflag", "end_turn"),
            "explore": ("plant", "end_turn"),
            "plant": ("explore", "end_turn"),
            "end_wait": ("explore", "plant"),
        }.get(m.phase, ALL_TYPES)
        return (seat, pick(ch, wrong), pick(ch, unrevealed or ALL_CELLS))
    if kind == 2 and revealed:
        return (seat, pick(ch, ("explore", "plant", "flag", "unflag")), pick(ch, revealed))
    if kind == 3 and marked:
        return (seat, pick(ch, ("explore", "plant", "flag")), pick(ch, marked))
    if kind == 4 and own_mines:
        return (seat, pick(ch, ("explore", "plant")), pick(ch, own_mines))
    if kind == 5:  # A3: a second new marker (a refusal only once the quota is used)
        return (seat, "flag", pick(ch, unrevealed or ALL_CELLS))
    if kind == 6:  # A4: someone else's marker, or no marker at all
        theirs = [c for c in marked if m.square(c).marker == other]
        return (seat, "unflag", pick(ch, theirs or ALL_CELLS))
    if kind == 7:  # ONLINE-only actions (refused in CPU records; a timeout by the wrong seat)
        if m.variant == "cpu":
            return (ch.below(2), pick(ch, ("timeout", "resign", "disconnect", "void")), None)
        return (other, "timeout", None)
    if kind == 8 and m.over:  # after the end: even a would-be KO is refused
        theirs = [sq.cell for sq in m.squares if sq.mine[other]]
        return (seat, "explore", pick(ch, theirs or ALL_CELLS))
    return random_action(ch, m.variant)


def random_action(ch: Chooser, variant: str) -> RawAction:
    """Anything at all: any seat, any type of the variant (or not), any cell."""
    kind = pick(ch, ALL_TYPES) if variant == "online" or ch.chance(20) else pick(ch, ALL_TYPES[:5])
    return (ch.below(2), kind, pick(ch, ALL_CELLS))


# ----- records --------------------------------------------------------------------------------
def action_dict(action: RawAction, ch: Chooser | None = None, **extra: Any) -> dict[str, Any]:
    seat, kind, cell = action
    out: dict[str, Any] = {"seat": seat, "type": kind}
    if kind in ("explore", "plant", "flag", "unflag"):
        assert cell is not None
        out["cell"] = [cell[0], cell[1]]
    elif ch is not None and cell is not None and ch.chance(5):
        out["cell"] = pick(ch, ([cell[0], cell[1]], [9, 9], "junk"))  # ignored off cell actions
    out.update(extra)
    return out


def generate_record(ch: Chooser, variant: str | None = None) -> dict[str, Any]:
    """One record (a JSON-ready dict) following a drawn :class:`Style`."""
    style = draw_style(ch, variant)
    m = RefMatch(style.variant)
    actions: list[dict[str, Any]] = []

    def add(action: RawAction, **extra: Any) -> None:
        if style.decorate and ch.chance(10):
            extra["at"] = 1000.0 + len(actions)
        actions.append(action_dict(action, ch, **extra))
        m.act(*action)

    while not m.over and len(actions) < MAX_ACTIONS:
        if style.cut is not None and len(actions) >= style.cut:
            break
        if style.ending is not None and len(actions) >= style.ending_step:
            add((style.ending_seat, style.ending, None))
            break
        if style.illegal_pct and ch.chance(style.illegal_pct):
            add(refused_move(ch, m))
            continue
        if style.timeout_pct and ch.chance(style.timeout_pct):
            seat = m.to_move
            assert seat is not None
            opening = m.phase in ("open_explore", "open_plant")
            add((seat, "timeout", None))
            if opening:  # O4: the server's auto-move follows, by the same seat
                kind = "explore" if m.phase == "open_explore" else "plant"
                add((seat, kind, pick(ch, m.explorable(seat))), auto=True)
            continue
        add(legal_move(ch, m, style))
    for _ in range(style.tail):
        add(random_action(ch, style.variant) if ch.chance(50) else refused_move(ch, m))
    record: dict[str, Any] = {"format": FORMAT, "variant": style.variant, "actions": actions}
    if style.decorate:
        record["fairness"] = {"commitment": "00" * 32, "nonce": 1}
        record["players"] = ["a", "b"]
    return record


def random_records(seed: int, count: int, variant: str | None = None) -> list[dict[str, Any]]:
    """``count`` records from a seeded generator (the same list every run)."""
    rng = random.Random(seed)
    return [generate_record(RandomChooser(rng), variant) for _ in range(count)]


@st.composite
def records(draw: Callable[[st.SearchStrategy[Any]], Any], variant: str | None = None) -> dict[str, Any]:
    """Hypothesis strategy: one record, shrinkable through its choices."""
    return generate_record(DrawChooser(draw), variant)


@st.composite
def legal_games(
    draw: Callable[[st.SearchStrategy[Any]], Any], variant: str, timeouts: bool = False
) -> list[dict[str, Any]]:
    """Hypothesis strategy: the actions of a whole match of legal play (plus ONLINE timeouts)."""
    ch = DrawChooser(draw)
    style = draw_style(ch, variant)
    style = Style(
        variant=variant,
        seats=style.seats,
        illegal_pct=0,
        timeout_pct=style.timeout_pct if timeouts else 0,
        ending=None,
        ending_seat=0,
        ending_step=0,
        tail=0,
        cut=None,
        decorate=False,
    )
    m = RefMatch(variant)
    out: list[dict[str, Any]] = []
    while not m.over and len(out) < MAX_ACTIONS:
        if style.timeout_pct and ch.chance(style.timeout_pct):
            seat = m.to_move
            assert seat is not None
            opening = m.phase in ("open_explore", "open_plant")
            out.append(action_dict((seat, "timeout", None)))
            m.act(seat, "timeout")
            if opening:
                kind = "explore" if m.phase == "open_explore" else "plant"
                action = (seat, kind, pick(ch, m.explorable(seat)))
                out.append(action_dict(action, auto=True))
                m.act(*action)
            continue
        action = legal_move(ch, m, style)
        out.append(action_dict(action))
        m.act(*action)
    return out


def normal_phase(phase: str) -> bool:
    return phase in NORMAL_PHASES


# ----- strangers' guesses (tests/test_server_leak.py) ---------------------------------------------
REAL_CODE = "<real>"
REAL_CODE_LOWER = "<real:lower>"
REAL_CODE_PADDED = "<real:padded>"
"""Placeholders for the room code (or match id) a test guards: the code as shared, typed in lower
case, or with spaces around it (all accepted, PROTOCOL.md §2); :func:`resolve_guess` fills them in."""

ROOM_CODE_CHARS = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
_HEX = "0123456789abcdef"


def guessed_room_codes() -> st.SearchStrategy[str]:
    """A room code someone without an invite might send: the real one, a well-formed guess, or junk."""
    return st.one_of(
        st.sampled_from((REAL_CODE, REAL_CODE_LOWER, REAL_CODE_PADDED)),
        st.text(alphabet=ROOM_CODE_CHARS, min_size=6, max_size=6),
        st.text(max_size=8),
    )


def guessed_tokens() -> st.SearchStrategy[str]:
    """A session token guess: 64 lowercase hex digits (well-formed, wrong) or something malformed."""
    return st.one_of(st.text(alphabet=_HEX, min_size=64, max_size=64), st.text(max_size=70))


def guessed_match_ids() -> st.SearchStrategy[str]:
    """A match id guess: the real one (placeholder), 16 hex digits, or something malformed."""
    return st.one_of(st.just(REAL_CODE), st.text(alphabet=_HEX, min_size=16, max_size=16), st.text(max_size=18))


def stranger_requests() -> st.SearchStrategy[dict[str, Any]]:
    """What a connection that holds no seat may try: peek, join, resume, get_record (guessed values), ping."""
    return st.one_of(
        st.builds(lambda room: {"type": "peek", "room": room}, guessed_room_codes()),
        st.builds(lambda room: {"type": "join", "room": room, "name": "eve"}, guessed_room_codes()),
        st.builds(lambda room, token: {"type": "resume", "room": room, "token": token}, guessed_room_codes(), guessed_tokens()),
        st.builds(lambda match_id: {"type": "get_record", "match_id": match_id}, guessed_match_ids()),
        st.just({"type": "ping", "id": "s"}),
    )


def resolve_guess(value: Any, real: str) -> Any:
    """Fill a placeholder from :func:`guessed_room_codes` / :func:`guessed_match_ids` with ``real``."""
    if value == REAL_CODE:
        return real
    if value == REAL_CODE_LOWER:
        return real.lower()
    if value == REAL_CODE_PADDED:
        return f"  {real} "
    return value
