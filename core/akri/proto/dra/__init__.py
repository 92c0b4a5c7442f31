"""The kubelet DRA plugin API, served by DRA drivers on each node."""
