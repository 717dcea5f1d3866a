"""Transport security: what the server listens on, its certificate's fingerprint, and how clients
check the certificate they are shown (docs/HOSTING.md, "Serving over TLS").

The server listens on Twisted endpoint strings (``tcp:47650``, ``ssl:47650:privateKey=key.pem:certKey=cert.pem``,
``tcp6:…``). A client connecting over TLS checks the server's certificate one of two ways:

* against the system's trust store and the host name (a certificate from a public CA, e.g. Let's Encrypt);
* against a *pin*: the SHA-256 fingerprint of the server's certificate, carried in the invite link
  (``mineduels://HOST:PORT/join/CODE?pin=HEX``), for a self-signed certificate shared among friends.

Either way a certificate that does not pass is a refused connection, never a plaintext one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from twisted.internet.abstract import isIPAddress, isIPv6Address
from twisted.internet.interfaces import IOpenSSLClientConnectionCreator
from zope.interface import implementer

from mineduel.shared.wire import links

TLS_KINDS = frozenset({"ssl"})
"""Endpoint types whose connections are encrypted."""

RAW_SOCKET_KINDS = frozenset({"tcp", "tcp6", "unix"})
"""Endpoint types whose connections are plain sockets (anything else is wrapped, see service.py)."""

BACKLOG_KINDS = frozenset({"tcp", "tcp6", "ssl", "unix"})
"""Endpoint types whose string takes ``backlog=``."""

PROXY_PREFIX = "haproxy:"
"""An endpoint string starting so reads a PROXY header first (``server/proxy_protocol.py``), as
Twisted's own ``haproxy:`` strings say; ``--proxy-protocol`` puts it before every ``--listen``."""


class ListenError(ValueError):
    """A ``--listen`` endpoint string that cannot be used; the message says why, for the host."""


def _split(description: str) -> list[tuple[str, str | None]]:
    """Fields of an endpoint string as ``(name_or_value, value_or_None)``, backslash escapes undone.

    The same grammar as Twisted's ``serverFromString``: ``:`` separates fields, the first ``=``
    in a field makes it a keyword, ``\\`` escapes the next character.
    """
    fields: list[tuple[str, str | None]] = []
    parts: list[str] = [""]
    escaped = False
    for char in description:
        if escaped:
            parts[-1] += char
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ":":
            fields.append((parts[0], parts[1]) if len(parts) > 1 else (parts[0], None))
            parts = [""]
        elif char == "=" and len(parts) == 1:
            parts.append("")
        else:
            parts[-1] += char
    fields.append((parts[0], parts[1]) if len(parts) > 1 else (parts[0], None))
    return fields


def escape(value: str) -> str:
    """``value`` as one field of an endpoint string (``:``, ``=`` and ``\\`` escaped)."""
    return value.replace("\\", "\\\\").replace(":", "\\:").replace("=", "\\=")


def default_endpoint(host: str, port: int) -> str:
    """The endpoint string for ``--host``/``--port``: ``tcp:PORT:interface=HOST`` (``tcp6`` for IPv6)."""
    kind = "tcp6" if ":" in host else "tcp"
    return f"{kind}:{port}:interface={escape(host)}"


@dataclass(frozen=True)
class ListenSpec:
    """One ``--listen`` endpoint, checked: what to hand Twisted and what the server says about it."""

    description: str  # the endpoint string as shown (``backlog=`` added when missing; ``haproxy:`` kept)
    kind: str  # "tcp", "ssl", ... (the endpoint under ``haproxy:``)
    certificate: bytes | None = None  # the PEM certificate served (TLS only)
    proxy: bool = False  # connections start with a PROXY header (behind a load balancer)

    @property
    def inner(self) -> str:
        """The endpoint string for serverFromString (without ``haproxy:``)."""
        return self.description[len(PROXY_PREFIX):] if self.proxy else self.description

    @property
    def tls(self) -> bool:
        return self.kind in TLS_KINDS

    @property
    def raw_socket(self) -> bool:
        return self.kind in RAW_SOCKET_KINDS

    @property
    def pin(self) -> str | None:
        """The certificate's SHA-256 fingerprint (lowercase hex), what pinned links carry."""
        return None if self.certificate is None else certificate_fingerprint(self.certificate)


def listen_spec(description: str, backlog: int) -> ListenSpec:
    """Check ``description`` enough to explain a mistake clearly; the certificate is read for TLS.

    Twisted parses the string again when it listens (``serverFromString``); this only finds what
    the server needs to know (is it TLS, which certificate) and adds the listen backlog.
    """
    text = description.strip()
    proxy = text.startswith(PROXY_PREFIX)
    if proxy:
        text = text[len(PROXY_PREFIX):]
    fields = _split(text)
    kind = fields[0][0]
    if not kind or fields[0][1] is not None or len(fields) < 2:
        raise ListenError(
            f"bad --listen {description!r}: expected TYPE:ARGS, e.g. tcp:47650 or ssl:47650:privateKey=key.pem:certKey=cert.pem"
        )
    if kind == "haproxy":
        raise ListenError(f"bad --listen {description!r}: haproxy: twice")
    keywords = {name: value for name, value in fields[1:] if value is not None}
    if kind in BACKLOG_KINDS and "backlog" not in keywords:
        text = f"{text}:backlog={backlog}"
    certificate = None
    if kind in TLS_KINDS:
        key_path = keywords.get("privateKey")
        if key_path is None:
            raise ListenError(
                f"bad --listen {description!r}: ssl needs privateKey=KEY.pem "
                "(and certKey=CERT.pem unless the key file holds both)"
            )
        cert_path = keywords.get("certKey", key_path)
        certificate = _read_certificate(cert_path, description)
        _read_file(key_path, "private key", description)
    return ListenSpec(PROXY_PREFIX + text if proxy else text, kind, certificate, proxy)


def _read_file(path: str, what: str, description: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ListenError(f"cannot read the {what} {path!r} for --listen {description!r}: {exc.strerror or exc}") from None


def _read_certificate(path: str, description: str) -> bytes:
    from cryptography import x509

    data = _read_file(path, "certificate", description)
    try:
        x509.load_pem_x509_certificate(data)
    except ValueError:
        raise ListenError(f"{path!r} (for --listen {description!r}) holds no PEM certificate") from None
    return data


def certificate_fingerprint(pem: bytes) -> str:
    """SHA-256 of the first certificate in ``pem`` (DER form), lowercase hex: the link's pin."""
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding

    der = x509.load_pem_x509_certificate(pem).public_bytes(Encoding.DER)
    return hashlib.sha256(der).hexdigest()


def make_endpoint(reactor: Any, spec: ListenSpec) -> Any:
    """``serverFromString`` for ``spec``, its errors (a key that does not fit the certificate…) as
    :class:`ListenError`; with ``proxy``, wrapped to read a PROXY header first (server/proxy_protocol.py)."""
    from twisted.internet.endpoints import serverFromString

    try:
        endpoint = serverFromString(reactor, spec.inner)
    except Exception as exc:  # noqa: BLE001 - Twisted raises many kinds for a bad string or file
        raise ListenError(f"bad --listen {spec.description!r}: {exc}") from None
    if spec.proxy:
        from mineduel.server.proxy_protocol import ProxyEndpoint

        return ProxyEndpoint(reactor, endpoint)
    return endpoint


# ----- clients ------------------------------------------------------------------------------------------------


@implementer(IOpenSSLClientConnectionCreator)
class PinnedCertificate:
    """Client TLS that accepts exactly one certificate: the one whose SHA-256 is ``pin``.

    Neither the trust store nor the host name is consulted: the pin, shared with the invite
    link, is what names the server. Anything else fails the handshake (the connection closes).
    """

    def __init__(self, hostname: str, pin: str) -> None:
        from OpenSSL import SSL
        from twisted.internet.ssl import CertificateOptions, TLSVersion

        self.pin = links.normalise_pin(pin)
        self._sni = None if isIPAddress(hostname) or isIPv6Address(hostname) else hostname.encode("idna")
        self._context = CertificateOptions(raiseMinimumTo=TLSVersion.TLSv1_2).getContext()
        self._context.set_verify(SSL.VERIFY_PEER, self._verify)

    def _verify(self, connection: Any, certificate: Any, errno: int, depth: int, ok: int) -> bool:
        if depth > 0:  # the chain above the server's own certificate does not matter: the leaf is pinned
            return True
        from cryptography.hazmat.primitives.serialization import Encoding

        der = certificate.to_cryptography().public_bytes(Encoding.DER)
        return hashlib.sha256(der).hexdigest() == self.pin

    def clientConnectionForTLS(self, tlsProtocol: Any) -> Any:  # Twisted names it
        from OpenSSL import SSL

        connection = SSL.Connection(self._context, None)
        connection.set_app_data(tlsProtocol)
        if self._sni is not None:
            connection.set_tlsext_host_name(self._sni)
        return connection


def client_tls(hostname: str, pin: str | None = None) -> Any:
    """How a client checks the server: the pinned certificate, or the system trust store and host name."""
    if pin is not None:
        return PinnedCertificate(hostname, pin)
    from twisted.internet.ssl import optionsForClientTLS

    return optionsForClientTLS(hostname)


def wrap_client_endpoint(endpoint: Any, hostname: str, pin: str | None) -> Any:
    """``endpoint`` with TLS on top, checked as :func:`client_tls` says."""
    from twisted.internet.endpoints import wrapClientTLS

    return wrapClientTLS(client_tls(hostname, pin), endpoint)


def is_tls_refusal(reason: Any) -> bool:
    """Whether a lost connection's ``Failure`` is a failed TLS handshake (bad certificate, not TLS at all…)."""
    try:
        from OpenSSL import SSL
    except ImportError:  # pragma: no cover - TLS is a dependency
        return False
    check: Callable[..., Any] | None = getattr(reason, "check", None)
    return check is not None and check(SSL.Error) is not None
