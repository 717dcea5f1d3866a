"""The scripted §17 server for tests: the package's own (``client/players_script.py``, also used by
``mine-duel screenshots``), on a fresh in-process server unless one is given."""

from __future__ import annotations

from typing import Any

from mineduel.client.players_script import PlayersScript, public_id, rating
from mineduel.server.client import in_process_server


def PlayersFake(srv: Any = None) -> PlayersScript:
    return PlayersScript(srv if srv is not None else in_process_server())


__all__ = ["PlayersFake", "PlayersScript", "public_id", "rating"]
