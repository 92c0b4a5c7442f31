"""The kubelet DRA device health API (proto package `v1alpha1`; `dra-health` upstream)."""
