"""akri-controller: broker Pods/Jobs and Services for Instances, node-loss cleanup, one leader.

Decisions (`builders`, `plan`, `retries`, `nodes`, `lease`, `conditions`) are pure and import
no I/O library; `controller` wires caches, the work queue and the reconciles (`brokers`,
`configurations`, `node_loss`) that apply them; `leader` and `main` make it a process.

This `__init__` runs before any module of the package, so it installs `akri.kube.lean`: the
kubernetes-asyncio client then loads its API classes and models on first use, not at import.
"""

from akri.kube import lean

lean.install()
