"""Structured logs for every akri-py process: one JSON object per line, or plain text.

Logs from a hundred nodes end up in one place; fields such as the node name are on every
line, so they can be told apart without relying on the collector's metadata.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Literal, TextIO

LogFormat = Literal["json", "text"]


class _Fields(logging.Filter):
    """Puts the process-wide fields (e.g. node) on every record."""

    def __init__(self, fields: dict[str, str]) -> None:
        super().__init__()
        self.fields = fields
        self.text = " ".join(fields.values())

    def filter(self, record: logging.LogRecord) -> bool:
        record.fields = self.fields
        record.context = f" [{self.text}]" if self.text else ""
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **getattr(record, "fields", {}),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s%(context)s: %(message)s"


def configure(level: str, style: LogFormat, stream: TextIO | None = None, **fields: str) -> None:
    """Route every logger to `stream` (stderr by default) in the chosen format."""
    handler = logging.StreamHandler(stream)
    handler.addFilter(_Fields(fields))
    handler.setFormatter(JsonFormatter() if style == "json" else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level, handlers=[handler], force=True)


class OnceLog:
    """Logs each distinct problem once: problems in data repeat (every Allocate, every pass of
    a loop) until someone fixes the data, and a log line a second buries everything else."""

    def __init__(self, logger: logging.Logger, level: int = logging.WARNING) -> None:
        self._logger = logger
        self._level = level
        self._seen: set[str] = set()

    def __call__(self, message: str, *, key: str | None = None, exc_info: bool = False) -> bool:
        """Log `message` unless `key` (default: the message) was logged already; True if so.

        `exc_info` adds the exception being handled, so the traceback is there once.
        """
        key = message if key is None else key
        if key in self._seen:
            return False
        self._seen.add(key)
        self._logger.log(self._level, "%s", message, exc_info=exc_info)
        return True
