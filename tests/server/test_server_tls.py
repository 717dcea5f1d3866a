"""Transport security (issue item 5): the server on Twisted endpoint strings, TLS with a pinned or
trusted certificate, links that say so, and clear refusals — never a fallback to plaintext.

A throw-away self-signed certificate is made per module with ``cryptography``; the pin a test
expects is computed here with the standard library (``ssl.PEM_cert_to_DER_cert`` + SHA-256), not
by the code under test. The servers run on loopback with real sockets (pytest-twisted) and their
rules on ``task.Clock``; the only waits are bounded waits for a socket to answer.
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import json
import ssl
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from hypothesis import given, settings
from hypothesis import strategies as st
from support.reliability import record_figure, scaled
from twisted.internet import defer
from twisted.internet import protocol as tprotocol
from twisted.internet.task import Clock, deferLater

from mineduel.client.net import tcp_connector
from mineduel.client.online_client import Conn, OnlineClient, OnlineServices
from mineduel.client.tokens import SavedSession, TokenStore
from mineduel.server import cli
from mineduel.server.client import TLSRefused, connect
from mineduel.server.config import Config
from mineduel.server.discovery import discover
from mineduel.server.net import ServerFactory
from mineduel.server.service import start_server
from mineduel.server.session import ServerCore
from mineduel.server.storage import MemoryStorage
from mineduel.server.tls import ListenError, default_endpoint, listen_spec
from mineduel.shared.wire import bots, codec, links, names
from mineduel.shared.wire.messages import Error, ServerMessage

WRONG_PIN = "00" * 32


def _reactor() -> Any:
    from twisted.internet import reactor

    return reactor


def _make_certificate(folder: Path, name: str = "localhost") -> tuple[Path, Path, str]:
    """A self-signed certificate for ``name``, 127.0.0.1 and ::1: (cert path, key path, expected pin)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName(name),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    x509.IPAddress(ipaddress.ip_address("::1")),
                ]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert_pem)
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    # The expected pin, by the standard library: PEM -> DER -> SHA-256.
    pin = hashlib.sha256(ssl.PEM_cert_to_DER_cert(cert_pem.decode("ascii"))).hexdigest()
    return cert_path, key_path, pin


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    return _make_certificate(tmp_path_factory.mktemp("tls"))


def _ssl(port: int, cert: Path, key: Path) -> str:
    return f"ssl:{port}:interface=127.0.0.1:privateKey={key}:certKey={cert}"


class TlsServer:
    """A server whose first listener is TLS (and, optionally, a plain second one)."""

    def __init__(self, tmp_path: Path, certificate: tuple[Path, Path, str], *extra: str, udp: bool = False) -> None:
        cert, key, self.pin = certificate
        self.clock = Clock()
        self.clock.advance(1_700_000_000)
        config = Config(
            listen=(_ssl(0, cert, key), *extra), udp_port=0 if udp else None, host="127.0.0.1", db=str(tmp_path / "s.db"),
            name="TLS server", public_host="127.0.0.1", rate_per_second=1e6, rate_burst=1e6,
        )
        self.handle = start_server(_reactor(), config, clock=self.clock)
        self.clock.advance(0)

    async def client(self, name: str = "tls/1", pin: str | None = None) -> Any:
        c = await connect(_reactor(), "127.0.0.1", self.handle.port, name, tls=True, pin=self.pin if pin is None else pin)
        welcome = await c.hello()
        assert welcome["type"] == "welcome"
        return c


@pytest_twisted.async_yield_fixture
async def tls_server(tmp_path, certificate):
    s = TlsServer(tmp_path, certificate)
    yield s
    await s.handle.stop()


async def _bounded(d: defer.Deferred, seconds: float = 5.0) -> Any:
    """``d``'s result, or a test failure after ``seconds`` (a bounded wait for a socket)."""
    return await d.addTimeout(seconds, _reactor())


# ----- serving over TLS ----------------------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_tls_clients_with_the_right_pin_play_hello_create_room_and_join(tls_server):
    """O1 over TLS: two pinned clients create and join a room; the server reports TLS and the same pin as ours."""
    assert tls_server.handle.tls and tls_server.handle.pin == tls_server.pin
    a = await tls_server.client("ann/1")
    b = await tls_server.client("bob/1")
    created = await a.request("create_room", name="Ann", client_seed="seed-a")
    joined = await b.request("join", room=created["room"], name="Bob", client_seed="seed-b")
    assert joined["room"] == created["room"] and joined["token"] != created["token"]
    room = await a.wait_for("room", pred=lambda m: m.get("opponent") is not None)
    assert room["opponent"]["name"] == "Bob"
    await a.close()
    await b.close()


@pytest.mark.reliability
@pytest_twisted.ensureDeferred
async def test_many_requests_over_tls_all_arrive_encrypted(tls_server):
    """Every reply, not only the first, goes through TLS (a write that bypassed it would break the stream)."""
    a = await tls_server.client()
    code = (await a.request("create_room", client_seed="a"))["room"]
    rounds = scaled(20)
    for _ in range(rounds):
        reply = await _bounded(defer.ensureDeferred(a.request("peek", room=code)))
        assert reply["type"] == "room_info" and reply["room"] == code
    assert a.connected_
    record_figure("tls", "replies checked to arrive inside TLS", rounds + 2)
    await a.close()


class _RawRecorder(tprotocol.Protocol):
    """A plain TCP client: sends a hello line, keeps every byte the server sends back."""

    def __init__(self) -> None:
        self.received = b""
        self.closed: defer.Deferred[None] = defer.Deferred()

    def connectionMade(self) -> None:
        self.transport.write(codec.encode_message(bots.hello("plain/1")))

    def dataReceived(self, data: bytes) -> None:
        self.received += data

    def connectionLost(self, reason: Any = None) -> None:
        self.closed.callback(None)


@pytest.mark.reliability
@pytest_twisted.ensureDeferred
async def test_a_plaintext_client_on_the_tls_port_gets_no_game_data(tls_server):
    """A plain hello on the TLS port is not answered with a game message: the server closes with (at most) a TLS alert."""
    from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol

    raw = await connectProtocol(TCP4ClientEndpoint(_reactor(), "127.0.0.1", tls_server.handle.port), _RawRecorder())
    await _bounded(raw.closed)
    assert b"welcome" not in raw.received and b'"type"' not in raw.received
    assert raw.received[:1] in (b"", b"\x15")  # nothing, or a TLS alert record
    assert not any(conn.greeted for conn in tls_server.handle.core.conns.values())
    record_figure("tls", "plaintext hellos on the TLS port answered with game data", 0)


@pytest.mark.reliability
@pytest_twisted.ensureDeferred
async def test_a_wrong_pin_is_refused_before_anything_is_sent(tls_server):
    """A certificate that does not match the pin fails the handshake: TLSRefused, no hello reaches the server."""
    with pytest.raises(TLSRefused, match="certificate verify failed"):
        await _bounded(defer.ensureDeferred(connect(_reactor(), "127.0.0.1", tls_server.handle.port, tls=True, pin=WRONG_PIN)))
    assert not any(conn.greeted for conn in tls_server.handle.core.conns.values())
    record_figure("tls", "wrong-pin connections accepted", 0)
    ok = await tls_server.client()  # and the right one still works
    await ok.close()


@pytest_twisted.ensureDeferred
async def test_without_a_pin_a_self_signed_certificate_is_not_trusted(tls_server):
    """The default check is the system trust store: a friend's self-signed certificate needs its pin."""
    with pytest.raises(TLSRefused):
        await _bounded(defer.ensureDeferred(connect(_reactor(), "127.0.0.1", tls_server.handle.port, tls=True)))


class _PlainAnswer(tprotocol.Protocol):
    """A plaintext server: whatever arrives is answered with a JSON line (as a MINE DUEL server refusing garbage)."""

    def dataReceived(self, data: bytes) -> None:
        self.transport.write(codec.encode_message(Error("bad_json", "not a UTF-8 JSON line")))


@pytest_twisted.ensureDeferred
async def test_a_tls_client_refuses_a_plaintext_server(tmp_path):
    """TLS asked for, plaintext answered: TLSRefused, the connection never carries on in plaintext."""
    port = _reactor().listenTCP(0, tprotocol.Factory.forProtocol(_PlainAnswer), interface="127.0.0.1")
    try:
        with pytest.raises(TLSRefused):
            await _bounded(defer.ensureDeferred(connect(_reactor(), "127.0.0.1", port.getHost().port, tls=True, pin=WRONG_PIN)))
        listener = _Listener()
        tcp_connector(_reactor())("127.0.0.1", port.getHost().port, listener, tls=True, pin=WRONG_PIN)
        await listener.until("refused")
        assert [k for k, _ in listener.events] == ["refused"]
    finally:
        await port.stopListening()


@pytest_twisted.ensureDeferred
async def test_plain_and_tls_listeners_side_by_side(tmp_path, certificate):
    """Two --listen endpoints: TLS first (advertised), plain TCP second; both serve the same rooms."""
    server = TlsServer(tmp_path, certificate, "tcp:0:interface=127.0.0.1")
    try:
        tls_port, plain_port = server.handle.ports
        assert server.handle.port == tls_port != plain_port
        a = await server.client()
        created = await a.request("create_room", client_seed="a")
        b = await connect(_reactor(), "127.0.0.1", plain_port)
        await b.hello()
        peeked = await b.request("peek", room=created["room"])
        assert peeked["room"] == created["room"]
        await a.close()
        await b.close()
    finally:
        await server.handle.stop()


@pytest_twisted.ensureDeferred
async def test_lan_discovery_says_tls_and_carries_the_pin(tmp_path, certificate):
    """PROTOCOL §12: the answer has ``tls: true`` and the certificate's pin; a plain server says ``tls: false``."""
    server = TlsServer(tmp_path, certificate, udp=True)
    plain = start_server(_reactor(), Config(host="127.0.0.1", port=0, udp_port=0, db=":memory:"), clock=Clock())
    try:
        found = await discover(_reactor(), server.handle.udp_port, timeout=0.3, targets=["127.0.0.1"])
        assert [(f.port, f.tls, f.pin) for f in found] == [(server.handle.port, True, server.pin)]
        found = await discover(_reactor(), plain.udp_port, timeout=0.3, targets=["127.0.0.1"])
        assert [(f.port, f.tls, f.pin) for f in found] == [(plain.port, False, None)]
    finally:
        await server.handle.stop()
        await plain.stop()


def test_discovery_collector_ignores_a_pin_without_tls_and_drops_a_malformed_one():
    """A pin only counts with ``tls: true``; an answer with a malformed pin is dropped, not trusted half-way."""
    from mineduel.server.discovery import _Collector

    collector = _Collector()
    base = {"type": "server", "protocol": 1, "name": "x", "port": 1}
    collector.datagramReceived(json.dumps({**base, "tls": False, "pin": "ab" * 32}).encode(), ("10.0.0.1", 9))
    collector.datagramReceived(json.dumps({**base, "tls": True, "pin": "xyz"}).encode(), ("10.0.0.2", 9))
    collector.datagramReceived(json.dumps({**base, "tls": "yes"}).encode(), ("10.0.0.3", 9))
    found = {host: (s.tls, s.pin) for (host, _), s in collector.found.items()}
    assert found == {"10.0.0.1": (False, None), "10.0.0.3": (False, None)}


# ----- the game client over TLS -----------------------------------------------------------------------------------


class _Listener:
    """Records what a connector reports, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self.changed: defer.Deferred[None] = defer.Deferred()

    def _add(self, kind: str, payload: Any) -> None:
        self.events.append((kind, payload))
        d, self.changed = self.changed, defer.Deferred()
        d.callback(None)

    def link_open(self, link: Any) -> None:
        self._add("open", None)

    def link_message(self, link: Any, message: ServerMessage) -> None:
        self._add("message", message.TYPE.value)

    def link_garbage(self, link: Any, detail: str) -> None:
        self._add("garbage", detail)

    def link_failed(self, link: Any, detail: str) -> None:
        self._add("failed", detail)

    def link_closed(self, link: Any, detail: str) -> None:
        self._add("closed", detail)

    def link_refused(self, link: Any, detail: str) -> None:
        self._add("refused", detail)

    async def until(self, kind: str) -> None:
        while not any(k == kind for k, _ in self.events):
            await _bounded(self.changed)


@pytest_twisted.ensureDeferred
async def test_game_client_link_opens_only_after_the_pinned_handshake(tls_server):
    """client/net.py: over TLS the link opens after the certificate passed; then hello gets welcome."""
    listener = _Listener()
    link = tcp_connector(_reactor())("127.0.0.1", tls_server.handle.port, listener, tls=True, pin=tls_server.pin)
    await listener.until("open")
    link.send(bots.hello("game/1"))
    await listener.until("message")
    assert listener.events[:2] == [("open", None), ("message", "welcome")]
    link.close()
    await listener.until("closed")


@pytest_twisted.ensureDeferred
async def test_game_client_wrong_pin_is_refused_and_never_opens(tls_server):
    """client/net.py: a mismatching certificate is ``link_refused``; the link never opened, so nothing was sent."""
    listener = _Listener()
    tcp_connector(_reactor())("127.0.0.1", tls_server.handle.port, listener, tls=True, pin=WRONG_PIN)
    await listener.until("refused")
    assert [k for k, _ in listener.events] == ["refused"]


def _pump_client(client: OnlineClient, condition: Any) -> defer.Deferred[None]:
    async def run() -> None:
        for _ in range(5000):
            client.update()
            if condition():
                return
            await deferLater(_reactor(), 0.001, lambda: None)
        raise AssertionError("condition never held")

    return defer.ensureDeferred(run())


@pytest_twisted.ensureDeferred
async def test_online_client_shows_a_tls_invite_and_stores_tls_for_resume(tmp_path, tls_server):
    """Through a TLS server whose rooms still write plain links, the invite shown is mineduels:// with our pin,
    and the stored seat resumes over TLS with that pin (O12, O16)."""
    tokens = TokenStore(tmp_path / "profile")
    services = OnlineServices(connect=tcp_connector(_reactor()), tokens=tokens)
    client = OnlineClient(services, clock=lambda: 0.0)
    client.connect("127.0.0.1", tls_server.handle.port, then=client.create_room, tls=True, pin=tls_server.pin)
    await _pump_client(client, lambda: client.invite)
    link = links.parse_link(client.invite)
    assert (link.tls, link.pin, link.port, link.code) == (True, tls_server.pin, tls_server.handle.port, client.room_code)
    saved = tokens.load()
    assert saved is not None and (saved.tls, saved.pin) == (True, tls_server.pin)
    client.close()


@pytest_twisted.ensureDeferred
async def test_online_client_refusal_is_final_even_when_seated(tmp_path, tls_server):
    """A certificate that fails its check is online.error.tls_refused: no retry, no plaintext, the token kept."""
    tokens = TokenStore(tmp_path / "profile")
    client = OnlineClient(OnlineServices(connect=tcp_connector(_reactor()), tokens=tokens), clock=lambda: 0.0)
    client.resume_saved(SavedSession("127.0.0.1", tls_server.handle.port, "ABCDEF", "ab" * 32, tls=True, pin=WRONG_PIN))
    await _pump_client(client, lambda: client.conn == Conn.FAILED)
    assert client.error == "online.error.tls_refused" and client.next_retry_in() is None
    assert client.token == "ab" * 32


def test_saved_session_keeps_tls_and_refuses_a_malformed_pin(tmp_path):
    """The token file carries tls and pin; an old file without them is plain; a bad pin makes it unusable."""
    tokens = TokenStore(tmp_path)
    assert tokens.save(SavedSession("h", 1, "ABCDEF", "ab" * 32, tls=True, pin="CD" * 32))
    loaded = tokens.load()
    assert loaded is not None and (loaded.tls, loaded.pin) == (True, "cd" * 32)
    data = json.loads(tokens.path.read_text())
    del data["tls"], data["pin"]
    tokens.path.write_text(json.dumps(data))
    loaded = tokens.load()
    assert loaded is not None and (loaded.tls, loaded.pin) == (False, None)
    tokens.path.write_text(json.dumps({**data, "tls": True, "pin": "not-a-pin"}))
    assert tokens.load() is None


def test_opening_a_tls_link_connects_with_tls_and_its_pin(tmp_path):
    """The online screen (``--join``): a mineduels:// link connects over TLS with its pin, then peeks the room (O1)."""
    from support.client_driver import Driver

    calls: list[tuple[str, int, dict[str, Any]]] = []

    class _Silent:
        def send(self, message: Any) -> None:
            pass

        def close(self) -> None:
            pass

    def connector(host: str, port: int, listener: Any, **tls: Any) -> _Silent:
        calls.append((host, port, tls))
        return _Silent()

    services = OnlineServices(connect=connector, tokens=TokenStore(tmp_path / "t"))
    pin = "ef" * 32
    driver = Driver(tmp_path, language="en", join=f"mineduels://[2001:db8::5]:4443/join/abc234?pin={pin}",
                    online_services=lambda: services)
    assert calls == [("2001:db8::5", 4443, {"tls": True, "pin": pin})]
    # A server link typed (pasted) into "Connect to": the field keeps "?pin=" and the whole link.
    from mineduel.client.scenes.online import OnlineScene

    lobby = next(scene for scene in driver.app.stack.scenes if isinstance(scene, OnlineScene))
    lobby.address_field.set_text(f"mineduels://play.example.org:47650?pin={pin.upper()}")
    lobby._connect_typed(lobby.address_field.text)
    assert calls[-1] == ("play.example.org", 47650, {"tls": True, "pin": pin})
    lobby.address_field.set_text("192.168.1.5:47650")  # a plain address stays plain
    lobby._connect_typed(lobby.address_field.text)
    assert calls[-1] == ("192.168.1.5", 47650, {})


# ----- links --------------------------------------------------------------------------------------------------


def test_link_examples_written_out():
    """PROTOCOL §2 examples, spelled by hand."""
    pin = "0123456789abcdef" * 4
    assert links.invite_link("10.0.0.2", 47650, "ABC234") == "mineduel://10.0.0.2:47650/join/ABC234"
    assert links.invite_link("::1", 5, "ABC234", tls=True) == "mineduels://[::1]:5/join/ABC234"
    assert links.invite_link("play.example.org", 47650, "ABC234", tls=True, pin=pin) == (
        f"mineduels://play.example.org:47650/join/ABC234?pin={pin}"
    )
    assert links.invite_link("play.example.org", 47650, None, tls=True) == "mineduels://play.example.org:47650"
    colons = ":".join(pin[i : i + 2].upper() for i in range(0, 64, 2))  # as `openssl x509 -fingerprint -sha256` prints it
    assert links.parse_link(f"mineduels://[fe80::1]:47650/join/abc234/?pin={colons}") == links.InviteLink(
        "fe80::1", 47650, "ABC234", True, pin
    )


@pytest.mark.parametrize(
    "bad",
    [
        "mineduel://h:47650/join/ABC234?pin=" + "ab" * 32,  # a pin on a plain link is never dropped silently
        "mineduels://h:47650/join/ABC234?pin=" + "ab" * 31,  # too short
        "mineduels://h:47650/join/ABC234?pin=" + "zz" * 32,  # not hex
        "mineduels://h:47650/join/ABC234?pin=",
        "mineduels://h:47650/join/ABC234?sha=" + "ab" * 32,  # unknown parameter
        "mineduels://h:0/join/ABC234",
        "mineduels://h/join/ABC234",
        "https://h:47650/join/ABC234",
        "mineduels://h:47650/join/ABCDE0",  # 0 is not in the room code alphabet
    ],
)
def test_bad_links_are_refused(bad):
    with pytest.raises(ValueError):
        links.parse_link(bad)


def test_parse_invite_refuses_a_tls_link_rather_than_drop_tls():
    """The old three-field parser cannot say TLS, so a mineduels:// link is refused there, not downgraded."""
    with pytest.raises(ValueError, match="TLS"):
        links.parse_invite("mineduels://10.0.0.2:47650/join/ABC234")
    assert links.parse_invite("mineduel://10.0.0.2:47650/join/ABC234") == ("10.0.0.2", 47650, "ABC234")


_hosts = st.one_of(
    st.ip_addresses(v=4).map(str),
    st.ip_addresses(v=6).map(str),
    st.from_regex(r"[a-z][a-z0-9-]{0,20}(\.[a-z][a-z0-9-]{0,10}){0,3}", fullmatch=True),
)
_codes = st.none() | st.text(names.ROOM_CODE_ALPHABET, min_size=6, max_size=6)
_pins = st.none() | st.binary(min_size=32, max_size=32).map(bytes.hex)


LINK_EXAMPLES = scaled(300)


@pytest.mark.reliability
@settings(derandomize=True, max_examples=LINK_EXAMPLES, deadline=None)
@given(host=_hosts, port=st.integers(1, 65535), code=_codes, tls=st.booleans(), pin=_pins)
def test_links_round_trip_for_both_schemes(host, port, code, tls, pin):
    """PROTOCOL §2: every link written parses back to what was written (IPv6 in brackets, pins lowercase)."""
    pin = pin if tls else None
    link = links.invite_link(host, port, code, tls=tls, pin=pin)
    assert link.startswith("mineduels://" if tls else "mineduel://")
    assert links.parse_link(link) == links.InviteLink(host, port, code, tls, pin)
    record_figure("tls", "links round-tripped", 1)


# ----- --listen and its errors ------------------------------------------------------------------------------------


def test_listen_defaults_and_backlog():
    """--host/--port stay the default endpoint; the backlog is added unless given; IPv6 interfaces are escaped."""
    assert Config().endpoints() == ("tcp:47650:interface=0.0.0.0",)
    assert default_endpoint("::", 5) == "tcp6:5:interface=\\:\\:"
    assert listen_spec("tcp:0", 1024).description == "tcp:0:backlog=1024"
    assert listen_spec("tcp:0:backlog=7", 1024).description == "tcp:0:backlog=7"
    assert listen_spec("tcp6:0:interface=\\:\\:1", 99).description == "tcp6:0:interface=\\:\\:1:backlog=99"


def test_cli_collects_repeated_listen_options():
    config, _level = cli.parse_args(["--listen", "tcp:1", "--listen", "ssl:2:privateKey=k.pem"])
    assert config.listen == ("tcp:1", "ssl:2:privateKey=k.pem")
    assert cli.parse_args([])[0].endpoints() == (f"tcp:{names.DEFAULT_PORT}:interface=0.0.0.0",)


@pytest_twisted.ensureDeferred
async def test_server_serves_tcp6_endpoint_strings(tmp_path):
    """``tcp6:`` works (skipped where this machine has no IPv6 loopback)."""
    import socket

    try:
        probe = socket.socket(socket.AF_INET6)
        probe.bind(("::1", 0))
        probe.close()
    except OSError:
        pytest.skip("no IPv6 loopback here")
    handle = start_server(_reactor(), Config(listen=("tcp6:0:interface=\\:\\:1",), udp_port=None, db=":memory:"), clock=Clock())
    try:
        assert handle.tcp.getHost().host == "::1" and handle.port > 0 and not handle.tls
        c = await connect(_reactor(), "::1", handle.port)
        assert (await c.hello())["type"] == "welcome"
        await c.close()
    finally:
        await handle.stop()


@pytest.fixture
def quiet_cli(monkeypatch):
    """cli.main without installing the global log observer (these runs end before the reactor would start)."""
    from mineduel.server import clock, logs

    monkeypatch.setattr(logs, "begin", lambda *args, **kwargs: None)
    monkeypatch.setattr(clock, "install_steady_clock", lambda reactor: None)


@pytest.mark.parametrize(
    ("listen", "says"),
    [
        ("bogus:47650", "Unknown endpoint type"),
        ("47650", "expected TYPE:ARGS"),
        ("tcp:notaport", "bad --listen"),
        ("ssl:0", "ssl needs privateKey"),
        ("ssl:0:privateKey={missing}:certKey={missing}", "cannot read the certificate"),
        ("ssl:0:privateKey={missing}:certKey={cert}", "cannot read the private key"),
        ("ssl:0:privateKey={key}:certKey={key}", "holds no PEM certificate"),
        ("ssl:0:privateKey={other_key}:certKey={cert}", "bad --listen"),
    ],
)
def test_cli_bad_listen_exits_1_with_a_clear_message(tmp_path, certificate, quiet_cli, capsys, listen, says):
    """A bad endpoint, a missing or unreadable certificate or key, a key that does not fit: exit 1, a line, no traceback."""
    cert, key, _pin = certificate
    other = tmp_path / "other"
    other.mkdir()
    _other_cert, other_key, _ = _make_certificate(other)
    listen = listen.format(missing=tmp_path / "nope.pem", cert=cert, key=key, other_key=other_key)
    db = tmp_path / "server.db"
    assert cli.main(["--listen", listen, "--db", str(db), "--no-discovery"]) == 1
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and err.startswith("mine-duel-server: ")
    assert not db.exists()  # refused before anything was opened


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _can_listen(port: int) -> bool:
    import socket

    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen()
        except OSError:
            return False
        return True


@pytest_twisted.ensureDeferred
async def test_endpoints_are_all_checked_before_any_listens_and_a_busy_one_closes_the_rest(tmp_path):
    """A bad second endpoint string: nothing listens. A second port in use: the first is closed again."""
    from twisted.internet.error import CannotListenError

    first = _free_port()
    with pytest.raises(ListenError, match="Unknown endpoint type"):
        start_server(_reactor(), Config(listen=(f"tcp:{first}:interface=127.0.0.1", "bogus:1"), udp_port=None, db=":memory:"))
    assert _can_listen(first)
    busy = _reactor().listenTCP(0, tprotocol.Factory.forProtocol(tprotocol.Protocol), interface="127.0.0.1")
    try:
        both = (f"tcp:{first}:interface=127.0.0.1", f"tcp:{busy.getHost().port}:interface=127.0.0.1")
        with pytest.raises(CannotListenError):
            start_server(_reactor(), Config(listen=both, udp_port=None, db=":memory:"))
        for _ in range(3):  # Twisted closes a listening socket on the next reactor turn
            await deferLater(_reactor(), 0, lambda: None)
        assert _can_listen(first)
    finally:
        await busy.stopListening()


# ----- write_now must never bypass TLS ----------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_net_write_now_keeps_tls_replies_encrypted_without_the_service_wrapper(certificate):
    """ServerFactory behind a bare ``ssl:`` endpoint (as any caller of net.py could set it up): replies must stay TLS."""
    import secrets

    from twisted.internet.endpoints import serverFromString

    cert, key, pin = certificate
    factory = ServerFactory()
    core = ServerCore(clock=Clock(), randbytes=secrets.token_bytes, storage=MemoryStorage(), outbox=factory,
                      config=Config(rate_per_second=1e6, rate_burst=1e6), turns=_reactor())
    factory.core = core
    core.start()
    port = await serverFromString(_reactor(), _ssl(0, cert, key)).listen(factory)
    try:
        c = await connect(_reactor(), "127.0.0.1", port.getHost().port, tls=True, pin=pin)
        for _ in range(3):  # once the first reply is flushed, the next write takes the raw-socket path
            await _bounded(defer.ensureDeferred(c.request("peek", room="ABCDEF")).addErrback(lambda f: f.value))
        assert c.connected_
        await c.close()
    finally:
        core.stop("test")
        await port.stopListening()
