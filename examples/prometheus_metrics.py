"""Serve the clients' metrics to Prometheus (``pip install prometheus_client``).

    python examples/prometheus_metrics.py --bootstrap localhost:9092 --topic orders --port 9464

A producer sends a record every ``--interval`` seconds and a consumer reads them, while
``http://<host>:<port>/metrics`` serves what each client's ``metrics()`` returns, through
prometheus_client's collector interface (``--port 0``: any free port; the address is printed).

The collector knows no metric by name: it walks whatever ``metrics()`` returns, so metrics a
newer release adds appear without a change here. Each number becomes a gauge sample:

* the path of text keys down to it is the metric's name, made Prometheus-safe, under
  ``aiokafka_lead_`` (``{"errors": {"NOT_LEADER_OR_FOLLOWER": 2}}`` is
  ``aiokafka_lead_errors_not_leader_or_follower 2``);
* integer keys (node ids) become the label ``key``, ``key2``, ...; ``TopicPartition`` keys the
  labels ``topic`` and ``partition``; every sample has the label ``client`` (the name the
  client was registered with);
* booleans are 0 or 1; text, ``None`` and lists are left out.

The Java client's metrics (``kafka_metrics()``; ``metrics()["kafka"]`` holds the same) are
served as ``kafka_`` + group + name, tags as labels (``producer-node-metrics`` /
``request-latency-avg`` with ``node-id=node-1`` is
``kafka_producer_node_metrics_request_latency_avg{node_id="node-1"}``).

Prometheus scrapes from the HTTP server's thread, while the clients belong to the event
loop: the collector asks the loop for each snapshot (``run_coroutine_threadsafe``) instead
of reading the clients from the other thread.

SIGTERM / SIGINT stop the clients and the server.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import signal
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from prometheus_client import REGISTRY, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from aiokafka_lead import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka_lead.structs import TopicPartition

PREFIX = "aiokafka_lead"
#: how long a scrape waits for the event loop's snapshot
SNAPSHOT_TIMEOUT_S = 5.0

Sample = tuple[tuple[str, ...], dict[str, str], float]


def _name_part(key: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_]+", "_", key).strip("_").lower() or "value"


def samples(value: Any, path: tuple[str, ...] = (), labels: dict[str, str] | None = None) -> Iterator[Sample]:
    """``(name parts, labels, number)`` of every number inside a ``metrics()`` answer."""
    labels = labels or {}
    if isinstance(value, int | float):  # booleans too (0 or 1)
        yield path, labels, float(value)
    elif isinstance(value, Mapping):
        for key, inner in value.items():
            if isinstance(key, TopicPartition):
                yield from samples(
                    inner, path, {**labels, "topic": key.topic, "partition": str(key.partition)}
                )
            elif isinstance(key, int) and not isinstance(key, bool):
                label = "key" if "key" not in labels else f"key{sum(k.startswith('key') for k in labels) + 1}"
                yield from samples(inner, path, {**labels, label: str(key)})
            else:
                yield from samples(inner, (*path, _name_part(str(key))), labels)


class ClientMetricsCollector(Collector):
    """The ``metrics()`` of the clients registered with it, as Prometheus gauges."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._clients: dict[str, Any] = {}

    def register(self, name: str, client: Any) -> None:
        self._clients[name] = client

    def describe(self) -> list[GaugeMetricFamily]:
        """Nothing up front: the names are known only once the clients answer."""
        return []

    def _read(self) -> dict[str, tuple[dict[str, Any], dict[Any, float]]]:
        out = {}
        for name, client in self._clients.items():
            ours = {k: v for k, v in client.metrics().items() if k != "kafka"}
            out[name] = (ours, client.kafka_metrics())
        return out

    async def _snapshot(self) -> dict[str, tuple[dict[str, Any], dict[Any, float]]]:
        return self._read()

    def _on_loop(self) -> bool:
        try:
            return asyncio.get_running_loop() is self._loop
        except RuntimeError:
            return False

    def collect(self) -> Iterator[GaugeMetricFamily]:
        if self._on_loop():  # called from the loop itself: no thread to hand over to
            snapshot = self._read()
        else:
            future = asyncio.run_coroutine_threadsafe(self._snapshot(), self._loop)
            snapshot = future.result(SNAPSHOT_TIMEOUT_S)
        families: dict[str, GaugeMetricFamily] = {}
        label_names: dict[str, tuple[str, ...]] = {}

        def add(name: str, doc: str, client: str, labels: dict[str, str], number: float) -> None:
            names = ("client", *labels)
            family = families.get(name)
            if family is None:
                family = families[name] = GaugeMetricFamily(name, doc, labels=names)
                label_names[name] = names
            elif label_names[name] != names:
                return  # one family has one label set
            family.add_metric([client, *labels.values()], number)

        for client, (metrics, kafka) in snapshot.items():
            for path, labels, number in samples(metrics):
                add("_".join((PREFIX, *path)), f"metrics() {'.'.join(path)}", client, labels, number)
            for metric, number in kafka.items():
                name = f"kafka_{_name_part(metric.group)}_{_name_part(metric.name)}"
                tags = {_name_part(k): v for k, v in metric.tags}
                add(name, f"{metric.group} {metric.name}", client, tags, number)
        yield from families.values()


async def main(args: argparse.Namespace) -> int:
    collector = ClientMetricsCollector(asyncio.get_running_loop())
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    async with (
        AIOKafkaProducer(bootstrap_servers=args.bootstrap, client_id="metrics-example") as producer,
        AIOKafkaConsumer(
            args.topic, bootstrap_servers=args.bootstrap, group_id=args.group, auto_offset_reset="earliest"
        ) as consumer,
    ):
        collector.register("producer", producer)
        collector.register("consumer", consumer)
        REGISTRY.register(collector)
        server, thread = start_http_server(args.port, addr=args.addr)
        print(f"serving http://{args.addr}:{server.server_port}/metrics", flush=True)
        try:
            sent = 0
            while not stop.is_set():
                await producer.send(args.topic, b"event %d" % sent)
                sent += 1
                await consumer.getmany(timeout_ms=int(args.interval * 1000))
        finally:
            server.shutdown()
            thread.join()
            REGISTRY.unregister(collector)
    print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", default="localhost:9092")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", default="prometheus-example")
    parser.add_argument("--port", type=int, default=9464, help="0: any free port")
    parser.add_argument("--addr", default="127.0.0.1")
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between records")
    sys.exit(asyncio.run(main(parser.parse_args())))
