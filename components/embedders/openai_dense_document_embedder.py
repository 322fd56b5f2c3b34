"""Dense embedding of documents by an OpenAI-compatible `/v1/embeddings` server, for the index."""

import asyncio
from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.components.embedders import OpenAIDocumentEmbedder
from haystack.utils import Secret, deserialize_secrets_inplace

from haystack_integrations.components.needle._openai_served import DEFAULT_KEY, OpenAIServed, usable_key
from haystack_integrations.components.needle._served import check_limits
from haystack_integrations.components.needle._vectors import SharedVector


@component
class OpenAIDenseDocumentEmbedder(OpenAIServed, OpenAIDocumentEmbedder):
    """
    Haystack's `OpenAIDocumentEmbedder` for Needle's index: a failed request stops the run, and every vector is checked.

    Haystack's embedder logs a failed batch and hands its documents on without embeddings, which the index
    would store as chunks no vector search finds; here the run stops with one line naming the server and the
    model (the batches an index run already wrote stay, the next run goes on from there). Requests carry at
    most `batch_size` texts, fewer once the server answered 413; the client retries 429, 5xx and timeouts with
    backoff (`max_retries`); a vector whose size is not `embedding_dim` (the index's; `None`: the first
    answer's) stops the run; the API key never shows in an error. `DenseDocumentEmbedder` builds this class
    when `embedding.provider` is `openai` (`needle.core.embedding_providers`); a graph may also name it itself.

    Usage example:
    ```python
    embedder = OpenAIDenseDocumentEmbedder(api_base_url="http://127.0.0.1:8080/v1", model="nomic-embed-text",
                                           prefix="search_document: ", meta_fields_to_embed=["context"])
    embedder.run(documents=chunks)["documents"]
    ```
    """

    def __init__(
        self,
        api_key: Secret = DEFAULT_KEY,
        model: str = "text-embedding-3-small",
        api_base_url: str | None = None,
        prefix: str = "",
        suffix: str = "",
        batch_size: int = 32,
        progress_bar: bool = False,
        meta_fields_to_embed: list[str] | None = None,
        embedding_separator: str = "\n",
        timeout: float = 60.0,
        max_retries: int = 4,
        embedding_dim: int | None = None,
    ) -> None:
        """
        :param api_key: The server's API key (a placeholder is sent when the variable is unset).
        :param model: The model the server embeds with.
        :param api_base_url: The server's OpenAI-compatible base URL (`http://host:port/v1`).
        :param prefix: Text put before each document (the model's document prefix).
        :param suffix: Text put after each document.
        :param batch_size: Most texts per request.
        :param progress_bar: Show a progress bar.
        :param meta_fields_to_embed: Metadata fields embedded before the text.
        :param embedding_separator: Joins the metadata fields and the text.
        :param timeout: Seconds a request may take.
        :param max_retries: Retries of a request that got 429, 5xx, a timeout or no connection.
        :param embedding_dim: The size every vector must have (`None`: the first answer's).
        :raises ValueError: On a batch size, timeout, retry count or dimension out of range.
        """
        check_limits(batch_size, timeout, max_retries, embedding_dim)
        OpenAIDocumentEmbedder.__init__(
            self,
            api_key=usable_key(api_key),
            model=model,
            api_base_url=api_base_url,
            prefix=prefix,
            suffix=suffix,
            batch_size=batch_size,
            progress_bar=progress_bar,
            meta_fields_to_embed=meta_fields_to_embed,
            embedding_separator=embedding_separator,
            timeout=timeout,
            max_retries=max_retries,
            raise_on_failure=True,
        )
        self.api_key = api_key  # the variable, serialised; the client got a placeholder if it is unset
        self.embedding_dim = embedding_dim

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component (the key as the name of its variable)."""
        return default_to_dict(
            self,
            api_key=self.api_key.to_dict(),
            model=self.model,
            api_base_url=self.api_base_url,
            prefix=self.prefix,
            suffix=self.suffix,
            batch_size=self.batch_size,
            progress_bar=self.progress_bar,
            meta_fields_to_embed=self.meta_fields_to_embed,
            embedding_separator=self.embedding_separator,
            timeout=self.timeout,
            max_retries=self.max_retries,
            embedding_dim=self.embedding_dim,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "OpenAIDenseDocumentEmbedder":
        """Deserialise the component."""
        data = {**data, "init_parameters": dict(data.get("init_parameters", {}))}
        deserialize_secrets_inplace(data["init_parameters"], keys=["api_key"])
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """
        Embed documents.

        :param documents: The documents to embed.
        :returns: A dictionary with `documents`: new documents with `embedding` set, in the order given.
        :raises TypeError: If `documents` is not a list of Documents.
        :raises EmbeddingServerError: When the server cannot embed them.
        :raises EmbeddingDimensionError: When a vector's size is not `embedding_dim`.
        """
        if not isinstance(documents, list) or not all(isinstance(doc, Document) for doc in documents):
            raise TypeError("OpenAIDenseDocumentEmbedder expects a list of Documents")
        if not documents:
            return {"documents": []}
        texts = [
            self.prefix
            + self.embedding_separator.join(
                [str(doc.meta[key]) for key in self.meta_fields_to_embed if doc.meta.get(key) is not None]
                + [doc.content or ""]
            )
            + self.suffix
            for doc in documents
        ]
        vectors = self.embed_texts(texts)
        return {
            "documents": [replace(doc, embedding=SharedVector(v)) for doc, v in zip(documents, vectors, strict=True)]
        }

    @component.output_types(documents=list[Document])
    async def run_async(self, documents: list[Document]) -> dict[str, list[Document]]:
        """`run` in a worker thread (the requests are the same; an event loop is not blocked by them)."""
        return await asyncio.to_thread(self.run, documents)
