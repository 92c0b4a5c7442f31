"""The Kubernetes version the simulator presents: its API server's and its kubelets'."""

from __future__ import annotations

from typing import Final

KUBERNETES_VERSION: Final = "v1.32.0-akri-sim"
