"""MSKIAMTokenProvider: the token is AWS's presigned kafka-cluster:Connect URL (fake
credentials, no network), cached; a missing extra names the pip command."""

from __future__ import annotations

import base64
import sys
from urllib.parse import parse_qs, urlsplit

import pytest
from botocore.credentials import CredentialProvider, Credentials

from aiokafka_lead.auth.msk_iam import MSKIAMTokenError, MSKIAMTokenProvider
from aiokafka_lead.errors import KafkaConfigurationError


class FakeCredentials(CredentialProvider):  # type: ignore[misc]
    """A botocore credentials provider with made-up keys."""

    def load(self) -> Credentials:
        return Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")


def _decode(token: str) -> tuple[str, dict[str, list[str]]]:
    url = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/", parse_qs(parts.query)


async def test_token_is_a_presigned_connect_url() -> None:
    provider = MSKIAMTokenProvider("eu-west-1", credentials_provider=FakeCredentials())
    token = await provider.token()
    assert "=" not in token  # base64url without padding
    base, query = _decode(token)
    assert base == "https://kafka.eu-west-1.amazonaws.com/"
    assert query["Action"] == ["kafka-cluster:Connect"]
    assert query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"]
    assert query["X-Amz-Credential"][0].startswith("AKIDEXAMPLE/")
    assert query["X-Amz-Credential"][0].endswith("/eu-west-1/kafka-cluster/aws4_request")
    assert query["X-Amz-Expires"] == ["900"]
    assert len(query["X-Amz-Signature"][0]) == 64
    assert await provider.token() == token and provider.fetches == 1  # cached
    assert "wJalr" not in repr(provider)


async def test_default_chain_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDENVIRONMENT")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret-from-env")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    _, query = _decode(await MSKIAMTokenProvider("us-east-1").token())
    assert query["X-Amz-Credential"][0].startswith("AKIDENVIRONMENT/")


async def test_an_unknown_profile_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    provider = MSKIAMTokenProvider("us-east-1", profile="nope")
    with pytest.raises(MSKIAMTokenError, match=r"profile='nope'.*could not make a token: ProfileNotFound"):
        await provider.token()


def test_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="region"):
        MSKIAMTokenProvider("")
    with pytest.raises(ValueError, match="at most one"):
        MSKIAMTokenProvider("us-east-1", profile="p", role_arn="arn:aws:iam::1:role/r")


def test_a_missing_extra_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "aws_msk_iam_sasl_signer", None)
    monkeypatch.setitem(sys.modules, "aws_msk_iam_sasl_signer.MSKAuthTokenProvider", None)
    with pytest.raises(KafkaConfigurationError, match=r"pip install 'aiokafka_lead\[msk-iam\]'"):
        MSKIAMTokenProvider("us-east-1")
