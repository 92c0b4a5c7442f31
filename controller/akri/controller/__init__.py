"""akri-controller: broker Pods/Jobs and Services for Instances, node-loss cleanup, one leader.

Decisions (`builders`, `plan`, `retries`, `nodes`, `lease`, `conditions`) are pure and import
no I/O library; `controller` wires caches, the work queue and the reconciles (`brokers`,
`configurations`, `node_loss`) that apply them; `leader` and `main` make it a process.
"""
