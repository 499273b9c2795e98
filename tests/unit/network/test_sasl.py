"""SASL step machines against the RFC 5802 / RFC 7677 test vectors."""

from __future__ import annotations

import pytest

from aiokafka_lead.network.sasl import PlainMechanism, SaslError, ScramMechanism, create_mechanism


def test_plain_single_message() -> None:
    mech = PlainMechanism("alice", "s3cret")
    assert mech.initial_response() == b"\0alice\0s3cret"
    assert not mech.complete
    assert mech.step(b"") is None
    assert mech.complete


RFC7677 = {
    "client_nonce": "rOprNGfwEbeRWgbNEkqO",
    "client_first": b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
    "server_first": b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
    "client_final": b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
    "server_final": b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
}

RFC5802 = {
    "client_nonce": "fyko+d2lbbFgONRv9qkxdawL",
    "client_first": b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
    "server_first": b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096",
    "client_final": b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
    "server_final": b"v=rmF9pqV8S7suAoZWja4dJRkFsKQ=",
}


@pytest.mark.parametrize(
    ("mechanism", "hash_name", "vector"),
    [("SCRAM-SHA-256", None, RFC7677), ("SCRAM-SHA-1", "sha1", RFC5802)],
    ids=["rfc7677-sha256", "rfc5802-sha1"],
)
def test_scram_vectors(mechanism: str, hash_name: str | None, vector: dict[str, object]) -> None:
    mech = ScramMechanism(mechanism, "user", "pencil", nonce=str(vector["client_nonce"]), hash_name=hash_name)
    assert mech.initial_response() == vector["client_first"]
    assert mech.step(vector["server_first"]) == vector["client_final"]  # type: ignore[arg-type]
    assert not mech.complete
    assert mech.step(vector["server_final"]) is None  # type: ignore[arg-type]
    assert mech.complete


def test_scram_rejects_wrong_server_signature() -> None:
    mech = ScramMechanism("SCRAM-SHA-256", "user", "pencil", nonce=str(RFC7677["client_nonce"]))
    mech.initial_response()
    mech.step(RFC7677["server_first"])  # type: ignore[arg-type]
    with pytest.raises(SaslError, match="signature mismatch"):
        mech.step(b"v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
    assert not mech.complete


@pytest.mark.parametrize(
    "server_first",
    [
        b"r=someoneelse,s=QSXCR+Q6sek8bf92,i=4096",  # nonce not extended
        b"r=fyko+d2lbbFgONRv9qkxdawLx,s=QSXCR+Q6sek8bf92,i=10",  # too few iterations
        b"r=fyko+d2lbbFgONRv9qkxdawLx,s=!!!,i=4096",  # bad base64
        b"e=invalid-proof",  # server error
        b"garbage",
        b"\xff\xfe",
    ],
)
def test_scram_rejects_bad_server_first(server_first: bytes) -> None:
    mech = ScramMechanism("SCRAM-SHA-256", "user", "pencil", nonce="fyko+d2lbbFgONRv9qkxdawL")
    mech.initial_response()
    with pytest.raises(SaslError):
        mech.step(server_first)


def test_scram_escapes_username() -> None:
    mech = ScramMechanism("SCRAM-SHA-512", "a=b,c", "p", nonce="n")
    assert mech.initial_response() == b"n,,n=a=3Db=2Cc,r=n"


def test_create_mechanism_rejects_unknown() -> None:
    assert create_mechanism("SCRAM-SHA-512", "u", "p").name == "SCRAM-SHA-512"
    with pytest.raises(ValueError, match="unsupported sasl_mechanism"):
        create_mechanism("GSSAPI", "u", "p")
