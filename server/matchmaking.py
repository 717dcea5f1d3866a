"""The quick-match queue (issue 20): who plays whom, pure — times are arguments, no clock, no random.

The running server (``server/quickmatch.py``) joins players, calls :meth:`QuickMatchQueue.pair`
on every join and on a timer (``next_wake()`` says when anything can change), and turns each pair
into a rated room. Everything here is a rule about *who may meet whom, and when*:

- **Closeness that widens with waiting.** A waiter accepts an opponent whose rating is within
  its *reach*: ``gap_start + gap_per_second·t + deviation_weight·RD`` for ``t`` seconds of
  waiting — with the defaults ±(75 + 10·t + RD/2): an established player (RD 60) starts at ±105,
  ±205 after 10 s, ±405 after 30 s; a newcomer (RD 500) at ±325, since its rating says little —
  and after ``any_after`` (60 s) anyone at all: **nobody waits forever**. Two waiters may meet
  when either one's reach covers their difference (the longer waiter widens for both).
- **Oldest first.** Each call examines the waiters that something happened to (joined,
  penalty over, reach grown to cover its nearest candidate), oldest first; each meets, of the
  waiters it may meet, the one *waiting longest* (the closer on a tie). So a newcomer goes to
  the longest waiter it suits, and a waiter whose reach has grown takes the oldest it now covers.
- **Never self, never one address with itself.** The same player cannot wait twice, and two
  waiters of one address (the server's address key: IPv4 or the IPv6 /64) never meet unless
  ``allow_same_address``.
- **No back-to-back pair (against rating farming).** Two addresses are not paired again while
  anyone else is waiting if either one's last pairing was with the other: a pair farming rating
  must meet strangers in between, and on a busy server nearly always does. If the two are alone
  in the queue, they may meet. :meth:`pair` records the pairs it makes; :meth:`record_pairing`
  is there for pairs made elsewhere (or remembered across a restart). Any new pairing makes the
  waiters held back by this rule look again (a new last opponent may have ended their hold).
- **Leavers wait longer.** :meth:`penalise` (a player who left a matched room or did not confirm
  Ready) counts offences, each one's weight halving every ``penalty_half_life`` (1 h). The first
  offence is free (a dropped connection happens); after that the next join waits
  ``penalty_base·penalty_growth^(r−1)`` seconds, ``r`` being the decayed count of earlier
  offences — 15 s, 30 s, 60 s, … at most 300 s — before being matched at all, and its reach
  widens only from then on.

Cost: the eligible waiters are kept in one list sorted by rating (``bisect``), each examination
scans at most ``window`` waiters on each side, closest first, and each waiter carries the time its
reach will cover its nearest candidate (a heap of wake times; a waiter examined and left waiting
brings forward the wake of every waiter in its window that may meet it), so a call touches only
the waiters something happened to — not the whole queue. Measured with 10,000 waiting in
benchmarks/bench_quick_match.py (docs/PERFORMANCE.md, "Quick match (issue 20)"). Penalised
waiters wait apart (a heap by penalty end) until their penalty is over. A waiter whose reach is
already "anyone" but whose window holds nobody it may meet (only its own address, or its last
opponent) scans the whole list if anyone of another address waits at all (again at most once per
``recheck`` seconds), else *sleeps*: no wake, and every examination also considers the
``window`` oldest sleepers (they accept anyone), so a newcomer of another address meets one at
once. The server's limit of connections per address keeps such clusters far smaller than the
window anyway.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import Counter, OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import islice

ANY = math.inf
"""The reach of a waiter who has waited ``any_after`` seconds: any opponent."""
MIN_WAKE = 0.001
"""A wake time is at least this far after the examination that set it (rounding never makes a
waiter due again at once, so a timer on :meth:`QuickMatchQueue.next_wake` never spins)."""


@dataclass(frozen=True)
class PairingPolicy:
    """Every constant of pairing (the server's CLI sets them; defaults documented in the module)."""

    gap_start: float = 75.0  # rating points a new waiter accepts at once (plus its deviation's share)
    gap_per_second: float = 10.0  # how fast the acceptable gap widens while waiting
    deviation_weight: float = 0.5  # reach += this x the waiter's RD: provisional players match widely
    any_after: float = 60.0  # seconds after which any opponent is acceptable
    window: int = 32  # waiters examined on each side of one waiter, closest first
    allow_same_address: bool = False  # two waiters of one address may meet (a LAN party behind one NAT)
    recheck: float = 1.0  # seconds between full scans for a waiter at "anyone" with nobody in its window
    penalty_base: float = 15.0  # the wait for a second offence within a short time, seconds
    penalty_growth: float = 2.0  # each further offence multiplies the wait by this
    penalty_max: float = 300.0  # the longest wait a penalty imposes, seconds
    penalty_half_life: float = 3600.0  # an offence counts half after this many seconds
    memory: int = 100_000  # players' offences and addresses' last opponents remembered at most

    def __post_init__(self) -> None:
        numbers = (self.gap_start, self.gap_per_second, self.deviation_weight, self.any_after, self.recheck,
                   self.penalty_base, self.penalty_growth, self.penalty_max, self.penalty_half_life)
        if not all(math.isfinite(x) and x >= 0 for x in numbers):
            raise ValueError(f"pairing constants are finite and not negative: {self!r}")
        if self.gap_per_second <= 0 or self.recheck <= 0 or self.penalty_half_life <= 0 or self.penalty_growth < 1:
            raise ValueError(f"the gap must widen, recheck and the half-life be positive, growth at least 1: {self!r}")
        if self.window < 1 or self.memory < 1:
            raise ValueError(f"window and memory are at least 1: {self!r}")

    def gap(self, waited: float) -> float:
        """The acceptable rating difference after ``waited`` seconds, before the deviation's share."""
        if waited >= self.any_after:
            return ANY
        return self.gap_start + self.gap_per_second * max(waited, 0.0)

    def penalty(self, earlier: float) -> float:
        """Seconds an offender waits, given the decayed count of its earlier offences (first one free)."""
        if earlier < 0.5:
            return 0.0
        return min(self.penalty_max, self.penalty_base * math.pow(self.penalty_growth, earlier - 1.0))


@dataclass(frozen=True)
class Waiting:
    """One player in the queue. ``since``: when it started waiting (kept when it goes back in after an
    opponent failed to confirm); ``penalty_until``: not matched before this time."""

    player: str
    rating: float
    deviation: float
    address: str
    since: float
    penalty_until: float = 0.0
    # Its quick_match's ``spectators`` (PROTOCOL.md §17): a matched room is watchable only if both
    # let others watch. Not a pairing criterion: nobody waits longer for asking for privacy.
    watch: bool = True


@dataclass
class _Entry:
    """A waiter's bookkeeping: its key in the sorted list and its current wake time."""

    who: Waiting
    key: tuple[float, int, str]  # (rating, join sequence, player): unique, sorts by rating
    start: float  # when its reach starts widening: after its penalty, if any
    parked: bool  # penalised: outside the sorted list until penalty_until
    wake: float = ANY


@dataclass
class _Offences:
    count: float
    at: float


class QuickMatchQueue:
    """Players waiting for a quick match; :meth:`pair` says who meets whom now."""

    def __init__(self, policy: PairingPolicy) -> None:
        self.policy = policy
        self._entries: dict[str, _Entry] = {}
        self._sorted: list[tuple[float, int, str]] = []
        self._per_address: Counter[str] = Counter()  # eligible waiters (in the sorted list) per address
        self._sleepers: dict[str, None] = {}  # at "anyone" with nobody to meet: every examination considers them
        self._wakes: list[tuple[float, int, str]] = []  # (time, sequence, player): lazy, checked on pop
        self._parked: list[tuple[float, int, str]] = []  # (penalty_until, sequence, player)
        self._dirty: set[str] = set()
        self._blocked: set[str] = set()  # examined with a last opponent in reach: again after any new pairing
        self._seq = 0
        self._last_opponent: OrderedDict[str, str] = OrderedDict()
        self._offences: OrderedDict[str, _Offences] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, player: object) -> bool:
        return player in self._entries

    def waiting(self, player: str) -> Waiting | None:
        """The player's queue entry (with the penalty that applies to it), or None."""
        entry = self._entries.get(player)
        return entry.who if entry is not None else None

    def gap(self, waited: float) -> float:
        """The acceptable rating difference after ``waited`` seconds (the policy's curve)."""
        return self.policy.gap(waited)

    def reach(self, who: Waiting, now: float) -> float:
        """How far from its rating this waiter accepts an opponent at ``now`` (ANY after ``any_after``)."""
        start = max(who.since, who.penalty_until)
        return self.policy.gap(now - start) + self.policy.deviation_weight * who.deviation

    def join(self, who: Waiting) -> None:
        """Put a player in the queue (then call :meth:`pair`). A player already waiting, or a rating,
        deviation or time that is not a finite number, is a :class:`ValueError` and changes nothing.
        The player's own recorded penalty applies on top of ``who.penalty_until``."""
        if who.player in self._entries:
            raise ValueError(f"{who.player!r} is already waiting")
        if not all(math.isfinite(x) for x in (who.rating, who.deviation, who.since, who.penalty_until)) or who.deviation < 0:
            raise ValueError(f"a waiter's rating, deviation and times are finite numbers: {who!r}")
        offences = self._offences.get(who.player)
        penalty_until = max(who.penalty_until, self._penalty_end(offences))
        if penalty_until != who.penalty_until:
            who = replace(who, penalty_until=penalty_until)
        self._seq += 1
        entry = _Entry(who, (who.rating, self._seq, who.player), max(who.since, penalty_until), parked=penalty_until > who.since)
        self._entries[who.player] = entry
        if entry.parked:
            heapq.heappush(self._parked, (penalty_until, self._seq, who.player))
        else:
            self._insert(entry)

    def leave(self, player: str) -> bool:
        """Take a player out of the queue; False if it was not waiting (nothing changes)."""
        entry = self._entries.get(player)
        if entry is None:
            return False
        self._remove(entry)
        return True

    def record_pairing(self, a_address: str, b_address: str) -> None:
        """Remember that these two addresses were just paired: not again back to back while others wait."""
        for mine, theirs in ((a_address, b_address), (b_address, a_address)):
            self._last_opponent[mine] = theirs
            self._last_opponent.move_to_end(mine)
        while len(self._last_opponent) > self.policy.memory:
            self._last_opponent.popitem(last=False)
        # A new last opponent may end another pair's "back to back": those held back by it look again.
        self._dirty.update(self._blocked)
        self._blocked.clear()

    def penalise(self, player: str, now: float) -> float:
        """Count an offence (left a matched room, did not confirm Ready); returns until when the
        player's next join waits (``now`` for a forgiven first offence). A waiting player is held
        back at once."""
        offences = self._offences.pop(player, None)
        earlier = self._decayed(offences, now)
        self._offences[player] = _Offences(earlier + 1.0, now)
        while len(self._offences) > self.policy.memory:
            self._offences.popitem(last=False)
        until = now + self.policy.penalty(earlier)
        entry = self._entries.get(player)
        if entry is not None and until > max(entry.who.since, entry.who.penalty_until):
            self._remove(entry)
            self.join(replace(entry.who, penalty_until=until))
        return until

    def next_wake(self) -> float | None:
        """The earliest time :meth:`pair` may pair anyone without a new join: −inf when a join or
        leave is not examined yet (call it now), None when nothing will ever change by itself."""
        if self._dirty:
            return -ANY
        times = [heap[0][0] for heap in (self._wakes, self._parked) if heap]
        return min(times) if times else None

    def pair(self, now: float) -> list[tuple[Waiting, Waiting]]:
        """Pair whoever may meet at ``now`` (oldest first, each with the longest waiter it may meet),
        take them out of the queue and return the pairs (the longer waiter first). Each pair is
        recorded for the no-back-to-back rule at once (:meth:`record_pairing` again changes nothing)."""
        self._release(now)
        pairs: list[tuple[Waiting, Waiting]] = []
        while self._dirty:
            due = sorted((self._entries[p] for p in self._dirty if p in self._entries), key=lambda e: (e.who.since, e.key[1]))
            self._dirty.clear()
            for entry in due:
                if self._entries.get(entry.who.player) is not entry or entry.parked:
                    continue  # paired (or penalised) earlier in this call
                other = self._examine(entry, now)
                if other is not None:
                    self._remove(entry)
                    self._remove(other)
                    first, second = sorted((entry, other), key=lambda e: (e.who.since, e.key[1]))
                    pairs.append((first.who, second.who))
                    self.record_pairing(first.who.address, second.who.address)  # (binds the rest of this call too)
        self._compact()
        return pairs

    # ----- inside ------------------------------------------------------------------------------

    def _penalty_end(self, offences: _Offences | None) -> float:
        """When the last recorded offence's wait ends (0 with none)."""
        if offences is None:
            return 0.0
        return offences.at + self.policy.penalty(offences.count - 1.0)

    def _decayed(self, offences: _Offences | None, now: float) -> float:
        if offences is None:
            return 0.0
        return offences.count * math.pow(0.5, max(now - offences.at, 0.0) / self.policy.penalty_half_life)

    def _insert(self, entry: _Entry) -> None:
        """Into the sorted list; the newcomer is examined at the next :meth:`pair` (against every
        waiter in its window, with either side's reach)."""
        index = bisect.bisect_left(self._sorted, entry.key)
        self._sorted.insert(index, entry.key)
        self._per_address[entry.who.address] += 1
        self._dirty.add(entry.who.player)

    def _remove(self, entry: _Entry) -> None:
        del self._entries[entry.who.player]
        self._dirty.discard(entry.who.player)
        self._blocked.discard(entry.who.player)
        self._sleepers.pop(entry.who.player, None)
        if not entry.parked:
            index = bisect.bisect_left(self._sorted, entry.key)
            del self._sorted[index]
            self._per_address[entry.who.address] -= 1
            if not self._per_address[entry.who.address]:
                del self._per_address[entry.who.address]
        if len(self._entries) == 2:
            # "While anyone else is waiting" no longer holds: two last opponents may now meet.
            self._dirty.update(self._entries)

    def _release(self, now: float) -> None:
        """Penalties over and wake times due: those waiters are examined now."""
        while self._parked and self._parked[0][0] <= now:
            _, seq, player = heapq.heappop(self._parked)
            entry = self._entries.get(player)
            if entry is not None and entry.parked and entry.key[1] == seq:
                entry.parked = False
                self._insert(entry)
        while self._wakes and self._wakes[0][0] <= now:
            when, seq, player = heapq.heappop(self._wakes)
            entry = self._entries.get(player)
            if entry is not None and entry.key[1] == seq and entry.wake == when:
                entry.wake = ANY
                self._dirty.add(player)

    def _may_meet(self, a: _Entry, b: _Entry) -> bool:
        """Not the same player, not the same address (unless allowed), and not back to back."""
        return not self._one_side(a, b) and not self._back_to_back(a, b)

    def _one_side(self, a: _Entry, b: _Entry) -> bool:
        """The same player, or the same address (unless allowed)."""
        return a.who.player == b.who.player or (a.who.address == b.who.address and not self.policy.allow_same_address)

    def _back_to_back(self, a: _Entry, b: _Entry) -> bool:
        """Either one's last opponent address is the other's (A met B, then B met C: A–B is still A's
        repeat), while anyone else is waiting."""
        last = self._last_opponent
        return (last.get(a.who.address) == b.who.address or last.get(b.who.address) == a.who.address) and len(self._entries) > 2

    def _examine(self, entry: _Entry, now: float) -> _Entry | None:
        """The waiter this one meets now — of those in its window it may meet and either one's reach
        covers, the one waiting longest (the closer on a tie) — or None, and then its next wake is set."""
        reach = self.reach(entry.who, now)
        best: _Entry | None = None
        best_rank = (ANY, ANY, 0)
        nearest = ANY
        blocked = False
        later: list[tuple[_Entry, float]] = []  # may meet it, not yet: (waiter, distance)
        for other, distance in self._around(entry, self.policy.window):
            if self._one_side(entry, other):
                continue
            if self._back_to_back(entry, other):
                blocked = True
                continue
            if distance <= reach or distance <= self.reach(other.who, now):
                rank = (other.who.since, distance, other.key[1])
                if rank < best_rank:
                    best, best_rank = other, rank
            else:
                nearest = min(nearest, distance)
                later.append((other, distance))
        for player in islice(self._sleepers, self.policy.window):  # the oldest sleepers accept anyone
            other = self._entries[player]
            rank = (other.who.since, abs(other.who.rating - entry.who.rating), other.key[1])
            if rank < best_rank and not self._one_side(entry, other):
                if self._back_to_back(entry, other):
                    blocked = True
                else:
                    best, best_rank = other, rank
        if best is None and reach == ANY:
            # Anyone will do, but nobody in the window may meet it: the closest one in the whole list,
            # if anyone of another address waits at all; else it sleeps until one joins.
            strangers = len(self._sorted) - (1 if self.policy.allow_same_address else self._per_address[entry.who.address])
            if strangers > 0:
                best = next((o for o, _ in self._around(entry, len(self._sorted)) if self._may_meet(entry, o)), None)
            if best is None:
                self._sleepers[entry.who.player] = None
                if strangers > 0:  # only last opponents around: look again in a while
                    self._set_wake(entry, now + self.policy.recheck)
        elif best is None:  # when its reach covers the nearest candidate (or becomes "anyone"), never in the past
            self._set_wake(entry, max(self._time_to_reach(entry, nearest), now + MIN_WAKE))
        if best is None:
            if blocked:
                self._blocked.add(entry.who.player)
            for other, distance in later:  # each of them wakes no later than its reach covers this one
                self._set_wake(other, max(self._time_to_reach(other, distance), now + MIN_WAKE))
        return best

    def _around(self, entry: _Entry, count: int) -> Iterator[tuple[_Entry, float]]:
        """The waiters next to this one in rating, closest first, at most ``count`` on each side."""
        rating = entry.who.rating
        keys = self._sorted
        index = bisect.bisect_left(keys, entry.key)
        lo, hi = index - 1, index + 1
        lo_end, hi_end = max(index - count, 0), min(index + count, len(keys) - 1)
        while lo >= lo_end or hi <= hi_end:
            if hi > hi_end or (lo >= lo_end and rating - keys[lo][0] <= keys[hi][0] - rating):
                key, lo = keys[lo], lo - 1
            else:
                key, hi = keys[hi], hi + 1
            yield self._entries[key[2]], abs(key[0] - rating)

    def _time_to_reach(self, entry: _Entry, distance: float) -> float:
        """When this waiter's reach first covers ``distance`` (at the latest: when it reaches "anyone")."""
        policy = self.policy
        needed = distance - policy.deviation_weight * entry.who.deviation - policy.gap_start
        waited = min(max(needed, 0.0) / policy.gap_per_second, policy.any_after)
        return entry.start + waited

    def _set_wake(self, entry: _Entry, when: float) -> None:
        """Wake this waiter at ``when`` unless it is already due earlier."""
        if when < entry.wake:
            entry.wake = when
            heapq.heappush(self._wakes, (when, entry.key[1], entry.who.player))

    def _compact(self) -> None:
        """Drop stale wake entries once they outnumber the live ones (each join may add a few)."""
        if len(self._wakes) > 4 * len(self._entries) + 1024:
            self._wakes = [(e.wake, e.key[1], p) for p, e in self._entries.items() if e.wake < ANY and not e.parked]
            heapq.heapify(self._wakes)
