"""A throwaway MIT Kerberos KDC for tests (Debian's ``krb5-kdc`` and ``krb5-admin-server``).

``LocalKdc(directory).start()`` writes a ``krb5.conf`` and ``kdc.conf`` for the realm
``TEST.LOCAL``, creates its database, and runs ``krb5kdc`` in the foreground on a free TCP
port of 127.0.0.1 (no system files or services are touched). ``add_principal(name)`` creates
a principal with a random key and returns a keytab holding it. Clients and brokers find the
KDC through the ``krb5.conf`` (``KRB5_CONFIG`` for MIT clients, ``-Djava.security.krb5.conf``
for the JVM). ``stop()`` ends the KDC process it started, by its pid.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from aiokafka_lead.testing.cluster.config import free_ports

REALM = "TEST.LOCAL"
TOOLS = ("krb5kdc", "kdb5_util", "kadmin.local")
APT_PACKAGES = "krb5-kdc krb5-admin-server libkrb5-dev"


class KdcError(RuntimeError):
    """The KDC could not be set up or started."""


def missing_tools() -> list[str]:
    """The MIT Kerberos programs not found (in PATH or /usr/sbin)."""
    return [t for t in TOOLS if _which(t) is None]


def _which(tool: str) -> str | None:
    return shutil.which(tool) or shutil.which(tool, path="/usr/sbin:/usr/local/sbin")


class LocalKdc:
    def __init__(self, directory: str | os.PathLike[str], realm: str = REALM) -> None:
        self.directory = Path(directory).resolve()
        self.realm = realm
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def krb5_conf(self) -> Path:
        return self.directory / "krb5.conf"

    @property
    def env(self) -> dict[str, str]:
        """Environment for MIT tools and clients of this KDC."""
        return {
            "KRB5_CONFIG": str(self.krb5_conf),
            "KRB5_KDC_PROFILE": str(self.directory / "kdc.conf"),
        }

    def run(self, *args: str) -> str:
        """Run one of the MIT tools against this KDC (its configuration in the environment)."""
        tool = _which(args[0])
        if tool is None:
            raise KdcError(f"{args[0]} is missing: apt-get install {APT_PACKAGES}")
        proc = subprocess.run(
            [tool, *args[1:]],
            env={**os.environ, **self.env},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if proc.returncode != 0:
            raise KdcError(f"{' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
        return proc.stdout

    def start(self, timeout: float = 30.0) -> LocalKdc:
        missing = missing_tools()
        if missing:
            raise KdcError(f"{', '.join(missing)} missing: apt-get install {APT_PACKAGES}")
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.port,) = free_ports(1)
        self.krb5_conf.write_text(
            "[libdefaults]\n"
            f"  default_realm = {self.realm}\n"
            "  dns_lookup_kdc = false\n"
            "  dns_lookup_realm = false\n"
            "  dns_canonicalize_hostname = false\n"
            "  rdns = false\n"
            "  udp_preference_limit = 1\n"
            "  ticket_lifetime = 1h\n"
            "[realms]\n"
            f"  {self.realm} = {{\n    kdc = 127.0.0.1:{self.port}\n  }}\n"
        )
        (self.directory / "kdc.conf").write_text(
            "[kdcdefaults]\n"
            f"  kdc_tcp_listen = 127.0.0.1:{self.port}\n"
            f"  kdc_listen = 127.0.0.1:{self.port}\n"
            "[realms]\n"
            f"  {self.realm} = {{\n"
            f"    database_name = {self.directory / 'principal'}\n"
            f"    key_stash_file = {self.directory / 'stash'}\n"
            f"    acl_file = {self.directory / 'kadm5.acl'}\n"
            "    supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal\n"
            "  }\n"
            "[logging]\n"
            f"  kdc = FILE:{self.directory / 'kdc.log'}\n"
        )
        (self.directory / "kadm5.acl").write_text("")
        self.run("kdb5_util", "create", "-s", "-r", self.realm, "-P", "master-password-for-tests")
        kdc = _which("krb5kdc")
        assert kdc is not None
        log = (self.directory / "krb5kdc.out").open("ab")
        self._process = subprocess.Popen(
            [kdc, "-n", "-r", self.realm],
            env={**os.environ, **self.env},
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        log.close()
        self._wait_listening(timeout)
        return self

    def _wait_listening(self, timeout: float) -> None:
        import socket

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                out = (self.directory / "krb5kdc.out").read_text(errors="replace")
                raise KdcError(f"krb5kdc exited ({self._process.returncode}): {out[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        raise KdcError(f"krb5kdc did not listen on 127.0.0.1:{self.port} within {timeout} s")

    def add_principal(self, name: str) -> Path:
        """Create ``name@REALM`` with a random key; return a keytab holding its keys."""
        keytab = self.directory / f"{name.replace('/', '_')}.keytab"
        self.run("kadmin.local", "-r", self.realm, "-q", f"addprinc -randkey {name}@{self.realm}")
        self.run("kadmin.local", "-r", self.realm, "-q", f"ktadd -k {keytab} {name}@{self.realm}")
        return keytab

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)

    def __enter__(self) -> LocalKdc:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
