"""Kubernetes built-in kinds as protobuf, for the request bodies kubectl sends the API emulator."""
