"""Java-style client properties (``--command-config FILE``, Spark's ``kafka.*``) -> client keywords.

Accepts what Kafka's own tools accept for security: ``security.protocol``,
``sasl.mechanism``, ``sasl.jaas.config`` (PlainLoginModule / ScramLoginModule with
username and password), ``ssl.truststore.location`` with ``ssl.truststore.type=PEM``,
``ssl.endpoint.identification.algorithm`` (empty disables hostname checks), plus
librdkafka's spellings (``sasl.username``, ``sasl.password``, ``ssl.ca.location``,
``ssl.certificate.location``, ``ssl.key.location``) and ``client.id`` /
``request.timeout.ms``; OAUTHBEARER and GSSAPI as :mod:`aiokafka_lead.config.sasl_properties`
reads them. Anything else is an error: a typo must not silently weaken security.
"""

from __future__ import annotations

import re
import ssl
from pathlib import Path
from typing import Any

from aiokafka_lead.config.sasl_properties import SASL_KEYS, ClientConfigError, jaas_options, token_kwargs

__all__ = ["KNOWN_KEYS", "ClientConfigError", "client_kwargs", "load_client_config", "parse_properties"]

KNOWN_KEYS = SASL_KEYS | {
    "security.protocol",
    "sasl.mechanism",
    "sasl.jaas.config",
    "sasl.username",
    "sasl.password",
    "ssl.truststore.location",
    "ssl.truststore.type",
    "ssl.ca.location",
    "ssl.certificate.location",
    "ssl.key.location",
    "ssl.key.password",
    "ssl.endpoint.identification.algorithm",
    "client.id",
    "request.timeout.ms",
}

def parse_properties(text: str) -> dict[str, str]:
    """The subset of java.util.Properties syntax client configs use (key=value, # comments)."""
    props: dict[str, str] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        match = re.match(r"([^=:\s]+)\s*[=:]\s*(.*)$", line)
        if match is None:
            raise ClientConfigError(f"line {lineno}: expected key=value, got {raw!r}")
        props[match.group(1)] = match.group(2).strip().replace("\\\\", "\\")
    return props


def _jaas_credentials(jaas: str) -> tuple[str, str]:
    options = jaas_options(jaas)
    if "username" not in options or "password" not in options:
        raise ClientConfigError('sasl.jaas.config must set username="..." and password="..."')
    return options["username"], options["password"]


def _ssl_context(props: dict[str, str]) -> ssl.SSLContext:
    ca = props.get("ssl.ca.location") or props.get("ssl.truststore.location")
    if "ssl.truststore.location" in props and props.get("ssl.truststore.type", "PEM").upper() != "PEM":
        raise ClientConfigError("only PEM truststores are supported (set ssl.truststore.type=PEM)")
    context = ssl.create_default_context(cafile=ca) if ca else ssl.create_default_context()
    if props.get("ssl.endpoint.identification.algorithm", "https") == "":
        context.check_hostname = False
    cert = props.get("ssl.certificate.location")
    if cert:
        context.load_cert_chain(cert, props.get("ssl.key.location"), props.get("ssl.key.password"))
    return context


def client_kwargs(props: dict[str, str]) -> dict[str, Any]:
    """Keyword arguments for the admin client (and the producer/consumer)."""
    unknown = sorted(set(props) - KNOWN_KEYS)
    if unknown:
        raise ClientConfigError(f"unsupported client properties: {', '.join(unknown)}")
    kwargs: dict[str, Any] = {}
    protocol = props.get("security.protocol", "PLAINTEXT").upper()
    kwargs["security_protocol"] = protocol
    if protocol in ("SSL", "SASL_SSL"):
        try:
            kwargs["ssl_context"] = _ssl_context(props)
        except (OSError, ssl.SSLError) as exc:
            raise ClientConfigError(f"cannot load TLS files: {exc}") from exc
    if protocol.startswith("SASL_"):
        kwargs["sasl_mechanism"] = mechanism = props.get("sasl.mechanism", "PLAIN").upper()
        if mechanism in ("OAUTHBEARER", "GSSAPI", "AWS_MSK_IAM"):
            kwargs.update(token_kwargs(mechanism, props))
        elif "sasl.jaas.config" in props:
            user, password = _jaas_credentials(props["sasl.jaas.config"])
        elif "sasl.username" in props and "sasl.password" in props:
            user, password = props["sasl.username"], props["sasl.password"]
        else:
            raise ClientConfigError(f"{protocol} needs sasl.jaas.config or sasl.username/sasl.password")
        if mechanism not in ("OAUTHBEARER", "GSSAPI", "AWS_MSK_IAM"):
            kwargs["sasl_plain_username"] = user
            kwargs["sasl_plain_password"] = password
    if "client.id" in props:
        kwargs["client_id"] = props["client.id"]
    if "request.timeout.ms" in props:
        try:
            kwargs["request_timeout_ms"] = int(props["request.timeout.ms"])
        except ValueError:
            raise ClientConfigError("request.timeout.ms must be an integer") from None
    return kwargs


def load_client_config(path: str | Path) -> dict[str, Any]:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ClientConfigError(f"cannot read {path}: {exc}") from exc
    return client_kwargs(parse_properties(text))
