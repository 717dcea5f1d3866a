"""The player's witness (issue 14, RECORD.md ``mine-duel-witness/1``): what the game's own online
code keeps of each match it plays against a real server core (in-process, fake clock, no sleeps):
the fields, the writes, a restart and resume, a rematch's ``previous``, failures to write, and the
in-game Verify held to it.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from support.harness import oracle_message
from support.inprocess import InProcessServer

from mineduel.client.online_client import OnlineClient, OnlineServices
from mineduel.client.tokens import TokenStore
from mineduel.client.witness import PENDING_NAME, WitnessKeeper, WitnessStore
from mineduel.shared.fairness import witness as shared_witness
from mineduel.shared.fairness.verify import WITNESS_CHECKS, verify_record
from mineduel.shared.rules.engine import ActionType
from mineduel.shared.wire.messages import MatchAction
from mineduel.shared.wire.names import ClientType


class Seat:
    """The game's own online session (``OnlineClient``) on a data folder, pumped like a frame loop."""

    def __init__(self, srv: InProcessServer, folder: Path, *, witnesses: WitnessStore | None = None, prefix: str = "me") -> None:
        self.srv = srv
        self.folder = folder
        seeds = itertools.count(1)
        self.sent: list[str] = []

        def seed() -> str:
            value = f"{prefix}-{next(seeds)}"
            self.sent.append(value)
            return value

        self.services = OnlineServices(connect=srv.connector(), tokens=TokenStore(folder), client_seed=seed,
                                       witnesses=witnesses)
        self.client = OnlineClient(self.services, clock=lambda: 0.0)

    def pump(self) -> None:
        self.client.update()

    def join(self, code: str) -> None:
        self.client.connect("127.0.0.1", 47650, then=lambda: self.client.requests.join(code))
        self.pump()
        self.pump()

    @property
    def match(self):
        assert self.client.match is not None
        return self.client.match

    def witness_file(self, match_id: str | None = None) -> dict:
        match_id = match_id or self.match.match_id
        return json.loads((self.folder / "witnesses" / f"{match_id}.json").read_text(encoding="utf-8"))


def pair(tmp_path: Path, **config) -> tuple[InProcessServer, Seat, object, str]:
    srv = InProcessServer(**config)
    peer = srv.peer()
    code = peer.send(type="create_room", client_seed="peer-0")[0]["room"]
    me = Seat(srv, tmp_path / "me")
    me.join(code)
    return srv, me, peer, code


def start(me: Seat, peer) -> str:
    """Both ready; the commitment the player was shown before pressing Ready."""
    shown = me.client.room.next_commitment
    peer.send(type="ready", client_seed="peer-1")
    me.client.requests.ready(True)
    me.pump()
    return shown


def play(srv: InProcessServer, me: Seat, peer, code: str, *, actions: int) -> None:
    """``actions`` safe moves (the server's oracle), each by the seat to move: the client's through
    its own request path, the peer's as protocol lines."""
    for _ in range(actions):
        state = srv.truth(code)
        msg = oracle_message(state)
        srv.advance(1.5)
        if state.to_move == me.match.seat:
            cell = msg.get("cell")
            me.client.requests.send_action(
                MatchAction(ClientType(msg["type"]), None if cell is None else cell[0] * 8 + cell[1], me.match.match_id,
                            me.match.seq), lambda code: None)
        else:
            peer.send(**msg)
        me.pump()


def test_witness_holds_what_the_client_saw_and_parses(tmp_path):
    """§4: commitment before Ready, the seed sent, seat and seed index, match_start, every plant
    commitment seen, the latest transcript with its seq, and what match_end showed."""
    srv, me, peer, code = pair(tmp_path)
    shown = start(me, peer)
    match = me.match
    first = me.witness_file()
    assert first["client_seed"] == me.sent[-1] and first["commitment_before_ready"] == shown
    assert not (me.folder / "witnesses" / PENDING_NAME).exists()  # the seed is in the match's witness now
    play(srv, me, peer, code, actions=12)
    peer.send(type="resign")
    me.pump()
    end = match.end
    assert end is not None
    data = me.witness_file()
    start_msg = match.start
    assert data["format"] == "mine-duel-witness/1" and data["match_id"] == match.match_id
    assert (data["room"], data["server"]) == (code, "127.0.0.1:47650")
    assert (data["seat"], data["seed_index"]) == (start_msg.seat, start_msg.my_seed_index)
    assert data["client_seed"] == me.sent[-1] == start_msg.client_seeds[start_msg.my_seed_index]
    assert data["commitment_before_ready"] == shown == start_msg.commitment
    assert data["names"] == {"me": me.client.room.me.name, "opponent": start_msg.opponent_name}
    assert data["match_start"] == {
        "commitment": start_msg.commitment, "client_seeds": list(start_msg.client_seeds), "nonce": start_msg.nonce,
        "first_player_rule": start_msg.first_player_rule, "first": start_msg.first, "turn_seconds": start_msg.turn_seconds,
        "started": start_msg.started,
    }
    assert data["previous"] is None
    record = end.record
    plants = [i for i, a in enumerate(record["actions"]) if a["type"] == ActionType.PLANT.value]
    assert plants, "the opening plants at least"
    commitments = record["fairness"]["mine_commitments"]
    assert data["plants"] == [{"seq": s, "commitment": c} for s, c in zip(plants, commitments, strict=True)]
    assert data["transcript"] == {"seq": len(record["actions"]), "hash": record["fairness"]["transcript"]}
    shown_end = {"result": end.result.wire(), "reveal": end.reveal.wire(), "turns": end.turns, "elapsed": end.elapsed}
    assert data["end"] == json.loads(json.dumps(shown_end))
    parsed = shared_witness.parse(data)  # the verifier's reader takes it as it is
    assert parsed.client_seed == me.sent[-1] and parsed.transcript.seq == len(record["actions"])
    assert match.proof.witness() == data  # what the in-game Verify is given
    report = verify_record(record, data)
    assert report.ok and report.witnessed, report.text()
    assert all(report.check(name).ok for name in WITNESS_CHECKS if name != "previous_match"), report.text()


def test_one_write_per_changing_state_and_none_for_a_repeat(tmp_path):
    """Writes stay cheap: a state that changes the witness is written once; a resume that repeats the
    match so far (same transcript, same plants) writes nothing."""
    srv, me, peer, code = pair(tmp_path)
    start(me, peer)
    keeper = me.client.witness
    before = keeper.writes
    play(srv, me, peer, code, actions=3)
    assert keeper.writes == before + 3
    srv.cut(me.client.connection.link)  # the connection drops; the session resumes by itself
    me.pump()
    for _ in range(5):
        me.client.connection.retry_at = 0.0
        me.pump()
    assert me.client.connected and me.match.seq == srv.room(code).match.seq
    assert keeper.writes == before + 3


def test_a_restart_between_ready_and_the_start_keeps_the_seed_sent(tmp_path):
    """The seed is on disk (pending) before its request leaves: a client that crashes before it hears
    match_start resumes the match and its witness names the seed it sent, not a new one."""
    srv, me, peer, code = pair(tmp_path)
    shown = me.client.room.next_commitment
    peer.send(type="ready", client_seed="peer-1")
    me.client.requests.ready(True)  # the match starts on the server; this client never reads it: it crashes
    sent = me.sent[-1]
    pending = json.loads((me.folder / "witnesses" / PENDING_NAME).read_text())
    assert pending["client_seed"] == sent and pending["commitment_before_ready"] == shown
    again = Seat(srv, me.folder, prefix="after-restart")
    again.client.resume_saved(again.services.tokens.load())
    again.pump()
    again.pump()
    data = again.witness_file()
    assert data["client_seed"] == sent and data["commitment_before_ready"] == shown
    assert again.match.start.client_seeds[again.match.start.my_seed_index] == sent
    assert again.sent == []  # nothing new was sent


def test_a_restart_mid_match_continues_the_same_witness(tmp_path):
    """A resumed match (same id, after a restart) loads its witness and goes on with it."""
    srv, me, peer, code = pair(tmp_path)
    start(me, peer)
    play(srv, me, peer, code, actions=6)
    match_id, seed = me.match.match_id, me.sent[-1]
    before = me.witness_file()
    me.client.close()  # the program stops
    again = Seat(srv, me.folder, prefix="after-restart")
    again.client.resume_saved(again.services.tokens.load())
    again.pump()
    again.pump()
    assert again.match.match_id == match_id
    assert again.witness_file() == before  # nothing changed: nothing rewritten differently
    srv.advance(1.0)
    play(srv, again, peer, code, actions=4)
    peer.send(type="resign")
    again.pump()
    data = again.witness_file()
    assert data["client_seed"] == seed and data["plants"][: len(before["plants"])] == before["plants"]
    record = again.match.end.record
    assert data["transcript"] == {"seq": len(record["actions"]), "hash": record["fairness"]["transcript"]}
    assert shared_witness.parse(data).end is not None


def test_a_rematch_witness_names_the_previous_match(tmp_path):
    """O14: the rematch's witness keeps the last transcript this client saw of the room's match before."""
    srv, me, peer, code = pair(tmp_path)
    start(me, peer)
    play(srv, me, peer, code, actions=4)
    peer.send(type="resign")
    me.pump()
    first = me.witness_file()
    shown = me.client.room.next_commitment
    peer.send(type="rematch", client_seed="peer-2")
    me.client.requests.rematch()
    me.pump()
    second = me.match
    assert second.match_id != first["match_id"] and second.start.first_player_rule == "swap"
    data = me.witness_file()
    assert data["previous"] == {"match_id": first["match_id"], "transcript": first["transcript"]["hash"]}
    assert data["client_seed"] == me.sent[-1] and data["commitment_before_ready"] == shown == second.start.commitment
    play(srv, me, peer, code, actions=4)
    peer.send(type="resign")
    me.pump()
    report = verify_record(me.match.end.record, me.witness_file())
    assert report.ok and report.witnessed, report.text()
    # Version 2 links a rematch to the match before it (version 1 records cannot: n/a).
    assert report.check("previous_match").ok is (True if report.version == 2 else None), report.text()
    assert me.witness_file(first["match_id"]) == first  # the first match's witness stays as it was


def test_a_rematch_after_a_restart_still_names_the_previous_match(tmp_path):
    """The previous match's last hash travels with the pending seed, so a restart in between keeps it."""
    srv, me, peer, code = pair(tmp_path)
    start(me, peer)
    play(srv, me, peer, code, actions=4)
    peer.send(type="resign")
    me.pump()
    first = me.witness_file()
    peer.send(type="rematch", client_seed="peer-2")
    me.client.requests.rematch()  # the rematch starts; this client crashes before reading it
    again = Seat(srv, me.folder, prefix="after-restart")
    again.client.resume_saved(again.services.tokens.load())
    again.pump()
    again.pump()
    data = again.witness_file()
    assert data["match_id"] != first["match_id"]
    assert data["previous"] == {"match_id": first["match_id"], "transcript": first["transcript"]["hash"]}
    assert data["client_seed"] == me.sent[-1]


def test_a_witness_that_cannot_be_written_is_said_once_and_play_goes_on(tmp_path):
    """A data folder that takes no file: one clear message, the match goes on, the witness is kept in
    memory (Verify still has it)."""
    (tmp_path / "blocked").write_text("a file where the folder should be")
    srv = InProcessServer()
    peer = srv.peer()
    code = peer.send(type="create_room", client_seed="peer-0")[0]["room"]
    me = Seat(srv, tmp_path / "me", witnesses=WitnessStore(tmp_path / "blocked" / "witnesses"))
    me.join(code)
    notices = []
    setter = type(me.client).notice.fset

    def keep(client, value):
        notices.append(value)
        setter(client, value)

    try:
        type(me.client).notice = property(type(me.client).notice.fget, keep)
        start(me, peer)
        play(srv, me, peer, code, actions=8)
        peer.send(type="resign")
        me.pump()
    finally:
        type(me.client).notice = property(type(me.client).notice.fget, setter)
    told = [n for n in notices if n is not None and n[0].startswith("witness.failed.")]
    assert told == [("witness.failed.other", ())]  # said once, not once per write
    match = me.match
    assert match.end is not None and match.end.result.outcome == "win"  # the match was played to its end
    kept = match.proof.witness()
    assert kept is not None and kept["client_seed"] == me.sent[-1] and kept["end"] is not None
    shared_witness.parse(kept)


def test_a_corrupt_witness_file_is_not_resumed(tmp_path):
    """A file that is not this match's witness is not taken over (logged); the pending seed is used."""
    store = WitnessStore(tmp_path)
    (tmp_path / "0123456789abcdef.json").write_text("{not json")
    assert store.load("0123456789abcdef") is None
    keeper = WitnessKeeper(store)
    assert keeper.for_match("0123456789abcdef") is None

