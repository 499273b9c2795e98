"""aiokafka_lead's own OpenTelemetry instrumentation against the real cluster: spans checked
with the SDK's in-memory exporter, the messaging metrics with its in-memory reader, and one
scenario compared with what opentelemetry-instrumentation-aiokafka records for aiokafka."""

from __future__ import annotations

import difflib
import json
import os
import random
import sys
from typing import Any

import anyio
import pytest
from opentelemetry import baggage, trace
from opentelemetry import context as otel_context
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import (
    NonRecordingSpan,
    NoOpTracerProvider,
    SpanContext,
    SpanKind,
    StatusCode,
    TraceFlags,
)

from aiokafka_lead import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.errors import MessageSizeTooLargeError
from aiokafka_lead.instrumentation.opentelemetry import AIOKafkaLeadInstrumentor
from aiokafka_lead.instrumentation.opentelemetry.telemetry import (
    global_meter_provider,
    global_tracer_provider,
)
from tests.integration.conftest import unique
from tests.integration.frameworks.otel_scenario import TRACEPARENT
from tests.integration.test_frameworks_otel import ROOT, as_text, run_scenario
from tests.support.otel import Recorded, instrumented

pytestmark = pytest.mark.integration

KEY = b"order-7"
GLOBAL_LATER = ROOT / "tests" / "integration" / "frameworks" / "otel_global_later.py"
RECEIVE_TIMEOUT = 60.0


def traceparent(span: ReadableSpan) -> str:
    assert span.context is not None
    context = span.context
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def header(record: Any, key: str) -> list[bytes | None]:
    return [v for k, v in record.headers if k == key]


def total(recorded: Recorded, metric: str, **attributes: Any) -> int:
    """The sum (a counter's) or count (a histogram's) of the points with these attributes."""
    points = [p for a, p in recorded.points(metric) if a == attributes]
    assert len(points) == 1, (metric, attributes, recorded.points(metric))
    point = points[0]
    return int(point.count if hasattr(point, "count") else point.value)


async def read_three(consumer: AIOKafkaConsumer[bytes, bytes]) -> list[Any]:
    """One record by getone(), one by ``async for``, one by getmany()."""
    with anyio.fail_after(RECEIVE_TIMEOUT):
        first = await consumer.getone()
        async for record in consumer:
            second = record
            break
        batch: dict[Any, list[Any]] = {}
        while not batch:
            batch = await consumer.getmany(timeout_ms=500, max_records=1)
    return [first, second, *(r for records in batch.values() for r in records)]


async def test_sends_and_reads_traced_and_counted(kafka_cluster: Any, admin: AdminClient) -> None:
    bootstrap = kafka_cluster.bootstrap()
    topic, group = unique("otel"), unique("otel-group")
    await admin.create_topics([NewTopic(topic, 3, 3)])
    with instrumented() as recorded:
        async with AIOKafkaProducer(bootstrap_servers=bootstrap, client_id="traced-producer") as producer:
            sent = [
                await producer.send_and_wait(topic, b"v0", key=KEY, headers=[("origin", b"test")]),
                await producer.send_and_wait(topic, b"v1", key=KEY),
                await producer.send_and_wait(topic, b"v2", key=KEY),
            ]
            with pytest.raises(ValueError, match="no partition 99"):
                await producer.send(topic, b"lost", partition=99)
        consumer: AIOKafkaConsumer[bytes, bytes] = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            client_id="traced-consumer",
            group_id=group,
            auto_offset_reset="earliest",
        )
        async with consumer:
            records = await read_three(consumer)
    await admin.delete_topics([topic])

    partition = sent[0].partition
    assert {m.partition for m in sent} == {partition}
    assert [(r.offset, r.value) for r in records] == [
        (m.offset, v) for m, v in zip(sent, [b"v0", b"v1", b"v2"], strict=True)
    ]
    server = json.dumps(bootstrap)

    # PRODUCER spans: one per send, ended when delivered; the failed one marked so
    sends = recorded.spans(f"{topic} send")
    assert [s.kind for s in sends] == [SpanKind.PRODUCER] * 4
    for span in sends[:3]:
        assert dict(span.attributes or {}) == {
            "messaging.system": "kafka",
            "server.address": server,
            "messaging.client.id": "traced-producer",
            "messaging.destination.name": topic,
            "messaging.destination.partition.id": str(partition),
            "messaging.kafka.message.key": KEY.decode(),
            "messaging.operation.name": "send",
            "messaging.operation.type": "publish",
        }
        assert span.status.status_code is StatusCode.UNSET and span.parent is None
    failed = sends[3]
    assert failed.status.status_code is StatusCode.ERROR
    assert (failed.attributes or {})["error.type"] == "ValueError"
    assert "messaging.destination.partition.id" not in (failed.attributes or {})

    # the context travels in the headers (after the caller's own)
    assert records[0].headers == (("origin", b"test"), ("traceparent", traceparent(sends[0]).encode()))
    for record, send in zip(records, sends, strict=False):
        assert header(record, "traceparent") == [traceparent(send).encode()]

    # CONSUMER spans: each record's span is a child of its send's span
    reads = [s for s in recorded.spans(f"{topic} receive") if s.parent is not None and s.parent.is_remote]
    assert len(reads) == 3
    for read, send, record in zip(reads, sends, records, strict=False):
        assert read.kind is SpanKind.CONSUMER
        assert read.parent is not None and send.context is not None
        assert (read.parent.trace_id, read.parent.span_id) == (send.context.trace_id, send.context.span_id)
        assert dict(read.attributes or {}) == {
            "messaging.system": "kafka",
            "server.address": server,
            "messaging.client.id": "traced-consumer",
            "messaging.consumer.group.name": group,
            "messaging.destination.name": topic,
            "messaging.destination.partition.id": str(partition),
            "messaging.kafka.message.key": KEY.decode(),
            "messaging.kafka.message.offset": record.offset,
            "messaging.message.id": f"{topic}.{partition}.{record.offset}",
            "messaging.operation.name": "receive",
            "messaging.operation.type": "receive",
        }
    # getmany(): a poll span over a partition span that links the record's span
    [batch] = [s for s in recorded.spans(f"{topic} receive") if s.links]
    assert reads[2].context is not None and batch.context is not None
    assert [link.context.span_id for link in batch.links] == [reads[2].context.span_id]
    assert (batch.attributes or {})["messaging.batch.message_count"] == 1
    [poll] = [s for s in recorded.spans(f"{topic} receive") if s.parent is None]
    assert batch.parent is not None and poll.context is not None
    assert batch.parent.span_id == poll.context.span_id
    assert (poll.attributes or {})["messaging.batch.message_count"] == 1

    # the conventions' metrics
    sent_at = {
        "messaging.system": "kafka",
        "messaging.operation.name": "send",
        "messaging.destination.name": topic,
        "messaging.destination.partition.id": str(partition),
    }
    assert total(recorded, "messaging.client.sent.messages", **sent_at) == 3
    assert (
        total(
            recorded,
            "messaging.client.consumed.messages",
            **{**sent_at, "messaging.operation.name": "receive", "messaging.consumer.group.name": group},
        )
        == 3
    )
    duration = "messaging.client.operation.duration"
    assert total(recorded, duration, **sent_at, **{"messaging.operation.type": "publish"}) == 3
    refused = {
        "messaging.system": "kafka",
        "messaging.operation.name": "send",
        "messaging.destination.name": topic,
    }
    assert (
        total(
            recorded,
            duration,
            **refused,
            **{"messaging.operation.type": "publish", "error.type": "ValueError"},
        )
        == 1
    )
    receive = {
        "messaging.system": "kafka",
        "messaging.operation.name": "receive",
        "messaging.operation.type": "receive",
    }
    assert total(recorded, duration, **receive, **{"messaging.consumer.group.name": group}) == 3


async def test_off_until_instrumented_and_bad_context_read_without_loss(
    kafka_cluster: Any, admin: AdminClient
) -> None:
    """Before instrument() and after uninstrument() the methods are the originals; a record
    whose traceparent is not UTF-8 is still read, its span starting a trace of its own."""
    bootstrap = kafka_cluster.bootstrap()
    topic = unique("otel-off")
    await admin.create_topics([NewTopic(topic, 1, 3)])
    originals = {
        (cls, name): cls.__dict__[name]
        for cls, names in (
            (AIOKafkaProducer, ("send", "transaction", "commit_transaction")),
            (AIOKafkaConsumer, ("getone", "getmany")),
        )
        for name in names
    }
    async with AIOKafkaProducer(bootstrap_servers=bootstrap) as producer:
        await producer.send_and_wait(topic, b"bad", headers=[("traceparent", b"\xff\xfe not text")])
        with instrumented() as recorded:
            assert all(cls.__dict__[name] is not f for (cls, name), f in originals.items())
            await producer.send_and_wait(topic, b"traced")
            consumer: AIOKafkaConsumer[bytes, bytes]
            async with AIOKafkaConsumer(
                topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest"
            ) as consumer:
                with anyio.fail_after(RECEIVE_TIMEOUT):
                    bad, traced = await consumer.getone(), await consumer.getone()
        assert all(cls.__dict__[name] is f for (cls, name), f in originals.items())
        await producer.send_and_wait(topic, b"after")
    await admin.delete_topics([topic])

    assert bad.value == b"bad" and header(bad, "traceparent") == [b"\xff\xfe not text"]
    [send] = recorded.spans(f"{topic} send")
    bad_read, traced_read = recorded.spans(f"{topic} receive")
    assert bad_read.parent is None  # no valid context: a root span
    assert traced_read.parent is not None and send.context is not None
    assert traced_read.parent.span_id == send.context.span_id
    assert header(traced, "traceparent") == [traceparent(send).encode()]
    assert len(recorded.spans()) == 3  # nothing from the send after uninstrument()


async def test_a_failed_delivery_ends_its_span_failed_and_is_counted(
    kafka_cluster: Any, admin: AdminClient
) -> None:
    """The broker refuses a record over the topic's max.message.bytes: its span ends with
    status ERROR and error.type (the class of its Kafka error code, MESSAGE_TOO_LARGE), the
    sent-messages counter has it under that error.type."""
    bootstrap = kafka_cluster.bootstrap()
    topic = unique("otel-refused")
    await admin.create_topics([NewTopic(topic, 1, 3, topic_configs={"max.message.bytes": "1000"})])
    with instrumented() as recorded:
        async with AIOKafkaProducer(bootstrap_servers=bootstrap) as producer:
            with anyio.fail_after(RECEIVE_TIMEOUT), pytest.raises(MessageSizeTooLargeError):
                await producer.send_and_wait(topic, random.Random(7).randbytes(1500))
    await admin.delete_topics([topic])
    [span] = recorded.spans(f"{topic} send")
    assert span.status.status_code is StatusCode.ERROR
    attributes = span.attributes or {}
    assert attributes["error.type"] == "MessageTooLargeError"
    assert attributes["messaging.destination.partition.id"] == "0"
    assert [e.name for e in span.events] == ["exception"]
    failed = {
        "messaging.system": "kafka",
        "messaging.operation.name": "send",
        "messaging.destination.name": topic,
        "messaging.destination.partition.id": "0",
        "error.type": "MessageTooLargeError",
    }
    assert total(recorded, "messaging.client.sent.messages", **failed) == 1
    assert [a for a, _ in recorded.points("messaging.client.sent.messages")] == [failed]


async def test_hooks_see_each_span_and_a_failing_hook_loses_nothing(
    kafka_cluster: Any, admin: AdminClient, caplog: pytest.LogCaptureFixture
) -> None:
    """opentelemetry-instrumentation-aiokafka's hooks: the produce hook sees the span and the
    headers about to be sent, the consume hook each record's span; one that raises is logged."""
    bootstrap = kafka_cluster.bootstrap()
    topic = unique("otel-hooks")
    await admin.create_topics([NewTopic(topic, 1, 3)])
    seen: list[tuple[str, Any]] = []

    async def on_send(span: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        span.set_attribute("app.order", args[1].decode())
        seen.append(("send", [k for k, _ in kwargs["headers"]]))
        if args[1] == b"second":
            raise RuntimeError("a broken hook")

    async def on_read(span: Any, record: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        span.set_attribute("app.read", record.value.decode())
        seen.append(("read", record.offset))

    with instrumented(async_produce_hook=on_send, async_consume_hook=on_read) as recorded:
        async with AIOKafkaProducer(bootstrap_servers=bootstrap) as producer:
            await producer.send_and_wait(topic, b"first")
            await producer.send_and_wait(topic, b"second")
        consumer: AIOKafkaConsumer[bytes, bytes]
        async with AIOKafkaConsumer(
            topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest"
        ) as consumer:
            with anyio.fail_after(RECEIVE_TIMEOUT):
                values = [(await consumer.getone()).value for _ in range(2)]
    await admin.delete_topics([topic])
    assert values == [b"first", b"second"]
    assert "a broken hook" in caplog.text
    assert seen == [("send", ["traceparent"]), ("send", ["traceparent"]), ("read", 0), ("read", 1)]
    sends = recorded.spans(f"{topic} send")
    assert [(s.attributes or {})["app.order"] for s in sends] == ["first", "second"]
    reads = recorded.spans(f"{topic} receive")
    assert [(s.attributes or {})["app.read"] for s in reads] == ["first", "second"]


async def test_transactions_traced(kafka_cluster: Any, admin: AdminClient) -> None:
    bootstrap = kafka_cluster.bootstrap()
    topic = unique("otel-txn")
    await admin.create_topics([NewTopic(topic, 1, 3)])
    with instrumented() as recorded:
        async with AIOKafkaProducer(
            bootstrap_servers=bootstrap, transactional_id=unique("otel-tx"), client_id="txn-producer"
        ) as producer:
            async with producer.transaction():
                await producer.send_and_wait(topic, b"committed")
            with pytest.raises(RuntimeError, match="changed my mind"):
                async with producer.transaction():
                    await producer.send_and_wait(topic, b"aborted")
                    raise RuntimeError("changed my mind")
            await producer.begin_transaction()
            await producer.send_and_wait(topic, b"by calls")
            await producer.commit_transaction()
    await admin.delete_topics([topic])

    spans = recorded.spans()
    names = [(s.name, s.kind) for s in spans]
    send = (f"{topic} send", SpanKind.PRODUCER)
    commit, abort = ("commit_transaction", SpanKind.CLIENT), ("abort_transaction", SpanKind.CLIENT)
    block = ("transaction", SpanKind.INTERNAL)
    assert names == [send, commit, block, send, abort, block, send, commit]
    by_id = {s.context.span_id: s for s in spans if s.context is not None}

    def parent(span: ReadableSpan) -> ReadableSpan | None:
        return None if span.parent is None else by_id[span.parent.span_id]

    assert parent(spans[0]) is spans[2] and parent(spans[1]) is spans[2]
    assert parent(spans[3]) is spans[5] and parent(spans[4]) is spans[5]
    assert parent(spans[6]) is None and parent(spans[7]) is None
    assert spans[2].status.status_code is StatusCode.UNSET
    assert spans[5].status.status_code is StatusCode.ERROR
    assert (spans[5].attributes or {})["error.type"] == "RuntimeError"
    assert dict(spans[1].attributes or {}) == {
        "messaging.system": "kafka",
        "server.address": json.dumps(bootstrap),
        "messaging.client.id": "txn-producer",
        "messaging.operation.name": "commit_transaction",
    }
    commits = {"messaging.system": "kafka", "messaging.operation.name": "commit_transaction"}
    assert total(recorded, "messaging.client.operation.duration", **commits) == 2


async def test_same_spans_as_opentelemetry_instrumentation_on_aiokafka(
    admin: AdminClient, kafka_cluster: Any
) -> None:
    """tests/integration/frameworks/otel_scenario.py with aiokafka and OpenTelemetry's
    instrumentation, then with aiokafka_lead and its own: the same spans (names, kinds,
    attributes, parents, links, events, status) and trace context in the records' headers;
    only the instrumentation scope differs."""
    bootstrap = kafka_cluster.bootstrap()
    theirs = await run_scenario(admin, bootstrap, alias=False)
    ours = await run_scenario(admin, bootstrap, first_party=True)
    assert theirs["aiokafka"].startswith("aiokafka ") and ours["aiokafka"].startswith("aiokafka_lead ")
    assert {s["scope"] for s in theirs["spans"]} == {"opentelemetry.instrumentation.aiokafka"}
    assert {s["scope"] for s in ours["spans"]} == {"aiokafka_lead.instrumentation.opentelemetry"}
    for document in (theirs, ours):
        for span in document["spans"]:
            del span["scope"]
    assert len(theirs["spans"]) == 6
    difference = "\n".join(
        difflib.unified_diff(as_text(theirs), as_text(ours), "aiokafka", "aiokafka_lead", lineterm="")
    )
    assert not difference, f"the spans differ:\n{difference}"


async def test_without_an_sdk_records_carry_the_callers_context(
    kafka_cluster: Any, admin: AdminClient
) -> None:
    """No SDK (the API's no-op providers, given or global and unset): no span is made, but
    as the API's no-op spans do, the context the caller is in still goes on: a sent record
    carries the caller's span context and baggage, as the propagator writes them; outside
    any context the caller's headers go as they are."""
    bootstrap = kafka_cluster.bootstrap()
    topic = unique("otel-nosdk")
    await admin.create_topics([NewTopic(topic, 1, 3)])
    caller = SpanContext(0x5CE0E9A56015FEC5AADFA328AE398115, 0xAB54A98CEB1F0AD2, True, TraceFlags(1))
    stale = ("traceparent", b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
    setups: list[dict[str, Any]] = [
        {"tracer_provider": NoOpTracerProvider(), "meter_provider": NoOpMeterProvider()},
    ]
    if global_tracer_provider() is None and global_meter_provider() is None:
        setups.append({})  # the global providers, not set
    for options in setups:
        instrumentor = AIOKafkaLeadInstrumentor()
        instrumentor.instrument(**options)
        try:
            async with AIOKafkaProducer(bootstrap_servers=bootstrap) as producer:
                headers = [("origin", b"test"), stale]
                outside = await producer.send_and_wait(topic, b"outside", headers=headers)
                in_span = trace.set_span_in_context(NonRecordingSpan(caller))
                token = otel_context.attach(baggage.set_baggage("tenant", "t-1", in_span))
                try:
                    inside = await producer.send_and_wait(topic, b"inside", headers=headers)
                finally:
                    otel_context.detach(token)
                assert headers == [("origin", b"test"), stale]  # the caller's list is untouched
            consumer: AIOKafkaConsumer[bytes, bytes]
            async with AIOKafkaConsumer(
                topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest"
            ) as consumer:
                consumer.seek(TopicPartition(topic, 0), outside.offset)
                with anyio.fail_after(RECEIVE_TIMEOUT):
                    first, second = await consumer.getone(), await consumer.getone()
        finally:
            instrumentor.uninstrument()
        assert (first.offset, first.value) == (outside.offset, b"outside")
        assert first.headers == (("origin", b"test"), stale)
        assert (second.offset, second.value) == (inside.offset, b"inside")
        assert second.headers == (
            ("origin", b"test"),
            ("traceparent", f"00-{caller.trace_id:032x}-{caller.span_id:016x}-01".encode()),
            ("baggage", b"tenant=t-1"),
        )
    await admin.delete_topics([topic])


async def test_spans_sampled_out_still_propagate_and_count(kafka_cluster: Any, admin: AdminClient) -> None:
    """With the SDK and a sampler that drops every span: nothing is exported, the record
    still carries its (unsampled) span's context, so that the consumer's side follows the
    decision, and the messaging metrics still count every record."""
    bootstrap = kafka_cluster.bootstrap()
    topic = unique("otel-dropped")
    await admin.create_topics([NewTopic(topic, 1, 3)])
    with instrumented(sampler=ALWAYS_OFF) as recorded:
        async with AIOKafkaProducer(bootstrap_servers=bootstrap) as producer:
            sent = [await producer.send_and_wait(topic, b"v%d" % i) for i in range(3)]
        consumer: AIOKafkaConsumer[bytes, bytes]
        async with AIOKafkaConsumer(
            topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest"
        ) as consumer:
            with anyio.fail_after(RECEIVE_TIMEOUT):
                records = [await consumer.getone() for _ in sent]
    await admin.delete_topics([topic])
    assert recorded.spans() == []
    contexts = [TRACEPARENT.match(header(r, "traceparent")[0].decode()) for r in records]
    assert all(c is not None and not int(c[3], 16) & 1 for c in contexts)  # valid ids, not sampled
    assert len({c[2] for c in contexts if c is not None}) == 3  # one span each
    sent_at = {
        "messaging.system": "kafka",
        "messaging.operation.name": "send",
        "messaging.destination.name": topic,
        "messaging.destination.partition.id": "0",
    }
    assert total(recorded, "messaging.client.sent.messages", **sent_at) == 3
    duration = "messaging.client.operation.duration"
    assert total(recorded, duration, **sent_at, **{"messaging.operation.type": "publish"}) == 3
    consumed = {**sent_at, "messaging.operation.name": "receive"}
    assert total(recorded, "messaging.client.consumed.messages", **consumed) == 3


async def test_global_providers_set_after_instrument_are_used(kafka_cluster: Any, admin: AdminClient) -> None:
    """instrument() before the application sets the global providers (each can be set once
    per process: the scenario runs in its own): a send before is not traced nor counted, a
    send after is, and the reads after it are traced whatever their records carry."""
    bootstrap = kafka_cluster.bootstrap()
    topic = unique("otel-later")
    await admin.create_topics([NewTopic(topic, 1, 3)])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    try:
        with anyio.fail_after(150.0):
            done = await anyio.run_process(
                [sys.executable, str(GLOBAL_LATER), bootstrap, topic], cwd=ROOT, env=env, check=False
            )
    finally:
        await admin.delete_topics([topic])
    assert done.returncode == 0, done.stderr.decode()[-6000:]
    document = json.loads(done.stdout)
    before, after = document["records"]
    assert before["headers"] == [] and before["value"] == "before"
    [send] = [s for s in document["spans"] if s["kind"] == "PRODUCER"]
    [(name, context)] = after["headers"]
    assert name == "traceparent" and context.startswith(f"00-{send['trace']}-{send['span']}-")
    reads = [s for s in document["spans"] if s["kind"] == "CONSUMER"]
    assert [r["parent"] for r in reads] == [None, {"trace": send["trace"], "span": send["span"]}]
    assert document["sent"] == 1 and document["consumed"] == 2


async def test_records_of_a_split_batch_each_counted_once(kafka_cluster: Any, admin: AdminClient) -> None:
    """A batch the broker refuses as too large is split and its parts resent: every record's
    span ends delivered, and the sent-messages counter has each record once."""
    bootstrap = kafka_cluster.bootstrap()
    topic = unique("otel-split")
    await admin.create_topics([NewTopic(topic, 1, 3, topic_configs={"max.message.bytes": "1000"})])
    values = [random.Random(i).randbytes(400) for i in range(3)]
    with instrumented() as recorded:
        async with AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=200) as producer:
            handles = [await producer.send(topic, value) for value in values]
            with anyio.fail_after(RECEIVE_TIMEOUT):
                delivered = [await handle for handle in handles]
    await admin.delete_topics([topic])
    assert [m.offset for m in delivered] == [0, 1, 2]
    assert len({id(handle._target()) for handle in handles}) > 1  # one batch, split into parts
    spans = recorded.spans(f"{topic} send")
    assert [s.status.status_code for s in spans] == [StatusCode.UNSET] * 3
    sent_at = {
        "messaging.system": "kafka",
        "messaging.operation.name": "send",
        "messaging.destination.name": topic,
        "messaging.destination.partition.id": "0",
    }
    assert [a for a, _ in recorded.points("messaging.client.sent.messages")] == [sent_at]
    assert total(recorded, "messaging.client.sent.messages", **sent_at) == 3
