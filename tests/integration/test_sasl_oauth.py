"""SASL/OAUTHBEARER against a real broker that checks signed JWTs, and KIP-368 re-authentication.

One single-node cluster for the module: a SASL_PLAINTEXT listener with PLAIN, SCRAM-SHA-256
and OAUTHBEARER (Kafka's OAuthBearerValidatorCallbackHandler against the JWKS of our own
OIDC server, aiokafka_lead.testing.oidc), and ``connections.max.reauth.ms=3000``, so every
connection must re-authenticate every few seconds or be closed by the broker.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from aiokafka_lead import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka_lead.abc import AbstractTokenProvider, ConsumerRebalanceListener
from aiokafka_lead.admin import AdminClient, NewTopic
from aiokafka_lead.auth.oidc import JWTBearerTokenProvider, OIDCTokenProvider, TokenEndpointError
from aiokafka_lead.errors import SaslAuthenticationFailedError
from aiokafka_lead.testing.cluster import KafkaCluster
from aiokafka_lead.testing.cluster.config import free_ports
from aiokafka_lead.testing.oidc import AUDIENCE, OIDCServer, running_oidc_server
from tests.integration.conftest import unique
from tests.integration.test_admin import run_cli
from tests.support.waiting import eventually

pytestmark = [pytest.mark.integration, pytest.mark.security_listeners]

REAUTH_MS = 3000
CLIENT_ID, CLIENT_SECRET = "kafka-client", "client-secret"


@pytest.fixture(scope="module")
def oidc() -> Iterator[OIDCServer]:
    with running_oidc_server(clients={CLIENT_ID: CLIENT_SECRET}, lifetime_s=10) as server:
        yield server


@pytest.fixture(scope="module")
def auth_cluster(oidc: OIDCServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    cluster = KafkaCluster(
        Path(tmp_path_factory.mktemp("kafka-oauth")),
        1,
        listeners=("PLAINTEXT", "SASL_PLAINTEXT"),
        sasl_mechanisms=("PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"),
        oauth_jwks_url=oidc.jwks_url,
        oauth_audience=AUDIENCE,
        oauth_issuer=oidc.issuer,
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
async def topic(auth_cluster: KafkaCluster) -> AsyncIterator[str]:
    name = unique("auth")
    async with AdminClient(bootstrap_servers=auth_cluster.bootstrap("PLAINTEXT")) as admin:
        await admin.create_topics([NewTopic(name, 2, 1)])
        yield name
        await admin.delete_topics([name])


def oidc_provider(oidc: OIDCServer, **kwargs: Any) -> OIDCTokenProvider:
    return OIDCTokenProvider(oidc.token_url, CLIENT_ID, CLIENT_SECRET, **kwargs)


def sasl(cluster: KafkaCluster, mechanism: str, provider: Any = None) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "bootstrap_servers": cluster.bootstrap("SASL_PLAINTEXT"),
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
    }
    if mechanism == "OAUTHBEARER":
        kwargs["sasl_oauth_token_provider"] = provider
    else:
        user, password = next(iter(cluster.users.items()))
        kwargs.update(sasl_plain_username=user, sasl_plain_password=password)
    return kwargs


class StaticToken(AbstractTokenProvider):
    """A provider with a plain (not async) token() and SASL extensions."""

    def __init__(self, token: str, extensions: dict[str, str] | None = None) -> None:
        self._token = token
        self._extensions = extensions or {}
        self.calls = 0

    def token(self) -> str:  # type: ignore[override]  # a sync provider is accepted too
        self.calls += 1
        return self._token

    def extensions(self) -> dict[str, str]:
        return self._extensions


# ----------------------------------------------------------------- OAUTHBEARER


async def test_produce_and_consume_with_the_oidc_provider(
    auth_cluster: KafkaCluster, oidc: OIDCServer, topic: str
) -> None:
    provider = oidc_provider(oidc)
    with anyio.fail_after(60):
        async with AIOKafkaProducer(**sasl(auth_cluster, "OAUTHBEARER", provider)) as producer:
            for i in range(10):
                await producer.send_and_wait(topic, f"v{i}".encode(), partition=i % 2)
        async with AIOKafkaConsumer(
            topic,
            group_id=unique("g"),
            auto_offset_reset="earliest",
            **sasl(auth_cluster, "OAUTHBEARER", provider),
        ) as consumer:
            seen: list[bytes] = []
            while len(seen) < 10:
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    seen += [r.value for r in records if r.value is not None]
    assert sorted(seen) == sorted(f"v{i}".encode() for i in range(10))
    assert provider.fetches >= 1  # cached: not one token per connection
    assert provider.fetches < 5


async def test_a_sync_provider_with_extensions(auth_cluster: KafkaCluster, oidc: OIDCServer) -> None:
    provider = StaticToken(oidc.token_for(CLIENT_ID), {"traceId": "abc-123"})
    with anyio.fail_after(30):
        async with AdminClient(**sasl(auth_cluster, "OAUTHBEARER", provider)) as admin:
            assert len((await admin.describe_cluster()).brokers) == 1
    assert provider.calls >= 1


async def test_the_jwt_bearer_grant(auth_cluster: KafkaCluster, oidc: OIDCServer) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    oidc.trust_assertion_key("svc-billing", key.public_key())
    provider = JWTBearerTokenProvider(
        oidc.token_url, assertion=lambda: oidc.assertion_for("svc-billing", key)
    )
    with anyio.fail_after(30):
        async with AdminClient(**sasl(auth_cluster, "OAUTHBEARER", provider)) as admin:
            assert len((await admin.describe_cluster()).brokers) == 1
    assert provider.fetches == 1


@pytest.mark.parametrize("kind", ["forged", "expired"])
async def test_a_bad_token_is_refused_with_the_brokers_message(
    auth_cluster: KafkaCluster, oidc: OIDCServer, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="aiokafka_lead")
    token = oidc.forged_token() if kind == "forged" else oidc.expired_token()
    admin = AdminClient(**sasl(auth_cluster, "OAUTHBEARER", StaticToken(token)))
    started = time.monotonic()
    with anyio.fail_after(30), pytest.raises(SaslAuthenticationFailedError) as caught:
        await admin.start()
    await admin.close()
    message = str(caught.value)
    assert "OAUTHBEARER" in message
    assert '"status": "invalid_token"' in message  # the broker's error document
    assert token not in message and token.split(".")[2] not in message
    assert time.monotonic() - started < 10  # no retry loop
    assert caplog.records  # the client did log (at DEBUG), but never the token
    assert not [r for r in caplog.records if token.split(".")[2] in r.getMessage()]


async def test_token_endpoint_down_is_a_clear_error_after_retries(auth_cluster: KafkaCluster) -> None:
    (port,) = free_ports(1)
    provider = OIDCTokenProvider(
        f"http://127.0.0.1:{port}/token", CLIENT_ID, CLIENT_SECRET, retries=2, retry_backoff_ms=50
    )
    admin = AdminClient(**sasl(auth_cluster, "OAUTHBEARER", provider))
    with anyio.fail_after(30), pytest.raises(TokenEndpointError, match="after 3 attempts: cannot reach"):
        await admin.start()
    await admin.close()


async def test_token_endpoint_401_is_not_retried_and_hides_the_secret(
    auth_cluster: KafkaCluster, oidc: OIDCServer
) -> None:
    secret = "wrong-secret-value"
    provider = OIDCTokenProvider(oidc.token_url, CLIENT_ID, secret, retries=3, retry_backoff_ms=50)
    before = oidc.requests
    admin = AdminClient(**sasl(auth_cluster, "OAUTHBEARER", provider))
    with anyio.fail_after(30), pytest.raises(TokenEndpointError) as caught:
        await admin.start()
    await admin.close()
    assert "HTTP 401 (invalid_client: Invalid client credentials)" in str(caught.value)
    assert secret not in str(caught.value) and secret not in repr(provider)
    assert oidc.requests - before == 1


async def test_token_endpoint_500_is_retried(auth_cluster: KafkaCluster, oidc: OIDCServer) -> None:
    provider = oidc_provider(oidc, retries=3, retry_backoff_ms=50)
    oidc.fail_next(2, 500)
    with anyio.fail_after(30):
        async with AdminClient(**sasl(auth_cluster, "OAUTHBEARER", provider)) as admin:
            assert len((await admin.describe_cluster()).brokers) == 1
    oidc.fail_next(5, 503)
    failing = oidc_provider(oidc, retries=2, retry_backoff_ms=50)
    admin = AdminClient(**sasl(auth_cluster, "OAUTHBEARER", failing))
    with anyio.fail_after(30), pytest.raises(TokenEndpointError, match=r"after 3 attempts: HTTP 503"):
        await admin.start()
    await admin.close()
    oidc.fail_next(0, 500)


async def test_a_token_endpoint_down_at_a_reconnect_is_retried_until_it_is_back(
    auth_cluster: KafkaCluster, oidc: OIDCServer, topic: str
) -> None:
    """A producer's token expires while the endpoint fails (503), and its connections are cut
    (as a broker restart would): a record sent meanwhile waits (the endpoint is asked again
    and again, within the delivery timeout) and is delivered once the endpoint is back."""
    lifetime_s, oidc.lifetime_s = oidc.lifetime_s, 2.0  # tokens of 1-2 s (exp is in seconds)
    provider = oidc_provider(oidc, retries=0)  # each connect attempt asks the endpoint once
    try:
        with anyio.fail_after(60):
            async with AIOKafkaProducer(
                **sasl(auth_cluster, "OAUTHBEARER", provider), delivery_timeout_ms=40_000
            ) as producer:
                await producer.send_and_wait(topic, b"before", partition=0)
                oidc.fail_next(1_000_000, 503)
                await eventually(lambda: time.time() > oidc.last_expiry)  # the cached token is no use
                for conn in _live_connections(producer):
                    await conn.close()
                asked = oidc.requests
                handle = await producer.send(topic, b"while down", partition=0)
                await eventually(lambda: handle.done() or oidc.requests >= asked + 3)
                if handle.done():
                    await handle  # raises what failed it
                    raise AssertionError("delivered while the endpoint was down")
                oidc.fail_next(0, 503)  # the endpoint is back
                assert (await handle).partition == 0
                assert producer.metrics()["records_failed"] == 0
    finally:
        oidc.lifetime_s = lifetime_s
        oidc.fail_next(0, 503)


# ------------------------------------------------------------ re-authentication


class Rebalances(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.assigned = 0
        self.revoked = 0

    async def on_partitions_revoked(self, revoked: Any) -> None:
        if revoked:
            self.revoked += 1

    async def on_partitions_assigned(self, assigned: Any) -> None:
        self.assigned += 1


def _live_connections(client: Any) -> list[Any]:
    pool = client._core.pool
    return [s.conn for s in pool._nodes.values() if s.conn is not None and not s.conn.closed]


@pytest.mark.parametrize(
    ("mechanism", "seconds"), [("OAUTHBEARER", 12.0), ("SCRAM-SHA-256", 9.0), ("PLAIN", 9.0)]
)
async def test_connections_reauthenticate_instead_of_being_closed(
    auth_cluster: KafkaCluster,
    oidc: OIDCServer,
    topic: str,
    mechanism: str,
    seconds: float,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Produce and consume in a group through several session lifetimes (3 s): every
    connection re-authenticates on the spot; none is closed, nothing fails, no rebalance,
    nothing worth a warning."""
    caplog.set_level(logging.WARNING, logger="aiokafka_lead")
    provider = oidc_provider(oidc)
    listener = Rebalances()
    sent = 0
    received: list[bytes] = []
    with anyio.fail_after(seconds + 60):
        async with (
            AIOKafkaProducer(**sasl(auth_cluster, mechanism, provider), linger_ms=5) as producer,
            AIOKafkaConsumer(
                group_id=unique("g"), auto_offset_reset="earliest", **sasl(auth_cluster, mechanism, provider)
            ) as consumer,
        ):
            consumer.subscribe([topic], listener=listener)
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                await producer.send_and_wait(topic, f"m{sent}".encode(), partition=sent % 2)
                sent += 1
                for records in (await consumer.getmany(timeout_ms=50)).values():
                    received += [r.value for r in records if r.value is not None]
            while len(received) < sent:
                for records in (await consumer.getmany(timeout_ms=200)).values():
                    received += [r.value for r in records if r.value is not None]
            producer_metrics, consumer_metrics = producer.metrics(), consumer.metrics()
            connections = _live_connections(producer) + _live_connections(consumer)
            coordinator_generation = consumer.coordinator.generation_id  # type: ignore[union-attr]
    assert sorted(received) == sorted(f"m{i}".encode() for i in range(sent))
    assert producer_metrics["records_failed"] == 0 and not producer_metrics["errors"]
    assert producer_metrics["connections_closed_by_broker"] == 0
    assert consumer_metrics["connections_closed_by_broker"] == 0
    assert listener.assigned == 1 and listener.revoked == 0 and coordinator_generation == 1
    # the connections in use all along re-authenticated about every 3 s (each opened within
    # ~1.5 s of the start; a re-authentication every 2.55-2.85 s, plus its drain and exchange)
    busy = [c for c in connections if c.node_id >= 0]
    expected = int((seconds - 1.5) / 3.4)
    assert busy and all(c.reauthentications >= expected for c in busy), [
        (c.broker, c.reauthentications) for c in connections
    ]
    assert producer_metrics["sasl_reauthentications"] >= 2
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert consumer_metrics["sasl_reauthentications"] >= 2


# ---------------------------------------------------------------------- the CLI


def test_cli_command_config_with_java_oidc_properties(
    auth_cluster: KafkaCluster, oidc: OIDCServer, tmp_path: Path
) -> None:
    name = unique("cli")
    config = tmp_path / "oauth.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=OAUTHBEARER\n"
        f"sasl.oauthbearer.token.endpoint.url={oidc.token_url}\n"
        f"sasl.oauthbearer.client.credentials.client.id={CLIENT_ID}\n"
        f"sasl.oauthbearer.client.credentials.client.secret={CLIENT_SECRET}\n"
        "sasl.login.callback.handler.class="
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler\n"
        "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;\n"
    )
    common = ["--bootstrap-server", auth_cluster.bootstrap("SASL_PLAINTEXT"), "--command-config", str(config)]
    created = run_cli("topics", "create", *common, "--topic", name, "--partitions", "1")
    assert created.returncode == 0, created.stderr
    listed = run_cli("topics", "list", *common)
    assert listed.returncode == 0 and name in listed.stdout.split(), listed.stderr
    config.write_text(config.read_text().replace(CLIENT_SECRET, "wrong-secret"))
    refused = run_cli("topics", "list", *common)
    assert refused.returncode != 0
    assert "HTTP 401 (invalid_client" in refused.stderr and "wrong-secret" not in refused.stderr


async def test_a_refused_reauthentication_closes_the_connection_with_the_reason(
    auth_cluster: KafkaCluster, oidc: OIDCServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The provider's next token is refused: the connection is closed at re-authentication
    (not at some later request), saying why, and the next connection fails with it."""
    provider = StaticToken(oidc.token_for(CLIENT_ID))
    caplog.set_level(logging.WARNING, logger="aiokafka_lead")
    with anyio.fail_after(60):
        async with AdminClient(**sasl(auth_cluster, "OAUTHBEARER", provider)) as admin:
            await admin.describe_cluster()
            (conn,) = [c for c in _live_connections(admin) if c.node_id >= 0] or _live_connections(admin)
            provider._token = oidc.forged_token()
            await conn._closed.wait()
            with pytest.raises(SaslAuthenticationFailedError, match="invalid_token"):
                await admin.describe_cluster()
    assert conn.reauthentications == 0
    assert isinstance(conn._close_reason, SaslAuthenticationFailedError)
    warnings = [r.getMessage() for r in caplog.records if "re-authentication failed" in r.getMessage()]
    assert warnings and "invalid_token" in warnings[0]
