"""Device plugins: expose Instances to the kubelet and keep their slots honest.

Rules: docs/design.md §5, §6.

The agent constructs one `Allocations`, a `PluginManager` and a `Reclaimer` sharing it, and runs
both `run()` methods in its task group; the manager follows the Configurations' `Changes`.
"""

from akri.agent.plugins.allocations import Allocations
from akri.agent.plugins.desired import ConfigurationLookup
from akri.agent.plugins.manager import PluginManager
from akri.agent.plugins.reclaim import Reclaimer

__all__ = ["Allocations", "ConfigurationLookup", "PluginManager", "Reclaimer"]
