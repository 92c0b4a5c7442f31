"""Request bodies in `application/vnd.kubernetes.protobuf`, decoded into the JSON objects stored.

kubectl's generators (`kubectl create namespace|secret|deployment|...`, `kubectl run`) send
built-in kinds as protobuf: the magic `k8s\\0`, then a `runtime.Unknown` whose `typeMeta` names
the kind and whose `raw` holds the object's own message. The messages are hand-written subsets
of Kubernetes' (akri/sim/proto/kubernetes), so a field they leave out is skipped, as protobuf
skips any unknown field. JSON follows Kubernetes' conventions: a plain field's zero value is omitted
(`omitempty`), an `optional` (pointer) field keeps it, bytes are base64, times RFC 3339.
"""

from __future__ import annotations

import base64
import datetime
from typing import Any

from google.protobuf import descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message

from akri.sim.apiserver import errors
from akri.sim.proto.kubernetes.apps import generated_pb2 as _apps  # noqa: F401  # registers kinds
from akri.sim.proto.kubernetes.authentication import generated_pb2 as _authentication  # noqa: F401
from akri.sim.proto.kubernetes.authorization import generated_pb2 as _authorization  # noqa: F401
from akri.sim.proto.kubernetes.batch import generated_pb2 as _batch  # noqa: F401
from akri.sim.proto.kubernetes.core import generated_pb2 as _core  # noqa: F401
from akri.sim.proto.kubernetes.meta.generated_pb2 import Unknown
from akri.sim.proto.kubernetes.policy import generated_pb2 as _policy  # noqa: F401
from akri.sim.proto.kubernetes.rbac import generated_pb2 as _rbac  # noqa: F401
from akri.sim.proto.kubernetes.scheduling import generated_pb2 as _scheduling  # noqa: F401

JSON = dict[str, Any]

PROTOBUF = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"
_META = "k8s.io.apimachinery"
# Embedded structs whose fields Kubernetes' JSON puts in the parent (`json:",inline"`).
_INLINE = frozenset({"volumeSource", "localObjectReference"})


def decode(body: bytes) -> JSON:
    """The JSON object a protobuf request body carries; 400 when it is not one, 415 unknown kind."""
    if not body.startswith(MAGIC):
        raise errors.bad_request("the protobuf request body does not start with the k8s magic")
    try:
        envelope = Unknown.FromString(body[len(MAGIC) :])
    except DecodeError as error:
        raise errors.bad_request(f"the protobuf request body is not valid: {error}") from error
    api_version, kind = envelope.typeMeta.apiVersion, envelope.typeMeta.kind
    try:
        descriptor = descriptor_pool.Default().FindMessageTypeByName(
            _message_name(api_version, kind)
        )
    except KeyError:
        raise errors.unsupported_media_type(PROTOBUF, ["application/json"]) from None
    try:
        message = message_factory.GetMessageClass(descriptor).FromString(envelope.raw)
    except DecodeError as error:
        raise errors.bad_request(f"the protobuf {kind} is not valid: {error}") from error
    return {"apiVersion": api_version, "kind": kind, **_object(message)}


def _message_name(api_version: str, kind: str) -> str:
    """`apps/v1` Deployment -> `k8s.io.api.apps.v1.Deployment`, `v1` Pod -> `...core.v1.Pod`."""
    group, _, version = api_version.rpartition("/")
    return f"k8s.io.api.{group.split('.')[0] or 'core'}.{version}.{kind}"


def _object(message: Message) -> JSON:
    obj: JSON = {}
    for field, value in message.ListFields():
        converted = _value(field, value)
        if converted is None:
            continue
        if field.name in _INLINE and isinstance(converted, dict):
            obj.update(converted)
        else:
            obj[field.name] = converted
    return obj


def _value(field: FieldDescriptor, value: Any) -> Any:
    entry = field.message_type
    if entry is not None and entry.GetOptions().map_entry:
        value_field = entry.fields_by_name["value"]
        return {key: _single(value_field, item) for key, item in value.items()}
    if field.is_repeated:
        return [_single(field, item) for item in value]
    return _single(field, value)


def _single(field: FieldDescriptor, value: Any) -> Any:
    if field.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode()
    if field.message_type is None:
        return value
    return _special(field.message_type, value)


def _special(descriptor: Descriptor, value: Any) -> Any:
    name = descriptor.full_name
    if name == f"{_META}.Time":
        if not value.seconds and not value.nanos:
            return None
        moment = datetime.datetime.fromtimestamp(value.seconds, datetime.UTC)
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    if name == f"{_META}.IntOrString":
        return value.strVal if value.type == 1 else value.intVal
    if name == f"{_META}.Quantity":
        return value.string
    return _object(value)
