"""Why a connection failed before it was of use: from the first bytes the listener sent (or
that it sent none), what it probably expects instead of what we speak."""

from __future__ import annotations

#: the first two bytes of a TLS record: alert (0x15) or handshake (0x16), then major version 3
_TLS_CONTENT_TYPES = (0x15, 0x16)
_TLS_MAJOR_VERSION = 3


def early_close_hint(first: bytes, unanswered: int, answered: int, protocol: str, *, closed: bool) -> str:
    """The end of an error message for a connection whose listener ended it (``closed``) or
    sent what is not a Kafka frame: ``first`` are its first bytes, ``unanswered`` the bytes
    of a response begun but not complete, ``answered`` the responses read so far and
    ``protocol`` our security_protocol. "" when nothing points anywhere."""
    if len(first) >= 2 and first[0] in _TLS_CONTENT_TYPES and first[1] == _TLS_MAJOR_VERSION:
        return f" (it answered with TLS: use security_protocol 'SSL' or 'SASL_SSL', not {protocol})"
    if first and answered == 0 and all(32 <= b < 127 for b in first[:4]):
        return f" (it answered {first.decode('ascii', 'replace')!r}...: not a Kafka listener)"
    if closed and unanswered:
        # it had begun an answer: a broker that failed or a cut network, not a listener that
        # refused our request (that one closes without a byte)
        return f" in the middle of a response ({unanswered} bytes of it received)"
    if closed and answered == 1:  # a SASL listener answers ApiVersions, then closes
        return (
            " before answering a request after ApiVersions; a listener that expects SASL "
            f"does this: check security_protocol (now {protocol})"
        )
    if closed and answered == 0:
        return (
            " before answering ApiVersions, without a byte: a broker shutting down or a proxy "
            "whose broker is down does this, and so does a listener that expects TLS: check "
            f"security_protocol (now {protocol}) if it keeps happening"
        )
    return ""
