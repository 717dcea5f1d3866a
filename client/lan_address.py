"""Which of this machine's addresses goes into an invite link (issue 16 item 1).

A hostname lookup (``gethostbyname_ex(gethostname())``) often answers only ``127.0.0.1``, and a
link to loopback reaches nobody but this computer. So the addresses come from the interfaces
themselves, and one pure function ranks them:

* :func:`choose` — given :class:`Interface` rows (name, family, address, prefix, up, loopback),
  every address a friend on the LAN could dial, best first, and whether only loopback exists;
* :func:`enumerate_interfaces` — this machine's rows, from the standard library only (no new
  dependency): on Linux ``socket.if_nameindex()`` with the ``SIOCGIFADDR`` / ``SIOCGIFNETMASK`` /
  ``SIOCGIFFLAGS`` ioctls for IPv4 and ``/proc/net/if_inet6`` for IPv6; elsewhere
  ``getaddrinfo(hostname)``; everywhere the source address of the default route, learned by
  ``connect`` on a UDP socket (which sends no packet);
* :func:`lan_addresses` — both together, never raising (a failure is "only loopback").

The ranking (best first): private IPv4 (RFC 1918) on an up, real interface; other IPv4 on a real
interface; IPv6 unique-local then global on a real interface; the same on a virtual interface
(containers, bridges, VPNs: ``docker0``, ``veth…``, ``br-…``, ``virbr…``, ``tun…``, ``tailscale…``,
``zt…``…); IPv4 link-local (169.254/16) last. IPv6 link-local (``fe80::``) is never offered: it
needs a zone (``%eth0``) that means nothing on the friend's machine. Within a rank the default
route's source comes first, then the order the system gave.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import struct
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

IPV4, IPV6 = "ipv4", "ipv6"
VIRTUAL_PREFIXES = ("docker", "veth", "br-", "virbr", "tun", "tap", "tailscale", "zt", "wg", "vboxnet", "vmnet", "lxcbr",
                    "lxdbr", "podman", "cni", "flannel", "utun", "vnet", "ham", "kube")
"""Interface names of containers, bridges and VPNs: an address there is rarely the one a friend dials."""

# Linux ioctls (linux/sockios.h) and flags (linux/if.h).
SIOCGIFFLAGS, SIOCGIFADDR, SIOCGIFNETMASK = 0x8913, 0x8915, 0x891B
IFF_UP, IFF_LOOPBACK = 0x1, 0x8
ROUTE_PROBES = (("192.0.2.1", socket.AF_INET), ("2001:db8::1", socket.AF_INET6))  # documentation ranges: never answered
PROC_INET6 = Path("/proc/net/if_inet6")
IFA_F_UNUSABLE = 0x08 | 0x40  # linux/if_addr.h: duplicate address detection failed, or still tentative
_RFC1918 = ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("172.16.0.0/12"), ipaddress.ip_network("192.168.0.0/16")


@dataclass(frozen=True, slots=True)
class Interface:
    """One address of one interface, as :func:`choose` ranks it."""

    name: str  # "" when the system does not say (getaddrinfo, the route probe)
    family: str  # IPV4 or IPV6
    address: str
    prefix: int | None = None  # netmask length, when known
    up: bool = True
    loopback: bool = False


@dataclass(frozen=True, slots=True)
class LanAddresses:
    """What an invite link can use: ``addresses`` best first; ``only_loopback`` when there is none
    (the friend must then be on this computer, and the link says ``127.0.0.1``)."""

    addresses: tuple[str, ...]
    only_loopback: bool

    @property
    def best(self) -> str:
        return self.addresses[0] if self.addresses else "127.0.0.1"


def is_virtual(name: str) -> bool:
    return name.lower().startswith(VIRTUAL_PREFIXES)


def _rank(row: Interface) -> int | None:
    """The rank of one row (lower is better), or ``None`` when a friend could never dial it."""
    try:
        ip = ipaddress.ip_address(row.address.split("%", 1)[0])
    except ValueError:
        return None
    if not row.up or row.loopback or ip.is_loopback or ip.is_unspecified or ip.is_multicast:
        return None
    virtual = 3 if is_virtual(row.name) else 0
    if isinstance(ip, ipaddress.IPv4Address):
        if ip.is_link_local:
            return 7
        if ip == ipaddress.IPv4Address("255.255.255.255"):
            return None
        private = any(ip in net for net in _RFC1918)
        return virtual + (0 if private else 1)
    if ip.is_link_local or ip.ipv4_mapped is not None:
        return None
    return virtual + 2  # unique-local (fc00::/7) and global alike: after IPv4


def choose(rows: Iterable[Interface], route_source: Sequence[str] = ()) -> LanAddresses:
    """Every dialable address of ``rows``, best first (see the module docstring), each once."""
    ranked: dict[str, tuple[int, int, int]] = {}
    for index, row in enumerate(rows):
        rank = _rank(row)
        if rank is None:
            continue
        address = row.address.split("%", 1)[0]
        key = (rank, 0 if address in route_source else 1, index)
        if address not in ranked or key < ranked[address]:
            ranked[address] = key
    ordered = sorted(ranked, key=ranked.__getitem__)
    return LanAddresses(tuple(ordered), not ordered)


# ----- this machine --------------------------------------------------------------------------------------------


def parse_if_inet6(text: str, flags_of: Callable[[str], int | None] = lambda name: None) -> list[Interface]:
    """Rows of Linux's ``/proc/net/if_inet6`` (``address(32 hex) index prefix scope flags name``, hex
    numbers); a tentative or duplicate address is left out. ``flags_of`` gives an interface's
    ``IFF_*`` flags (``None``: unknown, taken as up)."""
    rows = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 6 or len(parts[0]) != 32:
            continue
        try:
            address = str(ipaddress.IPv6Address(bytes.fromhex(parts[0])))
            prefix, address_flags = int(parts[2], 16), int(parts[4], 16)
        except ValueError:
            continue
        if address_flags & IFA_F_UNUSABLE:
            continue
        flags = flags_of(parts[5])
        up = True if flags is None else bool(flags & IFF_UP)
        loopback = parts[5] == "lo" if flags is None else bool(flags & IFF_LOOPBACK)
        rows.append(Interface(parts[5], IPV6, address, prefix, up, loopback))
    return rows


def _packed(name: str) -> bytes:
    return struct.pack("256s", name.encode()[:15])


def _linux_flags(name: str) -> int | None:
    import fcntl  # Unix only

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            return int(struct.unpack("H", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, _packed(name))[16:18])[0])
        except OSError:
            return None


def _linux_ipv4(name: str) -> Interface | None:
    import fcntl  # Unix only

    packed = _packed(name)
    flags = _linux_flags(name) or 0
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            address = socket.inet_ntoa(fcntl.ioctl(s.fileno(), SIOCGIFADDR, packed)[20:24])
        except OSError:  # no IPv4 address on this interface
            return None
        try:
            mask = fcntl.ioctl(s.fileno(), SIOCGIFNETMASK, packed)[20:24]
            prefix: int | None = bin(int.from_bytes(mask, "big")).count("1")
        except OSError:
            prefix = None
    return Interface(name, IPV4, address, prefix, bool(flags & IFF_UP), bool(flags & IFF_LOOPBACK))


def _linux_rows() -> list[Interface]:
    rows = [row for _, name in socket.if_nameindex() if (row := _linux_ipv4(name)) is not None]
    with contextlib.suppress(OSError):  # no IPv6 on this kernel
        rows += parse_if_inet6(PROC_INET6.read_text(), _linux_flags)
    return rows


def _hostname_rows() -> list[Interface]:
    rows = []
    try:
        infos = socket.getaddrinfo(socket.gethostname(), None, type=socket.SOCK_DGRAM)
    except (OSError, UnicodeError):
        return []
    for family, _type, _proto, _name, sockaddr in infos:
        if family in (socket.AF_INET, socket.AF_INET6):
            rows.append(Interface("", IPV4 if family == socket.AF_INET else IPV6, str(sockaddr[0])))
    return rows


def route_sources() -> list[str]:
    """The source address of the default route, per family: ``connect`` on UDP picks it and sends nothing."""
    found = []
    for target, family in ROUTE_PROBES:
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as s:
                s.connect((target, 9))
                found.append(str(s.getsockname()[0]))
        except OSError:  # no route in that family
            continue
    return found


def enumerate_interfaces() -> list[Interface]:
    """This machine's addresses (see the module docstring); the route sources come last, unnamed."""
    rows: list[Interface] = []
    if sys.platform.startswith("linux") and hasattr(socket, "if_nameindex"):
        try:
            rows = _linux_rows()
        except OSError:
            rows = []
    if not rows:
        rows = _hostname_rows()
    known = {r.address for r in rows}
    rows += [Interface("", IPV6 if ":" in a else IPV4, a) for a in route_sources() if a not in known]
    return rows


def lan_addresses(rows: Callable[[], list[Interface]] = enumerate_interfaces,
                  sources: Callable[[], list[str]] = route_sources) -> LanAddresses:
    """This machine's invite addresses; any failure to look counts as "only loopback"."""
    try:
        return choose(rows(), sources())
    except OSError:
        return LanAddresses((), True)
