"""SASL/GSSAPI (Kerberos) against a real MIT KDC and a broker with a GSSAPI listener.

The module starts its own KDC (aiokafka_lead.testing.kdc: realm TEST.LOCAL, principals and
keytabs made here), a single-node cluster whose SASL_PLAINTEXT listener enables GSSAPI with
the keytab of ``kafka/localhost``, and ``connections.max.reauth.ms=3000``. The client
authenticates as ``alice`` from her keytab (``KRB5_CLIENT_KTNAME``).

Needs Debian's krb5-kdc, krb5-admin-server and libkrb5-dev, and the gssapi package (.ci/run
installs them; ``make venv`` adds gssapi where krb5-config exists). Elsewhere the module is
skipped, saying why, unless ``AIOKAFKA_LEAD_KERBEROS=required`` (set by .ci/run).
"""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from aiokafka_lead import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.errors import SaslAuthenticationFailedError
from aiokafka_lead.testing.cluster import KafkaCluster
from aiokafka_lead.testing.kdc import APT_PACKAGES, LocalKdc, missing_tools
from tests.integration.conftest import unique

pytestmark = [pytest.mark.integration, pytest.mark.security_listeners]

REAUTH_MS = 3000


def _unavailable() -> str | None:
    missing = missing_tools()
    if missing:
        return f"{', '.join(missing)} missing (apt-get install {APT_PACKAGES})"
    if importlib.util.find_spec("gssapi") is None:
        return "the gssapi package is missing (pip install 'aiokafka_lead[gssapi]')"
    return None


_WHY = _unavailable()
if _WHY is not None:
    if os.environ.get("AIOKAFKA_LEAD_KERBEROS") == "required":
        raise RuntimeError(f"AIOKAFKA_LEAD_KERBEROS=required but {_WHY}")
    pytest.skip(f"Kerberos tests need a KDC and gssapi: {_WHY}", allow_module_level=True)


@pytest.fixture(scope="module")
def kdc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKdc]:
    with LocalKdc(tmp_path_factory.mktemp("kdc")) as server:
        yield server


@pytest.fixture(scope="module")
def kerberos_env(kdc: LocalKdc) -> Iterator[dict[str, Path]]:
    """The client's Kerberos environment: alice's keytab and a credential cache of its own."""
    keytabs = {"alice": kdc.add_principal("alice"), "broker": kdc.add_principal("kafka/localhost")}
    saved = {k: os.environ.get(k) for k in ("KRB5_CONFIG", "KRB5_CLIENT_KTNAME", "KRB5CCNAME")}
    os.environ["KRB5_CONFIG"] = str(kdc.krb5_conf)
    os.environ["KRB5_CLIENT_KTNAME"] = str(keytabs["alice"])
    os.environ["KRB5CCNAME"] = f"FILE:{kdc.directory / 'alice.ccache'}"
    try:
        yield keytabs
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="module")
def gssapi_cluster(
    kdc: LocalKdc, kerberos_env: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KafkaCluster]:
    cluster = KafkaCluster(
        tmp_path_factory.mktemp("kafka-gssapi"),
        1,
        listeners=("PLAINTEXT", "SASL_PLAINTEXT"),
        sasl_mechanisms=("GSSAPI",),
        kerberos_keytab=kerberos_env["broker"],
        kerberos_principal=f"kafka/localhost@{kdc.realm}",
        jvm_properties={"java.security.krb5.conf": str(kdc.krb5_conf)},
        extra_properties={"connections.max.reauth.ms": str(REAUTH_MS)},
        profile="testing",
        stop_at_exit=True,
    )
    cluster.up(timeout=120)
    try:
        yield cluster
    finally:
        cluster.down()


@pytest.fixture
async def topic(gssapi_cluster: KafkaCluster) -> AsyncIterator[str]:
    name = unique("krb")
    async with AdminClient(bootstrap_servers=gssapi_cluster.bootstrap("PLAINTEXT")) as admin:
        await admin.create_topics([NewTopic(name, 1, 1)])
        yield name
        await admin.delete_topics([name])


def kerberos(cluster: KafkaCluster, **extra: Any) -> dict[str, Any]:
    return {
        "bootstrap_servers": cluster.bootstrap("SASL_PLAINTEXT"),
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "GSSAPI",
        "sasl_kerberos_domain_name": "localhost",  # the broker is reached as 127.0.0.1
        **extra,
    }


async def test_produce_and_consume_with_kerberos_and_reauthentication(
    gssapi_cluster: KafkaCluster, topic: str
) -> None:
    received: list[bytes] = []
    with anyio.fail_after(90):
        async with (
            AIOKafkaProducer(**kerberos(gssapi_cluster)) as producer,
            AIOKafkaConsumer(topic, group_id=unique("g"), auto_offset_reset="earliest",
                             **kerberos(gssapi_cluster)) as consumer,
        ):  # fmt: skip
            deadline = time.monotonic() + 8
            sent = 0
            while time.monotonic() < deadline:
                await producer.send_and_wait(topic, f"k{sent}".encode())
                sent += 1
                for records in (await consumer.getmany(timeout_ms=100)).values():
                    received += [r.value for r in records if r.value is not None]
            while len(received) < sent:
                for records in (await consumer.getmany(timeout_ms=200)).values():
                    received += [r.value for r in records if r.value is not None]
            pm, cm = producer.metrics(), consumer.metrics()
    assert received == [f"k{i}".encode() for i in range(sent)]
    assert pm["connections_closed_by_broker"] == 0 and cm["connections_closed_by_broker"] == 0
    assert pm["sasl_reauthentications"] >= 2 and cm["sasl_reauthentications"] >= 2
    assert not pm["errors"]


async def test_a_wrong_service_name_is_a_clear_error(gssapi_cluster: KafkaCluster) -> None:
    admin = AdminClient(**kerberos(gssapi_cluster, sasl_kerberos_service_name="kafka-wrong"))
    with anyio.fail_after(30), pytest.raises(SaslAuthenticationFailedError) as caught:
        await admin.start()
    await admin.close()
    message = str(caught.value)
    assert "kafka-wrong@localhost" in message and "not found in Kerberos database" in message


async def test_a_kdc_that_refuses_the_client_is_a_clear_error(
    gssapi_cluster: KafkaCluster, kdc: LocalKdc, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bob's keytab is stale (his key changed since): the KDC refuses to issue him a ticket."""
    keytab = kdc.add_principal("bob")
    kdc.run("kadmin.local", "-r", kdc.realm, "-q", f"cpw -randkey bob@{kdc.realm}")
    monkeypatch.setenv("KRB5_CLIENT_KTNAME", str(keytab))
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{tmp_path / 'bob.ccache'}")
    admin = AdminClient(**kerberos(gssapi_cluster))
    with anyio.fail_after(30), pytest.raises(SaslAuthenticationFailedError, match="Kerberos refused") as e:
        await admin.start()
    await admin.close()
    assert "kafka@localhost" in str(e.value)
