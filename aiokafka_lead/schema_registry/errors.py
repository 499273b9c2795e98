"""The schema registry's errors: one class for each answer a caller acts on differently.

Every registry answer that is not a success becomes a :class:`SchemaRegistryError` carrying
the HTTP status, the registry's own error code and its message, so the reason the registry
gave (an incompatibility, an invalid schema) reaches the caller unchanged.
"""

from __future__ import annotations

import enum


class RegistryErrorCode(enum.IntEnum):
    """The error codes a Confluent-compatible registry puts in its JSON answers."""

    SUBJECT_NOT_FOUND = 40401
    VERSION_NOT_FOUND = 40402
    SCHEMA_NOT_FOUND = 40403
    INCOMPATIBLE_SCHEMA = 409
    INVALID_SCHEMA = 42201
    INVALID_VERSION = 42202
    INVALID_COMPATIBILITY_LEVEL = 42203


class SchemaRegistryError(Exception):
    """A registry answered with an error (or could not be reached).

    ``status``: the HTTP status (``None`` when no answer came); ``error_code``: the registry's
    code from its JSON body (40401, 409, 42201, ...; ``None`` when it sent none); ``message``:
    the registry's message, verbatim.
    """

    def __init__(self, status: int | None, error_code: int | None, message: str, url: str = "") -> None:
        self.status = status
        self.error_code = error_code
        self.message = message
        self.url = url
        where = f" ({url})" if url else ""
        super().__init__(f"schema registry {status} (error code {error_code}){where}: {message}")


class AuthenticationError(SchemaRegistryError):
    """401 or 403: the credentials were refused or do not allow the call."""


class NotFoundError(SchemaRegistryError):
    """404: no such subject (40401), version (40402) or schema (40403)."""


class IncompatibleSchemaError(SchemaRegistryError):
    """409: the schema is not compatible with the subject's earlier versions."""


class InvalidSchemaError(SchemaRegistryError):
    """422: the registry could not parse the schema, or a reference or version is invalid."""


class RegistryUnavailableError(SchemaRegistryError):
    """5xx answers or no connection, retried with backoff until the request's deadline passed."""


class SerializationError(ValueError):
    """A value could not be encoded, or bytes could not be decoded, with its schema."""


def error_for_status(status: int, error_code: int | None, message: str, url: str) -> SchemaRegistryError:
    """The error class for one HTTP status."""
    cls: type[SchemaRegistryError]
    if status in {401, 403}:
        cls = AuthenticationError
    elif status == 404:
        cls = NotFoundError
    elif status == 409:
        cls = IncompatibleSchemaError
    elif status == 422:
        cls = InvalidSchemaError
    elif status >= 500:
        cls = RegistryUnavailableError
    else:
        cls = SchemaRegistryError
    return cls(status, error_code, message, url)
