"""PyInstaller entry point for the `mine-duel` executable."""

import sys

from mineduel.client.cli import main

if __name__ == "__main__":
    sys.exit(main())
