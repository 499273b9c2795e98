"""What a connection's error says when its listener ended it early or spoke something else."""

from __future__ import annotations

import pytest

from aiokafka_lead.network.diagnose import early_close_hint


@pytest.mark.parametrize(
    ("first", "unanswered", "answered", "closed", "expected"),
    [
        # a TLS alert or handshake record: the listener wants TLS
        (b"\x15\x03\x03\x00\x02", 0, 0, True, "'SSL' or 'SASL_SSL', not PLAINTEXT"),
        (b"\x16\x03\x01", 0, 0, False, "it answered with TLS"),
        # printable bytes before any Kafka answer: an HTTP server, say
        (b"HTTP/1.1 400", 0, 0, False, "it answered 'HTTP/1.1 400'...: not a Kafka listener"),
        # closed in the middle of a response
        (b"\x00\x00\x01\x00", 7, 3, True, "in the middle of a response (7 bytes of it received)"),
        # a SASL listener answers ApiVersions, then closes
        (b"\x00\x00\x01\x00", 0, 1, True, "after ApiVersions; a listener that expects SASL"),
        # nothing at all
        (b"", 0, 0, True, "before answering ApiVersions, without a byte"),
    ],
)
def test_hint_names_what_the_listener_expects(
    first: bytes, unanswered: int, answered: int, closed: bool, expected: str
) -> None:
    hint = early_close_hint(first, unanswered, answered, "PLAINTEXT", closed=closed)
    assert expected in hint


def test_no_hint_when_nothing_points_anywhere() -> None:
    # a malformed frame on a connection that already answered: no guess to offer
    assert early_close_hint(b"\x00\x00\x01\x00", 0, 5, "SASL_SSL", closed=False) == ""
    # closed after several answers, with nothing half-read
    assert early_close_hint(b"\x00\x00\x01\x00", 0, 5, "SASL_SSL", closed=True) == ""
