"""The cluster's certificate authority and the API server's serving certificate.

Programs in pods reach the API server the in-cluster way (https, the CA at
`/var/run/secrets/kubernetes.io/serviceaccount/ca.crt`), so the emulator also serves TLS with a
certificate for the names and addresses a pod may use.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

SERVICE_IP: Final = "10.96.0.1"
"""The `kubernetes` Service's cluster IP, where pods find the API server."""
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
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "akri-sim-ca")])
        ca = (
            _builder(ca_name, ca_name, ca_key.public_key(), now)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256())
        )
        key = ec.generate_private_key(ec.SECP256R1())
        addresses = [ipaddress.ip_address(a) for a in ("127.0.0.1", SERVICE_IP)]
        names = [x509.DNSName(n) for n in _NAMES] + [x509.IPAddress(a) for a in addresses]
        server_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")])
        cert = (
            _builder(server_name, ca_name, key.public_key(), now)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256())
        )
        self.ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        self.cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        self.key_file.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        self.key_file.chmod(0o600)

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert_file, self.key_file)
        return context


def _builder(
    subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePublicKey, now: datetime.datetime
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
    )
