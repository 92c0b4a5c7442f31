"""The webhook certificate the controller makes and renews itself (no cert-manager): decided from
its Secret, trusted through the webhook's caBundle before it is served, renewed with a third of
its lifetime left, a new CA trusted alongside the old one, and one result when replicas race."""

from __future__ import annotations

import asyncio
import base64
import datetime
import ssl
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client

from akri import certificates
from akri.controller.certificate_keeper import CertificateKeeper
from akri.controller.serving_certificate import (
    CA_FILE,
    CA_KEY,
    CA_LIFETIMES,
    CERT_FILE,
    KEY_FILE,
    Wanted,
    renewed,
)
from akri.controller.webhook import WebhookServer
from akri.kube.calls import call
from akri.sim.apiserver import ApiServer
from akri.sim.apiserver.faults import FaultRule
from tests.controller.test_controller_webhook import served_certificate
from tests.support import eventually

HOST = "akri-webhook.akri.svc"
WANTED = Wanted(HOST, (HOST, f"{HOST}.cluster.local"), datetime.timedelta(days=30))
T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
SECRET, REGISTRATION = "akri-webhook-tls", "akri-configurations"


def test_a_certificate_is_made_kept_and_renewed_with_a_third_of_its_life_left() -> None:
    made = renewed({}, WANTED, T0)
    assert made is not None
    assert set(made) == {CA_FILE, CA_KEY, CERT_FILE, KEY_FILE}
    assert certificates.signed_by(made[CERT_FILE], made[CA_FILE])
    assert certificates.dns_names(made[CERT_FILE]) == set(WANTED.dns_names)
    assert renewed(made, WANTED, T0 + WANTED.validity * 0.6) is None
    later = renewed(made, WANTED, T0 + WANTED.validity * 0.7)
    assert later is not None
    assert later[CA_FILE] == made[CA_FILE], "same CA: the caBundle does not change"
    assert later[CERT_FILE] != made[CERT_FILE]
    assert certificates.signed_by(later[CERT_FILE], made[CA_FILE])
    other_names = Wanted("x", ("x.akri.svc",), WANTED.validity)
    assert renewed(made, other_names, T0) is not None, "a certificate for other names"


def test_a_new_ca_is_trusted_alongside_the_old_one() -> None:
    made = renewed({}, WANTED, T0)
    assert made is not None
    near_ca_end = T0 + WANTED.validity * (CA_LIFETIMES - 1) + datetime.timedelta(days=1)
    rotated = renewed(made, WANTED, near_ca_end)
    assert rotated is not None
    new_ca, old_ca = certificates.certificates(rotated[CA_FILE])
    assert old_ca == made[CA_FILE]
    assert certificates.signed_by(rotated[CERT_FILE], new_ca)
    assert renewed(rotated, WANTED, near_ca_end) is None


class Clock:
    def __init__(self, now: datetime.datetime | None = None) -> None:
        self.now = now or datetime.datetime.now(datetime.UTC)

    def __call__(self) -> datetime.datetime:
        return self.now


async def setup(api: client.ApiClient) -> None:
    await call(
        client.CoreV1Api(api).create_namespaced_secret,
        "default",
        {"metadata": {"name": SECRET}, "type": "Opaque"},
    )
    hook = {
        "name": "configurations.validation.akri.sh",
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "clientConfig": {"service": {"name": "akri-webhook", "namespace": "akri", "port": 443}},
    }
    await call(
        client.AdmissionregistrationV1Api(api).create_validating_webhook_configuration,
        {"metadata": {"name": REGISTRATION}, "webhooks": [hook]},
    )


async def stored(api: client.ApiClient) -> tuple[dict[str, bytes], str]:
    secret = await client.CoreV1Api(api).read_namespaced_secret(SECRET, "default")
    data = {k: base64.b64decode(v) for k, v in (secret.data or {}).items()}
    registration = await client.AdmissionregistrationV1Api(
        api
    ).read_validating_webhook_configuration(REGISTRATION)
    return data, registration.webhooks[0].client_config.ca_bundle


def keeper(api: client.ApiClient, directory: Path, clock: Clock) -> CertificateKeeper:
    return CertificateKeeper(api, "default", SECRET, REGISTRATION, directory, WANTED, clock=clock)


async def handshake(port: int, bundle: str) -> None:
    """TLS as the API server checks it: only the caBundle trusted, the Service's DNS name."""
    trusted = ssl.create_default_context(cadata=base64.b64decode(bundle).decode())
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=trusted, server_hostname=HOST)
    writer.close()
    await writer.wait_closed()


async def test_the_controller_makes_trusts_serves_and_renews_its_certificate(
    api: client.ApiClient, tmp_path: Path
) -> None:
    await setup(api)
    # made 70 % of a lifetime ago: valid now, and due for renewal now
    clock = Clock(datetime.datetime.now(datetime.UTC) - WANTED.validity * 0.7)
    await keeper(api, tmp_path, clock).sync()
    data, bundle = await stored(api)
    assert base64.b64decode(bundle) == data[CA_FILE]
    assert (tmp_path / "tls.crt").read_bytes() == data[CERT_FILE]
    async with WebhookServer(0, tmp_path, host="127.0.0.1", reload_interval=0.05) as server:
        await handshake(server.port, bundle)
        first = await served_certificate(server)

        clock.now = datetime.datetime.now(datetime.UTC)
        await keeper(api, tmp_path, clock).sync()
        renewed_data, same_bundle = await stored(api)
        assert same_bundle == bundle
        assert renewed_data[CERT_FILE] != data[CERT_FILE]

        async def new_one_served() -> bool:
            return await served_certificate(server) != first

        await eventually(new_one_served, "the renewed certificate served")
        await handshake(server.port, bundle)


async def test_replicas_renewing_at_once_end_with_one_certificate(
    api: client.ApiClient, tmp_path: Path
) -> None:
    await setup(api)
    clock = Clock()
    directories = [tmp_path / f"replica-{i}" for i in range(3)]
    await asyncio.gather(*(keeper(api, d, clock).sync() for d in directories))
    data, bundle = await stored(api)
    assert base64.b64decode(bundle) == data[CA_FILE]
    served: set[Any] = {(d / "tls.crt").read_bytes() for d in directories}
    assert served == {data[CERT_FILE]}


async def test_a_keeper_without_its_secret_waits_for_it_instead_of_failing(
    api: client.ApiClient, tmp_path: Path
) -> None:
    kept = CertificateKeeper(
        api, "default", SECRET, REGISTRATION, tmp_path, WANTED, retry=0.05, clock=Clock()
    )
    async with kept:  # no Secret, no registration yet: started all the same
        assert not kept.ready.is_set()
        await setup(api)
        await eventually(kept.ready.is_set, "the certificate made once the Secret exists")
        data, bundle = await stored(api)
        assert base64.b64decode(bundle) == data[CA_FILE]
        assert (tmp_path / "tls.crt").read_bytes() == data[CERT_FILE]


async def test_a_keeper_tries_again_soon_however_many_rounds_failed(
    apiserver: ApiServer, api: client.ApiClient, tmp_path: Path
) -> None:
    """Eight failed reads: with the waits doubling unbounded from 50 ms the ninth round would
    come 12.75 s after the first; bounded at 100 ms it comes within a second."""
    await setup(api)
    refusal = apiserver.faults.add(
        FaultRule(verb="get", resource="secrets", name=SECRET, status=500, count=8)
    )
    kept = CertificateKeeper(
        api,
        "default",
        SECRET,
        REGISTRATION,
        tmp_path,
        WANTED,
        retry=0.05,
        retry_limit=0.1,
        clock=Clock(),
    )
    async with kept:
        await eventually(kept.ready.is_set, "the certificate made after the refusals", 6)
    assert refusal.hits == 8
