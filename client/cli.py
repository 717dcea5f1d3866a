"""`mine-duel`: the game, and its sub-commands (replay, simulate, verify, screenshots).

Sub-commands import only what they need, so `mine-duel replay` never loads pygame.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence


def _replay(argv: Sequence[str]) -> int:
    from mineduel.shared.replay import main

    return main(argv)


SUBCOMMANDS: dict[str, Callable[[Sequence[str]], int]] = {
    "replay": _replay,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in SUBCOMMANDS:
        return SUBCOMMANDS[args[0]](args[1:])
    print("mine-duel: the game window is not built yet; try `mine-duel replay FILE`", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
