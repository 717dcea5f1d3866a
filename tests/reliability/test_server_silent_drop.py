"""Fault injection: a network that goes silent without closing anything (O12, PROTOCOL.md §3, §6).

A clean close is detected at once. A Wi-Fi that drops out, a NAT that forgets the connection or
a frozen phone closes nothing: the server only stops hearing from the seat. Here a loopback proxy
(``tests/netproxy.py``) sits between the clients and an in-process server and turns into a black
hole on command, in one direction or both, leaving every socket open. The server's rules clock
(turns, graces, heartbeats, the 15 s idle timeout) is a ``task.Clock`` the test advances:
nothing waits for real time.

Shown:
* a silent seat is dropped after exactly 15 s without a line, and the opponent gets ``presence``
  with the absolute grace deadline (detection + 120 s);
* back within the grace with ``resume`` on a new connection, the match continues exactly (the
  state equals an independent replay through ``tests/reference_rules.py``); not back, the silent
  seat loses by ``disconnect`` at its grace deadline; both silent, the match is void when the
  second grace runs out, or the seat that came back wins if the other ran out first;
* the black-holed old connection, when its path heals, changes nothing: its seat was taken
  over (``replaced``) or dropped (``idle``), and what it sent meanwhile is never applied;
* a half-open client that sends (pongs) but never reads: while its unread output fits the
  buffers it counts as connected and the turn deadlines (O4, O5) keep the match moving; once
  its output piles up the server stops reading it (backpressure), so its pongs no longer count
  and it is dropped by the idle timeout like any silent seat.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import pytest_twisted
from support import view_oracle
from support.harness import oracle_message
from support.netproxy import Link, Proxy
from support.reliability import record_figure, scaled
from twisted.internet import defer
from twisted.internet.task import Clock, deferLater

from mineduel.server.client import LineClient, connect
from mineduel.server.config import Config
from mineduel.server.service import start_server
from mineduel.shared.fairness.verify import verify_record
from mineduel.shared.wire import codec, names

IDLE = names.IDLE_TIMEOUT
GRACE = names.GRACE_SECONDS
TURN = names.TURN_SECONDS


def _reactor() -> Any:
    from twisted.internet import reactor

    return reactor


WAIT = 10.0
"""Real seconds any single wait may take (a message over loopback, a close): only a broken server
reaches it, and the test then fails instead of hanging."""


def bounded(waiting: Any) -> defer.Deferred[Any]:
    """``waiting`` (a Deferred or a coroutine) that fails after :data:`WAIT` real seconds."""
    d = waiting if isinstance(waiting, defer.Deferred) else defer.ensureDeferred(waiting)
    return d.addTimeout(WAIT, _reactor())


class Net:
    """An in-process server on a fake rules clock, and a proxy in front of it."""

    def __init__(self) -> None:
        self.clock = Clock()
        self.clock.advance(1_700_000_000)
        # The fake clock never refills the rate limiter's tokens: lift the limit.
        config = Config(host="127.0.0.1", port=0, udp_port=None, db=":memory:",
                        rate_per_second=1e6, rate_burst=1e6)
        self.handle = start_server(_reactor(), config, clock=self.clock)
        self.clock.advance(0)  # the (empty) restore
        self.proxy = Proxy(_reactor(), "127.0.0.1", self.handle.port)
        self.proxy.start()
        # A real path's segment size and a small window: output a client does not read backs up
        # into the server after tens of kilobytes, as over the Internet (not megabytes as over
        # loopback). Only for the half-open tests: small windows slow every round trip down.
        self.narrow = Proxy(_reactor(), "127.0.0.1", self.handle.port, server_rcvbuf=4096, server_mss=1400)
        self.narrow.start()

    def now(self) -> float:
        return self.handle.core.rooms.now()

    def match(self, code: str) -> Any:
        return self.handle.core.rooms.rooms[code].match

    async def client(self, name: str, *, direct: bool = False, narrow: bool = False) -> tuple[LineClient, Link | None]:
        proxy = self.narrow if narrow else self.proxy
        port = self.handle.port if direct else proxy.port
        c = await connect(_reactor(), "127.0.0.1", port, name)
        c.transport.setTcpNoDelay(True)  # no Nagle delay: each line leaves when written
        link = None if direct else await proxy.link_for(c.transport)
        await c.hello()
        return c, link

    async def pass_time(self, seconds: float, *, alive: tuple[LineClient, ...] = (), pongs: tuple[Seat, ...] = (),
                        pongs_read: bool = False, step: float = 1.0) -> None:
        """Move the rules clock by ``seconds`` in steps. Before each step every ``alive`` client
        proves it is alive with a ping round trip (which also delivers everything sent to it
        before), and every ``pongs`` seat sends a ``pong`` it cannot get an answer to (half-open);
        with ``pongs_read`` the step waits until the server has read that pong (its idle timer
        restarted now), so no pong is read late, after the clock moved."""
        for _ in range(round(seconds / step)):
            for c in alive:
                await bounded(c.request("ping"))
            for seat in pongs:
                idle = self.handle.core.conns[server_side(self, seat.link).pid].idle if pongs_read else None
                forwarded = seat.link.forwarded["up"]
                seat.c.send(type="pong")
                for _ in range(10_000):  # bounded: the proxy passes it on at once ...
                    await deferLater(_reactor(), 0, lambda: None)
                    if seat.link.forwarded["up"] > forwarded and (
                        idle is None or idle.getTime() == self.clock.seconds() + IDLE  # ... and the server read it
                    ):
                        break
                else:
                    raise AssertionError(f"the server did not read {seat.name}'s pong")
            self.clock.advance(step)
        for c in alive:
            await bounded(c.request("ping"))

    async def stop(self) -> None:
        await self.proxy.stop()
        await self.narrow.stop()
        await self.handle.stop()


@pytest_twisted.async_yield_fixture
async def net():
    n = Net()
    yield n
    await n.stop()


class Seat:
    """A player: its token and connections (the newest last), and the link of each."""

    def __init__(self, name: str, client: LineClient, link: Link | None, token: str) -> None:
        self.name = name
        self.clients = [client]
        self.links = [link]
        self.token = token

    @property
    def c(self) -> LineClient:
        return self.clients[-1]

    @property
    def link(self) -> Link:
        link = self.links[-1]
        assert link is not None
        return link

    @property
    def seat(self) -> int:
        start = self.c.last("match_start")
        assert start is not None
        return int(start["seat"])


async def duel(net: Net, *, narrow: bool = False) -> tuple[Seat, Seat, str]:
    """Two players through a proxy, match started; returns (first player, second player, room)."""
    a, link_a = await net.client("ann/1", narrow=narrow)
    b, link_b = await net.client("bob/1", narrow=narrow)
    created = await bounded(a.request("create_room", name="Ann", client_seed="ann"))
    code = created["room"]
    joined = await bounded(b.request("join", room=code, name="Bob", client_seed="bob"))
    await bounded(a.request("ready"))
    await bounded(b.request("ready"))
    start = await bounded(a.wait_for("match_start"))
    await bounded(b.wait_for("match_start"))
    ann, bob = Seat("ann", a, link_a, created["token"]), Seat("bob", b, link_b, joined["token"])
    return (ann, bob, code) if start["seat"] == 0 else (bob, ann, code)


async def opening(first: Seat, second: Seat) -> None:
    """F1: the four opening actions (first's mine on d4, second's on e5)."""
    await bounded(first.c.request("explore", cell=[0, 0]))
    await bounded(second.c.request("explore", cell=[7, 7]))
    await bounded(first.c.request("plant", cell=[3, 3]))
    await bounded(second.c.request("plant", cell=[4, 4]))


async def go_silent(seat: Seat, direction: str = "both") -> None:
    """Black-hole the seat's link right after a round trip, so its last line is read now."""
    await bounded(seat.c.request("ping"))
    seat.link.block(direction)  # type: ignore[arg-type]


def shown_history(c: LineClient) -> list[dict[str, Any]]:
    """Every event one connection was shown, in order (a resume's state starts it over)."""
    events: list[dict[str, Any]] = []
    for m in c.messages:
        if m["type"] == "state":
            if m["events"]:
                events = events[: m["events"][0]["seq"]] + list(m["events"])
            assert len(events) == m["seq"], f"events shown up to {len(events)}, state at seq {m['seq']}"
    return events


def presences(c: LineClient, connected: bool | None = None) -> list[dict[str, Any]]:
    return [m for m in c.messages if m["type"] == "presence" and (connected is None or m["connected"] is connected)]


async def check_against_replay(*seats_clients: tuple[Seat, LineClient]) -> int:
    """Both seats' latest states against the reference replay of their joined histories; returns
    how many states were compared (each mismatch fails the test)."""
    for _, c in seats_clients:
        await bounded(c.request("ping"))  # everything sent to it before has arrived
    histories = {seat.seat: shown_history(c) for seat, c in seats_clients}
    actions = view_oracle.merge_histories(histories)
    compared = 0
    for seat, c in seats_clients:
        state = c.last("state")
        start = c.last("match_start")
        assert state is not None and start is not None
        differences = view_oracle.state_differences(
            state, actions, started=start["started"], turn_seconds=start["turn_seconds"], start=start
        )
        record_figure("silent-drop", "mismatches with independent replay", len(differences))
        assert differences == [], f"{seat.name}: {differences}"
        compared += 1
    record_figure("silent-drop", "states compared with independent replay", compared)
    return compared


async def play_to_the_end(net: Net, code: str, first: Seat, second: Seat) -> dict[str, Any]:
    """Finish the match with moves that never lose (O9 score ending); returns first's match_end."""
    by_seat = {first.seat: first, second.seat: second}
    match = net.match(code)
    for _ in range(500):
        if match.over:
            break
        await bounded(by_seat[match.state.to_move].c.request(**oracle_message(match.state)))
    assert match.over
    return await bounded(first.c.wait_for("match_end"))


def check_record(record: dict[str, Any]) -> None:
    report = verify_record(record)
    assert report.ok, [c.detail for c in report.failures]
    assert view_oracle.record_differences(record) == []


# ----- one seat silent ---------------------------------------------------------------------------


@pytest.mark.reliability
@pytest_twisted.ensureDeferred
async def test_o12_a_silent_seat_is_dropped_after_exactly_15_s_and_the_opponent_gets_the_grace_deadline(net):
    """O12, §3: silence is a drop only after 15 s without a line; the opponent then gets ``presence``
    and ``room`` with the absolute deadline detection + 120 s."""
    first, second, code = await duel(net)
    await opening(first, second)
    await go_silent(second)
    silent_since = net.now()
    await net.pass_time(IDLE - 1, alive=(first.c,))
    assert presences(first.c) == [], "dropped before 15 s of silence"
    assert all(seat.peer is not None for seat in net.handle.core.rooms.rooms[code].seats), "both still seated"
    await net.pass_time(1, alive=(first.c,))
    [gone] = presences(first.c)
    assert gone["connected"] is False and gone["grace_expired"] is False
    assert gone["server_time"] == silent_since + IDLE
    assert gone["deadline"] == {"at": silent_since + IDLE + GRACE, "left": GRACE}
    room = first.c.last("room")
    assert room["opponent"]["connected"] is False
    assert room["opponent"]["grace"]["at"] == silent_since + IDLE + GRACE
    record_figure("silent-drop", "scenarios run", 1)
    record_figure("silent-drop", "silent seats detected", 1)


@pytest.mark.reliability
@pytest_twisted.ensureDeferred
async def test_o12_back_within_the_grace_on_a_new_connection_the_match_continues_exactly(net):
    """O12: the silent seat resumes on a new connection at a random moment of its grace; its state
    (and the opponent's) equals the independent replay, timeouts meanwhile included (O5); the
    match then plays to its end and its record verifies. The old connection, when its path heals,
    gets the ``idle`` close and what it sent into the black hole is never applied."""
    rng = random.Random(12)
    for _ in range(scaled(2)):
        first, second, code = await duel(net)
        await opening(first, second)
        silent, other = (first, second) if rng.random() < 0.5 else (second, first)
        old = silent.c
        await go_silent(silent)
        silent_since = net.now()
        # What the silent player does meanwhile goes into the black hole (its turn or not).
        old.send(type="explore", cell=[0, 7])
        old.send(type="resign")
        away = rng.randint(int(IDLE) + 1, int(IDLE + GRACE) - 1)
        await net.pass_time(away, alive=(other.c,))
        assert len(presences(other.c, connected=False)) == 1
        new, link = await net.client("back/1")
        silent.clients.append(new)
        silent.links.append(link)
        joined = await bounded(new.request("resume", room=code, token=silent.token))
        assert joined["resumed"] is True
        await bounded(new.wait_for("state"))
        await bounded(other.c.request("ping"))
        back = presences(other.c, connected=True)
        assert len(back) == 1 and back[0]["deadline"] is None
        state = new.last("state")
        assert state["deadline"] is None or 0 < state["deadline"]["left"] <= TURN
        timeouts = [e for e in state["events"] if e["action"] == "timeout"]
        assert len(timeouts) == int((net.now() - silent_since) // TURN), "one timeout per 20 s turn meanwhile (O5)"
        await check_against_replay((silent, new), (other, other.c))

        # The old path heals: it was closed as idle at detection, and its requests change nothing.
        seq = net.match(code).seq
        silent.links[0].unblock()
        await bounded(old.lost)
        assert [m["code"] for m in old.messages if m["type"] == "error"] == ["idle"]
        assert old.messages[-1]["type"] == "error", "something reached the old connection after its close"
        await bounded(other.c.request("ping"))
        assert net.match(code).seq == seq and not net.match(code).over
        record_figure("silent-drop", "old-connection requests applied", 0)

        end = await play_to_the_end(net, code, first, second)
        check_record(end["record"])
        await check_against_replay((silent, new), (other, other.c))
        await new.close()
        await other.c.close()
        record_figure("silent-drop", "scenarios run", 1)
        record_figure("silent-drop", "silent seats detected", 1)
        record_figure("silent-drop", "seats back within grace", 1)


@pytest.mark.reliability
@pytest_twisted.ensureDeferred
async def test_o12_resumed_elsewhere_before_detection_the_black_holed_connection_is_replaced(net):
    """O12: a player whose path went silent reconnects at once (a phone moving from Wi-Fi to mobile
    data) before the server noticed: the new connection takes the seat; the old one gets
    ``replaced`` and the explore it sent into the black hole is never applied, even once delivered."""
    first, second, code = await duel(net)
    await opening(first, second)
    await bounded(first.c.request("explore", cell=[0, 7]))
    await bounded(first.c.request("plant", cell=[1, 6]))
    await bounded(first.c.request("end_turn"))  # second's turn (turn 2)
    old = second.c
    await go_silent(second)
    old.send(type="explore", cell=[2, 0])  # into the black hole, no seq: valid whenever it arrives
    await net.pass_time(5, alive=(first.c,))
    new, link = await net.client("bob-again/1")
    second.clients.append(new)
    second.links.append(link)
    await bounded(new.request("resume", room=code, token=second.token))
    await bounded(new.wait_for("state"))
    assert presences(first.c, connected=False) == [], "never seen as away: it came back before 15 s"
    seq = net.match(code).seq
    second.links[0].unblock()
    await bounded(old.lost)
    assert old.messages[-1]["type"] == "error" and old.messages[-1]["code"] == "replaced"
    await bounded(new.request("ping"))
    assert net.match(code).seq == seq, "the old connection's explore was applied"
    reply = await bounded(new.request("explore", cell=[2, 0], seq=seq))
    assert reply["seq"] == seq + 1
    explores = [e for e in shown_history(new) if e["action"] == "explore" and e["by"] == "me"]
    assert [e["cell"] for e in explores] == [[7, 7], [2, 0]]
    await check_against_replay((first, first.c), (second, new))
    record_figure("silent-drop", "scenarios run", 1)
    record_figure("silent-drop", "old-connection requests applied", 0)


@pytest.mark.reliability
@pytest_twisted.ensureDeferred
async def test_o12_not_back_the_silent_seat_loses_by_disconnect_at_its_grace_deadline(net):
    """O12: not back within 120 s of detection → ``disconnect``: the silent seat loses, at exactly
    its grace deadline; the turns that ran out meanwhile are timeouts at their deadlines (O5)."""
    first, second, _ = await duel(net)
    await opening(first, second)
    await go_silent(first)
    silent_since = net.now()
    await net.pass_time(IDLE + GRACE - 5, alive=(second.c,), step=5)
    assert second.c.last("match_end") is None
    await net.pass_time(5, alive=(second.c,), step=1)
    end = await bounded(second.c.wait_for("match_end"))
    assert end["result"] == {"outcome": "win", "winner": "me", "reason": "disconnect", "scores": None}
    record = end["record"]
    last = record["actions"][-1]
    assert last == {"seat": first.seat, "type": "disconnect", "at": silent_since + IDLE + GRACE, "auto": True}
    check_record(record)
    record_figure("silent-drop", "scenarios run", 1)
    record_figure("silent-drop", "silent seats detected", 1)
    record_figure("silent-drop", "disconnects at the grace deadline", 1)


# ----- both seats silent -------------------------------------------------------------------------


@pytest.mark.reliability
@pytest_twisted.ensureDeferred
@pytest.mark.parametrize("comes_back", [False, True], ids=["nobody-back-void", "one-back-wins"])
async def test_o12_both_silent(net, comes_back):
    """O12: both seats silent (3 s apart). When the first grace runs out nothing is decided; then
    either the second grace runs out too → ``void`` at that moment, or the second seat comes back
    within its own grace → the seat that ran out first loses (``disconnect``)."""
    first, second, code = await duel(net)
    await opening(first, second)
    await go_silent(second)
    second_since = net.now()
    await net.pass_time(3, alive=(first.c,))
    await go_silent(first)
    first_since = net.now()
    assert first_since == second_since + 3
    await net.pass_time(IDLE + GRACE - 3 + 1, step=1)  # second's grace ran out a second ago
    match = net.match(code)
    assert not match.over, "decided while the other seat was still within its grace"
    if comes_back:
        back, _ = await net.client("ann-again/1", direct=True)
        await bounded(back.request("resume", room=code, token=first.token))
        end = await bounded(back.wait_for("match_end"))
        assert end["result"] == {"outcome": "win", "winner": "me", "reason": "disconnect", "scores": None}
        assert end["record"]["actions"][-1]["seat"] == second.seat
    else:
        await net.pass_time(2, step=1)  # first's grace ends at first_since + 135
        assert match.over
        back, _ = await net.client("ann-again/1", direct=True)
        await bounded(back.request("resume", room=code, token=first.token))
        end = await bounded(back.wait_for("match_end"))
        assert end["result"]["outcome"] == "void" and end["result"]["reason"] == "void"
        assert end["record"]["actions"][-1]["at"] == first_since + IDLE + GRACE
    check_record(end["record"])
    await back.close()
    record_figure("silent-drop", "scenarios run", 1)
    record_figure("silent-drop", "silent seats detected", 2)


# ----- half-open: sends, never reads --------------------------------------------------------------


@pytest.mark.reliability
@pytest_twisted.ensureDeferred
async def test_half_open_seat_that_only_pongs_stays_seated_while_its_unread_output_fits(net):
    """A client that stops reading but keeps sending pongs cannot be told from a slow link while
    what it has not read fits the buffers: it stays connected (no ``presence`` to the opponent),
    its turn deadlines run out (O5) so the opponent is never held up, and once it reads again
    it gets every message in order and is up to date."""
    first, second, _ = await duel(net, narrow=True)
    await opening(first, second)  # first to move (turn 1)
    await go_silent(first, "down")
    await net.pass_time(60, alive=(second.c,), pongs=(first,), pongs_read=True)
    assert presences(second.c) == []
    shown = shown_history(second.c)
    timeouts = [e for e in shown if e["action"] == "timeout"]
    assert [e["by"] for e in timeouts] == ["opponent", "me", "opponent"]
    assert [e["at"] for e in timeouts] == [first.c.last("state")["deadline"]["at"] + TURN * k for k in range(3)]
    unread = len(first.c.messages)
    first.link.unblock("down")
    await bounded(first.c.request("ping"))
    assert len(first.c.messages) > unread + 1
    await check_against_replay((first, first.c), (second, second.c))
    record_figure("silent-drop", "scenarios run", 1)


async def a_finished_match(net: Net) -> str:
    """A match played to its score end in another room (its record is a few kilobytes); its id."""
    c, _ = await net.client("carol/1", direct=True)
    d, _ = await net.client("dave/1", direct=True)
    room = (await bounded(c.request("create_room")))["room"]
    d_token = (await bounded(d.request("join", room=room)))["token"]
    await bounded(c.request("ready"))
    await bounded(d.request("ready"))
    start = await bounded(c.wait_for("match_start"))
    first, second = (c, d) if start["seat"] == 0 else (d, c)
    end = await play_to_the_end(net, room, Seat("c", first, None, ""), Seat("d", second, None, d_token))
    await c.close()
    await d.close()
    return str(end["match_id"])


def server_side(net: Net, link: Link) -> Any:
    """The server's protocol instance for the connection behind ``link``."""
    port = link.server_end.transport.getHost().port
    return next(p for p in net.handle.factory.protocols.values() if p.transport.getPeer().port == port)


@pytest.mark.reliability
@pytest_twisted.ensureDeferred
async def test_half_open_seat_whose_unread_output_passes_512_kib_is_cut_at_once(net):
    """A client that asks for far more than it reads: once more than 512 KiB wait for it
    (``max_unsent``) the server cuts the connection at once, and its seat is away (O12): the
    opponent gets ``presence`` with the grace deadline now + 120 s, without any time passing."""
    finished = await a_finished_match(net)
    first, second, code = await duel(net, narrow=True)
    await opening(first, second)
    await go_silent(first, "down")
    record = (await bounded(second.c.request("get_record", match_id=finished)))["record"]
    size = len(codec.encode({"type": "record", "record": record}))
    burst = 2 * (512 * 1024) // size + 1  # twice the limit, in one write: read together
    first.c.transport.write(b"".join(codec.encode({"type": "get_record", "match_id": finished}) for _ in range(burst)))
    cut_at = net.now()
    for _ in range(10_000):
        await bounded(second.c.request("ping"))
        if presences(second.c):
            break
    [gone] = presences(second.c)
    assert gone["connected"] is False
    assert gone["deadline"] == {"at": cut_at + GRACE, "left": GRACE}
    assert net.now() == cut_at
    first.link.unblock("down")
    await bounded(first.c.lost)  # reset: what it never read is gone with the connection
    new, link = await net.client("ann-again/1")
    first.clients.append(new)
    first.links.append(link)
    await bounded(new.request("resume", room=code, token=first.token))
    await bounded(new.wait_for("state"))
    await check_against_replay((first, new), (second, second.c))
    record_figure("silent-drop", "scenarios run", 1)
    record_figure("silent-drop", "silent seats detected", 1)
    record_figure("silent-drop", "get_record requests left unread", burst)


@pytest.mark.reliability
@pytest_twisted.ensureDeferred
async def test_half_open_seat_whose_unread_output_backs_up_is_dropped_15_s_after_its_last_line_read(net):
    """A client that keeps asking (and ponging) but never reads, a little at a time: past Twisted's
    64 KiB send buffer the server stops reading it (backpressure), so its pongs no longer count
    and it is dropped 15 s after its last line read, like a silent seat (O12); its seat comes
    back with ``resume`` on a new connection and the match goes on exactly."""
    finished = await a_finished_match(net)
    first, second, code = await duel(net, narrow=True)
    await opening(first, second)
    await go_silent(first, "down")
    protocol_instance = server_side(net, first.link)
    line = codec.encode({"type": "get_record", "match_id": finished})
    sent = 0
    while not protocol_instance.transport.producerPaused and sent < 2000:
        forwarded = first.link.forwarded["up"]
        first.c.transport.write(line)
        sent += 1
        while first.link.forwarded["up"] < forwarded + len(line):  # the proxy passed it on ...
            await deferLater(_reactor(), 0, lambda: None)
        for _ in range(3):  # ... the server reads it, answers, commits and writes
            await deferLater(_reactor(), 0, lambda: None)
    assert protocol_instance.transport.producerPaused, "the server never stopped reading a client that does not read"
    assert protocol_instance.connected, "cut at once: the output was meant to stay under max_unsent"
    last_read = net.now()
    await net.pass_time(IDLE - 1, alive=(second.c,), pongs=(first,))
    assert presences(second.c) == [], "dropped before 15 s"
    await net.pass_time(1, alive=(second.c,), pongs=(first,))
    [gone] = presences(second.c)
    assert gone["deadline"] == {"at": last_read + IDLE + GRACE, "left": GRACE}
    new, link = await net.client("ann-again/1")
    first.clients.append(new)
    first.links.append(link)
    await bounded(new.request("resume", room=code, token=first.token))
    await bounded(new.wait_for("state"))
    await check_against_replay((first, new), (second, second.c))
    record_figure("silent-drop", "scenarios run", 1)
    record_figure("silent-drop", "silent seats detected", 1)
    record_figure("silent-drop", "get_record requests left unread", sent)


# ----- found on the way ------------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_server_sockets_send_small_messages_at_once(net):
    """Latency: the server writes each turn's messages in one write (``send_all``), complete, so
    holding a small one back until the previous is acknowledged (Nagle's algorithm) gains nothing,
    while a player who is only watching acknowledges late (delayed ACK: 40 ms on Linux, up to
    200 ms on Windows) and would see the end of the opponent's turn that much later. Found by this
    suite (measured over loopback: 8.5 ms per action without TCP_NODELAY, 0.64 ms with it)."""
    import socket

    c, link = await net.client("watcher/1")
    assert link is not None
    sock = server_side(net, link).transport.getHandle()
    assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    await bounded(c.close())
