"""X.509 for the programs that serve TLS inside the cluster: a CA and server certificates it signs
(EC P-256, PEM), and what a certificate says (expiry, names, issuer). Pure: no I/O.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

BACKDATE = datetime.timedelta(minutes=5)
"""Certificates start a little in the past: clocks of the nodes differ."""


@dataclass(frozen=True)
class KeyPair:
    cert: bytes
    """PEM certificate."""
    key: bytes
    """PEM private key (PKCS #8, unencrypted)."""


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    key: ec.EllipticCurvePublicKey,
    now: datetime.datetime,
    validity: datetime.timedelta,
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + validity)
    )


def new_ca(common_name: str, now: datetime.datetime, validity: datetime.timedelta) -> KeyPair:
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(common_name)
    cert = (
        _builder(name, name, key.public_key(), now, validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _pem_key(key))


def server_certificate(
    ca: KeyPair,
    common_name: str,
    dns_names: Sequence[str],
    now: datetime.datetime,
    validity: datetime.timedelta,
    addresses: Sequence[str] = (),
) -> KeyPair:
    """A serving certificate for `dns_names` and IP `addresses`, signed by `ca`."""
    ca_cert = x509.load_pem_x509_certificate(ca.cert)
    ca_key = serialization.load_pem_private_key(ca.key, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError("the CA key is not an EC key")
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    names += [x509.IPAddress(ipaddress.ip_address(a)) for a in addresses]
    cert = (
        _builder(_name(common_name), ca_cert.subject, key.public_key(), now, validity)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _pem_key(key))


def not_after(cert: bytes) -> datetime.datetime:
    return x509.load_pem_x509_certificate(cert).not_valid_after_utc


def dns_names(cert: bytes) -> set[str]:
    try:
        names = (
            x509.load_pem_x509_certificate(cert)
            .extensions.get_extension_for_class(x509.SubjectAlternativeName)
            .value
        )
    except x509.ExtensionNotFound:
        return set()
    return set(names.get_values_for_type(x509.DNSName))


def signed_by(cert: bytes, ca: bytes) -> bool:
    issuer = x509.load_pem_x509_certificate(ca)
    try:
        x509.load_pem_x509_certificate(cert).verify_directly_issued_by(issuer)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def certificates(bundle: bytes) -> list[bytes]:
    """The PEM certificates of a bundle, one by one."""
    return [
        c.public_bytes(serialization.Encoding.PEM) for c in x509.load_pem_x509_certificates(bundle)
    ]
