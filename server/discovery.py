"""LAN discovery over UDP (docs/PROTOCOL.md, "LAN discovery").

A client sends the datagram ``{"type":"discover","protocol":1}`` to the server's UDP port
(broadcast ``255.255.255.255`` on a LAN, or any host directly); every server answers the
sender with ``{"type":"server","protocol":1,"name":…,"version":…,"port":TCP,"open_rooms":N,"tls":B}``
(and ``"pin"``, the certificate's SHA-256, when ``tls`` is true).
Anything else (another ``protocol``, none, ``"1"``) is ignored (no reply, so the port cannot be
used to amplify traffic: a reply is never more than a few times the request and only goes to a
well-formed request's sender).

:func:`discover` is the client half; the game client reuses it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.protocol import DatagramProtocol
from twisted.logger import Logger

from mineduel.shared.wire import links, names

log = Logger(namespace="mineduel.discovery")

MAX_DATAGRAM = 512


def request_datagram() -> bytes:
    return json.dumps({"type": "discover", "protocol": names.PROTOCOL_VERSION}, separators=(",", ":")).encode()


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
            self.transport.write(json.dumps(reply, separators=(",", ":")).encode(), addr)
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
            server = FoundServer(
                host=addr[0],
                port=int(msg["port"]),
                name=str(msg.get("name", "")),
                version=str(msg.get("version", "")),
                protocol=int(msg["protocol"]),
                open_rooms=int(msg.get("open_rooms", 0)),
                tls=tls,
                pin=pin,
            )
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
            return
        self.found[(server.host, server.port)] = server


def discover(
    reactor: Any,
    port: int = names.DEFAULT_UDP_PORT,
    timeout: float = 1.0,
    targets: Sequence[str] = ("255.255.255.255", "127.0.0.1"),
) -> Deferred[list[FoundServer]]:
    """Ask every server on the LAN (and this machine) to answer; the answers after ``timeout``.

    Each target gets one request; send failures (no route, no broadcast permission) are
    skipped, as TOOLCHAIN.md advises. Servers are listed by host and TCP port.
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
        done.callback(sorted(collector.found.values(), key=lambda s: (s.host, s.port)))

    reactor.callLater(timeout, finish)
    return done
