"""Log a problem the first time it is seen, not on every Allocate or device list."""

from __future__ import annotations

import logging


class OnceLog:
    """Logs each distinct message once; problems in data repeat until someone fixes the data."""

    def __init__(self, logger: logging.Logger, level: int = logging.WARNING) -> None:
        self._logger = logger
        self._level = level
        self._seen: set[str] = set()

    def __call__(self, message: str) -> None:
        if message not in self._seen:
            self._seen.add(message)
            self._logger.log(self._level, "%s", message)
