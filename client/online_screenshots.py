"""The online screens for ``mine-duel screenshots`` (registered into its list when it loads).

Each picture is the real app: its online screen talks to the real server core running in this
process (:func:`mineduel.server.client.in_process_server`: ``server/inprocess.py``, a fake clock,
no sockets, shipped in the package so that an installed ``mine-duel screenshots`` works), and the
opponent is a scripted connection to the same core. Clicks are real pygame events; moves that only set a
position up are sent as protocol messages. Client seeds are fixed, so the first-player draw and
the pictures are the same on every run.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from mineduel.client.scenes.game import GameScene
from mineduel.client.screenshots import Shooter, shot
from mineduel.server import client as server_client

if TYPE_CHECKING:
    from mineduel.client.online_client import OnlineClient
    from mineduel.client.online_link import Link, LinkListener
from mineduel.shared.rules.bitboard import FULL, cells
from mineduel.shared.rules.engine import GameState, Phase


class Rig:
    """An app on the online screen, connected to an in-process server, and a scripted opponent."""

    def __init__(self, s: Shooter, *, tokens_ok: bool = True, referee: str | None = None, name: str | None = "Mina",
                 public_host: str = "192.168.1.5") -> None:
        from mineduel.client.online_client import FoundServer, HostInfo, OnlineServices
        from mineduel.client.scenes.online import OnlineScene
        from mineduel.client.tokens import TokenStore

        self.s = s
        self.server = server_client.in_process_server(seed=11, referee=referee, public_host=public_host)
        self._tmp = tempfile.TemporaryDirectory(prefix="mineduel-online-")
        folder = Path(self._tmp.name) / "data"
        if not tokens_ok:
            folder.parent.mkdir(parents=True, exist_ok=True)
            folder.write_text("not a folder")  # the token cannot be stored under a file (O16)
        seeds = itertools.count(1)
        self.found = [FoundServer("192.168.1.5", 47650, "MINE DUEL (study-pc)", 1),
                      FoundServer("192.168.1.23", 47650, "MINE DUEL (laptop)", 0)]
        self.services = OnlineServices(connect=self.server.connector(), tokens=TokenStore(folder),
                                       start_host=lambda: HostInfo(47650, "192.168.1.5", lambda: None),
                                       discover=lambda done: done(self.found), clipboard=lambda text: True,
                                       wall_clock=lambda: 1_700_000_000.0, client_seed=lambda: f"shot-{next(seeds)}")
        app = s.app
        app.ctx.settings = replace(app.ctx.settings, player_name=name)  # asked once already (name_popup.py)
        app._online = self.services
        app.stack.close_popup()
        self.lobby = OnlineScene(app.ctx, on_play_cpu=lambda: app.stack.replace(app.game))
        app.stack.replace(self.lobby)
        s.frame()
        self.peer: Any = None

    # ----- helpers ---------------------------------------------------------------------------------------------
    @property
    def client(self) -> OnlineClient:
        client = self.lobby.client
        assert client is not None, "the lobby has its session once entered"
        return client

    @property
    def top(self) -> Any:
        return self.s.app.stack.top

    def click(self, name: str) -> None:
        popup = self.s.app.stack.popup
        scene = self.top
        group = popup.widgets if popup is not None else scene.widgets
        if popup is None and isinstance(scene, GameScene) and scene.panel.open:
            try:
                self.s.click(scene.panel.widgets.by_name(name).rect.center)
                return
            except KeyError:
                pass
        self.s.click(group.by_name(name).rect.center)
        self.s.frame(0.05)

    def host(self) -> None:
        self.click("host")
        self.s.settle(0.3)

    def opponent_joins(self) -> None:
        self.peer = self.server.peer()
        self.peer.send(type="join", room=self.client.room_code, name="Jun", client_seed="peer-1")
        self.s.settle(0.3)

    def start_match(self) -> None:
        self.host()
        self.opponent_joins()
        self.click("ready")
        self.peer.send(type="ready", client_seed="peer-2")
        self.s.settle(0.5)

    @property
    def code(self) -> str:
        code = self.client.room_code
        assert code is not None, "not seated yet"
        return code

    def state(self) -> GameState:
        return self.server.truth(self.code)

    @property
    def my_seat(self) -> int:
        match = self.client.match
        assert match is not None, "no match yet"
        return match.seat

    def send(self, seat: int, msg: dict[str, Any]) -> None:  # a JSON action, as the peer sends it
        self.server.advance(2.0)  # the server's clock moves as people think (E1's time is the server's)
        if seat == self.my_seat:
            from mineduel.shared.wire.messages import MatchAction
            from mineduel.shared.wire.names import ClientType

            cell = msg.get("cell")
            match = self.client.match
            assert match is not None
            self.client.requests.send_action(MatchAction(ClientType(msg["type"]), None if cell is None else cell[0] * 8 + cell[1],
                                                match.match_id, match.seq), lambda code: None)
        else:
            self.peer.send(**msg)
        self.s.frame(0.02)

    def step(self, *, flags: bool = True) -> None:
        """One scripted action for the seat to move: safe explores, plants that overlap once, a flag per turn."""
        st = self.state()
        seat = st.to_move
        assert seat is not None, "the match is over"
        other = 1 - seat
        safe = FULL & ~(st.revealed | st.any_marker | st.any_mine)
        if st.phase in (Phase.OPEN_EXPLORE, Phase.EXPLORE):
            self.send(seat, {"type": "explore", "cell": list(divmod(next(cells(safe)), 8))})
        elif st.phase in (Phase.OPEN_PLANT, Phase.PLANT):
            plantable = st.plantable(seat)
            overlap = st.mines[other] & plantable
            overlap_now = overlap and st.turn == 2 and seat != self.my_seat
            target = next(cells(overlap)) if overlap_now else next(cells(safe & plantable or plantable))
            self.send(seat, {"type": "plant", "cell": list(divmod(target, 8))})
        else:
            free = FULL & ~(st.revealed | st.any_marker)
            if flags and not st.marker_used:
                right = st.mines[other] & free & ~st.mines[seat]
                wrong = free & ~st.any_mine
                pick = right if (st.turn % 2 == 0) else wrong
                if pick:
                    self.send(seat, {"type": "flag", "cell": list(divmod(next(cells(pick)), 8))})
            mover = self.state().to_move
            assert mover is not None
            self.send(mover, {"type": "end_turn"})

    def play_until(self, *, turn: int, phase: Phase = Phase.EXPLORE, mine: bool = True) -> None:
        for _ in range(200):
            st = self.state()
            if st.turn >= turn and st.phase is phase and (st.to_move == self.my_seat) == mine:
                break
            self.step()
        self.s.settle(2.0)

    def ko_cell(self) -> int:
        st = self.state()
        opp = 1 - self.my_seat
        return next(cells(st.mines[opp] & ~st.mines[self.my_seat] & ~st.revealed & ~st.any_marker))

    def click_cell(self, cell: int) -> None:
        self.s.click(self.top.board.cell_center(cell))


def _rig(s: Shooter, **kw: Any) -> Rig:
    rig = Rig(s, **kw)
    s.rig = rig  # type: ignore[attr-defined]  # kept alive until the picture is taken
    return rig


@shot("online_home")
def _home(s: Shooter) -> None:
    rig = _rig(s)
    rig.click("find")
    s.settle(0.3)


@shot("online_token_unavailable")
def _token(s: Shooter) -> None:
    _rig(s, tokens_ok=False)
    s.settle(0.3)


@shot("online_connect_server")
def _server(s: Shooter) -> None:
    rig = _rig(s)
    rig.click("find")
    rig.click("server:192.168.1.5:47650")
    s.settle(0.3)
    rig.lobby.code_field.set_text("XYZ")
    rig.lobby.seats.code_typed("XYZ")
    s.settle(0.3)


@shot("online_join_link")
def _link(s: Shooter) -> None:
    rig = _rig(s)
    other = rig.server.peer()
    code = other.send(type="create_room", client_seed="x")[0]["room"]
    rig.lobby.open_link(f"mineduel://192.168.1.5:47650/join/{code}")
    s.settle(0.5)


@shot("online_waiting_room")
def _waiting(s: Shooter) -> None:
    rig = _rig(s)
    rig.host()
    rig.click("copy")
    s.settle(0.3)


@shot("online_waiting_ready")
def _ready(s: Shooter) -> None:
    rig = _rig(s)
    rig.host()
    rig.opponent_joins()
    rig.peer.send(type="ready", client_seed="peer-2")
    s.settle(0.3)


@shot("online_match_deadline")
def _deadline(s: Shooter) -> None:
    rig = _rig(s)
    rig.start_match()
    rig.play_until(turn=3)
    s.frame(7.3)  # 20 s - 7.3 s: 13 s left on the countdown


@shot("online_opponent_turn")
def _opponent_turn(s: Shooter) -> None:
    rig = _rig(s)
    rig.start_match()
    rig.play_until(turn=3, mine=False)
    s.frame(3.2)


@shot("online_refusal")
def _refusal(s: Shooter) -> None:
    rig = _rig(s)
    rig.start_match()
    rig.play_until(turn=3)
    mine = next(cells(rig.state().mines[rig.my_seat] & ~rig.state().any_marker))
    rig.click_cell(mine)
    s.settle(0.5)


@shot("online_opponent_disconnected")
def _away(s: Shooter) -> None:
    rig = _rig(s)
    rig.start_match()
    rig.play_until(turn=3)
    rig.peer.drop()
    for _ in range(31):  # a second at a time on both clocks; the server's pings keep the link alive
        rig.server.advance(1.0)
        s.frame(1.0)


@shot("online_reconnecting")
def _reconnecting(s: Shooter) -> None:
    rig = _rig(s)
    rig.start_match()
    rig.play_until(turn=3)
    rig.server.cut(cast("server_client.MemLink", rig.client.connection.link))  # the rig's links are in-process

    def unreachable(host: str, port: int, listener: LinkListener, *, tls: bool = False, pin: str | None = None) -> Link:
        raise OSError("unreachable")

    s.frame(0.05)
    rig.client.services.connect = unreachable
    s.frame(0.6)
    s.frame(0.05)


@shot("online_rules")
def _rules(s: Shooter) -> None:
    rig = _rig(s)
    rig.start_match()
    rig.play_until(turn=3)
    s.key(s.pygame.K_ESCAPE)
    rig.click("menu.rules")
    s.settle(0.5)


@shot("online_resign_confirm")
def _resign(s: Shooter) -> None:
    rig = _rig(s)
    rig.start_match()
    rig.play_until(turn=3)
    s.key(s.pygame.K_ESCAPE)
    rig.click("online.resign")
    s.settle(0.5)


def _ko(s: Shooter) -> Rig:
    rig = _rig(s)
    rig.start_match()
    rig.play_until(turn=5)
    rig.click_cell(rig.ko_cell())
    s.settle(1.5)
    return rig


@shot("online_result_ko")
def _result(s: Shooter) -> None:
    _ko(s)


@shot("online_result_board")
def _result_board(s: Shooter) -> None:
    rig = _ko(s)
    rig.click("view_board")
    s.settle(0.5)


@shot("online_rematch_agreed")
def _rematch(s: Shooter) -> None:
    rig = _ko(s)
    rig.peer.send(type="rematch", client_seed="peer-3")
    s.settle(0.5)


@shot("online_verify")
def _verify(s: Shooter) -> None:
    rig = _ko(s)
    rig.click("verify")
    s.settle(0.5)


@shot("online_result_resign")
def _result_resign(s: Shooter) -> None:
    rig = _rig(s)
    rig.start_match()
    rig.play_until(turn=4)
    rig.peer.send(type="resign")
    s.settle(1.5)


@shot("online_error")
def _error(s: Shooter) -> None:
    from mineduel.client.online_client import OnlineServices

    rig = _rig(s)

    class Stranger:  # a server that speaks another protocol version
        def __init__(self, listener: Any) -> None:
            self.listener = listener
            listener.link_open(self)

        def send(self, message: Any) -> None:
            from mineduel.shared.wire.messages import Hello, Welcome

            if isinstance(message, Hello):
                self.listener.link_message(self, Welcome(2, "stranger", "9", 0.0, 8192, 20.0, 40.0, 5.0, 15.0, 20.0, 120.0))

        def close(self) -> None:
            pass

    services: OnlineServices = rig.client.services
    services.connect = lambda host, port, listener, **tls: Stranger(listener)
    rig.lobby.address_field.set_text("192.168.1.40:47650")
    rig.click("connect")
    s.settle(0.3)


@shot("online_error_tls_refused")
def _tls_refused(s: Shooter) -> None:
    """A pinned link whose server shows another certificate: refused, never sent in plaintext."""
    from mineduel.client.online_client import OnlineServices

    rig = _rig(s)

    class WrongCertificate:
        def __init__(self, listener: Any) -> None:
            listener.link_refused(self, "certificate fingerprint does not match the link's pin")

        def send(self, message: Any) -> None:
            pass

        def close(self) -> None:
            pass

    services: OnlineServices = rig.client.services
    services.connect = lambda host, port, listener, **tls: WrongCertificate(listener)
    rig.lobby.open_link("mineduels://duel.example.org:47650/join/NYTF23?pin=" + "ab" * 32)
    s.settle(0.5)


@shot("online_storage_unavailable")
def _storage_unavailable(s: Shooter) -> None:
    """The server's disk failed: a move is refused with storage_unavailable and nothing changed."""
    rig = _rig(s)
    rig.start_match()
    rig.play_until(turn=2)
    rig.client.requests.refused("explore", "storage_unavailable")  # what the reply to a move does
    s.settle(0.5)


@shot("online_waiting_refereed")
def _refereed(s: Shooter) -> None:
    """The joining player on a server another player's game hosts: who referees, said plainly."""
    rig = _rig(s, referee="player")
    other = rig.server.peer()
    code = other.send(type="create_room", client_seed="x")[0]["room"]
    rig.lobby.open_link(f"mineduel://192.168.1.5:47650/join/{code}")
    s.settle(0.5)
    rig.click("join")
    s.settle(0.3)
    other.send(type="ready", client_seed="x-2")
    s.settle(0.3)


def _verify_with(s: Shooter, change: Callable[[Rig], None]) -> None:
    rig = _ko(s)
    change(rig)
    rig.click("verify")
    s.settle(0.5)


def _forge_seeds(rig: Rig) -> None:
    """An operator's record that names the seeds the other way round (the draw and the seats move)."""
    match = rig.client.match
    assert match is not None and match.end is not None
    fairness = match.end.record["fairness"]
    fairness["client_seeds"] = list(reversed(fairness["client_seeds"]))


def _no_witness(rig: Rig) -> None:
    """A client that could keep no witness (its data folder refused the files after a restart)."""
    match = rig.client.match
    assert match is not None
    match.proof.witnessed = lambda: None


def _malformed(rig: Rig) -> None:
    match = rig.client.match
    assert match is not None and match.end is not None
    match.end.record["fairness"]["mine_commitments"] = ["not a hash"]


@shot("online_verify_forged")
def _verify_forged(s: Shooter) -> None:
    _verify_with(s, _forge_seeds)


@shot("online_verify_no_witness")
def _verify_no_witness(s: Shooter) -> None:
    _verify_with(s, _no_witness)


@shot("online_verify_malformed")
def _verify_malformed(s: Shooter) -> None:
    _verify_with(s, _malformed)


# ----- friend: two clicks to a friend (issue 16) -------------------------------------------------------


def _lan_rig(s: Shooter, rooms: tuple[tuple[str, str], ...], **kw: Any) -> Rig:
    """The landing page with ``rooms`` (creator names) listed by one LAN server, plus a dedicated
    server naming none; each room is real (created listed on the in-process server)."""
    from mineduel.client.online_client import FoundServer, LanRoom

    rig = _rig(s, **kw)
    listed = []
    for name, seed in rooms:
        peer = rig.server.peer()
        code = peer.send(type="create_room", name=name, listed=True, client_seed=seed)[0]["room"]
        listed.append(LanRoom(code, name))
        rig.server.advance(30)
    rig.found[:] = [FoundServer("192.168.1.23", 47650, "MINE DUEL (laptop)", len(listed), instance="5be1c0f2a9d3e847",
                                rooms=tuple(reversed(listed))),
                    FoundServer("192.168.1.40", 47650, "Club server", 3, instance="0c9d2e7f11aa4b3c")]
    rig.click("find")
    s.settle(0.3)
    return rig


@shot("friend_landing")
def _friend_landing(s: Shooter) -> None:
    """Where Play with a friend lands, nothing waiting yet: Host a game, the (empty) list, the field."""
    rig = _rig(s)
    rig.found[:] = []
    rig.click("find")
    s.settle(0.3)


@shot("friend_lan_rooms")
def _friend_lan_rooms(s: Shooter) -> None:
    """Two rooms waiting on this network, with their hosts' names and codes; one click joins."""
    _lan_rig(s, (("Ann", "a-1"), ("Jun", "j-1")))


@shot("friend_name_popup")
def _friend_name(s: Shooter) -> None:
    """The first seat taken asks the player's name once (the OS user name suggested)."""
    from mineduel.client.scenes.name_popup import NamePopup

    rig = _lan_rig(s, (("Ann", "a-1"), ("Jun", "j-1")), name=None)
    rig.click("host")
    popup = s.app.stack.popup
    assert isinstance(popup, NamePopup), "the name is asked before the first seat"
    popup.field.set_text("Mina")
    s.settle(0.5)


@shot("friend_waiting_addresses")
def _friend_addresses(s: Shooter) -> None:
    """A hosted game on a machine with several addresses: the best in the link, the others below."""
    from mineduel.client.online_client import HostInfo

    rig = _rig(s)
    rig.services.start_host = lambda: HostInfo(47650, "192.168.1.5", lambda: None, 47651,
                                               ("192.168.1.5", "10.8.0.2", "fd00::2"))
    rig.host()
    rig.opponent_joins()
    rig.click("copy_seal")
    s.settle(0.3)


@shot("friend_waiting_loopback")
def _friend_loopback(s: Shooter) -> None:
    """A hosted game on a machine with no network: the note that only this computer can join."""
    from mineduel.client.online_client import HostInfo

    rig = _rig(s, public_host="127.0.0.1")  # what start_host gives the server when only loopback exists
    rig.services.start_host = lambda: HostInfo(47650, "127.0.0.1", lambda: None, 47651, (), True)
    rig.host()
    s.settle(0.3)


# ----- analysis -----


@shot("online_result_analysis_button")
def _analysis_button(s: Shooter) -> None:
    """The result panel with View board | Verify | Analysis."""
    _ko(s)


@shot("online_analysis")
def _online_analysis(s: Shooter) -> None:
    """The analysis after an online match, from the record the server sent: the last explore (the KO)."""
    rig = _ko(s)
    rig.click("analysis")
    s.settle(0.5)
    s.key(s.pygame.K_END)
    s.settle(0.3)


# ----- players: quick match, ratings, profile, leaderboard (issue 20) -----
# The §17 side is client/players_script.py over the same in-process core: the opponent is found when
# the picture needs one, the leaderboard holds a hundred players (long and CJK names among them).

LONG_NAMES = ("김민준", "さくら", "王小明", "Maximilian-Alexander", "ÉlodieFontaine", "山田太郎さん", "이서연",
              "Zhang_Wei_1990", "Olusegun", "ThisNameIsTwentyChr")


def _players_rig(s: Shooter, **kw: Any) -> tuple[Rig, Any]:
    """A rig whose connector answers PROTOCOL.md §17 by script, connected to the server: its server page."""
    from mineduel.client.players_script import PlayersScript

    rig = _rig(s, **kw)
    script = PlayersScript(rig.server)
    rig.services.connect = script.connector()
    s.rig_script = script  # type: ignore[attr-defined]  # kept alive until the picture is taken
    rig.lobby.connect_to("192.168.1.5", 47650)
    s.settle(0.3)
    return rig, script


def _players_searching(s: Shooter, seconds: float) -> tuple[Rig, Any]:
    rig, script = _players_rig(s)
    rig.click("quick")
    s.settle(seconds)
    return rig, script


def _players_matched(s: Shooter) -> tuple[Rig, Any]:
    rig, script = _players_searching(s, 6.0)
    script.opponent = {"display": "山田太郎#77aa", "rating": 1523.4, "provisional": False}
    script.pair(opponent_name="山田太郎")
    s.settle(3.0)
    return rig, script


@shot("players_server_quick")
def _players_server(s: Shooter) -> None:
    """The server page of a server that knows players: Quick match first, Profile | Leaderboard."""
    _players_rig(s)


@shot("players_quick_searching")
def _players_quick_searching(s: Shooter) -> None:
    _players_searching(s, 7.2)


@shot("players_quick_cpu_offer")
def _players_quick_cpu(s: Shooter) -> None:
    """After 20 s with nobody: the CPU offered (unrated), the search going on."""
    _players_searching(s, 23.0)


@shot("players_quick_matched")
def _players_quick_matched(s: Shooter) -> None:
    _players_matched(s)


@shot("players_quick_confirmed")
def _players_quick_confirmed(s: Shooter) -> None:
    rig, _script = _players_matched(s)
    rig.click("quick_ready")
    s.settle(0.5)


@shot("players_quick_not_ready")
def _players_quick_not_ready(s: Shooter) -> None:
    """The confirm time ran out on this side: out of the queue, Search again."""
    script = _players_matched(s)[1]
    s.settle(8.0)
    script.push({"type": "queue", "status": "left", "reason": "not_ready"})
    script.push({"type": "room_closed", "room": next(iter(script.rated_rooms)), "reason": "dissolved"})
    s.settle(0.5)


def _players_rated_match(s: Shooter) -> tuple[Rig, Any]:
    rig, script = _players_matched(s)
    rig.click("quick_ready")
    script.opponent_ready()
    s.settle(1.0)
    return rig, script


@shot("players_match_ratings")
def _players_match_ratings(s: Shooter) -> None:
    """A rated match: both ratings on the cards (mine provisional: 1500?)."""
    _players_rated_match(s)


@shot("players_result_rating")
def _players_result(s: Shooter) -> None:
    """The result of a rated match: the change (+62) and the new rating."""
    script = _players_rated_match(s)[1]
    script.match_rating = {"before": 1500.0, "after": 1562.3, "change": 62.3, "deviation": 290.3, "provisional": True}
    script.peer.send(type="resign", match_id=script.peer.last("match_start")["match_id"])
    s.settle(1.5)


def _players_profile_data(script: Any, me: dict[str, Any]) -> None:
    from mineduel.client.players_script import rating

    recent = [{"match_id": f"{i:016x}", "opponent": f"{LONG_NAMES[i % len(LONG_NAMES)]}#{(i * 7919) % 65536:04x}",
               "result": ("win", "loss", "draw", "win")[i % 4], "change": (12.5, -9.8, 0.4, 31.0)[i % 4],
               "at": 1_700_000_000.0 - i * 86_400} for i in range(12)]
    script.profiles[me["player"]] = {"type": "profile", "player": me["player"], "display": me["display"],
                                     "rating": rating(1623.4, 87.2), "games": 48, "wins": 27, "losses": 18, "draws": 3,
                                     "recent": recent}


@shot("players_profile")
def _players_profile(s: Shooter) -> None:
    rig, script = _players_rig(s, name="가나다라마바사아자차카타파하가나다라마바")  # 20 characters
    _players_profile_data(script, script.link.player)
    rig.click("profile")
    s.settle(0.5)


@shot("players_leaderboard")
def _players_leaderboard(s: Shooter) -> None:
    rig, script = _players_rig(s)
    me = script.link.player
    top = [{"rank": i + 1, "player": f"{i:016x}", "display": f"{LONG_NAMES[i % len(LONG_NAMES)]}#{(i * 7919) % 65536:04x}",
            "rating": 2140.0 - i * 9.3, "games": 300 - i * 2} for i in range(100)]
    top[3] = {**top[3], "player": me["player"], "display": me["display"]}
    script.leaderboard = {"type": "leaderboard", "top": top, "me": {"rank": 4, "rating": top[3]["rating"]}}
    rig.click("leaderboard")
    s.settle(0.5)


@shot("players_leaderboard_unranked")
def _players_leaderboard_unranked(s: Shooter) -> None:
    """Not ranked yet (provisional): why, in one sentence; the list scrolled to its end."""
    rig, script = _players_rig(s)
    top = [{"rank": i + 1, "player": f"{i:016x}", "display": f"{LONG_NAMES[i % len(LONG_NAMES)]}#{i:04x}",
            "rating": 2140.0 - i * 9.3, "games": 300 - i * 2} for i in range(100)]
    script.leaderboard = {"type": "leaderboard", "top": top, "me": None}
    rig.click("leaderboard")
    s.settle(0.3)
    s.key(s.pygame.K_END)
    s.settle(0.3)


@shot("players_key_export")
def _players_key_export(s: Shooter) -> None:
    rig, script = _players_rig(s)
    _players_profile_data(script, script.link.player)
    rig.click("profile")
    s.settle(0.3)
    rig.click("key_export")
    rig.click("export_copy")
    s.settle(0.3)


@shot("players_key_import_confirm")
def _players_key_import(s: Shooter) -> None:
    """Import: a good text over an identity asks once more, naming the identity it replaces."""
    from mineduel.client.player_key import export_text

    rig, script = _players_rig(s)
    _players_profile_data(script, script.link.player)
    rig.click("profile")
    s.settle(0.3)
    rig.click("key_import")
    popup = s.app.stack.popup
    assert popup is not None
    popup.submit(export_text("Q" * 42 + "A"))  # type: ignore[attr-defined]  # the ImportKeyPopup
    s.settle(0.3)


@shot("players_key_damaged")
def _players_key_damaged(s: Shooter) -> None:
    """A damaged player-key.json: explained, with a choice (never replaced silently)."""
    rig = _rig(s)
    keys = rig.services.keys
    assert keys is not None
    keys.folder.mkdir(parents=True, exist_ok=True)
    keys.path.write_text("{not json")
    rig.client.players.loaded = keys.load()
    from mineduel.client.players_script import PlayersScript

    script = PlayersScript(rig.server)
    rig.services.connect = script.connector()
    s.rig_script = script  # type: ignore[attr-defined]
    rig.lobby.connect_to("192.168.1.5", 47650)
    s.settle(0.3)
    rig.click("quick")
    s.settle(0.3)


@shot("players_rated_room")
def _players_rated_room(s: Shooter) -> None:
    """A rated room by code (the creator's choice) on the real in-process server: both seats' ratings."""
    rig = _rig(s)
    rig.lobby.connect_to("192.168.1.5", 47650)
    s.settle(0.3)
    rig.click("rated_room")
    rig.click("create")
    s.settle(0.3)
    peer = rig.server.peer()
    peer.send(type="identify", key="J" * 42 + "A", name="王小明")
    peer.send(type="join", room=rig.client.room_code, name="王小明", client_seed="peer-1")
    s.rig_peer = peer  # type: ignore[attr-defined]
    s.settle(0.5)


# ----- watch: spectators and the kiosk's attract mode (issue 19) -----
# Two scripted players on the in-process core (seat 0 blue, seat 1 pink); the app watches them as a
# third connection through the lobby's Watch (client/scenes/spectate_lobby.py).


class _Duel:
    """A room of two scripted players, Mina and Jun, playing safe moves (and flags) by the server's truth."""

    def __init__(self, rig: Rig, *, listed: bool = False, names: tuple[str, str] = ("Mina", "Jun")) -> None:
        server = rig.server
        self.rig = rig
        self.players = (server.peer(), server.peer())
        self.code = self.players[0].send(type="create_room", name=names[0], client_seed="w-a", listed=listed)[0]["room"]
        self.players[1].send(type="join", room=self.code, name=names[1], client_seed="w-b")
        for p in self.players:
            p.send(type="ready")

    def seat(self, n: int) -> Any:
        return next(p for p in self.players if p.last("match_start")["seat"] == n)

    def step(self) -> None:
        server = self.rig.server
        st = server.truth(self.code)
        seat = st.to_move
        assert seat is not None, "the match is over"
        safe = FULL & ~(st.revealed | st.any_marker | st.any_mine)
        server.advance(2.0)
        peer = self.seat(seat)
        if st.phase in (Phase.OPEN_EXPLORE, Phase.EXPLORE):
            peer.send(type="explore", cell=list(divmod(next(cells(safe)), 8)))
        elif st.phase in (Phase.OPEN_PLANT, Phase.PLANT):
            plantable = st.plantable(seat)
            peer.send(type="plant", cell=list(divmod(next(cells(safe & plantable or plantable)), 8)))
        else:
            free = FULL & ~(st.revealed | st.any_marker)
            right = st.mines[1 - seat] & free & ~st.mines[seat]
            if not st.marker_used and right and st.turn % 3 == 0:
                peer.send(type="flag", cell=list(divmod(next(cells(right)), 8)))
            peer.send(type="end_turn")

    def play(self, actions: int) -> None:
        for _ in range(actions):
            self.step()

    def ko(self) -> None:
        """The seat to move explores the other seat's mine (O8: KO), from its explore step."""
        server = self.rig.server
        for _ in range(8):
            st = server.truth(self.code)
            if st.phase is Phase.EXPLORE:
                break
            self.step()
        st = server.truth(self.code)
        seat = st.to_move
        assert seat is not None
        target = next(cells(st.mines[1 - seat] & ~st.mines[seat] & ~st.revealed & ~st.any_marker))
        self.seat(seat).send(type="explore", cell=list(divmod(target, 8)))


def _watching(s: Shooter, actions: int = 23, **kw: Any) -> tuple[Rig, _Duel]:
    rig = _rig(s)
    duel = _Duel(rig, **kw)
    duel.play(actions)
    rig.lobby.watching.watch_at("192.168.1.5", 47650, duel.code)
    s.settle(0.3)
    s.duel = duel  # type: ignore[attr-defined]  # kept alive until the picture is taken
    return rig, duel


@shot("watch_entry")
def _watch_entry(s: Shooter) -> None:
    """Watch beside Join under the one field (a typed address and code), and an eye on each LAN room."""
    rig = _lan_rig(s, (("Ann", "a-1"), ("Jun", "j-1")))
    rig.lobby.address_field.set_text("192.168.1.23:47650 QW7RTZ")
    s.app.ctx.invalidate(None)
    s.settle(0.2)


@shot("watch_live_list")
def _watch_live_list(s: Shooter) -> None:
    """A server's page: Create room, the code with Join | Watch, and its live matches to watch."""
    rig = _rig(s)
    for names in (("Mina", "Jun"), ("Ann", "Bob"), ("さくら", "王小明")):
        duel = _Duel(rig, listed=True, names=names)
        duel.play(9)
        rig.server.advance(40)
    s.duels = duel  # type: ignore[attr-defined]
    rig.lobby.connect_to("192.168.1.5", 47650)
    s.settle(0.5)


@shot("watch_mid_match")
def _watch_mid_match(s: Shooter) -> None:
    """The spectator screen mid-match: both names, the deadline, flags, the live event line, Leave."""
    _watching(s)
    s.duel.step()  # type: ignore[attr-defined]
    s.settle(1.0)


@shot("watch_away")
def _watch_away(s: Shooter) -> None:
    """A player's connection dropped: away on the card and in the banner, with the grace counting down."""
    duel = _watching(s, 14)[1]
    duel.seat(1).drop()
    s.settle(7.0)


@shot("watch_end_reveal")
def _watch_end_reveal(s: Shooter) -> None:
    """After a KO: the winner, the reason, and the full O13 reveal (both seats' mines, markers right or wrong)."""
    duel = _watching(s, 21)[1]
    duel.ko()
    s.settle(1.5)


@shot("watch_room_closed")
def _watch_room_closed(s: Shooter) -> None:
    """Both players left after the end: the room is gone, said plainly, Leave to go back."""
    duel = _watching(s, 12)[1]
    duel.seat(0).send(type="resign")
    for p in duel.players:
        p.send(type="leave")
    s.settle(0.5)


def _attract(s: Shooter, live: bool) -> None:
    from mineduel.client.scenes.spectate_attract import AttractLoop, AttractScene, AttractTarget

    rig = _rig(s)
    if live:
        duel = _Duel(rig, listed=True)
        duel.play(17)
        s.duel = duel  # type: ignore[attr-defined]
    connect = rig.services.connect
    loop = AttractLoop(AttractTarget("192.168.1.5", 47650), lambda: connect, s.app.ctx.clock, "mine-duel/shots",
                       rotate=20.0, retry=15.0)
    s.app.stack.replace(AttractScene(s.app.ctx, loop))
    s.settle(1.0)


@shot("attract_live")
def _attract_live(s: Shooter) -> None:
    """Kiosk attract mode: a live match on the configured server, the footer inviting a touch."""
    _attract(s, True)


@shot("attract_none")
def _attract_none(s: Shooter) -> None:
    """Kiosk attract mode with no live match: the calm card (asked again every few seconds)."""
    _attract(s, False)


@shot("watch_reconnecting")
def _watch_reconnecting(s: Shooter) -> None:
    """The spectator's connection dropped: the last view held (not live), trying again by itself."""
    rig, _duel = _watching(s, 16)
    watcher = rig.top.watcher
    rig.server.cut(watcher.connection.link)
    rig.services.connect = lambda host, port, listener, **tls: (_ for _ in ()).throw(OSError("network is unreachable"))
    s.settle(2.2)


@shot("watch_refused_view")
def _watch_refused_view(s: Shooter) -> None:
    """A hostile server's view that cannot be right (seq going back): refused, the last good view kept, Try again."""
    from dataclasses import replace as changed

    rig, _duel = _watching(s, 16)
    watcher = rig.top.watcher
    state = watcher.state
    assert state is not None and watcher.connection.link is not None
    watcher.connection.link_message(watcher.connection.link, changed(state, seq=state.seq - 1))
    s.settle(0.5)


@shot("watch_players_count")
def _watch_players_count(s: Shooter) -> None:
    """A player's match screen while two people watch: the count in the header (§16)."""
    rig = _rig(s)
    rig.start_match()
    rig.play_until(turn=3)
    for _ in range(2):
        eye = rig.server.peer()
        eye.send(type="spectate", room=rig.code)
    s.watchers = eye  # type: ignore[attr-defined]
    s.settle(0.5)


@shot("watch_waiting_count")
def _watch_waiting_count(s: Shooter) -> None:
    """The waiting room while someone already watches: the count beside the invite link (§16)."""
    rig = _rig(s)
    rig.host()
    rig.opponent_joins()
    eye = rig.server.peer()
    eye.send(type="spectate", room=rig.code)
    s.watchers = eye  # type: ignore[attr-defined]
    s.settle(0.5)


@shot("watch_replay")
def _watch_replay(s: Shooter) -> None:
    """After the end, Replay: the finished match's record (get_record) in the replay viewer: the full board, last move."""
    rig, duel = _watching(s, 21)
    duel.ko()
    s.settle(1.0)
    rig.click("replay")
    s.settle(0.5)
    s.key(s.pygame.K_f)
    s.key(s.pygame.K_END)
    s.settle(0.3)


# ----- watch-toggle: "Let others watch" where a room is created (issue 19, §16 spectators:false) -----


def _allow_off(s: Shooter) -> Rig:
    rig = _rig(s)
    rig.click("allow_watch")  # on by default: one click turns it off (and keeps it, Settings.allow_watch)
    return rig


@shot("watch_allow_home")
def _watch_allow_home(s: Shooter) -> None:
    """The home page: Let others watch under Host a game, turned off."""
    _allow_off(s)
    s.settle(0.2)


@shot("watch_allow_server")
def _watch_allow_server(s: Shooter) -> None:
    """A server's page: Let others watch beside Rated room, above Create room (on, the default)."""
    rig = _rig(s)
    rig.lobby.connect_to("192.168.1.5", 47650)
    s.settle(0.5)


@shot("watch_allow_off_waiting")
def _watch_allow_off_waiting(s: Shooter) -> None:
    """The waiting room of a room hosted with watching off: 'Watching off' beside the invite link."""
    rig = _allow_off(s)
    rig.host()
    rig.opponent_joins()


@shot("watch_allow_on_waiting")
def _watch_allow_on_waiting(s: Shooter) -> None:
    """The waiting room of a room anyone may watch, nobody watching yet: 'Watching allowed'."""
    rig = _rig(s)
    rig.host()


@shot("watch_allow_refused")
def _watch_allow_refused(s: Shooter) -> None:
    """Watch on a room whose host turned watching off: the refusal said plainly (spectating_off)."""
    rig = _rig(s)
    host = rig.server.peer()
    code = host.send(type="create_room", name="Mina", client_seed="w-a", spectators=False)[0]["room"]
    s.host_peer = host  # type: ignore[attr-defined]
    rig.lobby.watching.watch_at("192.168.1.5", 47650, code)
    s.settle(0.5)


# ----- cluster-edge: following moved (issue 21, PROTOCOL.md §18) -----


def _moved_away(s: Shooter, rig: Rig) -> None:
    """The node serving the room sends an unsolicited ``moved``; the node it names is slow to answer
    (its link never opens), so the picture shows the calm note, not an error."""
    from mineduel.shared.wire.messages import Moved

    connect = rig.services.connect

    def slow(host: str, port: int, listener: LinkListener, **tls: Any) -> Link:
        if host == "10.0.0.12":
            return _Silent()
        return connect(host, port, listener, **tls)

    rig.services.connect = slow
    link = rig.client.connection.link
    assert link is not None, "connected"
    rig.client.connection.link_message(link, Moved(rig.code, "10.0.0.12", 47650))
    s.settle(0.4)


class _Silent:
    """A link that never opens (a node slow to answer)."""

    def send(self, message: Any) -> None:
        pass

    def close(self) -> None:
        pass


@shot("cluster_moving_waiting")
def _cluster_moving_waiting(s: Shooter) -> None:
    """The waiting room's node hands the room to another node: 'Moving to another server...'."""
    rig = _rig(s)
    rig.host()
    _moved_away(s, rig)


@shot("cluster_moving_match")
def _cluster_moving_match(s: Shooter) -> None:
    """Mid-match, the node stops serving the room (a rolling upgrade): the banner's calm note."""
    rig = _rig(s)
    rig.start_match()
    for _ in range(4):
        rig.step()
    _moved_away(s, rig)


@shot("cluster_too_many_moves")
def _cluster_too_many_moves(s: Shooter) -> None:
    """A broken (or hostile) cluster bouncing the client: the fourth moved in a row is a clear error."""
    from mineduel.shared.wire.messages import Moved

    rig = _rig(s)
    rig.host()
    client = rig.client
    client.moves = 3  # three moves already followed without a request succeeding
    link = client.connection.link
    assert link is not None, "connected"
    client.connection.link_message(link, Moved(rig.code, "10.0.0.13", 47650))
    s.settle(0.4)


@shot("cluster_moving_watch")
def _cluster_moving_watch(s: Shooter) -> None:
    """A spectator's node hands the room on: the last view held, the footer says it is moving."""
    from mineduel.shared.wire.messages import Moved

    rig, _duel = _watching(s, 16)
    watcher = rig.top.watcher
    connect = rig.services.connect
    rig.services.connect = lambda host, port, listener, **tls: (
        _Silent() if host == "10.0.0.12" else connect(host, port, listener, **tls))
    link = watcher.connection.link
    assert link is not None and watcher.room is not None, "watching"
    watcher.connection.link_message(link, Moved(watcher.room, "10.0.0.12", 47650))
    s.settle(0.4)


# ----- players-followup: the name rules, a rated match of one network (issue 20) -----


@shot("players_name_rule")
def _players_name_rule(s: Shooter) -> None:
    """The name popup refuses what the server would (PROTOCOL.md §17) and says which rule: here '#'."""
    from mineduel.client.scenes.name_popup import NamePopup

    rig = _lan_rig(s, (("Ann", "a-1"), ("Jun", "j-1")), name=None)
    rig.click("host")
    popup = s.app.stack.popup
    assert isinstance(popup, NamePopup), "the name is asked before the first seat"
    popup.field.set_text("Ann#4b52")
    popup._submit(popup.field.text)
    assert popup.problem is not None, "the '#' rule is said"
    s.settle(0.5)


@shot("players_result_same_address")
def _players_result_same_address(s: Shooter) -> None:
    """A rated match of two seats of one address changed nothing: the badge says why in two lines."""
    script = _players_rated_match(s)[1]
    script.match_rating = {"before": 1500.0, "after": 1500.0, "change": 0.0, "deviation": 290.3, "provisional": True,
                           "unrated": "same_address"}
    script.peer.send(type="resign", match_id=script.peer.last("match_start")["match_id"])
    s.settle(1.5)


# ----- cluster-edges: LAN discovery naming a cluster's front (issue 21) -----


@shot("friend_lan_cluster")
def _friend_lan_cluster(s: Shooter) -> None:
    """A cluster's nodes answered as one server (PROTOCOL.md §12 ``front``): its rooms show, under
    the code, the front address a tap dials; a room of a friend's laptop beside it shows none."""
    from dataclasses import replace

    from mineduel.client.online_client import LanRoom

    rig = _lan_rig(s, (("Ann", "a-1"),))
    laptop = rig.found[0]
    front = replace(laptop, host="play.club-example.org", port=47650, name="Club cluster", instance="1" * 16,
                    rooms=(LanRoom("XYZ789", "Mina"), LanRoom("QRS234", "Jun")), via="10.0.0.2")
    rig.found[:] = [front, laptop]
    rig.click("find")
    s.settle(0.3)


# ----- watch-privacy -----
# The player's choice about being watched, everywhere (issue 19): the room creator's toggle in the
# waiting room (set_spectators, §16), a spectator sent away by it, a quick match under a player's
# "Let others watch" off (§17), and a room page whose peek says it takes no spectators.


def _privacy_waiting(s: Shooter) -> Rig:
    """The host's waiting room with the opponent in and one person watching."""
    rig = _rig(s)
    rig.host()
    rig.opponent_joins()
    eye = rig.server.peer()
    eye.send(type="spectate", room=rig.code)
    s.watchers = eye  # type: ignore[attr-defined]
    s.settle(0.5)
    return rig


@shot("watch_privacy_toggle_on")
def _watch_privacy_toggle_on(s: Shooter) -> None:
    """The creator's waiting room: Let others watch (checked), one watching beside the invite link."""
    _privacy_waiting(s)


@shot("watch_privacy_toggle_off")
def _watch_privacy_toggle_off(s: Shooter) -> None:
    """After one tap: the server turned watching off, the spectator was sent away, 'Watching off'."""
    rig = _privacy_waiting(s)
    rig.click("room_watch")
    s.settle(0.5)


@shot("watch_privacy_spectator_sent_away")
def _watch_privacy_spectator_sent_away(s: Shooter) -> None:
    """A spectator whose room's host turned watching off: the card says so (room_closed spectating_off)."""
    duel = _watching(s, 12)[1]
    duel.players[0].send(type="set_spectators", allowed=False)
    s.settle(0.5)


@shot("watch_privacy_quick_searching")
def _watch_privacy_quick_searching(s: Shooter) -> None:
    """Searching with Let others watch off: 'Watching off' in the title row (sent with quick_match)."""
    rig, _script = _players_rig(s)
    rig.click("allow_watch")
    s.settle(0.2)
    rig.click("quick")
    s.settle(7.2)


@shot("watch_privacy_quick_matched")
def _watch_privacy_quick_matched(s: Shooter) -> None:
    """Matched with an opponent who asked not to be watched: the room is not watchable, said on top."""
    script = _players_searching(s, 6.0)[1]
    script.opponent = {"display": "山田太郎#77aa", "rating": 1523.4, "provisional": False}
    script.pair(opponent_name="山田太郎", opponent_watch=False)
    s.settle(3.0)


@shot("watch_privacy_room_page")
def _watch_privacy_room_page(s: Shooter) -> None:
    """A link to a room that takes no spectators: its Watch says so before any tap (peek's watchable)."""
    rig = _rig(s)
    other = rig.server.peer()
    code = other.send(type="create_room", client_seed="x", spectators=False)[0]["room"]
    rig.lobby.open_link(f"mineduel://192.168.1.5:47650/join/{code}")
    s.settle(0.5)


@shot("watch_privacy_lan_rooms")
def _watch_privacy_lan_rooms(s: Shooter) -> None:
    """The LAN list: Jun's room takes no spectators (§12 watchable:false), its eye struck and faint;
    tapped, the reason shows at once (no connection is made)."""
    from dataclasses import replace

    rig = _lan_rig(s, (("Ann", "a-1"), ("Jun", "j-1")))
    laptop = rig.found[0]
    rooms = tuple(replace(r, watchable=False) if r.host_name == "Jun" else r for r in laptop.rooms)
    rig.found[0] = replace(laptop, rooms=rooms)
    rig.click("find")
    s.settle(0.3)
    rig.click(f"watch:{next(r.code for r in rooms if not r.watchable)}")
    s.settle(0.2)
