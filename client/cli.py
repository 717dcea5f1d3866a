"""`mine-duel`: the game, and its sub-commands (replay, simulate, verify, screenshots).

Sub-commands import only what they need, so `mine-duel replay` never loads pygame.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence


def _replay(argv: Sequence[str]) -> int:
    from mineduel.shared.cli.replay import main

    return main(argv)


def _simulate(argv: Sequence[str]) -> int:
    from mineduel.shared.cli.simulate import main

    return main(argv)


def _verify(argv: Sequence[str]) -> int:
    from mineduel.shared.cli.verify import main

    return main(argv)


def _screenshots(argv: Sequence[str]) -> int:
    from mineduel.client.screenshots import main

    return main(argv)


SUBCOMMANDS: dict[str, Callable[[Sequence[str]], int]] = {
    "replay": _replay,
    "simulate": _simulate,
    "verify": _verify,
    "screenshots": _screenshots,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in SUBCOMMANDS:
        return SUBCOMMANDS[args[0]](args[1:])
    if "--self-test" in args:
        from mineduel.client.selftest import main as self_test

        return self_test([a for a in args if a != "--self-test"])
    from mineduel.client.app import main as run_game

    return run_game(args)


if __name__ == "__main__":
    sys.exit(main())
