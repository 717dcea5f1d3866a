"""`python -m mineduel.client` runs the same entry point as `mine-duel`."""

import sys

from mineduel.client.cli import main

sys.exit(main())
