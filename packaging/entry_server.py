"""PyInstaller entry point for the `mine-duel-server` executable."""

import sys

from mineduel.server.cli import main

if __name__ == "__main__":
    sys.exit(main())
