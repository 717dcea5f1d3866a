"""What ``--proxy-protocol`` costs a connection (issue 21, server/proxy_protocol.py).

Run: ``python benchmarks/bench_proxy.py [--runs 7] [--connections 2000]``.

Two figures, each the median of ``--runs`` passes:

* **the header alone**: µs to find, parse and check one v1 and one v2 header (``header_length`` +
  ``parse_header``: Twisted's parsers and the address check), in the process;
* **a real listener**: connections per second through a real server on loopback, each opening,
  saying ``hello`` and waiting for ``welcome``, ``--connections`` of them one after the other,
  with and without ``--proxy-protocol`` (the header sent by the client, as a balancer would),
  passes alternating so that the machine's noise falls on both alike.

Every pass checks what it measured: each header names its address, each connection was welcomed.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path

from mineduel.server.proxy_protocol import header_length, parse_header

V1 = b"PROXY TCP4 203.0.113.7 192.0.2.1 40000 47650\r\n"
V2 = (b"\r\n\r\n\x00\r\nQUIT\n\x21\x11" + struct.pack("!H", 12) + socket.inet_aton("203.0.113.7")
      + socket.inet_aton("192.0.2.1") + struct.pack("!HH", 40000, 47650))
HELLO = b'{"type":"hello","protocol":1,"client":"bench/1"}\n'


def header_us(header: bytes, n: int = 20000) -> float:
    start = time.perf_counter()
    for _ in range(n):
        size = header_length(header)
        assert size == len(header)
        source, _ = parse_header(header)
    elapsed = time.perf_counter() - start
    assert source is not None and getattr(source, "host", None) == "203.0.113.7"
    return elapsed / n * 1e6


def connections_per_second(proxy: bool, count: int, folder: Path) -> float:
    """Connections per second to a real server (a subprocess on a free port, as an operator runs it)."""
    import json
    import subprocess

    cmd = [sys.executable, "-m", "mineduel.server", "--port", "0", "--host", "127.0.0.1", "--no-discovery",
           "--db", str(folder / f"bench-{proxy}.sqlite3"), "--connection-rate", "1000000",
           "--max-connections-per-address", "100000", "--address-rate", "1000000", "--log-level", "error"]
    if proxy:
        cmd.append("--proxy-protocol")
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        line = ""
        while not line.startswith("{"):
            line = server.stdout.readline()
            if not line:
                raise RuntimeError("the server did not start")
        port = json.loads(line)["tcp"]
        start = time.perf_counter()
        for _ in range(count):
            with socket.create_connection(("127.0.0.1", port)) as sock:
                sock.sendall((V1 if proxy else b"") + HELLO)
                data = b""
                while b'"type":"welcome"' not in data:  # a ping may come first
                    chunk = sock.recv(4096)
                    if not chunk or b'"type":"error"' in data:
                        raise RuntimeError(f"no welcome: {data[:120]!r}")
                    data += chunk
        return count / (time.perf_counter() - start)
    finally:
        server.terminate()
        server.wait(10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--connections", type=int, default=2000)
    args = parser.parse_args(argv)
    v1 = statistics.median(header_us(V1) for _ in range(args.runs))
    v2 = statistics.median(header_us(V2) for _ in range(args.runs))
    print(f"header v1: {v1:.2f} us   header v2: {v2:.2f} us   (find + parse + check, median of {args.runs})")
    plain: list[float] = []
    proxied: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):
            plain.append(connections_per_second(False, args.connections, Path(tmp)))
            proxied.append(connections_per_second(True, args.connections, Path(tmp)))
    a, b = statistics.median(plain), statistics.median(proxied)
    print(f"connect + hello + welcome, one after another: plain {a:.0f}/s, --proxy-protocol {b:.0f}/s "
          f"({(1 / b - 1 / a) * 1e6:+.0f} us per connection), median of {args.runs} x {args.connections}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
