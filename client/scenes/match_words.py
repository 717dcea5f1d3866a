"""What the match screen says: the instruction, what just happened, the ending, the banner.

Words for CPU and online matches alike; the differences come from the controller's labels
(``OpponentKind``) and its capabilities (presence, rematch), and the result from the engine's
``seat_result`` — no rule is worked out here again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mineduel.client.controller import Applied, Ended, OpponentKind
from mineduel.client.ui import palette
from mineduel.shared.rules.bitboard import COLS
from mineduel.shared.rules.engine import ActionType, Phase, Reason
from mineduel.shared.rules.views import SeatView, seat_result

if TYPE_CHECKING:
    from mineduel.client.scenes.game import GameScene

# How the status line names each applied action (TIMEOUT: online only, O4/O5).
EVENT_VERBS: dict[ActionType, str] = {ActionType.EXPLORE: "explored", ActionType.PLANT: "planted",
                                      ActionType.FLAG: "flagged", ActionType.UNFLAG: "unflagged",
                                      ActionType.END_TURN: "ended", ActionType.TIMEOUT: "timeout"}


# The status line's second line: how much each kind of message outranks the others, and how long it
# stays readable before a lower-ranked one may replace it (seconds). A refusal ("It's not your turn")
# stays long enough to be read before the CPU's next step replaces it; the server's move made for the
# player (O4) outranks any refusal; the end outranks everything.
RANKS = {"event": 0, "refusal": 1, "auto": 2, "end": 3}
HOLD = {"event": 0.0, "refusal": 1.6, "auto": 3.0, "end": 0.0}


@dataclass(frozen=True, slots=True)
class Message:
    """One line to say: a catalog key and its parameters; ``kind`` "refusal" draws as a warning."""

    key: str
    params: Mapping[str, object]
    kind: str  # "event" | "refusal"
    rank: str  # a key of RANKS
    since: float  # when it was first shown (or asked for, while it waits)

    def held(self, now: float) -> bool:
        """Still inside its minimum display time: only an equal or higher rank may replace it."""
        return now < self.since + HOLD[self.rank]


class MessageLine:
    """A tiny queue for the status line: what is shown, and at most one message waiting its turn.

    A message replaces the shown one at once when it ranks at least as high, or when the shown one
    has been readable for its minimum time; otherwise it waits (the newest waiting one wins; a
    refusal that waited longer than it would have been shown is dropped — it is no longer news).
    A refusal shown shakes the line (``shake_at``); ``changed`` is told whenever the line changes.
    """

    def __init__(self, clock: Callable[[], float], changed: Callable[[], None] = lambda: None) -> None:
        self.current: Message | None = None
        self.pending: Message | None = None
        self.shake_at: float | None = None
        self._clock = clock
        self._changed = changed

    def clear(self) -> None:
        self.current = self.pending = None
        self._changed()

    def say(self, key: str, params: Mapping[str, object], kind: str, rank: str | None = None) -> bool:
        """Show (True) or queue (False) one message; ``rank`` defaults to ``kind``."""
        now = self._clock()
        rank = rank or kind
        message = Message(key, dict(params), kind, rank, now)
        current = self.current
        self._changed()
        if current is None or RANKS[rank] >= RANKS[current.rank] or not current.held(now):
            self.current, self.pending = message, None
            if kind == "refusal":
                self.shake_at = now
            return True
        if self.pending is None or RANKS[rank] >= RANKS[self.pending.rank]:
            self.pending = message
        return False

    def update(self) -> bool:
        """Promote the waiting message once the shown one has had its time; True when the line changed."""
        now = self._clock()
        pending, current = self.pending, self.current
        if pending is None or (current is not None and current.held(now)):
            return False
        self.pending = None
        if pending.kind == "refusal" and now - pending.since > HOLD[pending.rank]:
            return False  # stale: the moment it was about has passed
        self.current = Message(pending.key, pending.params, pending.kind, pending.rank, now)
        self._changed()
        return True

    def next_change(self) -> float | None:
        """When :meth:`update` may change the line (a message is waiting), else ``None``."""
        if self.pending is None or self.current is None:
            return None
        return self.current.since + HOLD[self.current.rank]


def round_of(turn: int) -> int:
    """F3's turn number as a round: turns 1–2 are round 1, 3–4 round 2, … (0: the opening)."""
    return (turn + 1) // 2


class MatchWords:
    """The match screen's texts for one :class:`GameScene`."""

    def __init__(self, scene: GameScene) -> None:
        self.scene = scene
        self.ctx = scene.ctx

    def opponent_is_cpu(self) -> bool:
        controller = self.scene.controller
        return (controller is None and not self.scene.session.language_button) or (
            controller is not None and controller.opponent is OpponentKind.CPU)

    def opponent_key(self) -> str:
        return "status.cpu" if self.opponent_is_cpu() else "status.opponent"

    def in_screen_result(self) -> bool:
        """The result shows in a panel on the screen (a rematch is offered) instead of a popup."""
        controller = self.scene.controller
        return controller is not None and controller.capabilities.rematch is not None

    def instruction(self) -> str:
        """What to do next (the status line's first line)."""
        t = self.ctx.t
        scene = self.scene
        view = scene.view()
        controller = scene.controller
        source = None if controller is None else controller.capabilities.presence
        presence = None if source is None else source.presence()
        if scene.ended is not None and self.in_screen_result():
            return t(f"result.title.{self.result_kind()}")  # the reason is the line below (event_line)
        if presence is not None and presence.reconnecting:
            return t("cluster.moving" if presence.moving else "online.reconnecting")
        if view is None:
            return t("app.tagline")
        if scene.ended is not None:
            if scene.flow.reveal_shown() and scene.flow.reveal_on_request():
                return t("match.showing_everything")
            return t("status.viewing_board" if scene.viewing_board else "status.game_over")
        if view.to_move != view.seat:
            if self.opponent_is_cpu():
                return t("status.cpu_thinking")
            if view.outcome is None and view.to_move is not None:
                return t(f"online.opponent_phase.{view.phase.value}")
            return t("status.opponent_turn")
        phase = view.phase
        if phase is Phase.OPEN_EXPLORE:
            return t("status.opening_explore")
        if phase is Phase.OPEN_PLANT:
            return t("status.opening_plant")
        if phase is Phase.EXPLORE:
            return t("status.recover_explore" if not view.explorable and view.recoverable else "status.explore")
        if phase is Phase.PLANT:
            return t("status.recover_plant" if not view.explorable and view.recoverable else "status.plant")
        # END_WAIT: with this turn's flag used there is nothing to place; say so, not "or place a flag".
        return t("status.end_wait" if view.quota_left else "match.end_wait_used")

    def event_line(self) -> tuple[str, bool] | None:
        """The status line's second line and whether it is a warning: the in-screen result's reason;
        else my deadline's last seconds (U6) unless a refusal is still being read; else the message."""
        scene = self.scene
        if scene.ended is not None and self.in_screen_result():
            return self.reason_text(), False
        current = scene.line.current
        warn = scene.deadline_warning
        if warn is not None and (current is None or current.rank == "event" or not current.held(self.ctx.clock())):
            return self.ctx.t("match.deadline_warning", seconds=warn), True
        message = scene.message
        if message is None:
            return None
        key, params, kind = message
        params = dict(params)
        if "cell" in params and isinstance(params["cell"], int):
            row, col = divmod(params["cell"], COLS)
            params["cell"] = self.ctx.t("cell.name", row=row + 1, col=col + 1)
        return self.ctx.t(key, **params), kind == "refusal"

    def turn_pill(self, view: SeatView) -> str:
        """The header's count: the round (the first player's turn and the second's make one; F3's
        turn number ``2r - 1`` or ``2r`` is round ``r``), or the opening."""
        if not view.turn:
            return self.ctx.t("status.opening")
        return self.ctx.t("match.round", round=round_of(view.turn))

    def end_turn_refusal(self) -> str | None:
        """Why End turn cannot act now (A5: only in END_WAIT), in the phase's words; ``None``: it can."""
        scene = self.scene
        view = scene.view()
        if view is None or scene.controller is None:
            return None
        if scene.ended is not None or view.outcome is not None:
            return "refusal.game_over"
        if view.to_move != view.seat:
            return "refusal.not_your_turn"
        return {Phase.OPEN_EXPLORE: "match.why.opening_explore", Phase.OPEN_PLANT: "match.why.opening_plant",
                Phase.EXPLORE: "match.why.explore_first", Phase.PLANT: "match.why.plant_first"}.get(view.phase)

    def mode_refusal(self, mode: str) -> str | None:
        """Why ``mode`` has no legal cell now (its button is disabled), in the phase's words."""
        scene = self.scene
        view = scene.view()
        if view is None or scene.controller is None:
            return None
        if scene.ended is not None or view.outcome is not None:
            return "refusal.game_over"
        if view.to_move != view.seat:
            return "refusal.not_your_turn"
        phase = view.phase
        if mode in ("flag", "unflag") and phase in (Phase.OPEN_EXPLORE, Phase.OPEN_PLANT):
            return "match.why.no_flags_opening"  # F1
        if mode == "flag":
            return "refusal.quota_used" if not view.quota_left else "refusal.marked"  # A3
        if mode == "unflag":
            return "refusal.no_marker"  # A4: none of mine on the board
        exploring = phase in (Phase.EXPLORE, Phase.OPEN_EXPLORE)
        planting = phase in (Phase.PLANT, Phase.OPEN_PLANT)
        if (mode == "explore" and exploring) or (mode == "mine" and planting):
            return "status.recover_explore" if exploring else "status.recover_plant"  # C1.3 / C2: held
        if mode == "mine" and exploring:
            return "match.why.explore_first"  # F2: explore, then plant
        if mode == "explore" and planting:
            return "match.why.explored_plant"
        return "match.why.turn_done"  # END_WAIT: both done; flags or End turn

    def applied_key(self, event: Applied, me: int) -> str | None:
        """``event.<who>_<verb>``: ``auto_`` for what the server did for a seat whose step ran out (O4)."""
        verb = EVENT_VERBS.get(event.kind)
        if verb is None:
            return None
        if event.auto and verb in ("explored", "planted"):
            verb = f"auto_{verb}"
        who = "you" if event.seat == me else ("cpu" if self.opponent_is_cpu() else "opponent")
        return f"event.{who}_{verb}"

    def ending_key(self, ended: Ended) -> str:
        """The status line's account of the end: who stepped on whose mine, or which draw."""
        outcome = ended.outcome
        controller = self.scene.controller
        if outcome.reason is Reason.KO and controller is not None:
            return "result.detail.cpu_hit_mine" if outcome.winner == controller.seat else "result.detail.you_hit_mine"
        return f"result.detail.{outcome.reason}"

    def result_kind(self) -> str:
        """win / loss / draw / void, from the engine's ``seat_result``."""
        ended, controller = self.scene.ended, self.scene.controller
        assert ended is not None and controller is not None
        return seat_result(ended.outcome, controller.seat).outcome.value

    def reason_text(self) -> str:
        """The reason (KO, score with both scores, resign, disconnect, void), seat-relative."""
        ended, controller = self.scene.ended, self.scene.controller
        assert ended is not None and controller is not None
        t = self.ctx.t
        result = seat_result(ended.outcome, controller.seat)
        reason = result.reason
        if reason is Reason.SCORE and result.scores is not None:
            return t("online.reason.score", me=result.scores[0], opponent=result.scores[1])
        if reason is Reason.VOID:
            return t("online.reason.void")
        side = "win" if result.outcome.value == "win" else "loss"
        if reason in (Reason.KO, Reason.RESIGN, Reason.DISCONNECT):
            return t(f"online.reason.{reason.value}_{side}")
        return t(f"result.detail.{reason.value}")

    def banner(self) -> tuple[str, palette.Color] | None:
        """Under the board: this client reconnecting, the opponent away (with its grace left) — O12 —
        or my deadline's last seconds, pulsing (U6)."""
        controller = self.scene.controller
        if controller is None:
            return None
        t = self.ctx.t
        source = controller.capabilities.presence
        presence = None if source is None else source.presence()
        if presence is None:
            pass
        elif presence.reconnecting and presence.moving:  # issue 21: another node serves the room now
            return t("cluster.moving"), palette.ME  # blue, as a note: nothing is wrong (match_paint's banner)
        elif presence.reconnecting:
            left = presence.retry_in
            text = t("online.reconnecting")
            if left is not None and left >= 0.5:
                text = f"{t('online.connection_lost')} - {t('online.reconnect_in', seconds=math.ceil(left))}"
            return text, palette.DANGER
        elif self.scene.ended is None and presence.opponent_away:
            if presence.opponent_gone:
                return t("online.opponent_gone"), palette.DANGER
            return t("online.opponent_disconnected", seconds=math.ceil(presence.opponent_seconds or 0.0)), palette.OPP_DEEP
        warn = self.scene.deadline_warning
        if warn is not None:  # U6: also right under the board, seen wherever a short window is scrolled
            return t("match.deadline_warning", seconds=warn), palette.DANGER if self.scene.pulse else palette.WARN
        return None
