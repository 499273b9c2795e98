"""Every metric of the catalogue is one some client has, and the documentation's table is
generated from the catalogue."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import anyio

from aiokafka_lead.admin import AdminClient
from aiokafka_lead.producer import AIOKafkaProducer
from aiokafka_lead.telemetry.names import CATALOG, MetricName, spec_of
from aiokafka_lead.testing.fake import FakeCluster
from tests.unit.consumer.test_share_consumer_fake import TP0, share, take
from tests.unit.consumer.util import DEADLINE, consume, consumer, produce

ROOT = Path(__file__).resolve().parents[3]
TYPES = ("producer", "consumer-share", "consumer", "admin-client")


def declared(name: MetricName) -> tuple[str, str]:
    """The catalogue's key of a metric a client reported."""
    for kind in TYPES:
        spec = spec_of(name.group, name.name, kind)
        if spec is not None:
            return next(key for key, s in CATALOG.items() if s is spec and key[1] == name.name)
    return name.group, name.name


async def test_every_declared_metric_is_reported_by_a_client() -> None:
    seen: set[tuple[str, str]] = set()
    with anyio.fail_after(DEADLINE):
        async with FakeCluster(brokers=1) as fc:
            fc.create_topic("t", 1, 1)
            fc.shares.configure("g", auto_offset_reset="earliest")
            async with AIOKafkaProducer(bootstrap_servers=fc.bootstrap) as producer:
                await producer.send_and_wait("t", b"x", partition=0)
                seen |= {declared(m) for m in producer.kafka_metrics()}
            async with consumer(fc, group_id="c") as c:
                c.subscribe(["t"])
                await consume(c, 1)
                seen |= {declared(m) for m in c.kafka_metrics()}
            produce(fc, TP0, [b"s"])
            async with share(fc) as s:
                await take(s, 1)
                seen |= {declared(m) for m in s.kafka_metrics()}
            async with AdminClient(bootstrap_servers=fc.bootstrap) as admin:
                await admin.list_topics()
                seen |= {declared(m) for m in admin.kafka_metrics()}
    assert set(CATALOG) - seen == set()
    assert seen <= set(CATALOG)


def test_the_documented_table_is_the_catalogue() -> None:
    spec = importlib.util.spec_from_file_location("gen_metrics_docs", ROOT / "tools" / "gen_metrics_docs.py")
    assert spec and spec.loader
    gen = importlib.util.module_from_spec(spec)
    sys.modules["gen_metrics_docs"] = gen
    spec.loader.exec_module(gen)
    assert gen.main(["--check"]) == 0, "run python tools/gen_metrics_docs.py"
