"""Issue 16 item 1: the invite link's address is chosen from the interfaces, not a hostname lookup
that answers loopback (client/lan_address.py). One test per ranking rule, from given rows."""

from __future__ import annotations

import ipaddress

from mineduel.client.lan_address import (
    IPV4,
    IPV6,
    Interface,
    LanAddresses,
    choose,
    enumerate_interfaces,
    lan_addresses,
    parse_if_inet6,
)

LO = Interface("lo", IPV4, "127.0.0.1", 8, True, True)
LO6 = Interface("lo", IPV6, "::1", 128, True, True)


def v4(name: str, address: str, *, up: bool = True) -> Interface:
    return Interface(name, IPV4, address, 24, up, False)


def v6(name: str, address: str) -> Interface:
    return Interface(name, IPV6, address, 64, True, False)


def test_only_loopback_is_said_and_the_link_falls_back_to_127():
    found = choose([LO, LO6])
    assert found == LanAddresses((), True)
    assert found.best == "127.0.0.1"


def test_a_loopback_address_on_a_non_loopback_interface_is_still_loopback():
    assert choose([v4("eth0", "127.0.1.1")]).only_loopback


def test_a_private_lan_address_is_chosen_over_loopback():
    found = choose([LO, v4("wlan0", "192.168.1.23")])
    assert found.addresses == ("192.168.1.23",) and not found.only_loopback


def test_an_interface_that_is_down_is_not_offered():
    assert choose([v4("eth0", "192.168.1.5", up=False), v4("wlan0", "10.0.0.7")]).addresses == ("10.0.0.7",)


def test_virtual_interfaces_come_after_a_real_one_whatever_the_order_given():
    rows = [v4(name, f"172.17.0.{i + 1}") for i, name in enumerate(
        ("docker0", "veth12ab", "br-4f2e", "virbr0", "tun0", "tailscale0", "zt7nnig26"))]
    found = choose([*rows, v4("enp3s0", "192.168.0.10")])
    assert found.addresses[0] == "192.168.0.10"
    assert set(found.addresses[1:]) == {r.address for r in rows}


def test_a_private_address_comes_before_a_public_one_on_real_interfaces():
    assert choose([v4("eth1", "203.0.113.9"), v4("eth0", "192.168.1.5")]).addresses == ("192.168.1.5", "203.0.113.9")


def test_ipv6_unique_local_and_global_come_after_ipv4():
    found = choose([v6("eth0", "2001:db8::5"), v6("eth0", "fd00::2"), v4("eth0", "10.1.2.3")])
    assert found.addresses[0] == "10.1.2.3"
    assert set(found.addresses[1:]) == {"2001:db8::5", "fd00::2"}


def test_ipv6_link_local_is_never_offered_it_needs_a_zone():
    assert choose([v6("eth0", "fe80::1"), v6("eth0", "fe80::2%eth0")]).only_loopback


def test_ipv4_link_local_comes_last():
    found = choose([v4("eth0", "169.254.10.2"), v6("docker0", "fd00::9"), v4("wlan0", "192.168.4.4")])
    assert found.addresses == ("192.168.4.4", "fd00::9", "169.254.10.2")


def test_within_a_rank_the_default_route_source_comes_first():
    rows = [v4("eth0", "192.168.1.5"), v4("wlan0", "10.0.0.7")]
    assert choose(rows).addresses == ("192.168.1.5", "10.0.0.7")  # otherwise the system's order
    assert choose(rows, ["10.0.0.7"]).addresses == ("10.0.0.7", "192.168.1.5")


def test_the_default_route_through_a_vpn_does_not_beat_the_lan():
    found = choose([v4("tun0", "10.8.0.2"), v4("eth0", "192.168.1.5")], ["10.8.0.2"])
    assert found.addresses == ("192.168.1.5", "10.8.0.2")


def test_an_address_seen_twice_is_listed_once_and_garbage_is_skipped():
    rows = [Interface("", IPV4, "192.168.1.5"), v4("eth0", "192.168.1.5"), Interface("x", IPV4, "not-an-ip"),
            Interface("", IPV4, "0.0.0.0"), Interface("", IPV4, "224.0.0.1")]
    assert choose(rows).addresses == ("192.168.1.5",)


def test_proc_net_if_inet6_is_read_and_tentative_addresses_are_left_out():
    text = ("00000000000000000000000000000001 01 80 10 80       lo\n"
            "fe8000000000000000fc00fffe000001 04 40 20 80     eth0\n"
            "fd000000000000000000000000000002 04 40 00 82     eth0\n"
            "fd000000000000000000000000000003 04 40 00 c0     eth0\n"  # tentative (0x40)
            "garbage\n")
    rows = parse_if_inet6(text)
    assert [(r.name, r.address, r.prefix, r.loopback) for r in rows] == [
        ("lo", "::1", 128, True), ("eth0", "fe80::fc:ff:fe00:1", 64, False), ("eth0", "fd00::2", 64, False)]
    down = parse_if_inet6(text, lambda name: 0)
    assert choose(down).only_loopback  # every interface down


def test_this_machine_gives_something_sane():
    rows = enumerate_interfaces()
    assert rows, "at least loopback or the route source"
    for row in rows:
        ipaddress.ip_address(row.address)
    found = lan_addresses()
    assert found.only_loopback == (not found.addresses)
    for address in found.addresses:
        ip = ipaddress.ip_address(address)
        assert not ip.is_loopback and not (ip.version == 6 and ip.is_link_local)


def test_a_failing_lookup_is_only_loopback_not_a_crash():
    def broken() -> list[Interface]:
        raise OSError("no sockets")

    assert lan_addresses(broken, list) == LanAddresses((), True)
