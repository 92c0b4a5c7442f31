"""Version v1 (Kubernetes >= 1.34)."""
