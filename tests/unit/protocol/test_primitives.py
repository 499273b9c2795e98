"""Wire primitives: varint edges, length checks before allocation, utf-8 errors."""

from __future__ import annotations

import pytest

from aiokafka_lead.errors import DecodeError
from aiokafka_lead.protocol import primitives as p
from aiokafka_lead.protocol.messages import HeartbeatRequest, MetadataRequest


@pytest.mark.parametrize(
    ("value", "hexdata"),
    [(0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (300, "ac02"), (2**32 - 1, "ffffffff0f")],
)
def test_uvarint(value: int, hexdata: str) -> None:
    assert p.uvarint(value).hex() == hexdata
    assert p.read_uvarint(memoryview(bytes.fromhex(hexdata)), 0) == (value, len(hexdata) // 2)


@pytest.mark.parametrize("value", [0, -1, 1, -64, 63, 2**31 - 1, -(2**31)])
def test_varint_zigzag(value: int) -> None:
    data = p.varint(value)
    assert p.read_varint(memoryview(data), 0) == (value, len(data))


@pytest.mark.parametrize("value", [0, -1, 2**63 - 1, -(2**63)])
def test_varlong_zigzag(value: int) -> None:
    data = p.varlong(value)
    assert p.read_varlong(memoryview(data), 0) == (value, len(data))


def test_overlong_varint_is_rejected() -> None:
    with pytest.raises(DecodeError):
        p.read_uvarint(memoryview(b"\xff\xff\xff\xff\xff\x01"), 0)
    with pytest.raises(ValueError):
        p.uvarint(-1)


def test_lengths_are_checked_before_allocating() -> None:
    with pytest.raises(DecodeError):
        p.read_array_len(memoryview(b"\x7f\xff\xff\xff\x00"), 0)
    with pytest.raises(DecodeError):
        p.read_compact_array_len(memoryview(b"\xff\xff\xff\xff\x0f"), 0)
    with pytest.raises(DecodeError):
        p.read_bytes(memoryview(b"\x7f\xff\xff\xff"), 0)
    with pytest.raises(DecodeError):
        p.read_fixed_array(memoryview(b"\x00" * 8), 0, 3, "i", 4)


def test_bad_utf8_and_short_input_become_decode_errors() -> None:
    with pytest.raises(DecodeError):
        HeartbeatRequest.decode(b"\x00\x01\xff" + b"\x00" * 6, 0)
    with pytest.raises(DecodeError):
        MetadataRequest.decode(b"\x00\x00", 1)


def test_decode_accepts_any_buffer() -> None:
    data = HeartbeatRequest(group_id="g").encode(4)
    for buf in (data, bytearray(data), memoryview(data), memoryview(bytearray(data))):
        assert HeartbeatRequest.decode(buf, 4).group_id == "g"
