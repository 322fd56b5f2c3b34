"""Needle's log lines written terminal-safe: a warning names the user's files, whose names may hold escape sequences.

The CLI turns it on for what runs in its own process (`needle.shells.cli`); a command sent to an owner prints the
owner's output, already escaped there, and imports no `logging` at all.
"""

from __future__ import annotations

import logging

from needle.commands.render import terminal_safe


class TerminalSafeLogs(logging.Filter):
    """A log filter that writes each record's message `terminal_safe` (warnings name the user's files)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Escape the message; every record passes."""
        record.msg, record.args = terminal_safe(record.getMessage()), None
        return True


def escape_logs(handler: logging.Handler | None = None) -> None:
    """
    Make a log handler print messages `terminal_safe`, once.

    :param handler: The handler; Python's last-resort one (stderr, what the CLI's warnings go through) when None.
    """
    target = handler or logging.lastResort
    if target is not None and not any(isinstance(f, TerminalSafeLogs) for f in target.filters):
        target.addFilter(TerminalSafeLogs())


__all__ = ["TerminalSafeLogs", "escape_logs"]
