"""KIP-368 on one connection, against a scripted broker: the re-authentication waits for
the request in flight, holds new ones until it is done, and never interleaves with them."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from aiokafka_lead.abc import AbstractTokenProvider
from aiokafka_lead.errors import KafkaConnectionError, KafkaError
from aiokafka_lead.network.config import ConnectionConfig
from aiokafka_lead.network.connection import Connection
from aiokafka_lead.protocol.framing import RequestHeader
from aiokafka_lead.protocol.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from tests.support.script_server import ScriptServer, script_server
from tests.support.waiting import eventually

LIFETIME_MS = 1500
SASL = {
    "security_protocol": "SASL_PLAINTEXT",
    "sasl_mechanism": "PLAIN",
    "sasl_plain_username": "u",
    "sasl_plain_password": "p",
}


class Broker:
    """PLAIN with a session lifetime; Metadata for "slow" waits until released."""

    def __init__(self) -> None:
        self.release = anyio.Event()
        self.refuse_after = 99
        self.authentications = 0
        self.handshakes = 0
        self.handshake_error_after = 99

    async def handle(self, header: RequestHeader, request: Any) -> Any:
        if isinstance(request, SaslHandshakeRequest):
            self.handshakes += 1
            if self.handshakes > self.handshake_error_after:  # ILLEGAL_SASL_STATE
                return SaslHandshakeResponse(error_code=34, mechanisms=[])
            return SaslHandshakeResponse(error_code=0, mechanisms=["PLAIN"])
        if isinstance(request, SaslAuthenticateRequest):
            self.authentications += 1
            if self.authentications > self.refuse_after:
                return SaslAuthenticateResponse(error_code=58, error_message="credentials revoked")
            return SaslAuthenticateResponse(error_code=0, auth_bytes=b"", session_lifetime_ms=LIFETIME_MS)
        if request.topics and request.topics[0].name == "slow":
            await self.release.wait()
        return MetadataResponse(cluster_id=f"c{header.correlation_id}", controller_id=1)


def names(server: ScriptServer) -> list[str]:
    out = []
    for _, request in server.received:
        if isinstance(request, MetadataRequest):
            out.append(request.topics[0].name if request.topics else "metadata")
        else:
            out.append(type(request).__name__.removesuffix("Request"))
    return out


def metadata_for(topic: str) -> MetadataRequest:
    return MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)])


async def test_reauthentication_waits_for_in_flight_and_holds_new_requests() -> None:
    broker = Broker()
    results: dict[str, str] = {}
    with anyio.fail_after(15):
        async with script_server(broker.handle) as server, anyio.create_task_group() as tg:
            conn = Connection("127.0.0.1", server.port, ConnectionConfig(**SASL), node_id=1)
            await tg.start(conn.run)

            async def call(topic: str) -> None:
                results[topic] = (await conn.send(metadata_for(topic))).cluster_id

            tg.start_soon(call, "slow")
            await server.wait_for_requests(3)

            async def gate_closed() -> bool:  # the re-authentication is due and waits for "slow"
                return conn._gate is not None

            await eventually(gate_closed, interval=0.02)
            tg.start_soon(call, "during")
            await anyio.sleep(0.3)  # a window in which nothing may be sent
            assert names(server) == ["SaslHandshake", "SaslAuthenticate", "slow"]  # nothing sent
            assert "during" not in results
            broker.release.set()
            await server.wait_for_requests(6)

            async def both_answered() -> bool:
                return len(results) == 2

            await eventually(both_answered, interval=0.02)
            assert names(server) == [
                "SaslHandshake", "SaslAuthenticate", "slow", "SaslHandshake", "SaslAuthenticate", "during"
            ]  # fmt: skip
            assert conn.reauthentications == 1 and conn.stats.reauthentications == 1
            await conn.close()


@pytest.mark.parametrize(
    ("refusal", "reason"),
    [("authenticate", "credentials revoked"), ("handshake", "refused to re-authenticate with PLAIN")],
)
async def test_a_refused_reauthentication_closes_the_connection(refusal: str, reason: str) -> None:
    broker = Broker()
    if refusal == "authenticate":
        broker.refuse_after = 1
    else:
        broker.handshake_error_after = 1
    with anyio.fail_after(15):
        async with script_server(broker.handle) as server, anyio.create_task_group() as tg:
            conn = Connection("127.0.0.1", server.port, ConnectionConfig(**SASL), node_id=1)
            await tg.start(conn.run)
            await conn._closed.wait()
            assert isinstance(conn._close_reason, KafkaError) and not conn._close_reason.retriable
            assert reason in str(conn._close_reason)
            with pytest.raises(KafkaConnectionError, match=reason):
                await conn.send(metadata_for("after"))
            assert conn.reauthentications == 0


class FailsSecondTime(AbstractTokenProvider):
    def __init__(self) -> None:
        self.calls = 0

    async def token(self) -> str:
        self.calls += 1
        if self.calls > 1:
            raise RuntimeError("identity provider down")
        return "token-1"


async def test_a_token_that_cannot_be_had_lets_the_request_in_flight_finish() -> None:
    """The token is fetched before new requests are held; when that fails, what is in flight
    is still answered, and then the connection closes naming the provider's error."""
    broker = Broker()
    config = ConnectionConfig(
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="OAUTHBEARER",
        sasl_oauth_token_provider=FailsSecondTime(),
    )
    with anyio.fail_after(15):
        async with script_server(broker.handle) as server, anyio.create_task_group() as tg:
            conn = Connection("127.0.0.1", server.port, config, node_id=1)
            await tg.start(conn.run)
            answered: list[str] = []

            async def slow() -> None:
                answered.append((await conn.send(metadata_for("slow"))).cluster_id)

            tg.start_soon(slow)

            async def gate_closed() -> bool:
                return conn._gate is not None

            await eventually(gate_closed, interval=0.02)
            assert not conn.closed  # the request in flight is waited for
            broker.release.set()
            await conn._closed.wait()
            assert answered and "identity provider down" in str(conn._close_reason)
            assert names(server) == ["SaslHandshake", "SaslAuthenticate", "slow"]


class GroupBroker(Broker):
    """PLAIN with a session lifetime; a JoinGroup is held (as during a rebalance) until
    released; Produce and Heartbeat are answered at once."""

    def __init__(self) -> None:
        super().__init__()
        self.joined = anyio.Event()

    async def handle(self, header: RequestHeader, request: Any) -> Any:
        if isinstance(request, JoinGroupRequest):
            self.joined.set()
            await self.release.wait()
            return JoinGroupResponse(generation_id=1, member_id="m", leader="m")
        if isinstance(request, ProduceRequest):
            return ProduceResponse()
        if isinstance(request, HeartbeatRequest):
            return HeartbeatResponse()
        return await super().handle(header, request)


async def test_a_join_group_held_through_a_reauthentication_holds_nothing_on_other_connections() -> None:
    """A group coordinator has a connection of its own (the pool's coordinator key): when its
    re-authentication falls due while a JoinGroup is held for a rebalance, the gate holds
    only that connection's new requests (a Heartbeat, which the broker would not read before
    the JoinGroup's answer anyway), never the produce requests on the broker's other
    connection, whose re-authentications go on meanwhile."""
    broker = GroupBroker()
    latencies: list[float] = []
    with anyio.fail_after(20):
        async with script_server(broker.handle) as server, anyio.create_task_group() as tg:
            coordinator = Connection("127.0.0.1", server.port, ConnectionConfig(**SASL), node_id=1)
            produce = Connection("127.0.0.1", server.port, ConnectionConfig(**SASL), node_id=1)
            await tg.start(coordinator.run)
            await tg.start(produce.run)
            tg.start_soon(
                coordinator.send, JoinGroupRequest(group_id="g", protocol_type="consumer", protocols=[])
            )
            await broker.joined.wait()

            async def gate_closed() -> bool:  # the coordinator's re-authentication waits for the join
                return coordinator._gate is not None

            heartbeat_sent = anyio.Event()

            async def heartbeat_when_gated() -> None:
                await eventually(gate_closed, interval=0.02)
                heartbeat_sent.set()
                await coordinator.send(HeartbeatRequest(group_id="g", generation_id=1, member_id="m"))

            tg.start_soon(heartbeat_when_gated)
            # produce for two session lifetimes while the join is held
            deadline = anyio.current_time() + 2 * LIFETIME_MS / 1000
            while anyio.current_time() < deadline:
                started = anyio.current_time()
                await produce.send(ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[]))
                latencies.append(anyio.current_time() - started)
                await anyio.sleep(0.02)
            await heartbeat_sent.wait()
            assert coordinator.reauthentications == 0  # it waits for the join
            assert produce.reauthentications >= 1  # the other connection's go on
            assert max(latencies) < 0.5, f"a produce request waited {max(latencies) * 1000:.0f} ms"
            broker.release.set()
            await eventually(lambda: coordinator.reauthentications == 1, interval=0.02)
            await coordinator.close()
            await produce.close()
