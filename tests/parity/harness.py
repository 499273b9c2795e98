"""Runs one scenario with aiokafka, then with aiokafka_lead, and compares the outcomes.

A scenario is ``async def scenario(f, ctx)``: ``f`` is the flavour (the package's
modules), ``ctx`` the run's context. It records what it observes with ``ctx.out`` (a
value), ``ctx.step`` (an awaitable: its result or the exception it raised) and
``ctx.sync`` (a call); the outcome is the list of those canonical lines
(``flavour.canon``). Each flavour gets its own topics, groups and transactional ids,
printed as placeholders, so the two outcomes compare as strings.

Each flavour's run has an event loop of its own, in a thread of its own. Every wait is
bounded: a step by ``STEP_TIMEOUT`` (unless it passes ``block=``: a step
expected to keep waiting, recorded as ``blocked``), the scenario by ``SCENARIO_TIMEOUT``,
each client's ``stop()`` at the end by ``CLEANUP_TIMEOUT``. A step that runs out of time
is recorded as ``TIMEOUT`` and the run goes on (later steps get ``AFTER_TIMEOUT``), so
the outcome shows what else differs; a timeout in either flavour fails the test whatever
the other did. A run whose loop does not end even then (cancelled work that goes on
waiting) gets its loop stopped after ``RUN_GRACE`` more seconds and its clients collected,
within its own test: a failure, never a stuck suite.

Set-up is neutral: topics are created with aiokafka_lead's typed ``AdminClient`` (which
waits until every broker knows them) and records a consumer scenario reads are written
by aiokafka's producer (``ctx.fill``), so a scenario's outcome depends only on the
client under test.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import ssl
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

import pytest

from aiokafka_lead.admin import AdminClient, NewTopic
from tests.parity.deliberate import RAN, SEEN, observed, undocumented
from tests.parity.flavour import FLAVOURS, LEAD, REFERENCE, Flavour, Names, canon, exception_name

STEP_TIMEOUT = 10.0
#: a step's limit once an earlier step of the run timed out
AFTER_TIMEOUT = 3.0
SCENARIO_TIMEOUT = 60.0
CLEANUP_TIMEOUT = 15.0
#: how long past SCENARIO_TIMEOUT a run's thread may take (clean-up) before it is abandoned
RUN_GRACE = 45.0
#: the base of the timestamps ``ctx.fill`` gives records (a fixed past time, in ms)
BASE_TS = 1_700_000_000_000
#: ``PARITY_REPORT=path`` appends one JSON line per scenario (both outcomes) to ``path``
REPORT_ENV = "PARITY_REPORT"

Scenario = Callable[[Flavour, "Context"], Awaitable[None]]


class Setup:
    """One run's cluster and neutral tools (an admin client, a writer), made on first use."""

    def __init__(self, cluster: Any, created_topics: list[str]) -> None:
        self.cluster = cluster
        self.created_topics = created_topics
        self._admin: AdminClient | None = None
        self._writer: Any = None

    async def admin(self) -> AdminClient:
        if self._admin is None:
            admin = AdminClient(bootstrap_servers=self.cluster.bootstrap())
            await admin.start()
            self._admin = admin
        return self._admin

    async def writer(self) -> Any:
        if self._writer is None:
            import aiokafka

            writer = aiokafka.AIOKafkaProducer(
                bootstrap_servers=self.cluster.bootstrap(), acks="all", linger_ms=0
            )
            await writer.start()
            self._writer = writer
        return self._writer

    async def close(self) -> None:
        async with asyncio.timeout(CLEANUP_TIMEOUT):
            if self._writer is not None:
                await self._writer.stop()
            if self._admin is not None:
                await self._admin.close()


class Context:
    """One flavour's run of a scenario."""

    def __init__(self, f: Flavour, setup: Setup, test_key: str) -> None:
        self.f = f
        self.setup = setup
        self.names = Names()
        self.lines: list[str] = []
        self.details: list[str] = []
        self.timed_out = False
        self._key = test_key
        self._closers: list[tuple[str, Callable[[], Awaitable[Any]]]] = []

    # ------------------------------------------------------------------ names and set-up
    @property
    def cluster(self) -> Any:
        return self.setup.cluster

    @property
    def bootstrap(self) -> str:
        return str(self.cluster.bootstrap())

    def name(self, key: str, kind: str = "g") -> str:
        """A fresh name for this run, printed as ``<kind:key>``."""
        short = "ref" if self.f.name == REFERENCE else "lead"
        concrete = f"parity-{self._key[:40]}-{kind}{key}-{short}-{uuid.uuid4().hex[:6]}"
        return self.names.add(concrete, f"<{kind}:{key}>")

    async def topic(
        self,
        key: str = "t",
        partitions: int = 1,
        configs: dict[str, str] | None = None,
        *,
        concrete: str | None = None,
    ) -> str:
        """A new topic of this run (replicated on every node of the cluster), named
        ``concrete`` when given (it still prints as ``<t:key>``)."""
        name = self.name(key, "t") if concrete is None else self.names.add(concrete, f"<t:{key}>")
        admin = await self.setup.admin()
        async with asyncio.timeout(STEP_TIMEOUT):
            # records carry fixed timestamps from BASE_TS (2023): without retention.ms=-1 the
            # brokers' retention check (every 5 min) may delete them in the middle of a scenario
            settings = {"retention.ms": "-1", **(configs or {})}
            await admin.create_topics([NewTopic(name, partitions, -1, topic_configs=settings)])
        self.setup.created_topics.append(name)
        return name

    async def fill(self, topic: str, records: Iterable[tuple[int, bytes | None, bytes | None]]) -> None:
        """Write ``(partition, key, value)`` records with aiokafka's producer (acks=all);
        the i-th record of the call gets the timestamp ``BASE_TS + i * 1000``."""
        writer = await self.setup.writer()
        async with asyncio.timeout(STEP_TIMEOUT):
            for i, (partition, key, value) in enumerate(records):
                await writer.send_and_wait(
                    topic, value, key=key, partition=partition, timestamp_ms=BASE_TS + i * 1000
                )

    async def member(self, topic: str, group: str, *, read: int = 0) -> Any:
        """A live member of ``group`` on ``topic`` (aiokafka's consumer: neutral set-up)
        that read ``read`` records and committed its positions; stopped when the run ends."""
        import aiokafka

        consumer = aiokafka.AIOKafkaConsumer(
            topic,
            group_id=group,
            bootstrap_servers=self.bootstrap,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        self._closers.append(("set-up member", consumer.stop))
        async with asyncio.timeout(STEP_TIMEOUT):
            await consumer.start()
            got = 0
            while got < read:
                got += sum(len(v) for v in (await consumer.getmany(timeout_ms=1000)).values())
            await consumer.commit()
        return consumer

    def security(self, listener: str, mechanism: str | None = None) -> dict[str, Any]:
        """Client keywords for one of the cluster's listeners (CA file, first user)."""
        kwargs: dict[str, Any] = {
            "bootstrap_servers": self.cluster.bootstrap(listener),
            "security_protocol": listener,
        }
        if listener.endswith("SSL"):
            kwargs["ssl_context"] = ssl.create_default_context(cafile=str(self.cluster.ca_file))
        if mechanism is not None:
            user, password = next(iter(self.cluster.users.items()))
            kwargs.update(sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=password)
        return kwargs

    # ------------------------------------------------------------------ clients
    def closing(self, client: Any, label: str = "") -> Any:
        """Stop ``client`` (``stop()`` or ``close()``) when the run ends."""
        method = getattr(client, "stop", None) or client.close
        self._closers.append((label or type(client).__name__, method))
        return client

    def producer(self, **kwargs: Any) -> Any:
        kwargs.setdefault("bootstrap_servers", self.bootstrap)
        return self.closing(self.f.pkg.AIOKafkaProducer(**kwargs), "producer")

    def consumer(self, *topics: str, **kwargs: Any) -> Any:
        kwargs.setdefault("bootstrap_servers", self.bootstrap)
        return self.closing(self.f.pkg.AIOKafkaConsumer(*topics, **kwargs), "consumer")

    def admin_client(self, **kwargs: Any) -> Any:
        kwargs.setdefault("bootstrap_servers", self.bootstrap)
        return self.closing(self.f.admin.AIOKafkaAdminClient(**kwargs), "admin")

    # ------------------------------------------------------------------ recording
    def canon(self, value: Any, volatile: Iterable[str] = ()) -> str:
        return canon(self.f.name, value, self.names, volatile)

    def out(self, label: str, value: Any, volatile: Iterable[str] = ()) -> None:
        self.lines.append(f"{label}: {self.canon(value, volatile)}")

    def _raised(self, label: str, exc: BaseException) -> None:
        self.lines.append(f"{label}: {exception_name(self.f.name, exc)}")
        self.details.append(f"{label}: {type(exc).__module__}.{type(exc).__qualname__}: {exc}"[:300])

    async def step(
        self,
        label: str,
        awaitable: Awaitable[Any] | Callable[[], Awaitable[Any]],
        *,
        within: float = STEP_TIMEOUT,
        block: float | None = None,
        volatile: Iterable[str] = (),
        record: bool = True,
    ) -> Any:
        """Await (``awaitable`` or ``awaitable()``) and record the result or the exception.

        ``within``: its time limit. ``block=s``: the step is expected to keep waiting;
        after ``s`` seconds it is cancelled and recorded as ``blocked``. Returns the
        result (None after an exception)."""
        limit = block if block is not None else (min(within, AFTER_TIMEOUT) if self.timed_out else within)
        try:
            async with asyncio.timeout(limit) as scope:
                aw = awaitable() if callable(awaitable) else awaitable
                result = await aw
        except TimeoutError as exc:
            if not scope.expired():
                self._raised(label, exc)
                return None
            if block is not None:
                self.lines.append(f"{label}: blocked")
                return None
            # the run goes on (the test fails anyway), with short waits from here on
            self.lines.append(f"{label}: TIMEOUT after {limit:.0f} s")
            self.timed_out = True
            return None
        except Exception as exc:
            self._raised(label, exc)
            return None
        if record:
            self.out(label, result, volatile)
        return result

    def sync(
        self, label: str, fn: Callable[..., Any], *args: Any, volatile: Sequence[str] = (), **kw: Any
    ) -> Any:
        """Call ``fn`` and record the result or the exception."""
        try:
            result = fn(*args, **kw)
        except Exception as exc:
            self._raised(label, exc)
            return None
        self.out(label, result, volatile)
        return result

    async def run(self, scenario: Scenario) -> None:
        try:
            async with asyncio.timeout(SCENARIO_TIMEOUT) as scope:
                await scenario(self.f, self)
        except TimeoutError:
            if not scope.expired():
                raise
            self.lines.append(f"scenario: TIMEOUT after {SCENARIO_TIMEOUT:.0f} s")
            self.timed_out = True
        except Exception as exc:
            self._raised("unhandled", exc)
        finally:
            await self._cleanup()

    def abandon(self) -> None:
        """Drop this run's clients (after its loop was stopped) and collect what they held,
        so what they report as garbage is reported in this test."""
        self._closers.clear()
        self.setup = Setup(self.setup.cluster, self.setup.created_topics)
        # its coroutines are closed without a loop now: their clean-up (an ``await`` in a
        # ``finally``) fails; that is part of this run's failure, not the next test's
        previous = sys.unraisablehook
        sys.unraisablehook = lambda u: self.details.append(f"dropped: {u.exc_type.__name__}: {u.exc_value}")
        try:
            gc.collect()
        finally:
            sys.unraisablehook = previous

    async def _cleanup(self) -> None:
        for label, close in reversed(self._closers):
            try:
                async with asyncio.timeout(CLEANUP_TIMEOUT) as scope:
                    await close()
            except TimeoutError:
                if scope.expired():
                    self.lines.append(f"cleanup {label}: TIMEOUT after {CLEANUP_TIMEOUT:.0f} s")
                    self.timed_out = True
                else:
                    self.lines.append(f"cleanup {label}: raised TimeoutError")
            except Exception as exc:
                self._raised(f"cleanup {label}", exc)


def _side_by_side(ref: Context, lead: Context) -> str:
    out = [f"{'':2}{REFERENCE:<70} | {LEAD}"]
    for i in range(max(len(ref.lines), len(lead.lines))):
        a = ref.lines[i] if i < len(ref.lines) else "-"
        b = lead.lines[i] if i < len(lead.lines) else "-"
        out.append(f"{'  ' if a == b else '≠ '}{a:<70} | {b}")
    for name, ctx in ((REFERENCE, ref), (LEAD, lead)):
        if ctx.details:
            out.append(f"{name} exceptions: " + " ;; ".join(ctx.details))
    return "\n".join(out)


def _append_report(path: str, test_key: str, ref: Context, lead: Context, seconds: float) -> None:
    entry = {
        "test": test_key,
        "same": ref.lines == lead.lines and not ref.timed_out and not lead.timed_out,
        REFERENCE: ref.lines,
        LEAD: lead.lines,
        "details": {REFERENCE: ref.details, LEAD: lead.details},
        "seconds": round(seconds, 2),
    }
    with open(path, "a") as fh:
        fh.write(json.dumps(entry) + "\n")


def _run_in_thread(ctx: Context, scenario: Scenario) -> bool:
    """``ctx.run(scenario)`` on a fresh event loop in a thread of its own; False when the
    thread did not finish in time (a task that ignores cancellation, a blocked loop). Its
    loop is then stopped (every ``run_until_complete`` it is in gives up, its tasks are
    dropped) so it cannot log into later tests; a thread that still does not end is
    abandoned, and the suite goes on."""
    failure: list[BaseException] = []
    loops: list[asyncio.AbstractEventLoop] = []

    async def main() -> None:
        loops.append(asyncio.get_running_loop())
        try:
            await ctx.run(scenario)
        finally:
            await ctx.setup.close()

    def target() -> None:
        try:
            asyncio.run(main())
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=target, name=f"parity-{ctx.f.name}", daemon=True)
    thread.start()
    thread.join(SCENARIO_TIMEOUT + RUN_GRACE)
    if not thread.is_alive():
        if failure:
            raise failure[0]
        return True
    for _ in range(3):  # the test's run, then asyncio.run's clean-up, then its shutdown
        if loops and not loops[0].is_closed():
            loops[0].call_soon_threadsafe(loops[0].stop)
        thread.join(2)
        if not thread.is_alive():
            break
    failure.clear()
    loops.clear()
    return False


def run_parity(scenario: Scenario, cluster: Any, created_topics: list[str], test_key: str) -> None:
    """Run ``scenario`` with aiokafka, then aiokafka_lead; fail on any difference or timeout."""
    runs = []
    started = time.monotonic()
    for f in FLAVOURS:
        ctx = Context(f, Setup(cluster, created_topics), test_key)
        if not _run_in_thread(ctx, scenario):
            ctx.lines.append(
                f"run: did not finish within {SCENARIO_TIMEOUT + RUN_GRACE:.0f} s "
                "(cancelled work that does not end); its event loop was stopped"
            )
            ctx.timed_out = True
            ctx.abandon()
        runs.append(ctx)
    ref, lead = runs
    report = os.environ.get(REPORT_ENV)
    if report:
        _append_report(report, test_key, ref, lead, time.monotonic() - started)
    if ref.timed_out or lead.timed_out:
        who = " and ".join(c.f.name for c in runs if c.timed_out)
        pytest.fail(f"{who} ran out of time in this scenario\n{_side_by_side(ref, lead)}", pytrace=False)
    RAN.add(test_key)
    SEEN.update(observed(test_key, ref.lines, lead.lines))
    if undocumented(test_key, ref.lines, lead.lines):
        pytest.fail(f"outcomes differ\n{_side_by_side(ref, lead)}", pytrace=False)


def scenario(fn: Scenario) -> Callable[..., None]:
    """Turn ``async def test_x(f, ctx)`` into a pytest test that runs it in both flavours."""

    def test(kafka_cluster: Any, parity_created_topics: list[str], request: pytest.FixtureRequest) -> None:
        key = request.node.name.removeprefix("test_").replace("_", "-")
        run_parity(fn, kafka_cluster, parity_created_topics, key)

    test.__name__ = fn.__name__
    test.__qualname__ = fn.__qualname__
    test.__doc__ = fn.__doc__
    test.__module__ = fn.__module__
    return test
