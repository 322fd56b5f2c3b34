"""One table from Needle's exceptions to what a caller sees: a message, a CLI exit code, an HTTP status.

The CLI exits with `exit_code` after printing the message on one line; the HTTP endpoints and MCP tools
answer `http_status` with the message. User mistakes are exit 2 / 4xx and name what to fix; trouble on
the server's side is exit 1 / 5xx; nothing shows a stack trace (5xx causes go to the log).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from needle.disk import DiskFullError, free_mb, is_disk_full


class LLMError(RuntimeError):
    """The configured LLM cannot answer: no server at its URL, or the server refuses the request."""


# The header an HTTP refusal carries its CLI exit code in, so that a command run through the index's owner
# exits as it would have locally.
EXIT_CODE_HEADER = "X-Needle-Exit-Code"


class RemoteFailure(RuntimeError):
    """What the process that owns the index answered a command with (`needle.remote`): shown as if local."""

    def __init__(self, message: str, exit_code: int, http_status: int) -> None:
        """
        :param message: The one-line message.
        :param exit_code: The CLI exit code the owner's table gave.
        :param http_status: The HTTP status the owner answered.
        """
        super().__init__(message)
        self.message, self.exit_code, self.http_status = message, exit_code, http_status


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


def _is_graph_error(error: BaseException) -> bool:
    """
    Whether `error` is Haystack's `PipelineRuntimeError`; asked without importing Haystack (which costs a
    second), since no such error exists in a process that has not imported it (a thin `needle` command).
    """
    errors = sys.modules.get("haystack.core.errors")
    return errors is not None and isinstance(error, errors.PipelineRuntimeError)


def root_cause(error: BaseException) -> BaseException:
    """The first error that is not a `PipelineRuntimeError` in a chain of them (graphs nested as stages)."""
    while _is_graph_error(error) and error.__cause__ is not None:
        error = error.__cause__
    return error


def _table() -> list[tuple[type[BaseException], int, int]]:
    """(exception class, exit code, HTTP status), most specific first."""
    from components._served import EmbeddingDimensionError
    from needle.collections import CollectionError
    from needle.contexts import ContextError
    from needle.contract import ContractError
    from needle.document_stores.protocol import IndexDamagedError
    from needle.index_info import IndexMismatchError
    from needle.loader import PipelineError
    from needle.models import MissingModelError
    from needle.settings import ConfigError

    table: list[tuple[type[BaseException], int, int]] = []
    try:
        from needle.files.reading import FileNotServed

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
    if _is_graph_error(error):
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
    if _is_lock_error(error):
        return Failure(str(error), 1, 503)
    return Failure(str(error) or type(error).__name__, 1, 500, "internal error; see the server log")


def _disk_full(error: BaseException) -> DiskFullError:
    """A write that failed for lack of space (ENOSPC, SQLite's "disk is full"), told like Needle's own refusal."""
    filename = getattr(error, "filename", None)
    folder = os.path.dirname(os.path.abspath(filename)) if isinstance(filename, str) and filename else os.getcwd()
    return DiskFullError(folder, free_mb(folder))


def is_lock_error(error: BaseException) -> bool:
    """Whether the embedded index was open in another process (its `StoreLockedError`, unwrapped from a graph's)."""
    return _is_lock_error(root_cause(error))


def _is_lock_error(error: BaseException) -> bool:
    return type(error).__name__ == "StoreLockedError"


def llm_error(settings: object, error: BaseException) -> LLMError:
    """
    Explain an OpenAI client error in terms of Needle's `llm` settings.

    :param settings: Needle's settings (the `llm` section names the server, the model and the key).
    :param error: What the OpenAI client raised.
    :returns: An `LLMError` naming the server, the model, the cause and what to configure.
    """
    import openai

    llm = settings.llm  # type: ignore[attr-defined]
    if isinstance(error, openai.APIConnectionError):
        what = f"no LLM answered at {llm.url}"
    elif isinstance(error, openai.APIStatusError):
        what = f"the LLM at {llm.url} refused the request"
    else:
        what = f"cannot use the LLM at {llm.url}"
    return LLMError(
        f"{what} (model {llm.model}): {str(error).strip().rstrip('.') or type(error).__name__}. Point the `llm` section of the "
        f"configuration at an OpenAI-compatible server (NEEDLE_LLM__URL, NEEDLE_LLM__MODEL); its API key is read "
        f"from ${llm.api_key_env} (any value for a local server)."
    )


__all__ = ["EXIT_CODE_HEADER", "Failure", "LLMError", "RemoteFailure", "classify", "is_lock_error", "llm_error", "root_cause"]
