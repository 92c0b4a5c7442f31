"""Discovery handlers, runnable embedded in the agent or as external gRPC handlers.

This `__init__` runs before any module of the package, so it installs `akri.kube.lean`: the
kubernetes-asyncio client then loads its API classes and models on first use, not at import.
"""

from akri.kube import lean

lean.install()
