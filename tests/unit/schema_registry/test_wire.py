"""The framing bytes against confluent-kafka's own encoder and decoder, and bad input refused."""

from __future__ import annotations

import io
import uuid

import pytest
from confluent_kafka.schema_registry.common.serde import SchemaId
from hypothesis import given
from hypothesis import strategies as st

from aiokafka_lead.schema_registry.errors import SerializationError
from aiokafka_lead.schema_registry.wire import (
    KEY_SCHEMA_ID_HEADER,
    VALUE_SCHEMA_ID_HEADER,
    find_schema_header,
    guid_header_value,
    id_prefix,
    read_framing,
    schema_id_header,
)

indexes = st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=6)


@given(schema_id=st.integers(0, 2**32 - 1), message_indexes=st.none() | indexes)
def test_id_prefix_is_confluents(schema_id: int, message_indexes: list[int] | None) -> None:
    theirs = SchemaId("PROTOBUF" if message_indexes else "AVRO", schema_id, None, message_indexes)
    assert id_prefix(schema_id, message_indexes) == theirs.id_to_bytes()


@given(guid=st.uuids(), message_indexes=st.none() | indexes)
def test_guid_header_is_confluents(guid: uuid.UUID, message_indexes: list[int] | None) -> None:
    theirs = SchemaId("PROTOBUF" if message_indexes else "AVRO", None, str(guid), message_indexes)
    assert guid_header_value(guid, message_indexes) == theirs.guid_to_bytes()


@given(schema_id=st.integers(0, 2**32 - 1), message_indexes=indexes, body=st.binary(max_size=20))
def test_read_framing_reads_what_confluent_writes(
    schema_id: int, message_indexes: list[int], body: bytes
) -> None:
    framed = SchemaId("PROTOBUF", schema_id, None, message_indexes).id_to_bytes() + body
    ref, start = read_framing(framed, "payload", with_indexes=True)
    assert (ref.id, ref.message_indexes, framed[start:]) == (schema_id, tuple(message_indexes), body)
    theirs = SchemaId("PROTOBUF")
    rest = theirs.from_bytes(io.BytesIO(framed)).read()
    assert (theirs.id, theirs.message_indexes, rest) == (schema_id, message_indexes, body)


def test_guid_framing_round_trip() -> None:
    guid = uuid.uuid4()
    ref, start = read_framing(guid_header_value(guid), "header", with_indexes=False)
    assert (ref.guid, ref.id, start) == (guid, None, 17)


def test_header_names_and_lookup() -> None:
    assert schema_id_header(True) == KEY_SCHEMA_ID_HEADER == "__key_schema_id"
    assert schema_id_header(False) == VALUE_SCHEMA_ID_HEADER == "__value_schema_id"
    headers = [("trace", b"x"), ("__value_schema_id", b"\x01v"), ("__key_schema_id", b"\x01k")]
    assert find_schema_header(headers, is_key=True) == b"\x01k"
    assert find_schema_header(headers, is_key=False) == b"\x01v"
    assert find_schema_header(None, is_key=False) is None


@pytest.mark.parametrize(
    ("data", "with_indexes", "words"),
    [
        (b"", False, "0 bytes: too short"),
        (b"\x00\x00\x01", False, "3 bytes: too short"),
        (b"\x01" + b"\x00" * 10, False, "11 bytes: too short"),
        (b"\x07\x00\x00\x00\x01", False, "starts with byte 7: not schema-registry framing"),
        (b'{"json": 1}', False, "starts with byte 123"),
        (b"\x00\x00\x00\x00\x01", True, "ends inside a message index varint"),
        (b"\x00\x00\x00\x00\x01\x04\x80", True, "ends inside a message index varint"),
        (b"\x00\x00\x00\x00\x01\x01", True, "invalid message index count -1"),
        (b"\x00\x00\x00\x00\x01\xfe\xff\xff\x0f", True, "invalid message index count"),
        (b"\x00\x00\x00\x00\x01" + b"\xff" * 12, True, "over 64 bits"),
    ],
)
def test_bad_framing_is_a_clear_error(data: bytes, with_indexes: bool, words: str) -> None:
    with pytest.raises(SerializationError, match="the value of a record from t") as info:
        read_framing(data, "the value of a record from t", with_indexes)
    assert words in str(info.value)


def test_ids_outside_four_bytes_are_refused() -> None:
    with pytest.raises(SerializationError, match="does not fit 4 unsigned bytes"):
        id_prefix(2**32)
    with pytest.raises(SerializationError, match="cannot be empty"):
        id_prefix(1, [])
