"""Akri discovery protocol v0: generated messages and stubs."""
