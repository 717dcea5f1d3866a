"""Hostile peers (issue 15, items 1, 2, 3 and 5): limits per address that no reconnection resets,
output coalescing so that no player can get the opponent cut, and the record caps.

Each attack of the issue is repeated here against ``ServerCore`` on a ``task.Clock``
(tests/support/harness.py, which lifts the per-address limits unless a test sets them) or, for
output coalescing, against the net layer's protocol with a transport that records every write.
The attacks over real loopback sockets are in tests/reliability/test_server_abuse.py (section 7).
No sleeps, every loop bounded; the whole file runs in a few seconds.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from support.harness import Client, Harness
from support.reliability import record_figure, scaled
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.logger import LogEvent, formatEvent, globalLogPublisher

from mineduel.server.config import Config
from mineduel.server.net import LineProtocol, ServerFactory
from mineduel.server.storage import MemoryStorage, SQLiteStorage
from mineduel.shared.wire import messages as m

pytestmark = pytest.mark.reliability

ATTACKER = "10.66.0.1"


@pytest.fixture
def logged() -> Iterator[list[str]]:
    """Every log line of the server's namespaces while the test runs, formatted."""
    lines: list[str] = []

    def observe(event: LogEvent) -> None:
        if str(event.get("log_namespace", "")).startswith("mineduel."):
            lines.append(formatEvent(event))

    globalLogPublisher.addObserver(observe)
    yield lines
    globalLogPublisher.removeObserver(observe)


def restart(h: Harness, **config: Any) -> Harness:
    """A new server core on the same storage, its stored rooms restored (slices run to the end)."""
    clock = Clock()
    clock.advance(h.clock.seconds() + 5)
    again = Harness(seed=7, storage=h.storage, clock=clock, **config)
    done = again.rooms.restore_all()
    try:
        for _ in range(10_000):
            if done.called:
                break
            clock.advance(0)
        assert done.called
    finally:
        gc.unfreeze()
    return again


# ----- 1. rooms per address, in any state ------------------------------------------------------------


def occupy(h: Harness, address: str) -> tuple[Client, Client, dict[str, Any]]:
    """One room created from ``address`` and joined from a second connection of the same address."""
    owner, second = h.connect(address), h.connect(address)
    created = owner.send(type="create_room", client_seed="o")[0]
    assert created["type"] == "room_created", created
    assert second.send(type="join", room=created["room"], client_seed="s")[0]["type"] == "joined"
    return owner, second, created


def test_one_address_holds_at_most_its_rooms_in_any_state_even_joining_its_own_and_after_a_restart():
    """Issue 15 item 1: one address joined its own rooms from a second connection, so none of them
    waited for an opponent, and filled the server. Now the rooms an address created count whatever
    their state (full, playing, finished, with both seats away): at ``max_rooms_per_address`` it gets
    ``too_many_rooms``; another address creates as usual; a room that goes frees its place; and a
    restart restores the count with the rooms (the owner tag is stored)."""
    limit = 6
    h = Harness(max_rooms_per_address=limit)
    held = []
    for i in range(limit):
        owner, second, created = occupy(h, ATTACKER)
        if i % 3 == 1:  # playing
            owner.send(type="ready")
            second.send(type="ready")
        elif i % 3 == 2:  # finished
            owner.send(type="ready")
            second.send(type="ready")
            owner.send(type="resign")
        held.append((owner, second, created))
        if i % 2:  # both seats away: the room stays all the same
            owner.drop()
            second.drop()
    statuses = sorted(h.rooms.rooms[c["room"]].status for _, _, c in held)
    assert statuses == ["finished", "finished", "playing", "playing", "waiting", "waiting"]
    for _ in range(scaled(20)):  # however many connections it uses
        refused = h.connect(ATTACKER).send(type="create_room")[0]
        assert refused["code"] == "too_many_rooms" and "holds 6 rooms" in refused["message"]
    assert len(h.rooms.rooms) == limit
    assert h.connect("10.0.0.9").send(type="create_room")[0]["type"] == "room_created"
    owner, second, created = held[0]  # waiting, both seats connected: both leave, the room goes
    owner.send(type="leave")
    second.send(type="leave")
    assert created["room"] not in h.rooms.rooms
    again = h.connect(ATTACKER)
    assert again.send(type="create_room")[0]["type"] == "room_created"
    assert h.connect(ATTACKER).send(type="create_room")[0]["code"] == "too_many_rooms"

    restarted = restart(h, max_rooms_per_address=limit)
    assert len(restarted.rooms.rooms) == limit + 1
    for _ in range(scaled(5)):
        assert restarted.connect(ATTACKER).send(type="create_room")[0]["code"] == "too_many_rooms"
    assert restarted.connect("10.0.0.10").send(type="create_room")[0]["type"] == "room_created"
    record_figure("hostile", "rooms one address could hold (limit 6)", limit, "max rooms")


def test_rooms_still_waiting_to_be_restored_count_against_their_address():
    """Right after a restart the rooms are restored in slices; those not restored yet count already
    (their owner tags are read at start), so the restore is no window for creating more."""
    h = Harness(max_rooms_per_address=3)
    for _ in range(3):
        occupy(h, ATTACKER)
    clock = Clock()
    clock.advance(h.clock.seconds() + 5)
    again = Harness(seed=8, storage=h.storage, clock=clock, max_rooms_per_address=3)
    done = again.rooms.restore_all()
    try:
        assert len(again.rooms.lobby.pending) == 3 and not again.rooms.rooms  # nothing restored yet
        assert again.connect(ATTACKER).send(type="create_room")[0]["code"] == "too_many_rooms"
        for _ in range(100):
            if done.called:
                break
            clock.advance(0)
    finally:
        gc.unfreeze()
    assert done.called and again.connect(ATTACKER).send(type="create_room")[0]["code"] == "too_many_rooms"


def test_room_owners_are_stored_as_keyed_hashes_never_as_addresses(tmp_path):
    """The database keeps which address created a room as a keyed hash (HMAC with a secret of its
    own, ``meta.owner_key``), never the address; the same address gets the same tag after a restart."""
    storage = SQLiteStorage(tmp_path / "owners.sqlite3")
    h = Harness(storage=storage)
    _, _, created = occupy(h, "203.0.113.77")
    blob = orjson.loads(storage._read.execute("SELECT data FROM rooms").fetchone()[0])
    assert "203.0.113.77" not in orjson.dumps(blob).decode()
    owner = blob["owner"]
    assert len(owner) == 32 and {s["owner"] for s in blob["seats"]} == {owner}
    assert storage.room_owners() == {created["room"]: owner}
    again = Harness(storage=storage)
    assert again.core.limits.owner("203.0.113.77") == owner
    assert Harness(storage=MemoryStorage()).core.limits.owner("203.0.113.77") != owner  # another secret


# ----- 1. the message budget per address ---------------------------------------------------------------


def test_the_message_budget_of_an_address_is_shared_by_its_connections_and_reconnecting_does_not_reset_it():
    """Issue 15 item 2: each new connection brought a fresh burst of 40 lines. Now an address has
    one budget over all its connections (3 x the per-connection rate: 60 lines/s, bursts of 120)
    beside each connection's own: 16 connections of 10 lines each get 120 lines handled in all, the
    rest ``rate_limited``; closing them all and opening new ones gains nothing; another address is
    not affected; a second later the address has 60 more."""
    h = Harness(rate_per_second=20.0, rate_burst=40.0, address_rate_per_second=None, address_rate_burst=None,
                max_connections_per_address=16)
    assert (h.config.address_rate(), h.config.address_burst()) == (60.0, 120.0)
    conns = [h.connect(ATTACKER) for _ in range(16)]  # 16 hellos: 104 lines left
    answered = refused = 0
    for conn in conns:
        for _ in range(10):
            reply = conn.send(type="ping")[0]
            answered += reply["type"] == "pong"
            refused += reply.get("code") == "rate_limited"
    assert (answered, refused) == (104, 56)
    for conn in conns:
        conn.drop()
    churned = 0
    for _ in range(scaled(50)):  # reconnect churn: a fresh connection, a hello and a ping, closed
        conn = h.connect(ATTACKER, hello=False)
        replies = conn.send(type="hello", protocol=1, client="churn") + conn.send(type="ping")
        churned += sum(r["type"] in ("welcome", "pong") for r in replies)
        assert all(r["type"] in ("welcome", "pong") or r["code"] == "rate_limited" for r in replies)
        conn.drop()
    assert churned == 0
    other = h.connect("10.0.0.2")
    assert [other.send(type="ping")[0]["type"] for _ in range(39)] == ["pong"] * 39
    h.advance(1.0)
    fresh = [h.connect(ATTACKER) for _ in range(4)]
    handled = sum(c.send(type="ping")[0]["type"] == "pong" for c in fresh for _ in range(20))
    assert handled == 60 - 4
    record_figure("hostile", "lines sent by one address's connections", 16 * 10 + scaled(50) * 2 + 80, "lines")


def test_connections_refused_for_the_address_budget_count_as_strikes_and_a_flood_is_closed():
    """A connection whose address has no budget left is refused like one over its own rate: each
    refused line is a strike, and more than ``rate_burst`` strikes in a row close it."""
    h = Harness(rate_per_second=20.0, rate_burst=40.0, address_rate_per_second=1.0, address_rate_burst=5.0)
    first = h.connect(ATTACKER)
    for _ in range(4):
        assert first.send(type="ping")[0]["type"] == "pong"
    second = h.connect(ATTACKER, hello=False)  # its own bucket is full, its address's empty
    for _ in range(40):
        assert second.send(type="ping")[0]["code"] == "rate_limited"
    assert not second.closed
    assert second.send(type="ping") == [] and second.closed


# ----- 1. new connections per address per second ------------------------------------------------------


def test_new_connections_per_address_are_bounded_per_second_whatever_closes(logged):
    """Issue 15 item 2: 1,300-1,600 connections a second from one address. Now each address may open
    ``connection_burst_per_address`` (30) at once, then 10 a second, however many it closes: past
    that ``too_many_connections`` and closed. Another address connects as usual; the refusals are
    logged at most 20 times a minute per address; the address's state is forgotten once idle."""
    h = Harness(connection_rate_per_address=10.0, connection_burst_per_address=30.0, log_lines_per_address=20)
    h.core.start()  # the clock loop prunes the per-address table
    opened = refused = 0
    for _ in range(scaled(200)):
        conn = h.connect(ATTACKER, hello=False)
        if conn.pid in h.core.conns:
            opened += 1
            conn.drop()
        else:
            assert conn.messages[0]["code"] == "too_many_connections" and conn.closed
            assert "new connections" in conn.messages[0]["message"]
            refused += 1
    assert opened == 30 and refused == scaled(200) - 30
    assert h.connect("10.0.0.2").pid in h.core.conns
    h.advance(0.11)
    assert h.connect(ATTACKER, hello=False).pid in h.core.conns  # one more after a tenth of a second
    assert h.connect(ATTACKER, hello=False).pid not in h.core.conns
    refusals = [line for line in logged if line.startswith("connection_refused")]
    assert len(refusals) == 20
    assert ATTACKER in h.core.limits.states
    for pid in list(h.core.conns):
        h.core.connection_lost(pid)
    h.advance(h.config.log_interval + 5)  # buckets full, log window over: forgotten by the clock loop
    assert not h.core.limits.states
    summary = [line for line in logged if line.startswith("log_suppressed")]
    assert summary == [f"log_suppressed address={ATTACKER} lines={refused - 20 + 1} interval_s=60"]
    for loop in h.core._loops:
        loop.stop()
    record_figure("hostile", "connection attempts from one address", scaled(200) + 2, "connections")


def test_hello_log_lines_are_rate_limited_per_address_with_one_summary_line_per_interval(logged):
    """Issue 15 item 2: every ``hello`` wrote a log line. Now at most ``log_lines_per_address`` lines
    a minute concern one address; the next line after the minute is preceded by one
    ``log_suppressed`` line counting what was left out. Another address logs as usual."""
    h = Harness(log_lines_per_address=5, log_interval=60.0)
    for _ in range(50):
        h.connect(ATTACKER).drop()
    h.connect("10.0.0.2")
    hellos = [line for line in logged if line.startswith("hello")]
    assert len(hellos) == 6  # 5 of the attacker's, 1 of the other address
    h.advance(60.0)
    h.connect(ATTACKER)
    tail = [line for line in logged if line.startswith(("hello", "log_suppressed"))][-2:]
    assert tail[0] == f"log_suppressed address={ATTACKER} lines=45 interval_s=60"
    assert tail[1].startswith("hello")


def test_room_and_match_log_lines_count_against_their_address_budget_too(logged):
    """A colluding pair looping rematch/resign wrote two log lines per match. The lines about rooms,
    seats and matches count against the address of the room's creator or of the seat, like ``hello``:
    one summary line a minute then says how many were left out."""
    h = Harness(log_lines_per_address=10, log_interval=60.0)
    h.core.start()
    a, b = pair_in(h, ATTACKER, ATTACKER)
    loops = scaled(30)
    for _ in range(loops):
        finish(h, a, b)
        rematch(a, b)
    about = ("hello", "room_created", "room_joined", "match_started", "match_ended", "seat_")
    written = [line for line in logged if line.startswith(about)]
    assert len(written) == 10
    h.advance(61.0)  # the clock loop: the window is over, its summary is written
    (summary,) = [line for line in logged if line.startswith("log_suppressed")]
    # 2 hellos, room_created, room_joined, loops + 1 match_started, loops match_ended: 10 written
    assert summary == f"log_suppressed address={ATTACKER} lines={5 + 2 * loops - 10} interval_s=60"
    for loop in h.core._loops:
        loop.stop()


# ----- 1. resumes per seat ------------------------------------------------------------------------------


def test_resumes_of_one_seat_are_bounded_and_the_opponent_hears_of_the_allowed_ones_only():
    """Issue 15 item 3: a player dropped and resumed its own seat from new connections as fast as it
    could, each cycle sending the opponent a ``presence`` and a ``room`` twice (away, back). Now a
    seat may be resumed 10 times, then once every 6 s (10 per minute); beyond that
    ``too_many_attempts`` (the client keeps its token and retries after its backoff): nothing changes
    and the opponent is told nothing more. Resuming over a connection still open counts too."""
    h = Harness(resumes_per_seat=10, resume_window=60.0)
    a, b = h.start()
    b.new()
    seat = h.rooms.peer_seat[a.pid][1]
    conn = a
    for _ in range(10):
        conn.drop()  # away (O12) ...
        conn = h.connect("10.0.0.1")
        assert conn.send(type="resume", room=a.room, token=a.token)[0]["type"] == "joined"  # ... and back
    told = [(msg["type"], msg.get("connected")) for msg in b.new()]
    assert told == [("presence", False), ("room", None), ("presence", True), ("room", None)] * 10
    conn.drop()
    assert [msg["type"] for msg in b.new()] == ["presence", "room"]
    for _ in range(scaled(100)):
        other = h.connect("10.0.0.1")
        refused = other.send(type="resume", room=a.room, token=a.token)
        assert [r.get("code") for r in refused] == ["too_many_attempts"] and "resumed too often" in refused[0]["message"]
        other.drop()
    assert b.new() == [] and seat.peer is None  # still away: nothing changed, nobody was told
    h.advance(6.0)
    back = h.connect("10.0.0.1")
    assert back.send(type="resume", room=a.room, token=a.token)[0]["type"] == "joined"
    assert back.send(type="resume", room=a.room, token=a.token)[0]["code"] == "too_many_attempts"  # over itself
    assert b.last("presence")["connected"] is True and seat.peer == back.pid
    record_figure("hostile", "resumes refused beyond the seat's budget", scaled(100) + 1, "requests")


# ----- 2. output coalescing ---------------------------------------------------------------------------


class Recording(StringTransport):
    """A transport recording every write, with the producer calls a TCP transport has."""

    def __init__(self) -> None:
        super().__init__()
        self.reading = True
        self.lost = False

    def pauseProducing(self) -> None:
        self.reading = False

    def resumeProducing(self) -> None:
        self.reading = True

    def loseConnection(self) -> None:
        self.lost = True

    def types(self) -> list[str]:
        return [orjson.loads(line)["type"] for line in self.value().splitlines()]


def paused_protocol() -> tuple[ServerFactory, LineProtocol, Recording]:
    factory = ServerFactory(clock=Clock())
    factory.core = SimpleNamespace(config=Config())  # type: ignore[assignment]  # the net layer reads its config only
    proto = LineProtocol()
    proto.factory = factory
    proto.pid = 1
    transport = Recording()
    proto.transport = transport  # type: ignore[assignment]
    factory.protocols[1] = proto
    return factory, proto, transport


def room(code: str, status: str, now: float) -> m.Room:
    me = m.SeatInfo("me", True, False, False, None, False)
    return m.Room(code, status, me, None, None, "0" * 64, None, now)


def presence(connected: bool, now: float) -> m.Presence:
    return m.Presence(connected, None, False, now)


def test_while_a_peer_does_not_read_a_newer_snapshot_replaces_an_older_one_and_order_is_kept():
    """Issue 15 item 2, the mechanism: while Twisted's buffer for a peer is full (``pauseProducing``),
    ``room``, ``presence`` and ``rematch`` wait and a newer one replaces an older one (a ``room`` per
    room code); any other message writes them out first, so nothing overtakes anything and a
    request's effects still come before its reply (PROTOCOL.md §1); resuming, or closing, writes
    what waits."""
    factory, proto, transport = paused_protocol()
    factory.send_all([(1, room("AAAAAA", "waiting", 1.0)), (1, m.Ok("ready", "r1"))])
    assert transport.types() == ["room", "ok"]  # not paused: written at once
    transport.clear()
    proto.pauseProducing()
    assert not transport.reading and proto.stalled is not None
    for i in range(scaled(1000)):  # the opponent resuming in a loop
        factory.send_all([(1, presence(i % 2 == 0, 2.0 + i)), (1, room("AAAAAA", "playing", 2.0 + i))])
        factory.send(1, m.RematchStatus(False, i % 2 == 1))
    assert transport.value() == b"" and len(proto.tail) == 3
    factory.send_all([(1, room("AAAAAA", "playing", 5000.0)), (1, m.Ok("ready", "r2"))])
    sent = [orjson.loads(line) for line in transport.value().splitlines()]
    assert [msg["type"] for msg in sent] == ["presence", "rematch", "room", "ok"]
    assert sent[2]["server_time"] == 5000.0 and sent[0]["server_time"] == 2.0 + scaled(1000) - 1
    transport.clear()
    factory.send_all([(1, room("AAAAAA", "finished", 6000.0)), (1, room("BBBBBB", "waiting", 6001.0)),
                      (1, room("AAAAAA", "finished", 6002.0))])
    assert transport.value() == b""
    proto.resumeProducing()  # Twisted sent everything: what waits goes now, in order
    sent = [orjson.loads(line) for line in transport.value().splitlines()]
    assert [(msg["room"], msg["server_time"]) for msg in sent] == [("BBBBBB", 6001.0), ("AAAAAA", 6002.0)]
    assert transport.reading and proto.stalled is None and not proto.tail
    transport.clear()
    proto.pauseProducing()
    factory.send_all([(1, presence(False, 7000.0)), (1, None)])  # a close: the held snapshot first
    assert transport.types() == ["presence"] and transport.lost


def test_a_peer_whose_held_snapshots_and_buffer_pass_max_unsent_is_cut():
    """The tail counts towards ``max_unsent`` like Twisted's buffer (it can hold one message of each
    kind only, so this takes a huge room message: the bound is still the bound)."""
    factory, proto, transport = paused_protocol()
    factory.core = SimpleNamespace(config=Config(max_unsent=1000))  # type: ignore[assignment]
    proto.pauseProducing()
    big = m.Room("AAAAAA", "waiting", m.SeatInfo("x" * 600, True, False, False, None, False),
                 m.SeatInfo("y" * 600, True, False, False, None, False), None, "0" * 64, None, 1.0)
    cut: list[str] = []
    proto.cut_off = lambda reason, detail: cut.append(reason)  # type: ignore[method-assign]
    factory.send(1, big)
    assert cut == ["unread_output"]


# ----- 3. records ---------------------------------------------------------------------------------------


def pair_in(h: Harness, first: str, second: str) -> tuple[Client, Client]:
    """Two seated clients from these addresses with a match started, as (seat 0, seat 1)."""
    a, b = h.connect(first), h.connect(second)
    created = a.send(type="create_room", client_seed="a")[0]
    a.room = b.room = created["room"]
    a.token = created["token"]
    b.token = b.send(type="join", room=a.room, client_seed="b")[0]["token"]
    a.send(type="ready")
    b.send(type="ready")
    return (a, b) if a.seat == 0 else (b, a)


def finish(h: Harness, a: Client, b: Client) -> dict[str, Any]:
    """Resign the running match (the seat to move resigns); its ``match_end`` as one player got it."""
    match = h.match(a)
    loser = a if match.state.to_move == a.seat else b
    loser.send(type="resign")
    return loser.last("match_end")


def rematch(a: Client, b: Client) -> None:
    a.send(type="rematch", client_seed="a")
    b.send(type="rematch", client_seed="b")


def test_records_beyond_the_caps_per_pair_and_per_address_are_not_kept_yet_each_match_is_played_and_verifiable(logged):
    """Issue 15 item 5: a colluding pair looped rematch/resign, 9.6 stored matches a second. Now
    at most ``max_records_per_pair`` records of one pair of addresses and ``max_records_per_address``
    of one address are kept per day: a match beyond a cap is played as ever and ends with its whole
    record in ``match_end`` (so its players can verify it), but ``get_record`` does not find it. Other
    players' records are kept; after the day the pair's records are kept again."""
    h = Harness(max_records_per_pair=3, max_records_per_address=5, record_window=86400.0)
    a, b = pair_in(h, "10.0.0.1", "10.0.0.2")
    ended = []
    for _ in range(scaled(6)):
        end = finish(h, a, b)
        assert end["record"]["match_id"] == end["match_id"]  # the players have the record
        ended.append(end["match_id"])
        rematch(a, b)
    kept = [mid for mid in ended if mid in h.storage.results]
    assert kept == ended[:3]
    asker = h.connect("10.0.0.50")
    assert asker.send(type="get_record", match_id=ended[0])[0]["type"] == "record"
    assert asker.send(type="get_record", match_id=ended[3])[0]["code"] == "not_found"
    c, d = pair_in(h, "10.0.0.1", "10.0.0.3")  # the same first address with someone else
    second_pair = [finish(h, c, d)["match_id"]]
    for _ in range(3):
        rematch(c, d)
        second_pair.append(finish(h, c, d)["match_id"])
    assert [mid in h.storage.results for mid in second_pair] == [True, True, False, False]  # 10.0.0.1: 5 a day
    e, f = pair_in(h, "10.0.0.4", "10.0.0.5")
    assert finish(h, e, f)["match_id"] in h.storage.results
    caps = [line for line in logged if line.startswith("record_cap_reached")]
    assert [line.split()[1] for line in caps] == ["cap=pair", "cap=address"]  # one line per cap and window
    h.advance(86400.0)
    rematch(a, b)
    assert finish(h, a, b)["match_id"] in h.storage.results
    record_figure("hostile", "matches finished beyond a record cap", scaled(6) - 3 + 2, "matches")


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_the_record_store_is_bounded_and_the_oldest_records_go_first(kind, tmp_path):
    """Issue 15 item 5: past ``max_records`` the oldest records (by end time) are deleted down to
    90 % of the bound, in the same commit as the record that passed it; the newest are served."""
    storage = MemoryStorage() if kind == "memory" else SQLiteStorage(tmp_path / "records.sqlite3")
    h = Harness(storage=storage, max_records=10)
    a, b = pair_in(h, "10.0.0.1", "10.0.0.2")
    ended = []
    for _ in range(scaled(25)):
        h.advance(1.0)
        ended.append(finish(h, a, b)["match_id"])
        count = storage.result_count()
        assert count <= 10
        rematch(a, b)
    stored = [mid for mid in ended if storage.load_result(mid) is not None]
    assert stored == ended[len(ended) - len(stored):] and 9 <= len(stored) <= 10  # the newest, in order
    assert h.connect("10.0.0.9").send(type="get_record", match_id=ended[-1])[0]["type"] == "record"
    restarted = restart(h, max_records=10)  # the count is read from the store at start
    assert restarted.rooms.caps.stored == len(stored)
    record_figure("hostile", "records stored under a bound of 10", len(ended), "matches")
