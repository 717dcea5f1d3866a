"""Glicko-2 ratings with lichess's settings (issue 20): one rated game is one rating period.

The algorithm is Glickman's "Example of the Glicko-2 system" (steps 1–8, the volatility found
with the Illinois algorithm of step 5), on the scale lichess uses: a new player starts at 1500
with a deviation (RD) of 500 and a volatility of 0.09, τ = 0.75; a rating is *provisional*
while its deviation is ≥ 110 and *ranked* (on the leaderboard) at ≤ 75. Like lichess, the
result is capped afterwards: the deviation stays within [45, 500] and the volatility at most 0.1
(past that it may never settle again). Each rated game updates both players at once, each
against the other's rating from *before* the game (:func:`update` is pure: call it twice with the
two old ratings). A period without games (:func:`update` with no games) only widens the
deviation, as step 6 says.

One game is lichess's rating period *without* step 6's widening (lila calls its calculator with
``skipDeviationIncrease``): the uncertainty a period adds (σ² on the Glicko-2 scale) comes from
time away instead — ``periods=periods_between(last_game, now)``, 0.21436 periods a day. Adding a
whole period per game instead keeps the deviation from settling below ≈ 72–76 (with σ ≈ 0.09 the
σ² added per game about equals what a game against an established opponent takes away):
simulated, 200 players after 30 games each had none ranked (RD ≤ 75) that way, 132 this way,
with the same rating error.

Why our own ~100 lines rather than a PyPI package (decided 2026-12-01, both read and run
against the worked example):

- ``glicko2`` 2.1.0 (the most downloaded one) computes step 5's ``f(x)`` with the *rating*
  squared where the paper has the *deviation* squared (``self.__rating**2``). The worked example
  cannot show it — its player is rated 1500, which is 0 on the Glicko-2 scale — but the same
  games moved by +400 give a different volatility (0.0599934 → 0.0599982), and the error grows
  with the distance from 1500. Its τ is also a class attribute shared by every player.
- ``glicko2-py`` 0.1.0 computes the example right, but it is a first release (April 2026) of a
  whole rating framework (engines, tournaments, SQLite/PostgreSQL storage) installed under the
  same import name ``glicko2`` as the package above — a runtime dependency with no track record
  for ~100 lines of arithmetic.

So the formulas are written here from the paper and checked by tests against its worked example
(r' ≈ 1464.06, RD' ≈ 151.52, σ' ≈ 0.05999), against moving every rating by the same amount
(which must change nothing but the result's offset — the check the first package fails) and by
property tests (tests/server/test_glicko2.py).

Numerical guards [our choice]: the expected score is computed as a logistic that cannot
overflow, and a rating difference is taken as at most 30 on the Glicko-2 scale (≈ 5,200 points
when g = 1) so a game between absurdly different ratings keeps every intermediate finite; the
Illinois iteration stops at :data:`ILLINOIS_MAX_STEPS` (it took at most 11 steps over 20,000
random games of realistic ratings) and keeps its bracketed estimate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

SCALE = 173.7178
"""Glickman's factor between the Glicko scale (1500 ± RD) and the Glicko-2 scale (μ, φ)."""

START_VALUE = 1500.0
START_DEVIATION = 500.0
START_VOLATILITY = 0.09
TAU = 0.75
"""lichess's system constant: how fast the volatility may change (the paper suggests 0.3–1.2)."""

PROVISIONAL_DEVIATION = 110.0
"""A rating with a deviation at least this is provisional (shown with a "?", matched widely)."""
RANKED_DEVIATION = 75.0
"""Only ratings with a deviation at most this are on the leaderboard."""

MIN_DEVIATION = 45.0
MAX_DEVIATION = 500.0
MAX_VOLATILITY = 0.1
"""lichess's caps on a result: a deviation never below 45 (a rating can always still move) nor
above the start's 500, a volatility never above 0.1."""

RATING_PERIODS_PER_DAY = 0.21436
"""lichess's time scale of step 6: chosen so that a typical player's RD goes from 60 to 110 in a year."""

CONVERGENCE = 1e-6
"""Step 5's ε: the Illinois iteration stops when its bracket is narrower than this."""
ILLINOIS_MAX_STEPS = 100
DEVIATION_LIMIT = 10_000.0
VOLATILITY_LIMIT = 10.0
"""What a :class:`Rating` may hold at all (far beyond any capped result): anything else is corrupt data."""
MAX_SCALED_GAP = 30.0
"""The largest |g(φⱼ)·(μ − μⱼ)| used in the expected score (e^-30 ≈ 1e-13): keeps v finite."""


@dataclass(frozen=True)
class Rating:
    """A player's Glicko-2 rating on the display scale (1500 ± deviation)."""

    value: float = START_VALUE
    deviation: float = START_DEVIATION
    volatility: float = START_VOLATILITY

    def __post_init__(self) -> None:
        if not (math.isfinite(self.value) and math.isfinite(self.deviation) and math.isfinite(self.volatility)):
            raise ValueError(f"a rating is finite: {self!r}")
        if not (0 < self.deviation <= DEVIATION_LIMIT and 0 < self.volatility <= VOLATILITY_LIMIT):
            raise ValueError(f"a rating's deviation or volatility is out of range: {self!r}")


def provisional(r: Rating) -> bool:
    """Whether the rating is still provisional (deviation ≥ 110, lichess's rule)."""
    return r.deviation >= PROVISIONAL_DEVIATION


def ranked(r: Rating) -> bool:
    """Whether the rating is settled enough for the leaderboard (deviation ≤ 75)."""
    return r.deviation <= RANKED_DEVIATION


def expected_score(player: Rating, opponent: Rating) -> float:
    """The player's expected score against the opponent (the paper's E, 0..1)."""
    return _expected((player.value - START_VALUE) / SCALE, (opponent.value - START_VALUE) / SCALE, _g(opponent.deviation / SCALE))


def update(
    player: Rating, games: Sequence[tuple[Rating, float]], *, tau: float = TAU, periods: float | None = None,
) -> Rating:
    """The player's rating after these games (opponent, score 1.0/0.5/0.0), capped as lichess does
    (:data:`MIN_DEVIATION`, :data:`MAX_DEVIATION`, :data:`MAX_VOLATILITY`).

    ``periods``: rating periods elapsed since the player's last update, by which its deviation
    widens first (step 6's σ², times ``periods``). By default none with games — lichess's update
    of one game (its ``skipDeviationIncrease``: a game does not add the uncertainty of a whole
    period; time away does, see :func:`periods_between`) — and one without games (step 6 alone).
    Raises :class:`ValueError` for a score outside 0..1, a τ that is not positive or negative
    periods, before computing anything.
    """
    if periods is None:
        periods = 0.0 if games else 1.0
    new = glickman_step(player, games, tau=tau, periods=periods)
    return Rating(
        new.value,
        min(max(new.deviation, MIN_DEVIATION), MAX_DEVIATION),
        min(new.volatility, MAX_VOLATILITY),
    )


class Step(NamedTuple):
    """One uncapped result of the paper's steps (display scale); may lie outside what a :class:`Rating` holds."""

    value: float
    deviation: float
    volatility: float


def glickman_step(player: Rating, games: Sequence[tuple[Rating, float]], *, tau: float = TAU, periods: float = 1.0) -> Step:
    """Steps 1–8 of Glickman's paper exactly, without lichess's caps (what the worked example checks):
    one rating period by default; ``periods`` scales step 6's σ² (0: none, as lichess per game)."""
    if not (math.isfinite(tau) and tau > 0):
        raise ValueError(f"tau must be positive, got {tau!r}")
    if not (math.isfinite(periods) and periods >= 0):
        raise ValueError(f"periods must be a finite number, not negative, got {periods!r}")
    for _, score in games:
        if not (math.isfinite(score) and 0.0 <= score <= 1.0):
            raise ValueError(f"a score is between 0 and 1, got {score!r}")
    # Step 2: to the Glicko-2 scale.
    mu = (player.value - START_VALUE) / SCALE
    phi = player.deviation / SCALE
    sigma = player.volatility
    if not games:
        # Step 6 alone: a period without games only adds the volatility to the deviation.
        return Step(player.value, math.sqrt(phi * phi + periods * sigma * sigma) * SCALE, sigma)
    # Steps 3 and 4: the estimated variance v and improvement Δ.
    v_inverse = 0.0
    improvement = 0.0
    for opponent, score in games:
        g = _g(opponent.deviation / SCALE)
        e = _expected(mu, (opponent.value - START_VALUE) / SCALE, g)
        v_inverse += g * g * e * (1.0 - e)
        improvement += g * (score - e)
    v = 1.0 / v_inverse
    delta = v * improvement
    # Step 5: the new volatility.
    sigma_new, _ = solve_volatility(sigma, phi, v, delta, tau)
    # Steps 6 and 7: the new deviation and rating.
    phi_star = math.sqrt(phi * phi + periods * sigma_new * sigma_new)
    phi_new = 1.0 / math.sqrt(1.0 / (phi_star * phi_star) + 1.0 / v)
    mu_change = phi_new * phi_new * improvement
    # Step 8: back to the display scale (the change added to the old value, so a game that
    # changes nothing leaves the value exactly as it was, with no rounding through μ).
    return Step(player.value + SCALE * mu_change, SCALE * phi_new, sigma_new)


def periods_between(earlier: float, later: float) -> float:
    """Rating periods between two times (seconds) at lichess's :data:`RATING_PERIODS_PER_DAY`: pass
    it as :func:`update`'s ``periods`` to widen a returning player's deviation by its time away."""
    return max(later - earlier, 0.0) / 86_400.0 * RATING_PERIODS_PER_DAY


def _g(phi: float) -> float:
    """The paper's g(φ): how much an opponent's uncertainty dampens what the game says."""
    return 1.0 / math.sqrt(1.0 + 3.0 * phi * phi / (math.pi * math.pi))


def _expected(mu: float, mu_j: float, g_j: float) -> float:
    """The paper's E(μ, μⱼ, φⱼ), as a logistic that never overflows (the gap clamped, see above)."""
    z = min(max(g_j * (mu - mu_j), -MAX_SCALED_GAP), MAX_SCALED_GAP)
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    ez = math.exp(z)
    return ez / (1.0 + ez)


def solve_volatility(sigma: float, phi: float, v: float, delta: float, tau: float) -> tuple[float, int]:
    """Step 5 on the Glicko-2 scale: σ' = e^(A/2) for the root A of the paper's f, bracketed
    (5.2) and found by the Illinois algorithm (5.3–5.4); also how many Illinois steps it took."""
    a = math.log(sigma * sigma)
    phi2 = phi * phi
    delta2 = delta * delta

    def f(x: float) -> float:
        ex = math.exp(x)
        return ex * (delta2 - phi2 - v - ex) / (2.0 * (phi2 + v + ex) ** 2) - (x - a) / (tau * tau)

    # 5.2: the initial bracket [A, B].
    big_a = a
    if delta2 > phi2 + v:
        big_b = math.log(delta2 - phi2 - v)
    else:
        k = 1
        while f(a - k * tau) < 0:  # f grows without bound to the left: this ends
            k += 1
        big_b = a - k * tau
    # 5.3 and 5.4: Illinois steps until the bracket is narrower than ε.
    f_a = f(big_a)
    f_b = f(big_b)
    steps = 0
    while abs(big_b - big_a) > CONVERGENCE and steps < ILLINOIS_MAX_STEPS:
        big_c = big_a + (big_a - big_b) * f_a / (f_b - f_a)
        f_c = f(big_c)
        if f_c * f_b <= 0:
            big_a, f_a = big_b, f_b
        else:
            f_a /= 2.0  # the Illinois halving: keeps the stale end from stalling the secant
        big_b, f_b = big_c, f_c
        steps += 1
    # 5.5
    return math.exp(big_a / 2.0), steps
