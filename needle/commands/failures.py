"""One table from Needle's exceptions to what a caller sees: a message, a CLI exit code, an HTTP status.

The CLI exits with `exit_code` after printing the message on one line; the HTTP endpoints and MCP tools
answer `http_status` with the message. User mistakes are exit 2 / 4xx and name what to fix; trouble on
the server's side is exit 1 / 5xx; nothing shows a stack trace (5xx causes go to the log). The exceptions
are imported when a failure is classified, not before: a thin `needle` command pays for them only when it fails.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from needle.core.disk import DiskFullError, free_mb, is_disk_full
from needle.core.errors import LLMError, RemoteFailure, is_graph_error, is_lock_error, root_cause


@dataclass(frozen=True)
class Failure:
    """What a caller is told about an exception."""

    message: str
    exit_code: int
    http_status: int
    # What a network caller is told: the message, except for unexpected server-side errors.
    http_message: str = ""

    def __post_init__(self) -> None:
        if not self.http_message:
            object.__setattr__(self, "http_message", self.message)

    @property
    def is_user_error(self) -> bool:
        """The caller can fix it (exit 2, HTTP 4xx)."""
        return self.http_status < 500


def _table() -> list[tuple[type[BaseException], int, int]]:
    """(exception class, exit code, HTTP status), most specific first."""
    from haystack_integrations.components.needle._served import EmbeddingDimensionError
    from haystack_integrations.document_stores.needle.protocol import IndexDamagedError
    from needle.core.collections import CollectionError
    from needle.core.contexts import ContextError
    from needle.core.model_files import MissingModelError
    from needle.core.settings import ConfigError
    from needle.lifecycle.provenance import IndexMismatchError
    from needle.runtime.contract import ContractError
    from needle.runtime.loader import PipelineError

    table: list[tuple[type[BaseException], int, int]] = []
    try:
        from needle.core.files.reading import FileNotServed

        table.append((FileNotServed, 2, 404))
    except ImportError:  # pragma: no cover - files module not present
        pass
    table += [
        (DiskFullError, 1, 507),
        (CollectionError, 2, 400),
        (ContextError, 2, 400),
        (ConfigError, 2, 500),
        (PipelineError, 2, 500),
        (ContractError, 2, 500),
        (ValueError, 2, 400),
        (TypeError, 2, 400),
        (IndexMismatchError, 1, 409),
        (EmbeddingDimensionError, 1, 409),
        (IndexDamagedError, 1, 503),
        (MissingModelError, 1, 503),
        (LLMError, 1, 502),
        (TimeoutError, 1, 504),
        (ConnectionError, 1, 503),
    ]
    return table


def classify(error: BaseException) -> Failure:
    """
    Map an exception (a graph's runtime error unwrapped to its cause) to a `Failure`.

    :param error: What a command or an endpoint raised.
    :returns: The message, exit code and HTTP status; unknown errors are exit 1 / 500 with a generic message.
    """
    error = root_cause(error)
    if is_graph_error(error):
        return Failure("the graph failed", 1, 500, "the graph failed; see the server log")
    if isinstance(error, KeyboardInterrupt):
        return Failure("interrupted", 130, 499)
    if isinstance(error, RemoteFailure):
        return Failure(error.message, error.exit_code, error.http_status)
    if is_disk_full(error) and not isinstance(error, DiskFullError):
        error = _disk_full(error)
    for cls, exit_code, status in _table():
        if isinstance(error, cls):
            message = str(error) or type(error).__name__
            shown = f"server misconfigured: {message}" if status == 500 else message
            return Failure(message, exit_code, status, shown)
    if is_lock_error(error):
        return Failure(str(error), 1, 503)
    return Failure(str(error) or type(error).__name__, 1, 500, "internal error; see the server log")


def _disk_full(error: BaseException) -> DiskFullError:
    """A write that failed for lack of space (ENOSPC, SQLite's "disk is full"), told like Needle's own refusal."""
    filename = getattr(error, "filename", None)
    folder = os.path.dirname(os.path.abspath(filename)) if isinstance(filename, str) and filename else os.getcwd()
    return DiskFullError(folder, free_mb(folder))


__all__ = ["Failure", "classify"]
