"""Version v1alpha1, the one Kubernetes 1.36 kubelets ask for."""
