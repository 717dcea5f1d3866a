"""The in-process server for tests: the production one (``server/inprocess.py``), under the name
the tests have always imported. A real ``ServerCore`` on ``task.Clock`` with ``MemoryStorage``:
client tests connect the real ``OnlineClient`` through ``InProcessServer.connector()`` and script
the other seat with ``InProcessServer.peer()``."""

from __future__ import annotations

from mineduel.server.inprocess import InProcessServer, MemLink, Peer

__all__ = ["InProcessServer", "MemLink", "Peer"]
