"""create_ssl_context, DefaultPartitioner/murmur2 and BatchBuilder against the installed aiokafka."""

from __future__ import annotations

import asyncio
import datetime
import inspect
import ipaddress
import random
import ssl
from pathlib import Path

import aiokafka.helpers
import aiokafka.partitioner
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

import aiokafka_lead.helpers
import aiokafka_lead.partitioner
from aiokafka_lead import AIOKafkaProducer
from aiokafka_lead.producer.message_accumulator import BatchBuilder

PASSWORD = b"s3cret"


def _certificate(directory: Path) -> tuple[Path, Path, Path]:
    """A self-signed certificate for 127.0.0.1: (cert PEM, encrypted key PEM, plain key PEM)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_file, enc_key, plain_key = directory / "cert.pem", directory / "enc.key", directory / "plain.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    enc_key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(PASSWORD),
        )
    )
    plain_key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_file, enc_key, plain_key


def _summary(context: ssl.SSLContext) -> tuple[object, ...]:
    return (
        context.verify_mode,
        context.check_hostname,
        context.protocol,
        context.options,
        context.minimum_version,
        sorted(str(c) for c in context.get_ca_certs()),
        context.cert_store_stats(),
    )


def test_create_ssl_context_signature_matches() -> None:
    theirs = inspect.signature(aiokafka.helpers.create_ssl_context).parameters
    mine = inspect.signature(aiokafka_lead.helpers.create_ssl_context).parameters
    assert [(p.name, p.kind, p.default) for p in mine.values()] == [
        (p.name, p.kind, p.default) for p in theirs.values()
    ]


def test_create_ssl_context_same_settings(tmp_path: Path) -> None:
    cert, enc_key, plain_key = _certificate(tmp_path)
    cases: list[dict[str, object]] = [
        {},
        {"cafile": str(cert)},
        {"capath": str(tmp_path)},
        {"cadata": cert.read_text()},
        {"cafile": cert, "certfile": str(cert), "keyfile": str(plain_key)},
        {"cafile": str(cert), "certfile": str(cert), "keyfile": str(enc_key), "password": PASSWORD},
        {"cafile": str(cert), "certfile": str(cert), "keyfile": str(enc_key), "password": lambda: PASSWORD},
    ]
    for kwargs in cases:
        mine = aiokafka_lead.helpers.create_ssl_context(**kwargs)  # type: ignore[arg-type]
        theirs = aiokafka.helpers.create_ssl_context(**kwargs)  # type: ignore[arg-type]
        assert _summary(mine) == _summary(theirs), kwargs
        assert mine.verify_mode == ssl.CERT_REQUIRED and mine.check_hostname


def test_create_ssl_context_wrong_password_fails_as_aiokafka(tmp_path: Path) -> None:
    cert, enc_key, _ = _certificate(tmp_path)
    kwargs = {"certfile": str(cert), "keyfile": str(enc_key), "password": b"wrong"}
    with pytest.raises(ssl.SSLError):
        aiokafka.helpers.create_ssl_context(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(ssl.SSLError):
        aiokafka_lead.helpers.create_ssl_context(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        aiokafka_lead.helpers.create_ssl_context(str(cert))  # type: ignore[misc]  # keywords only


async def test_create_ssl_context_connects_with_mutual_tls(tmp_path: Path) -> None:
    cert, enc_key, plain_key = _certificate(tmp_path)
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(cert))
    server.load_cert_chain(str(cert), str(plain_key))
    server.verify_mode = ssl.CERT_REQUIRED  # the client must present its certificate

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(await reader.readexactly(4))
        await writer.drain()
        writer.close()

    listener = await asyncio.start_server(echo, "127.0.0.1", 0, ssl=server)
    port = listener.sockets[0].getsockname()[1]
    client = aiokafka_lead.helpers.create_ssl_context(
        cafile=str(cert), certfile=str(cert), keyfile=str(enc_key), password=PASSWORD
    )
    async with listener, asyncio.timeout(10):
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client)
        writer.write(b"ping")
        assert await reader.readexactly(4) == b"ping"
        writer.close()
        await writer.wait_closed()
        # an untrusted server is refused: the context verifies the broker
        with pytest.raises(ssl.SSLCertVerificationError):
            await asyncio.open_connection("127.0.0.1", port, ssl=aiokafka_lead.helpers.create_ssl_context())


def test_murmur2_matches_aiokafka_on_many_keys() -> None:
    rng = random.Random(20240614)
    keys = [b"", b"a", b"ab", b"abc", b"abcd", "été".encode()]
    keys += [rng.randbytes(rng.randrange(0, 64)) for _ in range(3000)]
    for key in keys:
        assert aiokafka_lead.partitioner.murmur2(key) == aiokafka.partitioner.murmur2(key)
        assert aiokafka_lead.partitioner.murmur2(bytearray(key)) == aiokafka.partitioner.murmur2(key)


def test_default_partitioner_picks_the_same_partition_for_keys() -> None:
    rng = random.Random(7)
    ours = aiokafka_lead.partitioner.DefaultPartitioner()
    theirs = aiokafka.partitioner.DefaultPartitioner()
    for _ in range(3000):
        key = rng.randbytes(rng.randrange(1, 40))
        partitions = sorted(rng.sample(range(200), rng.randrange(1, 50)))
        available = partitions[: rng.randrange(0, len(partitions) + 1)]
        assert ours(key, partitions, available) == theirs(key, partitions, available)
    # keyless: a random available partition, or any one when none is available
    assert ours(None, [0, 1, 2], [2]) == 2
    assert ours(None, [0, 1, 2], []) in {0, 1, 2}


def test_batch_builder_api() -> None:
    producer = AIOKafkaProducer(bootstrap_servers="localhost:9", max_batch_size=200)
    batch = producer.create_batch()
    assert isinstance(batch, BatchBuilder)
    first = batch.append(key=b"k", value=b"v", timestamp=1000)
    assert first is not None and first.offset == 0 and first.timestamp == 1000 and first.size > 0
    second = batch.append(key=None, value=b"w", timestamp=None)
    assert second is not None and second.offset == 1 and second.crc is None
    assert batch.record_count() == 2 and batch.size() > 0 and not batch.closed()
    batch.close()
    assert batch.closed()
    assert batch.append(key=None, value=b"late", timestamp=None) is None
    assert batch.record_count() == 2
    # a full batch returns None and closes itself, as aiokafka's
    full = producer.create_batch()
    while full.append(key=None, value=b"x" * 50, timestamp=None) is not None:
        pass
    assert full.closed() and full.record_count() >= 1
