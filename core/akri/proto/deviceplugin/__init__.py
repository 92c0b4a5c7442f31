"""The kubelet device plugin API (only v1beta1 is served by kubelets)."""
