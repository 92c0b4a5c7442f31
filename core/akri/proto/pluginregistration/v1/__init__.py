"""Version v1, the only one kubelets serve."""
