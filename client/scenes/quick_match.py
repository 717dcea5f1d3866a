"""Quick match (issue 20, PROTOCOL.md §17): find a stranger of similar strength, confirm, play.

A scene over the lobby (:class:`~mineduel.client.scenes.online.OnlineScene`), on the server the
lobby is connected to, reading the session's :class:`~mineduel.client.player_session.PlayerSession`.
Its pages, chosen from that state (like the lobby's):

* **identity** — the player's name is asked first if there is none (the lobby's name popup), then
  the identity (``identify``) is waited for; a damaged key file is explained with a choice (make a
  new identity, or import a key), a folder that cannot keep one says so;
* **searching** — a pulsing radar, the time searched (the server's count), the player's own rating
  and Cancel; after :data:`~mineduel.client.player_session.CPU_OFFER_AFTER` seconds a card offers a
  match against the CPU (clearly a CPU and unrated) while the search goes on;
* **matched** — the opponent (display name with its tag, rating, the provisional "?"), the rated
  match, the seconds left to confirm (a ring) and Ready; after Ready: waiting for the opponent;
* **notice** — the confirm failed on this side: why, Search again and Back.

The scene never waits on the network: it reads the session's frozen snapshot each frame and
rebuilds only when it changed. When the match starts, the lobby pushes the one match screen over
this one; the scene takes itself away when it is on top again with nothing left to show.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pygame

from mineduel.client.player_key import KeyState
from mineduel.client.player_session import PlayerSession, Quick, QuickSnapshot
from mineduel.client.scenes.base import Context, Scene
from mineduel.client.scenes.game import GameScene
from mineduel.client.scenes.name_popup import NamePopup
from mineduel.client.scenes.popups import ConfirmPopup
from mineduel.client.scenes.profile_keys import ImportKeyPopup
from mineduel.client.scenes.quick_match_lobby import reconnect_for_identity, remember
from mineduel.client.scenes.quick_match_paint import QuickMatchPainter, layout_for
from mineduel.client.ui import palette
from mineduel.client.ui.input import InputEvent, KeyEvent
from mineduel.client.ui.widgets import Button, WidgetGroup

if TYPE_CHECKING:
    from mineduel.client.scenes.online import OnlineScene

W, LEFT, INNER = 390, 8, 374
TITLE_Y = 84
PULSE = 1.6  # seconds per radar pulse


class QuickMatchScene(Scene):
    """See the module docstring."""

    def __init__(self, ctx: Context, lobby: OnlineScene) -> None:
        super().__init__(ctx)
        self.lobby = lobby
        self.widgets = WidgetGroup(ctx.invalidate, lambda: self.ctx.keyboard)
        self.page = ""
        self.wanted = True  # the player asked to search: start once identified
        self._seen: object = None
        self._covered = False
        self.started_at = ctx.clock()
        self.rebuilds = 0
        self.painter = QuickMatchPainter(self)
        self.layout = layout_for(ctx.visible().height)

    # ----- state ------------------------------------------------------------------------------------
    @property
    def players(self) -> PlayerSession | None:
        client = self.lobby.client
        return None if client is None else client.players

    def quick(self) -> QuickSnapshot | None:
        players = self.players
        return None if players is None else players.queue.snapshot()

    def page_for_state(self) -> str:
        players = self.players
        client = self.lobby.client
        if players is None or client is None or not client.connected:
            return "gone"
        quick = players.queue.state
        if quick in (Quick.MATCHED, Quick.CONFIRMED):
            return "matched"
        if quick in (Quick.SEARCHING, Quick.JOINING, Quick.LEAVING):
            return "searching"
        if players.queue.notice is not None:
            return "notice"
        if players.loaded.state is KeyState.CORRUPT:
            return "key_damaged"
        if players.loaded.state is KeyState.UNAVAILABLE:
            return "key_unavailable"
        if players.error is not None:
            return "identity_error"
        if self.wanted:
            return "identity"
        return "done"

    def _state(self) -> object:
        players = self.players
        if players is None:
            return None
        return (self.page_for_state(), players.queue.snapshot(), players.identity, players.error, players.loaded.state,
                self.lobby.client.room if self.lobby.client is not None else None)

    # ----- commands --------------------------------------------------------------------------------------
    def begin(self) -> None:
        """The name first (the lobby's popup, once), then identify and search."""
        self.wanted = True
        players = self.players
        if players is not None:
            players.queue.notice = None
        remember(self.lobby)  # the home page offers this server next time (quick_match_lobby.py)
        if not self.ctx.settings.player_name:  # a rated opponent sees a name: asked even after a Skip
            self.ctx.stack.open_popup(NamePopup(self.ctx, lambda _name: self._named()))
        else:
            self._named()
        self._rebuild()

    def _named(self) -> None:
        players = self.players
        name = self.ctx.settings.player_name
        if players is None:
            return
        if not name:
            self.wanted = False
            players.queue.notice = "quick.name_needed"
            self._rebuild()
            return
        players.follow_name(name)
        self._try_start()

    def _try_start(self) -> None:
        players = self.players
        if players is not None and self.wanted and players.identity is not None and players.queue.state is Quick.IDLE:
            self.wanted = False
            players.queue.start(spectators=self.ctx.settings.allow_watch)  # issue 19: the player's choice

    def cancel(self) -> None:
        """Cancel / Back: out of the queue (a matched seat is kept: the lobby's waiting room shows it)."""
        players = self.players
        self.wanted = False
        if players is not None:
            players.queue.cancel()
            players.queue.notice = None
        self.close()

    def play_cpu(self) -> None:
        """The CPU offer taken: out of the queue, then a CPU match (unrated)."""
        players = self.players
        if players is not None:
            players.queue.cancel()
        self.wanted = False
        self.close()
        self.lobby.play_cpu()
        top = self.ctx.stack.top
        if isinstance(top, GameScene) and top.controller is None and self.ctx.stack.popup is None:
            top.session.restart(top)  # no CPU match to go back to: the start popup (difficulty, Start)

    def ready(self) -> None:
        players = self.players
        if players is not None:
            players.queue.confirm()
        self._rebuild()

    def again(self) -> None:
        self.begin()

    def new_identity(self) -> None:
        """A damaged key file: a new identity on the player's word (the old file is moved aside)."""
        def make() -> None:
            players = self.players
            if players is None:
                return
            players.set_key(players.keys.make_new())
            reconnect_for_identity(self.lobby)
            self.begin()

        self.ctx.stack.open_popup(ConfirmPopup(self.ctx, title_key="player.new_identity.title",
                                               body_key="player.new_identity.body", confirm_key="player.new_identity.confirm",
                                               on_confirm=make))

    def import_key(self) -> None:
        players = self.players
        if players is None:
            return
        self.ctx.stack.open_popup(ImportKeyPopup(self.ctx, players, current=None, on_done=self._imported))

    def _imported(self) -> None:
        reconnect_for_identity(self.lobby)
        self.begin()

    def close(self) -> None:
        stack = self.ctx.stack
        if stack.top is self:
            stack.pop()

    # ----- lifecycle -----------------------------------------------------------------------------------------
    def pause(self, reason: str) -> None:
        if reason == "covered":
            self._covered = True

    def resume(self, reason: str) -> None:
        if reason == "covered":
            self._covered = False

    def relayout(self) -> None:
        self._rebuild()

    def update(self, now: float) -> None:
        self._try_start()
        if self._covered:
            return
        page = self.page_for_state()
        if page in ("gone", "done") and self.ctx.stack.top is self and self.ctx.stack.popup is None:
            self.close()  # the lobby says why (an error page) or shows the room
            return
        state = self._state()
        if state != self._seen:
            self._rebuild()
        elif page == "searching":
            self.ctx.invalidate(pygame.Rect(0, self.layout.radar_y - 110, W, 220))  # the radar's pulse

    def next_wakeup(self, now: float) -> float | None:
        if self._covered:
            return None
        if self.page == "searching":
            return now + 1 / 20
        return None

    # ----- pages ---------------------------------------------------------------------------------------------
    def _rebuild(self) -> None:
        self.rebuilds += 1
        self.page = page = self.page_for_state()
        self.layout = lay = layout_for(self.ctx.visible().height)
        bottom = pygame.Rect(LEFT, lay.bottom, INNER, 52)
        self._seen = self._state()
        t = self.ctx.t
        buttons = [Button(pygame.Rect(LEFT, 8, 46, 46), lambda: "", self.cancel, style="ghost", icon="back",
                          icon_color=palette.INK, radius=12, name="quick_back")]
        quick = self.quick()
        if page == "searching":
            if quick is not None and quick.cpu_offer:
                buttons.append(Button(pygame.Rect(LEFT + 16, lay.cpu_y + 92, INNER - 32, 50), lambda: t("quick.play_cpu"),
                                      self.play_cpu, style="secondary", icon="cpu", icon_color=palette.OPP,
                                      name="quick_cpu", text_size=16))
            buttons.append(Button(bottom, lambda: t("quick.cancel"), self.cancel, style="ghost", icon="close",
                                  name="quick_cancel"))
        elif page == "matched":
            confirmed = self.players is not None and self.players.queue.state is Quick.CONFIRMED
            room_ready = quick is not None and quick.room_ready
            left = quick.confirm_left if quick is not None else None
            buttons.append(Button(pygame.Rect(LEFT, lay.ready_y, INNER, 60),
                                  lambda: t("quick.ready_done") if confirmed else t("quick.ready"), self.ready,
                                  style="selected" if confirmed else "primary", icon="check" if confirmed else None,
                                  enabled=not confirmed and room_ready and (left is None or left > 0), name="quick_ready",
                                  text_size=20))
        elif page == "notice":
            buttons.append(Button(pygame.Rect(LEFT, lay.again_y, INNER, 56), lambda: t("quick.search_again"), self.again,
                                  style="primary", icon="restart", name="quick_again", text_size=18))
            buttons.append(Button(bottom, lambda: t("action.back"), self.cancel, style="ghost", icon="back",
                                  name="quick_done"))
        elif page == "key_damaged":
            buttons.append(Button(pygame.Rect(LEFT, lay.again_y - 64, INNER, 54), lambda: t("player.new_identity.confirm"),
                                  self.new_identity, style="primary", icon="person", name="key_new", text_size=17))
            buttons.append(Button(pygame.Rect(LEFT, lay.again_y, INNER, 54), lambda: t("player.import"), self.import_key,
                                  icon="export", icon_color=palette.ME_LIGHT, name="key_import", text_size=17))
            buttons.append(Button(bottom, lambda: t("action.back"), self.cancel, style="ghost", icon="back",
                                  name="quick_done"))
        else:  # identity, identity_error, key_unavailable
            buttons.append(Button(bottom, lambda: t("action.back"), self.cancel, style="ghost", icon="back",
                                  name="quick_done"))
        focus = self.widgets.focused()
        self.widgets.set(buttons)
        if focus is None and page == "matched":
            self.widgets.focus_name("quick_ready")
        self.ctx.invalidate(None)

    # ----- input -----------------------------------------------------------------------------------------------
    def process_event(self, event: InputEvent) -> bool:
        if isinstance(event, KeyEvent) and event.key == pygame.K_ESCAPE:
            self.cancel()
            return True
        return self.widgets.handle(event)

    def draw(self, canvas: pygame.Surface, area: pygame.Rect) -> None:
        self.painter.draw(canvas, area)

