"""Framing: size prefix, header versions, and the frame readers fed every possible way."""

from __future__ import annotations

import pytest

from aiokafka_lead.errors import DecodeError
from aiokafka_lead.protocol.framing import (
    BufferedFrameReader,
    FrameReader,
    RequestHeader,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    peek_correlation_id,
    peek_request_header,
)
from aiokafka_lead.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    HeartbeatRequest,
    MetadataRequest,
    MetadataResponse,
)


def test_request_header_v2_golden() -> None:
    req = ApiVersionsRequest(client_software_name="a", client_software_version="1")
    frame = encode_request(req, 3, 1, "c")
    # size, api_key 18, version 3, correlation 1, client_id int16-prefixed (even in v2), tags
    assert frame.hex() == "00000011" + "0012" + "0003" + "00000001" + "000163" + "00" + "0261023100"


def test_request_header_v1_golden() -> None:
    frame = encode_request(HeartbeatRequest(group_id="g", member_id="m"), 0, 7, None)
    assert (
        frame.hex() == "00000014" + "000c" + "0000" + "00000007" + "ffff" + "000167" + "00000000" + "00016d"
    )


def test_api_versions_response_header_is_always_v0() -> None:
    frame = encode_response(ApiVersionsResponse(), 3, 9)
    assert frame.hex() == "0000000c" + "00000009" + "0000" + "01" + "00000000" + "00"
    corr, body = decode_response(frame[4:], ApiVersionsResponse, 3)
    assert (corr, body) == (9, ApiVersionsResponse())


def test_flexible_response_header_has_tags() -> None:
    frame = encode_response(MetadataResponse(), 12, 9)
    assert frame[4:9].hex() == "0000000900"
    assert decode_response(frame[4:], MetadataResponse, 12) == (9, MetadataResponse())
    assert peek_correlation_id(frame[4:]) == 9


def test_request_round_trip_for_a_broker() -> None:
    req = MetadataRequest(topics=None, allow_auto_topic_creation=False)
    for version, client_id in ((12, "cli"), (4, None)):
        header, body = decode_request(encode_request(req, version, 42, client_id)[4:])
        assert header == RequestHeader(3, version, 42, client_id)
        assert body == req
    assert peek_request_header(encode_request(req, 12, 1, "x")[4:]).api_version == 12


def test_header_errors_are_decode_errors() -> None:
    with pytest.raises(DecodeError):
        decode_request(b"\x7f\x7f\x00\x00\x00\x00\x00\x01\xff\xff")  # unknown api key
    with pytest.raises(DecodeError):
        decode_request(b"\x00\x03")
    with pytest.raises(DecodeError):
        peek_correlation_id(b"\x00")
    with pytest.raises(DecodeError):
        decode_response(b"\x00\x00", MetadataResponse, 12)
    frame = encode_response(MetadataResponse(), 12, 9)[4:]
    with pytest.raises(DecodeError, match="trailing"):
        decode_response(frame + b"\0", MetadataResponse, 12)


def _frames() -> list[bytes]:
    return [encode_request(HeartbeatRequest(group_id="g" * n), 4, n, "c") for n in range(5)] + [
        b"\x00\x00\x00\x00"
    ]  # an empty frame is legal framing


def test_frame_reader_byte_by_byte() -> None:
    stream = b"".join(_frames())
    reader = FrameReader()
    out: list[bytes] = []
    for i in range(len(stream)):
        out.extend(bytes(f) for f in reader.feed(stream[i : i + 1]))
    assert out == [f[4:] for f in _frames()]
    assert reader.buffered == 0


def test_frame_reader_many_frames_and_a_partial_one() -> None:
    frames = _frames()
    stream = b"".join(frames)
    extra = encode_request(HeartbeatRequest(), 4, 99, None)
    reader = FrameReader()
    got = reader.feed(stream + extra[:7])
    assert [bytes(f) for f in got] == [f[4:] for f in frames]
    assert reader.buffered == 7
    assert reader.feed(extra[7:10]) == []
    assert [bytes(f) for f in reader.feed(extra[10:] + frames[0])] == [extra[4:], frames[0][4:]]
    assert reader.buffered == 0


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 7, 64])
def test_frame_reader_any_chunking(chunk: int) -> None:
    stream = b"".join(_frames()) * 3
    reader = FrameReader()
    out = []
    for i in range(0, len(stream), chunk):
        out.extend(bytes(f) for f in reader.feed(bytearray(stream[i : i + chunk])))
    assert out == [f[4:] for f in _frames()] * 3


@pytest.mark.parametrize("prefix", [b"\xff\xff\xff\xff", b"\x80\x00\x00\x00", b"\x7f\xff\xff\xff"])
def test_frame_reader_rejects_hostile_sizes_at_once(prefix: bytes) -> None:
    reader = FrameReader(max_frame_size=1024)
    with pytest.raises(DecodeError):
        reader.feed(prefix)
    reader = FrameReader(max_frame_size=1024)
    reader.feed(b"\x00\x00\x00\x01")  # partial frame buffered, then a bad size follows
    with pytest.raises(DecodeError):
        reader.feed(b"x" + prefix)


def test_frame_reader_accepts_exactly_max() -> None:
    reader = FrameReader(max_frame_size=3)
    assert [bytes(f) for f in reader.feed(b"\x00\x00\x00\x03abc")] == [b"abc"]
    with pytest.raises(DecodeError):
        FrameReader(max_frame_size=3).feed(b"\x00\x00\x00\x04")


def _receive(reader: BufferedFrameReader, data: bytes, most: int) -> list[bytes]:
    """What the event loop does: recv_into get_buffer() (at most ``most`` bytes at a time)."""
    out: list[bytes] = []
    pos = 0
    while pos < len(data):
        buffer = reader.get_buffer()
        assert len(buffer) > 0
        n = min(len(buffer), most, len(data) - pos)
        buffer[:n] = data[pos : pos + n]
        pos += n
        out.extend(bytes(f) for f in reader.buffer_updated(n))
        if reader.error is not None:
            raise reader.error
    return out


@pytest.mark.parametrize("most", [1, 2, 3, 5, 7, 64, 100, 1 << 20])
def test_buffered_frame_reader_any_chunking(most: int) -> None:
    big = b"\x00\x00\x01\x2c" + bytes(range(256)) + bytes(44)  # 300 bytes: over the scratch size
    stream = (b"".join(_frames()) + big) * 3
    reader = BufferedFrameReader(scratch_size=64)
    assert _receive(reader, stream, most) == ([f[4:] for f in _frames()] + [big[4:]]) * 3
    assert reader.buffered == 0


def test_buffered_frame_reader_receives_into_buffers_it_keeps() -> None:
    """Small frames: the one scratch buffer, then a copy of exactly the frame; a big frame:
    straight into a buffer of its own size, handed over without another copy."""
    reader = BufferedFrameReader(scratch_size=64)
    scratch = reader.get_buffer().obj
    small = encode_request(HeartbeatRequest(), 4, 1, None)
    buffer = reader.get_buffer()
    buffer[: len(small) + 6] = small + b"\x00\x00\x00\xc8ab"  # then the head of a 200-byte frame
    (frame,) = reader.buffer_updated(len(small) + 6)
    assert type(frame) is bytes and frame == small[4:]
    assert reader.buffered == 6
    body = reader.get_buffer()
    assert body.obj is not scratch and len(body) == 198  # the rest of the frame, and no more
    body[:] = b"c" * 198
    (big,) = reader.buffer_updated(198)
    assert isinstance(big, memoryview) and big.obj is body.obj and bytes(big) == b"ab" + b"c" * 198
    assert reader.get_buffer().obj is scratch and reader.buffered == 0


@pytest.mark.parametrize("prefix", [b"\xff\xff\xff\xff", b"\x80\x00\x00\x00", b"\x7f\xff\xff\xff"])
def test_buffered_frame_reader_rejects_hostile_sizes_at_once(prefix: bytes) -> None:
    reader = BufferedFrameReader(max_frame_size=1024)
    with pytest.raises(DecodeError, match=r"outside 0\.\.1024"):
        _receive(reader, prefix, 4)
    reader = BufferedFrameReader(max_frame_size=1024)
    with pytest.raises(DecodeError):
        _receive(reader, b"\x00\x00\x00\x01x" + prefix, 3)
    reader = BufferedFrameReader(max_frame_size=1024)
    buffer = reader.get_buffer()
    buffer[:9] = b"\x00\x00\x00\x01x" + prefix  # the frame before the bad size is handed over
    assert reader.buffer_updated(9) == [b"x"] and isinstance(reader.error, DecodeError)


def test_buffered_frame_reader_agrees_with_frame_reader_on_garbage() -> None:
    import random

    rng = random.Random(5)
    for _ in range(300):
        blob = rng.randbytes(rng.randint(0, 200))
        try:
            expected: list[bytes] | type[DecodeError] = [bytes(f) for f in FrameReader(1 << 10).feed(blob)]
        except DecodeError:
            expected = DecodeError
        try:
            got: list[bytes] | type[DecodeError] = _receive(
                BufferedFrameReader(1 << 10, scratch_size=32), blob, rng.randint(1, 50)
            )
        except DecodeError:
            got = DecodeError
        assert got == expected
