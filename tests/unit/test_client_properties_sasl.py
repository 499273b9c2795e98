"""OAUTHBEARER / AWS MSK IAM / GSSAPI in Java-style client properties (CLI --command-config,
Spark kafka.* options)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiokafka_lead.auth.msk_iam import MSKIAMTokenProvider
from aiokafka_lead.auth.oidc import JWTBearerTokenProvider, OIDCTokenProvider
from aiokafka_lead.config.properties import ClientConfigError, client_kwargs, parse_properties
from aiokafka_lead.config.sasl_properties import JAVA_JWT_BEARER, MSK_IAM_HANDLER
from aiokafka_lead.spark.options import SparkOptionError, parse_options

JAVA_OIDC = """
security.protocol=SASL_SSL
sasl.mechanism=OAUTHBEARER
sasl.oauthbearer.token.endpoint.url=https://idp.example.com/oauth2/token
sasl.oauthbearer.client.credentials.client.id=my-client
sasl.oauthbearer.client.credentials.client.secret=s3cr3t
sasl.oauthbearer.scope=kafka.read kafka.write
sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler
sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
extension_logicalCluster="lkc-1";
"""


def test_java_oidc_properties() -> None:
    kwargs = client_kwargs(parse_properties(JAVA_OIDC.replace("\\\n", "")))
    provider = kwargs["sasl_oauth_token_provider"]
    assert isinstance(provider, OIDCTokenProvider)
    assert kwargs["sasl_mechanism"] == "OAUTHBEARER" and "sasl_plain_username" not in kwargs
    assert provider.token_endpoint_url == "https://idp.example.com/oauth2/token"
    assert provider.client_id == "my-client" and provider._scope == "kafka.read kafka.write"
    assert provider.extensions() == {"logicalCluster": "lkc-1"}
    assert "s3cr3t" not in repr(kwargs)


def test_librdkafka_and_jaas_spellings() -> None:
    props = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.token.endpoint.url": "http://127.0.0.1:1/token",
        "sasl.oauthbearer.extensions": "a=1, b=2",
        "sasl.jaas.config": 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
        'clientId="jaas-id" clientSecret="jaas-secret" scope="s";',
    }
    provider = client_kwargs(props)["sasl_oauth_token_provider"]
    assert provider.client_id == "jaas-id" and provider._scope == "s"
    assert provider.extensions() == {"a": "1", "b": "2"}


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"sasl.oauthbearer.client.id": "c"}, "needs sasl.oauthbearer.token.endpoint.url"),
        ({"sasl.oauthbearer.method": "default"}, "must be 'oidc'"),
        ({"sasl.login.callback.handler.class": "com.example.Mine"}, "Java class we cannot run"),
        ({"sasl.oauthbearer.token.endpoint.url": "ftp://x", "sasl.oauthbearer.client.id": "c",
          "sasl.oauthbearer.client.secret": "s"}, "http"),
    ],
)  # fmt: skip
def test_bad_oauth_properties(props: dict[str, str], message: str) -> None:
    base = {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}
    with pytest.raises(ClientConfigError, match=message):
        client_kwargs(base | props)


def test_aws_msk_iam_properties(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    props = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "AWS_MSK_IAM",
        "sasl.jaas.config": 'software.amazon.msk.auth.iam.IAMLoginModule required awsProfileName="prod";',
        "sasl.client.callback.handler.class": "software.amazon.msk.auth.iam.IAMClientCallbackHandler",
    }
    with pytest.raises(ClientConfigError, match="needs the region"):
        client_kwargs(props)
    monkeypatch.setenv("AWS_REGION", "eu-central-1")
    kwargs = client_kwargs(props)
    assert kwargs["sasl_mechanism"] == "OAUTHBEARER"
    provider = kwargs["sasl_oauth_token_provider"]
    assert isinstance(provider, MSKIAMTokenProvider)
    assert (provider.region, provider.profile) == ("eu-central-1", "prod")
    oauth_style = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.login.callback.handler.class": MSK_IAM_HANDLER,
        "sasl.jaas.config": 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
        'awsRegion="us-west-2" awsRoleArn="arn:aws:iam::123456789012:role/kafka";',
    }
    provider = client_kwargs(oauth_style)["sasl_oauth_token_provider"]
    assert (provider.region, provider.role_arn) == ("us-west-2", "arn:aws:iam::123456789012:role/kafka")


def test_gssapi_properties() -> None:
    props = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "GSSAPI",
        "sasl.kerberos.service.name": "kafka-svc",
    }
    assert client_kwargs(props) == {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "GSSAPI",
        "sasl_kerberos_service_name": "kafka-svc",
    }
    props["sasl.jaas.config"] = (
        'com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="/k.keytab";'
    )
    with pytest.raises(ClientConfigError, match="KRB5_CLIENT_KTNAME"):
        client_kwargs(props)


def test_spark_kafka_options_make_the_provider() -> None:
    opts = parse_options(
        {
            "kafka.bootstrap.servers": "b:9092",
            "subscribe": "t",
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "OAUTHBEARER",
            "kafka.sasl.oauthbearer.token.endpoint.url": "https://idp/token",
            "kafka.sasl.oauthbearer.client.credentials.client.id": "spark",
            "kafka.sasl.oauthbearer.client.credentials.client.secret": "x",
        },
        streaming=False,
    )
    assert isinstance(opts.client_kwargs()["sasl_oauth_token_provider"], OIDCTokenProvider)
    with pytest.raises(SparkOptionError, match=r"needs sasl\.oauthbearer\.token\.endpoint\.url"):
        parse_options(
            {"kafka.bootstrap.servers": "b:9092", "subscribe": "t",
             "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "OAUTHBEARER"},
            streaming=False,
        )  # fmt: skip


def test_jwt_bearer_assertion_file(tmp_path: Path) -> None:
    props = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.token.endpoint.url": "https://idp.example.com/token",
        "sasl.oauthbearer.jwt.retriever.class": JAVA_JWT_BEARER,
        "sasl.oauthbearer.assertion.file": str(tmp_path / "assertion.jwt"),
        "sasl.oauthbearer.scope": "kafka",
    }
    provider = client_kwargs(props)["sasl_oauth_token_provider"]
    assert isinstance(provider, JWTBearerTokenProvider) and provider._scope == "kafka"
    props["sasl.oauthbearer.grant.type"] = "client_credentials"
    with pytest.raises(ClientConfigError, match="JWT-bearer grant only"):
        client_kwargs(props)
