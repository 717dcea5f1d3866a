"""Players without accounts, ratings, profiles and the leaderboard (issue 20, PROTOCOL.md §17), through
the server core on ``task.Clock``: identify/rename and the name filter, the per-address limits, rated
rooms, the rating change of a rated match's end (checked against ``glicko2.update`` directly), a void
match changing nothing, the pair limit, durability across a restart, a failed commit undoing it all."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from support.harness import Client, Harness
from support.players import identify, key

from mineduel.server import glicko2
from mineduel.server.players import clean_name, load_deny_list, public_id
from mineduel.server.storage import PlayerRow, RatedResult, SQLiteStorage, Write
from mineduel.shared.wire.codec import ProtocolError


def rated_pair(h: Harness) -> tuple[Client, Client]:
    """Ann and Bob identified, seated in a rated room, not ready yet."""
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


# ----- identity ------------------------------------------------------------------------------------


def test_identify_answers_the_player_and_stores_only_the_key_hash() -> None:
    """§17: player then ok; the public id is sha256("player:" + sha256hex(K))[:16], tag its first 4;
    the database holds sha256(K) and never the key."""
    h = Harness()
    a = h.connect()
    player = identify(a, 1, "  Ann  ")
    hashed = hashlib.sha256(key(1).encode()).hexdigest()
    pid = hashlib.sha256(f"player:{hashed}".encode()).hexdigest()[:16]
    assert player == {
        "type": "player", "player": pid, "name": "Ann", "tag": pid[:4], "display": f"Ann#{pid[:4]}",
        "rating": {"value": 1500.0, "deviation": 500.0, "provisional": True}, "games": 0, "wins": 0, "losses": 0,
        "draws": 0,
    }
    assert public_id(hashed) == pid
    row = h.storage.load_player(hashed)
    assert row is not None and row.player == pid and row.name == "Ann"
    assert key(1) not in repr(h.storage.__dict__)


def test_a_known_key_keeps_its_player_and_takes_the_new_name() -> None:
    h = Harness()
    first = identify(h.connect(), 1, "Ann")
    again = identify(h.connect(), 1, "Annie")
    assert again["player"] == first["player"] and again["name"] == "Annie"
    assert len(h.storage.players) == 1


def test_one_connection_is_one_player() -> None:
    """identify with another key: already_identified, nothing changes; the same key renames."""
    h = Harness()
    a = h.connect()
    identify(a, 1, "Ann")
    refused = a.send(type="identify", key=key(2), name="Eve")
    assert refused[0]["code"] == "already_identified" and len(refused) == 1
    assert len(h.storage.players) == 1
    assert identify(a, 1, "Ann2")["name"] == "Ann2"


def test_rename_needs_identify_and_answers_player_then_ok() -> None:
    h = Harness()
    a = h.connect()
    assert a.send(type="get_profile")[0]["code"] == "identify_required"  # a reading request: answered
    identify(a, 1, "Ann")
    replies = a.send(type="rename", name="Bob", id="r")
    assert [r["type"] for r in replies] == ["player", "ok"] and replies[0]["display"].startswith("Bob#")
    assert h.storage.load_player(hashlib.sha256(key(1).encode()).hexdigest()).name == "Bob"


@pytest.mark.parametrize(
    "name", ["", "   ", "x" * 21, "bell\x07", "a\u202eb", "zero\u200bwidth", "line\u2028break", "MegaJerk", "xxjerkxx"],
)
def test_the_name_filter_refuses_with_bad_name(name: str) -> None:
    """1–20 characters after trimming, no control or invisible characters, no deny-list word
    (case-insensitive substring); nothing is stored."""
    h = Harness(name_deny=("jerk",))
    a = h.connect()
    replies = a.send(type="identify", key=key(1), name=name)
    assert [r["type"] for r in replies] == ["error"] and replies[0]["code"] == "bad_name"
    assert h.storage.players == {}


def test_names_that_pass() -> None:
    assert clean_name("  김철수  ", ()) == "김철수"
    assert clean_name("x" * 20, ()) == "x" * 20
    assert clean_name("Ann Lee", ("bob",)) == "Ann Lee"
    with pytest.raises(ProtocolError):
        clean_name("BOBBY", ("bob",))


def test_the_deny_file_is_read_case_folded(tmp_path: Path) -> None:
    path = tmp_path / "deny.txt"
    path.write_text("# words\nJerk\n\n  Idiot \n", encoding="utf-8")
    assert load_deny_list(str(path)) == ("idiot", "jerk")


def test_an_address_cannot_flood_the_players_table() -> None:
    """Per address: at most new_players_per_address new keys per window, and identify calls are a
    token bucket; another address is not affected; refusals change nothing."""
    h = Harness(new_players_per_address=3, identifies_per_address=100)
    for n in range(3):
        identify(h.connect("10.0.0.9"), n, f"P{n}")
    refused = h.connect("10.0.0.9").send(type="identify", key=key(99), name="Flood")
    assert refused[0]["code"] == "too_many_players" and len(h.storage.players) == 3
    identify(h.connect("10.0.0.9"), 1, "P1again")  # a known key is no new player
    identify(h.connect("10.0.0.8"), 50, "Other")
    h.advance(24 * 3600 + 1)
    identify(h.connect("10.0.0.9"), 99, "Later")
    h2 = Harness(identifies_per_address=2, identify_window=60.0)
    c = h2.connect("10.0.0.5")
    identify(c, 1, "A")
    identify(c, 1, "B")
    assert c.send(type="rename", name="C")[0]["code"] == "too_many_players"
    h2.advance(30)  # one token back
    assert c.send(type="rename", name="C")[0]["type"] == "player"


# ----- rated rooms -----------------------------------------------------------------------------------


def test_a_rated_room_needs_identified_players_and_shows_them() -> None:
    h = Harness()
    a, b = h.connect("10.0.0.1"), h.connect("10.0.0.2")
    assert a.send(type="create_room", rated=True)[0]["code"] == "identify_required"
    a_player = identify(a, 1, "Ann")
    created = a.send(type="create_room", rated=True)
    room = created[1]
    assert room["rated"] is True and room["me"]["display"] == a_player["display"] and room["me"]["name"] == "Ann"
    assert room["me"]["rating"] == 1500.0 and room["me"]["provisional"] is True
    assert b.send(type="join", room=created[0]["room"])[0]["code"] == "identify_required"
    twin = h.connect("10.0.0.3")
    identify(twin, 1, "Ann")
    assert twin.send(type="join", room=created[0]["room"])[0]["code"] == "already_seated"
    identify(b, 2, "Bob")
    joined = b.send(type="join", room=created[0]["room"])
    assert joined[1]["opponent"]["display"] == a_player["display"] and joined[1]["rated"] is True


def test_an_unrated_room_is_the_same_bytes_as_before_for_unidentified_seats() -> None:
    h = Harness()
    a, _b = h.pair()
    room = a.last("room")
    assert "rated" not in room and "display" not in room["me"] and "display" not in room["opponent"]


Pair = tuple[glicko2.Rating, glicko2.Rating]


def _expected(before: Pair, scores: tuple[float, float]) -> Pair:
    return (glicko2.update(before[0], [(before[1], scores[0])]), glicko2.update(before[1], [(before[0], scores[1])]))


def test_a_rated_match_end_updates_both_ratings_in_the_results_commit() -> None:
    """Resign (O11) ends a rated match: match_end.rating for each seat is glicko2.update's result,
    both players' rows and rated_results are in the same commit as the match's result."""
    h = Harness()
    a, b = rated_pair(h)
    first, second = start(a, b)
    commits = h.storage.commits
    first.send(type="resign")
    assert h.storage.commits == commits + 1  # one transaction: the result, both players, both results
    match_id = first.last("match_end")["match_id"]
    assert match_id in h.storage.results
    after = _expected((glicko2.Rating(), glicko2.Rating()), (0.0, 1.0))
    for client, new, old_value in ((first, after[0], 1500.0), (second, after[1], 1500.0)):
        rating = client.last("match_end")["rating"]
        assert rating == {"before": old_value, "after": round(new.value, 1), "change": round(new.value - old_value, 1),
                          "deviation": round(new.deviation, 1), "provisional": glicko2.provisional(new)}
    rows = {r.name: r for r in h.storage.players.values()}
    assert (rows["Ann"].games, rows["Bob"].games) == (1, 1)
    loser = rows["Ann"] if first is a else rows["Bob"]
    winner = rows["Bob"] if first is a else rows["Ann"]
    assert (loser.losses, winner.wins) == (1, 1)
    assert loser.rating == after[0].value and loser.deviation == after[0].deviation
    assert loser.volatility == after[0].volatility
    assert {(r.player, r.result) for r in h.storage.rated_results.values()} == {(loser.player, "loss"), (winner.player, "win")}
    # The room shows the new ratings; a rematch is rated again from them.
    assert first.last("room")["me"]["rating"] == round(after[0].value, 1)


def test_a_void_match_changes_nothing() -> None:
    """O12: both away, both graces run out → void; ratings, counts and rated results unchanged,
    match_end.rating says before == after, change 0 (seen on resume)."""
    h = Harness()
    a, b = rated_pair(h)
    start(a, b)
    a.drop()
    b.drop()
    h.advance(h.config.grace_seconds + 1)
    h.turn()
    back = h.connect("10.0.0.1")
    back.send(type="resume", room=a.room, token=a.token)
    end = back.last("match_end")
    assert end["result"]["reason"] == "void"
    assert end["rating"] == {"before": 1500.0, "after": 1500.0, "change": 0.0, "deviation": 500.0, "provisional": True,
                             "unrated": "void"}
    assert all(p.games == 0 and p.rating == 1500.0 for p in h.storage.players.values())
    assert h.storage.rated_results == {}


def test_an_unrated_room_carries_no_rating() -> None:
    h = Harness()
    a, b = h.connect("10.0.0.1"), h.connect("10.0.0.2")
    identify(a, 1, "Ann")
    identify(b, 2, "Bob")
    code = a.send(type="create_room")[0]["room"]
    b.send(type="join", room=code)
    a.room = b.room = code
    first, _ = start(a, b)
    first.send(type="resign")
    assert "rating" not in first.last("match_end")
    assert all(p.games == 0 for p in h.storage.players.values())


def test_the_pair_limit_plays_later_matches_unrated_and_says_so() -> None:
    """Only the first rated_pair_limit rated results of one pair per 24 h change ratings; the next
    match says "unrated":"pair_limit"; a day later they count again."""
    h = Harness(rated_pair_limit=2)
    a, b = rated_pair(h)
    first, _ = start(a, b)
    changes = []
    for _ in range(3):
        first.send(type="resign")
        changes.append(first.last("match_end")["rating"])
        a.send(type="rematch")
        b.send(type="rematch")
        first = a if a.last("match_start")["seat"] == 0 else b
    assert [c.get("unrated") for c in changes] == [None, None, "pair_limit"]
    assert changes[2]["change"] == 0.0 and changes[2]["before"] == changes[2]["after"]
    assert all(p.games == 2 for p in h.storage.players.values())
    h.rooms.wall = lambda: h.clock.seconds() + 24 * 3600 + 1  # a day later (Unix time)
    first.send(type="resign")
    assert "unrated" not in first.last("match_end")["rating"]


def test_a_failed_commit_at_the_end_undoes_the_ratings_too() -> None:
    """The match's end and the ratings are one commit: when it fails, neither happened (§11)."""
    h = Harness()
    a, b = rated_pair(h)
    first, _ = start(a, b)
    h.storage.fail_next = True
    assert first.send(type="resign")[-1]["code"] == "internal_error"
    assert all(p.games == 0 for p in h.storage.players.values())
    assert all(p.games == 0 for p in h.rooms.players.by_key.values())
    assert h.storage.rated_results == {}


def test_ratings_survive_a_restart(tmp_path: Path) -> None:
    """Durable with the match: a new process on the same database has the ratings, the profile's
    recent match, and the match_end rating on resume."""
    db = tmp_path / "r.db"
    storage = SQLiteStorage(db)
    h = Harness(storage=storage)
    a, b = rated_pair(h)
    first, _ = start(a, b)
    first.send(type="resign")
    end = first.last("match_end")
    storage.close()
    h2 = Harness(seed=7, storage=SQLiteStorage(db), clock=h.clock)
    h2.rooms.restore_all()
    h2.advance(0)
    back = h2.connect("10.0.0.1")
    identify(back, 1 if first is a else 2, "Ann" if first is a else "Bob")
    profile = back.send(type="get_profile", id=3)[0]
    assert profile["rating"]["value"] == end["rating"]["after"] and profile["games"] == 1
    assert profile["recent"][0]["match_id"] == end["match_id"] and profile["recent"][0]["result"] == "loss"
    assert profile["recent"][0]["change"] == end["rating"]["change"]
    assert profile["recent"][0]["opponent"].startswith("Bob#" if first is a else "Ann#")
    back.send(type="resume", room=first.room, token=first.token)
    assert back.last("match_end")["rating"] == end["rating"]
    assert back.last("room")["rated"] is True


# ----- profile and leaderboard -------------------------------------------------------------------------


def _row(n: int, rating: float, deviation: float, games: int = 10) -> PlayerRow:
    hashed = hashlib.sha256(key(n).encode()).hexdigest()
    return PlayerRow(hashed, public_id(hashed), f"P{n}", rating, deviation, 0.06, games, games, 0, 0, 1.0, 1.0)


def test_the_leaderboard_ranks_only_deviation_75_or_less() -> None:
    """Top by rating (then id), only RD ≤ 75; ``me`` is the place of an identified ranked player,
    null when not identified or not ranked."""
    h = Harness()
    rows = [_row(1, 1800.0, 60.0), _row(2, 2000.0, 75.0), _row(3, 2200.0, 75.1), _row(4, 1600.0, 50.0, 3)]
    h.storage.commit(Write(players=rows))
    c = h.connect()
    board = c.send(type="get_leaderboard", id=1)[0]
    assert [(e["rank"], e["display"], e["rating"]) for e in board["top"]] == [
        (1, f"P2#{rows[1].player[:4]}", 2000.0), (2, f"P1#{rows[0].player[:4]}", 1800.0),
        (3, f"P4#{rows[3].player[:4]}", 1600.0)]
    assert board["top"][2]["games"] == 3 and board["me"] is None and board["id"] == 1
    identify(c, 4, "P4")
    assert c.send(type="get_leaderboard")[0]["me"] == {"rank": 3, "rating": 1600.0}
    d = h.connect("10.0.0.2")
    identify(d, 3, "P3")  # RD 75.1: not ranked
    assert d.send(type="get_leaderboard")[0]["me"] is None


def test_profiles_own_and_by_id() -> None:
    h = Harness()
    rows = [_row(1, 1800.0, 60.0), _row(2, 1700.0, 80.0)]
    results = [RatedResult(f"{i:016x}", rows[0].player, rows[1].player, "win" if i % 2 else "loss", 1790.0 + i,
                           1800.0 + i, 100.0 + i) for i in range(25)]
    h.storage.commit(Write(players=rows, rated_results=results))
    c = h.connect()
    assert c.send(type="get_profile")[0]["code"] == "identify_required"
    assert c.send(type="get_profile", player="0" * 16)[0]["code"] == "not_found"
    profile = c.send(type="get_profile", player=rows[0].player, id=9)[0]
    assert profile["display"] == f"P1#{rows[0].player[:4]}" and profile["games"] == 10 and profile["id"] == 9
    assert profile["rating"] == {"value": 1800.0, "deviation": 60.0, "provisional": False}
    assert len(profile["recent"]) == 20
    assert [r["at"] for r in profile["recent"]] == [124.0 - i for i in range(20)]
    assert profile["recent"][0] == {"match_id": f"{24:016x}", "opponent": f"P2#{rows[1].player[:4]}", "result": "loss",
                                    "change": 10.0, "at": 124.0}
    identify(c, 2, "P2")
    assert c.send(type="get_profile")[0]["player"] == rows[1].player


def test_a_failed_commit_of_a_new_player_identifies_nobody() -> None:
    """A new player is stored before ``player`` is shown; when that commit fails the connection is
    not identified and the key is unknown (§11: nothing changed)."""
    h = Harness()
    a = h.connect()
    h.storage.fail_next = True
    replies = a.send(type="identify", key=key(1), name="Ann")
    assert [r["type"] for r in replies] == ["error"] and replies[0]["code"] == "internal_error"
    assert h.storage.players == {} and h.rooms.players.of(a.pid) is None
    assert h.rooms.players.by_key == {}
    assert a.send(type="get_profile")[0]["code"] == "identify_required"  # a reading request: answered


def test_the_server_options(tmp_path: Path) -> None:
    """HOSTING.md: the players' and the quick match's options reach the config; an unreadable deny
    file or a pairing constant the policy refuses stops the server at once."""
    from mineduel.server.cli import parse_args

    deny = tmp_path / "deny.txt"
    deny.write_text("Jerk\n", encoding="utf-8")
    config, _ = parse_args([
        "--name-deny-file", str(deny), "--identifies-per-address", "3", "--new-players-per-address", "4",
        "--rated-pair-limit", "2", "--quick-confirm-seconds", "15", "--quick-gap-start", "50",
        "--quick-gap-per-second", "5", "--quick-any-after", "30", "--quick-same-address",
        "--quick-penalty-base", "20", "--quick-penalty-max", "200",
    ])
    assert config.name_deny == ("jerk",)
    assert (config.identifies_per_address, config.new_players_per_address, config.rated_pair_limit) == (3, 4, 2)
    assert config.quick_confirm_seconds == 15.0
    p = config.pairing
    assert (p.gap_start, p.gap_per_second, p.any_after, p.allow_same_address, p.penalty_base, p.penalty_max) == (
        50.0, 5.0, 30.0, True, 20.0, 200.0)
    with pytest.raises(SystemExit):
        parse_args(["--name-deny-file", str(tmp_path / "missing.txt")])
    with pytest.raises(SystemExit):
        parse_args(["--quick-gap-per-second", "0"])


def test_reading_profiles_keeps_nothing_in_memory_and_the_top_is_shared_for_a_second() -> None:
    """A flood of get_profile cannot fill the server's memory with players (they are read, shown,
    dropped); the leaderboard's top is read at most once a second, a new row shows after it."""
    h = Harness()
    rows = [_row(n, 1700.0 + n, 60.0) for n in range(1, 6)]
    h.storage.commit(Write(players=rows))
    c = h.connect()
    for row in rows:
        assert c.send(type="get_profile", player=row.player)[0]["type"] == "profile"
    assert h.rooms.players.by_key == {}
    assert len(c.send(type="get_leaderboard")[0]["top"]) == 5
    h.storage.commit(Write(players=[_row(9, 1600.0, 60.0)]))
    assert len(c.send(type="get_leaderboard")[0]["top"]) == 5  # the same second: shared
    h.advance(1.0)
    assert len(c.send(type="get_leaderboard")[0]["top"]) == 6
