"""The cluster's certificate authority and the API server's serving certificate.

Programs in pods reach the API server the in-cluster way (https, the CA at
`/var/run/secrets/kubernetes.io/serviceaccount/ca.crt`), so the emulator also serves TLS with a
certificate for the names and addresses a pod may use.
"""

from __future__ import annotations

import datetime
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from akri import certificates
from akri.sim.apiserver.kubernetes_service import SERVICE_IP

_NAMES: Final = (
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
    "localhost",
)
_VALIDITY: Final = datetime.timedelta(days=365)


@dataclass(frozen=True)
class Pki:
    """Where the CA certificate and the server's key pair are written."""

    directory: Path

    @property
    def ca_file(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def cert_file(self) -> Path:
        return self.directory / "apiserver.crt"

    @property
    def key_file(self) -> Path:
        return self.directory / "apiserver.key"

    def create(self) -> None:
        """A fresh CA and a serving certificate signed by it (EC P-256, one year)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        now = datetime.datetime.now(datetime.UTC)
        ca = certificates.new_ca("akri-sim-ca", now, _VALIDITY)
        server = certificates.server_certificate(
            ca, "kube-apiserver", _NAMES, now, _VALIDITY, ("127.0.0.1", SERVICE_IP)
        )
        self.ca_file.write_bytes(ca.cert)
        self.cert_file.write_bytes(server.cert)
        self.key_file.write_bytes(server.key)
        self.key_file.chmod(0o600)

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert_file, self.key_file)
        return context
