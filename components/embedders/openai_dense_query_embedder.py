"""Dense query embedding by an OpenAI-compatible `/v1/embeddings` server, handed on as one numpy vector."""

import asyncio
from typing import Any

import numpy as np
from haystack import component, default_from_dict, default_to_dict
from haystack.components.embedders import OpenAITextEmbedder
from haystack.utils import Secret, deserialize_secrets_inplace

from haystack_integrations.components.needle._openai_served import DEFAULT_KEY, OpenAIServed, usable_key
from haystack_integrations.components.needle._served import check_limits, query_result


@component
class OpenAIDenseQueryEmbedder(OpenAIServed, OpenAITextEmbedder):
    """
    Haystack's `OpenAITextEmbedder` for Needle's query graphs: a float32 array out, a server outage as a warning.

    The vector is a `numpy.ndarray`, which the stages after it copy in microseconds (a `list[float]` costs
    milliseconds per stage, see `FastembedDenseQueryEmbedder`). When the server does not answer or is
    overloaded (after the client's retries with backoff), the query is not lost: the embedding is `None`
    with the reason in `warnings`, the vector search returns nothing and keyword search answers alone. A
    configuration mistake (no such model, a refused key) and a vector whose size is not `embedding_dim`
    (the index's) are errors, in one line, without the key. `DenseQueryEmbedder` builds this class when
    `embedding.provider` is `openai` (`needle.core.embedding_providers`); a graph may also name it itself.

    Usage example:
    ```python
    embedder = OpenAIDenseQueryEmbedder(api_base_url="http://127.0.0.1:8080/v1", model="nomic-embed-text",
                                        prefix="search_query: ", embedding_dim=768)
    embedder.run(text="postgres replication slot")["embedding"].shape  # (768,)
    ```
    """

    def __init__(
        self,
        api_key: Secret = DEFAULT_KEY,
        model: str = "text-embedding-3-small",
        api_base_url: str | None = None,
        prefix: str = "",
        suffix: str = "",
        timeout: float = 60.0,
        max_retries: int = 4,
        embedding_dim: int | None = None,
        batch_size: int = 32,
    ) -> None:
        """
        :param api_key: The server's API key (a placeholder is sent when the variable is unset).
        :param model: The model the server embeds with.
        :param api_base_url: The server's OpenAI-compatible base URL (`http://host:port/v1`).
        :param prefix: Text put before the query (the model's query prefix).
        :param suffix: Text put after the query.
        :param timeout: Seconds a request may take.
        :param max_retries: Retries of a request that got 429, 5xx, a timeout or no connection.
        :param embedding_dim: The size the vector must have (`None`: any).
        :param batch_size: Most texts per request, for callers embedding several (`embed_texts`).
        :raises ValueError: On a timeout, retry count, dimension or batch size out of range.
        """
        check_limits(batch_size, timeout, max_retries, embedding_dim)
        OpenAITextEmbedder.__init__(
            self,
            api_key=usable_key(api_key),
            model=model,
            api_base_url=api_base_url,
            prefix=prefix,
            suffix=suffix,
            timeout=timeout,
            max_retries=max_retries,
        )
        self.api_key = api_key  # the variable, serialised; the client got a placeholder if it is unset
        self.embedding_dim = embedding_dim
        self.batch_size = batch_size

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component (the key as the name of its variable)."""
        return default_to_dict(
            self,
            api_key=self.api_key.to_dict(),
            model=self.model,
            api_base_url=self.api_base_url,
            prefix=self.prefix,
            suffix=self.suffix,
            timeout=self.timeout,
            max_retries=self.max_retries,
            embedding_dim=self.embedding_dim,
            batch_size=self.batch_size,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "OpenAIDenseQueryEmbedder":
        """Deserialise the component."""
        data = {**data, "init_parameters": dict(data.get("init_parameters", {}))}
        deserialize_secrets_inplace(data["init_parameters"], keys=["api_key"])
        return default_from_dict(cls, data)

    @component.output_types(embedding=np.ndarray | None, warnings=list[str])
    def run(self, text: str) -> dict[str, Any]:
        """
        Embed one query.

        :param text: The query (the prefix is added here).
        :returns: A dictionary with `embedding`, a one-dimensional float32 array (`None` when the server did not
            answer), and `warnings` (why, if so).
        :raises TypeError: If `text` is not a string.
        :raises EmbeddingServerError: On a configuration mistake (no such model, a refused key).
        :raises EmbeddingDimensionError: When the vector's size is not `embedding_dim`.
        """
        return query_result(self, self.prefix + text + self.suffix if isinstance(text, str) else text)

    @component.output_types(embedding=np.ndarray | None, warnings=list[str])
    async def run_async(self, text: str) -> dict[str, Any]:
        """`run` in a worker thread (the requests are the same; an event loop is not blocked by them)."""
        return await asyncio.to_thread(self.run, text)
