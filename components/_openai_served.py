"""The OpenAI-compatible half of Needle's served embedders: one `/v1/embeddings` request, its failures in one line.

The OpenAI client retries 429, 5xx, timeouts and refused connections itself (`max_retries`, with exponential
backoff and the server's `Retry-After`), so a request that still fails here has failed for good: it becomes
an `EmbeddingServerError` naming the server and the model, with the API key taken out of whatever the server
said. A 413 becomes `BatchTooLarge` (fewer texts per request). A server that needs no key (llama.cpp, vLLM,
LM Studio, TEI) gets a placeholder when the key's variable is unset.
"""

from __future__ import annotations

from typing import Any

import openai
from haystack.utils import Secret

from haystack_integrations.components.needle._served import (
    BatchTooLarge,
    EmbeddingServerError,
    ServedEmbedding,
    one_line,
    redact,
)

# Sent when the key's environment variable is unset: local servers accept any key, and the client needs one.
NO_KEY = "unset"
# The key by default: OpenAI's variable, not required (a local server needs none).
DEFAULT_KEY = Secret.from_env_var("OPENAI_API_KEY", strict=False)


def usable_key(api_key: Secret) -> Secret:
    """The key, or a placeholder when its variable is unset (Haystack 2.x makes the OpenAI client in `__init__`)."""
    try:
        return api_key if api_key.resolve_value() else Secret.from_token(NO_KEY)
    except ValueError:  # a strict variable that is unset
        return Secret.from_token(NO_KEY)


class OpenAIServed(ServedEmbedding):
    """Mixin for Haystack's OpenAI embedders (they hold `client`, `api_key`, `api_base_url`, `model`...)."""

    client: Any
    api_key: Any
    api_base_url: str | None
    timeout: float | None
    max_retries: int | None

    def _client_kwargs(self) -> dict[str, Any]:
        """The parent's client arguments, with a placeholder key when none is set."""
        kwargs = super()._client_kwargs()  # type: ignore[misc]  # a mixin: the OpenAI embedder after it
        kwargs["api_key"] = kwargs.get("api_key") or NO_KEY
        return kwargs

    def _server(self) -> str:
        return self.api_base_url or "https://api.openai.com/v1"

    def _secret(self) -> str | None:
        try:
            return self.api_key.resolve_value()
        except ValueError:  # an unset strict variable: nothing to hide
            return None

    def _request(self, batch: list[str]) -> list[list[float]]:
        """
        Embed one batch with `/v1/embeddings`.

        :raises BatchTooLarge: On HTTP 413.
        :raises EmbeddingServerError: When the server does not answer or refuses (after the client's retries).
        """
        if self.client is None:
            self.warm_up()
        try:
            response = self.client.embeddings.create(model=self.model, input=batch, encoding_format="float")
        except openai.APIStatusError as error:
            if error.status_code == 413:
                raise BatchTooLarge() from None
            raise self._failure(error) from None
        except openai.APIError as error:  # connection refused, timeout (after the retries)
            raise self._failure(error) from None
        data = sorted(response.data, key=lambda item: item.index)
        return [list(item.embedding) for item in data]

    def _failure(self, error: openai.APIError) -> EmbeddingServerError:
        server, model = self._server(), self.model
        detail = redact(one_line(getattr(error, "message", "") or str(error) or type(error).__name__), self._secret())
        status = getattr(error, "status_code", None)
        if isinstance(error, openai.APITimeoutError):
            return EmbeddingServerError(
                f"the embedding server at {server} did not answer within {self.timeout} s (model {model}); "
                "raise embedding.timeout or check the server"
            )
        if isinstance(error, openai.APIConnectionError):
            return EmbeddingServerError(
                f"no embedding server answers at {server} (model {model}): {detail}; start it or fix embedding.url"
            )
        if status in (401, 403):
            env = "/".join(getattr(self.api_key, "_env_vars", ()) or ("the key",))
            return EmbeddingServerError(
                f"the embedding server at {server} refused the API key (HTTP {status}, model {model}): {detail}; "
                f"set {env} (embedding.api_key_env names the variable)",
                transient=False,
            )
        if status == 404:
            return EmbeddingServerError(
                f"the embedding server at {server} has no model {model} (HTTP 404): {detail}; load or name a model it serves",
                transient=False,
            )
        transient = status is None or status == 429 or status >= 500
        return EmbeddingServerError(
            f"the embedding server at {server} refused the request (HTTP {status}, model {model}): {detail}", transient
        )
