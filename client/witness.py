"""The player's witness of each online match (docs/RECORD.md, ``mine-duel-witness/1``).

The server's record at the end can only be trusted as far as it agrees with what this client saw
while the match ran. So the client keeps, for every online match, what it was shown and what it
sent: the commitment shown before Ready (the room's ``next_commitment`` when Ready or Rematch was
pressed), the client seed it sent, its seat and seed index, the ``match_start`` fields, every plant
commitment that appeared in ``state.events``, the latest ``state.seq`` / ``state.transcript``, the
last transcript of the room's previous match (a rematch), and what ``match_end`` showed.

It lives beside the records, in ``<user data folder>/witnesses/<match_id>.json``, written
atomically (a temporary file renamed over the old one) at the start, after every ``state`` that
changes it (a new transcript or plant: at most one write per message, none when nothing changed)
and at the end. A seed is sent before its match exists: it is written first as
``witnesses/pending.json`` (server, room, seed, the commitment shown), so a client that crashes
between Ready and the start still knows, after a restart and ``resume``, which seed it sent. A
resumed match (same id) loads its file and goes on with it.

Nothing here raises for an ``OSError``: a write that fails is logged and reported once per match
(:meth:`WitnessKeeper.take_failure`: once, until a write works again); the match goes on and the
witness is kept in memory, so the in-game Verify still has it until the client stops.

Pure logic and files only (no pygame, no Twisted): the session feeds it the typed server messages.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

from mineduel.client.localfiles import NOTHING, read_json
from mineduel.client.records import WriteResult, classify
from mineduel.client.settings import default_data_dir
from mineduel.shared.wire.messages import MatchEnd, MatchStart, Room, State

log = logging.getLogger(__name__)

FORMAT = "mine-duel-witness/1"
FOLDER_NAME = "witnesses"
PENDING_NAME = "pending.json"
_MATCH_ID = re.compile(r"[0-9a-f]{16}")

WitnessJson: TypeAlias = dict[str, Any]
"""A witness as its JSON object (the format of docs/RECORD.md; ``shared/fairness/witness.py`` reads it)."""


def server_label(host: str, port: int) -> str:
    """``host:port`` as the witness names the server (``[v6]:port`` for an IPv6 address)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass(frozen=True, slots=True)
class SentSeed:
    """A client seed as sent with Ready or Rematch, before its match started (``pending.json``)."""

    server: str
    room: str
    client_seed: str
    commitment: str  # the room's next_commitment shown when the seed was sent
    previous: Mapping[str, str] | None = None  # {"match_id", "transcript"}: the room's match before, as seen

    def to_json(self) -> WitnessJson:
        return {
            "format": FORMAT + "+pending", "server": self.server, "room": self.room, "client_seed": self.client_seed,
            "commitment_before_ready": self.commitment,
            "previous": None if self.previous is None else dict(self.previous),
        }

    @classmethod
    def from_json(cls, data: object) -> SentSeed | None:
        if not isinstance(data, dict) or data.get("format") != FORMAT + "+pending":
            return None
        fields = [data.get(k) for k in ("server", "room", "client_seed", "commitment_before_ready")]
        if not all(isinstance(v, str) for v in fields):
            return None
        previous = _previous(data.get("previous"))
        server, room, seed, commitment = (str(v) for v in fields)
        return cls(server, room, seed, commitment, previous)


def _previous(value: object) -> dict[str, str] | None:
    if isinstance(value, dict) and isinstance(value.get("match_id"), str) and isinstance(value.get("transcript"), str):
        return {"match_id": value["match_id"], "transcript": value["transcript"]}
    return None


class LiveWitness:
    """One match's witness as it grows: :attr:`data` is its JSON object; :attr:`dirty` says it changed
    since it was last written."""

    def __init__(self, data: WitnessJson, *, dirty: bool) -> None:
        self.data = data
        self.dirty = dirty
        self._plant_seqs = {p["seq"] for p in data["plants"]}

    @classmethod
    def begin(cls, start: MatchStart, *, server: str, my_name: str | None, sent: SentSeed | None,
              previous: Mapping[str, str] | None) -> LiveWitness:
        """A new witness from ``match_start`` and the seed this client sent for it (if known)."""
        data: WitnessJson = {
            "format": FORMAT,
            "match_id": start.match_id,
            "room": start.room,
            "server": server,
            "seat": start.seat,
            "seed_index": start.my_seed_index,
            "client_seed": None if sent is None else sent.client_seed,
            "commitment_before_ready": None if sent is None else sent.commitment,
            "names": {"me": my_name, "opponent": start.opponent_name},
            "match_start": {
                "commitment": start.commitment,
                "client_seeds": list(start.client_seeds),
                "nonce": start.nonce,
                "first_player_rule": start.first_player_rule,
                "first": start.first,
                "turn_seconds": start.turn_seconds,
                "started": start.started,
            },
            "previous": None if previous is None else dict(previous),
            "plants": [],
            "transcript": None,
            "end": None,
        }
        return cls(data, dirty=True)

    @classmethod
    def resumed(cls, data: object, match_id: str) -> LiveWitness | None:
        """A witness read back from its file (a restarted client resuming ``match_id``), or ``None``
        when the file is not one of this match's witnesses."""
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("match_id") != match_id:
            return None
        plants = data.get("plants")
        if not (isinstance(plants, list) and all(isinstance(p, dict) and type(p.get("seq")) is int
                                                 and isinstance(p.get("commitment"), str) for p in plants)):
            return None
        transcript = data.get("transcript")
        if transcript is not None and not (isinstance(transcript, dict) and type(transcript.get("seq")) is int
                                           and isinstance(transcript.get("hash"), str)):
            return None
        if not isinstance(data.get("names"), dict) or not isinstance(data.get("match_start"), dict):
            return None
        return cls(data, dirty=False)

    # ----- what it knows --------------------------------------------------------------------------
    @property
    def match_id(self) -> str:
        return str(self.data["match_id"])

    @property
    def room(self) -> str:
        return str(self.data["room"])

    @property
    def server(self) -> str:
        return str(self.data["server"])

    @property
    def complete(self) -> bool:
        """It knows the seed this client sent and the commitment it was shown (else it cannot testify)."""
        return isinstance(self.data.get("client_seed"), str) and isinstance(self.data.get("commitment_before_ready"), str)

    def last_transcript(self) -> str | None:
        transcript = self.data.get("transcript")
        return transcript["hash"] if isinstance(transcript, dict) else None

    def to_json(self) -> WitnessJson:
        """A copy of its JSON object (the verifier's input; later messages do not change it)."""
        copy: WitnessJson = json.loads(json.dumps(self.data))
        return copy

    # ----- what the server shows ------------------------------------------------------------------------
    def saw_room(self, msg: Room) -> None:
        names = self.data["names"]
        if names.get("me") is None:
            names["me"] = msg.me.name
            self.dirty = True

    def saw_state(self, msg: State) -> None:
        """Every plant commitment in its events (by seq) and the latest transcript hash with its seq."""
        for event in msg.events:
            if event.action == "plant" and event.commitment is not None and event.seq not in self._plant_seqs:
                self._plant_seqs.add(event.seq)
                self.data["plants"].append({"seq": event.seq, "commitment": event.commitment})
                self.data["plants"].sort(key=lambda p: p["seq"])
                self.dirty = True
        seen = self.data.get("transcript")
        if seen is None or msg.seq > seen["seq"]:  # the first hash shown for a seq is the one kept
            self.data["transcript"] = {"seq": msg.seq, "hash": msg.transcript}
            self.dirty = True

    def saw_end(self, msg: MatchEnd) -> None:
        """What ``match_end`` showed (the first time: a repeated end after a resume changes nothing)."""
        if self.data.get("end") is None:
            end = {"result": msg.result.wire(), "reveal": msg.reveal.wire(), "turns": msg.turns, "elapsed": msg.elapsed}
            self.data["end"] = json.loads(json.dumps(end))  # as JSON holds it (lists, not the message's tuples)
            self.dirty = True


class WitnessStore:
    """The ``witnesses`` folder: one file per match and the pending seed."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = (default_data_dir() / FOLDER_NAME) if folder is None else Path(folder)

    def path(self, match_id: str) -> Path:
        if _MATCH_ID.fullmatch(match_id) is None:
            raise ValueError(f"not a match id: {match_id!r}")
        return self.folder / f"{match_id}.json"

    def load(self, match_id: str) -> object | None:
        """The JSON in ``<match_id>.json``, or ``None`` when there is none or it cannot be read (logged)."""
        return self._read(self.path(match_id))

    def save(self, data: WitnessJson, *, durable: bool = False) -> WriteResult:
        return self._write(self.path(str(data["match_id"])), data, durable=durable)

    def load_pending(self) -> SentSeed | None:
        return SentSeed.from_json(self._read(self.folder / PENDING_NAME))

    def save_pending(self, sent: SentSeed) -> WriteResult:
        return self._write(self.folder / PENDING_NAME, sent.to_json(), durable=True)

    def clear_pending(self) -> None:
        try:
            (self.folder / PENDING_NAME).unlink(missing_ok=True)
        except OSError as exc:
            log.warning("witness: cannot remove %s (%s)", self.folder / PENDING_NAME, exc)

    def _read(self, path: Path) -> object | None:
        # Any file at all (nested 100,000 deep, 1e400, binary): its JSON, or None and one log line (issue 15).
        data: object = read_json(path, "witness")
        return None if data is NOTHING else data

    def _write(self, target: Path, data: WitnessJson, *, durable: bool) -> WriteResult:
        """Write atomically (``durable``: also fsync, for what must survive a crash: the seed, start, end)."""
        text = json.dumps(data, ensure_ascii=False, indent=1) + "\n"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}-", suffix=".tmp", dir=self.folder)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write(text)
                    if durable:
                        handle.flush()
                        os.fsync(handle.fileno())
                os.replace(tmp, target)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            return WriteResult(None, classify(exc), f"{target}: {exc}")  # the keeper logs it
        return WriteResult(target)


class WitnessKeeper:
    """The session's witnesses: the seed sent last (pending until its match starts), the current
    match's :class:`LiveWitness`, its writes, and the first failed write of a match (told once)."""

    def __init__(self, store: WitnessStore | None, tell: Callable[[str], None] = lambda key: None) -> None:
        self.store = store
        self.tell = tell  # says a catalog key to the player (the session's notice)
        self.pending: SentSeed | None = None
        self.current: LiveWitness | None = None
        self.writes = 0  # files written (a test counts them: nothing changed, nothing written)
        self._failure: WriteResult | None = None
        self._told = False

    def seed_sent(self, server: str, room: str, seed: str, commitment: str) -> None:
        """Ready or Rematch carries ``seed``: keep it (on disk first) with the commitment shown."""
        current = self.current
        previous = None
        if current is not None and current.room == room and current.server == server:
            last = current.last_transcript()
            previous = None if last is None else {"match_id": current.match_id, "transcript": last}
        self.pending = SentSeed(server, room, seed, commitment, previous)
        if self.store is not None:
            self._note(self.store.save_pending(self.pending))
        self._tell_failure()

    def started(self, start: MatchStart, *, server: str, my_name: str | None) -> LiveWitness:
        """``match_start`` of a match this session did not show yet: its witness, resumed from its
        file (a restarted client) or begun from the seed sent for it."""
        store = self.store
        if store is not None:
            resumed = LiveWitness.resumed(store.load(start.match_id), start.match_id)
            if resumed is not None:
                self.current = resumed
                self._tell_failure()
                return resumed
        sent = self.pending
        if sent is None and store is not None:
            sent = store.load_pending()
        if sent is not None and (sent.room != start.room or sent.server != server):
            sent = None  # a seed sent to another room
        previous = None
        if start.first_player_rule == "swap":  # a rematch (O14): what this client last saw of the match before
            current = self.current
            if sent is not None and sent.previous is not None:
                previous = sent.previous
            elif current is not None and current.room == start.room and current.server == server:
                last = current.last_transcript()
                previous = None if last is None else {"match_id": current.match_id, "transcript": last}
        witness = LiveWitness.begin(start, server=server, my_name=my_name, sent=sent, previous=previous)
        self.current = witness
        self.pending = None
        if self.flush(durable=True) and store is not None:
            store.clear_pending()
        return witness

    def complete_json(self, match_id: str) -> WitnessJson | None:
        """The witness of ``match_id`` for the verifier, ``None`` unless it knows the seed it sent."""
        witness = self.for_match(match_id)
        return witness.to_json() if witness is not None and witness.complete else None

    def for_match(self, match_id: str) -> LiveWitness | None:
        current = self.current
        return current if current is not None and current.match_id == match_id else None

    def flush(self, *, durable: bool = False) -> bool:
        """Write the current witness if it changed (one write per message that changed it); ``True``
        when it is on disk. A failure is told once (:meth:`take_failure`)."""
        witness = self.current
        if witness is None or self.store is None:
            return False
        if not witness.dirty:
            return True
        result = self.store.save(witness.data, durable=durable)
        self.writes += 1
        self._note(result)
        if result.ok:
            witness.dirty = False
        self._tell_failure()
        return result.ok

    def _tell_failure(self) -> None:
        failure = self.take_failure()
        if failure is not None:
            self.tell(f"witness.failed.{failure.error}")

    def _note(self, result: WriteResult) -> None:
        if result.ok:
            self._told = False  # writing works (again): a later failure is news
            return
        if self._told or self._failure is not None:
            log.debug("witness: still cannot write (%s): %s", result.error, result.detail)
            return
        log.warning("witness: cannot write (%s): %s; the witness is kept in memory only", result.error, result.detail)
        self._failure = result

    def take_failure(self) -> WriteResult | None:
        """The first failed write not told yet; then nothing more until writing has worked again."""
        failure, self._failure = self._failure, None
        if failure is not None:
            self._told = True
        return failure
