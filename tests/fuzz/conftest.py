"""The fuzz tests drive the agent's plugin layer on simulated nodes, as tests/agent does."""

from tests.agent.conftest import cluster, start_node

__all__ = ["cluster", "start_node"]
