"""The agent's kubelet DRA plugin (docs/design.md §8a): registered through the kubelet's plugin
watcher, it prepares allocated akri.sh devices for containers as CDI devices, keeps what it
prepared in a checkpoint, and streams device health.
"""
