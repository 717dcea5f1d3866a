"""Over real loopback sockets (pytest-twisted): whole sessions, every ending, rematch, reconnect,
LAN discovery, clean shutdown, and a SIGKILLed server process restarted on the same database.

The in-process servers keep real sockets but run their rules on ``task.Clock``, so grace
periods and turn deadlines are advanced by the test, never waited for.
"""

from __future__ import annotations

import os
import re
import sys

import pytest
import pytest_twisted
from support.harness import oracle_message
from twisted.internet import defer
from twisted.internet import protocol as tprotocol
from twisted.internet.task import Clock

from mineduel.server.client import LineClient, ServerError, connect
from mineduel.server.config import Config
from mineduel.server.discovery import discover
from mineduel.server.service import start_server
from mineduel.shared.fairness.verify import verify_record
from mineduel.shared.wire import bots, names
from mineduel.shared.wire.board import view_of
from mineduel.shared.wire.messages import State


def _reactor():
    from twisted.internet import reactor

    return reactor


class Server:
    """An in-process server on 127.0.0.1 with a fake rules clock."""

    def __init__(self, tmp_path, **config):
        self.clock = Clock()
        self.clock.advance(1_700_000_000)
        # The rules clock is fake, so the rate limiter's tokens never refill: lift it here.
        config = {"rate_per_second": 1e6, "rate_burst": 1e6, **config}
        self.config = Config(host="127.0.0.1", port=0, udp_port=0, db=str(tmp_path / "s.db"), name="Test server", **config)
        self.handle = start_server(_reactor(), self.config, clock=self.clock)
        self.clock.advance(0)  # run the (empty) restore

    @property
    def rooms(self):
        return self.handle.core.rooms

    def match(self, code):
        return self.rooms.rooms[code].match

    async def client(self, name="test/1") -> LineClient:
        c = await connect(_reactor(), "127.0.0.1", self.handle.port, name)
        welcome = await c.hello()
        assert welcome["type"] == "welcome" and welcome["protocol"] == 1
        return c

    async def stop(self):
        await self.handle.stop()


@pytest_twisted.async_yield_fixture
async def server(tmp_path):
    s = Server(tmp_path)
    yield s
    await s.stop()


async def _seated(server: Server):
    """Two connected clients in one room, both ready; returns (first, second, code)."""
    a = await server.client("ann/1")
    b = await server.client("bob/1")
    created = await a.request("create_room", name="Ann", client_seed="seed-a")
    code = created["room"]
    joined = await b.request("join", room=code, name="Bob", client_seed="seed-b")
    a.token, b.token = created["token"], joined["token"]
    await a.request("ready")
    await b.request("ready")
    start_a = await a.wait_for("match_start")
    await b.wait_for("match_start")
    first, second = (a, b) if start_a["seat"] == 0 else (b, a)
    return first, second, code


async def _until(condition, turns: int = 10_000) -> None:
    """Let the reactor run (one turn at a time, no sleeping) until ``condition()`` holds."""
    from twisted.internet.task import deferLater

    for _ in range(turns):
        if condition():
            return
        await deferLater(_reactor(), 0, lambda: None)
    raise AssertionError("condition never held")


async def _oracle_turns(server: Server, code: str, first: LineClient, second: LineClient, until_over=True, steps=10_000):
    by_seat = {0: first, 1: second}
    match = server.match(code)
    for _ in range(steps):
        if match.over:
            return
        await by_seat[match.state.to_move].request(**oracle_message(match.state))
    assert not until_over or match.over


@pytest_twisted.async_yield_fixture(params=[False, True], ids=["loop-commit", "commit-thread"])
async def either_server(tmp_path, request):
    """The server committing on its loop's thread (default) or on a worker thread (--commit-thread)."""
    s = Server(tmp_path, commit_thread=request.param)
    assert (s.handle.core.commits.writer is not None) is request.param
    yield s
    await s.stop()


@pytest_twisted.ensureDeferred
async def test_full_session_ko_then_rematch(either_server):
    """O1–O3, O7–O8, O13–O14: create → join → ready → opening → turns → KO → reveal → rematch with sides swapped."""
    server = either_server
    first, second, code = await _seated(server)
    await first.request("explore", cell=[0, 0])
    await second.request("explore", cell=[7, 7])
    await first.request("plant", cell=[3, 3])
    await second.request("plant", cell=[4, 4])
    await first.request("explore", cell=[0, 7])
    await first.request("plant", cell=[1, 7])
    await first.request("flag", cell=[4, 4])
    await first.request("end_turn")
    with pytest.raises(ServerError) as info:
        await second.request("explore", cell=[4, 4])  # flagged by the opponent (A6)
    assert info.value.code == "marked"
    await second.request("explore", cell=[3, 3])  # KO: first's mine
    end = await second.wait_for("match_end")
    assert end["result"]["outcome"] == "loss" and end["result"]["reason"] == "ko"
    assert end["reveal"]["mines"][3][3] == "o"
    assert verify_record(end["record"]).ok
    old = end["match_id"]
    await first.request("rematch")
    await second.request("rematch")
    new_start = await second.wait_for("match_start", lambda m: m["match_id"] != old)
    assert new_start["first"] == "me" and new_start["first_player_rule"] == "swap"


@pytest_twisted.ensureDeferred
@pytest.mark.parametrize("ending", ["score", "resign", "disconnect", "void"])
async def test_each_ending_over_sockets(server, ending):
    """O9–O12: the score, resign, disconnect and void endings reach both clients over real sockets."""
    first, second, code = await _seated(server)
    if ending == "score":
        await _oracle_turns(server, code, first, second)
        end = await first.wait_for("match_end")
        assert end["result"]["reason"] == "score"
    elif ending == "resign":
        await second.request("resign")
        end = await first.wait_for("match_end")
        assert end["result"] == {"outcome": "win", "winner": "me", "reason": "resign", "scores": None}
    elif ending == "disconnect":
        await second.close()
        presence = await first.wait_for("presence")
        assert presence["connected"] is False and presence["deadline"]["left"] == 120.0
        server.clock.advance(120)
        end = await first.wait_for("match_end")
        assert end["result"]["reason"] == "disconnect" and end["result"]["outcome"] == "win"
    else:
        await first.close()
        await second.wait_for("presence", lambda m: not m["connected"])
        await second.close()
        await _until(lambda: not server.handle.core.conns)  # the server saw both drops
        server.clock.advance(120)
        assert server.match(code).state.outcome().reason.value == "void"
        back = await server.client()
        await back.request("resume", room=code, token=first.token)
        end = await back.wait_for("match_end")
        assert end["result"]["outcome"] == "void"
        await back.close()
    assert verify_record(server.match(code).record(room=code)).ok


@pytest_twisted.ensureDeferred
async def test_reconnect_mid_match_continues(server):
    """O12: a client that drops mid-match resumes with its token on a new socket and plays on."""
    first, second, code = await _seated(server)
    await first.request("explore", cell=[0, 0])
    await second.request("explore", cell=[7, 7])
    await first.abort()
    await second.wait_for("presence", lambda m: not m["connected"])
    again = await server.client()
    joined = await again.request("resume", room=code, token=first.token)
    assert joined["resumed"] is True
    state = await again.wait_for("state")
    assert state["phase"] == "open_plant" and state["to_move"] == "me" and state["seq"] == 2
    back = await second.wait_for("presence", lambda m: m["connected"])
    assert back["deadline"] is None
    await again.request("plant", cell=[3, 3])
    await again.close()
    await second.close()


@pytest_twisted.ensureDeferred
async def test_protocol_errors_over_sockets(server):
    """Protocol: an unknown version gets unsupported_protocol and a close; a too-long line gets line_too_long and a close."""
    c = await connect(_reactor(), "127.0.0.1", server.handle.port)
    c.send(type="hello", protocol=99, client="future/9")
    err = await c.wait_for("error")
    assert err["code"] == "unsupported_protocol"
    await c.lost
    d = await server.client()
    d.transport.write(b"{" + b" " * (names.MAX_LINE + 10) + b"}\n")
    err = await d.wait_for("error")
    assert err["code"] == "line_too_long"
    await d.lost


@pytest_twisted.ensureDeferred
async def test_lan_discovery_answers_with_name_port_and_open_rooms(server):
    """Discovery: a discover datagram gets the server's name, protocol, TCP port and open rooms."""
    c = await server.client()
    await c.request("create_room")
    found = await discover(_reactor(), server.handle.udp_port, timeout=0.3, targets=["127.0.0.1"])
    assert [(f.name, f.port, f.protocol, f.open_rooms) for f in found] == [("Test server", server.handle.port, 1, 1)]
    await c.close()


@pytest_twisted.ensureDeferred
async def test_clean_stop_tells_clients_server_closing(tmp_path):
    """Operations: handle.stop() sends server_closing to every client and closes the sockets."""
    s = Server(tmp_path)
    c = await s.client()
    await s.stop()
    msg = await c.wait_for("server_closing")
    assert msg["reason"] == "shutdown"
    await c.lost


# ----- a real server process, killed with SIGKILL -------------------------------------------------


class _ServerProcess(tprotocol.ProcessProtocol):
    def __init__(self):
        self.output = b""
        self.listening: defer.Deferred[int] = defer.Deferred()
        self.ended: defer.Deferred[None] = defer.Deferred()

    def outReceived(self, data):
        self.output += data
        m = re.search(rb"listening tcp=(\d+)", self.output)
        if m and not self.listening.called:
            self.listening.callback(int(m.group(1)))

    errReceived = outReceived

    def processEnded(self, reason):
        if not self.listening.called:
            self.listening.errback(RuntimeError(self.output.decode(errors="replace")))
        self.ended.callback(None)


def _spawn(db: str, *extra: str) -> _ServerProcess:
    proc = _ServerProcess()
    args = [sys.executable, "-m", "mineduel.server", "--host", "127.0.0.1", "--port", "0",
            "--no-discovery", "--db", db, "--turn-seconds", "600", *extra]
    _reactor().spawnProcess(proc, sys.executable, args, env=dict(os.environ))
    return proc


@pytest_twisted.ensureDeferred
@pytest.mark.parametrize("thread", [False, True], ids=["loop-commit", "commit-thread"])
async def test_sigkill_mid_match_and_restart_continues_exactly(tmp_path, thread):
    """Durability: a server killed with SIGKILL mid-match restarts on its database; both resume and the
    match goes on from the same state."""
    db = str(tmp_path / "kill.db")
    extra = ("--commit-thread",) if thread else ()
    proc = _spawn(db, *extra)
    port = await proc.listening
    a = await connect(_reactor(), "127.0.0.1", port)
    b = await connect(_reactor(), "127.0.0.1", port)
    await a.hello()
    await b.hello()
    created = await a.request("create_room", client_seed="a")
    code = created["room"]
    joined = await b.request("join", room=code, client_seed="b")
    await a.request("ready")
    await b.request("ready")
    first, second = (a, b) if (await a.wait_for("match_start"))["seat"] == 0 else (b, a)
    tokens = {id(a): created["token"], id(b): joined["token"]}
    await first.request("explore", cell=[0, 0])
    await second.request("explore", cell=[7, 7])
    await first.request("plant", cell=[2, 2])
    await second.request("plant", cell=[5, 5])
    await first.request("explore", cell=[0, 7])
    before = first.last("state")
    proc.transport.signalProcess("KILL")
    await proc.ended
    await first.lost
    await second.lost

    proc2 = _spawn(db, *extra)
    port2 = await proc2.listening
    first2 = await connect(_reactor(), "127.0.0.1", port2)
    second2 = await connect(_reactor(), "127.0.0.1", port2)
    await first2.hello()
    await second2.hello()
    await first2.request("resume", room=code, token=tokens[id(first)])
    await second2.request("resume", room=code, token=tokens[id(second)])
    after = await first2.wait_for("state")
    for key in ("match_id", "seq", "seat", "phase", "to_move", "turn", "quota_left", "board", "transcript"):
        assert after[key] == before[key], key
    assert after["deadline"]["left"] <= before["deadline"]["left"] + 0.001
    assert after["deadline"]["left"] > before["deadline"]["left"] - 5  # the downtime did not count
    await first2.request("plant", cell=[1, 7])
    await first2.request("end_turn")
    await second2.request("resign")
    end = await first2.wait_for("match_end")
    assert end["result"]["outcome"] == "win" and verify_record(end["record"]).ok
    proc2.transport.signalProcess("TERM")
    closing = await first2.wait_for("server_closing")
    assert closing["reason"] == "shutdown"
    await proc2.ended
    assert b"server_stopped" in proc2.output


@pytest_twisted.ensureDeferred
async def test_two_headless_bots_play_a_match_from_the_wire_package(server):
    """Bots: view_of + bots.legal_moves + the line client are enough to play a whole match (PROTOCOL.md §14)."""
    import dataclasses
    import random

    rng = random.Random(5)
    a = await server.client("bot-a/1")
    b = await server.client("bot-b/1")
    code = (await a.request("create_room", client_seed="bot-a"))["room"]
    await b.request("join", room=code, client_seed="bot-b")

    async def bot(c):
        await c.request("ready")
        while True:
            msg = await c.wait_for(pred=lambda m: m["type"] in ("state", "match_end"))
            if msg["type"] == "match_end":
                return msg["result"]
            view = view_of(State.parse(msg))
            if view.to_move == view.seat and msg is c.last("state"):  # skip states already superseded
                move = rng.choice(bots.legal_moves(view))
                try:
                    await c.request(dataclasses.replace(move, seq=msg["seq"]))
                except ServerError as exc:
                    if exc.code != "stale_state":  # only a move overtaken by the other seat is allowed
                        raise

    results = await defer.gatherResults([defer.ensureDeferred(bot(a)), defer.ensureDeferred(bot(b))])
    assert {r["outcome"] for r in results} in ({"win", "loss"}, {"draw"})


@pytest_twisted.ensureDeferred
async def test_make_service_starts_and_stops(tmp_path):
    """Operations: make_service(config) runs the server as a Twisted service and stops cleanly."""
    from mineduel.server.service import make_service

    top = make_service(Config(host="127.0.0.1", port=0, udp_port=None, db=str(tmp_path / "svc.db")))
    top.startService()
    game = next(iter(top))
    c = await connect(_reactor(), "127.0.0.1", game.handle.port)
    assert (await c.hello())["type"] == "welcome"
    await top.stopService()
    await c.lost


@pytest_twisted.ensureDeferred
async def test_a_rate_limited_request_is_answered_in_the_client_library(tmp_path):
    """Limits: a line refused before it is parsed cannot echo its id; LineClient.request still gets
    that error as its answer instead of waiting forever (PROTOCOL.md §9)."""
    s = Server(tmp_path, rate_per_second=0.001, rate_burst=3.0)
    try:
        c = await s.client()  # hello takes one token
        await c.request("ping")
        await c.request("ping")
        with pytest.raises(ServerError) as info:
            await c.request("ping")
        assert info.value.code == "rate_limited"
    finally:
        await s.stop()
