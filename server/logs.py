"""Structured logs: one ``key=value`` line per event through ``twisted.logger``.

Modules log with format strings that are already ``event key={key} ...``; this observer adds
the time, level and namespace in front, e.g.::

    2024-05-01T12:00:00.123Z level=info ns=mineduel.rooms match_started room=ABC234 ...
"""

from __future__ import annotations

import sys
import time
from typing import IO

from twisted.logger import (
    FileLogObserver,
    FilteringLogObserver,
    ILogObserver,
    LogEvent,
    LogLevel,
    LogLevelFilterPredicate,
    formatEvent,
    globalLogBeginner,
)


def format_kv(event: LogEvent) -> str | None:
    text = formatEvent(event).replace("\n", "\\n")
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(event.get("log_time", time.time())))
    millis = int((event.get("log_time", 0.0) % 1) * 1000)
    level = event.get("log_level", LogLevel.info).name
    namespace = event.get("log_namespace", "-")
    line = f"{stamp}.{millis:03d}Z level={level} ns={namespace} {text}"
    failure = event.get("log_failure")
    if failure is not None:
        line += " traceback=" + failure.getTraceback().replace("\n", "\\n")
    return line + "\n"


def kv_observer(stream: IO[str] | None = None, level: str = "info") -> ILogObserver:
    """An observer writing :func:`format_kv` lines at ``level`` and above to ``stream``."""
    observer = FileLogObserver(stream or sys.stdout, format_kv)
    predicate = LogLevelFilterPredicate(defaultLogLevel=LogLevel.levelWithName(level))
    return FilteringLogObserver(observer, [predicate])


def begin(stream: IO[str] | None = None, level: str = "info") -> None:
    """Send all Twisted logging to :func:`kv_observer` (the command-line server does this)."""
    globalLogBeginner.beginLoggingTo([kv_observer(stream, level)], redirectStandardIO=False)
