"""Done-when of issue 19 over real sockets: a third client watches a friends' match from the game.

Three headless apps (client/net.py's TCP links, the real line client, a real server on 127.0.0.1
whose rules run on a fake clock — test_online_client.py's helpers): A creates a room, B joins with
the invite link, both press Ready; C types the same link into the one field and presses Watch. C's
spectator screen follows every move the players click, names them, shows the end's full reveal,
and the players' screens count the spectator.
"""

from __future__ import annotations

import pytest_twisted

from mineduel.client.scenes.spectate import SpectateScene
from mineduel.shared.wire import board as wire_board
from tests.client.test_online_client import Player, close_all, play_one, pump, seated_pair, server, start_match  # noqa: F401


@pytest_twisted.ensureDeferred
async def test_a_third_client_watches_a_friends_match_over_tcp(tmp_path, server):  # noqa: F811
    a, b = await seated_pair(tmp_path, server)
    c = Player(tmp_path, "c")
    try:
        await start_match(a, b)
        c.open_online()
        c.type_into(c.lobby.address_field, a.client.invite)
        c.click("watch")
        await pump(lambda: isinstance(c.top, SpectateScene) and c.top.watcher.live, a, b, c)
        scene = c.top
        assert {scene.name(0), scene.name(1)} == {"Tester"}  # both players named themselves Tester
        await pump(lambda: a.top.paint.spectators() == 1 and b.top.paint.spectators() == 1, a, b, c)
        room = server.room(a.client.room_code)
        for _ in range(12):  # the opening and some turns, clicked by the players
            if room.match.state.outcome() is not None:
                break
            await play_one(server, a, b)
            seq = room.match.seq
            await pump(lambda seq=seq: scene.watcher.state is not None and scene.watcher.state.seq == seq, a, b, c)
            truth = room.match.state
            shown = scene.paint.board.view
            assert shown is not None and shown.revealed == truth.revealed and shown.my_mines == 0  # V2: no mine
            assert scene.event_text()
        a.top.controller.capabilities.resign()
        await pump(lambda: scene.watcher.reveal is not None, a, b, c)
        reveal = scene.watcher.reveal
        truth = room.match.state
        assert reveal.my_mines == truth.mines[0] and reveal.opponent_mines == truth.mines[1]  # O13 at the end
        assert scene.paint.board.view.my_mines == wire_board.mask_of(scene.watcher.state.reveal.mines, "mx")
        c.click("leave")
        await pump(lambda: a.top.paint.spectators() == 0, a, b, c)
    finally:
        close_all(a, b, c)
