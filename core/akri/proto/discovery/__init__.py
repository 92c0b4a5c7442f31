"""Akri's discovery-handler protocol."""
