"""The kubelet plugin watcher's registration API (CSI, device and DRA plugins)."""
