"""OpenTelemetry's aiokafka instrumentation, unchanged, gives the same spans on aiokafka_lead
(behind the opt-in alias) as on aiokafka.

The scenario (frameworks/otel_scenario.py: two send_and_wait(), a getone() and a getmany())
runs twice, each time in its own interpreter on a fresh topic: on the installed aiokafka,
then under ``python -m aiokafka_lead.as_aiokafka``. Each run prints its spans canonical (ids
as placeholders, the topic and group as fixed names) with the records it read; the two
documents must be equal: span names, kinds, attributes, links, parents, and the trace
context the records carry in their headers.
"""

from __future__ import annotations

import difflib
import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from aiokafka_lead.admin import AdminClient, NewTopic
from tests.integration.conftest import unique

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "tests" / "integration" / "frameworks" / "otel_scenario.py"
#: the scenario bounds itself at 90 s; this covers the interpreter's start and exit too
RUN_TIMEOUT = 150.0


async def run_scenario(
    admin: AdminClient, bootstrap: str, *, alias: bool = False, first_party: bool = False
) -> dict[str, Any]:
    """The scenario's document: on aiokafka, on aiokafka_lead behind the alias (``alias``) or
    on aiokafka_lead with its own instrumentation (``first_party``)."""
    topic, group = unique("otel-spans"), unique("otel-members")
    await admin.create_topics([NewTopic(topic, 3, 3)])
    command = [sys.executable, *(["-m", "aiokafka_lead.as_aiokafka"] if alias else [])]
    command += [str(SCENARIO), *(["--first-party"] if first_party else []), bootstrap, topic, group]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    try:
        with anyio.fail_after(RUN_TIMEOUT):
            done = await anyio.run_process(command, cwd=ROOT, env=env, check=False)
    finally:
        await admin.delete_topics([topic])
    assert done.returncode == 0, (
        f"{' '.join(command)} exited {done.returncode}:\n{done.stderr.decode()[-6000:]}"
    )
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def as_text(document: dict[str, Any]) -> list[str]:
    return json.dumps({k: document[k] for k in ("spans", "records")}, indent=1).splitlines()


async def test_otel_spans_on_aiokafka_lead_are_aiokafkas(admin: AdminClient, kafka_cluster: Any) -> None:
    bootstrap = kafka_cluster.bootstrap()
    theirs = await run_scenario(admin, bootstrap, alias=False)
    ours = await run_scenario(admin, bootstrap, alias=True)

    assert theirs["aiokafka"].startswith("aiokafka "), theirs["aiokafka"]
    assert ours["aiokafka"] == f"aiokafka_lead {ROOT / 'aiokafka_lead' / '__init__.py'}", ours["aiokafka"]
    # what aiokafka gives, so that the comparison below compares something: a PRODUCER span
    # per send; per record read a CONSUMER span whose parent is its send's span, named by
    # the traceparent header; getmany()'s poll span over one partition span linking its record
    spans = theirs["spans"]
    sends = [s for s in spans if s["kind"] == "PRODUCER"]
    reads = [s for s in spans if s["parent"] is not None and s["parent"]["remote"]]
    assert len(sends) == 2 and len(reads) == 2 and len(spans) == 6, spans
    for send, read, record in zip(sends, reads, theirs["records"], strict=True):
        assert read["parent"] == {"trace": send["trace"], "span": send["span"], "remote": True}
        context = [v for k, v in record["headers"] if k == "traceparent"]
        assert len(context) == 1 and context[0].startswith(f"00-{send['trace']}-{send['span']}-"), record
        assert read["attributes"]["messaging.kafka.message.offset"] == record["offset"]
    assert any(
        s["links"] == [{"trace": reads[1]["trace"], "span": reads[1]["span"], "attributes": {}}]
        for s in spans
    )

    difference = "\n".join(
        difflib.unified_diff(as_text(theirs), as_text(ours), "aiokafka", "aiokafka_lead", lineterm="")
    )
    assert not difference, f"the spans differ:\n{difference}"
