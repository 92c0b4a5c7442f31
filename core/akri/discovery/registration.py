"""Where a handler finds the agent: `<dir>/agent-registration.sock`, served by the agent
(`akri.agent.discovery.registration`) and dialled by every external handler (`server`)."""

from __future__ import annotations

from pathlib import Path

DEFAULT_DIRECTORY = Path("/var/lib/akri")
REGISTRATION_SOCKET = "agent-registration.sock"


def registration_socket(directory: Path) -> Path:
    return directory / REGISTRATION_SOCKET
