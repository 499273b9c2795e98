"""AWS MSK IAM for SASL/OAUTHBEARER: tokens made by AWS's ``aws-msk-iam-sasl-signer-python``.

An MSK IAM token is a SigV4-presigned ``kafka-cluster:Connect`` URL, base64url-encoded, valid
15 minutes. ``MSKIAMTokenProvider(region)`` signs with the default AWS credential chain
(environment, ``~/.aws``, container or instance role); ``profile=`` with a named profile,
``role_arn=`` with a role assumed through STS, ``credentials_provider=`` with any botocore
credentials provider. Tokens are made in a worker thread (botocore may do blocking I/O),
cached, and replaced after 80% of their lifetime. Needs the optional extra:
``pip install 'aiokafka_lead[msk-iam]'``.

    from aiokafka_lead.auth.msk_iam import MSKIAMTokenProvider

    AIOKafkaProducer(
        bootstrap_servers="b-1.mycluster.abc123.c2.kafka.us-east-1.amazonaws.com:9098",
        security_protocol="SASL_SSL",
        ssl_context=create_ssl_context(),
        sasl_mechanism="OAUTHBEARER",
        sasl_oauth_token_provider=MSKIAMTokenProvider("us-east-1"),
    )
"""

from __future__ import annotations

import importlib
import time
from typing import Any

import anyio
import anyio.to_thread

from aiokafka_lead.abc import AbstractTokenProvider
from aiokafka_lead.errors import KafkaConfigurationError, KafkaError

EXTRA = "pip install 'aiokafka_lead[msk-iam]'"


class MSKIAMTokenError(KafkaError):
    """The AWS signer could not make a token (no credentials, a role that cannot be assumed)."""


def _signer() -> Any:
    try:
        return importlib.import_module("aws_msk_iam_sasl_signer.MSKAuthTokenProvider")
    except ImportError:
        raise KafkaConfigurationError(
            f"MSKIAMTokenProvider needs AWS's aws-msk-iam-sasl-signer-python: {EXTRA}"
        ) from None


class MSKIAMTokenProvider(AbstractTokenProvider):
    """Tokens for AWS MSK IAM authentication in ``region`` (at most one of ``profile``,
    ``role_arn`` or ``credentials_provider``; none: the default credential chain)."""

    def __init__(
        self,
        region: str,
        *,
        profile: str | None = None,
        role_arn: str | None = None,
        role_session_name: str | None = None,
        credentials_provider: Any = None,
        refresh_ratio: float = 0.8,
    ) -> None:
        if not isinstance(region, str) or not region:
            raise ValueError("MSKIAMTokenProvider needs the cluster's AWS region (e.g. 'us-east-1')")
        if sum(x is not None for x in (profile, role_arn, credentials_provider)) > 1:
            raise ValueError("give at most one of profile, role_arn and credentials_provider")
        if role_session_name is not None and role_arn is None:
            raise ValueError("role_session_name needs role_arn")
        if not 0.1 <= refresh_ratio <= 1.0:
            raise ValueError(f"refresh_ratio must be between 0.1 and 1.0, not {refresh_ratio!r}")
        self._signer = _signer()
        self.region = region
        self.profile = profile
        self.role_arn = role_arn
        self._session_name = role_session_name
        self._credentials_provider = credentials_provider
        self._refresh_ratio = refresh_ratio
        self._token: str | None = None
        self._refresh_at = 0.0  # monotonic
        self._lock = anyio.Lock()
        #: tokens made so far
        self.fetches = 0

    def __repr__(self) -> str:
        source = (
            f"profile={self.profile!r}" if self.profile else f"role_arn={self.role_arn!r}" if self.role_arn
            else "credentials_provider" if self._credentials_provider is not None else "default credentials"
        )  # fmt: skip
        return f"<MSKIAMTokenProvider region={self.region!r} {source}>"

    def _generate(self) -> tuple[str, int]:
        signer = self._signer
        if self.profile is not None:
            return signer.generate_auth_token_from_profile(self.region, self.profile)  # type: ignore[no-any-return]
        if self.role_arn is not None:
            if self._session_name is not None:
                return signer.generate_auth_token_from_role_arn(  # type: ignore[no-any-return]
                    self.region, self.role_arn, self._session_name
                )
            return signer.generate_auth_token_from_role_arn(self.region, self.role_arn)  # type: ignore[no-any-return]
        if self._credentials_provider is not None:
            return signer.generate_auth_token_from_credentials_provider(  # type: ignore[no-any-return]
                self.region, self._credentials_provider
            )
        return signer.generate_auth_token(self.region)  # type: ignore[no-any-return]

    async def token(self) -> str:
        async with self._lock:
            if self._token is not None and time.monotonic() < self._refresh_at:
                return self._token
            try:
                token, expiry_ms = await anyio.to_thread.run_sync(self._generate)
            except Exception as exc:  # botocore's errors: no credentials, access denied, ...
                what = f"{type(exc).__name__}: {exc}"
                raise MSKIAMTokenError(f"{self!r} could not make a token: {what}") from exc
            lifetime_s = max(expiry_ms / 1000 - time.time(), 0.0)
            self._token = token
            self._refresh_at = time.monotonic() + lifetime_s * self._refresh_ratio
            self.fetches += 1
            return token


__all__ = ["EXTRA", "MSKIAMTokenError", "MSKIAMTokenProvider"]
