"""Dense query embedding by an Ollama server, handed on as one numpy vector."""

import asyncio
from typing import Any

import numpy as np
from haystack import component, default_from_dict, default_to_dict

from haystack_integrations.components.embedders.ollama import OllamaTextEmbedder
from haystack_integrations.components.needle._ollama_served import OllamaServed
from haystack_integrations.components.needle._served import check_limits, query_result


@component
class OllamaDenseQueryEmbedder(OllamaServed, OllamaTextEmbedder):
    """
    ollama-haystack's `OllamaTextEmbedder` for Needle's query graphs: a float32 array out, an outage as a warning.

    The vector is a `numpy.ndarray` (cheap for the following stages to copy). A request that got 429 or 5xx,
    timed out or found no server is tried again with backoff (`max_retries`); when it still fails the query
    is not lost: the embedding is `None` with the reason in `warnings`, and keyword search answers alone. A
    model that is not pulled (`ollama pull <model>`) and a vector whose size is not `embedding_dim` (the
    index's) are errors, in one line. The parent adds no prefix; this one puts `prefix` before the query.
    `DenseQueryEmbedder` builds this class when `embedding.provider` is `ollama`
    (`needle.core.embedding_providers`); a graph may also name it itself.

    Usage example:
    ```python
    embedder = OllamaDenseQueryEmbedder(model="nomic-embed-text", prefix="search_query: ", embedding_dim=768)
    embedder.run(text="postgres replication slot")["embedding"].shape  # (768,)
    ```
    """

    def __init__(
        self,
        model: str = "nomic-embed-text",
        url: str = "http://127.0.0.1:11434",
        prefix: str = "",
        suffix: str = "",
        timeout: float = 60.0,
        max_retries: int = 4,
        keep_alive: float | str | None = None,
        embedding_dim: int | None = None,
        batch_size: int = 32,
    ) -> None:
        """
        :param model: The Ollama model (pulled on the server).
        :param url: The Ollama server.
        :param prefix: Text put before the query (the model's query prefix).
        :param suffix: Text put after the query.
        :param timeout: Seconds a request may take.
        :param max_retries: Retries of a request that got 429, 5xx, a timeout or no connection.
        :param keep_alive: How long Ollama keeps the model loaded after a request (its default when `None`).
        :param embedding_dim: The size the vector must have (`None`: any).
        :param batch_size: Most texts per request, for callers embedding several (`embed_texts`).
        :raises ValueError: On a timeout, retry count, dimension or batch size out of range.
        """
        check_limits(batch_size, timeout, max_retries, embedding_dim)
        OllamaTextEmbedder.__init__(
            self,
            model=model,
            url=url,
            timeout=timeout,  # type: ignore[arg-type]  # annotated int; its httpx client takes float seconds
            keep_alive=keep_alive,
        )
        self.prefix = prefix
        self.suffix = suffix
        self.max_retries = max_retries
        self.embedding_dim = embedding_dim
        self.batch_size = batch_size

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(
            self,
            model=self.model,
            url=self.url,
            prefix=self.prefix,
            suffix=self.suffix,
            timeout=self.timeout,
            max_retries=self.max_retries,
            keep_alive=self.keep_alive,
            embedding_dim=self.embedding_dim,
            batch_size=self.batch_size,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "OllamaDenseQueryEmbedder":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(embedding=np.ndarray | None, warnings=list[str])
    def run(self, text: str) -> dict[str, Any]:  # type: ignore[override]  # no generation_kwargs: OllamaServed builds the request
        """
        Embed one query.

        :param text: The query (the prefix is added here).
        :returns: A dictionary with `embedding`, a one-dimensional float32 array (`None` when the server did not
            answer), and `warnings` (why, if so).
        :raises TypeError: If `text` is not a string.
        :raises EmbeddingServerError: When the model is not pulled.
        :raises EmbeddingDimensionError: When the vector's size is not `embedding_dim`.
        """
        return query_result(self, self.prefix + text + self.suffix if isinstance(text, str) else text)

    @component.output_types(embedding=np.ndarray | None, warnings=list[str])
    async def run_async(self, text: str) -> dict[str, Any]:  # type: ignore[override]  # no generation_kwargs: OllamaServed builds the request
        """`run` in a worker thread (the requests are the same; an event loop is not blocked by them)."""
        return await asyncio.to_thread(self.run, text)
