"""PROXY protocol behind a TCP load balancer (issue 21; server/proxy_protocol.py, HOSTING.md).

Real listeners on loopback (pytest-twisted) with the server's rules on ``task.Clock``: a client
that opens with a v1 or v2 header is counted against the address the header names (the
per-address connection limit of PROTOCOL.md §8 refuses the third connection of one forwarded
address while another forwarded address from the same loopback socket gets in); a connection
without a header, or with a garbled one, is refused before the game hears of it. The header
deadline runs on a ``task.Clock`` over a ``StringTransport``. The only waits are bounded waits
for a socket to answer.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import struct
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from twisted.internet import defer
from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport

from mineduel.server import cli
from mineduel.server.client import LineClient
from mineduel.server.config import Config
from mineduel.server.proxy_protocol import (
    HEADER_TIMEOUT,
    BadHeader,
    ProxyHeaderFactory,
    header_length,
    parse_header,
)
from mineduel.server.service import start_server
from mineduel.server.tls import ListenError, listen_spec
from mineduel.shared.wire import messages as m


def _reactor() -> Any:
    from twisted.internet import reactor

    return reactor


def v1(source: str, port: int = 40000, dest: str | None = None, dport: int = 47650) -> bytes:
    family = "TCP6" if ":" in source else "TCP4"
    dest = dest or ("2001:db8::1" if ":" in source else "192.0.2.1")
    return f"PROXY {family} {source} {dest} {port} {dport}\r\n".encode()


def v2(source: str, port: int = 40000, dest: str | None = None, dport: int = 47650, *, command: int = 1) -> bytes:
    """A v2 header built from the specification (version 2 = 0x2_, PROXY = 1 / LOCAL = 0, STREAM)."""
    six = ":" in source
    dest = dest or ("2001:db8::1" if six else "192.0.2.1")
    fam = socket.AF_INET6 if six else socket.AF_INET
    body = socket.inet_pton(fam, source) + socket.inet_pton(fam, dest) + struct.pack("!HH", port, dport)
    return (b"\r\n\r\n\x00\r\nQUIT\n" + bytes([0x20 | command, 0x21 if six else 0x11])
            + struct.pack("!H", len(body)) + body)


class Proxied(LineClient):
    """A line client that opens with ``header`` (what the balancer would send), bytes ``split`` at a time."""

    def __init__(self, header: bytes, split: int | None = None) -> None:
        super().__init__("proxied/1")
        self.header = header
        self.split = split

    def connectionMade(self) -> None:
        super().connectionMade()
        assert self.transport is not None
        step = self.split or len(self.header) or 1
        for i in range(0, len(self.header), step):
            self.transport.write(self.header[i:i + step])


class Server:
    def __init__(self, tmp_path: Path, *listen: str, proxy: bool = True, **config: Any) -> None:
        self.clock = Clock()
        self.clock.advance(1_700_000_000)
        settings = Config(listen=listen or ("tcp:0:interface=127.0.0.1",), proxy_protocol=proxy, udp_port=None,
                          db=str(tmp_path / "s.db"), public_host="127.0.0.1", **config)
        self.handle = start_server(_reactor(), settings, clock=self.clock)
        self.clock.advance(0)

    async def connect(self, header: bytes, split: int | None = None, port: int | None = None) -> Proxied:
        endpoint = TCP4ClientEndpoint(_reactor(), "127.0.0.1", port or self.handle.port, timeout=5)
        return await _bounded(connectProtocol(endpoint, Proxied(header, split)))

    def addresses(self) -> list[str]:
        return sorted(conn.info.address for conn in self.handle.core.conns.values())


async def _bounded(d: defer.Deferred[Any], seconds: float = 5.0) -> Any:
    return await d.addTimeout(seconds, _reactor())


async def _welcome(client: Proxied) -> m.Welcome:
    reply = await _bounded(defer.ensureDeferred(client.request(m.Hello(1, "proxied/1"))))
    assert isinstance(reply, m.Welcome)
    return reply


@pytest_twisted.async_yield_fixture
async def server(tmp_path):
    s = Server(tmp_path, max_connections_per_address=2)
    yield s
    await s.handle.stop()


# ----- a real listener ---------------------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_v1_and_v2_headers_name_the_address_the_per_address_limit_counts(server):
    """§8's 2 connections per address (set low here) count the forwarded address, not loopback's:
    two from 203.0.113.7 (v1, then v2) get in, a third is refused ``too_many_connections``, and
    198.51.100.9 (v2) and 2001:db8::/64 (v1) still get in over the same loopback socket address."""
    a = await server.connect(v1("203.0.113.7"))
    b = await server.connect(v2("203.0.113.7", 40001))
    await _welcome(a)
    await _welcome(b)
    third = await server.connect(v2("203.0.113.7", 40002))
    refused = await _bounded(third.wait_for(m.Error))
    assert refused.code == "too_many_connections"
    await _bounded(third.lost)
    other = await server.connect(v2("198.51.100.9"))
    six = await server.connect(v1("2001:db8::5"))
    await _welcome(other)
    await _welcome(six)
    assert server.addresses() == ["198.51.100.9", "2001:db8::5", "203.0.113.7", "203.0.113.7"]
    for c in (a, b, other, six):
        await c.close()


@pytest_twisted.ensureDeferred
async def test_a_header_in_pieces_and_a_hello_in_the_same_packet_both_work(server):
    """TCP may cut the header anywhere; the bytes after it are the game's (here: sent at once with it)."""
    piecewise = await server.connect(v2("203.0.113.8"), split=5)
    await _welcome(piecewise)
    together = await server.connect(v1("203.0.113.9") + b'{"type":"hello","protocol":1}\n')
    assert isinstance(await _bounded(together.wait_for(m.Welcome)), m.Welcome)
    assert server.addresses() == ["203.0.113.8", "203.0.113.9"]
    await piecewise.close()
    await together.close()


@pytest.mark.parametrize("header", [
    b"",  # no header: the client's hello comes first
    b"PROXY TCP4 not.an.ip 192.0.2.1 40000 47650\r\n",
    b"PROXY TCP4 203.0.113.7 192.0.2.1 port 47650\r\n",
    b"PROXY TCP4 203.0.113.7 192.0.2.1 99999 47650\r\n",
    b"PROXY TCP4 2001:db8::1 192.0.2.1 40000 47650\r\n",  # a v6 address said to be v4
    b"PROXY TCP9 203.0.113.7 192.0.2.1 40000 47650\r\n",
    b"PROXY " + b"9" * 200,  # no end within 107 bytes
    b"\r\n\r\n\x00\r\nQUIT\n\x21\x11\xff\xff",  # a v2 header announcing 64 KiB
    b"\r\n\r\n\x00\r\nQUIT\n\x31\x11\x00\x0c" + b"\x00" * 12,  # v2 with version 3
    b"GET / HTTP/1.1\r\n\r\n",
])
@pytest_twisted.ensureDeferred
async def test_a_missing_or_garbled_header_is_refused_before_the_game_hears_of_it(server, header):
    """No welcome, no connection counted against any address, the socket closed; the refusal is counted."""
    before = server.handle.listeners[0].factory.refusals
    client = await server.connect(header)
    if client.connected_:
        client.send(m.Hello(1, "no-header/1"))  # a direct client speaks first
    await _bounded(client.lost)
    assert not any(isinstance(x, m.Welcome) for x in client.typed)
    assert server.handle.core.conns == {}
    assert server.handle.listeners[0].factory.refusals == before + 1


@pytest_twisted.ensureDeferred
async def test_a_health_check_header_keeps_the_balancers_address(server):
    """v1 UNKNOWN and v2 LOCAL (the balancer's own check) name nobody: the connection is the balancer's."""
    unknown = await server.connect(b"PROXY UNKNOWN\r\n")
    local = await server.connect(v2("0.0.0.0", 0, "0.0.0.0", 0, command=0))
    await _welcome(unknown)
    await _welcome(local)
    assert server.addresses() == ["127.0.0.1", "127.0.0.1"]
    await unknown.close()
    await local.close()


@pytest_twisted.ensureDeferred
async def test_without_the_option_a_header_is_just_a_bad_line(tmp_path):
    """Off by default: a PROXY line is not a protocol line (bad_json), and the peer is the socket's."""
    s = Server(tmp_path, proxy=False)
    try:
        client = await s.connect(v1("203.0.113.7"))
        error = await _bounded(client.wait_for(m.Error))
        assert error.code == "bad_json"
        assert s.addresses() == ["127.0.0.1"]
        await client.close()
    finally:
        await s.handle.stop()


@pytest_twisted.ensureDeferred
async def test_one_haproxy_listener_beside_a_direct_one(tmp_path):
    """``--listen haproxy:tcp:…`` wraps that listener only: the balancer's port reads headers, the
    direct port (a node's address for ``moved``) does not."""
    s = Server(tmp_path, "haproxy:tcp:0:interface=127.0.0.1", "tcp:0:interface=127.0.0.1", proxy=False)
    try:
        behind, direct_port = s.handle.ports
        proxied = await s.connect(v2("198.51.100.4"), port=behind)
        direct = await s.connect(b"", port=direct_port)
        await _welcome(proxied)
        await _welcome(direct)
        assert s.addresses() == ["127.0.0.1", "198.51.100.4"]
        assert [spec.proxy for spec in s.handle.specs] == [True, False]
        await proxied.close()
        await direct.close()
    finally:
        await s.handle.stop()


def _certificate(folder: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "node")])
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(start).not_valid_after(start + datetime.timedelta(days=3650))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@pytest_twisted.ensureDeferred
async def test_tls_behind_the_header_the_balancer_passes_tls_through(tmp_path):
    """``ssl:`` with the PROXY protocol: the header in clear first, then the pinned TLS handshake;
    the forwarded address is counted."""
    from mineduel.server.tls import wrap_client_endpoint

    cert, key = _certificate(tmp_path)
    s = Server(tmp_path, f"ssl:0:interface=127.0.0.1:privateKey={key}:certKey={cert}")
    try:
        assert s.handle.tls and s.handle.specs[0].proxy
        plain = TCP4ClientEndpoint(_reactor(), "127.0.0.1", s.handle.port, timeout=5)

        client = Proxied(b"")
        client.secured = defer.Deferred()
        tls_endpoint = wrap_client_endpoint(_HeaderEndpoint(plain, v1("203.0.113.50")), "127.0.0.1", s.handle.pin)
        await _bounded(connectProtocol(tls_endpoint, client))
        await _bounded(client.secured)
        await _welcome(client)
        assert s.addresses() == ["203.0.113.50"]
        await client.close()
    finally:
        await s.handle.stop()


class _HeaderEndpoint:
    """A client endpoint that writes ``header`` on the raw connection before its protocol speaks
    (what a balancer's ``send-proxy`` does in front of a TLS client)."""

    def __init__(self, endpoint: Any, header: bytes) -> None:
        self.endpoint = endpoint
        self.header = header

    def connect(self, factory: Any) -> Any:
        header = self.header

        class Wrapping(Factory):
            def buildProtocol(self, addr: Any) -> Any:
                inner = factory.buildProtocol(addr)

                class First(Protocol):
                    def makeConnection(self, transport: Any) -> None:
                        transport.write(header)
                        inner.makeConnection(transport)

                    def dataReceived(self, data: bytes) -> None:
                        inner.dataReceived(data)

                    def connectionLost(self, reason: Any = None) -> None:
                        inner.connectionLost(reason)

                first = First()
                first.inner = inner  # type: ignore[attr-defined]
                return first

        d = self.endpoint.connect(Wrapping())
        return d.addCallback(lambda first: first.inner)


# ----- the header alone, on a fake clock -------------------------------------------------------------------------


class _Recorder(Protocol):
    def __init__(self) -> None:
        self.made = 0
        self.data = b""
        self.peer: Any = None
        self.lost = False

    def connectionMade(self) -> None:
        self.made += 1
        assert self.transport is not None
        self.peer = self.transport.getPeer()

    def dataReceived(self, data: bytes) -> None:
        self.data += data

    def connectionLost(self, reason: Any = None) -> None:
        self.lost = True


def _wrapped(clock: Clock) -> tuple[Any, _Recorder, StringTransport]:
    recorder = _Recorder()
    factory = ProxyHeaderFactory(Factory.forProtocol(lambda: recorder), clock=clock)
    proto = factory.buildProtocol(IPv4Address("TCP", "10.0.0.1", 5000))
    transport = StringTransport(peerAddress=IPv4Address("TCP", "10.0.0.1", 5000))
    proto.makeConnection(transport)
    return proto, recorder, transport


def test_the_game_is_connected_only_once_the_header_named_the_address():
    """Twisted's own wrapper connects at once (the peer would be the balancer's): this one waits."""
    clock = Clock()
    proto, recorder, transport = _wrapped(clock)
    proto.dataReceived(v1("203.0.113.7")[:10])
    assert recorder.made == 0
    proto.dataReceived(v1("203.0.113.7")[10:] + b"hello\n")
    assert recorder.made == 1 and recorder.peer == IPv4Address("TCP", "203.0.113.7", 40000)
    assert recorder.data == b"hello\n" and proto.getHost() == IPv4Address("TCP", "192.0.2.1", 47650)
    clock.advance(HEADER_TIMEOUT * 2)
    assert not transport.disconnecting


def test_no_header_within_the_deadline_is_cut_and_logged_once_per_interval():
    clock = Clock()
    proto, recorder, transport = _wrapped(clock)
    proto.dataReceived(b"PROXY TCP4 203.0.")
    clock.advance(HEADER_TIMEOUT - 0.01)
    assert not transport.disconnecting
    clock.advance(0.02)
    assert transport.disconnecting
    assert recorder.made == 0 and proto.factory.refusals == 1
    proto.connectionLost(None)
    assert not recorder.lost  # the game never heard of it, so it hears nothing of its end


def test_header_length_and_parse_refuse_what_is_no_header():
    assert header_length(b"PRO") is None and header_length(b"\r\n\r\n") is None
    assert header_length(v1("203.0.113.7")) == len(v1("203.0.113.7"))
    assert header_length(v2("2001:db8::1") + b"x") == 16 + 36
    for bad in (b"HELLO", b"\r\n\r\nX", b'{"type"'):
        with pytest.raises(BadHeader):
            header_length(bad)
    assert parse_header(v2("2001:db8::1"))[0] == IPv6Address("TCP", "2001:db8::1", 40000)
    assert parse_header(b"PROXY UNKNOWN\r\n") == (None, None)


def test_cli_flag_and_haproxy_listen_strings():
    config, _ = cli.parse_args(["--proxy-protocol", "--listen", "tcp:47650", "--listen", "haproxy:tcp:47651"])
    assert config.proxy_protocol
    assert config.endpoints() == ("haproxy:tcp:47650", "haproxy:tcp:47651")
    assert cli.parse_args([])[0].endpoints() == ("tcp:47650:interface=0.0.0.0",)
    spec = listen_spec("haproxy:tcp:47650", 1024)
    assert spec.proxy and spec.kind == "tcp" and spec.inner == "tcp:47650:backlog=1024"
    assert spec.description == "haproxy:tcp:47650:backlog=1024"
    with pytest.raises(ListenError):
        listen_spec("haproxy:haproxy:tcp:47650", 1024)
