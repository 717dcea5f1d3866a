"""AI6: the CPU's step countdown — 650 ms between steps, paused (keeping what is left) while
the player cannot follow: a popup is open, or the window is minimised, hidden or unfocused.

Pure and clock-injected, so tests drive it with a fake clock: nothing here reads the real time.
A pause has *reasons* (``"popup"``, ``"minimised"``, ``"hidden"``, ``"unfocused"``, ...); the
countdown runs only while no reason is active, so two overlapping pauses cannot resume each
other early.
"""

from __future__ import annotations

from collections.abc import Callable

CPU_STEP_DELAY = 0.650
"""AI6: seconds between two CPU steps (and between the human's last action and the first one)."""


class StepPacer:
    """One countdown at a time: ``arm()`` starts it, ``due()`` says it has run out.

    ``remaining`` is what is left of the countdown; while paused it does not shrink. The pacer
    never fires anything itself: the caller asks :meth:`due` on each frame and acts (AI6).
    """

    __slots__ = ("_clock", "_deadline", "_left", "_reasons", "delay")

    def __init__(self, clock: Callable[[], float], delay: float = CPU_STEP_DELAY) -> None:
        self._clock = clock
        self.delay = delay
        self._reasons: set[str] = set()
        self._deadline: float | None = None  # running: when it runs out
        self._left: float | None = None  # paused: what is left

    # ----- the countdown ------------------------------------------------------------------
    @property
    def armed(self) -> bool:
        """A countdown is in progress (running or paused)."""
        return self._deadline is not None or self._left is not None

    def arm(self, delay: float | None = None) -> None:
        """Start a fresh countdown of ``delay`` (default: the step delay), replacing any other."""
        left = self.delay if delay is None else delay
        if self._reasons:
            self._deadline, self._left = None, left
        else:
            self._deadline, self._left = self._clock() + left, None

    def cancel(self) -> None:
        """Forget the countdown (the match ended, or the CPU is not to move)."""
        self._deadline = self._left = None

    def remaining(self) -> float | None:
        """Seconds left, ``None`` when not armed; frozen while paused."""
        if self._left is not None:
            return self._left
        if self._deadline is None:
            return None
        return max(0.0, self._deadline - self._clock())

    def due(self) -> bool:
        """The countdown ran out while running. It stays due until :meth:`arm` or :meth:`cancel`."""
        return self._deadline is not None and self._clock() >= self._deadline

    def deadline(self) -> float | None:
        """The clock time the running countdown ends (``None`` when paused or not armed)."""
        return self._deadline

    # ----- pausing --------------------------------------------------------------------------
    @property
    def paused(self) -> bool:
        return bool(self._reasons)

    @property
    def reasons(self) -> frozenset[str]:
        return frozenset(self._reasons)

    def pause(self, reason: str) -> None:
        """Stop the countdown for ``reason``, keeping what is left (AI6)."""
        if not self._reasons and self._deadline is not None:
            self._left = max(0.0, self._deadline - self._clock())
            self._deadline = None
        self._reasons.add(reason)

    def resume(self, reason: str) -> None:
        """Lift ``reason``; the countdown goes on from where it stopped once no reason is left."""
        self._reasons.discard(reason)
        if not self._reasons and self._left is not None:
            self._deadline = self._clock() + self._left
            self._left = None

    def set_paused(self, reason: str, paused: bool) -> None:
        """:meth:`pause` or :meth:`resume` for ``reason``."""
        if paused:
            self.pause(reason)
        else:
            self.resume(reason)
