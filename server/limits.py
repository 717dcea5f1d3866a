"""Limits per address that no reconnection resets, log lines per address, and the record caps (issue 15).

The per-connection limits (``session.py``) start afresh with every connection; these do not.
An address (an IPv4 address or an IPv6 /64, ``session.address_key``) keeps one
:class:`AddressState` while it has a connection open and afterwards until all its buckets are
full again, so closing and reopening connections gains nothing:

* a **message budget** shared by all its connections (a token bucket beside each connection's own);
* a **connection rate**: new connections per second (a token bucket);
* a **log budget**: at most ``log_lines_per_address`` lines about it per ``log_interval``, then
  one ``log_suppressed`` line with the count of the lines left out.

Rooms and seats carry the *owner tag* of the address that created or last took them: a keyed
hash (HMAC-SHA-256 with a per-database secret, ``meta.owner_key``), stored with the room, so the
rooms an address holds are counted after a restart too (``lobby.py``) without the database
keeping addresses. :class:`RecordCaps` counts stored records per owner and per pair of owners.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from twisted.logger import Logger

from mineduel.server.config import Config
from mineduel.server.storage import Storage, Write

log = Logger(namespace="mineduel.limits")

OWNER_KEY = "owner_key"
"""The ``meta`` row holding the secret of the owner tags (hex)."""


def refilled(tokens: float, since: float, now: float, rate: float, burst: float) -> float:
    """A token bucket's tokens at ``now`` (it held ``tokens`` at ``since``)."""
    return min(burst, tokens + (now - since) * rate)


@dataclass(slots=True)
class AddressState:
    """What the server remembers of one address between its connections."""

    key: str
    owner: str
    lines: float  # message budget tokens ...
    lines_at: float  # ... as of this time
    connects: float  # connection rate tokens ...
    connects_at: float
    log_start: float = 0.0  # the log window ...
    logged: int = 0  # ... and the lines logged in it
    suppressed: int = 0  # lines left out of it

    def take_line(self, now: float, config: Config) -> bool:
        """One line from the address's shared budget, if there is one (else nothing changes)."""
        tokens = refilled(self.lines, self.lines_at, now, config.address_rate(), config.address_burst())
        self.lines_at = now
        if tokens < 1.0:
            self.lines = tokens
            return False
        self.lines = tokens - 1.0
        return True


class AddressLimits:
    """Every address's :class:`AddressState`, created on its first connection, pruned once idle."""

    def __init__(self, config: Config, clock: Callable[[], float], secret: bytes) -> None:
        self.config = config
        self.clock = clock
        self._secret = secret
        self.states: dict[str, AddressState] = {}
        self.by_owner: dict[str, AddressState] = {}  # the same states, by owner tag (room and seat log lines)
        self._next_prune = clock() + config.log_interval
        self._pruned_size = 0

    @classmethod
    def for_storage(cls, config: Config, clock: Callable[[], float], storage: Storage) -> AddressLimits:
        """With the database's owner-tag secret (made and stored on first use)."""
        stored = storage.meta(OWNER_KEY)
        if stored is None:
            stored = os.urandom(16).hex()
            try:
                storage.commit(Write(meta={OWNER_KEY: stored}))
            except Exception:  # noqa: BLE001 - tags of this run will not match after a restart; nothing else
                log.failure("owner_key_not_stored")
        return cls(config, clock, bytes.fromhex(stored))

    def owner(self, key: str) -> str:
        """The owner tag of an address key (32 hex digits)."""
        return hmac.new(self._secret, key.encode(), hashlib.sha256).hexdigest()[:32]

    def state(self, key: str) -> AddressState:
        found = self.states.get(key)
        if found is None:
            now = self.clock()
            config = self.config
            found = AddressState(
                key, self.owner(key), config.address_burst(), now, config.connection_burst_per_address, now, now
            )
            self.states[key] = found
            self.by_owner[found.owner] = found
        return found

    def admit(self, key: str) -> AddressState | None:
        """A new connection from ``key``: its state, or ``None`` past the connection rate."""
        state = self.state(key)
        now = self.clock()
        config = self.config
        tokens = refilled(state.connects, state.connects_at, now, config.connection_rate_per_address,
                          config.connection_burst_per_address)
        state.connects_at = now
        state.connects = tokens
        if tokens < 1.0:
            return None
        state.connects = tokens - 1.0
        return state

    # ----- log lines --------------------------------------------------------------------------
    def may_log(self, state: AddressState) -> bool:
        """Whether a line about this address may be logged now (else it is counted as left out)."""
        now = self.clock()
        if now - state.log_start >= self.config.log_interval:
            self._summarise(state)
            state.log_start = now
            state.logged = 0
        if state.logged < self.config.log_lines_per_address:
            state.logged += 1
            return True
        state.suppressed += 1
        return False

    def may_log_owner(self, owner: str) -> bool:
        """:meth:`may_log` for the address with this owner tag (one the server no longer tracks: yes)."""
        state = self.by_owner.get(owner)
        return state is None or self.may_log(state)

    def _summarise(self, state: AddressState) -> None:
        if state.suppressed:
            log.info("log_suppressed address={address} lines={lines} interval_s={interval:g}",
                     address=state.key, lines=state.suppressed, interval=self.config.log_interval)
            state.suppressed = 0

    # ----- memory -----------------------------------------------------------------------------
    def maybe_prune(self, open_connections: Mapping[str, int]) -> None:
        """Forget idle addresses every ``log_interval``, or at once when the table doubled."""
        now = self.clock()
        if now < self._next_prune and len(self.states) <= 2 * self._pruned_size + 1024:
            return
        self._next_prune = now + self.config.log_interval
        config = self.config
        for key, state in list(self.states.items()):
            if now - state.log_start >= config.log_interval:
                self._summarise(state)
            if key in open_connections or state.suppressed:
                continue
            full = (
                refilled(state.lines, state.lines_at, now, config.address_rate(), config.address_burst())
                >= config.address_burst()
                and refilled(state.connects, state.connects_at, now, config.connection_rate_per_address,
                             config.connection_burst_per_address) >= config.connection_burst_per_address
            )
            if full:
                del self.states[key]
                self.by_owner.pop(state.owner, None)
        self._pruned_size = len(self.states)


class RecordCaps:
    """Which finished matches' records are stored: per owner and per pair of owners per window,
    and the total bound on the store (the oldest records go first)."""

    def __init__(self, config: Config, clock: Callable[[], float], stored: int = 0) -> None:
        self.config = config
        self.clock = clock
        self.windows: dict[str, tuple[float, int]] = {}  # owner or pair -> (window start, records)
        self.stored = stored  # records in the store, as far as known (at least: an overestimate trims early)

    def keep(self, owners: Iterable[str]) -> tuple[str, bool] | None:
        """Count a finished match of these owners: ``None`` if its record is kept, else which cap
        refused it (``"address"`` or ``"pair"``) and whether this is that cap's first refusal in
        its window (the one worth a log line)."""
        tags = sorted({o for o in owners if o})
        if not tags:
            return None  # a room stored before owners were (nothing to count against)
        now = self.clock()
        config = self.config
        pair = "|".join(tags if len(tags) == 2 else tags * 2)
        keys = [(tag, config.max_records_per_address) for tag in tags] + [(pair, config.max_records_per_pair)]
        counts = []
        for key, cap in keys:
            start, count = self.windows.get(key, (now, 0))
            if now - start >= config.record_window:
                start, count = now, 0
            if count >= cap:
                self.windows[key] = (start, count + 1)  # refusals counted too: only the first is logged
                return ("pair" if key == pair else "address"), count == cap
            counts.append((key, start, count))
        for key, start, count in counts:
            self.windows[key] = (start, count + 1)
        self.stored += 1
        return None

    def trim_to(self) -> int | None:
        """When the store is over its bound: how many records to keep (90 % of it), else ``None``."""
        bound = self.config.max_records
        if self.stored <= bound:
            return None
        self.stored = bound - bound // 10
        return self.stored

    def forget_old(self) -> None:
        """Windows that are over are forgotten (the retention sweep)."""
        now = self.clock()
        window = self.config.record_window
        for key in [k for k, (start, _) in self.windows.items() if now - start >= window]:
            del self.windows[key]
