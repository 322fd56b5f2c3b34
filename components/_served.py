"""What Needle's served dense embedders share: batching within the server's limits, dimension checks, one-line errors.

A served embedder (`OpenAIDense*Embedder`, `OllamaDense*Embedder`) sends texts to a model server over HTTP.
Each one supplies `_request(batch) -> vectors`, raising `BatchTooLarge` when the server refuses the size of
a request (HTTP 413) and `EmbeddingServerError` for anything else it cannot get past (after the retries the
provider's client does); `ServedEmbedding` does the rest the same way for every provider:

- requests of at most `batch_size` texts, halved (for the rest of the process) when the server answers 413;
- every answer's vectors counted (one per text) and measured: the first answer fixes the dimension when
  the index has none yet (`embedding_dim: null`), and a vector of another size is an `EmbeddingDimensionError`
  naming both sizes;
- the API key never appears in an error (`redact`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np


class EmbeddingServerError(ConnectionError):
    """The embedding server cannot embed: it does not answer, refuses the request, or lacks the model."""

    def __init__(self, message: str, transient: bool = True) -> None:
        """
        :param message: One line naming the server, the model and what to do.
        :param transient: Whether it may pass by itself (down, slow, overloaded), not a configuration mistake.
        """
        super().__init__(message)
        self.transient = transient


class EmbeddingDimensionError(RuntimeError):
    """The server's vectors do not have the size of the index's (another model, or another model's settings)."""


class BatchTooLarge(Exception):
    """The server refused a request for its size (HTTP 413): send fewer texts at once."""


def check_limits(batch_size: int, timeout: float, max_retries: int, embedding_dim: int | None) -> None:
    """
    The settings every served embedder shares, checked once for all four.

    :raises ValueError: Naming the first setting out of range.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0, got {timeout}")
    if max_retries < 0:
        raise ValueError(f"max_retries must be >= 0, got {max_retries}")
    if embedding_dim is not None and embedding_dim < 1:
        raise ValueError(f"embedding_dim must be >= 1, got {embedding_dim}")


def redact(text: str, secret: str | None) -> str:
    """`text` with every occurrence of the secret (and of its first 8+ characters) replaced by `***`."""
    if not secret:
        return text
    for part in (secret, secret[: max(8, len(secret) // 2)]):
        text = text.replace(part, "***")
    return text


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def one_line(text: str, limit: int = 300) -> str:
    """
    The first `limit` characters of a server's message, on one line, its control characters escaped (`\x1b`):
    a server's text cannot rewrite the terminal the error is printed on.
    """
    flat = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", " ".join(str(text).split()))
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class ServedEmbedding:
    """
    The provider-independent half of a served embedder (a mixin beside Haystack's embedder class).

    The class using it sets `model`, `batch_size` and `embedding_dim`, and implements `_request` and
    `_server` (the server's URL, for messages).
    """

    model: str
    batch_size: int
    embedding_dim: int | None
    _batch_limit: int | None = None  # the most texts the server took at once, once it answered 413
    _first_dim: int | None = None  # the first answer's size, when `embedding_dim` is None

    if TYPE_CHECKING:

        def warm_up(self) -> None:
            """Provided by the Haystack embedder beside the mixin: it makes the client."""
            raise NotImplementedError

    def _request(self, batch: list[str]) -> list[list[float]]:  # pragma: no cover - provided by the provider class
        raise NotImplementedError

    def _server(self) -> str:  # pragma: no cover - provided by the provider class
        raise NotImplementedError

    def embed_texts(self, texts: Sequence[str]) -> list[list[float]]:
        """
        Embed texts as given (no prefix added), in requests of at most `batch_size` texts.

        :param texts: The texts.
        :returns: One vector per text, in order.
        :raises EmbeddingServerError: When the server cannot embed them (down, refusing, model missing, or a
            single text too large for it).
        :raises EmbeddingDimensionError: When a vector's size is not the index's.
        """
        vectors: list[list[float]] = []
        start = 0
        while start < len(texts):
            limit = min(self.batch_size, getattr(self, "_batch_limit", None) or self.batch_size)
            batch = list(texts[start : start + limit])
            try:
                answer = self._answer(batch)
            except BatchTooLarge:
                if len(batch) == 1:
                    raise EmbeddingServerError(
                        f"the embedding server at {self._server()} refuses a text of {len(batch[0])} characters as too "
                        f"large (model {self.model}); lower the chunker's max_chars or raise the server's limit",
                        transient=False,
                    ) from None
                self._batch_limit = max(1, len(batch) // 2)  # for the rest of this process
                continue
            if len(answer) != len(batch):
                raise EmbeddingServerError(
                    f"the embedding server at {self._server()} answered {len(answer)} vectors for {len(batch)} texts "
                    f"(model {self.model})",
                    transient=False,
                )
            for vector in answer:
                self._check_dimension(len(vector))
            vectors.extend(answer)
            start += len(batch)
        return vectors

    def _answer(self, batch: list[str]) -> list[list[float]]:
        """
        `_request`, an answer that is not an embedding response (an HTML error page, JSON of another shape)
        refused naming the server instead of the parser's `Expecting value: line 1 column 1 (char 0)`.
        """
        try:
            answer = self._request(batch)
            return [list(vector) for vector in answer]
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            raise EmbeddingServerError(
                f"the embedding server at {self._server()} answered something that is not an embedding response "
                f"(model {self.model}): {one_line(str(error) or type(error).__name__, 120)}; check embedding.url "
                "points at the server's API",
                transient=False,
            ) from None

    def embed(self, texts: Sequence[str], progress_bar: bool = False) -> list[list[float]]:
        """`embed_texts` under the name fastembed's backend uses, for components that embed with either."""
        return self.embed_texts(texts)

    def embed_query(self, text: str) -> np.ndarray:
        """One text's vector as a float32 array (see `embed_texts` for errors)."""
        return np.asarray(self.embed_texts([text])[0], dtype=np.float32)

    def _check_dimension(self, size: int) -> None:
        expected = self.embedding_dim or self._first_dim
        if expected is None:
            self._first_dim = size
        elif size != expected:
            raise EmbeddingDimensionError(
                f"the embedding server at {self._server()} returned vectors of {size} values for model {self.model}, "
                f"the index holds vectors of {expected}: serve the model the index was built with, or "
                "rebuild the index with `needle index --rebuild`"
            )


def query_result(embedder: ServedEmbedding, text: str) -> dict[str, Any]:
    """
    A served query embedder's answer: the vector, or none with a warning when the server is down or overloaded.

    :raises TypeError: If `text` is not a string.
    :raises EmbeddingServerError: On a configuration mistake (unknown model, refused key).
    :raises EmbeddingDimensionError: When the vector's size is not the index's.
    """
    if not isinstance(text, str):
        raise TypeError(f"{type(embedder).__name__} expects a string, got {type(text).__name__}")
    try:
        return {"embedding": embedder.embed_query(text), "warnings": []}
    except EmbeddingServerError as error:
        if not error.transient:
            raise
        return {"embedding": None, "warnings": [f"vector search skipped: {error}"]}
