"""PROTOCOL.md §17 (players, quick match, ratings) answered by a script over the real server core.

For ``mine-duel screenshots`` and the client's tests: a server with a hundred ranked players, an
opponent found at the moment a picture needs one, a rating change chosen in advance. Shipped in
the package like the in-process server it wraps (only through the facade
:func:`mineduel.server.client.in_process_server`), so an installed ``mine-duel screenshots`` works.

:class:`PlayersScript` wraps an in-process server: every request of
PROTOCOL.md §3–§16 goes to the real core; the §17 requests (``identify``, ``rename``,
``quick_match``, ``leave_queue``, ``get_profile``, ``get_leaderboard``) are answered here from
contract C3's JSON (each message through the codec both ways, exactly as on the wire). A quick
match is a real room of the core: :meth:`PlayersScript.pair` seats an opponent (a scripted peer)
and the client (a ``join`` sent on the client's own connection, whose ``joined`` is turned into
C3's ``matched`` with the same token), so Ready, ``match_start`` and the match run on the real
server. ``room`` gains ``rated`` and the seats' ratings, ``match_end`` its ``rating``.
Any message can be replaced (:attr:`PlayersScript.replies`) or sent raw (:meth:`PlayersScript.push_raw`)
to play a hostile server.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from typing import Any

from mineduel.shared.wire.codec import decode_server, encode
from mineduel.shared.wire.messages import BadMessage

C3_REQUESTS = frozenset({"identify", "rename", "quick_match", "leave_queue", "get_profile", "get_leaderboard"})


def public_id(key: str) -> str:
    inner = hashlib.sha256(key.encode()).hexdigest()
    return hashlib.sha256(("player:" + inner).encode()).hexdigest()[:16]


def rating(value: float = 1500.0, deviation: float = 500.0, provisional: bool | None = None) -> dict[str, Any]:
    return {"value": value, "deviation": deviation, "provisional": deviation >= 110 if provisional is None else provisional}


class _Listener:
    def __init__(self, fake: PlayersScript, listener: Any) -> None:
        self.fake = fake
        self.listener = listener
        self.link: _Link | None = None

    def link_open(self, _inner: Any) -> None:
        if self.link is not None:
            self.listener.link_open(self.link)

    def link_message(self, _inner: Any, message: Any) -> None:
        assert self.link is not None
        obj = self.fake.rewrite(self.link, message.wire())
        if obj is not None:
            self.link.deliver(obj)

    def link_closed(self, _inner: Any, detail: str) -> None:
        if self.link is not None:
            self.listener.link_closed(self.link, detail)

    def link_failed(self, _inner: Any, detail: str) -> None:
        if self.link is not None:
            self.listener.link_failed(self.link, detail)

    def link_garbage(self, _inner: Any, detail: str) -> None:
        if self.link is not None:
            self.listener.link_garbage(self.link, detail)


class _Link:
    """The client's end: §17 requests answered by the fake, the rest sent to the real core."""

    def __init__(self, fake: PlayersScript, listener: _Listener) -> None:
        self.fake = fake
        self.listener = listener
        self.inner: Any = None
        self.player: dict[str, Any] | None = None
        self.key: str | None = None
        self.queued = False
        self.spectators = True  # its quick_match's choice (issue 19): the paired room is watchable only if both allow it

    @property
    def pid(self) -> int:
        return int(self.inner.pid)

    def send(self, message: Any) -> None:
        wire = message.wire()
        self.fake.sent.append(wire)
        if wire["type"] in C3_REQUESTS:
            self.fake.answer(self, wire)
        else:
            self.inner.send(message)

    def close(self) -> None:
        self.queued = False
        self.inner.close()

    def deliver(self, obj: dict[str, Any]) -> None:
        """A JSON object to the client, through the codec as on the wire."""
        self.listener.listener.link_message(self, decode_server(encode(obj)[:-1]))

    def deliver_raw(self, line: bytes) -> None:
        try:
            message = decode_server(line)
        except (BadMessage, ValueError) as exc:  # what net.py does with a line that breaks the protocol
            self.listener.listener.link_garbage(self, str(exc))
            return
        self.listener.listener.link_message(self, message)


class PlayersScript:
    """See the module docstring."""

    def __init__(self, srv: Any) -> None:
        self.srv = srv  # mineduel.server.client.in_process_server(...)
        self.sent: list[dict[str, Any]] = []  # everything the client sent, as JSON
        self.links: list[_Link] = []
        self.players: dict[str, dict[str, Any]] = {}  # public id -> the player object
        self.profiles: dict[str, dict[str, Any]] = {}  # public id -> a profile reply (without id)
        self.leaderboard: dict[str, Any] = {"type": "leaderboard", "top": [], "me": None}
        self.replies: dict[str, Callable[[dict[str, Any]], list[dict[str, Any]] | None]] = {}  # overrides per request
        self.supported = True  # False: §17 is unknown here (an older server)
        self.opponent = {"display": "Bob#77aa", "rating": 1523.4, "provisional": False}
        self.opponent_deviation = 80.0
        self.match_rating: dict[str, Any] | None = None  # the next match_end's "rating"
        self.pairing: dict[int, str] = {}  # client pid -> the room it is being matched into
        self.rated_rooms: set[str] = set()
        self.peer: Any = None  # the opponent, once paired

    @property
    def now(self) -> float:
        return float(self.srv.clock.seconds())

    def connector(self) -> Callable[..., _Link]:
        inner = self.srv.connector()

        def connect(host: str, port: int, listener: Any, *, tls: bool = False, pin: str | None = None) -> _Link:
            wrapper = _Listener(self, listener)
            link = _Link(self, wrapper)
            wrapper.link = link
            self.links.append(link)
            link.inner = inner(host, port, wrapper, tls=tls, pin=pin)
            return link

        return connect

    @property
    def link(self) -> _Link:
        open_links = [link for link in self.links if link.inner is not None and link.inner.open]
        return open_links[-1]

    def requests(self, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.sent if m["type"] == kind]

    # ----- §17 answers ----------------------------------------------------------------------------
    def answer(self, link: _Link, msg: dict[str, Any]) -> None:
        kind, rid = msg["type"], msg.get("id")
        if not self.supported:
            link.deliver({"type": "error", "code": "unknown_type", "message": "?", "request": kind, **_id(rid)})
            return
        override = self.replies.get(kind)
        if override is not None:
            out = override(msg)
            if out is not None:
                for obj in out:
                    link.deliver({**obj, **(_id(rid) if obj.get("type") in ("error", "ok", "profile", "leaderboard") else {})})
                return
        ok = {"type": "ok", "request": kind, **_id(rid)}
        if kind in ("identify", "rename"):
            name = " ".join(str(msg.get("name", "")).split())
            if not 1 <= len(name) <= 20:
                link.deliver({"type": "error", "code": "bad_name", "message": "name", "request": kind, **_id(rid)})
                return
            if kind == "identify":
                if link.player is not None and link.key != msg["key"]:
                    link.deliver({"type": "error", "code": "already_identified", "message": "", "request": kind, **_id(rid)})
                    return
                link.key = msg["key"]
                pid = public_id(msg["key"])
                player = self.players.setdefault(pid, {"type": "player", "player": pid, "name": name, "tag": pid[:4],
                                                       "display": f"{name}#{pid[:4]}", "rating": rating(),
                                                       "games": 0, "wins": 0, "losses": 0, "draws": 0})
            else:
                if link.player is None:
                    link.deliver({"type": "error", "code": "identify_required", "message": "", "request": kind, **_id(rid)})
                    return
                player = link.player
            player.update(name=name, display=f"{name}#{player['tag']}")
            link.player = player
            link.deliver(copy.deepcopy(player))
            link.deliver(ok)
        elif kind == "quick_match":
            if link.player is None:
                link.deliver({"type": "error", "code": "identify_required", "message": "", "request": kind, **_id(rid)})
                return
            link.queued = True
            link.spectators = msg.get("spectators", True) is not False
            link.deliver({"type": "queue", "status": "waiting", "since": self.now, "server_time": self.now})
            link.deliver(ok)
        elif kind == "leave_queue":
            if not link.queued:
                link.deliver({"type": "error", "code": "not_queued", "message": "", "request": kind, **_id(rid)})
                return
            link.queued = False
            link.deliver({"type": "queue", "status": "left", "reason": "cancelled"})
            link.deliver(ok)
        elif kind == "get_profile":
            who = msg.get("player") or (None if link.player is None else link.player["player"])
            profile = self.profiles.get(who or "")
            if profile is None and link.player is not None and who == link.player["player"]:
                p = link.player
                profile = {"type": "profile", "player": p["player"], "display": p["display"], "rating": p["rating"],
                           "games": p["games"], "wins": p["wins"], "losses": p["losses"], "draws": p["draws"], "recent": []}
            if profile is None:
                link.deliver({"type": "error", "code": "not_found", "message": "", "request": kind, **_id(rid)})
                return
            link.deliver({**copy.deepcopy(profile), **_id(rid)})
        elif kind == "get_leaderboard":
            link.deliver({**copy.deepcopy(self.leaderboard), **_id(rid)})

    # ----- quick match over the real core --------------------------------------------------------------
    def pair(self, *, opponent_name: str = "Bob", confirm_left: float = 10.0, opponent_watch: bool = True) -> str:
        """Match the queued client with a scripted opponent in a real room; the room's code (watchable
        only if both the client's ``quick_match`` and ``opponent_watch`` allow it, §17)."""
        link = self.link
        assert link.queued, "the client is not searching"
        link.queued = False
        self.peer = self.srv.peer()
        watch = link.spectators and opponent_watch
        code = str(self.peer.send(type="create_room", name=opponent_name, client_seed="opp", spectators=watch)[0]["room"])
        self.rated_rooms.add(code)
        self.pairing[link.pid] = code
        self._confirm_left = confirm_left
        self.srv.core.line_received(link.pid, encode({"type": "join", "room": code, "name": link.player["name"] if link.player
                                                      else "", "client_seed": "me", "id": "fake-join"})[:-1])
        self.srv.end_turn()
        return code

    def opponent_ready(self) -> None:
        self.peer.send(type="ready", ready=True, client_seed="opp-seed")

    def push(self, obj: dict[str, Any]) -> None:
        self.link.deliver(obj)

    def push_raw(self, line: bytes) -> None:
        self.link.deliver_raw(line)

    def rewrite(self, link: _Link, obj: dict[str, Any]) -> dict[str, Any] | None:
        """A message of the real core on its way to the client, as a §17 server would send it."""
        kind = obj.get("type")
        if kind == "joined" and obj.get("id") == "fake-join":
            code = self.pairing.pop(link.pid)
            return {"type": "matched", "room": code, "token": obj["token"], "seat": 1,
                    "opponent": dict(self.opponent), "rated": True,
                    "confirm": {"at": self.now + self._confirm_left, "left": self._confirm_left}}
        if kind == "room" and obj.get("room") in self.rated_rooms:
            obj = copy.deepcopy(obj)
            obj["rated"] = True
            me = link.player
            if me is not None:
                obj["me"].update(display=me["display"], rating=me["rating"]["value"], provisional=me["rating"]["provisional"])
            if obj.get("opponent") is not None:
                obj["opponent"].update(display=self.opponent["display"], rating=self.opponent["rating"],
                                       provisional=self.opponent["provisional"])
            return obj
        if kind == "match_end" and self.match_rating is not None:
            return {**obj, "rating": self.match_rating}
        return obj


def _id(rid: Any) -> dict[str, Any]:
    return {} if rid is None else {"id": rid}


__all__ = ["PlayersScript", "public_id", "rating"]
