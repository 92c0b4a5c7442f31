"""The simulator's own protos: Kubernetes built-in kinds as kubectl sends them to the API
emulator. Regenerate with `python -m akri.sim.proto.generate` (`make protos`)."""
