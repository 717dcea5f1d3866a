"""Server settings: one frozen object handed to every layer (no globals)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from mineduel.server.matchmaking import PairingPolicy
from mineduel.shared.version import VERSION as SERVER_VERSION  # the one release number
from mineduel.shared.wire import names


def default_db_path() -> str:
    """``mineduel-server.sqlite3`` in the user's data folder (platformdirs)."""
    from platformdirs import user_data_dir

    return f"{user_data_dir('mine-duel', appauthor=False)}/mineduel-server.sqlite3"


@dataclass(frozen=True)
class Config:
    """Everything tunable; the defaults suit a friend hosting on a LAN."""

    host: str = "0.0.0.0"
    port: int = names.DEFAULT_PORT
    # Twisted server endpoint strings (``tcp:47650``, ``ssl:47650:privateKey=key.pem:certKey=cert.pem``);
    # empty: ``tcp:PORT:interface=HOST`` from the two above. The first is the one LAN discovery advertises.
    listen: tuple[str, ...] = ()
    # Every listener reads a PROXY header first (``haproxy:`` before each endpoint; server/proxy_protocol.py):
    # only behind a TCP load balancer, whose header is believed (docs/HOSTING.md, SECURITY.md).
    proxy_protocol: bool = False
    udp_port: int | None = names.DEFAULT_UDP_PORT  # None: no LAN discovery
    db: str | None = None  # None: default_db_path(); ":memory:" for a throw-away server
    db_sync: str = "FULL"
    # This server's name among the nodes sharing a PostgreSQL database (docs/CLUSTER.md); None: the host name.
    node: str | None = None
    # Cluster addresses (PROTOCOL.md §18): where clients reach this node (None: the listening one),
    # and the cluster's front (its load balancer; invite links name it; None: no front).
    advertise: tuple[str, int] | None = None
    front: tuple[str, int] | None = None
    # Commit on a worker thread (server/commits.py ThreadedWriter). Off by default: measured on
    # a quiet disk, committing on the loop's thread costs less CPU per action (GIL hand-offs);
    # on a slow disk (fsync of several ms) the thread keeps the loop responsive.
    commit_thread: bool = False
    name: str = "MINE DUEL server"
    version: str = SERVER_VERSION
    public_host: str | None = None  # host written into invite links; default: the address dialled
    # Who referees, said in ``welcome`` (server.referee): "player" for a server a game client starts
    # (Host on this computer: the host's computer holds both players' mines); None for a dedicated one.
    referee: str | None = None
    # Rules timing (RULES.md O4, O5, O12) — change only for tests.
    turn_seconds: float = names.TURN_SECONDS
    grace_seconds: float = names.GRACE_SECONDS
    # Presence (O12).
    ping_interval: float = names.PING_INTERVAL
    idle_timeout: float = names.IDLE_TIMEOUT
    # Retention (O15).
    room_ttl: float = 24 * 3600.0
    result_ttl: float = 24 * 3600.0
    sweep_interval: float = 600.0
    clock_interval: float = 1.0  # how often the server clock is written to disk
    # Limits.
    max_line: int = names.MAX_LINE
    rate_per_second: float = 20.0
    rate_burst: float = 40.0
    max_connections_per_address: int = 16
    max_connections: int = 2000
    listen_backlog: int = 1024  # Twisted's default of 50 drops SYNs when many clients reconnect at once
    max_rooms: int = 10000
    max_open_rooms_per_address: int = 8  # rooms still waiting for an opponent, per address (IPv6: /64)
    # Per-address limits that no reconnection resets (issue 15; server/limits.py). An address is
    # an IPv4 address or an IPv6 /64, as for the connection count.
    max_spectators_per_room: int = 32  # connections watching one room (PROTOCOL.md §16)
    max_spectating_per_address: int = 8  # rooms one address watches at once (IPv6: /64), one per connection
    max_rooms_per_address: int = 32  # rooms an address created that still exist, in any state (stored ones too)
    address_rate_per_second: float | None = None  # lines per address, all its connections: None = 3 x rate_per_second
    address_rate_burst: float | None = None  # None: 3 x rate_burst
    connection_rate_per_address: float = 10.0  # new connections per address per second ...
    connection_burst_per_address: float = 30.0  # ... in bursts of at most this many
    resumes_per_seat: int = 10  # resumes of one seat per resume_window (a token bucket) ...
    resume_window: float = 60.0
    log_lines_per_address: int = 60  # log lines about one address per log_interval; then one summary line
    log_interval: float = 60.0
    # Finished matches' records kept for get_record (issue 15): per address and per pair of
    # addresses per record_window, and in all (the oldest go first). Beyond a cap the match is
    # played and its record sent in match_end as ever, but not stored.
    max_records_per_address: int = 300
    max_records_per_pair: int = 100
    record_window: float = 24 * 3600.0
    max_records: int = 50000
    # A client that does not read what it is sent: past ``max_unsent`` bytes waiting for it, or
    # ``send_stall`` seconds with Twisted's buffer full, the connection is cut (O12: a drop).
    max_unsent: int = 512 * 1024
    send_stall: float = 15.0
    close_timeout: float = 10.0  # a connection we close is cut if its peer has not read our last bytes by then
    code_failures: int = 10  # unknown room codes per address ...
    code_failure_window: float = 60.0  # ... per this many seconds
    restore_slice: float = 0.005  # seconds of restoring work per reactor turn; its commit comes on top (< 20 ms in all)
    # Players, quick match and ratings (issue 20, PROTOCOL.md §17, docs/SECURITY.md "Players and ratings").
    name_deny: tuple[str, ...] = ()  # --name-deny-file: case-folded words no player name may contain
    identifies_per_address: int = 10  # identify/rename per address per identify_window (a token bucket)
    identify_window: float = 60.0
    new_players_per_address: int = 20  # new player keys per address per new_player_window
    new_player_window: float = 24 * 3600.0
    rated_pair_limit: int = 5  # rated results of one pair per rated_pair_window that change ratings
    rated_pair_window: float = 24 * 3600.0
    quick_confirm_seconds: float = 10.0  # both matched players must send ready within this
    quick_pair_interval: float = 0.5  # how often the quick-match queue is paired
    pairing: PairingPolicy = field(default_factory=PairingPolicy)  # who may meet whom (server/matchmaking.py)

    def endpoints(self) -> tuple[str, ...]:
        """The endpoint strings to listen on (``--listen``, else ``--host``/``--port``); each behind
        ``haproxy:`` with ``proxy_protocol`` (unless it says so already)."""
        from mineduel.server.tls import PROXY_PREFIX, default_endpoint

        found = self.listen or (default_endpoint(self.host, self.port),)
        if not self.proxy_protocol:
            return found
        return tuple(e if e.strip().startswith(PROXY_PREFIX) else PROXY_PREFIX + e.strip() for e in found)

    def address_rate(self) -> float:
        """Lines per second an address may send over all its connections together."""
        return self.address_rate_per_second if self.address_rate_per_second is not None else 3 * self.rate_per_second

    def address_burst(self) -> float:
        return self.address_rate_burst if self.address_rate_burst is not None else 3 * self.rate_burst

    def with_(self, **changes: object) -> Config:
        return replace(self, **changes)  # type: ignore[arg-type]
