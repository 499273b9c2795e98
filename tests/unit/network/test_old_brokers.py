"""A broker older than the client supports (Kafka 2.1, as Java's 4.x clients) is refused at
the handshake with an error naming its release, never a decode error or a later timeout.

The fake cluster advertises exactly the version ranges of the release it stands in for
(checked against each release's kafka-clients ``ApiKeys``)."""

from __future__ import annotations

import time

import anyio
import pytest

from aiokafka_lead import AIOKafkaAdminClient, AIOKafkaConsumer, AIOKafkaProducer
from aiokafka_lead.errors import UnsupportedVersionError
from aiokafka_lead.protocol.versions import broker_release, negotiate
from aiokafka_lead.testing.fake import FakeCluster

DEADLINE = 10.0
PRODUCE, FETCH, LIST_OFFSETS, METADATA, API_VERSIONS, OFFSET_FOR_LEADER_EPOCH = 0, 1, 2, 3, 18, 23

#: Kafka 2.0's newest versions of what the fake serves (ApiVersions v2: no flexible versions)
KAFKA_2_0 = {PRODUCE: 6, FETCH: 8, LIST_OFFSETS: 3, METADATA: 6, API_VERSIONS: 2, OFFSET_FOR_LEADER_EPOCH: 1}
#: Kafka 2.1's: the oldest release supported
KAFKA_2_1 = {PRODUCE: 7, FETCH: 10, LIST_OFFSETS: 4, METADATA: 7, API_VERSIONS: 2, OFFSET_FOR_LEADER_EPOCH: 2}


@pytest.mark.parametrize("client", [AIOKafkaProducer, AIOKafkaConsumer, AIOKafkaAdminClient])
async def test_kafka_2_0_is_refused_at_start_naming_the_release(client: type) -> None:
    async with FakeCluster(brokers=1, max_versions=KAFKA_2_0) as fc:
        made = client(bootstrap_servers=fc.bootstrap, request_timeout_ms=5000)
        started = time.monotonic()
        with anyio.fail_after(DEADLINE), pytest.raises(UnsupportedVersionError) as info:
            await made.start()
        assert time.monotonic() - started < 2.0  # at the handshake, not after a timeout
        text = str(info.value)
        assert "Fetch only up to v8" in text and "Kafka 2.0" in text
        assert "needs Kafka 2.1 or newer" in text and fc.bootstrap in text
        assert made._core._pool is None and not made._core.host.running
        await (made.close() if client is AIOKafkaAdminClient else made.stop())


async def test_kafka_2_1_is_accepted_and_used_within_its_versions() -> None:
    async with FakeCluster(brokers=1, max_versions=KAFKA_2_1) as fc:
        with anyio.fail_after(DEADLINE):
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap) as producer:
                fc.create_topic("t", partitions=1)
                meta = await producer.send_and_wait("t", b"v", partition=0)
                assert meta.offset == 0
            async with AIOKafkaConsumer(
                "t", bootstrap_servers=fc.bootstrap, auto_offset_reset="earliest"
            ) as consumer:
                record = await consumer.getone()
                assert record.value == b"v"
        sent = {r.api_key: r.api_version for r in fc.requests}
        assert sent[PRODUCE] == 7 and sent[FETCH] == 10 and sent[METADATA] == 7


def test_releases_named_by_their_newest_fetch_version() -> None:
    assert broker_release(8) == "2.0"
    assert broker_release(9) == "2.0"  # no release stopped at v9
    assert broker_release(17) == "3.9 or 4.0"
    assert broker_release(18) == "4.1 or newer"
    assert broker_release(4) == "0.10.1 or 0.10.2"


def test_a_broker_without_fetch_is_not_judged() -> None:
    assert negotiate({METADATA: (0, 12)}).too_old() is None
    assert negotiate({FETCH: (0, 9)}).too_old() is not None
    assert negotiate({FETCH: (4, 10)}).too_old() is None
