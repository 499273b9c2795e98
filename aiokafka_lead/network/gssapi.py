"""SASL/GSSAPI (Kerberos V5, RFC 4752) through the ``gssapi`` package (the optional extra).

The client's credentials come from the environment as for any GSSAPI program (a ticket
cache from ``kinit``, or ``KRB5_CLIENT_KTNAME`` naming a keytab); the broker's service
principal is ``<sasl_kerberos_service_name>@<sasl_kerberos_domain_name or the broker's
host>``. After the context is established the broker sends its wrapped security-layer
offer; the client answers "no security layer" (Kafka protects nothing at the SASL layer)
with the broker's maximum message size and no authorization id.
"""

from __future__ import annotations

import importlib
from typing import Any

from aiokafka_lead.errors import KafkaConfigurationError
from aiokafka_lead.network.sasl import SaslError

NO_SECURITY_LAYER = 1


def _gssapi() -> Any:
    try:
        return importlib.import_module("gssapi")
    except ImportError:
        raise KafkaConfigurationError(
            "sasl_mechanism='GSSAPI' needs the gssapi package: pip install 'aiokafka_lead[gssapi]'"
        ) from None


class GssapiMechanism:
    """One Kerberos exchange with the broker's service principal ``service@host``."""

    name = "GSSAPI"
    #: its steps may talk to the KDC: the connection runs them in a worker thread
    blocking = True

    def __init__(self, service: str, host: str) -> None:
        self._gssapi = _gssapi()
        self.principal = f"{service}@{host}"
        try:
            target = self._gssapi.Name(self.principal, name_type=self._gssapi.NameType.hostbased_service)
            self._ctx = self._gssapi.SecurityContext(name=target, usage="initiate")
        except self._gssapi.exceptions.GSSError as exc:
            raise SaslError(f"GSSAPI: cannot start a Kerberos context for {self.principal}: {exc}") from exc
        self._state = "initial"

    def __repr__(self) -> str:
        return f"<GssapiMechanism {self.principal} state={self._state}>"

    @property
    def complete(self) -> bool:
        return self._state == "done"

    def _step(self, token: bytes | None) -> bytes:
        try:
            return bytes(self._ctx.step(token) or b"")
        except self._gssapi.exceptions.GSSError as exc:
            raise SaslError(
                f"GSSAPI: Kerberos refused the exchange with {self.principal} "
                f"(is the service name right, and is there a ticket or keytab?): {exc}"
            ) from exc

    def initial_response(self) -> bytes:
        self._state = "context"
        return self._step(None)

    def step(self, challenge: bytes) -> bytes | None:
        if self._state == "context":
            if not self._ctx.complete:
                return self._step(challenge)
            return self._security_layer(challenge)
        if self._state == "layer-sent":
            self._state = "done"
            return None
        raise SaslError(f"GSSAPI: unexpected message in state {self._state}")

    def _security_layer(self, challenge: bytes) -> bytes:
        try:
            offer = bytes(self._ctx.unwrap(challenge).message)
        except self._gssapi.exceptions.GSSError as exc:
            raise SaslError(f"GSSAPI: cannot read the broker's security layer offer: {exc}") from exc
        if len(offer) != 4:
            raise SaslError(f"GSSAPI: the broker's security layer offer has {len(offer)} bytes, not 4")
        if not offer[0] & NO_SECURITY_LAYER:
            raise SaslError("GSSAPI: the broker requires a SASL security layer, which Kafka does not use")
        self._state = "layer-sent"
        reply = bytes([NO_SECURITY_LAYER]) + offer[1:]
        return bytes(self._ctx.wrap(reply, False).message)
