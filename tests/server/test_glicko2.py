"""Glicko-2 (server/glicko2.py, issue 20): Glickman's worked example, lichess's settings and caps,
the volatility iteration, and the properties every rating update must have."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mineduel.server import glicko2
from mineduel.server.glicko2 import Rating, glickman_step, provisional, ranked, update

EXAMPLE_PLAYER = Rating(1500.0, 200.0, 0.06)
EXAMPLE_GAMES = [(Rating(1400.0, 30.0), 1.0), (Rating(1550.0, 100.0), 0.0), (Rating(1700.0, 300.0), 0.0)]


def test_glickmans_worked_example() -> None:
    """The paper's example (τ = 0.5): r' ≈ 1464.06, RD' ≈ 151.52, σ' ≈ 0.05999."""
    new = glickman_step(EXAMPLE_PLAYER, EXAMPLE_GAMES, tau=0.5)
    assert new.value == pytest.approx(1464.06, abs=0.01)
    assert new.deviation == pytest.approx(151.52, abs=0.01)
    assert new.volatility == pytest.approx(0.05999, abs=0.00001)


def test_the_worked_examples_intermediates() -> None:
    """Steps 3–5 of the example on the Glicko-2 scale: v ≈ 1.7785, Δ ≈ −0.4834, σ' ≈ 0.05999."""
    phi = 200.0 / glicko2.SCALE
    v, delta = 1.77850, -0.48341  # as printed in the paper
    sigma, steps = glicko2.solve_volatility(0.06, phi, v, delta, 0.5)
    assert sigma == pytest.approx(0.05999, abs=0.00001)
    assert 0 < steps < 20


def test_the_example_with_lichess_caps_is_unchanged() -> None:
    """update() over one whole period only caps: the example's result is inside every cap, so it is the paper's."""
    capped = update(EXAMPLE_PLAYER, EXAMPLE_GAMES, tau=0.5, periods=1.0)
    assert (capped.value, capped.deviation, capped.volatility) == tuple(glickman_step(EXAMPLE_PLAYER, EXAMPLE_GAMES, tau=0.5))


def test_moving_every_rating_by_the_same_amount_moves_the_result_only() -> None:
    """Glicko-2 sees differences only: the same games 400 points higher give the same change and
    the same volatility (the check PyPI's ``glicko2`` 2.1.0 fails: its f uses μ² for φ²)."""
    shifted = [(Rating(o.value + 400.0, o.deviation, o.volatility), s) for o, s in EXAMPLE_GAMES]
    base = glickman_step(EXAMPLE_PLAYER, EXAMPLE_GAMES, tau=0.5)
    moved = glickman_step(Rating(1900.0, 200.0, 0.06), shifted, tau=0.5)
    assert moved.value - 400.0 == pytest.approx(base.value, abs=1e-9)
    assert moved.deviation == pytest.approx(base.deviation, abs=1e-9)
    assert moved.volatility == pytest.approx(base.volatility, abs=1e-12)


def test_lichess_settings() -> None:
    """A new player: 1500, RD 500, volatility 0.09, provisional, not ranked; τ is 0.75."""
    new = Rating()
    assert (new.value, new.deviation, new.volatility) == (1500.0, 500.0, 0.09)
    assert glicko2.TAU == 0.75
    assert provisional(new) and not ranked(new)


@pytest.mark.parametrize(
    ("deviation", "is_provisional", "is_ranked"),
    [
        (500.0, True, False), (110.0, True, False), (109.99, False, False),
        (75.01, False, False), (75.0, False, True), (45.0, False, True),
    ],
)
def test_provisional_and_ranked_thresholds(deviation: float, is_provisional: bool, is_ranked: bool) -> None:
    """Provisional while RD ≥ 110; ranked (leaderboard) at RD ≤ 75."""
    r = Rating(1600.0, deviation)
    assert provisional(r) is is_provisional
    assert ranked(r) is is_ranked


def test_no_games_only_widens_the_deviation() -> None:  # one period: step 6
    """Step 6: a period without games keeps the rating and volatility, and RD² grows by σ²."""
    r = Rating(1700.0, 80.0, 0.06)
    new = update(r, [])
    assert (new.value, new.volatility) == (r.value, r.volatility)
    phi = 80.0 / glicko2.SCALE
    assert new.deviation == pytest.approx(math.sqrt(phi * phi + 0.06 * 0.06) * glicko2.SCALE)


def test_the_deviation_is_capped_at_the_start_value() -> None:
    """lichess's cap: a new player who does not play stays at RD 500 (the raw step would pass it)."""
    assert glickman_step(Rating(), []).deviation > 500.0
    assert update(Rating(), []).deviation == 500.0


def test_the_deviation_never_falls_below_45_and_volatility_never_passes_0_1() -> None:
    """lichess's caps: however many games, RD ≥ 45; however surprising, σ ≤ 0.1. (With σ = 0.09
    one game per period settles near RD 72; a low volatility lets it fall to the floor.)"""
    r = Rating(1500.0, 46.0, 0.01)
    for _ in range(50):
        r = update(r, [(Rating(1500.0, 45.0), 0.5)])
    assert r.deviation == 45.0
    wild = update(Rating(1500.0, 60.0, 0.099), [(Rating(2900.0, 45.0), 1.0)] * 5)
    assert wild.volatility <= 0.1


def test_one_game_between_new_players() -> None:
    """The first game of two new players (lichess settings): the winner gains what the loser loses."""
    a, b = Rating(), Rating()
    a2, b2 = update(a, [(b, 1.0)]), update(b, [(a, 0.0)])
    assert a2.value > 1500.0 > b2.value
    assert a2.value - 1500.0 == pytest.approx(1500.0 - b2.value)
    assert a2.deviation == pytest.approx(b2.deviation) and a2.deviation < 500.0
    assert a2.value == pytest.approx(1741.48, abs=0.01)  # a big first step: RD 500 means "we know nothing"
    assert a2.deviation == pytest.approx(396.69, abs=0.01)


def test_a_game_adds_no_period_of_uncertainty_by_default() -> None:
    """lichess's one-game update (skipDeviationIncrease): φ' = 1/√(1/φ² + 1/v), no σ² first; with
    ``periods`` the paper's step 6 comes back, scaled."""
    a, b = Rating(1500.0, 120.0, 0.09), Rating(1550.0, 80.0)
    new = update(a, [(b, 1.0)])
    assert (new.value, new.deviation, new.volatility) == tuple(glickman_step(a, [(b, 1.0)], periods=0.0))
    assert update(a, [(b, 1.0)], periods=1.0).deviation > update(a, [(b, 1.0)]).deviation
    assert update(a, [(b, 1.0)], periods=2.0).deviation > update(a, [(b, 1.0)], periods=1.0).deviation


def test_an_active_player_gets_ranked_after_some_games() -> None:
    """30 games, won and lost in turn, against established players of its own rating: ranked
    (RD ≤ 75, about 64). With a whole period per game it would still be at about 79."""
    r = Rating()
    per_game = Rating()
    for i in range(30):
        r = update(r, [(Rating(r.value, 60.0), float(i % 2))])
        per_game = update(per_game, [(Rating(per_game.value, 60.0), float(i % 2))], periods=1.0)
    assert ranked(r) and r.deviation == pytest.approx(64.0, abs=1.0)
    assert not ranked(per_game)


def test_time_away_widens_the_deviation_as_lichess_does() -> None:
    """0.21436 periods a day: a typical player's RD goes from 60 to 110 in a year (σ = 0.06)."""
    assert glicko2.periods_between(0.0, 86_400.0) == pytest.approx(0.21436)
    assert glicko2.periods_between(100.0, 50.0) == 0.0  # a clock that went back adds nothing
    year = glicko2.periods_between(0.0, 365 * 86_400.0)
    assert update(Rating(1600.0, 60.0, 0.06), [], periods=year).deviation == pytest.approx(110.0, abs=0.5)
    back = update(Rating(1600.0, 60.0, 0.06), [(Rating(1600.0, 60.0), 1.0)], periods=year)
    assert back.deviation > update(Rating(1600.0, 60.0, 0.06), [(Rating(1600.0, 60.0), 1.0)]).deviation


def test_a_draw_between_equals_changes_only_the_uncertainty() -> None:
    """Equal ratings, a draw: both values stay exactly, both deviations shrink, volatility does not grow."""
    a = Rating(1620.0, 150.0, 0.07)
    new = update(a, [(a, 0.5)])
    assert new.value == a.value
    assert new.deviation < a.deviation
    assert new.volatility <= a.volatility


@pytest.mark.parametrize("score", [-0.1, 1.5, math.nan, math.inf])
def test_a_score_outside_0_to_1_is_refused(score: float) -> None:
    with pytest.raises(ValueError):
        update(Rating(), [(Rating(), score)])


@pytest.mark.parametrize("tau", [0.0, -1.0, math.nan])
def test_a_tau_that_is_not_positive_is_refused(tau: float) -> None:
    with pytest.raises(ValueError):
        update(Rating(), [(Rating(), 1.0)], tau=tau)


@pytest.mark.parametrize("periods", [-1.0, math.nan, math.inf])
def test_periods_that_are_not_a_finite_non_negative_number_are_refused(periods: float) -> None:
    with pytest.raises(ValueError):
        update(Rating(), [(Rating(), 1.0)], periods=periods)


@pytest.mark.parametrize(
    "fields",
    [
        (math.nan, 100.0, 0.06), (math.inf, 100.0, 0.06), (1500.0, 0.0, 0.06), (1500.0, -5.0, 0.06),
        (1500.0, 100.0, 0.0), (1500.0, 1e5, 0.06), (1500.0, 100.0, 11.0),
    ],
)
def test_a_corrupt_rating_is_refused(fields: tuple[float, float, float]) -> None:
    """A rating outside what any update can produce is corrupt data: refused at construction."""
    with pytest.raises(ValueError):
        Rating(*fields)


def test_an_absurd_gap_stays_finite() -> None:
    """A win over someone rated a billion points higher: finite numbers, the caps hold."""
    new = update(Rating(), [(Rating(1e9, 45.0), 1.0)])
    assert math.isfinite(new.value) and new.value > 1500.0
    assert 45.0 <= new.deviation <= 500.0 and 0 < new.volatility <= 0.1
    loss = update(Rating(), [(Rating(-1e9, 45.0), 0.0)])
    assert math.isfinite(loss.value) and loss.value < 1500.0


def test_the_expected_score_is_a_probability_symmetric_for_equal_deviations() -> None:
    a, b = Rating(1700.0, 80.0), Rating(1500.0, 80.0)
    assert glicko2.expected_score(a, b) + glicko2.expected_score(b, a) == pytest.approx(1.0)
    assert glicko2.expected_score(a, b) > 0.5
    assert glicko2.expected_score(Rating(1e9), Rating(-1e9)) < 1.0


# ----- properties ------------------------------------------------------------------------------------

values = st.floats(min_value=-5000.0, max_value=8000.0)
deviations = st.floats(min_value=1.0, max_value=glicko2.DEVIATION_LIMIT)
volatilities = st.floats(min_value=1e-4, max_value=glicko2.VOLATILITY_LIMIT)
ratings = st.builds(Rating, values, deviations, volatilities)
scores = st.sampled_from([0.0, 0.5, 1.0])
capped_ratings = st.builds(Rating, values, st.floats(min_value=45.0, max_value=500.0), st.floats(min_value=0.01, max_value=0.1))


@settings(max_examples=300, deadline=None)
@given(ratings, st.lists(st.tuples(ratings, scores), max_size=6), st.floats(min_value=0.1, max_value=2.0),
       st.one_of(st.none(), st.floats(min_value=0.0, max_value=1000.0)))
def test_every_update_is_finite_and_within_the_caps(
    player: Rating, games: list[tuple[Rating, float]], tau: float, periods: float | None,
) -> None:
    """Whatever the inputs (within what a Rating holds), the result is a valid capped rating."""
    new = update(player, games, tau=tau, periods=periods)
    assert math.isfinite(new.value)
    assert glicko2.MIN_DEVIATION <= new.deviation <= glicko2.MAX_DEVIATION
    assert 0 < new.volatility <= glicko2.MAX_VOLATILITY


@settings(max_examples=300, deadline=None)
@given(ratings, ratings)
def test_a_win_raises_and_a_loss_lowers(player: Rating, opponent: Rating) -> None:
    """One game: a win never lowers the rating, a loss never raises it, and the deviation never grows
    (before the caps)."""
    won = glickman_step(player, [(opponent, 1.0)])
    lost = glickman_step(player, [(opponent, 0.0)])
    assert won.value >= player.value - 1e-9 and player.value + 1e-9 >= lost.value  # (±: rounding when E ≈ 0 or 1)
    assert won.value > lost.value
    for step in (won, lost):
        phi_star = math.hypot(player.deviation / glicko2.SCALE, step.volatility) * glicko2.SCALE
        assert step.deviation <= phi_star * (1 + 1e-12)


@settings(max_examples=200, deadline=None)
@given(values, st.floats(min_value=45.0, max_value=500.0), st.floats(min_value=0.01, max_value=0.1))
def test_a_draw_between_equals_changes_only_the_uncertainty_property(value: float, deviation: float, volatility: float) -> None:
    """A draw between equals keeps the value exactly, does not raise the volatility, and leaves the
    deviation below step 6's widened one (an RD near the floor may still grow: σ adds to it per game)."""
    r = Rating(value, deviation, volatility)
    new = glickman_step(r, [(r, 0.5)])
    widened = math.hypot(deviation / glicko2.SCALE, new.volatility) * glicko2.SCALE
    assert new.value == r.value and new.deviation < widened and new.volatility <= r.volatility


@settings(max_examples=300, deadline=None)
@given(
    st.floats(min_value=1e-3, max_value=1.0),
    st.floats(min_value=0.05, max_value=10.0),
    st.floats(min_value=0.01, max_value=1e4),
    st.floats(min_value=-100.0, max_value=100.0),
    st.floats(min_value=0.2, max_value=1.5),
)
def test_the_illinois_iteration_converges_to_a_root(sigma: float, phi: float, v: float, delta: float, tau: float) -> None:
    """Step 5 ends well before its step limit, at a root of the paper's f."""
    new_sigma, steps = glicko2.solve_volatility(sigma, phi, v, delta, tau)
    assert steps < glicko2.ILLINOIS_MAX_STEPS
    a = math.log(sigma * sigma)

    def f(x: float) -> float:
        ex = math.exp(x)
        return ex * (delta * delta - phi * phi - v - ex) / (2.0 * (phi * phi + v + ex) ** 2) - (x - a) / (tau * tau)

    # f has one root and falls through it: the answer lies within a few ε of it.
    x = math.log(new_sigma * new_sigma)
    near = 10 * glicko2.CONVERGENCE
    assert f(x - near) > 0 > f(x + near)


@settings(max_examples=200, deadline=None)
@given(capped_ratings, capped_ratings, scores)
def test_both_sides_of_one_game_between_equal_deviations_are_mirror_images(a: Rating, b: Rating, score: float) -> None:
    """Same deviation and volatility: what one gains the other loses (to rounding and the
    volatility's ε; ratings that update() can produce)."""
    b = Rating(b.value, a.deviation, a.volatility)
    a2 = glickman_step(a, [(b, score)])
    b2 = glickman_step(b, [(a, 1.0 - score)])
    assert a2.value - a.value == pytest.approx(b.value - b2.value, rel=1e-6, abs=1e-6)
