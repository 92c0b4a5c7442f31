"""The Configuration admission webhook: AdmissionReview v1 answers for every bundled handler,
agreement with the handlers themselves, and the HTTPS server with certificate rotation."""

from __future__ import annotations

import asyncio
import json
import ssl
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from akri.controller.admission import BadReview, review
from akri.controller.webhook import PATH, WebhookServer
from akri.discovery.entry_points import handler_factory, handler_names
from akri.discovery.model import InvalidDetails
from tests.support import eventually

EXAMPLES = sorted((Path(__file__).parents[2] / "crds" / "examples").glob("*.yaml"))

# (handler, discoveryDetails, a part of the refusal or None when accepted)
DETAILS: list[tuple[str, str, str | None]] = [
    ("debugEcho", "descriptions: [foo0, foo1]", None),
    ("debugEcho", "descriptions: foo0", "descriptions: Input should be a valid list"),
    ("debugEcho", "colour: red", "colour: Extra inputs are not permitted"),
    ("debugEcho", "[a, b]", "debugEcho discoveryDetails must be a mapping"),
    ("debugEcho", "descriptions: [a", "debugEcho discoveryDetails are not valid YAML"),
    ("udev", "udevRules: ['KERNEL==\"video[0-9]*\"']", None),
    ("udev", "udevRules: []", "udevRules: List should have at least 1 item"),
    ("udev", "udevRules: ['KERNEL=\"video0\"']", "invalid udev discoveryDetails: udevRules.0"),
    (
        "udev",
        "udevRules: ['KERNEL==\"a\"']\npermissions: rx",
        "permissions must combine r, w and m",
    ),
    ("onvif", "scopes: {action: Include, items: [onvif://www.onvif.org/name/Lobby]}", None),
    ("onvif", "", None),
    ("onvif", "discoveryTimeoutSeconds: 0", "discoveryTimeoutSeconds: Input should be greater"),
    ("onvif", "interfaceAddress: eth0", "interfaceAddress"),
    ("onvif", "scopes: {action: Maybe, items: []}", "scopes.action"),
    ("mdns", "serviceTypes: [_http._tcp.local.]", None),
    ("mdns", "serviceTypes: [http]", "a service type looks like _http._tcp.local."),
    ("mdns", "names: {action: Include, items: ['(']}", "serviceTypes: Field required"),
    ("opcua", "opcuaDiscoveryMethod: {standard: {discoveryUrls: [opc.tcp://plc:4840/]}}", None),
    ("opcua", "", None),
    ("opcua", "discoveryIntervalSeconds: 0.1", "discoveryIntervalSeconds: Input should be greater"),
    ("opcua", "opcuaDiscoveryMethod: {standard: {discoveryUrls: [plc]}}", "discoveryUrls.0"),
    ("opcua", "applicationNames: {action: Include, items: [a}", "line 1, column 46"),
    ("coap", "anything: [at all", None),  # not bundled: only that handler knows its details
]
IDS = [
    f"{handler}-{'ok' if refusal is None else 'refused'}-{i}"
    for i, (handler, _, refusal) in enumerate(DETAILS)
]


def configuration(handler: str, details: str) -> dict[str, Any]:
    return {
        "apiVersion": "akri.sh/v0",
        "kind": "Configuration",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {"discoveryHandler": {"name": handler, "discoveryDetails": details}},
    }


def admission_review(obj: dict[str, Any], uid: str = "0c3a0e4e-1") -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "akri.sh", "version": "v0", "kind": "Configuration"},
            "resource": {"group": "akri.sh", "version": "v0", "resource": "configurations"},
            "operation": "CREATE",
            "namespace": "default",
            "object": obj,
        },
    }


@pytest.mark.parametrize(("handler", "details", "refusal"), DETAILS, ids=IDS)
def test_reviews_accept_and_refuse_as_the_handler_parses(
    handler: str, details: str, refusal: str | None
) -> None:
    answer = review(admission_review(configuration(handler, details), uid="u-1"))
    assert answer["apiVersion"] == "admission.k8s.io/v1"
    assert answer["kind"] == "AdmissionReview"
    response = answer["response"]
    assert response["uid"] == "u-1"
    assert response["allowed"] is (refusal is None)
    if refusal is not None:
        assert response["status"]["code"] == 403
        assert response["status"]["message"].startswith("spec.discoveryHandler.discoveryDetails: ")
        assert refusal in response["status"]["message"]


@pytest.mark.parametrize(
    ("handler", "details", "refusal"),
    [d for d in DETAILS if d[0] in handler_names() and d[2]],
    ids=[i for i, d in zip(IDS, DETAILS, strict=True) if d[0] in handler_names() and d[2]],
)
async def test_the_handler_refuses_what_the_webhook_refuses_with_the_same_words(
    handler: str, details: str, refusal: str
) -> None:
    """The agent's handler (as `akri-discovery-handler` runs it) stops at the same details."""
    discovery = handler_factory(handler)(None, {}).discover(details, {})
    with pytest.raises(InvalidDetails) as refused:
        await anext(discovery)
    await discovery.aclose()
    answer = review(admission_review(configuration(handler, details)))
    assert answer["response"]["status"]["message"].endswith(str(refused.value))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_shipped_example_is_admitted(path: Path) -> None:
    answer = review(admission_review(yaml.safe_load(path.read_text())))
    assert answer["response"] == {"uid": "0c3a0e4e-1", "allowed": True}


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"apiVersion": "admission.k8s.io/v1beta1", "request": {"uid": "u"}},
        {"apiVersion": "admission.k8s.io/v1", "request": {}},
        [],
    ],
)
def test_what_is_not_a_v1_review_is_refused(body: Any) -> None:
    with pytest.raises(BadReview):
        review(body)


def make_certificate(directory: Path, name: str) -> None:
    """A self-signed certificate for 127.0.0.1 (CN `name`), as tls.crt and tls.key."""
    directory.mkdir(exist_ok=True)
    for file in ("tls.crt", "tls.key"):  # replaced, not rewritten: a new inode, as a Secret's
        (directory / file).unlink(missing_ok=True)
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "1", "-subj", f"/CN={name}", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(directory / "tls.key"), "-out", str(directory / "tls.crt")],
        check=True,
        capture_output=True,
    )  # fmt: skip


@pytest.fixture
async def webhook(tmp_path: Path) -> AsyncIterator[tuple[WebhookServer, Path]]:
    certs = tmp_path / "certs"
    make_certificate(certs, "first")
    server = WebhookServer(0, certs, host="127.0.0.1", reload_interval=0.05)
    async with server:
        yield server, certs


def trusting(certs: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(certs / "tls.crt"))


async def post(server: WebhookServer, certs: Path, body: bytes) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"https://127.0.0.1:{server.port}{PATH}",
            data=body,
            headers={"Content-Type": "application/json"},
            ssl=trusting(certs),
        ) as answer,
    ):
        return answer.status, await answer.text()


async def test_the_server_answers_reviews_over_tls(webhook: tuple[WebhookServer, Path]) -> None:
    server, certs = webhook
    refused = admission_review(configuration("mdns", "serviceTypes: [http]"))
    status, text = await post(server, certs, json.dumps(refused).encode())
    assert status == 200
    assert json.loads(text)["response"]["allowed"] is False
    accepted = admission_review(configuration("debugEcho", "descriptions: [a]"))
    status, text = await post(server, certs, json.dumps(accepted).encode())
    assert json.loads(text)["response"]["allowed"] is True
    status, text = await post(server, certs, b"{not json")
    assert status == 400
    assert "not an AdmissionReview" in text


async def served_certificate(server: WebhookServer) -> bytes:
    """The certificate (DER) a new TLS connection is given."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    _, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=context)
    try:
        der: bytes = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.close()
        await writer.wait_closed()
    return der


def on_disk(certs: Path) -> bytes:
    return ssl.PEM_cert_to_DER_cert((certs / "tls.crt").read_text())


async def test_a_rotated_certificate_is_served_without_a_restart(
    webhook: tuple[WebhookServer, Path],
) -> None:
    server, certs = webhook
    first = on_disk(certs)
    assert await served_certificate(server) == first
    make_certificate(certs, "second")
    second = on_disk(certs)
    assert second != first

    async def rotated() -> bool | None:
        return await served_certificate(server) == second or None

    await eventually(rotated, "the new certificate served")
    status, _ = await post(
        server, certs, json.dumps(admission_review(configuration("udev", ""))).encode()
    )
    assert status == 200
