"""The e2e suite: the installed `akri-agent` and `akri-controller` programs against the real
Kubernetes rig of ../shared/k8s (a real control plane and two hollow nodes with the kubelet's
real device manager and DRA manager).

Each test gets a fresh namespace, which the programs it starts follow alone, and leaves nothing
behind: its pods, Configurations (and so Instances, DeviceClasses and ResourceSlices) are
deleted while the programs still run, then the programs are stopped. Without a configured rig
the suite is left out, in one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

from akri import naming
from akri.api import crd_definitions
from akri.dra.devices import device_class_name
from akri.dra.mode import Mode
from tests.e2e import programs, rig
from tests.e2e.kube import DRA_GROUP, DRA_VERSION, Kube
from tests.support import eventually

PROBLEM = rig.problem()
HERE = Path(__file__).parent
CLEANUP_DEADLINE_S = 90.0
CRD_DEADLINE_S = 60.0
MERGE_PATCH: dict[str, Any] = {"_content_type": "application/merge-patch+json"}
TOKEN_HOLDER = {"akri-e2e/holds": "token"}
"""The labels of a pod a program's token is bound to: deleting the pod revokes the token."""
_not_run: list[pytest.Item] = []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without a rig the suite is left out as a whole, said in one line at the end; run by
    `make e2e` (AKRI_E2E_REQUIRED set) a missing rig is an error instead."""
    if PROBLEM is None:
        return
    if os.environ.get("AKRI_E2E_REQUIRED"):
        raise pytest.UsageError(f"tests/e2e: {PROBLEM}")
    _not_run.extend(i for i in items if i.path.is_relative_to(HERE))
    items[:] = [i for i in items if not i.path.is_relative_to(HERE)]
    config.hook.pytest_deselected(items=_not_run)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _not_run:
        terminalreporter.write_line(f"tests/e2e: {len(_not_run)} tests not run: {PROBLEM}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Only e2e tests selected and none run for want of a rig: that is the skip, not the
    failure pytest's "no tests collected" (exit 5) would report."""
    if _not_run and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.OK


@pytest.fixture(scope="session")
def configured_rig() -> rig.Rig:
    return rig.from_environment()


@pytest.fixture(scope="session", autouse=True)
def crds(configured_rig: rig.Rig) -> Iterator[None]:
    """Akri's CRDs on the rig for the session (kept when they were there before)."""
    added = asyncio.run(_install_crds(configured_rig.kubeconfig))
    yield
    asyncio.run(_remove_crds(configured_rig.kubeconfig, added))


async def _install_crds(kubeconfig: Path) -> list[str]:
    added = []
    async with await _client(kubeconfig) as api_client:
        extensions = client.ApiextensionsV1Api(api_client)
        definition: Any  # a dict: the client sends it as is
        for definition in crd_definitions():
            try:
                await extensions.create_custom_resource_definition(definition)
            except ApiException as error:
                if error.status != 409:
                    raise
            else:
                added.append(definition["metadata"]["name"])
        await eventually(lambda: _established(extensions, added), "Akri's CRDs", CRD_DEADLINE_S)
    return added


async def _established(extensions: client.ApiextensionsV1Api, names: list[str]) -> bool:
    for name in names:
        crd = await extensions.read_custom_resource_definition(name)
        conditions = crd.status.conditions or []
        if not any(c.type == "Established" and c.status == "True" for c in conditions):
            return False
    return True


async def _remove_crds(kubeconfig: Path, added: list[str]) -> None:
    async with await _client(kubeconfig) as api_client:
        extensions = client.ApiextensionsV1Api(api_client)
        for name in added:
            with contextlib.suppress(ApiException):
                await extensions.delete_custom_resource_definition(name)


async def _client(kubeconfig: Path) -> client.ApiClient:
    return await config.new_client_from_config(config_file=str(kubeconfig), persist_config=False)


@dataclass
class Akri:
    """One test's namespace on the rig and the programs it runs there."""

    rig: rig.Rig
    kube: Kube
    workdir: Path
    agents: dict[str, programs.Program] = field(default_factory=dict)
    controller: programs.Program | None = None
    configurations: set[str] = field(default_factory=set)

    @property
    def namespace(self) -> str:
        return self.kube.namespace

    async def start(self, *, mode: Mode = Mode.DEVICE_PLUGIN, shared: bool = True) -> None:
        """An agent on every node (embedded debugEcho, `shared` devices) and the controller."""
        for name, node in self.rig.nodes.items():
            self.agents[name] = programs.agent(
                node, self.rig.kubeconfig, self.namespace, self.workdir, mode=mode, shared=shared
            )
        self.controller = programs.controller(
            self.rig.kubeconfig, self.namespace, self.workdir, mode=mode
        )
        for program in self.programs():
            await program.start()

    def programs(self) -> list[programs.Program]:
        return [*self.agents.values(), *([self.controller] if self.controller else [])]

    async def apply(self, body: dict[str, object]) -> str:
        name = str(body["metadata"]["name"])  # type: ignore[index]
        self.configurations.add(name)
        await self.kube.apply_configuration(body)
        return name

    async def stop(self) -> None:
        """Clean up, then stop every program (again and again, when called again)."""
        try:
            await self.clean_up()
        finally:
            for program in self.programs():
                await program.stop()

    async def clean_up(self) -> None:
        """Configurations first (no broker is made again), then the pods, round after round
        until no pod, Instance, DeviceClass or ResourceSlice of the test is left, while the
        programs still run; what they fail to remove in time is removed by force."""
        for name in self.configurations:
            await self.kube.delete_configuration(name)
        try:
            await eventually(self._emptied, "the test's objects to go", CLEANUP_DEADLINE_S)
        finally:
            await self._force_remove()

    async def _emptied(self) -> bool:
        pods = [n for n, p in (await self.kube.pods()).items() if _ours(p)]
        for name in pods:
            await self.kube.delete_pod(name)
        instances = await self.kube.instances()
        return not pods and not instances and not await self._dra_leftovers()

    async def _dra_leftovers(self) -> list[tuple[str, str]]:
        custom = self.kube.custom
        classes = await custom.list_cluster_custom_object(DRA_GROUP, DRA_VERSION, "deviceclasses")
        ours = {device_class_name(c) for c in self.configurations}
        leftovers = [("deviceclasses", c["metadata"]["name"]) for c in classes["items"]]
        leftovers = [(kind, name) for kind, name in leftovers if name in ours]
        for configuration in self.configurations:
            slices = await self.kube.slices(configuration)
            leftovers += [("resourceslices", s["metadata"]["name"]) for s in slices]
        return leftovers

    async def _force_remove(self) -> None:
        custom = self.kube.custom
        for instance in await self.kube.instances():
            name = instance["metadata"]["name"]
            with contextlib.suppress(ApiException):
                await custom.patch_namespaced_custom_object(
                    naming.GROUP, naming.VERSION, self.namespace, "instances", name,
                    {"metadata": {"finalizers": None}}, **MERGE_PATCH,
                )  # fmt: skip
                await custom.delete_namespaced_custom_object(
                    naming.GROUP, naming.VERSION, self.namespace, "instances", name
                )
        for plural, name in await self._dra_leftovers():
            with contextlib.suppress(ApiException):
                await custom.delete_cluster_custom_object(DRA_GROUP, DRA_VERSION, plural, name)


def _ours(pod: client.V1Pod) -> bool:
    """A pod the test or the controller made (a broker), not one of a chart's workloads (their
    controllers would only make it again) nor a token holder (the programs still need their
    tokens to clean up): those go with the namespace."""
    owners = pod.metadata.owner_references or []
    holds_a_token = (pod.metadata.labels or {}).items() >= TOKEN_HOLDER.items()
    return not holds_a_token and all(o.api_version.startswith(f"{naming.GROUP}/") for o in owners)


@pytest.fixture
async def akri(configured_rig: rig.Rig) -> AsyncIterator[Akri]:
    """A fresh namespace and a workdir; everything removed and every program stopped after."""
    workdir = Path(tempfile.mkdtemp(prefix="akri-e2e-", dir="/tmp"))
    namespace = f"e2e-{uuid.uuid4().hex[:6]}"
    async with await _client(configured_rig.kubeconfig) as api_client:
        core = client.CoreV1Api(api_client)
        await core.create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace))
        )
        running = Akri(configured_rig, Kube(api_client, namespace), workdir)
        try:
            yield running
        finally:
            try:
                await running.stop()
            finally:
                await core.delete_namespace(namespace)
                shutil.rmtree(workdir, ignore_errors=True)
