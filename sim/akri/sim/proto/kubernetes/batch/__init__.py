"""Kubernetes batch protobuf messages (generated code beside the hand-written .proto)."""
