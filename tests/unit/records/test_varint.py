"""Zigzag varints: spec vectors, round trips, hostile input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiokafka_lead.errors import DecodeError
from aiokafka_lead.records.varint import (
    decode_varint,
    encode_varint,
    size_of_varint,
    varint_bytes,
)

VECTORS = [
    (0, "00"),
    (-1, "01"),
    (1, "02"),
    (-2, "03"),
    (63, "7e"),
    (64, "8001"),
    (8191, "fe7f"),
    (-8193, "818001"),
    (2**31 - 1, "feffffff0f"),
    (-(2**63), "ffffffffffffffffff01"),
]


@pytest.mark.parametrize(("value", "hex_"), VECTORS)
def test_vectors(value: int, hex_: str) -> None:
    out = bytearray()
    encode_varint(value, out)
    assert out.hex() == hex_
    assert varint_bytes(value).hex() == hex_
    assert size_of_varint(value) == len(out)
    assert decode_varint(bytes(out), 0) == (value, len(out))


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_round_trip(value: int) -> None:
    data = b"\xaa" + varint_bytes(value) + b"\xbb"
    assert decode_varint(data, 1) == (value, len(data) - 1)


def test_hostile() -> None:
    with pytest.raises(DecodeError):
        decode_varint(b"\xff" * 11, 0)
    with pytest.raises(DecodeError):
        decode_varint(b"\xff\xff\xff\xff\xff\x01", 0, max_bytes=5)
    with pytest.raises(DecodeError):
        decode_varint(b"\x80\x80", 0)
    with pytest.raises(DecodeError):
        decode_varint(b"", 0)
