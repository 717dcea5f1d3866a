"""``python -m mineduel.server`` is ``mine-duel-server``."""

import sys

from mineduel.server.cli import main

sys.exit(main())
