"""``mine-duel-server``: run a MINE DUEL server (defaults suit hosting on a LAN)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace

from mineduel.server.cluster import parse_address
from mineduel.server.config import Config, default_db_path
from mineduel.server.matchmaking import PairingPolicy
from mineduel.server.players import load_deny_list
from mineduel.shared.version import VERSION
from mineduel.shared.wire import names


def _address(option: str) -> Callable[[str], tuple[str, int]]:
    """An argparse type for ``HOST:PORT`` options (a clear message naming the option)."""

    def parse(text: str) -> tuple[str, int]:
        try:
            return parse_address(text, option)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def parse_args(argv: Sequence[str] | None) -> tuple[Config, str]:
    parser = argparse.ArgumentParser(
        prog="mine-duel-server",
        description="Run a MINE DUEL server: rooms, matches and LAN discovery (docs/PROTOCOL.md).",
    )
    parser.add_argument("--version", action="version", version=f"mine-duel-server {VERSION}")
    parser.add_argument("--host", default="0.0.0.0", help="address to listen on (default 0.0.0.0, all)")
    parser.add_argument(
        "--port", type=int, default=names.DEFAULT_PORT, help=f"TCP port (default {names.DEFAULT_PORT}; 0 picks a free one)",
    )
    parser.add_argument(
        "--listen", action="append", default=[], metavar="ENDPOINT",
        help="a Twisted server endpoint string to listen on, repeatable; replaces --host/--port, "
        "e.g. tcp:47650:interface=0.0.0.0 or ssl:47650:privateKey=key.pem:certKey=cert.pem (TLS; docs/HOSTING.md). "
        "The first is the one LAN discovery advertises",
    )
    parser.add_argument(
        "--proxy-protocol", action="store_true",
        help="every listener reads a PROXY protocol header (v1 or v2) first and counts the address it names; "
        "refuses connections without one. ONLY behind a TCP load balancer (HAProxy send-proxy): anyone else "
        "could claim any address (docs/HOSTING.md)",
    )
    parser.add_argument(
        "--udp-port", type=int, default=names.DEFAULT_UDP_PORT,
        help=f"UDP discovery port (default {names.DEFAULT_UDP_PORT}; 0 picks one)",
    )
    parser.add_argument("--no-discovery", action="store_true", help="do not answer LAN discovery")
    parser.add_argument(
        "--db", default=None,
        help=f"SQLite database path (default {default_db_path()}), or a PostgreSQL database as "
        "postgresql://USER@HOST/NAME (needs mine-duel[postgres]; docs/HOSTING.md)",
    )
    parser.add_argument(
        "--node", default=None,
        help="with --db postgresql://: this server's name among those sharing the database (default: the host name)",
    )
    parser.add_argument(
        "--advertise", default=None, type=_address("--advertise"), metavar="HOST:PORT",
        help="with --db postgresql://: where clients reach THIS node, named by other nodes' moved replies "
        "(default: --public-host or --host, and the first listening port; docs/CLUSTER.md)",
    )
    parser.add_argument(
        "--front", default=None, type=_address("--front"), metavar="HOST:PORT",
        help="the cluster's front address (its TCP load balancer): written into invite links, named by LAN "
        "discovery answers and by moved when this node loses its lease (docs/HOSTING.md)",
    )
    parser.add_argument(
        "--db-sync", default="FULL", choices=["FULL", "NORMAL", "EXTRA"],
        help="SQLite synchronous mode (FULL: every accepted action survives power loss)",
    )
    parser.add_argument(
        "--commit-thread", action="store_true",
        help="commit to the database on a worker thread (for slow disks: an fsync then never stalls the game loop)",
    )
    parser.add_argument("--name", default="MINE DUEL server", help="server name shown by LAN discovery")
    parser.add_argument(
        "--public-host", default=None, help="host written into invite links (default: the address each client dialled)",
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warn", "error"])
    parser.add_argument("--max-connections-per-address", type=int, default=16)
    parser.add_argument("--max-connections", type=int, default=2000, help="connections in all (default 2000)")
    parser.add_argument(
        "--max-open-rooms-per-address", type=int, default=8,
        help="rooms still waiting for an opponent per address (default 8; raise it for a big shared NAT)",
    )
    parser.add_argument("--rate", type=float, default=20.0, help="messages per second per connection")
    parser.add_argument(
        "--max-spectators-per-room", type=int, default=32, help="connections watching one room (default 32)",
    )
    parser.add_argument(
        "--max-spectating-per-address", type=int, default=8,
        help="rooms one address watches at once, all its connections together (default 8)",
    )
    # Per-address limits no reconnection resets, and the record caps (PROTOCOL.md §8, HOSTING.md).
    parser.add_argument(
        "--max-rooms-per-address", type=int, default=32,
        help="rooms an address created that still exist, waiting, playing or finished (default 32)",
    )
    parser.add_argument(
        "--address-rate", type=float, default=None,
        help="messages per second per address, all its connections together (default 3 x --rate; bursts of twice it)",
    )
    parser.add_argument(
        "--connection-rate", type=float, default=10.0,
        help="new connections per second per address (default 10; bursts of 3 x it)",
    )
    parser.add_argument("--resumes-per-seat", type=int, default=10, help="resumes of one seat per minute (default 10)")
    parser.add_argument(
        "--log-lines-per-address", type=int, default=60,
        help="log lines about one address per minute, then one line with the count left out (default 60)",
    )
    parser.add_argument(
        "--max-records-per-address", type=int, default=300,
        help="finished matches' records stored per address per day (default 300)",
    )
    parser.add_argument(
        "--max-records-per-pair", type=int, default=100,
        help="finished matches' records stored per pair of addresses per day (default 100)",
    )
    parser.add_argument(
        "--max-records", type=int, default=50000,
        help="records stored in all; past it the oldest go first (default 50000)",
    )
    # Players, quick match and ratings (issue 20; PROTOCOL.md §17, SECURITY.md, HOSTING.md).
    parser.add_argument(
        "--name-deny-file", default=None, metavar="FILE",
        help="player names containing any word of this file (one per line, # comments; case-insensitive) are refused",
    )
    parser.add_argument(
        "--identifies-per-address", type=int, default=10,
        help="identify/rename requests per address per minute (default 10)",
    )
    parser.add_argument(
        "--new-players-per-address", type=int, default=20, help="new player keys per address per day (default 20)",
    )
    parser.add_argument(
        "--rated-pair-limit", type=int, default=5,
        help="rated matches of one pair per day that change ratings; later ones are played unrated (default 5)",
    )
    parser.add_argument(
        "--quick-confirm-seconds", type=float, default=10.0,
        help="seconds both quick-matched players have to press Ready (default 10)",
    )
    defaults = PairingPolicy()
    parser.add_argument(
        "--quick-gap-start", type=float, default=defaults.gap_start,
        help=f"rating gap a new quick-match waiter accepts (default {defaults.gap_start:g}, plus half its deviation)",
    )
    parser.add_argument(
        "--quick-gap-per-second", type=float, default=defaults.gap_per_second,
        help=f"how fast that gap widens per second of waiting (default {defaults.gap_per_second:g})",
    )
    parser.add_argument(
        "--quick-any-after", type=float, default=defaults.any_after,
        help=f"seconds of waiting after which any opponent is accepted (default {defaults.any_after:g})",
    )
    parser.add_argument(
        "--quick-same-address", action="store_true",
        help="let two players of one address meet in the quick match and rate each other in a rated room "
        "(a LAN party behind one NAT)",
    )
    parser.add_argument(
        "--quick-penalty-base", type=float, default=defaults.penalty_base,
        help=f"seconds a repeat leaver waits before pairing, doubling per repeat (default {defaults.penalty_base:g})",
    )
    parser.add_argument(
        "--quick-penalty-max", type=float, default=defaults.penalty_max,
        help=f"the longest such wait in seconds (default {defaults.penalty_max:g})",
    )
    # Rule timings are fixed by RULES.md; these exist for tests and demos only.
    parser.add_argument("--turn-seconds", type=float, default=names.TURN_SECONDS, help=argparse.SUPPRESS)
    parser.add_argument("--grace-seconds", type=float, default=names.GRACE_SECONDS, help=argparse.SUPPRESS)
    parser.add_argument(
        "--idle-timeout", type=float, default=names.IDLE_TIMEOUT,
        help="seconds of silence before a connection counts as dropped (default 15; raise it to type by hand with nc)",
    )
    args = parser.parse_args(argv)
    deny: tuple[str, ...] = ()
    if args.name_deny_file is not None:
        try:
            deny = load_deny_list(args.name_deny_file)
        except (OSError, UnicodeDecodeError) as exc:
            parser.error(f"--name-deny-file: cannot read {args.name_deny_file}: {exc}")
    try:
        pairing = replace(
            defaults, gap_start=args.quick_gap_start, gap_per_second=args.quick_gap_per_second,
            any_after=args.quick_any_after, allow_same_address=args.quick_same_address,
            penalty_base=args.quick_penalty_base, penalty_max=args.quick_penalty_max,
        )
    except ValueError as exc:
        parser.error(str(exc))
    return Config(
        host=args.host,
        port=args.port,
        listen=tuple(args.listen),
        proxy_protocol=args.proxy_protocol,
        udp_port=None if args.no_discovery else args.udp_port,
        db=args.db,
        db_sync=args.db_sync,
        node=args.node,
        advertise=args.advertise,
        front=args.front,
        commit_thread=args.commit_thread,
        name=args.name,
        public_host=args.public_host,
        turn_seconds=args.turn_seconds,
        grace_seconds=args.grace_seconds,
        idle_timeout=args.idle_timeout,
        max_connections_per_address=args.max_connections_per_address,
        max_connections=args.max_connections,
        max_open_rooms_per_address=args.max_open_rooms_per_address,
        max_spectators_per_room=args.max_spectators_per_room,
        max_spectating_per_address=args.max_spectating_per_address,
        rate_per_second=args.rate,
        rate_burst=max(args.rate * 2, 1.0),
        max_rooms_per_address=args.max_rooms_per_address,
        address_rate_per_second=args.address_rate,
        address_rate_burst=None if args.address_rate is None else max(args.address_rate * 2, 1.0),
        connection_rate_per_address=args.connection_rate,
        connection_burst_per_address=max(args.connection_rate * 3, 1.0),
        resumes_per_seat=args.resumes_per_seat,
        log_lines_per_address=args.log_lines_per_address,
        max_records_per_address=args.max_records_per_address,
        max_records_per_pair=args.max_records_per_pair,
        max_records=args.max_records,
        name_deny=deny,
        identifies_per_address=args.identifies_per_address,
        new_players_per_address=args.new_players_per_address,
        rated_pair_limit=args.rated_pair_limit,
        quick_confirm_seconds=args.quick_confirm_seconds,
        pairing=pairing,
    ), args.log_level


def main(argv: Sequence[str] | None = None) -> int:
    config, level = parse_args(argv)
    from twisted.internet import reactor
    from twisted.internet.error import CannotListenError

    from mineduel.server import logs
    from mineduel.server.service import start_server

    logs.begin(sys.stdout, level)
    from mineduel.server.clock import install_steady_clock

    install_steady_clock(reactor)  # deadlines ignore system clock jumps (server/clock.py)
    try:
        # A dedicated server that cannot hold --max-connections open files refuses to start (HOSTING.md).
        handle = start_server(reactor, config, fd_shortfall="refuse")
    except CannotListenError as exc:
        print(f"mine-duel-server: cannot listen: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - e.g. a bad --listen, an unreadable certificate, a database that cannot be opened
        print(f"mine-duel-server: {exc}", file=sys.stderr)
        return 1
    # The bound ports for scripts (--port 0 picks free ones): one JSON line on standard output,
    # the only line there that starts with "{" (docs/HOSTING.md, "Ports").
    print(json.dumps(handle.listening(), separators=(",", ":")), flush=True)
    from mineduel.server.gcpolicy import FreezeAfterFullCollections

    FreezeAfterFullCollections(reactor).install()
    # reactor.run() turns SIGINT/SIGTERM into reactor.stop(); "before shutdown" waits for this.
    reactor.addSystemEventTrigger("before", "shutdown", handle.stop, "shutdown")
    reactor.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
