"""What the match screen says: the instruction, what just happened, the ending, the banner.

Words for CPU and online matches alike; the differences come from the controller's labels
(``OpponentKind``) and its capabilities (presence, rematch), and the result from the engine's
``seat_result`` — no rule is worked out here again.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from mineduel.client.controller import Applied, Ended, OpponentKind
from mineduel.client.ui import palette
from mineduel.shared.rules.bitboard import COLS
from mineduel.shared.rules.engine import ActionType, Phase, Reason
from mineduel.shared.rules.views import seat_result

if TYPE_CHECKING:
    from mineduel.client.scenes.game import GameScene

# How the status line names each applied action (TIMEOUT: online only, O4/O5).
EVENT_VERBS: dict[ActionType, str] = {ActionType.EXPLORE: "explored", ActionType.PLANT: "planted",
                                      ActionType.FLAG: "flagged", ActionType.UNFLAG: "unflagged",
                                      ActionType.END_TURN: "ended", ActionType.TIMEOUT: "timeout"}


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
            return t("online.result_line", title=t(f"result.title.{self.result_kind()}"), reason=self.reason_text())
        if presence is not None and presence.reconnecting:
            return t("online.reconnecting")
        if view is None:
            return t("app.tagline")
        if scene.ended is not None:
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
        return t("status.end_wait")

    def event_line(self) -> tuple[str, bool] | None:
        message = self.scene.message
        if message is None:
            return None
        key, params, kind = message
        params = dict(params)
        if "cell" in params and isinstance(params["cell"], int):
            row, col = divmod(params["cell"], COLS)
            params["cell"] = self.ctx.t("cell.name", row=row + 1, col=col + 1)
        return self.ctx.t(key, **params), kind == "refusal"

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
        """O12 under the board: this client reconnecting, or the opponent away (with its grace left)."""
        controller = self.scene.controller
        if controller is None or controller.capabilities.presence is None:
            return None
        presence = controller.capabilities.presence.presence()
        t = self.ctx.t
        if presence.reconnecting:
            left = presence.retry_in
            text = t("online.reconnecting")
            if left is not None and left >= 0.5:
                text = f"{t('online.connection_lost')} - {t('online.reconnect_in', seconds=math.ceil(left))}"
            return text, palette.DANGER
        if self.scene.ended is None and presence.opponent_away:
            if presence.opponent_gone:
                return t("online.opponent_gone"), palette.DANGER
            return t("online.opponent_disconnected", seconds=math.ceil(presence.opponent_seconds or 0.0)), palette.OPP_DEEP
        return None
