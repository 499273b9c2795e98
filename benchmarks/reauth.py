"""KIP-368 re-authentication: ours against aiokafka on a broker that limits SASL sessions.

One single-node cluster with a SASL_PLAINTEXT listener whose OAUTHBEARER tokens are RS256
JWTs checked against the JWKS of a local OIDC server (aiokafka_lead.testing.oidc) that issues
tokens living ``--token-s`` seconds, and ``connections.max.reauth.ms`` = ``--reauth-ms``. For
``--seconds``, each client (in the same process, at the same time) runs a producer sending
``--rate`` records/s and a consumer in a group of its own reading them. Counted per client:

* send errors and records lost (sent but never read);
* connections the broker closed (ours: ``metrics()``; aiokafka: its connections closed as
  CONNECTION_BROKEN, counted by wrapping ``AIOKafkaConnection.close``);
* rebalances (partitions revoked after the first assignment);
* re-authentications (ours; aiokafka has none).

    python benchmarks/reauth.py                      # 120 s, 3 s sessions, 10 s tokens
    python benchmarks/reauth.py --seconds 30

Writes benchmarks/results/reauth.json and reauth.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio

from aiokafka_lead import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka_lead.abc import ConsumerRebalanceListener
from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.auth.oidc import OIDCTokenProvider
from aiokafka_lead.testing.cluster import KafkaCluster
from aiokafka_lead.testing.oidc import AUDIENCE, running_oidc_server

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
CLIENT_ID, SECRET = "bench-client", "bench-secret"
LOGS: dict[str, LogCounter] = {}


def say(message: str) -> None:
    print(message, flush=True)


class Listener(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.assignments = 0
        self.rebalances = 0

    async def on_partitions_revoked(self, revoked: Any) -> None:
        if self.assignments and revoked:
            self.rebalances += 1

    async def on_partitions_assigned(self, assigned: Any) -> None:
        self.assignments += 1


class LogCounter(logging.Handler):
    """WARNING and ERROR records of one library's loggers (what an operator would see)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0
        self.examples: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
        if len(self.examples) < 5:
            self.examples.append(record.getMessage()[:200])


def aiokafka_closes() -> dict[str, int]:
    """Wrap aiokafka's AIOKafkaConnection.close to count why its connections close."""
    from aiokafka import conn

    counts: dict[str, int] = {}
    original = conn.AIOKafkaConnection.close

    def close(self: Any, reason: Any = None, exc: Any = None) -> Any:
        if self._reader is not None:  # open until now (a second close changes nothing)
            name = getattr(reason, "name", str(reason))
            counts[name] = counts.get(name, 0) + 1
        return original(self, reason=reason, exc=exc)

    conn.AIOKafkaConnection.close = close  # type: ignore[method-assign]
    return counts


async def run_client(
    flavour: str, bootstrap: str, token_url: str, topic: str, *, seconds: float, rate: float
) -> dict[str, Any]:
    """One producer and one consumer of ``flavour`` ("ours" or "aiokafka") for ``seconds``."""
    oidc = OIDCTokenProvider(token_url, CLIENT_ID, SECRET)
    security: dict[str, Any] = {
        "bootstrap_servers": bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "OAUTHBEARER",
    }
    if flavour == "ours":
        producer_cls: Any = AIOKafkaProducer
        consumer_cls: Any = AIOKafkaConsumer
        listener: Any = Listener()
        security["sasl_oauth_token_provider"] = oidc
    else:
        import aiokafka
        import aiokafka.abc

        class Adapter(aiokafka.abc.AbstractTokenProvider):  # type: ignore[misc]
            async def token(self) -> str:
                return await oidc.token()

        producer_cls, consumer_cls = aiokafka.AIOKafkaProducer, aiokafka.AIOKafkaConsumer
        security["sasl_oauth_token_provider"] = Adapter()

        class AioListener(aiokafka.abc.ConsumerRebalanceListener):  # type: ignore[misc]
            def __init__(self) -> None:
                self.inner = Listener()
                self.assignments = self.rebalances = 0

            async def on_partitions_revoked(self, revoked: Any) -> None:
                await self.inner.on_partitions_revoked(revoked)
                self.rebalances = self.inner.rebalances

            async def on_partitions_assigned(self, assigned: Any) -> None:
                await self.inner.on_partitions_assigned(assigned)
                self.assignments = self.inner.assignments

        listener = AioListener()
    sent: set[bytes] = set()
    received: set[bytes] = set()
    errors: list[str] = []
    producer = producer_cls(linger_ms=5, **security)
    consumer = consumer_cls(group_id=f"reauth-{flavour}-{uuid.uuid4().hex[:6]}", auto_offset_reset="earliest",
                            **security)
    await producer.start()
    await consumer.start()
    consumer.subscribe([topic + "-" + flavour], listener=listener)
    stop = anyio.Event()

    async def produce() -> None:
        n = 0
        next_at = time.monotonic()
        while not stop.is_set():
            value = f"{flavour}-{n}".encode()
            try:
                await producer.send_and_wait(topic + "-" + flavour, value)
                sent.add(value)
            except Exception as exc:  # counted, not fatal: the point is to see them
                errors.append(f"send: {exc!r}")
            n += 1
            next_at += 1 / rate
            await anyio.sleep(max(0.0, next_at - time.monotonic()))

    async def consume() -> None:
        while not stop.is_set() or len(received) < len(sent):
            try:
                batches = await consumer.getmany(timeout_ms=200)
            except Exception as exc:
                errors.append(f"consume: {exc!r}")
                continue
            for records in batches.values():
                received.update(r.value for r in records)
            if stop.is_set() and time.monotonic() > drain_deadline:
                return

    drain_deadline = float("inf")
    async with anyio.create_task_group() as tg:
        tg.start_soon(produce)
        tg.start_soon(consume)
        await anyio.sleep(seconds)
        drain_deadline = time.monotonic() + 30
        stop.set()
    result: dict[str, Any] = {
        "sent": len(sent),
        "received": len(received & sent),
        "lost": len(sent - received),
        "errors": len(errors),
        "error_examples": errors[:5],
        "rebalances": listener.rebalances,
        "token_fetches": oidc.fetches,
        "logged_warnings": LOGS[flavour].count,
        "logged_examples": LOGS[flavour].examples,
    }
    if flavour == "ours":
        pm, cm = producer.metrics(), consumer.metrics()
        result["connections_closed_by_broker"] = pm["connections_closed_by_broker"] + cm[
            "connections_closed_by_broker"
        ]
        result["reauthentications"] = pm["sasl_reauthentications"] + cm["sasl_reauthentications"]
        conns = [
            s.conn
            for client in (producer, consumer)
            for s in client._core.pool._nodes.values()
            if s.conn is not None and s.conn.node_id >= 0
        ]
        result["reauthentications_per_connection"] = sorted(c.reauthentications for c in conns)
        result["connects"] = producer._core.pool.connects + consumer._core.pool.connects
    await consumer.stop()
    await producer.stop()
    return result


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    closes = aiokafka_closes()
    for flavour, logger in (("ours", "aiokafka_lead"), ("aiokafka", "aiokafka")):
        LOGS[flavour] = LogCounter()
        logging.getLogger(logger).addHandler(LOGS[flavour])
    with (
        running_oidc_server(clients={CLIENT_ID: SECRET}, lifetime_s=args.token_s) as oidc,
        tempfile.TemporaryDirectory(prefix="reauth-") as tmp,
    ):
        cluster = KafkaCluster(
            tmp,
            1,
            listeners=("PLAINTEXT", "SASL_PLAINTEXT"),
            sasl_mechanisms=("OAUTHBEARER",),
            oauth_jwks_url=oidc.jwks_url,
            oauth_audience=AUDIENCE,
            oauth_issuer=oidc.issuer,
            extra_properties={"connections.max.reauth.ms": str(args.reauth_ms)},
            stop_at_exit=True,
        )
        cluster.up(timeout=180)
        try:
            topic = f"reauth-{uuid.uuid4().hex[:6]}"
            async with AdminClient(bootstrap_servers=cluster.bootstrap("PLAINTEXT")) as admin:
                await admin.create_topics([NewTopic(f"{topic}-{f}", 3, 1) for f in ("ours", "aiokafka")])
            bootstrap = cluster.bootstrap("SASL_PLAINTEXT")
            results: dict[str, Any] = {}

            async def one(flavour: str) -> None:
                results[flavour] = await run_client(
                    flavour, bootstrap, oidc.token_url, topic, seconds=args.seconds, rate=args.rate
                )

            say(f"running both clients for {args.seconds:.0f} s "
                f"(sessions {args.reauth_ms} ms, tokens {args.token_s:.0f} s)")
            async with anyio.create_task_group() as tg:
                tg.start_soon(one, "ours")
                tg.start_soon(one, "aiokafka")
        finally:
            cluster.down()
    results["aiokafka"]["connections_closed_by_broker"] = closes.get("CONNECTION_BROKEN", 0)
    results["aiokafka"]["close_reasons"] = closes
    results["aiokafka"]["reauthentications"] = 0
    return {
        "seconds": args.seconds,
        "reauth_ms": args.reauth_ms,
        "token_s": args.token_s,
        "rate": args.rate,
        "results": results,
    }


def report(data: dict[str, Any]) -> str:
    rows = [
        "| client | sent | lost | errors | closed by broker | rebalances | re-authentications "
        "| logged warnings |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for flavour, label in (("ours", "aiokafka_lead"), ("aiokafka", "aiokafka 0.14")):
        r = data["results"][flavour]
        rows.append(
            f"| {label} | {r['sent']} | {r['lost']} | {r['errors']} | {r['connections_closed_by_broker']} "
            f"| {r['rebalances']} | {r['reauthentications']} | {r['logged_warnings']} |"
        )
    ours = data["results"]["ours"]
    return "\n".join(
        [
            f"# KIP-368 re-authentication ({data['seconds']:.0f} s, connections.max.reauth.ms="
            f"{data['reauth_ms']}, {data['token_s']:.0f} s tokens, {data['rate']:.0f} records/s)",
            "",
            *rows,
            "",
            f"aiokafka_lead re-authentications per connection: {ours['reauthentications_per_connection']}",
            "",
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--reauth-ms", type=int, default=3000)
    parser.add_argument("--token-s", type=float, default=10)
    parser.add_argument("--rate", type=float, default=50)
    args = parser.parse_args()
    data = anyio.run(main_async, args)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "reauth.json").write_text(json.dumps(data, indent=2) + "\n")
    text = report(data)
    (RESULTS / "reauth.md").write_text(text)
    say(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
