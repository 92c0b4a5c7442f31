"""The akri.sh/v0 custom resources: pydantic models that are the single source of truth.

Python code uses snake_case attributes; `from_wire`/`to_wire` convert from and to the camelCase
JSON of the API server, and `crd_files` renders the CustomResourceDefinitions from the same models.
"""

from akri.api.configuration import (
    NODE_PROBLEMS,
    PROPERTY_NAME_PATTERN,
    BrokerSpec,
    ConditionType,
    Configuration,
    ConfigurationSpec,
    ConfigurationStatus,
    DiscoveryHandlerInfo,
    DiscoveryProperty,
    KeySelector,
    PropertySource,
)
from akri.api.crd import crd_definitions, crd_files, definition
from akri.api.instance import (
    INSTANCE_NODE_PROBLEMS,
    Instance,
    InstanceConditionType,
    InstanceSpec,
    InstanceStatus,
    new_instance,
)
from akri.api.reports import NodeProblem, NodeReport
from akri.api.wire import (
    Condition,
    ConditionStatus,
    ObjectMeta,
    OwnerReference,
    Resource,
    set_condition,
)

__all__ = [
    "INSTANCE_NODE_PROBLEMS",
    "NODE_PROBLEMS",
    "PROPERTY_NAME_PATTERN",
    "BrokerSpec",
    "Condition",
    "ConditionStatus",
    "ConditionType",
    "Configuration",
    "ConfigurationSpec",
    "ConfigurationStatus",
    "DiscoveryHandlerInfo",
    "DiscoveryProperty",
    "Instance",
    "InstanceConditionType",
    "InstanceSpec",
    "InstanceStatus",
    "KeySelector",
    "NodeProblem",
    "NodeReport",
    "ObjectMeta",
    "OwnerReference",
    "PropertySource",
    "Resource",
    "crd_definitions",
    "crd_files",
    "definition",
    "new_instance",
    "set_condition",
]
