"""What a container of the project's image runs as on a simulated node (pure).

The image is not pulled or unpacked: the programs it holds are the console scripts installed
beside the simulator (`akri-agent`, `akri-controller`, `akri-discovery-handler`, `akri`), so
a container of that image runs as a local process with the command line, environment and
mounts a container runtime would give it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

Object = Mapping[str, Any]

SIM_IMAGE_ENV: Final = "AKRI_SIM_IMAGE"
DEFAULT_SIM_IMAGE: Final = "ghcr.io/akri-py/akri-py"
"""Containers of this repository (any tag, unless the setting names one) run as processes."""
IMAGE_COMMAND: Final = ("akri", "--help")
"""The image's default command (the Dockerfile's CMD) when a container gives none."""
SERVICE_ACCOUNT_DIR: Final = "/var/run/secrets/kubernetes.io/serviceaccount"
_VARIABLE = re.compile(r"\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)|\$\$")


def _split(image: str) -> tuple[str, str]:
    """(repository, tag or digest); `docker.io/library/` is implied as a runtime would."""
    name, at, digest = image.partition("@")
    slash = name.rfind("/")
    repository, _, tag = name.rpartition(":") if name.rfind(":") > slash else (name, "", "")
    return repository, (digest if at else tag)


def runs_as_process(image: str, sim_image: str) -> bool:
    repository, tag = _split(image)
    wanted_repository, wanted_tag = _split(sim_image)
    return repository == wanted_repository and (not wanted_tag or tag == wanted_tag)


def expand(text: str, env: Mapping[str, str]) -> str:
    """`$(VAR)` references to defined variables, `$$` as `$`; others stay as written."""

    def substitute(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return env.get(match.group(1), match.group(0))

    return _VARIABLE.sub(substitute, text)


def command_line(container: Object, env: Mapping[str, str]) -> list[str]:
    """`command` (or the image's) then `args`, with `$(VAR)` expanded."""
    command = list(container.get("command") or IMAGE_COMMAND)
    return [expand(str(part), env) for part in [*command, *(container.get("args") or [])]]


def field_value(pod: Object, path: str) -> str:
    """A `fieldRef` of the downward API."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    mapped = re.fullmatch(r"metadata\.(labels|annotations)\['(.+)'\]", path)
    if mapped:
        return str((meta.get(mapped.group(1)) or {}).get(mapped.group(2), ""))
    values = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName", "default"),
        "status.podIP": status.get("podIP"),
        "status.hostIP": status.get("hostIP"),
    }
    if path not in values:
        raise ValueError(f"unsupported fieldRef {path!r}")
    return str(values[path] or "")


Lookup = Callable[[str, str, str], str | None]
"""(kind `Secret`|`ConfigMap`, name, key) -> the value, None when absent."""


def environment(
    pod: Object, container: Object, base: Mapping[str, str], lookup: Lookup
) -> dict[str, str]:
    """The image's and the cluster's variables, then the container's `env` in order."""
    env = dict(base)
    for variable in container.get("env") or []:
        name, source = variable["name"], variable.get("valueFrom")
        if source is None:
            env[name] = expand(str(variable.get("value", "")), env)
        elif "fieldRef" in source:
            env[name] = field_value(pod, source["fieldRef"]["fieldPath"])
        else:
            kind, ref = (
                ("Secret", source["secretKeyRef"])
                if "secretKeyRef" in source
                else ("ConfigMap", source.get("configMapKeyRef") or {})
            )
            value = lookup(kind, ref.get("name", ""), ref.get("key", ""))
            if value is None and not ref.get("optional"):
                raise ValueError(f'{kind.lower()} "{ref.get("name")}" has no key {ref.get("key")}')
            if value is not None:
                env[name] = value
    return env


@dataclass(frozen=True)
class Mount:
    source: Path
    target: str
    read_only: bool = False


HostPath = Callable[[str], Path]
"""A path on the node's (simulated) host filesystem -> where it is on this machine."""


def mounts(
    pod: Object, container: Object, host_path: HostPath, pod_dir: Path, token_dir: Path
) -> list[Mount]:
    """The container's volumeMounts, and the service-account volume unless opted out."""
    spec = pod.get("spec") or {}
    volumes = {v["name"]: v for v in spec.get("volumes") or []}
    found = []
    for mount in container.get("volumeMounts") or []:
        volume = volumes.get(mount["name"])
        if volume is None:
            raise ValueError(f'volume "{mount["name"]}" not found')
        if "hostPath" in volume:
            source = host_path(volume["hostPath"]["path"])
        else:
            source = pod_dir / "volumes" / mount["name"]
        if mount.get("subPath"):
            source = source / mount["subPath"]
        found.append(Mount(source, mount["mountPath"], bool(mount.get("readOnly"))))
    automount = spec.get("automountServiceAccountToken", True)
    if automount and all(m.target != SERVICE_ACCOUNT_DIR for m in found):
        found.append(Mount(token_dir, SERVICE_ACCOUNT_DIR, read_only=True))
    return found
