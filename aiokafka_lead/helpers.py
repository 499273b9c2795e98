"""``create_ssl_context``: aiokafka's helper, with its keywords and defaults.

The context is for client sockets (``ssl.Purpose.SERVER_AUTH``): it verifies the broker's
certificate and host name. Without ``cafile`` / ``capath`` / ``cadata`` the system's CA
certificates are loaded; ``certfile`` (with ``keyfile`` and ``password``) is the client
certificate for mutual TLS.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable
from os import PathLike

log = logging.getLogger(__name__)

_Path = str | bytes | PathLike[str] | PathLike[bytes]
_Password = Callable[[], str | bytes | bytearray] | str | bytes | bytearray


def create_ssl_context(
    *,
    cafile: _Path | None = None,
    capath: _Path | None = None,
    cadata: str | bytes | None = None,
    certfile: _Path | None = None,
    keyfile: _Path | None = None,
    password: _Password | None = None,
) -> ssl.SSLContext:
    """An :class:`ssl.SSLContext` for connecting to brokers (keywords only, as aiokafka's).

    ``cafile`` / ``capath`` / ``cadata`` go to :meth:`ssl.SSLContext.load_verify_locations`
    (``cadata`` may be PEM text or DER bytes); none of them: the system's CAs.
    ``certfile``, ``keyfile`` and ``password`` go to :meth:`ssl.SSLContext.load_cert_chain`.
    Host names are always checked; there is no CRL option.
    """
    if cafile or capath:
        log.info("loading SSL CA certificates from %s", cafile or capath)
    elif cadata is not None:
        log.info("loading SSL CA certificates from cadata")
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=cafile, capath=capath, cadata=cadata)
    if certfile is not None:
        log.info("loading the SSL client certificate from %s", certfile)
        context.load_cert_chain(certfile, keyfile, password)
    return context


__all__ = ["create_ssl_context"]
