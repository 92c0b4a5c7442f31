"""akri-sim: a whole cluster in one process (API server, kubelets, scheduler, agents, controller).

This `__init__` runs before any module of the package, so it installs `akri.kube.lean`: the
kubernetes-asyncio client then loads its API classes and models on first use, not at import.
"""

from akri.kube import lean

lean.install()
