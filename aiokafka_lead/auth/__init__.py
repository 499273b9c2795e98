"""Ready OAUTHBEARER token providers (``sasl_oauth_token_provider=``).

* :mod:`aiokafka_lead.auth.oidc`: ``OIDCTokenProvider``, OAuth 2 client credentials
  against any OIDC token endpoint (Keycloak, Entra ID, Okta, Auth0, Confluent Cloud), and
  ``JWTBearerTokenProvider``, the JWT-bearer grant (RFC 7523).
* :mod:`aiokafka_lead.auth.msk_iam`: ``MSKIAMTokenProvider``, AWS MSK IAM (the optional
  extra ``aiokafka_lead[msk-iam]``).
"""
