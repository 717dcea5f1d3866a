"""One ONLINE match on the server: the rules engine plus provable fairness and its record.

No clock, no sockets, no storage: times arrive as arguments and entropy as a ``randbytes``
function, so the room logic (``rooms.py``) decides *when* things happen and this module only
what they do. Every accepted step becomes a record action (RECORD.md); plants are committed
(R3b) as they happen; every random choice comes from the match's :class:`FairStream` (R1, R2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mineduel.shared import fairness
from mineduel.shared.engine import Action, ActionType, GameState, Phase, Refusal, Variant
from mineduel.shared.record import FORMAT, action_json, result_json

RandBytes = Callable[[int], bytes]

OPENING = (Phase.OPEN_EXPLORE, Phase.OPEN_PLANT)
FAIRNESS_VERSION = 1


def draw_first(stream: fairness.FairStream) -> int:
    """O3/R2: index into the seats in join order of the seat that moves first."""
    return stream.pick(2)


@dataclass
class LiveMatch:
    """The server's whole truth about one match; only ``rooms.py`` may show parts of it."""

    id: str
    number: int  # R1 match nonce: 1 for the room's first match, then 2, 3, ...
    players: tuple[int, int]  # room seat ids of record seat 0 (first player) and 1
    join_order: tuple[int, int]  # record seats in join order (R1 client-seed order)
    server_seed: str
    client_seeds: tuple[str, str]  # in join order
    first_rule: str  # "draw" (O3) or "swap" (O14 rematch)
    started: float  # server-clock time
    started_wall: float  # Unix time, for people (E1)
    turn_seconds: float
    names: tuple[str, str] = ("", "")  # by record seat
    state: GameState = field(default_factory=lambda: GameState(Variant.ONLINE))
    actions: list[dict[str, Any]] = field(default_factory=list)
    salts: list[str] = field(default_factory=list)
    commitments: list[str] = field(default_factory=list)
    transcript: str = ""
    deadline: float | None = None
    ended: float | None = None
    ended_wall: float | None = None
    stream: fairness.FairStream = field(init=False)

    def __post_init__(self) -> None:
        self.stream = fairness.FairStream(self.signature)
        if not self.transcript:
            self.transcript = fairness.transcript_start(self.id)

    # ----- derived ---------------------------------------------------------------------
    @property
    def commitment(self) -> str:
        return fairness.commitment(self.server_seed)

    @property
    def signature(self) -> str:
        return fairness.round_signature(self.server_seed, list(self.client_seeds), self.number)

    @property
    def over(self) -> bool:
        return self.state.over

    @property
    def seq(self) -> int:
        """Number of record actions so far; the next action's index."""
        return len(self.actions)

    def record_seat(self, sid: int) -> int:
        return self.players.index(sid)

    # ----- starting ------------------------------------------------------------------------
    @classmethod
    def start(
        cls,
        *,
        match_id: str,
        number: int,
        seats_in_join_order: tuple[int, int],
        first_sid: int | None,
        server_seed: str,
        client_seeds: tuple[str, str],
        now: float,
        wall: float,
        turn_seconds: float,
        names_by_sid: dict[int, str] | None = None,
    ) -> LiveMatch:
        """A new match; ``first_sid`` ``None`` draws the first player from the stream (O3)."""
        a, b = seats_in_join_order
        match = cls(
            id=match_id,
            number=number,
            players=(a, b),
            join_order=(0, 1),
            server_seed=server_seed,
            client_seeds=client_seeds,
            first_rule="draw" if first_sid is None else "swap",
            started=now,
            started_wall=wall,
            turn_seconds=turn_seconds,
        )
        if first_sid is None:
            first_sid = seats_in_join_order[draw_first(match.stream)]
        if first_sid == a:
            match.players, match.join_order = (a, b), (0, 1)
        else:
            match.players, match.join_order = (b, a), (1, 0)
        names = names_by_sid or {}
        match.names = (names.get(match.players[0], ""), names.get(match.players[1], ""))
        match.deadline = now + turn_seconds  # O4: the first opening action
        return match

    # ----- changing ------------------------------------------------------------------------
    def apply(
        self, action: Action, *, at: float, randbytes: RandBytes, auto: bool = False
    ) -> Refusal | list[dict[str, Any]]:
        """Validate and apply one action; the new record entries, or the refusal (no change)."""
        before = (self.state.phase, self.state.to_move, self.state.turn)
        refusal = self.state.apply(action)
        if refusal is not None:
            return refusal
        entry = action_json(action, at=round(at, 3))
        if auto:
            entry["auto"] = True
        if action.type is ActionType.PLANT:
            assert action.cell is not None
            salt = fairness.new_salt(randbytes)
            commitment = fairness.mine_commitment(salt, self.id, self.seq, action.seat, action.cell)
            self.salts.append(salt)
            self.commitments.append(commitment)
            self.transcript = fairness.chain(self.transcript, commitment)
            entry["commitment"] = commitment
            entry["transcript"] = self.transcript
        self.actions.append(entry)
        after = (self.state.phase, self.state.to_move, self.state.turn)
        if self.state.over:
            self.deadline = None
            self.ended = at
        elif after != before and (before[0] in OPENING or after[2] != before[2]):
            self.deadline = at + self.turn_seconds  # O4 next opening step / O5 a new turn
        return [entry]

    def expire(self, at: float, randbytes: RandBytes) -> list[dict[str, Any]]:
        """O4/O5: the deadline at ``at`` ran out: timeout, and in the opening the auto-move."""
        seat = self.state.to_move
        assert seat is not None and not self.over
        opening = self.state.phase in OPENING
        entries = self._must(Action(seat, ActionType.TIMEOUT), at, randbytes, auto=True)
        if opening and not self.over:
            auto = self.state.opening_auto_action(self.stream)
            entries += self._must(auto, at, randbytes, auto=True)
        return entries  # apply() re-armed the deadline from ``at`` (O4 next step, O5 next turn)

    def end_by(self, kind: ActionType, seat: int, at: float, randbytes: RandBytes) -> list[dict[str, Any]]:
        """O11/O12: resign, disconnect or void."""
        return self._must(Action(seat, kind), at, randbytes, auto=kind is not ActionType.RESIGN)

    def _must(self, action: Action, at: float, randbytes: RandBytes, auto: bool) -> list[dict[str, Any]]:
        result = self.apply(action, at=at, randbytes=randbytes, auto=auto)
        if isinstance(result, Refusal):  # pragma: no cover - a server bug, never a user error
            raise AssertionError(f"server action {action} refused: {result}")
        return result

    # ----- rollback ------------------------------------------------------------------------
    def checkpoint(self) -> tuple[Any, ...]:
        return (
            self.state.copy(),
            len(self.actions),
            len(self.salts),
            self.transcript,
            self.deadline,
            self.ended,
            self.ended_wall,
            self.stream.consumed,
        )

    def rollback(self, cp: tuple[Any, ...]) -> None:
        state, n_actions, n_salts, self.transcript, self.deadline, self.ended, self.ended_wall, used = cp
        self.state = state
        del self.actions[n_actions:]
        del self.salts[n_salts:]
        del self.commitments[n_salts:]
        self.stream = advanced_stream(self.signature, used)

    # ----- the record ------------------------------------------------------------------------
    def fairness_json(self, *, reveal: bool) -> dict[str, Any]:
        """RULES.md §9 data; secrets (server seed, salts) only when ``reveal`` (after the end)."""
        out: dict[str, Any] = {
            "version": FAIRNESS_VERSION,
            "commitment": self.commitment,
            "client_seeds": list(self.client_seeds),
            "nonce": self.number,
            "first_player": self.first_rule,
            "join_order": list(self.join_order),
            "mine_commitments": list(self.commitments),
            "transcript": self.transcript,
        }
        if reveal:
            out["server_seed"] = self.server_seed
            out["signature"] = self.signature
            out["salts"] = list(self.salts)
            out["stream_used"] = self.stream.consumed
        return out

    def record(self, *, room: str) -> dict[str, Any]:
        """The full match record (RECORD.md) with ``fairness``, ``times`` and ``result``."""
        if not self.over:
            raise ValueError("a record is published only after the end (V4, R3)")
        assert self.ended is not None
        return {
            "format": FORMAT,
            "variant": "online",
            "match_id": self.id,
            "room": room,
            "players": [{"seat": s, "name": self.names[s]} for s in (0, 1)],
            "actions": [{k: v for k, v in a.items() if k not in ("commitment", "transcript")} for a in self.actions],
            "fairness": self.fairness_json(reveal=True),
            "times": {
                "started": round(self.started_wall, 3),
                "ended": round(self.ended_wall if self.ended_wall is not None else self.started_wall + (self.ended - self.started), 3),
                "elapsed": round(self.ended - self.started, 3),
                "turns": self.state.turn,
                "clock_started": round(self.started, 3),
                "clock_ended": round(self.ended, 3),
                "turn_seconds": self.turn_seconds,
            },
            "result": result_json(self.state),
        }

    # ----- persistence -------------------------------------------------------------------------
    def to_blob(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "number": self.number,
            "players": list(self.players),
            "join_order": list(self.join_order),
            "server_seed": self.server_seed,
            "client_seeds": list(self.client_seeds),
            "first": self.first_rule,
            "started": self.started,
            "started_wall": self.started_wall,
            "turn_seconds": self.turn_seconds,
            "names": list(self.names),
            "salts": list(self.salts),
            "deadline": self.deadline,
            "ended": self.ended,
            "ended_wall": self.ended_wall,
            "stream_used": self.stream.consumed,
        }

    @classmethod
    def from_blob(cls, blob: dict[str, Any], actions: list[dict[str, Any]]) -> LiveMatch:
        """Rebuild a match by replaying its stored actions through the engine."""
        from mineduel.shared.record import from_json

        match = cls(
            id=blob["id"],
            number=blob["number"],
            players=tuple(blob["players"]),  # type: ignore[arg-type]
            join_order=tuple(blob["join_order"]),  # type: ignore[arg-type]
            server_seed=blob["server_seed"],
            client_seeds=tuple(blob["client_seeds"]),  # type: ignore[arg-type]
            first_rule=blob["first"],
            started=blob["started"],
            started_wall=blob["started_wall"],
            turn_seconds=blob["turn_seconds"],
            names=tuple(blob.get("names", ("", ""))),  # type: ignore[arg-type]
        )
        record = from_json({"format": FORMAT, "variant": "online", "actions": actions})
        salts = blob["salts"]
        for index, action in enumerate(record.actions):
            if match.state.apply(action) is not None:
                raise ValueError(f"stored match {match.id}: action {index} is refused on replay")
            entry = dict(actions[index])
            if action.type is ActionType.PLANT:
                salt = salts[len(match.salts)]
                assert action.cell is not None
                commitment = fairness.mine_commitment(salt, match.id, index, action.seat, action.cell)
                match.salts.append(salt)
                match.commitments.append(commitment)
                match.transcript = fairness.chain(match.transcript, commitment)
            match.actions.append(entry)
        match.deadline = blob["deadline"]
        match.ended = blob["ended"]
        match.ended_wall = blob.get("ended_wall")
        match.stream = advanced_stream(match.signature, blob["stream_used"])
        return match


def advanced_stream(signature: str, used: int) -> fairness.FairStream:
    """A stream that has already given ``used`` integers."""
    stream = fairness.FairStream(signature)
    for _ in range(used):
        stream.next_u32()
    return stream
