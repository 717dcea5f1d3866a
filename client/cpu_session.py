"""The CPU flow around the match screen (U1, E4; seed chapter 02).

Fresh session at launch: no saved language → the language picker first (the board stays
locked); right after it, a player who has never seen the tutorial (settings ``tutorial`` is
``unseen``) is offered it (*Learn by playing* / *Skip*), and a launch after a tutorial left
half-way (``step-N``) offers to continue it; then the rules + difficulty popup (default normal)
with Start, which creates the match, *Play with a friend* (the online screen, where online play is
allowed) and *Tutorial*. When the tutorial ends, the rules + difficulty popup follows.
A confirmed restart drops the match and everything shown about it, keeps only the language,
puts the difficulty back to the default (normal; a kiosk may configure another) and shows the
rules + difficulty popup again.

Seeds (R4): ``seed`` (``--seed``) makes the first match reproducible and each restart takes the
next number; without it every match draws a fresh seed. The seed is saved in the record.
"""

from __future__ import annotations

from dataclasses import replace

from mineduel.client import tutorial_script
from mineduel.client.scenes.base import Context
from mineduel.client.scenes.game import GameScene
from mineduel.client.scenes.popups import LanguagePopup, RulesPopup
from mineduel.client.scenes.tutorial_offer import TutorialOfferPopup

DEFAULT_DIFFICULTY = "normal"


class CpuSession:
    """Implements :class:`mineduel.client.scenes.game.Session` for play against the CPU."""

    def __init__(self, ctx: Context, seed: int | None = None, *, default_difficulty: str = DEFAULT_DIFFICULTY) -> None:
        self.ctx = ctx
        self._next_seed = seed
        self._difficulty: str | None = None
        self.default_difficulty = default_difficulty  # preselected in the rules popup (a kiosk may choose another)

    @property
    def next_seed(self) -> int | None:
        """The seed the next match will use (``None``: a fresh random one)."""
        return self._next_seed

    @property
    def difficulty(self) -> str | None:
        return self._difficulty

    can_restart = True  # E4; the menu also offers Online play
    language_button = False  # the language is in the menu

    def to_lobby(self, scene: GameScene) -> None:
        """No room to go back to: a CPU match has none."""

    def begin(self, scene: GameScene) -> None:
        if self.ctx.settings.language is None:
            self.ctx.stack.open_popup(LanguagePopup(self.ctx, lambda code: self._language_chosen(scene, code), first_run=True))
        elif tutorial_script.parse_progress(self.ctx.settings.tutorial) is not None:
            self._offer_tutorial(scene)  # left half-way last time: continue?
        else:
            self._ask_rules(scene)

    def _language_chosen(self, scene: GameScene, code: str) -> None:
        scene.flow.choose_language(code)
        if self.ctx.settings.tutorial == "unseen" or tutorial_script.parse_progress(self.ctx.settings.tutorial) is not None:
            self._offer_tutorial(scene)
        else:
            self._ask_rules(scene)

    def _offer_tutorial(self, scene: GameScene) -> None:
        """*Learn by playing* (or continue at the saved step) / *Skip* (remembered: not offered again)."""
        ctx = self.ctx
        resume = tutorial_script.parse_progress(ctx.settings.tutorial)

        def skip() -> None:
            ctx.save_settings(replace(ctx.settings, tutorial="skipped"))
            self._ask_rules(scene)

        ctx.stack.open_popup(TutorialOfferPopup(ctx, on_learn=ctx.open_tutorial, on_skip=skip, resume_step=resume,
                                                steps=len(tutorial_script.STEPS)))

    def _ask_rules(self, scene: GameScene) -> None:
        self.ctx.stack.open_popup(RulesPopup(self.ctx, on_start=lambda level: self._start(scene, level),
                                             difficulty=self.default_difficulty,
                                             on_friend=scene.open_online if self.ctx.allowed.online else None))

    def _start(self, scene: GameScene, level: str) -> None:
        seed = self._next_seed
        if seed is not None:
            self._next_seed = seed + 1
        self._difficulty = level
        scene.attach(self.ctx.new_cpu_match(difficulty=level, seed=seed))

    def restart(self, scene: GameScene) -> None:
        scene.detach()
        self._difficulty = None
        self._ask_rules(scene)
