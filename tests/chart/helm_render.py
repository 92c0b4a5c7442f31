"""The chart rendered by the real Helm engine (helm-sdkpy): `helm install` into an API emulator.

helm-sdkpy offers no `helm template`, so a release is installed (without waiting) into an
emulator that serves every kind the chart creates, and Helm's own rendered manifest (and its
hooks') is read from the release. The engine reads HELM_DRIVER only from the environment its
process started with, so the installs run in a child process: `python -m
tests.chart.helm_render` reads a JSON list of
{"release", "values"} on stdin and prints {release: {"manifest"} or {"error"}} on stdout.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

CHART = Path(__file__).resolve().parents[2] / "helm" / "akri"

# Kinds the chart creates that the emulator may not serve (yet): stored as given, no behaviour.
_STORED_KINDS = (
    ("", "v1", "ServiceAccount", "serviceaccounts", True),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False),
    ("rbac.authorization.k8s.io", "v1", "Role", "roles", True),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True),
    ("apps", "v1", "DaemonSet", "daemonsets", True),
    ("apps", "v1", "Deployment", "deployments", True),
    ("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        False,
    ),
)


# Other projects' kinds the chart may create (Prometheus Operator, cert-manager).
_FOREIGN_KINDS = (
    ("monitoring.coreos.com", "ServiceMonitor"),
    ("monitoring.coreos.com", "PodMonitor"),
    ("cert-manager.io", "Issuer"),
    ("cert-manager.io", "Certificate"),
)


def _foreign_crd(group: str, kind: str) -> dict[str, Any]:
    """Another project's CRD, reduced to what lets the API server store the object."""
    plural = kind.lower() + "s"
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


async def _install_all(requests: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    import helm_sdkpy

    from akri.sim.apiserver import ApiServer
    from akri.sim.apiserver.resources import ResourceType

    results: dict[str, dict[str, str]] = {}
    async with ApiServer() as server, _hook_jobs_succeed(server):
        operations = server.operations
        for group, version, kind, plural, namespaced in _STORED_KINDS:
            if operations.registry.lookup(group, version, plural) is None:
                stored = ResourceType(group, version, kind, plural, kind.lower(), namespaced)
                operations.registry.add(stored)
                operations.store.add_kind(stored.key)
        await server.apply_definitions([_foreign_crd(*kind) for kind in _FOREIGN_KINDS])
        namespaces = operations.kind("", "v1", "namespaces")
        with tempfile.TemporaryDirectory() as directory:
            kubeconfig = str(server.write_kubeconfig(Path(directory) / "kubeconfig"))
            for request in requests:
                release = request["release"]
                operations.create(namespaces, None, {"metadata": {"name": release}})
                config = helm_sdkpy.Configuration(namespace=release, kubeconfig=kubeconfig)
                try:
                    installed = await helm_sdkpy.Install(config).run(
                        release, str(CHART), values=dict(request["values"]), wait=False, timeout=60
                    )
                except helm_sdkpy.HelmError as error:
                    results[release] = {"error": str(error)}
                else:
                    hooks = [h["manifest"] for h in installed.get("hooks") or []]
                    results[release] = {"manifest": "\n---\n".join([installed["manifest"], *hooks])}
    return results


@contextlib.asynccontextmanager
async def _hook_jobs_succeed(server: Any) -> AsyncIterator[None]:
    """Helm waits for each hook Job to complete; nothing runs pods here, so every Job is
    marked Complete as soon as it is stored (Helm's wait is what is served, not the Job)."""
    operations = server.operations
    jobs = operations.kind("batch", "v1", "jobs")
    complete = {"succeeded": 1, "conditions": [
        {"type": "Complete", "status": "True", "reason": "CompletionsReached"}]}  # fmt: skip

    async def mark() -> None:
        while True:
            for job in operations.store.objects(jobs.key):
                if not (job.get("status") or {}).get("conditions"):
                    meta = job["metadata"]
                    operations.update(
                        jobs, meta["namespace"], meta["name"], {**job, "status": complete},
                        "status", False,
                    )  # fmt: skip
            await asyncio.sleep(0.05)  # a controller's resync, not a test's synchronisation

    task = asyncio.create_task(mark())
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def _lint() -> dict[str, Any]:
    import helm_sdkpy

    linted: dict[str, Any] = await helm_sdkpy.Lint(helm_sdkpy.Configuration()).run(str(CHART))
    return linted


def _child(argument: str, stdin: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "tests.chart.helm_render", argument],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, "HELM_DRIVER": "memory"},
        cwd=CHART.parents[1],
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"helm {argument} failed:\n{done.stderr}")
    return json.loads(done.stdout)


def render(requests: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """Install each {"release", "values"} (unique release names, DNS labels) in a child process."""
    result: dict[str, dict[str, str]] = _child("install", json.dumps(list(requests)))
    return result


def lint() -> dict[str, Any]:
    """`helm lint` of the chart: {"Messages": [{"Severity", "Path", ...}], "Errors": ...}."""
    result: dict[str, Any] = _child("lint", "")
    return result


def main() -> None:
    if sys.argv[1] == "lint":
        json.dump(asyncio.run(_lint()), sys.stdout)
    else:
        json.dump(asyncio.run(_install_all(json.loads(sys.stdin.read()))), sys.stdout)


if __name__ == "__main__":
    main()
