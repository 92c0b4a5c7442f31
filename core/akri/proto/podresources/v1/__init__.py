"""PodResources API v1: generated messages and stubs."""
