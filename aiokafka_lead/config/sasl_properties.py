"""OAUTHBEARER and GSSAPI client properties, as Java's clients (KIP-768) and librdkafka name them.

OIDC client credentials (``sasl.mechanism=OAUTHBEARER``)::

    sasl.oauthbearer.token.endpoint.url=https://idp.example.com/oauth2/token
    sasl.oauthbearer.client.credentials.client.id=my-client       # librdkafka: sasl.oauthbearer.client.id
    sasl.oauthbearer.client.credentials.client.secret=...         # librdkafka: sasl.oauthbearer.client.secret
    sasl.oauthbearer.scope=kafka                                  # optional
    sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler
    sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;

The JAAS options ``clientId``, ``clientSecret``, ``scope`` and ``extension_<name>`` (Java's
older spelling) are read too; librdkafka's ``sasl.oauthbearer.extensions=k=v,k2=v2`` as well.
The JWT-bearer grant (RFC 7523) with a ready assertion: ``sasl.oauthbearer.assertion.file``
(with Java's ``sasl.oauthbearer.jwt.retriever.class=...JwtBearerJwtRetriever`` or
librdkafka's ``sasl.oauthbearer.grant.type=urn:ietf:params:oauth:grant-type:jwt-bearer``).

AWS MSK IAM: ``sasl.mechanism=AWS_MSK_IAM`` (with ``software.amazon.msk.auth.iam.IAMLoginModule``),
or OAUTHBEARER with ``sasl.login.callback.handler.class=
software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler``; the JAAS options
``awsProfileName``, ``awsRoleArn``, ``awsRoleSessionName`` and ``awsRegion`` (else the
``AWS_REGION`` / ``AWS_DEFAULT_REGION`` environment variable) choose the credentials.

GSSAPI: ``sasl.kerberos.service.name`` (default ``kafka``); credentials come from the
ticket cache (``kinit``) or ``KRB5_CLIENT_KTNAME``, so a JAAS ``keyTab`` is refused with
that advice rather than ignored.
"""

from __future__ import annotations

import os
import re
from typing import Any

JAVA_OIDC_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
MSK_IAM_HANDLER = "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler"
JAVA_JWT_BEARER = "org.apache.kafka.common.security.oauthbearer.JwtBearerJwtRetriever"

SASL_KEYS = frozenset(
    {
        "sasl.login.callback.handler.class",
        "sasl.oauthbearer.method",
        "sasl.oauthbearer.token.endpoint.url",
        "sasl.oauthbearer.client.credentials.client.id",
        "sasl.oauthbearer.client.credentials.client.secret",
        "sasl.oauthbearer.client.id",
        "sasl.oauthbearer.client.secret",
        "sasl.oauthbearer.scope",
        "sasl.oauthbearer.extensions",
        "sasl.oauthbearer.assertion.file",
        "sasl.oauthbearer.jwt.retriever.class",
        "sasl.oauthbearer.grant.type",
        "sasl.kerberos.service.name",
        "sasl.kerberos.domain.name",
        "sasl.client.callback.handler.class",
    }
)

_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


class ClientConfigError(ValueError):
    """The properties cannot be turned into a client configuration."""


def jaas_options(jaas: str) -> dict[str, str]:
    """``key="value"`` options of a ``sasl.jaas.config`` line."""
    return dict(_JAAS_OPTION.findall(jaas))


def _first(props: dict[str, str], options: dict[str, str], *names: str) -> str | None:
    for name in names:
        value = props.get(name) if "." in name else options.get(name)
        if value:
            return value
    return None


def _extensions(props: dict[str, str], options: dict[str, str]) -> dict[str, str]:
    out = {k.removeprefix("extension_"): v for k, v in options.items() if k.startswith("extension_")}
    for pair in filter(None, (p.strip() for p in props.get("sasl.oauthbearer.extensions", "").split(","))):
        key, sep, value = pair.partition("=")
        if not sep:
            raise ClientConfigError(f"sasl.oauthbearer.extensions: expected key=value, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def _msk_iam(options: dict[str, str]) -> dict[str, Any]:
    from aiokafka_lead.auth.msk_iam import MSKIAMTokenProvider

    region = options.get("awsRegion") or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if not region:
        raise ClientConfigError(
            'AWS MSK IAM needs the region: awsRegion="..." in sasl.jaas.config, '
            "or AWS_REGION in the environment"
        )
    try:
        provider = MSKIAMTokenProvider(
            region,
            profile=options.get("awsProfileName"),
            role_arn=options.get("awsRoleArn"),
            role_session_name=options.get("awsRoleSessionName") if options.get("awsRoleArn") else None,
        )
    except ValueError as exc:  # also KafkaConfigurationError: the extra is missing
        raise ClientConfigError(f"AWS MSK IAM: {exc}") from exc
    return {"sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": provider}


def _oidc(props: dict[str, str], options: dict[str, str]) -> dict[str, Any]:
    from aiokafka_lead.auth.oidc import OIDCTokenProvider

    method = props.get("sasl.oauthbearer.method", "oidc").lower()
    if method != "oidc":
        raise ClientConfigError(f"sasl.oauthbearer.method must be 'oidc', not {method!r}")
    handler = props.get("sasl.login.callback.handler.class")
    if handler not in (None, JAVA_OIDC_HANDLER):
        raise ClientConfigError(
            f"sasl.login.callback.handler.class {handler!r} is a Java class we cannot run"
        )
    url = props.get("sasl.oauthbearer.token.endpoint.url")
    if "sasl.oauthbearer.assertion.file" in props:
        return _jwt_bearer(props, options, url)
    client_id = _first(
        props,
        options,
        "sasl.oauthbearer.client.credentials.client.id",
        "sasl.oauthbearer.client.id",
        "clientId",
    )
    secret = _first(
        props,
        options,
        "sasl.oauthbearer.client.credentials.client.secret",
        "sasl.oauthbearer.client.secret",
        "clientSecret",
    )
    if not (url and client_id and secret):
        raise ClientConfigError(
            "OAUTHBEARER needs sasl.oauthbearer.token.endpoint.url, "
            "sasl.oauthbearer.client.credentials.client.id and "
            "sasl.oauthbearer.client.credentials.client.secret"
        )
    try:
        provider = OIDCTokenProvider(
            url,
            client_id,
            secret,
            scope=_first(props, options, "sasl.oauthbearer.scope", "scope"),
            extensions=_extensions(props, options),
        )
    except ValueError as exc:
        raise ClientConfigError(f"OAUTHBEARER: {exc}") from exc
    return {"sasl_oauth_token_provider": provider}


def _jwt_bearer(props: dict[str, str], options: dict[str, str], url: str | None) -> dict[str, Any]:
    from aiokafka_lead.auth.oidc import JWT_BEARER_GRANT, JWTBearerTokenProvider

    retriever = props.get("sasl.oauthbearer.jwt.retriever.class", JAVA_JWT_BEARER)
    grant = props.get("sasl.oauthbearer.grant.type", JWT_BEARER_GRANT)
    if retriever != JAVA_JWT_BEARER or grant != JWT_BEARER_GRANT:
        raise ClientConfigError("sasl.oauthbearer.assertion.file is for the JWT-bearer grant only")
    if not url:
        raise ClientConfigError("the JWT-bearer grant needs sasl.oauthbearer.token.endpoint.url")
    try:
        provider = JWTBearerTokenProvider(
            url,
            assertion_file=props["sasl.oauthbearer.assertion.file"],
            client_id=_first(props, options, "sasl.oauthbearer.client.credentials.client.id",
                             "sasl.oauthbearer.client.id", "clientId"),
            scope=_first(props, options, "sasl.oauthbearer.scope", "scope"),
            extensions=_extensions(props, options),
        )  # fmt: skip
    except ValueError as exc:
        raise ClientConfigError(f"OAUTHBEARER: {exc}") from exc
    return {"sasl_oauth_token_provider": provider}


def _gssapi(props: dict[str, str], options: dict[str, str]) -> dict[str, Any]:
    if "keyTab" in options:
        raise ClientConfigError(
            "GSSAPI takes its credentials from the Kerberos environment: set KRB5_CLIENT_KTNAME to the "
            "keytab (or kinit) instead of keyTab in sasl.jaas.config"
        )
    kwargs: dict[str, Any] = {
        "sasl_kerberos_service_name": props.get("sasl.kerberos.service.name")
        or options.get("serviceName")
        or "kafka"
    }
    if props.get("sasl.kerberos.domain.name"):
        kwargs["sasl_kerberos_domain_name"] = props["sasl.kerberos.domain.name"]
    return kwargs


def token_kwargs(mechanism: str, props: dict[str, str]) -> dict[str, Any]:
    """Client keywords for ``sasl.mechanism`` OAUTHBEARER, AWS_MSK_IAM or GSSAPI."""
    options = jaas_options(props.get("sasl.jaas.config", ""))
    if mechanism == "GSSAPI":
        return _gssapi(props, options)
    handler = props.get("sasl.login.callback.handler.class")
    if mechanism == "AWS_MSK_IAM" or handler == MSK_IAM_HANDLER:
        return _msk_iam(options)
    return _oidc(props, options)
