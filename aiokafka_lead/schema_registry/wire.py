"""The two framings of a schema-registry payload, as Confluent's serializers write them.

Prefix framing: magic byte 0, the schema id as a 4-byte big-endian unsigned integer, then the
encoded value. Header framing: the value alone, and a record header ``__key_schema_id`` or
``__value_schema_id`` holding magic byte 1 and the schema's 16-byte GUID. Protobuf payloads
add, after the id (in the payload) or after the GUID (in the header), the message indexes:
the path from the file's top-level messages to the encoded message, as zigzag varints
prefixed by their count, with the first top-level message ``[0]`` written as one 0 byte.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from aiokafka_lead.schema_registry.errors import SerializationError

MAGIC_ID = 0
MAGIC_GUID = 1
KEY_SCHEMA_ID_HEADER = "__key_schema_id"
VALUE_SCHEMA_ID_HEADER = "__value_schema_id"
#: no message is nested this deep; a larger count is corrupt input, refused before reading on
MAX_MESSAGE_INDEXES = 100_000

_ID = struct.Struct(">bI")
_FIRST_MESSAGE = b"\x00"


@dataclass(frozen=True, slots=True)
class SchemaRef:
    """The schema a payload names: its id or its GUID, and Protobuf's message indexes."""

    id: int | None = None
    guid: uuid.UUID | None = None
    message_indexes: tuple[int, ...] | None = None


def schema_id_header(is_key: bool) -> str:
    return KEY_SCHEMA_ID_HEADER if is_key else VALUE_SCHEMA_ID_HEADER


def _zigzag(value: int) -> bytes:
    encoded = (value << 1) ^ (value >> 63)
    out = bytearray()
    while encoded > 0x7F:
        out.append((encoded & 0x7F) | 0x80)
        encoded >>= 7
    out.append(encoded)
    return bytes(out)


def encode_message_indexes(indexes: Sequence[int]) -> bytes:
    """Protobuf's message indexes as the serializers write them (``[0]`` is one 0 byte)."""
    if not indexes:
        raise SerializationError("message indexes cannot be empty")
    if len(indexes) == 1 and indexes[0] == 0:
        return _FIRST_MESSAGE
    return _zigzag(len(indexes)) + b"".join(_zigzag(index) for index in indexes)


def id_prefix(schema_id: int, message_indexes: Sequence[int] | None = None) -> bytes:
    """The payload prefix: magic 0, the 4-byte id, then the message indexes if any."""
    if not 0 <= schema_id <= 0xFFFFFFFF:
        raise SerializationError(f"schema id {schema_id} does not fit 4 unsigned bytes")
    prefix = _ID.pack(MAGIC_ID, schema_id)
    return prefix if message_indexes is None else prefix + encode_message_indexes(message_indexes)


def guid_header_value(guid: uuid.UUID, message_indexes: Sequence[int] | None = None) -> bytes:
    """A schema-id header's value: magic 1, the 16-byte GUID, then the message indexes if any."""
    value = bytes((MAGIC_GUID,)) + guid.bytes
    return value if message_indexes is None else value + encode_message_indexes(message_indexes)


class _Reader:
    __slots__ = ("data", "pos", "what")

    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def take(self, size: int) -> bytes:
        end = self.pos + size
        if end > len(self.data):
            raise SerializationError(
                f"{self.what} is {len(self.data)} bytes: too short for its schema framing "
                f"(needs {end} bytes at least)"
            )
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def varint(self) -> int:
        value = shift = 0
        while True:
            if self.pos >= len(self.data):
                raise SerializationError(f"{self.what} ends inside a message index varint")
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return (value >> 1) ^ -(value & 1)
            if shift > 63:
                raise SerializationError(f"{self.what} has a message index varint over 64 bits")

    def message_indexes(self) -> tuple[int, ...]:
        count = self.varint()
        if count < 0 or count > MAX_MESSAGE_INDEXES:
            raise SerializationError(f"{self.what} has an invalid message index count {count}")
        if count == 0:
            return (0,)
        return tuple(self.varint() for _ in range(count))


def read_framing(data: bytes, what: str, with_indexes: bool) -> tuple[SchemaRef, int]:
    """The schema a framed payload (or a schema-id header value) names, and where the rest
    starts. Magic 0 gives an id, magic 1 a GUID; anything else is refused by name."""
    reader = _Reader(data, what)
    magic = reader.take(1)[0]
    if magic == MAGIC_ID:
        schema_id = int.from_bytes(reader.take(4), "big")
        ref = SchemaRef(id=schema_id)
    elif magic == MAGIC_GUID:
        ref = SchemaRef(guid=uuid.UUID(bytes=reader.take(16)))
    else:
        raise SerializationError(
            f"{what} starts with byte {magic}: not schema-registry framing (magic byte 0 or 1 expected)"
        )
    if with_indexes:
        ref = SchemaRef(ref.id, ref.guid, reader.message_indexes())
    return ref, reader.pos


def find_schema_header(headers: Sequence[tuple[str, bytes | None]] | None, is_key: bool) -> bytes | None:
    """The value of the record's schema-id header for its key or value (the first one), if any."""
    if not headers:
        return None
    name = schema_id_header(is_key)
    for key, value in headers:
        if key == name:
            return value
    return None
