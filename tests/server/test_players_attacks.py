"""Issue 20 attacked as a hostile peer would (red-team review, docs/SECURITY.md "Players and
ratings"): names built to disguise themselves or break a screen, a seat name that skips the
player filter, a matched seat resumed by another player, one key matched twice at once, two keys
of one address rating each other through a room by code, a leaderboard flood that recounts a
low place, and a failed commit of a rated end retried. Each test failed before its fix."""

from __future__ import annotations

import hashlib
import random
import unicodedata

import pytest
from support.harness import Client, Harness
from support.players import identify, key

from mineduel.server import glicko2
from mineduel.server.matchmaking import PairingPolicy
from mineduel.server.players import check_name, clean_name
from mineduel.server.storage import MemoryStorage, Write
from mineduel.shared.wire import codec
from mineduel.shared.wire.codec import ProtocolError


def queued(h: Harness, n: int, name: str, address: str) -> Client:
    c = h.connect(address)
    identify(c, n, name)
    assert [r["type"] for r in c.send(type="quick_match")] == ["queue", "ok"]
    return c


# ----- names --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [
    "A" + "\u0301" * 19,  # a "Zalgo" stack of combining marks drawn over the lines around it
    "x\u0301\u0302\u0303\u0304",  # four on one letter (x: NFC composes none of them)
    "\u0301abc",  # a mark first: it lands on whatever is drawn before the name
    "\u3164",  # Hangul filler: a letter that draws nothing (a blank name)
    "\u115f\u1160",  # Hangul choseong/jungseong fillers
    "\u2800",  # the braille blank
    "An\u034fn",  # the combining grapheme joiner (invisible)
    "Ann\ufe0f",  # a variation selector after a letter: an invisible twin of "Ann"
    "A\u180b",  # a Mongolian selector
    "Ann#4b52",  # the tag's separator: a name that fakes another player's display
    "Ann\uff034b52",  # its full-width look-alike
    "Ann\ufe5f4b52",  # and its small form
    "Ann" + " " * 10 + "x",  # a run of spaces that pushes the real tag out of sight
    "\u5c71\u3000\u3000\u592a",  # also ideographic ones
    "\uff4a\uff45\uff52\uff4b",  # a denied word in full-width letters (NFKC finds it)
    "J\u00e9rk",  # or with an accent added (compared without its marks too)
    "je\u0308rk",
])
def test_names_that_disguise_themselves_are_bad_names(name: str) -> None:
    h = Harness(name_deny=("jerk",))
    a = h.connect()
    replies = a.send(type="identify", key=key(1), name=name)
    assert [r["type"] for r in replies] == ["error"] and replies[0]["code"] == "bad_name", replies
    assert h.storage.players == {} and h.rooms.players.of(a.pid) is None


def test_names_of_real_scripts_still_pass() -> None:
    """The rules refuse disguises, not languages: Thai tone marks, two accents, an emoji with its
    selector, a Japanese name with one ideographic space, 20 wide characters, Indic and Tibetan
    stacks."""
    for name in ["\u0e19\u0e49\u0e33", "e\u0301\u0302", "\u2764\ufe0f", "\u5c71\u7530\u3000\u592a\u90ce",
                 "\u6f22" * 20, "Nguy\u1ec5n V\u0103n", "\u0915\u094d\u0937\u093f",
                 "\u0f66\u0f92\u0fb2\u0f74\u0f56"]:  # ... Devanagari, Tibetan (three marks stacked)
        assert clean_name(name, ()) == unicodedata.normalize("NFC", name)
    with pytest.raises(ProtocolError):
        check_name("x\u202ey", ())


def test_a_seat_name_follows_the_player_name_rules() -> None:
    """create_room/join names are shown to the opponent, the spectators and every live_rooms
    asker: a bidirectional override or a denied word there is bad_name too, nothing is created."""
    h = Harness(name_deny=("jerk",))
    a = h.connect()
    assert a.send(type="create_room", name="Ann\u202egnp")[0]["code"] == "bad_name"
    assert a.send(type="create_room", name="BigJerk", listed=True)[0]["code"] == "bad_name"
    assert h.rooms.rooms == {}
    code = a.send(type="create_room", name="Ann")[0]["room"]
    b = h.connect("10.0.0.2")
    assert b.send(type="join", room=code, name="B\u200bob")[0]["code"] == "bad_name"
    assert len(h.rooms.rooms[code].seats) == 1
    assert b.send(type="join", room=code, name="Bob")[0]["type"] == "joined"


# ----- the quick match ----------------------------------------------------------------------------


def test_a_matched_seat_resumed_by_another_player_does_not_queue_that_connection_as_the_first() -> None:
    """Ann confirms, then her token is resumed on a connection identified as Cy: at the
    dissolution Cy's connection must not go back in the queue under Ann's id (Cy would then be
    paired with Ann's rating, Ann could no longer queue, and Cy could meet Cy)."""
    h = Harness()
    a = queued(h, 1, "Ann", "10.0.0.1")
    queued(h, 2, "Bob", "10.0.0.2")
    h.advance(0)
    h.turn()
    matched = a.last("matched")
    a.send(type="ready")
    cy = h.connect("10.0.0.3")
    identify(cy, 3, "Cy")
    assert cy.send(type="resume", room=matched["room"], token=matched["token"])[0]["type"] == "joined"
    h.advance(10)
    h.turn()
    quick = h.core.quick
    assert not quick.queued(cy.pid) and quick.peer_of == {}
    assert cy.last("queue") == {"type": "queue", "status": "left", "reason": "not_ready"}
    ann = h.connect("10.0.0.1")
    identify(ann, 1, "Ann")
    assert [r["type"] for r in ann.send(type="quick_match")] == ["queue", "ok"]  # and Ann was not penalised:
    bob2 = queued(h, 4, "Dee", "10.0.0.4")
    h.advance(0)
    h.turn()
    assert ann.last("matched")["room"] == bob2.last("matched")["room"]


def test_one_player_is_matched_once_at_a_time() -> None:
    """Ann matched on one connection (confirmation running) cannot queue on her second one: one
    key in two quick rooms at once would play two rated games at once."""
    h = Harness()
    ann = queued(h, 1, "Ann", "10.0.0.1")
    queued(h, 2, "Bob", "10.0.0.2")
    h.advance(0)
    h.turn()
    twin = h.connect("10.0.0.5")
    identify(twin, 1, "Ann")
    assert twin.send(type="quick_match")[0]["code"] == "already_queued"
    h.advance(10)  # nobody confirmed: dissolved, both out
    h.turn()
    assert [r["type"] for r in twin.send(type="quick_match")] == ["queue", "ok"]
    # Leaving the matched room frees the player at once (no wait for the 10 s to run out).
    assert [r["type"] for r in twin.send(type="leave_queue")][-1] == "ok"
    queued(h, 3, "Cy", "10.0.0.3")
    assert ann.send(type="quick_match")[0]["type"] == "queue"
    h.advance(0)
    h.turn()
    assert ann.last("matched")
    assert twin.send(type="quick_match")[0]["code"] == "already_queued"
    assert ann.send(type="leave")[-1]["type"] == "ok"
    assert [r["type"] for r in twin.send(type="quick_match")] == ["queue", "ok"]


def test_rotating_keys_does_not_dodge_the_leavers_wait() -> None:
    """The first offence of a player is free and penalties were counted per player, so an address
    with a fresh key for each no-show never waited. Offences now count per address too: after two
    no-shows from one address (two keys), a third fresh key from it waits the 15 s of a second
    offence before it is paired."""
    h = Harness()
    for n in (1, 2):
        queued(h, n, f"Grief{n}", "10.6.6.6")
        queued(h, 10 + n, f"Honest{n}", f"10.0.0.{n}")
        h.advance(0)
        h.turn()
        h.advance(10)  # the griefer never confirms (nor does the honest one here: both out)
        h.turn()
    fresh = queued(h, 3, "Grief3", "10.6.6.6")
    other = queued(h, 13, "Honest3", "10.0.0.3")
    h.advance(0)
    h.turn()
    assert fresh.all("matched") == [] and other.all("matched") == []
    h.advance(14)
    h.core.quick.pair_now()  # the 0.5 s pairing tick (core.start() runs it; the harness does not)
    h.turn()
    assert fresh.all("matched") == []
    h.advance(1.5)
    h.core.quick.pair_now()
    h.turn()
    assert fresh.last("matched")["room"] == other.last("matched")["room"]


def test_a_seat_left_in_a_matched_room_is_not_for_a_stranger() -> None:
    """Bob leaves the matched room during the confirmation and hands its code to Yves: Yves may not
    take the seat (the queue chose Ann's opponent, not Bob); Bob himself may not come back either."""
    h = Harness()
    a = queued(h, 1, "Ann", "10.0.0.1")
    b = queued(h, 2, "Bob", "10.0.0.2")
    h.advance(0)
    h.turn()
    code = a.last("matched")["room"]
    assert b.send(type="leave")[-1]["type"] == "ok"
    yves = h.connect("10.0.0.3")
    identify(yves, 3, "Yves")
    assert yves.send(type="join", room=code, client_seed="y")[0]["code"] == "room_full"
    assert b.send(type="join", room=code, client_seed="b")[0]["code"] == "room_full"
    assert len(h.rooms.rooms[code].seats) == 1
    a.send(type="ready")
    h.advance(10)
    h.turn()
    assert code not in h.rooms.rooms and a.last("queue")["status"] == "waiting"


class _Broken(MemoryStorage):
    """A database that refuses every commit while ``down`` (a full disk that stays full)."""

    down = False

    def commit(self, write: Write) -> None:
        if self.down:
            raise OSError("no space left on device")
        super().commit(write)


def test_no_pairing_while_the_database_fails() -> None:
    """Two waiters far apart in rating; the database fails (another request's commit) and stays
    down past the 60 s after which anyone meets: pairing them then made a room that could not be
    stored, so both were closed with internal_error and lost their place. They wait on instead, and
    are paired once a commit lands again."""
    storage = _Broken()
    h = Harness(storage=storage)
    a = h.connect("10.0.0.1")
    identify(a, 1, "Ann")
    b = h.connect("10.0.0.2")
    identify(b, 2, "Bob")
    strong = h.rooms.players.of(a.pid)
    assert strong is not None
    strong.rating = glicko2.Rating(2400.0, 50.0, 0.06)
    for c in (a, b):
        assert c.send(type="quick_match")[0]["type"] == "queue"
    h.advance(0)
    h.turn()
    assert a.all("matched") == []  # too far apart for now
    storage.down = True
    assert h.connect("10.0.0.3").send(type="create_room")[0]["code"] == "internal_error"
    for _ in range(130):  # 65 s of 0.5 s pairing ticks
        h.advance(0.5)
        h.core.quick.pair_now()
        h.turn()
    assert not a.closed and not b.closed and a.all("matched") == []
    assert h.core.quick.queued(a.pid) and h.core.quick.queued(b.pid)
    storage.down = False
    h.rooms.tick()  # the once-a-second clock write lands: healthy again
    h.turn()
    h.core.quick.pair_now()
    h.turn()
    assert a.last("matched")["room"] == b.last("matched")["room"]


def _pipelined(h: Harness, c: Client, *lines: dict[str, object]) -> list[dict[str, object]]:
    """Several lines read in one reactor turn (one TCP segment), then the turn's commit."""
    c.new()
    for line in lines:
        h.core.line_received(c.pid, codec.encode(line)[:-1])
    h.turn()
    return c.new()


def test_a_quick_match_standing_on_an_identify_whose_commit_fails_is_undone() -> None:
    """identify (a new key) and quick_match in one segment, and the commit of the new player fails:
    the identify is undone (internal_error), and so must the join be — it was answered queue/ok
    before the identify's error and left a waiter the server no longer knew. The same for a known
    player whose rename in that turn fails: nothing of the turn happened."""
    h = Harness()
    a = h.connect("10.0.0.1")
    h.storage.fail_next = True
    replies = _pipelined(h, a, {"type": "identify", "key": key(1), "name": "Ann", "id": 1},
                         {"type": "quick_match", "id": 2})
    assert [(r["type"], r.get("code"), r.get("id")) for r in replies] == [
        ("error", "internal_error", 1), ("error", "internal_error", 2)]
    assert not h.core.quick.queued(a.pid) and len(h.core.quick.queue) == 0
    h.rooms.tick()  # the storage is back
    h.turn()
    identify(a, 1, "Ann")
    h.storage.fail_next = True
    replies = _pipelined(h, a, {"type": "rename", "name": "Annie", "id": 3}, {"type": "quick_match", "id": 4})
    assert [(r["type"], r.get("code")) for r in replies] == [("error", "internal_error"), ("error", "internal_error")]
    assert not h.core.quick.queued(a.pid) and len(h.core.quick.queue) == 0
    assert h.rooms.players.of(a.pid) is not None  # still Ann (her stored row)


# ----- rating farming -------------------------------------------------------------------------------


def _rated_room(h: Harness, addresses: tuple[str, str]) -> tuple[Client, Client]:
    a, b = h.connect(addresses[0]), h.connect(addresses[1])
    identify(a, 1, "Ann")
    identify(b, 2, "Bob")
    room = a.send(type="create_room", rated=True, client_seed="a")[0]["room"]
    b.send(type="join", room=room, client_seed="b")
    a.send(type="ready")
    b.send(type="ready")
    return a, b


def test_two_keys_of_one_address_do_not_rate_each_other_through_a_room_by_code() -> None:
    """The quick match never pairs one address with itself; a rated room by code must not undo that
    rule: its matches are played, and say "unrated":"same_address" (unless the server allows one
    address to meet itself, --quick-same-address)."""
    h = Harness()
    a, b = _rated_room(h, ("10.0.0.1", "10.0.0.1"))
    a.send(type="resign")
    assert a.last("match_end")["rating"]["unrated"] == "same_address"
    assert a.last("match_end")["rating"]["change"] == 0.0
    assert all(p.games == 0 for p in h.storage.players.values()) and h.storage.rated_results == {}
    lax = Harness(pairing=PairingPolicy(allow_same_address=True))
    a, b = _rated_room(lax, ("10.0.0.1", "10.0.0.1"))
    a.send(type="resign")
    assert "unrated" not in a.last("match_end")["rating"]


# ----- leaderboard flood ------------------------------------------------------------------------------


def test_a_leaderboard_flood_counts_a_place_once_a_second() -> None:
    """``me``'s place is a count over the ranked index (128 ms for the last of 50,000 before the
    covering index): a flood of get_leaderboard from one player reads it once per second."""
    h = Harness()
    a = h.connect()
    identify(a, 1, "Ann")
    calls: list[str] = []
    real = h.storage.rank_of

    def counting(player: str, max_deviation: float) -> int | None:
        calls.append(player)
        return real(player, max_deviation)

    h.storage.rank_of = counting  # type: ignore[method-assign]
    for _ in range(50):
        assert a.send(type="get_leaderboard")[0]["type"] == "leaderboard"
    assert len(calls) == 1
    h.advance(1.0)
    a.send(type="get_leaderboard")
    assert len(calls) == 2
    h.advance(1.0)
    h.rooms.players.sweep(h.rooms.now())  # the places counted are dropped with the stale board
    assert h.rooms.players._ranks == {}


# ----- a failed commit of a rated end ------------------------------------------------------------------


def test_a_rated_end_whose_commit_failed_is_rated_once_when_played_again() -> None:
    """The end's commit fails (both players told internal_error and closed); the storage comes
    back, both resume and the match ends again: the ratings change once, from the ratings before
    (nothing was half-applied in memory), and memory equals the database."""
    h = Harness()
    a, b = _rated_room(h, ("10.0.0.1", "10.0.0.2"))
    tokens = {c.pid: (c.last("joined") if c.all("joined") else c.last("room_created"))["token"] for c in (a, b)}
    room = a.last("match_start")["room"]
    h.storage.fail_next = True
    assert a.send(type="resign")[-1]["code"] == "internal_error"
    h.rooms.tick()  # the once-a-second clock write: the storage is back
    h.turn()
    assert h.core.commits.healthy
    again = []
    for c, n, name, address in ((a, 1, "Ann", "10.0.0.1"), (b, 2, "Bob", "10.0.0.2")):
        back = h.connect(address)
        identify(back, n, name)
        assert back.send(type="resume", room=room, token=tokens[c.pid])[0]["type"] == "joined"
        again.append(back)
    state = again[0].last("state")
    assert state.get("result") is None  # the end never happened
    again[0].send(type="resign")
    end = again[0].last("match_end")["rating"]
    fresh = glicko2.update(glicko2.Rating(), [(glicko2.Rating(), 0.0)])
    assert end["after"] == round(fresh.value, 1) and end["before"] == 1500.0
    for hashed, row in h.storage.players.items():
        assert row.games == 1
        loaded = h.rooms.players.load(hashed)
        assert loaded is not None and loaded.rating.value == row.rating and loaded.games == 1
    assert len(h.storage.rated_results) == 2
    assert hashlib.sha256(key(1).encode()).hexdigest() in h.storage.players


# ----- checked sound (kept as tests so they stay so) --------------------------------------------------


def test_malformed_identities_change_nothing() -> None:
    """NUL, lone surrogates (raw JSON escapes), keys of the wrong length or alphabet: refused, no
    player made, the connection still unidentified and usable."""
    h = Harness()
    a = h.connect()
    good = key(1).encode()
    lines = [
        b'{"type":"identify","key":"' + good + b'","name":"A\\u0000"}',
        b'{"type":"identify","key":"' + good + b'","name":"A\\ud800"}',
        b'{"type":"identify","key":"\\udfff' + good[1:] + b'","name":"Ann"}',
        b'{"type":"identify","key":"' + good[:42] + b'","name":"Ann"}',
        b'{"type":"identify","key":"' + good + b'A","name":"Ann"}',
        b'{"type":"identify","key":"' + good[:42] + b'=","name":"Ann"}',
        b'{"type":"identify","key":"' + good[:42] + b'\\n","name":"Ann"}',
        '{"type":"identify","key":"\uff21' .encode() + good[1:] + b'","name":"Ann"}',
        b'{"type":"get_profile","player":"\\ud800aaaaaaaaaaaaaaa"}',
    ]
    for line in lines:
        replies = a.send_raw(line)
        assert [r["type"] for r in replies] == ["error"], (line, replies)
        assert replies[0]["code"] in ("bad_name", "bad_request", "bad_json"), (line, replies)
    assert h.storage.players == {} and h.rooms.players.of(a.pid) is None
    identify(a, 1, "Ann")


def test_a_rename_during_a_rated_match_keeps_the_rating_and_the_seat() -> None:
    """Ann renames herself mid-match: the seat keeps the display it was taken with, the end rates
    her (one row: the new name and the new rating), and Bob's profile shows her new display."""
    h = Harness()
    a, b = _rated_room(h, ("10.0.0.1", "10.0.0.2"))
    old = a.last("room")["me"]["display"]
    assert [r["type"] for r in a.send(type="rename", name="Annie")] == ["player", "ok"]
    b.send(type="resign")
    assert a.last("room")["me"]["display"] == old
    row = h.storage.players[hashlib.sha256(key(1).encode()).hexdigest()]
    assert row.name == "Annie" and row.games == 1 and row.rating == pytest.approx(
        glicko2.update(glicko2.Rating(), [(glicko2.Rating(), 1.0)]).value)
    recent = b.send(type="get_profile")[0]["recent"]
    assert recent[0]["opponent"].startswith("Annie#")


def test_a_quick_match_in_play_is_never_named_and_spectate_guesses_count() -> None:
    """Issue 19 × 20: a quick-match room is unlisted, so live_rooms never names it; guessing its
    code through spectate counts towards too_many_attempts like join's guesses."""
    h = Harness()
    a = queued(h, 1, "Ann", "10.0.0.1")
    b = queued(h, 2, "Bob", "10.0.0.2")
    h.advance(0)
    h.turn()
    a.send(type="ready")
    b.send(type="ready")
    assert a.all("match_start")
    code = a.last("matched")["room"]
    watcher = h.connect("10.0.0.9")
    assert watcher.send(type="live_rooms")[0]["rooms"] == []
    guesses = [watcher.send(type="spectate", room=f"ZZZZ{i:02d}")[0]["code"] for i in range(h.config.code_failures)]
    assert guesses == ["room_not_found"] * h.config.code_failures
    assert watcher.send(type="spectate", room=code)[0]["code"] == "too_many_attempts"


def _quick_game_both_drop(h: Harness, n: int) -> tuple[Client, Client]:
    a = queued(h, n, f"A{n}", "10.7.0.1")
    b = queued(h, n + 1, f"B{n}", "10.7.0.2")
    h.advance(0)
    h.turn()
    a.send(type="ready")
    b.send(type="ready")
    assert a.all("match_start")
    a.drop()
    b.drop()
    return a, b


def test_quick_rooms_count_against_an_address_and_a_void_quick_game_penalises_both() -> None:
    """Two addresses met, started and both dropped, again and again: each game became a void room
    that lives on (O15) counted against nobody, so two addresses could fill the server's room
    limit, and a void game penalised neither. Now a matched room counts against its longer waiter's
    address (quick_match answers too_many_rooms at the cap), and a void quick game penalises both."""
    h = Harness(max_rooms_per_address=2, grace_seconds=5.0)
    _quick_game_both_drop(h, 1)
    h.advance(6)  # both graces run out: void
    h.turn()
    assert h.rooms.rooms and next(iter(h.rooms.rooms.values())).match.state.over
    leavers = [p for p, _ in h.rooms.players.quick_leavers]
    assert len(leavers) == 2
    h.core.quick.pair_now()
    h2 = Harness(max_rooms_per_address=2)
    _quick_game_both_drop(h2, 1)
    _quick_game_both_drop(h2, 11)
    late = h2.connect("10.7.0.1")
    identify(late, 21, "A21")
    late2 = h2.connect("10.7.0.2")
    identify(late2, 22, "B22")
    codes = [late.send(type="quick_match")[0].get("code"), late2.send(type="quick_match")[0].get("code")]
    assert "too_many_rooms" in codes and len(h2.rooms.rooms) == 2


def test_confirmation_edges() -> None:
    """A second ready changes nothing; a ready arriving at exactly confirm.at is too late (the
    timer ran first: "before confirm.at"); after the dissolution ready and resume find nothing
    (resume counts as a guess); the one who confirmed is waiting again with its old since."""
    h = Harness()
    a = queued(h, 1, "Ann", "10.0.0.1")
    since = a.last("queue")["since"]
    b = queued(h, 2, "Bob", "10.0.0.2")
    h.advance(0)
    h.turn()
    matched = b.last("matched")
    assert [r["type"] for r in a.send(type="ready")] == ["room", "ok"]
    assert [r["type"] for r in a.send(type="ready")] == ["room", "ok"]  # idempotent
    h.advance(h.config.quick_confirm_seconds)
    assert b.send(type="ready")[0]["code"] == "not_seated"
    assert a.last("queue") == {"type": "queue", "status": "waiting", "since": since,
                               "server_time": round(h.rooms.now(), 3)}
    again = h.connect("10.0.0.2")
    assert again.send(type="resume", room=matched["room"], token=matched["token"])[0]["code"] == "room_not_found"
    assert len(h.core.attempts) == 1


# ----- a hostile mix, checked after every step ----------------------------------------------------------


def _quick_invariants(h: Harness) -> None:
    quick = h.core.quick
    assert {peer: player for player, peer in quick.peer_of.items()} == quick.player_of
    assert len(quick.queue) == len(quick.peer_of)
    for peer, player in quick.player_of.items():  # a waiter is a live connection that is that player
        who = h.rooms.players.of(peer)
        assert peer in h.core.conns and who is not None and who.player == player
        assert peer not in h.rooms.lobby.peer_seat
    confirming: set[str] = set()
    for code in quick.confirms:
        room = h.rooms.rooms.get(code)
        if room is not None and room.match is None:
            for seat in room.seats:
                assert seat.player is not None and seat.player not in confirming  # matched once at a time
                confirming.add(seat.player)
    assert not confirming & set(quick.peer_of)  # never waiting while matched
    for room in h.rooms.rooms.values():
        if room.rated:
            ids = [s.player for s in room.seats]
            assert len(ids) == len(set(ids))  # one player never holds both seats of a rated room


@pytest.mark.parametrize(("seed", "failures"), [(s, False) for s in range(40)] + [(s, True) for s in range(40, 60)])
def test_a_hostile_mix_of_players_keeps_the_queue_consistent(seed: int, failures: bool) -> None:
    """Five keys over four connections' worth of addresses (two share one), in a random order:
    identify, quick_match, leave_queue, ready, leave, create/join rated rooms, resume matched tokens
    (someone else's too), drop, and time passing across the 10 s confirmation; after every step the
    queue's maps agree, a waiter is a live connection of that player, nobody waits while matched or
    is matched twice, no rated room seats one player twice, and nothing was an internal_error. With
    ``failures`` some commits fail too (and the storage comes back): the invariants still hold."""
    rng = random.Random(seed)
    h = Harness(seed=seed)
    conns: list[Client] = []
    tokens: list[tuple[str, str]] = []
    addresses = ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.1"]
    for _ in range(80):
        if not conns or rng.random() < 0.15:
            c = h.connect(rng.choice(addresses))
            conns.append(c)
            c.send(type="identify", key=key(rng.randrange(5)), name="P")
        else:
            c = rng.choice(conns)
            if c.pid not in h.core.conns:
                continue
            kind = rng.choice(["quick_match", "quick_match", "leave_queue", "ready", "ready", "leave", "drop",
                               "resume", "advance", "advance", "identify", "create", "join",
                               *(("fail", "heal") if failures else ())])
            if kind == "fail":
                h.storage.fail_next = True
            elif kind == "heal":
                h.rooms.tick()  # the once-a-second clock write: healthy again once it lands
                h.turn()
            elif kind == "drop":
                c.drop()
            elif kind == "advance":
                h.advance(rng.choice([0.0, 0.5, 3.0, 10.0, 11.0]))
                h.core.quick.pair_now()
                h.turn()
            elif kind == "resume":
                if tokens:
                    room, token = rng.choice(tokens)
                    c.send(type="resume", room=room, token=token)
            elif kind == "identify":
                c.send(type="identify", key=key(rng.randrange(5)), name="Q")
            elif kind == "create":
                c.send(type="create_room", rated=rng.random() < 0.5)
            elif kind == "join":
                if h.rooms.rooms:
                    c.send(type="join", room=rng.choice(sorted(h.rooms.rooms)))
            else:
                c.send(type=kind)
        for cc in conns:
            tokens.extend((m["room"], m["token"]) for m in cc.new() if m["type"] == "matched")
        _quick_invariants(h)
    for cc in conns:
        assert failures or not [m for m in cc.messages if m["type"] == "error" and m["code"] == "internal_error"]
