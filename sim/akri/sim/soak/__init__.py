"""The chaos soak: `python -m akri.sim.soak` (`make soak`)."""
