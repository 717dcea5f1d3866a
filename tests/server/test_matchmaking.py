"""The quick-match queue (server/matchmaking.py, issue 20): pairing by rating with a gap that widens
with waiting, oldest first, never self or one address, no back-to-back pair, penalties, leave.

Times are explicit arguments (the queue has no clock): each test says when things happen.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mineduel.server.matchmaking import ANY, PairingPolicy, QuickMatchQueue, Waiting

POLICY = PairingPolicy()


def _w(player: str, rating: float, since: float = 0.0, *, deviation: float = 60.0, address: str | None = None) -> Waiting:
    return Waiting(player, rating, deviation, address or f"addr-{player}", since)


def _names(pairs: list[tuple[Waiting, Waiting]]) -> list[tuple[str, str]]:
    return [(a.player, b.player) for a, b in pairs]


def test_the_gap_widens_with_waiting_and_is_any_after_60_s() -> None:
    """The documented curve: ±75 at once, 10 points per second, anyone from 60 s on."""
    assert POLICY.gap(0.0) == 75.0
    assert POLICY.gap(10.0) == 175.0
    assert POLICY.gap(59.9) == pytest.approx(674.0)
    assert POLICY.gap(60.0) == ANY
    assert POLICY.gap(-5.0) == 75.0  # a clock that went back does not narrow it below the start
    assert QuickMatchQueue(POLICY).gap(30.0) == POLICY.gap(30.0)


def test_close_ratings_meet_at_once() -> None:
    q = QuickMatchQueue(POLICY)
    q.join(_w("ann", 1500.0))
    assert q.pair(0.0) == []
    q.join(_w("bob", 1580.0))
    assert _names(q.pair(0.0)) == [("ann", "bob")]
    assert len(q) == 0


def test_far_ratings_meet_once_the_gap_has_widened() -> None:
    """1500 and 1800 (RD 60): reach 75 + 10·t + 30 covers 300 at t = 19.5 s, not before."""
    q = QuickMatchQueue(POLICY)
    q.join(_w("ann", 1500.0))
    q.join(_w("bob", 1800.0))
    assert q.pair(0.0) == []
    assert q.next_wake() == pytest.approx(19.5)
    assert q.pair(19.4) == []
    assert _names(q.pair(19.5)) == [("ann", "bob")]


def test_the_deviation_widens_the_reach_provisional_players_match_widely() -> None:
    """A newcomer (RD 500) reaches ±325 at once; an established player (RD 50) ±100."""
    q = QuickMatchQueue(POLICY)
    assert q.reach(_w("new", 1500.0, deviation=500.0), 0.0) == 325.0
    assert q.reach(_w("old", 1500.0, deviation=50.0), 0.0) == 100.0
    q.join(_w("new", 1500.0, deviation=500.0))
    q.join(_w("far", 1800.0, deviation=50.0))
    assert _names(q.pair(0.0)) == [("new", "far")]  # the newcomer's reach covers both


def test_nobody_waits_forever() -> None:
    """Ratings 3000 points apart still meet after 60 s."""
    q = QuickMatchQueue(POLICY)
    q.join(_w("low", 100.0))
    q.join(_w("high", 3100.0, since=5.0))
    assert q.pair(59.9) == []
    assert _names(q.pair(60.0)) == [("low", "high")]


def test_a_newcomer_meets_the_longest_waiter_it_suits() -> None:
    """Two waiters both suit the newcomer: the one waiting longer gets it, though farther."""
    q = QuickMatchQueue(POLICY)
    q.join(_w("older", 1400.0, since=0.0))
    q.join(_w("younger", 1530.0, since=40.0))  # older–younger: 130 apart, older's reach 105+10·t covers it at 2.5 s...
    assert q.pair(0.0) == []  # ... but younger joins only at 40 s (since=40 is its waiting start)
    pairs = _names(q.pair(40.0))
    assert pairs == [("older", "younger")]
    q.join(_w("a", 1400.0, since=50.0))
    q.join(_w("b", 1600.0, since=55.0))
    q.pair(55.0)
    q.join(_w("new", 1500.0, since=56.0))  # a (100 away, waited 6 s) and b (100 away, 1 s) both suit it
    assert _names(q.pair(56.0)) == [("a", "new")]
    assert "b" in q


def test_equally_old_the_closer_one_is_chosen() -> None:
    q = QuickMatchQueue(POLICY)
    q.join(_w("far", 1590.0, since=1.0))
    q.join(_w("near", 1510.0, since=1.0))
    q.join(_w("x", 3000.0, since=1.0))
    assert _names(q.pair(1.0)) == [("far", "near")]  # 80 apart: within far's reach 105
    q.join(_w("c", 1500.0, since=2.0))
    q.join(_w("d", 1540.0, since=2.0))
    q.join(_w("e", 1450.0, since=2.0))
    # c is examined first (joined first) and has d (40) and e (50) in reach, equally old: d.
    assert _names(q.pair(2.0)) == [("c", "d")]


def test_oldest_waiters_are_served_first() -> None:
    """Two waiters both want the same newcomer: the one who waited longer gets it."""
    q = QuickMatchQueue(POLICY)
    q.join(_w("older", 1400.0, since=0.0))
    q.join(_w("younger", 1600.0, since=5.0))  # 200 apart: older's reach 105 + 10·t covers it only at 9.5 s
    assert q.pair(5.0) == []
    q.join(_w("new", 1500.0, since=6.0))
    pairs = _names(q.pair(6.0))
    assert pairs == [("older", "new")]
    assert "younger" in q


def test_never_self_pairing() -> None:
    """A player cannot wait twice; joining again is an error and changes nothing."""
    q = QuickMatchQueue(POLICY)
    q.join(_w("ann", 1500.0))
    with pytest.raises(ValueError):
        q.join(_w("ann", 1500.0, address="elsewhere"))
    assert len(q) == 1
    assert q.pair(1000.0) == []


def test_never_two_connections_of_one_address() -> None:
    q = QuickMatchQueue(POLICY)
    q.join(_w("a1", 1500.0, address="10.0.0.1"))
    q.join(_w("a2", 1500.0, since=1.0, address="10.0.0.1"))
    assert q.pair(1.0) == []
    assert q.pair(500.0) == []  # not even at "anyone"
    q.join(_w("b", 1500.0, since=500.0, address="10.0.0.2"))
    assert _names(q.pair(500.0)) == [("a1", "b")]  # equally close: the one who waited longer


def test_one_address_may_meet_itself_when_configured() -> None:
    q = QuickMatchQueue(PairingPolicy(allow_same_address=True))
    q.join(_w("a1", 1500.0, address="10.0.0.1"))
    q.join(_w("a2", 1500.0, address="10.0.0.1"))
    assert _names(q.pair(0.0)) == [("a1", "a2")]


def test_no_back_to_back_pair_while_others_wait() -> None:
    """The anti-farming rule: the last pair of addresses does not meet again while anyone else waits,
    even at "anyone"; it does once they are alone, and after either met someone else."""
    q = QuickMatchQueue(POLICY)
    q.record_pairing("A", "B")
    q.join(_w("a", 1500.0, address="A"))
    q.join(_w("b", 1500.0, address="B"))
    q.join(_w("c", 3000.0, address="C"))
    assert q.pair(0.0) == []
    pairs = _names(q.pair(60.0))  # "a" reaches anyone: it takes "c" rather than its last opponent
    assert pairs == [("a", "c")]
    # Now "b" waits alone; "a" comes back: nobody else waits, so they may meet.
    q.join(_w("a", 1500.0, since=61.0, address="A"))
    assert _names(q.pair(61.0)) == [("b", "a")]


def test_the_back_to_back_pair_meets_when_a_third_leaves() -> None:
    q = QuickMatchQueue(POLICY)
    q.record_pairing("A", "B")
    q.join(_w("a", 1500.0, address="A"))
    q.join(_w("b", 1500.0, address="B"))
    q.join(_w("c", 3000.0, address="C"))
    assert q.pair(1.0) == []
    assert q.leave("c")
    assert _names(q.pair(1.0)) == [("a", "b")]


def test_a_new_pairing_replaces_the_last_opponent() -> None:
    q = QuickMatchQueue(POLICY)
    q.record_pairing("A", "B")
    q.record_pairing("A", "C")  # A met C since, but B's last opponent is still A: blocked
    q.join(_w("a", 1500.0, address="A"))
    q.join(_w("b", 1500.0, address="B"))
    q.join(_w("x", 3000.0, address="X"))
    assert q.pair(0.0) == []
    q.record_pairing("B", "D")  # now both met someone else since
    q.leave("a")
    q.join(_w("a", 1500.0, since=1.0, address="A"))
    assert _names(q.pair(1.0)) == [("b", "a")]


def test_leave() -> None:
    q = QuickMatchQueue(POLICY)
    q.join(_w("ann", 1500.0))
    assert "ann" in q and q.waiting("ann") is not None
    assert q.leave("ann") is True
    assert q.leave("ann") is False
    assert "ann" not in q and q.waiting("ann") is None
    q.join(_w("bob", 1500.0))
    assert q.pair(100.0) == []  # ann is gone: bob has nobody


def test_a_first_offence_is_free_then_each_repeat_waits_longer() -> None:
    """Offences 1, 2, 3, 4 in a row: waits 0, 15, 30, 60 s (penalty_base 15, growth 2)."""
    q = QuickMatchQueue(POLICY)
    waits = [q.penalise("ann", float(k)) - float(k) for k in range(1, 5)]
    assert waits[0] == 0.0
    assert waits[1:] == pytest.approx([15.0, 30.0, 60.0], rel=0.01)  # (decayed by a second each)


def test_the_penalty_is_capped_and_decays() -> None:
    q = QuickMatchQueue(POLICY)
    for k in range(20):
        until = q.penalise("ann", float(k))
    assert until - 19.0 == 300.0
    # A day later the earlier offences weigh almost nothing: the next one is free again.
    assert q.penalise("ann", 19.0 + 86_400.0) == 19.0 + 86_400.0


def test_a_penalised_player_is_not_matched_before_its_penalty_ends() -> None:
    q = QuickMatchQueue(POLICY)
    q.penalise("ann", 0.0)
    until = q.penalise("ann", 1.0)  # second offence: 15 s
    assert until == pytest.approx(16.0, abs=0.01)
    q.join(_w("ann", 1500.0, since=2.0))
    assert q.waiting("ann") is not None and q.waiting("ann").penalty_until == until  # type: ignore[union-attr]
    q.join(_w("bob", 1500.0, since=2.0))
    assert q.pair(2.0) == []
    assert q.next_wake() == pytest.approx(until)
    assert q.pair(until - 0.01) == []
    assert _names(q.pair(until)) == [("ann", "bob")]


def test_a_penalty_delays_the_widening_too() -> None:
    """The reach of a penalised waiter starts widening when its penalty ends."""
    q = QuickMatchQueue(POLICY)
    who = Waiting("ann", 1500.0, 60.0, "A", since=0.0, penalty_until=30.0)
    assert q.reach(who, 30.0) == q.reach(_w("x", 1500.0), 0.0)


def test_penalising_a_waiting_player_holds_it_back() -> None:
    q = QuickMatchQueue(POLICY)
    q.penalise("ann", 0.0)
    q.join(_w("ann", 1500.0, since=1.0))
    until = q.penalise("ann", 1.0)
    q.join(_w("bob", 1500.0, since=1.0))
    assert q.pair(1.0) == []
    assert _names(q.pair(until)) == [("ann", "bob")]


def test_a_penalised_player_that_leaves_is_gone() -> None:
    q = QuickMatchQueue(POLICY)
    q.penalise("ann", 0.0)
    q.penalise("ann", 0.0)
    q.join(_w("ann", 1500.0))
    assert q.leave("ann")
    q.join(_w("bob", 1500.0))
    assert q.pair(1000.0) == []


@pytest.mark.parametrize(
    "who",
    [_w("a", float("nan")), _w("a", 1500.0, since=float("inf")), Waiting("a", 1500.0, -1.0, "x", 0.0)],
)
def test_a_bad_waiter_is_refused_and_changes_nothing(who: Waiting) -> None:
    q = QuickMatchQueue(POLICY)
    with pytest.raises(ValueError):
        q.join(who)
    assert len(q) == 0


@pytest.mark.parametrize("field", ["gap_per_second", "recheck", "penalty_half_life", "window", "memory"])
def test_a_policy_that_cannot_work_is_refused(field: str) -> None:
    with pytest.raises(ValueError):
        PairingPolicy(**{field: 0})


def test_next_wake_says_when_to_call_again() -> None:
    q = QuickMatchQueue(POLICY)
    assert q.next_wake() is None
    q.join(_w("a", 1500.0))
    assert q.next_wake() == -ANY  # a join not examined yet: call pair now
    q.pair(0.0)
    assert q.next_wake() == 60.0  # alone: nothing happens before "anyone"


def test_pairing_is_deterministic() -> None:
    """The same joins at the same times give the same pairs, in the same order."""
    def run() -> list[tuple[str, str]]:
        rng = random.Random(7)
        q = QuickMatchQueue(POLICY)
        out: list[tuple[str, str]] = []
        for i in range(400):
            now = i * 0.1
            q.join(_w(f"p{i}", rng.gauss(1500.0, 300.0), now, deviation=rng.choice([60.0, 200.0, 500.0])))
            out += _names(q.pair(now))
        return out + _names(q.pair(1000.0))
    assert run() == run()


# ----- properties ------------------------------------------------------------------------------------

events = st.lists(
    st.tuples(
        st.sampled_from(["join", "join", "join", "leave", "pair", "penalise"]),
        st.integers(min_value=0, max_value=15),  # player
        st.floats(min_value=0.0, max_value=3000.0),  # rating
        st.sampled_from(["A", "B", "C", "D", "E"]),  # address
        st.floats(min_value=0.0, max_value=30.0),  # time step
    ),
    max_size=80,
)


@settings(max_examples=300, deadline=None)
@given(events, st.booleans())
def test_every_pair_keeps_the_rules(script: list[tuple[str, int, float, str, float]], record: bool) -> None:
    """Whatever happens, a pair is two different players of two addresses, both waiting and past
    their penalties, whose difference is within one's reach, never a back-to-back pair while others
    wait (also within one call); nobody is returned twice; and the queue holds exactly those who
    joined and were not paired or gone."""
    q = QuickMatchQueue(POLICY)
    now = 0.0
    inside: dict[str, Waiting] = {}
    last: dict[str, str] = {}
    for action, who, rating, address, step in script:
        now += step
        player = f"p{who}"
        if action == "join" and player not in inside:
            q.join(Waiting(player, rating, 100.0, address, now))
            inside[player] = q.waiting(player)  # type: ignore[assignment]
        elif action == "leave":
            assert q.leave(player) is (player in inside)
            inside.pop(player, None)
        elif action == "penalise":
            q.penalise(player, now)
            if player in inside:
                inside[player] = q.waiting(player)  # type: ignore[assignment]
        waiting_before = len(inside)
        for a, b in q.pair(now):
            assert a.player != b.player and a.address != b.address
            assert a.player in inside and b.player in inside
            assert now >= a.penalty_until and now >= b.penalty_until
            assert abs(a.rating - b.rating) <= max(q.reach(a, now), q.reach(b, now))
            if waiting_before > 2:
                assert last.get(a.address) != b.address and last.get(b.address) != a.address
            del inside[a.player], inside[b.player]
            waiting_before -= 2
            last[a.address], last[b.address] = b.address, a.address  # pair() records its pairs itself
            if record:
                q.record_pairing(a.address, b.address)  # and recording them again changes nothing
        assert len(q) == len(inside) and all(p in q for p in inside)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(min_value=0.0, max_value=3000.0), st.floats(min_value=0.0, max_value=500.0)),
                min_size=2, max_size=40))
def test_nobody_waits_past_any_after_when_someone_else_may_meet_them(players: list[tuple[float, float]]) -> None:
    """All from different addresses, nothing recorded: by 60 s after the last join at most one is left."""
    q = QuickMatchQueue(POLICY)
    for i, (rating, deviation) in enumerate(players):
        q.join(Waiting(f"p{i}", rating, deviation, f"a{i}", float(i)))
        q.pair(float(i))
    q.pair(len(players) - 1 + POLICY.any_after)
    assert len(q) <= 1


def test_a_crowd_of_one_address_meets_a_stranger_at_once() -> None:
    """100 connections of one address (more than the window) wait past 60 s with nobody else: a
    newcomer of that address still meets nobody; one of another address, however far in rating,
    meets the longest waiter of them at once."""
    q = QuickMatchQueue(POLICY)
    for i in range(100):
        q.join(_w(f"c{i}", 1000.0 + 10.0 * i, since=i * 0.01, address="crowd"))
    assert q.pair(1.0) == []
    assert q.pair(61.0) == []
    assert q.next_wake() is None  # all asleep: nothing changes by itself
    q.join(_w("more", 1500.0, since=61.0, address="crowd"))
    assert q.pair(61.0) == []
    q.join(_w("stranger", 3000.0, since=62.0, address="elsewhere"))
    assert _names(q.pair(62.0)) == [("c0", "stranger")]


def test_the_memory_of_last_opponents_and_offences_is_bounded() -> None:
    """Past ``memory`` addresses (players) the oldest is forgotten: a flood of one-off pairings or
    offenders cannot grow the queue's bookkeeping without bound."""
    q = QuickMatchQueue(PairingPolicy(memory=4))
    q.record_pairing("A", "B")
    q.record_pairing("C", "D")
    q.record_pairing("E", "F")  # 6 addresses > 4: A and B are forgotten
    q.join(_w("a", 1500.0, address="A"))
    q.join(_w("b", 1500.0, address="B"))
    q.join(_w("x", 3000.0, address="X"))
    assert _names(q.pair(0.0)) == [("a", "b")]
    for k in range(3):
        q.penalise("ann", float(k))  # ann: a third offence, 30 s
    for name in ("p1", "p2", "p3", "p4"):
        q.penalise(name, 3.0)
    q.join(_w("ann", 1500.0, since=3.0))  # forgotten: no wait
    q.join(_w("bob", 1500.0, since=3.0))
    assert _names(q.pair(3.0)) == [("ann", "bob")]


def test_a_long_run_keeps_its_wake_times_bounded() -> None:
    """Joins and leaves for a long time around a few who never meet: the stale wake times are dropped."""
    q = QuickMatchQueue(POLICY)
    for i in range(10):
        q.join(_w(f"stay{i}", 1000.0 + i, address="one"))
    for k in range(20_000):
        now = k * 0.001
        q.join(_w(f"n{k}", 1000.0 + k % 10, since=now, address="one"))
        q.pair(now)
        q.leave(f"n{k}")
    assert len(q) == 10
    assert len(q._wakes) <= 4 * len(q) + 1024  # (the bookkeeping itself: nothing else shows it)


@settings(max_examples=200, deadline=None)
@given(events, st.lists(st.sampled_from([45.0, 100.0, 500.0]), min_size=16, max_size=16), st.booleans())
def test_no_pair_that_may_meet_is_left_waiting(
    script: list[tuple[str, int, float, str, float]], deviations: list[float], same_address: bool,
) -> None:
    """After every pair(now), no two waiters past their penalties may meet and are within either
    one's reach (checked by brute force over all pairs; 16 players fit in one window): the wake
    times miss nobody."""
    q = QuickMatchQueue(PairingPolicy(allow_same_address=same_address))
    now = 0.0
    last: dict[str, str] = {}
    for action, who, rating, address, step in script:
        now += step
        player = f"p{who}"
        if action == "join" and player not in q:
            q.join(Waiting(player, rating, deviations[who], address, now))
        elif action == "leave":
            q.leave(player)
        elif action == "penalise":
            q.penalise(player, now)
        for a, b in q.pair(now):
            last[a.address], last[b.address] = b.address, a.address
        waiting = [w for p in (f"p{i}" for i in range(16)) if (w := q.waiting(p)) is not None and w.penalty_until <= now]
        for i, a in enumerate(waiting):
            for b in waiting[i + 1:]:
                if a.address == b.address and not same_address:
                    continue
                if len(q) > 2 and (last.get(a.address) == b.address or last.get(b.address) == a.address):
                    continue
                reach = max(q.reach(a, now), q.reach(b, now))
                assert abs(a.rating - b.rating) > reach - 1e-6, (a, b, now)


def test_a_newcomer_wakes_every_waiter_in_its_window_not_only_its_neighbour() -> None:
    """x (RD 400, widest reach) sits behind c, which x may not meet (one address): when n joins,
    x's reach covers n first (at 12.5 s), before c's or n's own, and x is woken for it then."""
    q = QuickMatchQueue(POLICY)
    q.join(_w("x", 1000.0, since=0.0, deviation=400.0, address="home"))
    q.join(_w("c", 1100.0, since=9.0, address="home"))
    assert q.pair(9.0) == []
    q.join(_w("n", 1400.0, since=10.0, address="away"))
    assert q.pair(10.0) == []
    assert q.pair(12.4) == []
    assert _names(q.pair(12.5)) == [("x", "n")]  # 75 + 10·12.5 + 200 = 400


def test_a_new_pairing_ends_a_back_to_back_hold_at_once() -> None:
    """a1 (A) and b1 (B) are held back (A and B met last); in the same call B meets C and A meets D,
    so A–B is no longer back to back: a1 and b1 meet in that call too."""
    q = QuickMatchQueue(POLICY)
    q.record_pairing("A", "B")
    q.join(_w("a1", 1500.0, address="A"))
    q.join(_w("b1", 1500.0, address="B"))
    q.join(_w("far", 3000.0, address="X"))
    assert q.pair(0.0) == []
    for name, rating, address in (("b2", 2000.0, "B"), ("c1", 2000.0, "C"), ("a2", 2500.0, "A"), ("d1", 2500.0, "D")):
        q.join(_w(name, rating, since=1.0, address=address))
    assert sorted(_names(q.pair(1.0))) == [("a1", "b1"), ("a2", "d1"), ("b2", "c1")]
