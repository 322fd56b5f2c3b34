"""Dense embedding of documents by an Ollama server, for the index."""

import asyncio
from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from haystack_integrations.components.embedders.ollama import OllamaDocumentEmbedder
from haystack_integrations.components.needle._ollama_served import OllamaServed
from haystack_integrations.components.needle._served import check_limits
from haystack_integrations.components.needle._vector_checks import checked


@component
class OllamaDenseDocumentEmbedder(OllamaServed, OllamaDocumentEmbedder):
    """
    ollama-haystack's `OllamaDocumentEmbedder` for Needle's index: retried requests, checked vectors, one-line errors.

    The parent sends each batch once and lets the Ollama client's exception through. Here a request that
    got 429 or 5xx, timed out or found no server is tried again with backoff (`max_retries`); one that still
    fails stops the run with one line naming the server and the model, and a model that is not pulled is
    said so with `ollama pull <model>` (the batches an index run already wrote stay, the next run goes on
    from there). Requests carry at most `batch_size` texts, fewer once the server answered 413; a vector
    whose size is not `embedding_dim` (the index's; `None`: the first answer's) stops the run. Needle's
    environment puts this class in place of the graph's fastembed embedder when `embedding.provider` is
    `ollama` (`needle.core.embedding_providers`).

    Usage example:
    ```python
    embedder = OllamaDenseDocumentEmbedder(model="nomic-embed-text", prefix="search_document: ",
                                           meta_fields_to_embed=["context"])
    embedder.run(documents=chunks)["documents"]
    ```
    """

    def __init__(
        self,
        model: str = "nomic-embed-text",
        url: str = "http://127.0.0.1:11434",
        prefix: str = "",
        suffix: str = "",
        batch_size: int = 32,
        progress_bar: bool = False,
        meta_fields_to_embed: list[str] | None = None,
        embedding_separator: str = "\n",
        timeout: float = 60.0,
        max_retries: int = 4,
        keep_alive: float | str | None = None,
        embedding_dim: int | None = None,
    ) -> None:
        """
        :param model: The Ollama model (pulled on the server).
        :param url: The Ollama server.
        :param prefix: Text put before each document (the model's document prefix).
        :param suffix: Text put after each document.
        :param batch_size: Most texts per request.
        :param progress_bar: Show a progress bar (unused: batches go one after another).
        :param meta_fields_to_embed: Metadata fields embedded before the text.
        :param embedding_separator: Joins the metadata fields and the text.
        :param timeout: Seconds a request may take.
        :param max_retries: Retries of a request that got 429, 5xx, a timeout or no connection.
        :param keep_alive: How long Ollama keeps the model loaded after a request (its default when `None`).
        :param embedding_dim: The size every vector must have (`None`: the first answer's).
        :raises ValueError: On a batch size, timeout, retry count or dimension out of range.
        """
        check_limits(batch_size, timeout, max_retries, embedding_dim)
        OllamaDocumentEmbedder.__init__(
            self,
            model=model,
            url=url,
            timeout=timeout,  # type: ignore[arg-type]  # annotated int; its httpx client takes float seconds
            keep_alive=keep_alive,
            prefix=prefix,
            suffix=suffix,
            progress_bar=progress_bar,
            meta_fields_to_embed=meta_fields_to_embed,
            embedding_separator=embedding_separator,
            batch_size=batch_size,
        )
        self.max_retries = max_retries
        self.embedding_dim = embedding_dim

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(
            self,
            model=self.model,
            url=self.url,
            prefix=self.prefix,
            suffix=self.suffix,
            batch_size=self.batch_size,
            progress_bar=self.progress_bar,
            meta_fields_to_embed=self.meta_fields_to_embed,
            embedding_separator=self.embedding_separator,
            timeout=self.timeout,
            max_retries=self.max_retries,
            keep_alive=self.keep_alive,
            embedding_dim=self.embedding_dim,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "OllamaDenseDocumentEmbedder":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:  # type: ignore[override]  # no generation_kwargs: OllamaServed builds the request
        """
        Embed documents.

        :param documents: The documents to embed.
        :returns: A dictionary with `documents`: new documents with `embedding` set, in the order given.
        :raises TypeError: If `documents` is not a list of Documents.
        :raises EmbeddingServerError: When the server cannot embed them.
        :raises EmbeddingDimensionError: When a vector's size is not `embedding_dim`.
        """
        if not isinstance(documents, list) or not all(isinstance(doc, Document) for doc in documents):
            raise TypeError("OllamaDenseDocumentEmbedder expects a list of Documents")
        if not documents:
            return {"documents": []}
        source = f"the embedding server at {self._server()} (model {self.model})"  # named by a vector that fails
        vectors = self.embed_texts(self._prepare_texts_to_embed(documents=documents))
        return {
            "documents": [
                replace(doc, embedding=checked(v, source, self.embedding_dim))
                for doc, v in zip(documents, vectors, strict=True)
            ]
        }

    @component.output_types(documents=list[Document])
    async def run_async(self, documents: list[Document]) -> dict[str, list[Document]]:  # type: ignore[override]  # no generation_kwargs: OllamaServed builds the request
        """`run` in a worker thread (the requests are the same; an event loop is not blocked by them)."""
        return await asyncio.to_thread(self.run, documents)
