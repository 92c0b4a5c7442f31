"""The kubelet PodResources API."""
