"""Kubernetes scheduling protobuf messages (generated code beside the hand-written .proto)."""
