"""A returning player's deviation grows with its time away (PROTOCOL.md §17 "Ratings"):
lichess's 0.21436 rating periods a day since the player's last rating change widen its own
deviation before the game's update (``glicko2.update(..., periods=glicko2.periods_between(...))``).
"""

from __future__ import annotations

import hashlib

from support.harness import Client, Harness
from support.players import identify, key

from mineduel.server import glicko2
from mineduel.server.players import public_id
from mineduel.server.storage import PlayerRow, Write

DAY = 86_400.0


def rated_pair(h: Harness) -> tuple[Client, Client]:
    """Ann and Bob identified, seated in a rated room (as test_players.py)."""
    a, b = h.connect("10.0.0.1"), h.connect("10.0.0.2")
    identify(a, 1, "Ann")
    identify(b, 2, "Bob")
    created = a.send(type="create_room", rated=True, client_seed="a")
    a.token, a.room = created[0]["token"], created[0]["room"]
    joined = b.send(type="join", room=a.room, client_seed="b")
    b.token, b.room = joined[0]["token"], a.room
    return a, b


def start(a: Client, b: Client) -> tuple[Client, Client]:
    a.send(type="ready")
    b.send(type="ready")
    first = a if a.last("match_start")["seat"] == 0 else b
    return first, (b if first is a else a)


def _returning(h: Harness, n: int, name: str, idle_days: float) -> PlayerRow:
    """A settled player (RD 60, σ 0.06) whose last rated game was ``idle_days`` ago."""
    hashed = hashlib.sha256(key(n).encode()).hexdigest()
    last = h.clock.seconds() - idle_days * DAY
    row = PlayerRow(hashed, public_id(hashed), name, 1500.0, 60.0, 0.06, 40, 20, 20, 0, last - 100 * DAY, last)
    h.storage.commit(Write(players=[row]))
    return row


def test_a_year_away_widens_rd_60_to_about_110_before_the_games_update() -> None:
    h = Harness()
    _returning(h, 1, "Ann", 365.0)
    _returning(h, 2, "Bob", 0.0)  # played just now: no widening
    a, b = rated_pair(h)
    first, second = start(a, b)
    wall = h.clock.seconds()
    settled = glicko2.Rating(1500.0, 60.0, 0.06)
    away = glicko2.periods_between(wall - 365.0 * DAY, wall)
    widened = glicko2.update(settled, [], periods=away)
    assert 108.0 < widened.deviation < 112.0  # the brief's "~110" (lichess: a year back is about provisional)
    first.send(type="resign")
    scores = {first: 0.0, second: 1.0}
    for client, periods, opponent in ((a, away, settled), (b, 0.0, settled)):
        expected = glicko2.update(settled, [(opponent, scores[client])], periods=periods)
        rating = client.last("match_end")["rating"]
        assert rating["after"] == round(expected.value, 1) and rating["deviation"] == round(expected.deviation, 1)
    ann, bob = a.last("match_end")["rating"], b.last("match_end")["rating"]
    assert ann["deviation"] > bob["deviation"] + 20  # Ann's year away counts, Bob's none
    assert abs(ann["change"]) > abs(bob["change"])  # an uncertain rating moves more


def test_a_rename_does_not_reset_the_time_away() -> None:
    """``updated`` is the last rating change: renaming (or identifying with a new name) keeps it."""
    h = Harness()
    row = _returning(h, 1, "Ann", 365.0)
    c = h.connect()
    identify(c, 1, "Annie")
    c.send(type="rename", name="Anna")
    h.advance(0)
    stored = next(r for r in h.storage.players.values() if r.player == row.player)
    assert stored.name == "Anna" and stored.updated == row.updated
