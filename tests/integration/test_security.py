"""TLS and SASL against real broker listeners; wrong credentials fail fast."""

from __future__ import annotations

import ssl
import time
from typing import Any

import anyio
import pytest

from aiokafka_lead.admin import AdminClient
from aiokafka_lead.errors import KafkaConnectionError, SaslAuthenticationFailedError
from tests.integration.conftest import tls_context

pytestmark = [pytest.mark.integration, pytest.mark.security_listeners]


@pytest.mark.parametrize(
    ("listener", "mechanism"),
    [
        ("SSL", None),
        ("SASL_PLAINTEXT", "PLAIN"),
        ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
        ("SASL_SSL", "SCRAM-SHA-256"),
        ("SASL_SSL", "SCRAM-SHA-512"),
    ],
)
async def test_secure_listeners(kafka_cluster: Any, listener: str, mechanism: str | None) -> None:
    kwargs: dict[str, Any] = {"security_protocol": listener}
    if listener.endswith("SSL"):
        kwargs["ssl_context"] = tls_context(kafka_cluster)
    if mechanism is not None:
        user, password = next(iter(kafka_cluster.users.items()))
        kwargs.update(sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=password)
    with anyio.fail_after(60):
        async with AdminClient(
            bootstrap_servers=kafka_cluster.bootstrap(listener), **kwargs
        ) as admin:
            cluster = await admin.describe_cluster()
            assert len(cluster.brokers) == 3
            # metadata names the brokers on the listener we connected through
            assert {b.port for b in cluster.brokers} == {
                int(a.rsplit(":", 1)[1]) for a in kafka_cluster.bootstrap(listener).split(",")
            }


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
async def test_wrong_password_fails_at_once(kafka_cluster: Any, mechanism: str) -> None:
    user = next(iter(kafka_cluster.users))
    admin = AdminClient(
        bootstrap_servers=kafka_cluster.bootstrap("SASL_SSL"),
        security_protocol="SASL_SSL",
        ssl_context=tls_context(kafka_cluster),
        sasl_mechanism=mechanism,
        sasl_plain_username=user,
        sasl_plain_password="wrong-password",
    )
    started = time.monotonic()
    with anyio.fail_after(15), pytest.raises(SaslAuthenticationFailedError, match=user):
        await admin.start()
    # no retry loop: it fails at the first answer, long before request_timeout_ms (40 s)
    assert time.monotonic() - started < 5
    assert admin._core._pool is None  # and the failed start closed its connections
    await admin.close()


async def test_untrusted_certificate_is_a_clear_error(kafka_cluster: Any) -> None:
    admin = AdminClient(
        bootstrap_servers=kafka_cluster.bootstrap("SSL"),
        security_protocol="SSL",
        ssl_context=ssl.create_default_context(),  # system CAs do not include the test CA
        request_timeout_ms=10_000,
    )
    with anyio.fail_after(30), pytest.raises(KafkaConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
        await admin.start()
    await admin.close()
