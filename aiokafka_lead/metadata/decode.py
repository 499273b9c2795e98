"""Decoding a Metadata answer into what the client asked for.

A broker may answer with more topics than were asked for (a lying or confused broker, or
a request for all topics from another client sharing nothing with us). The producer and
the consumer keep only their own topics, so the topics nobody asked for are dropped from
the encoded body (walked by schema, :mod:`aiokafka_lead.protocol.skim`) before the
generated decoder builds objects: memory follows what the client uses, not the cluster's
size. The walk runs in slices (:mod:`aiokafka_lead.slices`), yielding within a topic's
partitions too, so even a topic of a million partitions never holds the loop long. What is
kept is decoded in a worker thread when it is big (``THREAD_DECODE_BYTES``), as the
connection decodes other big answers (``benchmarks/metadata_scale.py --layout one-topic
--phases`` times each step).
"""

from __future__ import annotations

from collections.abc import Callable, Collection

import anyio.to_thread

from aiokafka_lead.protocol.framing import THREAD_DECODE_BYTES, decode_response
from aiokafka_lead.protocol.messages import MetadataResponse
from aiokafka_lead.protocol.skim import iter_keep_array_items, keep_array_items, read_name
from aiokafka_lead.slices import run_in_slices

# Metadata topics begin with error_code (int16) then name, in every version
_TOPIC_FIELDS = [f.attr for f in MetadataResponse.MetadataResponseTopic._FIELDS[:2]]
assert _TOPIC_FIELDS == ["error_code", "name"], _TOPIC_FIELDS
_NAME_AT = 2


def _skim_plan(
    view: memoryview, version: int, names: frozenset[str] | None
) -> tuple[int, Callable[[memoryview, int], bool]] | None:
    """The header size and the topic filter of a skim keeping only ``names``; None when the
    frame is decoded whole (all topics wanted, or header tags present: the full decoder
    reads them)."""
    header = 4 + (1 if MetadataResponse.header_version(version) >= 1 else 0)
    if names is None or (header == 5 and view[4] != 0):
        return None
    flexible = MetadataResponse.is_flexible(version)
    return header, lambda buf, item: read_name(buf, item + _NAME_AT, flexible) in names


def metadata_decoder(
    version: int, wanted: Collection[str] | None
) -> Callable[[memoryview | bytes], MetadataResponse]:
    """A frame decoder that keeps only the ``wanted`` topics (all of them when None)."""
    names = None if wanted is None else frozenset(wanted)

    def decode(frame: memoryview | bytes) -> MetadataResponse:
        view = memoryview(frame)
        plan = _skim_plan(view, version, names)
        if plan is None:
            return decode_response(frame, MetadataResponse, version)[1]
        header, keep = plan
        body = keep_array_items(MetadataResponse, view[header:], version, "topics", keep)
        return decode_response(bytes(view[:header]) + body, MetadataResponse, version)[1]

    return decode


async def _decode_kept(frame: memoryview | bytes, version: int) -> MetadataResponse:
    """The generated decoder on what is kept: in a worker thread when it is big."""
    if len(frame) < THREAD_DECODE_BYTES:
        return decode_response(frame, MetadataResponse, version)[1]
    decoded = await anyio.to_thread.run_sync(decode_response, frame, MetadataResponse, version)
    return decoded[1]


async def decode_metadata(
    frame: memoryview | bytes, version: int, wanted: Collection[str] | None
) -> MetadataResponse:
    """:func:`metadata_decoder`'s result, giving the event loop a turn every ``SLICE_S``."""
    view = memoryview(frame)
    plan = _skim_plan(view, version, None if wanted is None else frozenset(wanted))
    if plan is None:
        return await _decode_kept(frame, version)
    header, keep = plan
    walk = iter_keep_array_items(MetadataResponse, view[header:], version, "topics", keep)
    body = await run_in_slices(walk)
    return await _decode_kept(bytes(view[:header]) + body, version)
