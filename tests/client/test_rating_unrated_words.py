"""A rated match that changed nothing says why on the result (PROTOCOL.md §17): the badge reads
``rating.unrated.<word>`` — here ``same_address``, on the real in-process server: two apps of one
machine (one address) meet in a rated room by code, play it to the end, and neither rating moves.
In the four languages (the word is the catalog's, never the raw protocol word)."""

from __future__ import annotations

import pygame
import pytest
from support.inprocess import InProcessServer
from support.players_fake import App

from mineduel.client.scenes.game import GameScene


class Real:
    def __init__(self) -> None:
        self.srv = InProcessServer()

    def connector(self):
        return self.srv.connector()

    def requests(self, kind):
        return []


def badge_text(game: GameScene) -> str:
    """The badge's words under the change as _rating draws them (one line, or two when long), by
    recording blit_text's words."""
    from mineduel.client.scenes import match_panels

    seen: list[str] = []
    real = match_panels.blit_text

    def spy(surface, fonts, text, *args, **kwargs):
        seen.append(text)
        return real(surface, fonts, text, *args, **kwargs)

    match_panels.blit_text = spy
    try:
        game.panel._rating(pygame.Surface((390, 844)))
    finally:
        match_panels.blit_text = real
    assert seen and seen[0] == "+0"
    return "".join(seen[1:])


@pytest.mark.parametrize("language", ["en", "ko", "ja", "zh-CN"])
def test_two_seats_of_one_address_are_played_unrated_and_the_result_says_so(tmp_path, language):
    real = Real()
    ann = App(tmp_path / "ann", real, name="Ann", language=language)
    bob = App(tmp_path / "bob", real, name="Bob", language=language)
    try:
        ann.click("rated_room")
        ann.click("create")
        ann.frames(3)
        code = ann.client.room_code
        assert real.srv.room(code).rated
        bob.lobby.seats.join(code)
        bob.frames(3)
        ann.frames(3)
        ann.click("ready")
        bob.frames(2)
        bob.click("ready")
        for _ in range(4):
            ann.frames(1)
            bob.frames(1)
        assert isinstance(ann.top, GameScene) and isinstance(bob.top, GameScene)
        ann.client.match.resign()
        for _ in range(6):
            ann.d.frame(0.5)
            bob.d.frame(0.5)
        for app in (ann, bob):
            end = app.client.match.end.rating
            assert end is not None and end.unrated == "same_address" and end.change == 0.0
            game = app.top
            assert isinstance(game, GameScene) and game.panel.open
            change = game.controller.capabilities.rating.ratings().change
            assert change.unrated == "same_address"
            words = app.d.app.ctx.t("rating.unrated.same_address")
            assert badge_text(game).replace(" ", "") == words.replace(" ", "")  # all of it, maybe on two lines
            app.d.app.render()
            pygame.image.save(app.d.app.screenshot(), str(tmp_path / f"result_{language}.png"))
    finally:
        ann.close()
        bob.close()
