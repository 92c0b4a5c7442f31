"""The cluster the attacks meet: the chart's admission objects as Helm renders them, the
controller's webhook, and the identities an attacker holds (a namespace user's token, an
agent's token bound to one node)."""

from __future__ import annotations

import base64
import contextlib
import copy
import functools
import re
import shutil
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

from akri.api import crd_definitions
from akri.controller.admission import Policy
from akri.controller.webhook import PATH, WebhookServer, subject_access_check
from akri.sim.apiserver.tls import Pki
from tests.chart.helm_render import CHART, render
from tests.conformance.support import Cluster, status_body
from tests.support import eventually

RELEASE = "akri"  # the release and its namespace, as the chart's policies name them
AGENT = "akri-agent"
ADMISSION_KINDS = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
GROUP, VERSION = "akri.sh", "v0"


@functools.cache
def chart_objects() -> tuple[dict[str, Any], ...]:
    """Every object of the chart with its default values, rendered by Helm."""
    manifest = render([{"release": RELEASE, "values": {}}])[RELEASE]
    assert "manifest" in manifest, manifest
    return tuple(d for d in yaml.safe_load_all(manifest["manifest"]) if d)


def chart_object(kind: str, name: str) -> dict[str, Any]:
    return copy.deepcopy(
        next(o for o in chart_objects() if o["kind"] == kind and o["metadata"]["name"] == name)
    )


def chart_policy() -> Policy:
    """The webhook's policy as the chart configures the controller."""
    values = yaml.safe_load((CHART / "values.yaml").read_text())["admission"]
    return Policy(
        frozenset(values["udev"]["subsystems"]), frozenset(values["hostAccessNamespaces"])
    )


def configuration(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Configuration",
        "metadata": {"name": name},
        "spec": {
            "discoveryHandler": {"name": "debugEcho", "discoveryDetails": "descriptions: [a]"},
            **spec,
        },
    }


def broker(**pod: Any) -> dict[str, Any]:
    """A brokerSpec whose pod spec adds `pod` to one plain container."""
    container = {"name": "broker", "image": "nginx", **pod.pop("container", {})}
    return {"brokerPodSpec": {"containers": [container], **pod}}


async def refusal(call: Callable[[], Awaitable[Any]]) -> tuple[int, str]:
    """The status and message of a refused call; (200, "") when it went through."""
    try:
        await call()
    except ApiException as error:
        return error.status, str(status_body(error).get("message", ""))
    return 200, ""


async def absent(read: Callable[[], Awaitable[Any]]) -> bool:
    try:
        await read()
    except ApiException as error:
        if error.status == 404:
            return True
        raise
    return False


async def token_client(cluster: Cluster, token: str) -> client.ApiClient:
    """A client of `cluster` that authenticates with `token` alone."""
    admin = client.Configuration()
    await config.load_kube_config(str(cluster.kubeconfig), client_configuration=admin)
    configured = copy.copy(admin)
    configured.cert_file = configured.key_file = None
    configured.api_key = {"BearerToken": f"Bearer {token}"}
    configured.refresh_api_key_hook = None
    return client.ApiClient(configured)


@dataclass
class Secured:
    """A cluster under the chart's admission rules, and a namespace to attack from."""

    cluster: Cluster
    api: client.ApiClient
    namespace: str

    @property
    def custom(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self.api)

    async def client_for(self, token: str) -> client.ApiClient:
        return await token_client(self.cluster, token)

    async def account_token(
        self, namespace: str, name: str, bound: client.V1BoundObjectReference | None = None
    ) -> str:
        """A token of ServiceAccount `name` (created when missing), bound to `bound`."""
        core = client.CoreV1Api(self.api)
        with contextlib.suppress(ApiException):  # exists already
            await core.create_namespaced_service_account(
                namespace, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name=name))
            )
        request = client.AuthenticationV1TokenRequest(
            spec=client.V1TokenRequestSpec(
                audiences=[], expiration_seconds=3600, bound_object_ref=bound
            )
        )
        issued = await core.create_namespaced_service_account_token(name, namespace, request)
        return str(issued.status.token)

    async def grant(self, namespace: str, account: str, rules: list[dict[str, Any]]) -> None:
        """A Role with `rules` for the account in `namespace`, and its RoleBinding."""
        rbac = client.RbacAuthorizationV1Api(self.api)
        name = f"{account}-{uuid.uuid4().hex[:6]}"
        role: Any = {"metadata": {"name": name}, "rules": rules}
        await rbac.create_namespaced_role(namespace, role)
        role_binding: Any = {
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        }
        await rbac.create_namespaced_role_binding(namespace, role_binding)

    async def agent_token(self, node: str) -> str:
        """The chart's agent account's token, bound to Node `node` (as a pod's projected token
        names its node, Kubernetes >= 1.32)."""
        found = await client.CoreV1Api(self.api).read_node(node)
        bound = client.V1BoundObjectReference(
            kind="Node", api_version="v1", name=node, uid=found.metadata.uid
        )
        return await self.account_token(RELEASE, AGENT, bound)


def _calls(api: client.ApiClient, kind: str) -> tuple[Any, str]:
    """The typed API of a cluster-scoped kind and its methods' suffix (create_<suffix>, ...)."""
    suffix = re.sub(r"(?<!^)(?=[A-Z])", "_", kind).lower()
    if kind.startswith("Cluster"):
        return client.RbacAuthorizationV1Api(api), suffix
    return client.AdmissionregistrationV1Api(api), suffix


async def _apply(api: client.ApiClient, obj: dict[str, Any]) -> None:
    """Create `obj`, or replace it when it exists (a real cluster keeps cluster-scoped ones)."""
    typed, suffix = _calls(api, obj["kind"])
    try:
        await getattr(typed, f"create_{suffix}")(obj)
    except ApiException as error:
        if error.status != 409:
            raise
        name = obj["metadata"]["name"]
        current = await getattr(typed, f"read_{suffix}")(name)
        meta = {**obj["metadata"], "resourceVersion": current.metadata.resource_version}
        await getattr(typed, f"replace_{suffix}")(name, {**obj, "metadata": meta})


async def _delete(api: client.ApiClient, obj: dict[str, Any]) -> None:
    typed, suffix = _calls(api, obj["kind"])
    with contextlib.suppress(ApiException):
        await getattr(typed, f"delete_{suffix}")(obj["metadata"]["name"])


async def _crds(api: client.ApiClient) -> None:
    extensions = client.ApiextensionsV1Api(api)
    definitions: list[Any] = crd_definitions()
    for definition in definitions:
        with contextlib.suppress(ApiException):  # a real cluster may have them already
            await extensions.create_custom_resource_definition(definition)

    async def established() -> bool:
        for definition in definitions:
            crd = await extensions.read_custom_resource_definition(definition["metadata"]["name"])
            conditions = (crd.status and crd.status.conditions) or []
            if not any(c.type == "Established" and c.status == "True" for c in conditions):
                return False
        return True

    await eventually(established, "the akri CRDs to be established")


@contextlib.asynccontextmanager
async def _webhook(api: client.ApiClient, directory: Path) -> AsyncIterator[dict[str, Any]]:
    """The controller's webhook served here, registered as the chart registers it (its URL
    and CA instead of the Service's)."""
    pki = Pki(directory / "pki")
    pki.create()
    certs = directory / "webhook"
    certs.mkdir()
    shutil.copy(pki.cert_file, certs / "tls.crt")
    shutil.copy(pki.key_file, certs / "tls.key")
    server = WebhookServer(
        0, certs, host="127.0.0.1", policy=chart_policy(), check=subject_access_check(api)
    )
    await server.start()
    registration = chart_object("ValidatingWebhookConfiguration", f"{RELEASE}-configurations")
    for hook in registration["webhooks"]:
        hook["clientConfig"] = {
            "url": f"https://127.0.0.1:{server.port}{PATH}",
            "caBundle": base64.b64encode(pki.ca_file.read_bytes()).decode(),
        }
    try:
        yield registration
    finally:
        await server.stop()


@contextlib.asynccontextmanager
async def secured_cluster(
    cluster: Cluster, api: client.ApiClient, directory: Path
) -> AsyncIterator[Secured]:
    """CRDs, the chart's policies, agent ClusterRole (bound to its account) and webhook in
    force until the block ends (removed after it: a real cluster outlives the test)."""
    await _crds(api)
    core = client.CoreV1Api(api)
    namespace = f"attack-{uuid.uuid4().hex[:8]}"
    for name in (RELEASE, namespace):
        with contextlib.suppress(ApiException):
            await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    objects = [o for o in chart_objects() if o["kind"] in ADMISSION_KINDS]
    objects.append(chart_object("ClusterRole", AGENT))
    objects.append(chart_object("ClusterRoleBinding", AGENT))
    async with _webhook(api, directory) as registration:
        objects.append(registration)
        for obj in objects:
            await _apply(api, obj)
        found = Secured(cluster, api, namespace)
        try:
            await _in_force(found)
            yield found
        finally:
            for obj in objects:
                await _delete(api, obj)
            await core.delete_namespace(namespace)


async def _in_force(secured: Secured) -> None:
    """Wait until the API server enforces what was just created (a real one loads each policy
    and webhook asynchronously): a privileged broker, a bad udev rule and an Instance written
    by an agent whose token names no node are refused."""
    privileged = configuration("probe", brokerSpec=broker(container={
        "securityContext": {"privileged": True}}))  # fmt: skip
    disk = configuration("probe")
    disk["spec"]["discoveryHandler"] = {
        "name": "udev",
        "discoveryDetails": 'udevRules: [KERNEL=="sda"]',
    }
    instance = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Instance",
        "metadata": {"name": "probe"},
        "spec": {"configurationName": "probe", "nodes": [], "deviceUsage": {}},
    }
    admin = secured.custom

    async def dry_run_create(api: client.CustomObjectsApi, plural: str, body: Any) -> Any:
        return await api.create_namespaced_custom_object(
            GROUP, VERSION, secured.namespace, plural, body, dry_run="All"
        )

    async with await secured.client_for(await secured.account_token(RELEASE, AGENT)) as unbound:
        agent = client.CustomObjectsApi(unbound)
        probes = [
            (admin, "configurations", privileged),
            (admin, "configurations", disk),
            (agent, "instances", instance),
        ]

        async def refused() -> bool:
            for api, plural, body in probes:
                status, _ = await refusal(functools.partial(dry_run_create, api, plural, body))
                if status == 200:
                    return False
            return True

        await eventually(refused, "the chart's admission rules to be in force")
