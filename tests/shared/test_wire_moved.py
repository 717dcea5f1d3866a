"""``moved`` (PROTOCOL.md §18): another node of a cluster serves the room — read strictly, written back identically."""

from __future__ import annotations

import pytest

from mineduel.shared.wire import codec
from mineduel.shared.wire import messages as m

PIN = "5e3b6376c09108d3d716324acb1a4ce9ab711fe4b445197bff573df3f210620e"


@pytest.mark.parametrize("line", [
    '{"type":"moved","room":"NYTF23","host":"127.0.0.2","port":47650,"tls":false,"pin":null,"request":"resume","id":7}',
    '{"type":"moved","room":"NYTF23","host":"node-b.example.org","port":443,"tls":true,"pin":null,"request":"peek"}',
    f'{{"type":"moved","room":"NYTF23","host":"2001:db8::7","port":47650,"tls":true,"pin":"{PIN}"}}',
    '{"type":"moved","room":"NYTF23","host":"h","port":1,"tls":false,"pin":null,"request":"spectate","id":"x"}',
])
def test_a_moved_reads_and_writes_back_identically(line: str) -> None:
    message = codec.decode_server(line)
    assert isinstance(message, m.Moved)
    assert codec.encode_message(message) == line.encode() + b"\n"


def test_the_reply_names_the_request_and_echoes_its_id() -> None:
    moved = codec.decode_server(
        '{"type":"moved","room":"NYTF23","host":"127.0.0.2","port":47650,"tls":false,"pin":null,"request":"join","id":3}'
    )
    assert moved == m.Moved("NYTF23", "127.0.0.2", 47650, False, None, "join", 3)


@pytest.mark.parametrize(("fields", "why"), [
    ('"host":"","port":1,"tls":false,"pin":null', "host"),
    ('"host":"a b","port":1,"tls":false,"pin":null', "host"),
    ('"host":"[::1]","port":1,"tls":false,"pin":null', "host"),  # IPv6 without brackets
    ('"host":"' + "a" * 254 + '","port":1,"tls":false,"pin":null', "host"),
    ('"host":"a","port":0,"tls":false,"pin":null', "port"),
    ('"host":"a","port":65536,"tls":false,"pin":null', "port"),
    ('"host":"a","port":1.0,"tls":false,"pin":null', "port"),
    ('"host":"a","port":1,"tls":"yes","pin":null', "tls"),
    ('"host":"a","port":1,"tls":false,"pin":"' + PIN + '"', "pin"),  # a pin without TLS
    ('"host":"a","port":1,"tls":true,"pin":"' + PIN.upper() + '"', "pin"),
    ('"host":"a","port":1,"tls":true,"pin":"abc"', "pin"),
    ('"host":"a","port":1,"tls":false,"pin":null,"request":"ready"', "request"),  # never for other requests
    ('"host":"a","port":1,"tls":false,"pin":null,"id":4', "id"),  # an id without the request it answers
    ('"room":"NYTF2O","host":"a","port":1,"tls":false,"pin":null', "room"),
])
def test_a_hostile_moved_is_refused(fields: str, why: str) -> None:
    body = fields if fields.startswith('"room"') else '"room":"NYTF23",' + fields
    with pytest.raises(m.BadMessage) as caught:
        codec.decode_server('{"type":"moved",' + body + "}")
    assert why in str(caught.value) or why == "room"
