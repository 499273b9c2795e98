"""Bad input against a real broker: records too large for the topic, listener
mismatches (TLS, SASL), unknown topics with auto-creation off. One node is enough."""

from __future__ import annotations

import random
import ssl
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from aiokafka_lead import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.errors import (
    KafkaConnectionError,
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    UnknownTopicOrPartitionError,
    UnsupportedSaslMechanismError,
)
from tests.integration.conftest import tls_context, unique
from tests.support.fetch import read_topic

pytestmark = pytest.mark.integration


@pytest.fixture
async def admin1(kafka_cluster_1: Any) -> AsyncIterator[AdminClient]:
    async with AdminClient(bootstrap_servers=kafka_cluster_1.bootstrap()) as client:
        yield client


async def small_topic(admin: AdminClient, max_message_bytes: int) -> str:
    name = unique("too-large")
    await admin.create_topics(
        [NewTopic(name, 1, 1, topic_configs={"max.message.bytes": str(max_message_bytes)})]
    )
    return name


@pytest.mark.parametrize("idempotent", [True, False], ids=["idempotent", "plain"])
async def test_a_batch_over_max_message_bytes_is_split_and_delivered_in_order(
    admin1: AdminClient, kafka_cluster_1: Any, idempotent: bool
) -> None:
    bootstrap = kafka_cluster_1.bootstrap()
    topic = await small_topic(admin1, 3000)
    values = [f"{i:04d}".encode() + random.Random(i).randbytes(512) for i in range(40)]
    with anyio.fail_after(60):
        async with AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            linger_ms=1000,
            max_batch_size=65536,
            enable_idempotence=idempotent,
            acks="all" if idempotent else 1,
        ) as producer:
            handles = [await producer.send(topic, v, partition=0) for v in values]
            await producer.flush()
            offsets = [(await h).offset for h in handles]
            metrics = producer.metrics()
        stored = await read_topic(bootstrap, topic)
    assert [r.value for r in stored[0]] == values
    assert offsets == list(range(len(values)))
    assert metrics["batches_split"] >= 3 and metrics["batches_retried"] == 0
    await admin1.delete_topics([topic])


async def test_a_single_record_over_max_message_bytes_fails_alone(
    admin1: AdminClient, kafka_cluster_1: Any
) -> None:
    bootstrap = kafka_cluster_1.bootstrap()
    topic = await small_topic(admin1, 1000)
    with anyio.fail_after(60):
        async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=1000) as producer:
            small1 = await producer.send(topic, b"a" * 100, partition=0)
            big = await producer.send(topic, random.Random(1).randbytes(1500), partition=0)
            small2 = await producer.send(topic, b"c" * 100, partition=0)
            await producer.flush()
            with pytest.raises(MessageSizeTooLargeError, match=r"max\.message\.bytes"):
                await big
            assert [(await small1).offset, (await small2).offset] == [0, 1]
            assert (await producer.send_and_wait(topic, b"d", partition=0)).offset == 2
            assert producer.metrics()["epoch_bumps"] == 0  # the sequence was given back
        stored = await read_topic(bootstrap, topic)
    assert [r.value for r in stored[0]] == [b"a" * 100, b"c" * 100, b"d"]
    await admin1.delete_topics([topic])


def _mismatches(cluster: Any) -> list[tuple[str, dict[str, Any], type[Exception], str]]:
    user, password = next(iter(cluster.users.items()))
    sasl = {"sasl_plain_username": user, "sasl_plain_password": password}
    tls = tls_context(cluster)
    return [
        (
            "TLS to PLAINTEXT",
            {"security_protocol": "SSL", "ssl_context": tls},
            KafkaConnectionError,
            "TLS handshake",
        ),
        ("PLAINTEXT to SSL", {"listener": "SSL"}, KafkaConnectionError, "answered with TLS"),
        (
            "SASL to PLAINTEXT",
            {"security_protocol": "SASL_PLAINTEXT", **sasl},
            UnsupportedSaslMechanismError,
            "does not use SASL",
        ),
        (
            "PLAINTEXT to SASL",
            {"listener": "SASL_PLAINTEXT"},
            KafkaConnectionError,
            "check security_protocol",
        ),
        (
            "SASL_PLAINTEXT to SASL_SSL",
            {"listener": "SASL_SSL", "security_protocol": "SASL_PLAINTEXT", **sasl},
            KafkaConnectionError,
            "answered with TLS",
        ),
        (
            "untrusted certificate",
            {"listener": "SSL", "security_protocol": "SSL", "ssl_context": ssl.create_default_context()},
            KafkaConnectionError,
            "CERTIFICATE_VERIFY_FAILED",
        ),
    ]


async def test_listener_mismatches_fail_start_at_once_and_name_the_cause(kafka_cluster_1: Any) -> None:
    for name, options, error, message in _mismatches(kafka_cluster_1):
        listener = options.pop("listener", "PLAINTEXT")
        admin = AdminClient(
            bootstrap_servers=kafka_cluster_1.bootstrap(listener), request_timeout_ms=10_000, **options
        )
        started = time.monotonic()
        with anyio.fail_after(30), pytest.raises(error, match=message):
            await admin.start()
        assert time.monotonic() - started < 5, f"{name}: took {time.monotonic() - started:.1f} s"
        await admin.close()
        assert admin._core._pool is None, name  # nothing left open


async def test_unknown_topics_with_auto_creation_off_say_so(kafka_cluster_1: Any) -> None:
    bootstrap = kafka_cluster_1.bootstrap()
    missing = unique("missing")
    tp = TopicPartition(missing, 0)
    with anyio.fail_after(60):
        async with AdminClient(bootstrap_servers=bootstrap, request_timeout_ms=3000) as admin:
            with pytest.raises(UnknownTopicOrPartitionError, match=missing):
                await admin.describe_topics([missing])
        async with AIOKafkaConsumer(
            bootstrap_servers=bootstrap, request_timeout_ms=3000, allow_auto_create_topics=False
        ) as consumer:
            consumer.assign([tp])
            with pytest.raises(KafkaTimeoutError, match="not in the cluster's metadata"):
                await consumer.position(tp, timeout_ms=2000)
            with pytest.raises(KafkaTimeoutError, match=f"'{missing}' not in the cluster's metadata"):
                await consumer.end_offsets([tp])
            assert await consumer.getmany(timeout_ms=200) == {}
        async with AdminClient(bootstrap_servers=bootstrap) as admin:
            assert missing not in await admin.list_topics()  # nothing created it on the way


async def test_a_consumer_creates_a_missing_subscribed_topic_by_default(kafka_cluster_1: Any) -> None:
    """aiokafka's (and Java's) default: the brokers allow auto-creation, so subscribing to a
    missing topic creates it and the group gets its partitions."""
    bootstrap = kafka_cluster_1.bootstrap()
    missing = unique("autocreated")
    with anyio.fail_after(60):
        async with AIOKafkaConsumer(missing, bootstrap_servers=bootstrap, group_id=unique("g")) as consumer:
            assert consumer.assignment() == {TopicPartition(missing, 0)}
        async with AdminClient(bootstrap_servers=bootstrap) as admin:
            assert missing in await admin.list_topics()
