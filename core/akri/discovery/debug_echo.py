"""debugEcho as the agent embeds it (as Akri's agent does): the handler's name and what the
agent's own settings (ENABLE_DEBUG_ECHO, DEBUG_ECHO_*) hand it."""

from __future__ import annotations

from pathlib import Path

NAME = "debugEcho"
SHARED_ENV = "DEBUG_ECHO_INSTANCES_SHARED"
AVAILABILITY_FILE_ENV = "DEBUG_ECHO_AVAILABILITY_FILE"
DEFAULT_AVAILABILITY_FILE = Path("/tmp/debug-echo-availability.txt")
