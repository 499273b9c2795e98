"""A real broker older than the client supports: Kafka 2.0.1 (on ZooKeeper) is refused at the
first connection with an error naming its release, by every client, at once."""

from __future__ import annotations

import time
from collections.abc import Iterator

import anyio
import pytest

from aiokafka_lead import AIOKafkaAdminClient, AIOKafkaConsumer, AIOKafkaProducer
from aiokafka_lead.errors import UnsupportedVersionError
from tests.support.legacy_broker import legacy_broker

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def kafka_2_0(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with legacy_broker(tmp_path_factory.mktemp("kafka-2.0.1")) as bootstrap:
        yield bootstrap


@pytest.mark.parametrize("client", [AIOKafkaProducer, AIOKafkaConsumer, AIOKafkaAdminClient])
async def test_kafka_2_0_is_refused_naming_its_release(kafka_2_0: str, client: type) -> None:
    made = client(bootstrap_servers=kafka_2_0, request_timeout_ms=10_000)
    started = time.monotonic()
    with anyio.fail_after(10), pytest.raises(UnsupportedVersionError) as info:
        await made.start()
    assert time.monotonic() - started < 2.0
    assert str(info.value).endswith(
        f"broker at {kafka_2_0} is too old: it speaks Fetch only up to v8, as Kafka 2.0 does; "
        "aiokafka_lead needs Kafka 2.1 or newer"
    )
    await (made.close() if client is AIOKafkaAdminClient else made.stop())
