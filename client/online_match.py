"""The ONLINE variant behind the :class:`~mineduel.client.controller.MatchController` interface.

The server decides everything (O6, O7): this object only mirrors what it says. It is fed the
server's typed ``MatchStart`` / ``State`` / ``MatchEnd`` messages by the
:class:`~mineduel.client.online_client.OnlineClient` and sends the local seat's actions through a
callback, so it holds no socket and never imports Twisted. The match screen reads it exactly as it
reads a CPU match, plus its :class:`~mineduel.client.controller.Capabilities`: the deadline, the
reveal and the record come from here; presence and rematch from the session that feeds it.

Time (display only): a deadline ``at`` is on the server's clock; at receipt it is mapped to the local
monotonic clock as ``clock() + (at - server_time)`` from the same message, so the countdown never
depends on the two clocks agreeing. Whether an action was late is the server's business (O6), and
pausing (a popup, a hidden window) changes nothing: the server's deadlines run on (U7).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace

from mineduel.client.controller import (
    Applied,
    BoardReveal,
    Capabilities,
    Ended,
    MatchEvent,
    MatchRatings,
    Notice,
    OpponentKind,
    PresenceSource,
    RatingChange,
    Refused,
    RematchSource,
    SeatRating,
    Timing,
)
from mineduel.client.errors import error_key
from mineduel.client.witness import WitnessJson
from mineduel.shared.rules.bitboard import COLS
from mineduel.shared.rules.engine import Action, ActionType, Outcome, Refusal
from mineduel.shared.rules.events import shows_cell
from mineduel.shared.rules.views import SeatView
from mineduel.shared.wire import board as wire_board
from mineduel.shared.wire.messages import MatchAction, MatchEnd, MatchStart, RecordJson, Resign, Reveal, Room, SeatInfo, State
from mineduel.shared.wire.names import ClientType, ErrorCode

#: Request codes from the server that are rule refusals the match screen already words (refusal.*).
ENGINE_REFUSALS = frozenset(r.value for r in Refusal)

SendAction = Callable[[MatchAction | Resign, Callable[[str], None]], None]


def _cell(value: object) -> int | None:
    """``[row, col]`` as the codec checked it → the cell index."""
    if isinstance(value, (list, tuple)) and len(value) == 2:
        row, col = value
        if isinstance(row, int) and isinstance(col, int):
            return row * COLS + col
    return None


def board_reveal(reveal: Reveal) -> BoardReveal:
    """O13 from the ``match_end`` layers (seat-relative already), as masks."""
    mask = wire_board.mask_of
    return BoardReveal(
        my_mines=mask(reveal.mines, "mx"),
        opponent_mines=mask(reveal.mines, "ox"),
        overlaps=mask(reveal.mines, "x"),
        my_markers=mask(reveal.markers, "m"),
        opponent_markers=mask(reveal.markers, "o"),
        right=mask(reveal.marker_correct, "y"),
        wrong=mask(reveal.marker_correct, "n"),
        ko_cell=_cell(reveal.ko_cell),
    )


def refusal_event(action: Action | None, code: str) -> Refused | Notice | None:
    """A refused request as the match screen hears it: a rule refusal for an action it words
    (``refusal.*``), else a notice; nothing for a stale state (a newer one is on its way)."""
    if action is not None and code in ENGINE_REFUSALS:
        return Refused(action, Refusal(code))
    if code == ErrorCode.STALE_STATE:
        return None
    return Notice(error_key(code), (("detail", code),))


class OnlineMatch:
    """One online match as the local seat sees it (V2); see the module docstring."""

    def __init__(self, start: MatchStart, *, clock: Callable[[], float], send: SendAction,
                 presence: PresenceSource | None = None, rematch: RematchSource | None = None,
                 witness: Callable[[], WitnessJson | None] = lambda: None,
                 room: Callable[[], Room | None] = lambda: None) -> None:
        self.match_id = start.match_id
        self.proof = MatchProof(self, witness)
        self._seat = start.seat
        self.start = start
        # The name the opponent gave (``match_start``), or "": the match screen's card shows it (issue 16).
        self.opponent_name = "".join(ch for ch in start.opponent_name if ch.isprintable())
        self.started_at = start.started
        self._clock = clock
        self._send = send
        self._view: SeatView | None = None
        self._events: list[MatchEvent] = []
        self.seq = 0
        self._seen_seq = 0  # events below this were already reported (a resume repeats history)
        self.deadline_local: float | None = None
        self._server_offset: float | None = None  # server_time - clock() at the last state
        self.end: MatchEnd | None = None
        self._reveal: BoardReveal | None = None
        self.closed = False
        self._capabilities = Capabilities(deadline=self, presence=presence, reveal=self, rematch=rematch,
                                          verify=self.proof, resign=self.resign)
        self.rating = MatchRating(self, room)
        self._rated_capabilities = replace(self._capabilities, rating=self.rating)

    # ----- fed by the OnlineClient ------------------------------------------------------------------
    def apply_state(self, msg: State) -> None:
        """A ``state`` for this match: the new view, its deadline, and the events as Applied."""
        if msg.seat != self._seat:
            raise ValueError("a state for another seat")
        view = wire_board.view_of(msg)
        now = self._clock()
        self._server_offset = msg.server_time - now
        self.deadline_local = None if msg.deadline is None else now + max(0.0, msg.deadline.at - msg.server_time)
        self._view = view
        self.seq = msg.seq
        me = self._seat
        for event in msg.events:
            if event.seq < self._seen_seq:
                continue
            self._seen_seq = event.seq + 1
            try:
                kind = ActionType(event.action)
            except ValueError:
                continue
            seat = me if event.by == "me" else 1 - me
            cell = _cell(event.cell) if shows_cell(kind, seat, me) else None  # V2: never the opponent's plant
            self._events.append(Applied(seat, kind, cell, event.auto))
        self._seen_seq = max(self._seen_seq, self.seq)

    def apply_end(self, msg: MatchEnd) -> None:
        """``match_end``: the fixed result, the full reveal and the record (O13, E1)."""
        if self.end is not None:
            return
        self.end = msg
        self._reveal = board_reveal(msg.reveal)
        self.deadline_local = None
        outcome = self.outcome or wire_board.outcome_of(msg.result, self._seat)
        self._events.append(Ended(outcome, msg.turns, msg.elapsed, self._reveal.ko_cell))

    # ----- MatchController ---------------------------------------------------------------------------
    @property
    def seat(self) -> int:
        return self._seat

    @property
    def opponent(self) -> OpponentKind:
        return OpponentKind.HUMAN

    @property
    def capabilities(self) -> Capabilities:
        """With the rating source exactly in a rated room (issue 20)."""
        return self._rated_capabilities if self.rating.rated() else self._capabilities

    @property
    def ready(self) -> bool:
        """A view has arrived (the first ``state`` follows ``match_start`` at once)."""
        return self._view is not None

    def view(self) -> SeatView:
        if self._view is None:
            raise RuntimeError("no state received yet")
        return self._view

    def submit(self, action: Action) -> None:
        if action.seat != self._seat:
            raise ValueError("only the local seat acts")
        message = MatchAction(ClientType(action.type.value), action.cell, self.match_id, self.seq)
        self._send(message, lambda code: self._refused(action, code))

    def resign(self) -> None:
        """O11: give up (either seat, any moment before the end)."""
        if self.outcome is None:
            self._send(Resign(self.match_id), lambda code: self._refused(None, code))

    def _refused(self, action: Action | None, code: str) -> None:
        event = refusal_event(action, code)
        if event is not None:
            self._events.append(event)

    def tell(self, notice: Notice) -> None:
        """The session has something to say during the match (a refused request, O14 and others)."""
        self._events.append(notice)

    def poll(self) -> list[MatchEvent]:
        events, self._events = self._events, []
        return events

    def update(self) -> None:
        """Nothing to do: the session feeds messages as they arrive."""

    def next_wakeup(self) -> float | None:
        """The next whole second of the countdown, so the seconds shown tick over on time."""
        if self.deadline_local is None or self.outcome is not None:
            return None
        left = self.deadline_local - self._clock()
        if left <= 0:
            return None
        frac = left - int(left)
        return self._clock() + (frac if frac > 1e-3 else 1.0)

    def set_paused(self, reason: str, paused: bool) -> None:
        """U7: a popup or a hidden window blocks input only; the server's deadlines keep running."""

    @property
    def opponent_to_move(self) -> bool:
        view = self._view
        return view is not None and view.outcome is None and view.to_move is not None and view.to_move != self._seat

    @property
    def outcome(self) -> Outcome | None:
        return None if self._view is None else self._view.outcome

    def timing(self) -> Timing:
        turn = self._view.turn if self._view is not None else 0
        if self.end is not None:
            return Timing(self.started_at, self.end.elapsed, self.end.turns, True)
        now = None if self._server_offset is None else self._clock() + self._server_offset  # the server's clock
        elapsed = 0.0 if now is None or not self.started_at else max(0.0, now - self.started_at)
        return Timing(self.started_at, elapsed, turn, False)

    def record_text(self) -> str | None:
        record = self.record()
        return None if record is None else json.dumps(record, ensure_ascii=False, indent=1)

    @property
    def record_name(self) -> str:
        return f"online-{self.match_id}"

    def close(self) -> None:
        self.closed = True

    # ----- capabilities ------------------------------------------------------------------------------
    def seconds_left(self) -> float | None:
        """Seconds left on the current deadline (display only), ``None`` when there is none."""
        if self.deadline_local is None or self.outcome is not None:
            return None
        return max(0.0, self.deadline_local - self._clock())

    def reveal(self) -> BoardReveal | None:
        return self._reveal

    def record(self) -> RecordJson | None:
        return None if self.end is None else self.end.record


def seat_rating(seat: SeatInfo | None) -> SeatRating | None:
    """A seat's rating from the room (sent once that seat's player identified, PROTOCOL.md §17)."""
    if seat is None or seat.rating is None:
        return None
    return SeatRating(seat.rating, bool(seat.provisional))


class MatchRating:
    """The match's rating capability: both seats' ratings from the room (before), mine after from
    ``match_end.rating``. Present only in a rated room (``room.rated``, or a ``match_end`` with a rating)."""

    def __init__(self, match: OnlineMatch, room: Callable[[], Room | None]) -> None:
        self.match = match
        self.room = room

    def _room(self) -> Room | None:
        room = self.room()
        return room if room is not None and room.room == self.match.start.room else None

    def rated(self) -> bool:
        end = self.match.end
        if end is not None and end.rating is not None:
            return True
        room = self._room()
        return room is not None and room.rated

    def ratings(self) -> MatchRatings:
        room = self._room()
        end = self.match.end
        change = None if end is None or end.rating is None else RatingChange(
            end.rating.before, end.rating.after, end.rating.change, end.rating.provisional, end.rating.unrated)
        if room is None:
            return MatchRatings(None, None, change)
        return MatchRatings(seat_rating(room.me), seat_rating(room.opponent), change)


class MatchProof:
    """The match's verify capability: the record the server sent and what this client saw of the
    match (its witness, client/witness.py), for the in-game Verify."""

    def __init__(self, match: OnlineMatch, witness: Callable[[], WitnessJson | None]) -> None:
        self.match = match
        self.witnessed = witness  # the session's witness of this match, None when it kept no complete one

    def record(self) -> RecordJson | None:
        return self.match.record()

    def witness(self) -> WitnessJson | None:
        return self.witnessed()
