"""LAN discovery over UDP (docs/PROTOCOL.md §12, "LAN discovery").

A client sends the datagram ``{"type":"discover","protocol":1}`` to the server's UDP port
(broadcast ``255.255.255.255`` on a LAN, or any host directly); every server answers the
sender with ``{"type":"server","protocol":1,"name":…,"version":…,"port":TCP,"open_rooms":N,"tls":B,
"id":INSTANCE,"rooms":[{"room":CODE,"host":NAME},…]}`` (and ``"pin"``, the certificate's SHA-256,
when ``tls`` is true). ``id`` names this start of the server (a client that hears it twice, over
loopback and the LAN, lists it once); ``rooms`` are the rooms whose creator asked to be listed and
that wait for a player, newest first, at most :data:`MAX_LISTED`. A node of a cluster started with
``--front`` adds ``"front":{"host":…,"port":…,"tls":B,"pin":…}``: the address players dial for it
(issue 21). Anything else (another ``protocol``, none, ``"1"``) is ignored. The port cannot be used to amplify
traffic: an answer is never longer than :data:`AMPLIFICATION` times the request (rooms that do not
fit are left out; the rest is always sent) nor than :data:`MAX_REPLY` bytes, and only goes to a
well-formed request's sender; a client that wants the rooms pads its request (a ``pad`` string) to
:data:`REQUEST_SIZE` bytes.

:func:`discover` is the client half (the game client reuses it); :func:`merge` keeps one answer per
server — all nodes naming one front are one server, dialled at the front; :func:`front_address`
is what a client accepts as a front (anyone on the LAN may answer: docs/SECURITY.md).
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.protocol import DatagramProtocol
from twisted.logger import Logger

from mineduel.shared.wire import codec, links, names

log = Logger(namespace="mineduel.discovery")

MAX_DATAGRAM = 512  # the longest request answered
REQUEST_SIZE = 480  # what this client pads its request to, so that the rooms fit in the answer
AMPLIFICATION = 3  # an answer is at most this many times its request ...
MAX_REPLY = 1400  # ... and never more than this (one Ethernet frame)
MAX_LISTED = 8  # rooms named in one answer
INSTANCE = re.compile(r"[0-9a-f]{16}")
NAME_MAX = 32  # a player's name (PROTOCOL.md §4)
HOST_MAX = 253  # a front's host: a DNS name or an IP address, as ``moved`` names one (PROTOCOL.md §18)
_HOST = re.compile(r"[A-Za-z0-9._:-]{1,253}")


def request_datagram(*, pad: bool = True) -> bytes:
    """The discover request; padded to :data:`REQUEST_SIZE` bytes, so that an answer may name rooms."""
    base = {"type": "discover", "protocol": names.PROTOCOL_VERSION}
    plain = json.dumps(base, separators=(",", ":")).encode()
    if not pad:
        return plain
    filler = REQUEST_SIZE - len(plain) - len(',"pad":""')
    return json.dumps({**base, "pad": " " * filler}, separators=(",", ":")).encode()


def reply_datagram(answer: dict[str, Any], request_size: int) -> bytes:
    """The answer as sent: UTF-8 JSON no longer than ``AMPLIFICATION × request_size`` (and
    :data:`MAX_REPLY`), listed rooms dropped from the oldest until it fits; without any room it is
    sent whatever its size (a few hundred bytes: what every server always answered)."""
    budget = min(MAX_REPLY, AMPLIFICATION * request_size)
    rooms = list(answer.get("rooms", ()))[:MAX_LISTED]
    while True:
        data = json.dumps({**answer, "rooms": rooms}, separators=(",", ":"), ensure_ascii=False).encode()
        if len(data) <= budget or not rooms:
            return data
        rooms.pop()


def is_discover_request(msg: object) -> bool:
    """PROTOCOL.md §12: an object with ``type`` "discover" and ``protocol`` the integer 1 (other keys ignored).

    Any other datagram (another protocol number, none, ``"1"``, ``true``, ``1.0``) gets no answer:
    a client speaking another version must not be told of a server it cannot play on.
    """
    if not isinstance(msg, dict) or msg.get("type") != "discover":
        return False
    version = msg.get("protocol")
    return type(version) is int and version == names.PROTOCOL_VERSION


class DiscoveryServer(DatagramProtocol):
    """Answers discovery requests with this server's name, version, TCP port and open rooms."""

    def __init__(self, describe: Callable[[], dict[str, Any]]) -> None:
        self.describe = describe

    def datagramReceived(self, data: bytes, addr: tuple[str, int]) -> None:
        if len(data) > MAX_DATAGRAM:
            return
        try:
            msg = json.loads(data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return
        if not is_discover_request(msg):
            return
        if self.transport is None:  # not listening (any more)
            return
        reply = {"type": "server", "protocol": names.PROTOCOL_VERSION, **self.describe()}
        try:
            self.transport.write(reply_datagram(reply, len(data)), addr)
        except OSError as exc:  # e.g. no route back
            log.warn("discovery reply to {addr} failed: {exc}", addr=addr, exc=exc)


@dataclass(frozen=True)
class FoundServer:
    """One answer to :func:`discover`."""

    host: str
    port: int
    name: str
    version: str
    protocol: int
    open_rooms: int
    tls: bool = False  # the advertised port speaks TLS ...
    pin: str | None = None  # ... with the certificate whose SHA-256 this is
    instance: str | None = None  # this start of the server (16 hex digits), if it says
    rooms: tuple[ListedRoom, ...] = ()  # rooms waiting for a player, newest first
    via: str | None = None  # the node that answered, when ``host``/``port``/``tls``/``pin`` are its cluster's front


@dataclass(frozen=True)
class ListedRoom:
    """A room a discovery answer names: its code and its creator's name (may be empty)."""

    room: str
    host: str
    watchable: bool = True  # ``"watchable":false``: the room refuses spectators (issue 19, watch-privacy)


def listed_rooms(value: object) -> tuple[ListedRoom, ...]:
    """The ``rooms`` of an answer, each checked on its own: a malformed entry is skipped, and no more
    than :data:`MAX_LISTED` are read (anyone on the LAN may answer)."""
    if not isinstance(value, list):
        return ()
    rooms = []
    for entry in value[:MAX_LISTED]:
        if not isinstance(entry, dict):
            continue
        name = entry.get("host", "")
        if not isinstance(name, str) or len(name) > NAME_MAX or not name.isprintable():
            continue
        try:
            code = codec.room_code(entry.get("room"))
        except ValueError:
            continue
        rooms.append(ListedRoom(code, name, entry.get("watchable", True) is not False))  # only false counts
    return tuple(rooms)


def _is_loopback(host: str) -> bool:
    return host.startswith("127.") or host == "::1"


def front_address(value: object, sender: str) -> tuple[str, int, bool, str | None]:
    """The ``front`` of an answer from ``sender`` as ``(host, port, tls, pin)``, or ``ValueError``.

    Anyone on the LAN may answer and name any host (PROTOCOL.md §12, docs/SECURITY.md), so only a
    well-formed single address is taken: a host of ``A–Z a–z 0–9 . - _ :`` (no range, mask, wildcard
    or URL), a port 1–65535; an IP address that is unspecified, multicast or broadcast is refused,
    and a loopback one unless the answer itself came from this machine (a LAN peer must not point
    the player at a service of their own computer). A ``pin`` needs ``"tls":true``.
    """
    if not isinstance(value, dict):
        raise ValueError("'front' must be an object")
    host, port, tls, pin = value.get("host"), value.get("port"), value.get("tls", False), value.get("pin")
    if not isinstance(host, str) or not _HOST.fullmatch(host):
        raise ValueError("'front' host must be one host name or IP address")
    if type(port) is not int or not 0 < port < 65536:
        raise ValueError("'front' port must be 1-65535")
    if type(tls) is not bool:
        raise ValueError("'front' tls must be a boolean")
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        ip = None
        top = host.rstrip(".").rsplit(".", 1)[-1]  # a DNS name's last label has a letter: "10.1", "10.0.0.1-20" are not names
        if ":" in host or not any(c.isalpha() for c in top):
            raise ValueError("'front' host is not a valid address") from None
    if ip is None and (host.lower().rstrip(".") == "localhost" or host.lower().rstrip(".").endswith(".localhost")) \
            and not _is_loopback(sender):
        raise ValueError("only this machine may name a loopback front")
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:a.b.c.d is judged as a.b.c.d
    if ip is not None:
        if ip.is_unspecified or ip.is_multicast or ip == ipaddress.IPv4Address("255.255.255.255"):
            raise ValueError("'front' host must be one machine's address")
        if ip.is_loopback and not _is_loopback(sender):
            raise ValueError("only this machine may name a loopback front")
    if pin is not None:
        if not tls or not isinstance(pin, str):
            raise ValueError("a 'front' pin needs tls")
        pin = links.normalise_pin(pin)
    return host, port, tls, pin


def _fold(into: FoundServer, other: FoundServer) -> FoundServer:
    """Two nodes of one cluster (the same front): one entry, the rooms of both (each once, at most
    :data:`MAX_LISTED`), their open rooms added up."""
    codes = {r.room for r in into.rooms}
    rooms = (*into.rooms, *(r for r in other.rooms if r.room not in codes))[:MAX_LISTED]
    return replace(into, rooms=rooms, open_rooms=into.open_rooms + other.open_rooms)


def merge(answers: Sequence[FoundServer]) -> list[FoundServer]:
    """One entry per server: answers with the same ``instance`` are one server (heard over loopback
    and over the LAN); an answer without one (an older server) is merged by name and port only with
    a loopback answer (this machine, heard twice). The non-loopback address is kept: it is the one
    that works from another machine too. Then the answers naming the same front (``via`` set, the same
    ``host`` and ``port``) are one server, a cluster whose nodes each answered (:func:`_fold`).
    Sorted by host and port."""
    kept: list[FoundServer] = []
    for server in answers:
        for i, other in enumerate(kept):
            same = (server.instance is not None and server.instance == other.instance) or (
                server.instance is None and other.instance is None and (server.name, server.port) == (other.name, other.port)
                and (_is_loopback(server.host) or _is_loopback(other.host)))
            if same:
                if _is_loopback(other.host) and not _is_loopback(server.host):
                    kept[i] = server
                break
        else:
            kept.append(server)
    clusters: dict[tuple[str, int], int] = {}
    merged: list[FoundServer] = []
    for server in kept:
        if server.via is None:
            merged.append(server)
        elif (server.host, server.port) in clusters:
            i = clusters[server.host, server.port]
            merged[i] = _fold(merged[i], server)
        else:
            clusters[server.host, server.port] = len(merged)
            merged.append(server)
    return sorted(merged, key=lambda s: (s.host, s.port, s.via is not None))


class _Collector(DatagramProtocol):
    def __init__(self) -> None:
        self.found: dict[tuple[str, int], FoundServer] = {}

    def datagramReceived(self, data: bytes, addr: tuple[str, int]) -> None:
        try:
            msg = json.loads(data.decode("utf-8"))
            if msg.get("type") != "server":
                return
            tls = msg.get("tls") is True
            pin = links.normalise_pin(str(msg["pin"])) if tls and msg.get("pin") is not None else None
            instance = msg.get("id")
            host, port, via = addr[0], int(msg["port"]), None
            if "front" in msg:  # a cluster node: players dial the front (a malformed one drops the answer)
                host, port, tls, pin = front_address(msg["front"], addr[0])
                via = addr[0]
            server = FoundServer(
                host=host,
                port=port,
                name=str(msg.get("name", "")),
                version=str(msg.get("version", "")),
                protocol=int(msg["protocol"]),
                open_rooms=int(msg.get("open_rooms", 0)),
                tls=tls,
                pin=pin,
                instance=instance if isinstance(instance, str) and INSTANCE.fullmatch(instance) else None,
                rooms=listed_rooms(msg.get("rooms")),
                via=via,
            )
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
            return
        self.found[(addr[0], int(msg["port"]))] = server  # by who answered: a cluster's nodes are merged later


def discover(
    reactor: Any,
    port: int = names.DEFAULT_UDP_PORT,
    timeout: float = 1.0,
    targets: Sequence[str] = ("255.255.255.255", "127.0.0.1"),
) -> Deferred[list[FoundServer]]:
    """Ask every server on the LAN (and this machine) to answer; the answers after ``timeout``.

    Each target gets one request; send failures (no route, no broadcast permission) are
    skipped, as TOOLCHAIN.md advises. One entry per server (:func:`merge`), by host and TCP port.
    """
    collector = _Collector()
    listening = reactor.listenUDP(0, collector)
    listening.setBroadcastAllowed(True)
    for target in targets:
        try:
            listening.write(request_datagram(), (target, port))
        except OSError as exc:
            log.debug("discovery to {target} failed: {exc}", target=target, exc=exc)
    done: Deferred[list[FoundServer]] = Deferred()

    def finish() -> None:
        listening.stopListening()
        done.callback(merge(list(collector.found.values())))

    reactor.callLater(timeout, finish)
    return done
