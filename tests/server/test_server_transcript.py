"""Fairness version 2 on the server (R3b, R3c, O4, O5, O14): the whole-match transcript.

Every ``state`` a seat is shown carries ``h_seq``; here it is recomputed independently of the
server — from the published record alone, with ``shared/fairness/transcript.py`` and a replay of
the rules for the deadlines — and compared state by state, plant by plant. ``h_0`` is also checked
once by hand with ``hashlib``. Rematches chain the previous match's final hash; a match restored
from a database written by the version 1 server stays version 1; a restart mid-match continues
the same transcript; a timeout's ``at`` is its deadline to the millisecond.
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import itertools
import json
import random
from pathlib import Path
from typing import Any

import pytest
from support.harness import START, Client, Harness, oracle_message, play_to_score_end
from twisted.internet.task import Clock

from mineduel.server import match as match_module
from mineduel.server.config import Config
from mineduel.server.effects import Env
from mineduel.server.lobby import Lobby, PeerInfo
from mineduel.server.match import LiveMatch
from mineduel.server.storage import MemoryStorage, SQLiteStorage
from mineduel.shared.fairness import commitments as fairness
from mineduel.shared.fairness import transcript as tx
from mineduel.shared.fairness.record import from_json
from mineduel.shared.fairness.verify import verify_record
from mineduel.shared.rules.engine import ActionType, GameState, Refusal, Variant
from mineduel.shared.rules.events import restarts_deadline
from mineduel.shared.wire import messages as m

V1_ROOM = Path(__file__).resolve().parents[1] / "support" / "data" / "fairness_v1_room.json.gz"


# ----- the independent recomputation ----------------------------------------------------------------
def recompute(record: dict[str, Any]) -> tuple[list[str], list[int | None]]:
    """``[h_0 .. h_n]`` and the deadline (ms) in force after each action, from the record alone."""
    fair, times = record["fairness"], record["times"]
    turn_ms, start_ms = tx.millis(times["turn_seconds"]), tx.millis(times["clock_started"])
    h = tx.match_start(
        record["match_id"], fair["commitment"], fair["client_seeds"], fair["nonce"], fair["first_player"],
        fair["join_order"], turn_ms, start_ms, fair["previous_transcript"],
    )
    hashes, deadlines = [h], [start_ms + turn_ms]
    deadline: int | None = start_ms + turn_ms
    state = GameState(Variant.ONLINE)
    plants = iter(fair["mine_commitments"])
    parsed = from_json(record)
    for seq, (action, entry) in enumerate(zip(parsed.actions, record["actions"], strict=True)):
        events = state.apply(action)
        assert not isinstance(events, Refusal), (seq, action, events)
        at_ms = tx.millis(entry["at"])
        if state.over:
            deadline = None
        elif restarts_deadline(events):
            deadline = at_ms + turn_ms
        kind = str(action.type)
        commitment = next(plants) if action.type is ActionType.PLANT else None
        h = tx.step(h, seq, action.seat, kind, tx.target_of(kind, action.cell, commitment), at_ms,
                    entry.get("auto") is True, deadline)
        hashes.append(h)
        deadlines.append(deadline)
    assert next(plants, None) is None, "more commitments than plants"
    return hashes, deadlines


def check_states(record: dict[str, Any], *clients: Client, verify: bool = True) -> int:
    """Every ``state`` of this match each client was shown carries ``h_seq``; every plant event
    the hash right after it; the record verifies. Returns how many states were compared."""
    hashes, _ = recompute(record)
    assert record["fairness"]["transcript"] == hashes[-1]
    if verify:
        report = verify_record(record)
        assert report.ok, report.text()
    compared = 0
    for client in clients:
        for state in client.all("state"):
            if state["match_id"] != record["match_id"]:
                continue
            assert state["transcript"] == hashes[state["seq"]], (client.pid, state["seq"])
            for event in state["events"]:
                if event["action"] == "plant":
                    assert event["transcript"] == hashes[event["seq"] + 1]
                    assert event["commitment"] in record["fairness"]["mine_commitments"]
            compared += 1
    return compared


def by_seat(first: Client, second: Client) -> dict[int, Client]:
    return {first.seat: first, second.seat: second}


def play(h: Harness, first: Client, second: Client, moves: int) -> None:
    seats = by_seat(first, second)
    for _ in range(moves):
        state = h.match(first).state
        if state.over:
            return
        seats[state.to_move].send(**oracle_message(state))


# ----- the tests ------------------------------------------------------------------------------------
def test_r3c_h0_is_the_documented_hash_checked_by_hand() -> None:
    """R3c: the first state's transcript is SHA3-256 of the documented match-start text."""
    h = Harness(seed=4)
    h.advance(0.0004)  # a start that is not a whole millisecond: the match starts at it, rounded
    first, second = h.start(("ann-42", "bob-7"))
    start = first.last("match_start")
    join_order = [0, 1] if start["my_seed_index"] == 0 else [1, 0]  # seat 0 is first: its join position
    text = (
        f"mine-duel/match/2|{start['match_id']}|{start['commitment']}|ann-42|bob-7|1|draw"
        f"|{join_order[0]},{join_order[1]}|20000|1700000000000|-"
    )
    expected = hashlib.sha3_256(text.encode("utf-8")).hexdigest()
    assert start["started"] == 1700000000.0
    for client in (first, second):
        state = client.last("state")
        assert state["seq"] == 0 and state["transcript"] == expected
        assert state["deadline"]["at"] == 1700000020.0
    assert h.match(first).version == 2


def test_r3b_r3c_every_state_carries_the_transcript_of_the_actions_so_far() -> None:
    """R3b/R3c: each state of a whole match (opening timeouts and auto-moves, plants, markers,
    end turns, a normal-turn timeout, a score ending) equals the recomputation from the record."""
    h = Harness(seed=8)
    first, second = h.start(("s1", "s2"))
    h.advance(20.0)  # O4: timeout and auto explore
    h.advance(7.25)
    play(h, first, second, 3)  # explore, plant, plant
    h.advance(1.0007)
    seats = by_seat(first, second)
    state = h.match(first).state
    mover = seats[state.to_move]
    assert mover.send(type="flag", cell=[7, 7])[-1]["type"] == "ok"
    assert mover.send(type="unflag", cell=[7, 7])[-1]["type"] == "ok"
    play(h, first, second, 4)
    h.advance(20.0)  # O5: a normal turn times out
    play_to_score_end(h, first, second)
    record = first.last("match_end")["record"]
    fair = record["fairness"]
    assert fair["version"] == 2 and fair["previous_transcript"] is None
    types = [a["type"] for a in record["actions"]]
    assert {"timeout", "explore", "plant", "flag", "unflag", "end_turn"} <= set(types)
    assert check_states(record, first, second) >= 2 * len(record["actions"])
    assert second.last("match_end")["record"] == record


def test_r3c_both_seats_state_messages_share_one_transcript_string() -> None:
    """The hot path: one SHA3 per action, and both seats' ``state`` carry the very same string."""
    rng = random.Random(3)
    lobby = Lobby()
    for peer in (1, 2):
        lobby.peers[peer] = PeerInfo(peer, f"10.0.0.{peer}")

    def env() -> Env:
        return Env(START, START, rng.randbytes, Config())

    lobby.create(env(), 1, m.CreateRoom("Ann", "a"))
    room, _ = lobby.seated(1)
    lobby.join(env(), 2, room, m.Join(room.code, "Bob", "b"))
    for peer in (1, 2):
        room.ready(env(), lobby.seated(peer)[1], ready=True, seed=None)
    match = room.match
    assert match is not None and match.version == 2
    before = match.transcript
    fx = room.act(env(), room.room_seat(0), ActionType.EXPLORE, 0, match_id=match.id, seq=0)
    states = [msg for _, msg in fx.out if isinstance(msg, m.State)]
    assert len(states) == 2 and states[0].transcript is states[1].transcript is match.transcript
    assert match.transcript != before


def test_o14_a_rematch_chains_the_previous_match_and_a_new_opponent_does_not() -> None:
    """O14/R3c: each rematch's previous_transcript is the match before's final transcript (its h_0
    binds it); a room's first match and a match with a new opponent have none."""
    h = Harness(seed=12)
    first, second = h.start()
    records = []
    for _ in range(3):
        play(h, first, second, 6)
        first.send(type="resign")
        records.append(first.last("match_end")["record"])
        first.send(type="rematch")
        second.send(type="rematch")
    play(h, first, second, 2)
    first.send(type="resign")
    records.append(first.last("match_end")["record"])
    assert [r["fairness"]["nonce"] for r in records] == [1, 2, 3, 4]
    assert records[0]["fairness"]["previous_transcript"] is None
    for before, after in itertools.pairwise(records):
        assert after["fairness"]["first_player"] == "swap"
        assert after["fairness"]["previous_transcript"] == before["fairness"]["transcript"]
    for record in records:
        check_states(record, first, second)
    # A new opponent after the previous one left: drawn again, and nothing of a match it never saw.
    leaver = first if first.seat == 1 else second
    stayer = second if leaver is first else first
    leaver.send(type="leave")
    newcomer = h.connect("10.0.0.9")
    newcomer.send(type="join", room=stayer.room, name="Cy", client_seed="cy")
    stayer.send(type="ready")
    newcomer.send(type="ready")
    newcomer.send(type="resign")
    record = newcomer.last("match_end")["record"]
    assert record["fairness"]["first_player"] == "draw" and record["fairness"]["previous_transcript"] is None
    assert record["fairness"]["nonce"] > 1  # the room's next match number, yet a new pair: drawn (O3)
    check_states(record, stayer, newcomer)
    # The same record claiming to be a rematch of the new pair (swap, no previous match) is refused.
    forged = json.loads(json.dumps(record))
    forged["fairness"]["first_player"] = "swap"
    assert verify_record(forged).check("first_player").ok is False


def test_o4_o5_a_timeout_is_exactly_at_its_deadline_in_the_record() -> None:
    """O4/O5: with a clock that is not on whole milliseconds, each timeout's ``at`` is the deadline
    in force before it to the millisecond (the state showed that deadline), and its auto-move too."""
    h = Harness(seed=21)
    h.advance(0.0123456)
    first, second = h.start()
    h.advance(20.0)  # O4: opening timeout + auto explore
    h.advance(3.33333)
    play(h, first, second, 1)
    h.advance(20.5)  # O4 again: the plant step times out
    play(h, first, second, 2)
    h.advance(40.01)  # O5: two normal turns time out
    first.send(type="resign")
    record = first.last("match_end")["record"]
    _, deadlines = recompute(record)
    timeouts = shown_before = 0
    for i, action in enumerate(record["actions"]):
        assert action["at"] == round(action["at"], 3)
        if action["type"] == "timeout":
            timeouts += 1
            assert tx.millis(action["at"]) == deadlines[i], (i, action)
            # The deadline the seats were shown just before it (when a state stopped at seq i:
            # timeouts settled together are shown together).
            shown = [s["deadline"]["at"] for s in first.all("state") if s["seq"] == i and s["deadline"]]
            if shown:
                shown_before += 1
                assert shown[-1] == action["at"]
        if action.get("auto") and action["type"] in ("explore", "plant"):
            assert record["actions"][i - 1]["type"] == "timeout" and record["actions"][i - 1]["at"] == action["at"]
    assert timeouts >= 4 and shown_before >= 3
    assert record["times"]["clock_started"] == round(START + 0.0123456, 3)
    check_states(record, first, second)


def _restart(h: Harness, storage: Any, downtime: float, seed: int = 99) -> Harness:
    """A new server process on the same storage, ``downtime`` seconds later (no clean shutdown)."""
    clock = Clock()
    clock.advance(h.clock.seconds() + downtime)
    new = Harness(seed=seed, storage=storage, clock=clock)
    done = new.rooms.restore_all()
    while not done.called:
        clock.advance(0)
    return new


def _resume(h: Harness, old: Client, address: str) -> Client:
    client = h.connect(address)
    client.token, client.room = old.token, old.room
    assert client.send(type="resume", room=old.room, token=old.token)[0]["type"] == "joined"
    return client


def test_r3c_a_restart_mid_match_continues_the_same_transcript(tmp_path: Path) -> None:
    """O12/R3c: killed mid-match and restarted twice (at a fractional clock), the match continues
    the very transcript both seats were shown; the final record recomputes to it."""
    storage = SQLiteStorage(tmp_path / "r.db")
    h = Harness(seed=31, storage=storage)
    first, second = h.start()
    h.advance(20.0)
    play(h, first, second, 5)
    h.advance(2.5)
    h.rooms.tick()
    live = h.match(first)
    seen = first.last("state")["transcript"]
    assert seen == live.transcript and live.seq > 3
    storage.close()
    storage2 = SQLiteStorage(tmp_path / "r.db")
    h2 = _restart(h, storage2, downtime=300.4567)
    restored = h2.rooms.rooms[first.room].match
    assert restored.version == 2 and restored.transcript == seen and restored.deadline_ms == live.deadline_ms
    a, b = _resume(h2, first, "10.0.0.1"), _resume(h2, second, "10.0.0.2")
    assert a.last("state")["transcript"] == seen
    h2.advance(0.0017)
    play(h2, a, b, 3)
    h2.advance(20.0)  # a timeout after the restart: at its (stored) deadline
    h2.rooms.tick()
    storage2.close()
    storage3 = SQLiteStorage(tmp_path / "r.db")
    h3 = _restart(h2, storage3, downtime=12.0)
    a2, b2 = _resume(h3, a, "10.0.0.1"), _resume(h3, b, "10.0.0.2")
    play_to_score_end(h3, a2, b2)
    record = a2.last("match_end")["record"]
    assert record["fairness"]["version"] == 2
    compared = sum(check_states(record, *clients) for clients in ((first, second), (a, b), (a2, b2)))
    assert compared > len(record["actions"])
    storage3.close()


def test_r3c_a_stored_transcript_that_does_not_recompute_is_refused() -> None:
    """A version 2 blob or row whose stored transcript differs from the replay does not load."""
    h = Harness(seed=41)
    first, second = h.start()
    play(h, first, second, 4)
    live = h.match(first)
    blob = json.loads(h.storage.rooms[first.room])["match"]  # as stored: written at the start (seq 0)
    rows = [json.loads(r) for _, r in sorted(h.storage.actions[live.id].items())]
    assert blob["seq"] == 0 and "transcript" in rows[-1]["match"]
    assert LiveMatch.from_blob(copy.deepcopy(blob), copy.deepcopy(rows)).transcript == live.transcript
    with pytest.raises(ValueError, match="transcript"):
        LiveMatch.from_blob({**blob, "transcript": "0" * 64}, copy.deepcopy(rows))
    now = {**live.to_blob(), "seq": live.seq}  # a blob as new as the rows (the rows' clock state is older)
    assert LiveMatch.from_blob(copy.deepcopy(now), copy.deepcopy(rows)).transcript == live.transcript
    with pytest.raises(ValueError, match="transcript"):
        LiveMatch.from_blob({**now, "transcript": "0" * 64}, copy.deepcopy(rows))
    bad_rows = copy.deepcopy(rows)
    bad_rows[-1]["match"]["transcript"] = "1" * 64
    with pytest.raises(ValueError, match="transcript"):
        LiveMatch.from_blob(copy.deepcopy(blob), bad_rows)
    moved = copy.deepcopy(rows)
    moved[-1]["at"] += 0.001  # a time rewritten in the database: the stored hash no longer follows
    with pytest.raises(ValueError, match="transcript"):
        LiveMatch.from_blob(copy.deepcopy(blob), moved)


def _v1_storage() -> tuple[MemoryStorage, dict[str, Any]]:
    with gzip.open(V1_ROOM, "rt", encoding="utf-8") as f:
        saved = json.load(f)
    storage = MemoryStorage()
    storage.rooms.update(saved["rooms"])
    storage.actions.update({mid: {int(k): v for k, v in rows.items()} for mid, rows in saved["actions"].items()})
    storage._meta["clock"] = saved["clock"]
    return storage, saved


def test_r3b_a_match_stored_by_the_version_1_server_stays_version_1() -> None:
    """A room stored mid-match by the version 1 server (commit 87130c6; its blob has no version)
    is restored as version 1: the plant chain, unrounded deadlines, a version 1 record that
    verifies as before. The room's next match (a rematch) is version 2 and chains its final hash."""
    storage, saved = _v1_storage()
    match_blob = json.loads(saved["rooms"][saved["room"]])["match"]
    assert "version" not in match_blob and "previous_transcript" not in match_blob
    h = Harness(seed=5, storage=storage)
    done = h.rooms.restore_all()
    while not done.called:
        h.clock.advance(0)
    match = h.rooms.rooms[saved["room"]].match
    assert match.version == 1 and match.seq == saved["seq"] and match.transcript == saved["transcript"]
    assert match.to_blob().keys() == match_blob.keys() - {"seq"}  # written back as the old server wrote it
    tokens = saved["tokens"]
    a, b = h.connect("10.0.0.1"), h.connect("10.0.0.2")
    for client, token in ((a, tokens["first"]), (b, tokens["second"])):
        client.token, client.room = token, saved["room"]
        client.send(type="resume", room=saved["room"], token=token)
        assert client.last("state")["transcript"] == saved["transcript"]
    h.advance(0.0004)
    play(h, a, b, 4)
    assert match.deadline is not None and match.deadline != round(match.deadline, 3)  # v1: not rounded
    h.advance(20.0)  # a normal-turn timeout
    play_to_score_end(h, a, b)
    record = a.last("match_end")["record"]
    fair = record["fairness"]
    assert fair["version"] == 1 and "previous_transcript" not in fair
    report = verify_record(record)
    assert report.ok, report.text()
    assert fair["transcript"] == fairness.transcript_hash(record["match_id"], fair["mine_commitments"])
    assert fair["mine_commitments"][: len(saved["commitments"])] == saved["commitments"]
    for state in a.all("state") + b.all("state"):  # the plant chain, as a version 1 client expects
        plants = [e for e in record["actions"][: state["seq"]] if e["type"] == "plant"]
        assert state["transcript"] == fairness.transcript_hash(record["match_id"], fair["mine_commitments"][: len(plants)])
    a.send(type="rematch")
    b.send(type="rematch")
    play(h, a, b, 3)
    a.send(type="resign")
    second = a.last("match_end")["record"]
    assert second["fairness"]["version"] == 2 and second["fairness"]["previous_transcript"] == fair["transcript"]
    check_states(second, a, b)


def test_version_2_is_what_new_matches_get_and_version_1_restores_unchanged() -> None:
    """New matches are version 2; the blob says the version: a version 2 match's blob round-trips
    as version 2; a blob without one is version 1 (the old server's); an unknown version is refused."""
    assert match_module.NEW_MATCH_VERSION == 2
    h = Harness(seed=2)
    first, second = h.start()
    play(h, first, second, 3)
    live = h.match(first)
    blob = json.loads(json.dumps({**live.to_blob(), "seq": live.seq}))
    rows = [json.loads(r) for _, r in sorted(h.storage.actions[live.id].items())]
    assert blob["version"] == 2 and blob["previous_transcript"] is None
    back = LiveMatch.from_blob(copy.deepcopy(blob), copy.deepcopy(rows))
    assert (back.version, back.transcript, back.deadline_ms, back.actions) == (2, live.transcript, live.deadline_ms, live.actions)
    with pytest.raises(ValueError, match="version"):
        LiveMatch.from_blob({**blob, "version": 3}, copy.deepcopy(rows))


@pytest.mark.parametrize("seed", range(12))
def test_r3c_random_matches_restore_and_recompute_to_the_live_transcript(seed: int) -> None:
    """Seeded random version 2 matches driven on ``LiveMatch`` (legal and refused actions, expired
    deadlines, resignations, disconnects, voids, times off the millisecond): restored from their
    stored rows at any point they have the live transcript and deadline; the record recomputes."""
    from mineduel.shared.ai.randomplay import random_legal_action
    from mineduel.shared.rules.engine import CELL_ACTIONS, Action

    rng = random.Random(seed)
    entropy = random.Random(seed + 1).randbytes
    now = 1_700_000_000.0 + rng.random()
    live = LiveMatch.start(
        match_id=rng.randbytes(8).hex(), number=rng.randint(1, 4), seats_in_join_order=(3, 8),
        first_sid=rng.choice((None, 3, 8)), server_seed=rng.randbytes(32).hex(), client_seeds=("a", "b é"),
        now=now, wall=now, turn_seconds=20.0, previous=rng.choice((None, "ab" * 32)),
    )
    blob = json.loads(json.dumps({**live.to_blob(), "seq": 0}))
    rows: list[dict[str, Any]] = []
    for step in range(400):
        if live.over:
            break
        now += rng.uniform(0.0001, 6.0)
        roll = rng.random()
        if roll < 0.01:
            kind = rng.choice((ActionType.RESIGN, ActionType.DISCONNECT, ActionType.VOID))
            entries = live.end_by(kind, rng.randrange(2), now, entropy)
        elif roll < 0.12 and live.deadline is not None:
            now = max(now, live.deadline)
            entries = live.expire(live.deadline, entropy)
        elif roll < 0.2:
            kind = rng.choice(list(ActionType))
            cell = rng.randrange(64) if kind in CELL_ACTIONS else None
            result = live.apply(Action(rng.randrange(2), kind, cell), at=now, randbytes=entropy)
            entries = [] if isinstance(result, Refusal) else result
        else:
            result = live.apply(random_legal_action(live.state, rng), at=now, randbytes=entropy)
            assert not isinstance(result, Refusal)
            entries = result
        if entries:
            rows += json.loads(json.dumps(live.stored_rows(entries)))
        if step % 9 == 0 or live.over:
            back = LiveMatch.from_blob(copy.deepcopy(blob), copy.deepcopy(rows))
            assert (back.transcript, back.deadline_ms, back.deadline, back.seq) == (
                live.transcript, live.deadline_ms, live.deadline, live.seq)
            if live.deadline is not None:
                assert tx.millis(live.deadline) == live.deadline_ms
    assert live.over
    record = live.record(room="ROOM22")
    hashes, _ = recompute(json.loads(json.dumps(record)))
    assert hashes[-1] == live.transcript == record["fairness"]["transcript"]
    for i, entry in enumerate(live.actions):
        if entry["type"] == "plant":
            assert entry["transcript"] == hashes[i + 1]
