"""akri-sim: a whole cluster in one process (API server, kubelets, scheduler, agents,
controller)."""
