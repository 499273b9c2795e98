"""The producer's Produce request on the wire: rows in, frame out, and its answer.

The sender knows a request as rows (per topic, each partition's record batch bytes), and
most answers say only "written at offset N" for every partition. With the C extension
(``_speedups_produce_wire.c``) both directions are one call for versions 9..12: the frame
is written straight from the rows, and such an answer becomes a :class:`Written` without a
generated object. Any other answer (an error, a record error, a leader hint, a tagged
field, another version) and every answer without the extension is decoded by the generated
``ProduceResponse``, which stays the reference: the tests compare the two on the same bytes.
"""

from __future__ import annotations

from typing import NamedTuple

from aiokafka_lead.protocol.framing import OutFrame, WireRequest, decode_response, encode_request
from aiokafka_lead.protocol.messages import ProduceRequest, ProduceResponse
from aiokafka_lead.protocol.primitives import Buf
from aiokafka_lead.records import native

#: the Produce versions the C calls write and read (flexible, topics by name)
FIRST_VERSION, LAST_VERSION = 9, 12
#: records of at least this many bytes are written as they are, not copied into the frame
#: (the frame is then a list of pieces); below it one copy costs less than another write
SPLIT_OVER = 64 * 1024

#: a record batch: its bytes, or (header, records) written one after the other
BatchBytes = bytes | tuple[bytes, bytes | memoryview]
#: per topic, (partition, record batch)
Topics = list[tuple[str, list[tuple[int, BatchBytes]]]]
#: (topic, partition, base_offset, log_append_time_ms, log_start_offset)
WrittenRow = tuple[str, int, int, int, int]


class Written(NamedTuple):
    """An answer whose every partition was written, with nothing more to say."""

    throttle_time_ms: int
    rows: list[WrittenRow]

    def response(self) -> ProduceResponse:
        """The same partitions' answers as the generated class (a topic named twice comes once,
        one that named no partition not at all)."""
        topics: dict[str, list[ProduceResponse.PartitionProduceResponse]] = {}
        for topic, partition, base_offset, append_time, start_offset in self.rows:
            topics.setdefault(topic, []).append(
                ProduceResponse.PartitionProduceResponse(
                    index=partition,
                    error_code=0,
                    base_offset=base_offset,
                    log_append_time_ms=append_time,
                    log_start_offset=start_offset,
                )
            )
        return ProduceResponse(
            responses=[
                ProduceResponse.TopicProduceResponse(name=name, partition_responses=parts)
                for name, parts in topics.items()
            ],
            throttle_time_ms=self.throttle_time_ms,
        )


#: what a produce request's answer decodes to
ProduceAnswer = Written | ProduceResponse


class ProduceWire(WireRequest):
    """A Produce request as rows."""

    API_KEY = ProduceRequest.API_KEY
    RESPONSE_CLASS = ProduceResponse
    __slots__ = ("acks", "timeout_ms", "topics", "transactional_id", "version")

    def __init__(self, transactional_id: str | None, acks: int, timeout_ms: int, topics: Topics) -> None:
        self.transactional_id = transactional_id
        self.acks = acks
        self.timeout_ms = timeout_ms
        self.topics = topics
        self.version = -1

    def request(self) -> ProduceRequest:
        """The generated request (for ``Connection.send`` and the versions the C call lacks)."""
        return ProduceRequest(
            transactional_id=self.transactional_id,
            acks=self.acks,
            timeout_ms=self.timeout_ms,
            topic_data=[
                ProduceRequest.TopicProduceData(
                    name=name,
                    partition_data=[
                        ProduceRequest.PartitionProduceData(
                            index=index, records=b"".join(records) if isinstance(records, tuple) else records
                        )
                        for index, records in parts
                    ],
                )
                for name, parts in self.topics
            ],
        )

    def frame(self, version: int, correlation_id: int, client_id: str | None) -> OutFrame:
        self.version = version
        encode = native.encode_produce
        if encode is not None and FIRST_VERSION <= version <= LAST_VERSION:
            txn_id, topics = self.transactional_id, self.topics
            out: OutFrame = encode(
                version, correlation_id, client_id, txn_id, self.acks, self.timeout_ms, topics, SPLIT_OVER
            )
            return out
        return encode_request(self.request(), version, correlation_id, client_id)

    def decode(self, frame: Buf) -> ProduceAnswer:
        decode = native.decode_produce_written
        if decode is not None:
            written = decode(frame, self.version)
            if written is not None:
                return Written(*written)
        return decode_response(frame, ProduceResponse, self.version)[1]
