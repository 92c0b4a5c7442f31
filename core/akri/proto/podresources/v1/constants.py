"""Where the kubelet serves the PodResources API."""

from __future__ import annotations

from typing import Final

POD_RESOURCES_PATH: Final = "/var/lib/kubelet/pod-resources/"
"""Mount this directory, not the socket: the socket's inode changes on every kubelet restart."""
POD_RESOURCES_SOCKET: Final = POD_RESOURCES_PATH + "kubelet.sock"
