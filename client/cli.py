"""`mine-duel`: the game, and its sub-commands (replay, simulate, verify, screenshots, desktop entries).

Sub-commands import only what they need, so `mine-duel replay` never loads pygame. pygame-ce's
version banner (`pygame-ce 2.5.8 (SDL …)` on import) is switched off here, before anything can import pygame.
``mine-duel replay-view FILE`` and a lone ``FILE.json`` open a match record in the replay viewer.
A lone ``mineduel://…`` or ``mineduels://…`` argument (what a desktop passes for ``%u`` when an
invite link is clicked) acts as ``--join LINK``; ``--watch LINK`` watches that link's room instead
(the spectator screen, issue 19).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")  # before any import of pygame, in every path

from mineduel.shared.version import VERSION  # (after the banner setting above)

LINK_SCHEMES = ("mineduel://", "mineduels://")


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


def _install_desktop(argv: Sequence[str]) -> int:
    from mineduel.client.desktop import install_main

    return install_main(argv)


def _uninstall_desktop(argv: Sequence[str]) -> int:
    from mineduel.client.desktop import uninstall_main

    return uninstall_main(argv)


def _replay_view(argv: Sequence[str]) -> int:
    """`mine-duel replay-view FILE [game options]`: the game, opened on FILE in the replay viewer."""
    args = list(argv)
    if not args or args[0].startswith("-") or "--replay-view" in args:
        print("mine-duel replay-view: give the record file first (mine-duel replay-view FILE [options])", file=sys.stderr)
        return 2
    from mineduel.client.app import main as run_game

    return run_game([*args[1:], "--replay-view", args[0]])


SUBCOMMANDS: dict[str, tuple[Callable[[Sequence[str]], int], str]] = {
    "replay": (_replay, "run a match record through the rules; print every step and the result as JSON (docs/RECORD.md)"),
    "replay-view": (_replay_view, "open a match record in the game's replay viewer (also: mine-duel FILE.json)"),
    "simulate": (_simulate, "CPU-against-CPU matches with statistics (docs/BALANCE.md)"),
    "verify": (_verify, "check an online match's fairness proof and result"),
    "screenshots": (_screenshots, "every screen and popup in every language, as PNG files"),
    "install-desktop": (_install_desktop, "add the game to this user's desktop menu and open mineduel:// links with it"),
    "uninstall-desktop": (_uninstall_desktop, "remove what install-desktop wrote"),
}


def help_text() -> str:
    """``mine-duel --help``: the game's options (client/app.py), --self-test and --version, and the sub-commands."""
    import argparse

    from mineduel.client.app import build_parser

    parser = build_parser()
    parser.usage = "mine-duel [options] [LINK]\n       mine-duel SUB-COMMAND [--help] ..."
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--self-test", action="store_true",
                        help="render every main screen headless and exit (0: the installation works)")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    width = max(len(name) for name in SUBCOMMANDS)
    parser.epilog = "\n".join([
        "LINK: an invite link, mineduel://HOST:PORT/join/CODE or mineduels://... (the same as --join LINK;",
        "      --watch LINK watches that room's match instead).",
        "",
        "sub-commands (mine-duel SUB-COMMAND --help for each):",
        *[f"  {name.ljust(width)}  {line}" for name, (_, line) in SUBCOMMANDS.items()],
    ])
    return parser.format_help()


def as_game_arguments(args: list[str]) -> list[str]:
    """The game's arguments with a positional invite link turned into ``--join LINK``."""
    links = [a for a in args if a.startswith(LINK_SCHEMES)]
    if len(links) != 1 or any(a in ("--join", "--watch") or a.startswith(("--join=", "--watch=")) for a in args):
        return args
    index = args.index(links[0])
    if index > 0 and args[index - 1] in ("--lang", "--size", "--seed", "--profile-dir", "--kiosk-config"):
        return args  # the link is some option's value: leave it to the parser to refuse
    return [*args[:index], *args[index + 1:], "--join", links[0]]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in SUBCOMMANDS:
        return SUBCOMMANDS[args[0]][0](args[1:])
    if args == ["--version"] or args == ["-V"]:
        print(f"mine-duel {VERSION}")
        return 0
    if "-h" in args or "--help" in args:
        print(help_text(), end="")
        return 0
    if args and args[0].lower().endswith(".json") and not args[0].startswith("-"):
        return _replay_view(args)  # `mine-duel FILE.json`: the record in the replay viewer (issue 19)
    if args and not args[0].startswith("-") and not args[0].startswith(LINK_SCHEMES):
        print(f"mine-duel: {args[0]!r} is neither a sub-command nor an invite link (mine-duel --help lists both)",
              file=sys.stderr)
        return 2
    if "--self-test" in args:
        from mineduel.client.selftest import main as self_test

        return self_test([a for a in args if a != "--self-test"])
    from mineduel.client.desktop import APP_ID, WM_CLASS

    # The window's class (X11) and app id (Wayland) match the desktop entry (StartupWMClass, file name).
    os.environ.setdefault("SDL_VIDEO_X11_WMCLASS", WM_CLASS)
    os.environ.setdefault("SDL_VIDEO_WAYLAND_WMCLASS", APP_ID)
    from mineduel.client.app import main as run_game

    return run_game(as_game_arguments(args))


if __name__ == "__main__":
    sys.exit(main())
