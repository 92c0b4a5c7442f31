"""Protobuf request bodies decode into the JSON a real server would store."""

from __future__ import annotations

import pytest

from akri.sim.apiserver import errors, protobuf
from akri.sim.proto.kubernetes.core import generated_pb2 as core
from akri.sim.proto.kubernetes.meta import generated_pb2 as meta


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    unknown = meta.Unknown(typeMeta=meta.TypeMeta(apiVersion=api_version, kind=kind), raw=raw)
    return protobuf.MAGIC + unknown.SerializeToString()


def test_inline_structs_zero_values_and_times() -> None:
    pod = core.Pod(
        metadata=meta.ObjectMeta(name="p", creationTimestamp=meta.Time()),
        spec=core.PodSpec(
            terminationGracePeriodSeconds=0,
            hostNetwork=False,
            volumes=[
                core.Volume(
                    name="cfg",
                    volumeSource=core.VolumeSource(
                        configMap=core.ConfigMapVolumeSource(
                            localObjectReference=core.LocalObjectReference(name="settings")
                        )
                    ),
                ),
                core.Volume(
                    name="scratch",
                    volumeSource=core.VolumeSource(emptyDir=core.EmptyDirVolumeSource()),
                ),
            ],
            containers=[
                core.Container(
                    name="c",
                    env=[
                        core.EnvVar(
                            name="NODE",
                            valueFrom=core.EnvVarSource(
                                fieldRef=core.ObjectFieldSelector(fieldPath="spec.nodeName")
                            ),
                        )
                    ],
                    resources=core.ResourceRequirements(limits={"cpu": meta.Quantity(string="1")}),
                )
            ],
        ),
    )
    decoded = protobuf.decode(envelope("v1", "Pod", pod.SerializeToString()))
    assert decoded == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "volumes": [
                {"name": "cfg", "configMap": {"name": "settings"}},
                {"name": "scratch", "emptyDir": {}},
            ],
            "containers": [
                {
                    "name": "c",
                    "env": [
                        {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
                    ],
                    "resources": {"limits": {"cpu": "1"}},
                }
            ],
        },
    }


def test_a_set_time_is_rfc3339() -> None:
    namespace = core.Namespace(
        metadata=meta.ObjectMeta(name="n", deletionTimestamp=meta.Time(seconds=1700000000))
    )
    decoded = protobuf.decode(envelope("v1", "Namespace", namespace.SerializeToString()))
    assert decoded["metadata"]["deletionTimestamp"] == "2023-11-14T22:13:20Z"


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{}", 400),
        (protobuf.MAGIC + b"\xff\xff", 400),
        (envelope("v1", "Pod", b"\xff\xff"), 400),
        (envelope("example.com/v1", "Gadget", b""), 415),
    ],
)
def test_bad_bodies_are_refused_with_a_status(body: bytes, code: int) -> None:
    with pytest.raises(errors.ApiError) as refused:
        protobuf.decode(body)
    assert refused.value.code == code
