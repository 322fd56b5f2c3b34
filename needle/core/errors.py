"""The errors every layer shares: an LLM that cannot answer, a refusal relayed from the index's owner, and how to
find the cause of a graph's failure.

What a caller is told about any exception (a message, a CLI exit code, an HTTP status) is one table, kept
with the commands that report it (`needle.commands.failures`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from needle.core.settings import Settings


class LLMError(RuntimeError):
    """The configured LLM cannot answer: no server at its URL, or the server refuses the request."""


# The header an HTTP refusal carries its CLI exit code in, so that a command run through the index's owner
# exits as it would have locally.
EXIT_CODE_HEADER = "X-Needle-Exit-Code"


class RemoteFailure(RuntimeError):
    """What the process that owns the index answered a command with (`needle.owner.remote`): shown as if local."""

    def __init__(self, message: str, exit_code: int, http_status: int) -> None:
        """
        :param message: The one-line message.
        :param exit_code: The CLI exit code the owner's table gave.
        :param http_status: The HTTP status the owner answered.
        """
        super().__init__(message)
        self.message, self.exit_code, self.http_status = message, exit_code, http_status


def is_graph_error(error: BaseException) -> bool:
    """
    Whether `error` is Haystack's `PipelineRuntimeError`; asked without importing Haystack (which costs a
    second), since no such error exists in a process that has not imported it (a thin `needle` command).
    """
    errors = sys.modules.get("haystack.core.errors")
    return errors is not None and isinstance(error, errors.PipelineRuntimeError)


def root_cause(error: BaseException) -> BaseException:
    """The first error that is not a `PipelineRuntimeError` in a chain of them (graphs nested as stages)."""
    while is_graph_error(error) and error.__cause__ is not None:
        error = error.__cause__
    return error


def is_lock_error(error: BaseException) -> bool:
    """Whether the embedded index was open in another process (its `StoreLockedError`, unwrapped from a graph's)."""
    return _is_lock_error(root_cause(error))


def _is_lock_error(error: BaseException) -> bool:
    return type(error).__name__ == "StoreLockedError"


def llm_error(settings: Settings, error: BaseException) -> LLMError:
    """
    Explain an OpenAI client error in terms of Needle's `llm` settings.

    :param settings: Needle's settings (the `llm` section names the server, the model and the key).
    :param error: What the OpenAI client raised.
    :returns: An `LLMError` naming the server, the model, the cause and what to configure.
    """
    import openai

    llm = settings.llm
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


__all__ = [
    "EXIT_CODE_HEADER",
    "LLMError",
    "RemoteFailure",
    "is_graph_error",
    "is_lock_error",
    "llm_error",
    "root_cause",
]
