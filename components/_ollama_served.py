"""The Ollama half of Needle's served embedders: one `/api/embed` request, retried, its failures in one line.

Ollama's client does not retry, so a request that got 429 or 5xx, timed out or found no server is tried
again here (`max_retries` times, exponential backoff with jitter, through tenacity); a request that still
fails becomes an `EmbeddingServerError` naming the server and the model. A model that is not pulled is
said so with the command that pulls it; a 413 becomes `BatchTooLarge` (fewer texts per request).
"""

from __future__ import annotations

from typing import Any

import httpx
import ollama
from tenacity import (
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from haystack_integrations.components.needle._served import (
    BatchTooLarge,
    EmbeddingServerError,
    ServedEmbedding,
    one_line,
)

# Backoff between attempts: 0.5 s, 1 s, 2 s... (with jitter), at most this many seconds.
_MAX_WAIT = 8.0


def _transient(error: BaseException) -> bool:
    """Whether a failed request is worth trying again: no server, too slow, overloaded or failing."""
    if isinstance(error, ollama.ResponseError):
        return error.status_code == 429 or error.status_code >= 500
    return isinstance(error, (ConnectionError, httpx.TransportError))


class OllamaServed(ServedEmbedding):
    """Mixin for ollama-haystack's embedders (they hold `_client`, `url`, `model`, `timeout`, `keep_alive`...)."""

    _client: Any
    url: str
    timeout: Any  # int in ollama-haystack, float here
    keep_alive: Any
    dimensions: int | None
    generation_kwargs: dict[str, Any]
    max_retries: int

    def _server(self) -> str:
        return self.url

    def _request(self, batch: list[str]) -> list[list[float]]:
        """
        Embed one batch with `/api/embed`, retrying transient failures.

        :raises BatchTooLarge: On HTTP 413.
        :raises EmbeddingServerError: When the server does not answer or refuses (after the retries).
        """
        if getattr(self, "_client", None) is None:  # ollama-haystack 7 makes it in warm_up, 6.x in __init__
            self.warm_up()
        retrying = Retrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=wait_exponential_jitter(initial=0.5, max=_MAX_WAIT),
            retry=retry_if_exception(_transient),
            reraise=True,
        )
        try:
            result = retrying(
                self._client.embed,
                model=self.model,
                input=batch,
                options=self.generation_kwargs or None,
                keep_alive=self.keep_alive,
                dimensions=self.dimensions,
            )
        except ollama.ResponseError as error:
            if error.status_code == 413:
                raise BatchTooLarge() from None
            raise self._failure(error) from None
        except (ConnectionError, httpx.TransportError) as error:
            raise self._failure(error) from None
        return [list(vector) for vector in result["embeddings"]]

    def _failure(self, error: BaseException) -> EmbeddingServerError:
        server, model = self.url, self.model
        if isinstance(error, httpx.TimeoutException):
            return EmbeddingServerError(
                f"Ollama at {server} did not answer within {self.timeout} s (model {model}); raise embedding.timeout or check the server"
            )
        if not isinstance(error, ollama.ResponseError):
            return EmbeddingServerError(
                f"no Ollama answers at {server} (model {model}); start it (`ollama serve`) or fix embedding.url"
            )
        detail = one_line(error.error)
        if error.status_code == 404:
            return EmbeddingServerError(
                f"Ollama at {server} does not have the model {model}: pull it with `ollama pull {model}` ({detail})",
                transient=False,
            )
        transient = _transient(error)
        return EmbeddingServerError(
            f"Ollama at {server} refused the request (HTTP {error.status_code}, model {model}): {detail}", transient
        )
