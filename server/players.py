"""Players without accounts (issue 20, PROTOCOL.md §17): identity, names, ratings, profiles.

A player is a secret key the client made once (43 URL-safe base64 characters). The server keeps
only ``sha256(key)`` (:func:`key_hash`), and shows everyone a public id derived from that hash
(:func:`public_id`, 16 hex digits) whose first 4 digits are the name's tag (``Ann#3f9c``): the
public id reveals nothing of the key, and the key is never written, logged or sent anywhere.

:class:`Players` holds the players this process has loaded (by key hash and by public id) and
which connection is which player. Changes are *staged* like rooms (``commits.py``): a player row
is serialised at the commit, and a rated match's rating changes are written in the same
transaction as the match's result (``Room.store`` → :meth:`Players.rate`). A failed commit
reloads the players it touched from the database (:meth:`Players.reload`).

Limits per address (the owner tag of ``server/limits.py``, kept in memory: a restart forgets
them): ``identify``/``rename`` at most ``identifies_per_address`` per ``identify_window`` (a
token bucket), and at most ``new_players_per_address`` new keys per ``new_player_window``; past
either, ``too_many_players`` and nothing changes (docs/SECURITY.md).

The pair limit (docs/SECURITY.md, "Players and ratings"): of the rated matches two players finish against
each other, only the first ``rated_pair_limit`` in any ``rated_pair_window`` (24 h, Unix time)
change ratings; later ones are played as ever and their ``match_end.rating`` says
``"unrated":"pair_limit"`` with no change.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from twisted.logger import Logger

from mineduel.server import glicko2
from mineduel.server.config import Config
from mineduel.server.storage import PlayerRow, RatedResult, Storage
from mineduel.shared.rules.engine import Outcome
from mineduel.shared.rules.vocabulary import Reason
from mineduel.shared.wire import messages as m
from mineduel.shared.wire import player_names
from mineduel.shared.wire.codec import ProtocolError
from mineduel.shared.wire.names import ErrorCode
from mineduel.shared.wire.player_names import NameRule

if TYPE_CHECKING:
    from mineduel.server.commits import CommitQueue
    from mineduel.server.effects import Env
    from mineduel.server.room import Seat

log = Logger(namespace="mineduel.players")

NAME_MAX = player_names.NAME_MAX
"""A player's name: 1 to 20 characters after trimming (§17)."""
MARKS_MAX = player_names.MARKS_MAX
RECENT = 20
"""Rated matches in a profile (§17)."""
LEADERBOARD = 100
"""Players in the leaderboard's ``top`` (§17)."""
BOARD_TTL = 1.0
"""Seconds the top 100 is reused for every ``get_leaderboard`` (one query a second, however many ask)."""


def key_hash(key: str) -> str:
    """What the server stores of a player key: its SHA-256 (hex). The key itself is never kept."""
    return hashlib.sha256(key.encode("ascii")).hexdigest()


def public_id(hashed: str) -> str:
    """The public id of the key with this hash: 16 hex digits of sha256("player:" + hash).

    Another hash of the stored one, so neither the key nor the stored hash follows from it.
    """
    return hashlib.sha256(f"player:{hashed}".encode("ascii")).hexdigest()[:16]


def clean_name(raw: str, deny: Sequence[str]) -> str:
    """The name a player asked for, trimmed (NFC), or ``bad_name``: 1–20 characters that pass
    :func:`check_name`."""
    name = player_names.trimmed(raw)
    if player_names.length_problem(name) is not None:
        raise ProtocolError(ErrorCode.BAD_NAME, f"a name has 1 to {NAME_MAX} characters (spaces around it do not count)")
    check_name(name, deny)
    return name


_WHY = {
    NameRule.INVISIBLE: "a name may not hold control or invisible characters",
    NameRule.ACCENTS: f"at most {MARKS_MAX} accents on one letter",
    NameRule.SPACES: "a name may not hold two spaces in a row",
    NameRule.HASH: "a name may not hold '#' (it separates the name from its tag)",
}
"""The server's ``bad_name`` message for each character rule (the client says it in the player's language)."""


def check_name(name: str, deny: Sequence[str]) -> None:
    """``bad_name`` unless ``name`` passes the shared character rules
    (:func:`mineduel.shared.wire.player_names.character_problem`: visible and plain enough to tell
    players apart) and holds no word of the deny list, also when spelled in full-width or other
    compatibility forms (NFKC) or with accents added (``jérk``: compared without its combining
    marks too). The deny list is the server's alone (``--name-deny-file``)."""
    problem = player_names.character_problem(name)
    if problem is not None:
        raise ProtocolError(ErrorCode.BAD_NAME, _WHY[problem])
    folded = unicodedata.normalize("NFKC", name).casefold()
    bare = "".join(c for c in unicodedata.normalize("NFKD", folded) if unicodedata.category(c) not in ("Mn", "Me"))
    if any(word and (word in folded or word in bare or word in name.casefold()) for word in deny):
        raise ProtocolError(ErrorCode.BAD_NAME, "this name is not allowed on this server; choose another")


def load_deny_list(path: str) -> tuple[str, ...]:
    """``--name-deny-file``: one word per line (UTF-8), blank lines and ``#`` comments ignored;
    case-folded for the substring test."""
    with open(path, encoding="utf-8") as f:
        words = (line.strip() for line in f)
        return tuple(sorted({w.casefold() for w in words if w and not w.startswith("#")}))


@dataclass(eq=False)
class Player:
    """One player as this process holds it (mutable: staged by reference, serialised at the commit)."""

    key_hash: str
    player: str
    name: str
    rating: glicko2.Rating = field(default_factory=glicko2.Rating)
    games: int = 0
    wins: int = 0
    losses: int = 0
    draws: int = 0
    created: float = 0.0
    updated: float = 0.0
    """Unix time of the last rating change (its creation before any): a rated game widens the
    deviation by the time since (``glicko2.periods_between``); a rename does not move it."""

    @property
    def tag(self) -> str:
        return self.player[:4]

    @property
    def display(self) -> str:
        return f"{self.name}#{self.tag}"

    def to_row(self) -> PlayerRow:
        r = self.rating
        return PlayerRow(self.key_hash, self.player, self.name, r.value, r.deviation, r.volatility, self.games,
                         self.wins, self.losses, self.draws, self.created, self.updated)

    @classmethod
    def from_row(cls, row: PlayerRow) -> Player:
        return cls(row.key_hash, row.player, row.name, glicko2.Rating(row.rating, row.deviation, row.volatility),
                   row.games, row.wins, row.losses, row.draws, row.created, row.updated)

    def rating_info(self) -> m.RatingInfo:
        return rating_info(self.rating)

    def info(self) -> m.PlayerInfo:
        return m.PlayerInfo(self.player, self.name, self.tag, self.display, self.rating_info(), self.games, self.wins,
                            self.losses, self.draws)


def rating_info(r: glicko2.Rating) -> m.RatingInfo:
    """A rating as the wire shows it: one decimal (§17)."""
    return m.RatingInfo(round(r.value, 1), round(r.deviation, 1), glicko2.provisional(r))


@dataclass(slots=True)
class _AddressBudget:
    """One address's identify bucket and the times it made new players (in memory)."""

    tokens: float
    at: float
    created: list[float] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Rated:
    """What a rated match's end changed: per record seat the ``match_end.rating``, and the rows to stage."""

    changes: tuple[m.RatingChange, m.RatingChange]
    players: tuple[Player, ...] = ()
    results: tuple[RatedResult, ...] = ()


class Players:
    """Every loaded player, who each connection is, and the limits per address."""

    def __init__(self, storage: Storage, config: Config) -> None:
        self.storage = storage
        self.config = config
        self.by_key: dict[str, Player] = {}
        self.by_id: dict[str, Player] = {}
        self.of_peer: dict[int, Player] = {}
        self._budgets: dict[str, _AddressBudget] = {}
        # Players whose quick-match game ended by their disconnection: penalised by the queue
        # (server/quickmatch.py) at its next pairing.
        self.quick_leavers: list[tuple[str, str]] = []  # (player id, its seat's address owner tag)
        self._board: tuple[float, list[m.LeaderboardEntry]] | None = None  # (read at, top 100)
        # Each asker's place, read once per board (a second): counting the players ahead of a low
        # place reads the whole ranked index, so a get_leaderboard flood must not repeat it.
        self._ranks: dict[str, int | None] = {}

    # ----- lookups -------------------------------------------------------------------------------
    def of(self, peer: int) -> Player | None:
        return self.of_peer.get(peer)

    def _keep(self, player: Player) -> Player:
        self.by_key[player.key_hash] = player
        self.by_id[player.player] = player
        return player

    def load(self, hashed: str) -> Player | None:
        found = self.by_key.get(hashed)
        if found is None:
            row = self.storage.load_player(hashed)
            found = None if row is None else self._keep(Player.from_row(row))
        return found

    def peek(self, player: str) -> Player | None:
        """The player with this public id, to *show* it (a profile): the loaded one, or a copy read
        from the database that is not kept — reading profiles must not fill the memory."""
        found = self.by_id.get(player)
        if found is None:
            row = self.storage.player_by_id(player)
            found = None if row is None else Player.from_row(row)
        return found

    def by_public(self, player: str) -> Player | None:
        """The player with this public id (loaded, or read from the database and kept: to change it)."""
        found = self.by_id.get(player)
        if found is None:
            row = self.storage.player_by_id(player)
            found = None if row is None else self._keep(Player.from_row(row))
        return found

    # ----- requests --------------------------------------------------------------------------------
    def identify(self, peer: int, owner: str, key: str, raw_name: str, now: float, wall: float,
                 commits: CommitQueue) -> Player:
        """§17 ``identify``: the checks in order (``already_identified``, ``bad_name``,
        ``too_many_players``), then the player (made on first use) is this connection's."""
        hashed = key_hash(key)
        current = self.of_peer.get(peer)
        if current is not None and current.key_hash != hashed:
            raise ProtocolError(ErrorCode.ALREADY_IDENTIFIED, "this connection is another player already; reconnect to change")
        name = clean_name(raw_name, self.config.name_deny)
        player = self.load(hashed)
        budget = self._take(owner, now, new=player is None)
        if player is None:
            budget.created.append(now)
            player = self._keep(Player(hashed, public_id(hashed), name, created=wall, updated=wall))
            commits.stage_player(hashed, player)
            log.info("player_created player={player}", player=player.player)
        elif player.name != name:
            player.name = name  # ``updated`` stays: it is the last rating change (time away, below)
            commits.stage_player(hashed, player)
        self.of_peer[peer] = player
        return player

    def rename(self, peer: int, owner: str, raw_name: str, now: float, wall: float, commits: CommitQueue) -> Player:
        player = self.of_peer.get(peer)
        if player is None:
            raise ProtocolError(ErrorCode.IDENTIFY_REQUIRED, "identify first")
        name = clean_name(raw_name, self.config.name_deny)
        self._take(owner, now, new=False)
        if player.name != name:
            player.name = name  # ``updated`` stays: it is the last rating change (time away, below)
            commits.stage_player(player.key_hash, player)
        return player

    def _take(self, owner: str, now: float, *, new: bool) -> _AddressBudget:
        """One identify from the address's bucket (and room for a new player if ``new``), or ``too_many_players``."""
        config = self.config
        burst = float(config.identifies_per_address)
        budget = self._budgets.get(owner)
        if budget is None:
            budget = self._budgets[owner] = _AddressBudget(burst, now)
        tokens = min(burst, budget.tokens + (now - budget.at) * burst / config.identify_window)
        budget.at = now
        budget.tokens = tokens
        cutoff = now - config.new_player_window
        if budget.created and budget.created[0] <= cutoff:
            budget.created = [t for t in budget.created if t > cutoff]
        if tokens < 1.0:
            raise ProtocolError(
                ErrorCode.TOO_MANY_PLAYERS,
                f"your address identified too often (at most {config.identifies_per_address} per "
                f"{config.identify_window:g} s); try again shortly",
            )
        if new and len(budget.created) >= config.new_players_per_address:
            raise ProtocolError(
                ErrorCode.TOO_MANY_PLAYERS,
                f"your address made {config.new_players_per_address} new players in "
                f"{config.new_player_window / 3600:g} h; use an existing player key",
            )
        budget.tokens = tokens - 1.0
        return budget

    def peer_lost(self, peer: int) -> None:
        self.of_peer.pop(peer, None)

    # ----- ratings (Room.store at a rated match's end) -------------------------------------------------
    def rate(self, match_id: str, ids: tuple[str, str], outcome: Outcome, wall: float, *,
             same_address: bool = False) -> Rated | None:
        """Both players' Glicko-2 update for one finished rated match (a rating period of one game).

        ``ids`` are the public ids by record seat. A void match, one past the pair limit, or one
        whose two seats were taken from one address (``same_address``: the quick match's rule
        against one person's two keys, applied to rated rooms by code too) changes nothing and
        says why; ``None`` if a player cannot be found (nothing to rate).
        """
        a, b = self.by_public(ids[0]), self.by_public(ids[1])
        if a is None or b is None or a is b:
            return None
        pair = (a, b)
        if outcome.reason is Reason.VOID:
            return Rated((_unchanged(a, "void"), _unchanged(b, "void")))
        if same_address:
            return Rated((_unchanged(a, "same_address"), _unchanged(b, "same_address")))
        config = self.config
        since = wall - config.rated_pair_window
        if self.storage.pair_results(a.player, b.player, since) >= config.rated_pair_limit:
            return Rated((_unchanged(a, "pair_limit"), _unchanged(b, "pair_limit")))
        scores = (0.5, 0.5) if outcome.winner is None else ((1.0, 0.0) if outcome.winner == 0 else (0.0, 1.0))
        before = (a.rating, b.rating)
        # Time away widens each player's own deviation first (lichess: 0.21436 rating periods a day
        # since its last rated game, ``updated``); the opponent counts with its stored rating.
        away = (glicko2.periods_between(a.updated, wall), glicko2.periods_between(b.updated, wall))
        after = (glicko2.update(before[0], [(before[1], scores[0])], periods=away[0]),
                 glicko2.update(before[1], [(before[0], scores[1])], periods=away[1]))
        changes: list[m.RatingChange] = []
        results: list[RatedResult] = []
        for rs, player in enumerate(pair):
            score = scores[rs]
            player.rating = after[rs]
            player.games += 1
            if score == 1.0:
                player.wins += 1
            elif score == 0.0:
                player.losses += 1
            else:
                player.draws += 1
            player.updated = wall
            word = "win" if score == 1.0 else "loss" if score == 0.0 else "draw"
            results.append(RatedResult(match_id, player.player, pair[1 - rs].player, word, before[rs].value,
                                       after[rs].value, wall))
            changes.append(m.RatingChange(
                round(before[rs].value, 1), round(after[rs].value, 1), round(after[rs].value - before[rs].value, 1),
                round(after[rs].deviation, 1), glicko2.provisional(after[rs]),
            ))
        return Rated((changes[0], changes[1]), pair, tuple(results))

    # ----- profile and leaderboard -----------------------------------------------------------------------
    def profile(self, player: Player, rid: m.RequestId | None) -> m.Profile:
        recent = []
        for r in self.storage.recent_results(player.player, RECENT):
            opponent = self.peek(r.opponent)
            recent.append(m.RecentResult(r.match_id, opponent.display if opponent is not None else f"?#{r.opponent[:4]}",
                                         r.result, round(r.after - r.before, 1), round(r.at, 3)))
        return m.Profile(player.player, player.display, player.rating_info(), player.games, player.wins,
                         player.losses, player.draws, recent, rid)

    def leaderboard(self, me: Player | None, rid: m.RequestId | None, now: float) -> m.Leaderboard:
        """The top 100 (read at most once per :data:`BOARD_TTL` seconds: every asker shares it) and
        the asker's place (read each time)."""
        bound = glicko2.RANKED_DEVIATION
        cached = self._board
        if cached is None or not cached[0] <= now < cached[0] + BOARD_TTL:
            top = [
                m.LeaderboardEntry(rank, row.player, f"{row.name}#{row.player[:4]}", round(row.rating, 1), row.games)
                for rank, row in enumerate(self.storage.leaderboard(LEADERBOARD, bound), 1)
            ]
            self._board = cached = (now, top)
            self._ranks = {}
        top = cached[1]
        mine = None
        if me is not None:
            if me.player in self._ranks:
                rank = self._ranks[me.player]
            else:
                rank = self._ranks[me.player] = self.storage.rank_of(me.player, bound)
            if rank is not None:
                mine = m.LeaderboardMe(rank, round(me.rating.value, 1))
        return m.Leaderboard(top, mine, rid)

    # ----- housekeeping ------------------------------------------------------------------------------------
    def reload(self, hashes: Iterable[str]) -> None:
        """A commit failed: these players go back to what the database holds (a new one is gone,
        and the connections it was identified on are no longer identified)."""
        for hashed in hashes:
            stale = self.by_key.pop(hashed, None)
            if stale is None:
                continue
            self.by_id.pop(stale.player, None)
            fresh = self.load(hashed)
            for peer, player in list(self.of_peer.items()):
                if player is stale:
                    if fresh is None:
                        del self.of_peer[peer]
                    else:
                        self.of_peer[peer] = fresh

    def sweep(self, now: float) -> None:
        """Forget players no connection is (they are read again when needed) and idle budgets."""
        held = {id(p) for p in self.of_peer.values()}
        for hashed, player in list(self.by_key.items()):
            if id(player) not in held:
                del self.by_key[hashed]
                self.by_id.pop(player.player, None)
        if self._board is not None and now >= self._board[0] + BOARD_TTL:
            self._board, self._ranks = None, {}  # a flood's places are not kept until the next asker
        config = self.config
        for owner, budget in list(self._budgets.items()):
            if budget.at <= now - max(config.identify_window, config.new_player_window):
                del self._budgets[owner]


def seating(env: Env, peer: int, *, rated: bool, against: Sequence[Seat] = ()) -> Player | None:
    """The player ``peer`` is, checked for a seat (§17): a rated room needs ``identify``, and one
    player cannot take both seats of a rated room (its own rating against itself)."""
    player = env.players.of(peer) if env.players is not None else None
    if rated:
        if player is None:
            raise ProtocolError(ErrorCode.IDENTIFY_REQUIRED, "a rated room needs identify first")
        if any(s.player == player.player for s in against):
            raise ProtocolError(ErrorCode.ALREADY_SEATED, "this player already sits in this room")
    return player


def sit(seat: Seat, player: Player | None) -> None:
    """Give ``seat`` its player's public face (``room`` shows it, §17); its name if it sent none."""
    if player is None:
        return
    seat.player = player.player
    seat.display = player.display
    seat.rating = round(player.rating.value, 1)
    seat.provisional = glicko2.provisional(player.rating)
    if not seat.name:
        seat.name = player.name


def _unchanged(player: Player, why: str) -> m.RatingChange:
    r = player.rating
    value = round(r.value, 1)
    return m.RatingChange(value, value, 0.0, round(r.deviation, 1), glicko2.provisional(r), why)
