"""Run the SIGKILL campaign of ``tests/test_server_crash.py`` at any size, outside pytest.

    .venv/bin/python tools/crash_campaign.py --matches 200 --kills 40 --seed 7

Matches are played by bots over real sockets against a ``mineduel.server`` subprocess that is
killed with SIGKILL ``--kills`` times and restarted on the same database; every restored match
is checked against an independent replay (see the test module's docstring). Prints the figures
as JSON and exits 0 when every check held, 1 otherwise (the failed check is printed).
For the published report, ``tools/reliability_report.py --scale N`` runs the same campaign
through pytest; this is for a single larger or differently seeded run.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent.parent / "tests"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches", type=int, default=40, help="matches played at once (default 40)")
    parser.add_argument("--kills", type=int, default=10, help="SIGKILLs during play (default 10)")
    parser.add_argument("--seed", type=int, default=20240611, help="seed of kill points, moves and server entropy")
    parser.add_argument("--db", default=None, help="database path (default: a new temporary folder)")
    args = parser.parse_args(argv)

    sys.path[:0] = [str(TESTS), str(TESTS / "reliability")]  # support.* and the suite itself
    import test_server_crash as crash
    from twisted.internet import defer, reactor
    from twisted.python.failure import Failure

    outcome: dict[str, Any] = {}

    async def run() -> None:
        with tempfile.TemporaryDirectory() as folder:
            db = args.db or str(Path(folder) / "crash.db")
            started = time.monotonic()
            try:
                campaign = await crash.run_campaign(db, seed=args.seed, matches=args.matches, kills=args.kills)
            except AssertionError as exc:
                outcome["failed"] = str(exc)
                return
            lost = sum(1 for m in campaign.matches if any(s.end is None for s in m.seats))
            outcome.update({
                "seed": args.seed,
                "seconds": round(time.monotonic() - started, 1),
                "matches played": args.matches,
                "kills": campaign.kills,
                "matches restored": sum(m.restored for m in campaign.matches),
                "actions acknowledged then found after restart": campaign.acked_checked,
                "actions in flight at a kill then found after restart": campaign.unacked_found,
                "requests in flight at a kill": campaign.in_flight_at_kills,
                "restored states compared with independent replay": campaign.states_compared,
                "turn deadlines settled by the server": campaign.timeouts,
                "mismatches with independent replay": len(campaign.mismatches),
                "matches lost": lost,
            })
            if campaign.mismatches or lost:
                outcome["failed"] = "; ".join(campaign.mismatches[:5]) or f"{lost} matches lost"

    def stop(result: Any) -> None:
        if isinstance(result, Failure):
            outcome["failed"] = result.getTraceback()
        reactor.stop()

    reactor.callWhenRunning(lambda: defer.ensureDeferred(run()).addBoth(stop))
    reactor.run()
    print(json.dumps(outcome, indent=2))
    return 1 if "failed" in outcome else 0


if __name__ == "__main__":
    sys.exit(main())
