"""Building blocks shared by the custom resources: camelCase wire models, metadata, conditions.

Every model here is both what Python code handles (snake_case attributes) and what the API
server stores (camelCase keys), so one definition drives parsing, writing and the CRD schema.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from akri.naming import API_VERSION

ConditionStatus = Literal["True", "False", "Unknown"]


class WireModel(BaseModel):
    """A typed part of a resource, validated as the API server would: unknown keys are errors (a
    typo never goes unnoticed) and values are not coerced (`capacity: "2"` is refused)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        use_attribute_docstrings=True,
        extra="forbid",
        strict=True,
    )


def cel_rule(rule: str, message: str) -> dict[str, Any]:
    """A field's `json_schema_extra`: a CEL rule the API server checks, with the user's message.

    The model enforces the same rule in Python with the same message (a validator next to it),
    so a Configuration is refused alike by `kubectl apply` and by the agent.
    """
    return {"x-kubernetes-validations": [{"rule": rule, "message": message}]}


def _one_of_rule(schema: dict[str, Any], model: type[ExactlyOne]) -> None:
    """Carry the exactly-one rule into the schema as CEL, so the API server enforces it too."""
    first, second = model.one_of_aliases()
    schema["x-kubernetes-validations"] = [
        {"rule": f"has(self.{first}) != has(self.{second})", "message": model.one_of_message()}
    ]


class ExactlyOne(WireModel):
    """A choice between two optional fields; exactly one of `one_of` must be given."""

    model_config = ConfigDict(json_schema_extra=_one_of_rule)
    one_of: ClassVar[tuple[str, str]]

    @classmethod
    def one_of_aliases(cls) -> tuple[str, str]:
        first, second = (cls.model_fields[name].alias or name for name in cls.one_of)
        return first, second

    @classmethod
    def one_of_message(cls) -> str:
        first, second = cls.one_of_aliases()
        return f"exactly one of {first} or {second} must be set"

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        if sum(getattr(self, name) is not None for name in self.one_of) != 1:
            raise ValueError(self.one_of_message())
        return self


class _OpenModel(WireModel):
    """Kubernetes-owned objects: fields we do not model are kept, so an update never drops them."""

    model_config = ConfigDict(extra="allow", strict=False)


class OwnerReference(_OpenModel):
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(_OpenModel):
    """The metadata fields Akri uses; the rest (managedFields, ...) round-trips untouched."""

    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    owner_references: list[OwnerReference] = Field(default_factory=list)
    deletion_timestamp: datetime | None = None
    finalizers: list[str] = Field(default_factory=list)


class Resource(WireModel):
    """A custom resource as the API server returns and accepts it."""

    plural: ClassVar[str]
    """The resource name in API paths, e.g. /apis/akri.sh/v0/namespaces/NS/<plural>."""
    object_rules: ClassVar[tuple[tuple[str, str], ...]] = ()
    """CEL rules (rule, message) on the whole object, such as on its name, refused at admission."""

    api_version: str = API_VERSION
    kind: str
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    @field_validator("api_version")
    @classmethod
    def _served_version(cls, api_version: str) -> str:
        if api_version != API_VERSION:
            raise ValueError(f"apiVersion must be {API_VERSION}")
        return api_version

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Self:
        """Parse an API response; raises pydantic.ValidationError naming every bad field."""
        return cls.model_validate(data)

    def to_wire(self) -> dict[str, Any]:
        """The JSON body the API server expects (camelCase, unset optional fields left out)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def owner_reference(self) -> OwnerReference:
        """A controller reference to this object, so garbage collection deletes what it owns."""
        if not (self.metadata.name and self.metadata.uid):
            raise ValueError(f"a {self.kind} needs a name and a uid to own other objects")
        return OwnerReference(
            api_version=self.api_version,
            kind=self.kind,
            name=self.metadata.name,
            uid=self.metadata.uid,
            controller=True,
            block_owner_deletion=True,
        )


class Condition(WireModel):
    """One observation about an object, in the standard Kubernetes condition shape."""

    type: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9]*$", max_length=316)
    """CamelCase kind of observation, e.g. Ready or HandlerUnavailable."""
    status: ConditionStatus
    """Whether the observation holds: True, False or Unknown."""
    reason: str = Field(pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$", max_length=1024)
    """CamelCase cause, stable enough for tools to match on."""
    message: str = Field(default="", max_length=32768)
    """Human-readable detail: what is wrong and how to fix it."""
    last_transition_time: datetime = Field(strict=False)  # an RFC 3339 string on the wire
    """When status last changed (not when the condition was last written)."""
    observed_generation: int | None = Field(default=None, ge=0)
    """metadata.generation of the object the observation was made on."""


def set_condition(conditions: Sequence[Condition], new: Condition) -> list[Condition]:
    """`conditions` with `new` in place of its type; the transition time moves only when the status
    does, so `kubectl describe` shows how long a problem has lasted, not when it was last seen."""
    old = next((c for c in conditions if c.type == new.type), None)
    if old is not None and old.status == new.status:
        new = new.model_copy(update={"last_transition_time": old.last_transition_time})
    if old is None:
        return [*conditions, new]
    return [new if c is old else c for c in conditions]
