"""Decoding a Metadata answer into what the client asked for.

A broker may answer with more topics than were asked for (a lying or confused broker, or
a request for all topics from another client sharing nothing with us). The producer and
the consumer keep only their own topics, so the topics nobody asked for are skipped in the
encoded body (walked by schema, :mod:`aiokafka_lead.protocol.skim`) and never become
objects: memory follows what the client uses, not the cluster's size.

The topics kept are read by schema straight into the store's terms: a partition becomes a
:data:`~aiokafka_lead.metadata.model.PartitionRow`, a plain tuple, not an object of the
generated classes (a million of those, with three lists each, kept the garbage collector
walking them for most of a second at a time). The walk runs in slices
(:mod:`aiokafka_lead.slices`), yielding within a topic's partitions too, so even a topic of
a million partitions never holds the event loop long (``benchmarks/metadata_scale.py
--layout one-topic``). The answer's other fields go through the generated decoder.
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Callable, Collection, Generator
from dataclasses import dataclass
from typing import Any

from aiokafka_lead.errors import DecodeError
from aiokafka_lead.metadata.model import NO_EPOCH, ZERO_UUID, PartitionRow, TopicMetadata
from aiokafka_lead.protocol.framing import decode_response
from aiokafka_lead.protocol.messages import MetadataResponse
from aiokafka_lead.protocol.primitives import read_uuid
from aiokafka_lead.protocol.skim import (
    YIELD_EVERY,
    ItemReader,
    array_length,
    inline_fields,
    iter_take_items,
    keep_array_items,
    read_name,
    read_string,
    skip_field,
    skip_tags,
)
from aiokafka_lead.slices import run_in_slices

_Topic = MetadataResponse.MetadataResponseTopic
_Partition = MetadataResponse.MetadataResponsePartition

# Metadata topics begin with error_code (int16) then name, in every version
_TOPIC_FIELDS = [(f.attr, f.kind) for f in _Topic._FIELDS[:2]]
assert _TOPIC_FIELDS == [("error_code", "int16"), ("name", "string")], _TOPIC_FIELDS
_NAME_AT = 2
_I16 = struct.Struct(">h")

#: the partition fields a row holds, in the row's order (model.PartitionRow)
ROW_FIELDS = (
    "partition_index",
    "leader_id",
    "leader_epoch",
    "replica_nodes",
    "isr_nodes",
    "offline_replicas",
    "error_code",
)
#: what a row holds for the fields older versions do not have
_ROW_DEFAULTS: dict[str, Any] = {"leader_epoch": NO_EPOCH, "offline_replicas": ()}
_FORMATS = {"int8": "b", "int16": "h", "int32": "i", "int64": "q", "bool": "?"}


@dataclass(frozen=True, slots=True)
class DecodedMetadata:
    """A Metadata answer: its topics wanted, in the store's terms, and the rest of it."""

    response: MetadataResponse  # the answer's other fields (its ``topics`` are not read)
    topics: tuple[TopicMetadata, ...]


class _RowReader:
    """Reads a ``MetadataResponsePartition`` of one version into a row, by its schema: runs
    of fixed fields in one ``unpack``, arrays of node ids as tuples (shared when equal)."""

    def __init__(self, version: int) -> None:
        self._flexible = MetadataResponse.is_flexible(version)
        steps: list[struct.Struct | None] = []  # None: an array of int32
        attrs: list[str] = []
        fmt = ""
        for f in inline_fields(_Partition, version):
            code = _FORMATS.get(f.kind)
            if code is None and not (f.kind == "array" and f.elem == "int32"):
                raise ValueError(f"MetadataResponsePartition v{version}: cannot read {f.attr} ({f.kind})")
            attrs.append(f.attr)
            if code is not None:
                fmt += code
                continue
            if fmt:
                steps.append(struct.Struct(">" + fmt))
                fmt = ""
            steps.append(None)
        if fmt:
            steps.append(struct.Struct(">" + fmt))
        missing = [a for a in ROW_FIELDS if a not in attrs]
        order = attrs + missing
        self._steps = tuple(steps)
        self._fill = tuple(_ROW_DEFAULTS[a] for a in missing)
        self._pick = operator.itemgetter(*(order.index(a) for a in ROW_FIELDS))
        self._ints: dict[int, struct.Struct] = {}
        self._shared: dict[tuple[int, ...], tuple[int, ...]] = {}

    def read(self, buf: memoryview, pos: int) -> tuple[PartitionRow, int]:
        values: list[Any] = []
        for step in self._steps:
            if step is not None:
                values += step.unpack_from(buf, pos)
                pos += step.size
                continue
            n, pos = array_length(buf, pos, self._flexible)
            if n < 0:
                raise DecodeError(f"MetadataResponsePartition: a null array at offset {pos}")
            ints = self._ints.get(n)
            if ints is None:
                ints = self._ints[n] = struct.Struct(f">{n}i")
            nodes = ints.unpack_from(buf, pos)
            pos += ints.size
            values.append(self._shared.setdefault(nodes, nodes))
        if self._flexible:
            pos = skip_tags(buf, pos)
        values += self._fill
        row: PartitionRow = self._pick(values)
        return row, pos


def _topic_taker(
    version: int, names: frozenset[str] | None
) -> Callable[[memoryview, int], ItemReader[TopicMetadata | None] | None]:
    """What :func:`iter_take_items` asks of each topic: a reader for the wanted ones."""
    flexible = MetadataResponse.is_flexible(version)
    fields = inline_fields(_Topic, version)
    rows = _RowReader(version)

    def read(buf: memoryview, pos: int) -> Generator[None, None, tuple[TopicMetadata | None, int]]:
        name: str | None = None
        topic_id = ZERO_UUID
        is_internal, error_code = False, 0
        parts: list[PartitionRow] = []
        for f in fields:
            if f.attr == "partitions":
                n, pos = array_length(buf, pos, flexible)
                if n < 0:
                    raise DecodeError(f"MetadataResponseTopic {name!r}: a null partitions array")
                for i in range(n):
                    row, pos = rows.read(buf, pos)
                    parts.append(row)
                    if i % YIELD_EVERY == YIELD_EVERY - 1:
                        yield
            elif f.attr == "name":
                name, pos = read_string(buf, pos, flexible)
            elif f.attr == "topic_id":
                topic_id, pos = read_uuid(buf, pos)
            elif f.attr == "error_code":
                (error_code,) = _I16.unpack_from(buf, pos)
                pos += 2
            elif f.attr == "is_internal":
                is_internal = buf[pos] != 0
                pos += 1
            else:
                pos = skip_field(f, buf, pos, version, flexible)
        if flexible:
            pos = skip_tags(buf, pos)
        # a topic asked for by id and unknown has no name: nothing to keep
        topic = None if name is None else TopicMetadata(name, topic_id, is_internal, error_code, parts)
        return topic, pos

    def take(buf: memoryview, item: int) -> ItemReader[TopicMetadata | None] | None:
        return read if names is None or read_name(buf, item + _NAME_AT, flexible) in names else None

    return take


def _header_end(view: memoryview, version: int) -> int:
    return skip_tags(view, 4) if MetadataResponse.header_version(version) >= 1 else 4


def iter_decode_metadata(
    frame: memoryview | bytes, version: int, wanted: Collection[str] | None
) -> Generator[None, None, DecodedMetadata]:
    """The answer in a response frame (no size prefix) with only the ``wanted`` topics (all
    of them when None); a generator that yields now and then (:mod:`aiokafka_lead.slices`)."""
    view = memoryview(frame)
    try:
        header = _header_end(view, version)
    except (IndexError, struct.error) as exc:
        raise DecodeError(f"Metadata v{version}: truncated response header ({exc})") from None
    take = _topic_taker(version, None if wanted is None else frozenset(wanted))
    split = yield from iter_take_items(MetadataResponse, view[header:], version, "topics", take)
    rest = decode_response(bytes(view[:header]) + split.joined([]), MetadataResponse, version)[1]
    return DecodedMetadata(rest, tuple(t for t in split.items if t is not None))


async def decode_metadata(
    frame: memoryview | bytes, version: int, wanted: Collection[str] | None
) -> DecodedMetadata:
    """:func:`iter_decode_metadata`, giving the event loop a turn every ``SLICE_S``."""
    return await run_in_slices(iter_decode_metadata(frame, version, wanted))


def metadata_decoder(
    version: int, wanted: Collection[str] | None
) -> Callable[[memoryview | bytes], MetadataResponse]:
    """A frame decoder into the generated classes that keeps only the ``wanted`` topics (all
    of them when None): what the admin client's answers and the tests compare against."""
    names = None if wanted is None else frozenset(wanted)
    flexible = MetadataResponse.is_flexible(version)

    def decode(frame: memoryview | bytes) -> MetadataResponse:
        view = memoryview(frame)
        if names is None:
            return decode_response(frame, MetadataResponse, version)[1]
        header = _header_end(view, version)
        body = keep_array_items(
            MetadataResponse,
            view[header:],
            version,
            "topics",
            lambda buf, item: read_name(buf, item + _NAME_AT, flexible) in names,
        )
        return decode_response(bytes(view[:header]) + body, MetadataResponse, version)[1]

    return decode


def topics_from_response(
    response: MetadataResponse, wanted: Collection[str] | None = None
) -> list[TopicMetadata]:
    """A decoded answer's topics in the store's terms: each named one (a topic asked for by
    id and unknown has no name), or only those among ``wanted`` unless it is None."""
    return [
        TopicMetadata(
            t.name,
            t.topic_id,
            t.is_internal,
            t.error_code,
            [
                (
                    p.partition_index,
                    p.leader_id,
                    p.leader_epoch,
                    tuple(p.replica_nodes),
                    tuple(p.isr_nodes),
                    tuple(p.offline_replicas),
                    p.error_code,
                )
                for p in t.partitions
            ],
        )
        for t in response.topics
        if t.name is not None and (wanted is None or t.name in wanted)
    ]


__all__ = [
    "ROW_FIELDS",
    "DecodedMetadata",
    "decode_metadata",
    "iter_decode_metadata",
    "metadata_decoder",
    "topics_from_response",
]
