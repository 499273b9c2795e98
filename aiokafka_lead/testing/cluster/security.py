"""On-the-fly TLS material and SASL users for the security listeners.

Certificates are generated per cluster (never checked in), so tests can trust exactly
one throwaway CA. ``cryptography`` is imported lazily: it is only needed for TLS.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

#: SASL users every security-enabled cluster knows (name -> password).
DEFAULT_USERS: dict[str, str] = {"admin": "admin-secret", "alice": "alice-secret"}


@dataclass(frozen=True)
class TlsFiles:
    """Paths of the PEM files: the CA (for clients) and the broker's key + chain."""

    ca_cert: Path
    server_keystore: Path


def generate_tls(directory: Path, hosts: tuple[str, ...] = ("127.0.0.1", "localhost")) -> TlsFiles:
    """Write a CA and a server certificate valid for ``hosts`` as PEM files.

    The broker keystore file holds the unencrypted PKCS#8 key followed by the chain,
    which is what Kafka's ``ssl.keystore.type=PEM`` expects from a file location.
    """
    # Lazy: plaintext-only clusters must work without the ``cryptography`` package.
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    not_before = now - datetime.timedelta(days=1)
    not_after = now + datetime.timedelta(days=30)

    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "aiokafka_lead test CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )

    server_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    sans: list[x509.GeneralName] = []
    for host in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            sans.append(x509.DNSName(host))
    server_cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[-1])]))
        .issuer_name(ca_name)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )

    pem = serialization.Encoding.PEM
    ca_path = directory / "ca.pem"
    ca_path.write_bytes(ca_cert.public_bytes(pem))
    keystore = directory / "server-keystore.pem"
    keystore.write_bytes(
        server_key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        + server_cert.public_bytes(pem)
        + ca_cert.public_bytes(pem)
    )
    keystore.chmod(0o600)
    return TlsFiles(ca_cert=ca_path, server_keystore=keystore)


def scram_format_args(users: dict[str, str], mechanisms: tuple[str, ...]) -> list[str]:
    """``StorageTool format`` arguments creating SCRAM credentials in the bootstrap metadata."""
    args: list[str] = []
    for mech in mechanisms:
        if not mech.startswith("SCRAM-"):
            continue
        for name, password in users.items():
            if any(c in name + password for c in ",=[]"):
                raise ValueError(f"SCRAM user/password may not contain ',=[]': {name!r}")
            args += ["--add-scram", f"{mech}=[name={name},password={password}]"]
    return args


def java_client_properties(
    listener: str,
    *,
    ca_file: Path | None,
    mechanism: str | None = None,
    user: str | None = None,
    password: str | None = None,
) -> dict[str, str]:
    """Config for Kafka's own Java clients/tools (``--command-config``) on ``listener``."""
    props = {"security.protocol": listener}
    if "SSL" in listener:
        if ca_file is None:
            raise ValueError("an SSL listener needs the cluster's CA file")
        props["ssl.truststore.type"] = "PEM"
        props["ssl.truststore.location"] = str(ca_file)
    if listener.startswith("SASL_"):
        if not (mechanism and user and password is not None):
            raise ValueError("a SASL listener needs mechanism, user and password")
        module = (
            "org.apache.kafka.common.security.plain.PlainLoginModule"
            if mechanism == "PLAIN"
            else "org.apache.kafka.common.security.scram.ScramLoginModule"
        )
        props["sasl.mechanism"] = mechanism
        props["sasl.jaas.config"] = (
            f'{module} required username="{user}" password="{password}";'
        )
    return props
