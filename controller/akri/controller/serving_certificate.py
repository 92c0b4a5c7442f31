"""Which webhook certificate the controller serves, decided from its Secret (pure).

The Secret holds a CA (`ca.crt` is the bundle the API server trusts, `ca.key` its key) and the
serving pair (`tls.crt`, `tls.key`). A serving certificate is renewed once less than a third of
its lifetime is left; the CA (five lifetimes long) once it would not outlive a new serving
certificate. A new CA is added in front of the old one in `ca.crt`, so the API server trusts
both while replicas change over.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass

from akri import certificates

CA_LIFETIMES = 5
CA_FILE, CA_KEY, CERT_FILE, KEY_FILE = "ca.crt", "ca.key", "tls.crt", "tls.key"


@dataclass(frozen=True)
class Wanted:
    common_name: str
    dns_names: tuple[str, ...]
    validity: datetime.timedelta

    @property
    def renew_before(self) -> datetime.timedelta:
        return self.validity / 3


def _usable_ca(data: Mapping[str, bytes], wanted: Wanted, now: datetime.datetime) -> bool:
    if not data.get(CA_FILE) or not data.get(CA_KEY):
        return False
    try:
        newest = certificates.certificates(data[CA_FILE])[0]
        return certificates.not_after(newest) - now > wanted.validity
    except ValueError:
        return False


def _usable_server(
    data: Mapping[str, bytes], ca: bytes, wanted: Wanted, now: datetime.datetime
) -> bool:
    cert = data.get(CERT_FILE)
    if not cert or not data.get(KEY_FILE):
        return False
    try:
        return (
            certificates.signed_by(cert, ca)
            and set(wanted.dns_names) <= certificates.dns_names(cert)
            and certificates.not_after(cert) - now > wanted.renew_before
        )
    except ValueError:
        return False


def _still_valid(bundle: bytes, now: datetime.datetime) -> list[bytes]:
    try:
        return [c for c in certificates.certificates(bundle) if certificates.not_after(c) > now]
    except ValueError:
        return []


def renewed(
    data: Mapping[str, bytes], wanted: Wanted, now: datetime.datetime
) -> dict[str, bytes] | None:
    """The Secret data to write, or None when the stored certificate serves as it is."""
    if _usable_ca(data, wanted, now):
        ca = certificates.KeyPair(certificates.certificates(data[CA_FILE])[0], data[CA_KEY])
        bundle = data[CA_FILE]
        if _usable_server(data, ca.cert, wanted, now):
            return None
    else:
        ca = certificates.new_ca(f"{wanted.common_name}-ca", now, wanted.validity * CA_LIFETIMES)
        bundle = b"".join([ca.cert, *_still_valid(data.get(CA_FILE) or b"", now)])
    server = certificates.server_certificate(
        ca, wanted.common_name, wanted.dns_names, now, wanted.validity
    )
    return {CA_FILE: bundle, CA_KEY: ca.key, CERT_FILE: server.cert, KEY_FILE: server.key}
