"""The ONLINE variant behind the :class:`~mineduel.client.controller.MatchController` interface.

The server decides everything (O6, O7): this object only mirrors what it says. It is fed the
server's ``match_start`` / ``state`` / ``match_end`` messages by the
:class:`~mineduel.client.online_client.OnlineClient` and sends the local seat's actions through a
callback, so it holds no socket and never imports Twisted. The match screen reads it exactly as it
reads a CPU match.

Time (display only): a deadline ``at`` is on the server's clock; at receipt it is mapped to the local
monotonic clock as ``clock() + (at - server_time)`` from the same message, so the countdown never
depends on the two clocks agreeing. Whether an action was late is the server's business (O6), and
pausing (a popup, a hidden window) changes nothing: the server's deadlines run on (U7).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from mineduel.client.controller import Applied, Ended, MatchEvent, OpponentKind, Refused, Timing
from mineduel.shared.wire import protocol
from mineduel.shared.rules.bitboard import CELLS, COLS
from mineduel.shared.rules.engine import Action, ActionType, Outcome, Reason, Refusal
from mineduel.shared.rules.views import SeatView

#: Request codes from the server that are rule refusals the match screen already words (refusal.*).
ENGINE_REFUSALS = frozenset(r.value for r in Refusal)

SendAction = Callable[[dict[str, Any], Callable[[str], None]], None]


def _cell(value: Any) -> int | None:
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value):
        row, col = value
        if 0 <= row < 8 and 0 <= col < 8:
            return row * COLS + col
    return None


def _layer(rows: Any) -> list[str]:
    if not (isinstance(rows, list) and len(rows) == 8 and all(isinstance(r, str) and len(r) == 8 for r in rows)):
        raise ValueError("a board layer must be 8 strings of 8 characters")
    return rows


class Reveal:
    """O13, seat-relative: every mine with its owner, overlaps, and each marker right or wrong."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        mines = _layer(data["mines"])
        markers = _layer(data["markers"])
        correct = _layer(data["marker_correct"])
        self.my_mines = self.opponent_mines = self.overlaps = 0
        self.my_markers = self.opponent_markers = self.right = self.wrong = 0
        for c in range(CELLS):
            r, k = divmod(c, COLS)
            b = 1 << c
            m = mines[r][k]
            if m in "mx":
                self.my_mines |= b
            if m in "ox":
                self.opponent_mines |= b
            if m == "x":
                self.overlaps |= b
            if markers[r][k] == "m":
                self.my_markers |= b
            elif markers[r][k] == "o":
                self.opponent_markers |= b
            if correct[r][k] == "y":
                self.right |= b
            elif correct[r][k] == "n":
                self.wrong |= b
        self.ko_cell = _cell(data.get("ko_cell"))


class OnlineMatch:
    """One online match as the local seat sees it (V2); see the module docstring."""

    def __init__(self, start: Mapping[str, Any], *, clock: Callable[[], float], send: SendAction) -> None:
        self.match_id: str = protocol.match_id(start["match_id"])
        self._seat = int(start["seat"])
        if self._seat not in (0, 1):
            raise ValueError("seat must be 0 or 1")
        self.start = dict(start)
        self.first_player_rule = str(start.get("first_player_rule", "draw"))
        self.commitment = str(start.get("commitment", ""))
        self.turn_seconds = float(start.get("turn_seconds", protocol.TURN_SECONDS))
        self.started_at = float(start.get("started", 0.0))
        self._clock = clock
        self._send = send
        self._view: SeatView | None = None
        self._events: list[MatchEvent] = []
        self.notices: list[str] = []  # server refusals that are not rule refusals (error codes)
        self.seq = 0
        self._seen_seq = 0  # events below this were already reported (a resume repeats history)
        self.deadline_local: float | None = None
        self._server_offset: float | None = None  # server_time - clock() at the last state
        self.end: dict[str, Any] | None = None
        self.reveal: Reveal | None = None
        self._ended = False
        self.closed = False

    # ----- fed by the OnlineClient ------------------------------------------------------------------
    def apply_state(self, msg: Mapping[str, Any]) -> None:
        """A ``state`` for this match: the new view, its deadline, and the events as Applied."""
        view = protocol.view_from_state(msg)
        if view.seat != self._seat:
            raise ValueError("a state for another seat")
        now = self._clock()
        server_time = float(msg["server_time"])
        self._server_offset = server_time - now
        deadline = msg.get("deadline")
        self.deadline_local = None if deadline is None else now + max(0.0, float(deadline["at"]) - server_time)
        self._view = view
        self.seq = int(msg["seq"])
        me = self._seat
        for event in msg.get("events") or []:
            seq = int(event.get("seq", 0))
            if seq < self._seen_seq:
                continue
            self._seen_seq = seq + 1
            try:
                kind = ActionType(event["action"])
            except ValueError:
                continue
            seat = me if event.get("by") == "me" else 1 - me
            cell = _cell(event.get("cell"))
            if kind is ActionType.PLANT and seat != me:
                cell = None  # R3b: the opponent's plant never names its cell anyway
            self._events.append(Applied(seat, kind, cell))
        self._seen_seq = max(self._seen_seq, self.seq)

    def apply_end(self, msg: Mapping[str, Any]) -> None:
        """``match_end``: the fixed result, the full reveal and the record (O13, E1)."""
        if self.end is not None:
            return
        self.end = dict(msg)
        self.reveal = Reveal(msg["reveal"])
        self.deadline_local = None
        outcome = self.outcome
        if outcome is None:
            outcome = outcome_from_result(msg["result"], self._seat)
        if not self._ended:
            self._ended = True
            self._events.append(Ended(outcome, int(msg.get("turns", 0)), float(msg.get("elapsed", 0.0)), self.reveal.ko_cell))

    # ----- MatchController ---------------------------------------------------------------------------
    @property
    def seat(self) -> int:
        return self._seat

    @property
    def opponent(self) -> OpponentKind:
        return OpponentKind.HUMAN

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
        message: dict[str, Any] = {"type": action.type.value, "match_id": self.match_id, "seq": self.seq}
        if action.cell is not None:
            message["cell"] = protocol.cell_json(action.cell)
        self._send(message, lambda code: self._refused(action, code))

    def resign(self) -> None:
        """O11: give up (either seat, any moment before the end)."""
        if self.outcome is None:
            self._send({"type": "resign", "match_id": self.match_id}, lambda code: self._refused(None, code))

    def _refused(self, action: Action | None, code: str) -> None:
        if action is not None and code in ENGINE_REFUSALS:
            self._events.append(Refused(action, Refusal(code)))
        elif code != "stale_state":  # a newer state is on its way: act on that one
            self.notices.append(code)

    def poll(self) -> list[MatchEvent]:
        events, self._events = self._events, []
        return events

    def update(self) -> None:
        """Nothing to do: the OnlineClient feeds messages as they arrive."""

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

    def seconds_left(self) -> float | None:
        """Seconds left on the current deadline (display only), ``None`` when there is none."""
        if self.deadline_local is None or self.outcome is not None:
            return None
        return max(0.0, self.deadline_local - self._clock())

    def server_now(self) -> float | None:
        return None if self._server_offset is None else self._clock() + self._server_offset

    def timing(self) -> Timing:
        turn = self._view.turn if self._view is not None else 0
        if self.end is not None:
            return Timing(self.started_at, float(self.end.get("elapsed", 0.0)), int(self.end.get("turns", turn)), True)
        now = self.server_now()
        elapsed = 0.0 if now is None or not self.started_at else max(0.0, now - self.started_at)
        return Timing(self.started_at, elapsed, turn, False)

    def record(self) -> dict[str, Any] | None:
        if self.end is None or not isinstance(self.end.get("record"), dict):
            return None
        return self.end["record"]

    def record_text(self) -> str | None:
        record = self.record()
        return None if record is None else json.dumps(record, ensure_ascii=False, indent=1)

    @property
    def record_name(self) -> str:
        return f"online-{self.match_id}"

    def close(self) -> None:
        self.closed = True


def outcome_from_result(result: Mapping[str, Any], me: int) -> Outcome:
    """The engine's :class:`Outcome` (record seats) from a seat-relative ``result`` object."""
    winner_rel = result.get("winner")
    winner = None if winner_rel is None else (me if winner_rel == "me" else 1 - me)
    scores = result.get("scores")
    pair = None
    if scores is not None:
        pair = (scores["me"], scores["opponent"]) if me == 0 else (scores["opponent"], scores["me"])
    return Outcome(winner, Reason(result["reason"]), pair)
