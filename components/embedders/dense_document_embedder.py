"""Document embedding by the index's dense model, wherever Needle's settings run it."""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.core.serialization import component_to_dict

from haystack_integrations.components.needle import _index_models as index
from haystack_integrations.components.needle._lazy import LoadsOnFirstUse


@component
class DenseDocumentEmbedder:
    """
    Embeds documents for the index with its dense model: in-process (fastembed) or on the model server that
    Needle's settings name (`embedding.provider: openai | ollama`).

    The ingest graph names this component, so one YAML file serves every provider (docs/embedders.md). It
    builds the configured provider's document embedder (`FastembedDenseDocumentEmbedder`, which loads its
    model only when there is text and embeds shortest first; `OpenAIDenseDocumentEmbedder`;
    `OllamaDenseDocumentEmbedder`) and hands every batch to it. What to embed beside the text
    (`meta_fields_to_embed`, `embedding_separator`, `suffix`) goes to every provider; the fastembed knobs
    (`threads`, `batch_size`, ...) to the in-process model only, a server's batch size and limits coming from
    `embedding:`. What is left out here (the model, its folder or server, the prefix) comes from the settings
    and is not written back by `to_dict`.

    Usage example:
    ```python
    embedder = DenseDocumentEmbedder(batch_size=16, meta_fields_to_embed=["context"])
    embedder.run(documents=chunks)["documents"]
    ```
    """

    def __init__(
        self,
        provider: str | None = None,
        model: str | None = None,
        prefix: str | None = None,
        suffix: str = "",
        meta_fields_to_embed: list[str] | None = None,
        embedding_separator: str = "\n",
        batch_size: int = 256,
        threads: int | None = None,
        progress_bar: bool | None = None,
        cache_dir: str | None = None,
        local_files_only: bool | None = None,
        model_kwargs: dict[str, Any] | None = None,
    ) -> None:
        """
        Create the embedder.

        :param provider: `fastembed`, `openai` or `ollama`; default: `embedding.provider`.
        :param model: The model; default: the index's (`embedding.model`).
        :param prefix: Put before each text; default: the index's document prefix.
        :param suffix: Put after each text.
        :param meta_fields_to_embed: Metadata fields embedded in front of the text (e.g. `context`).
        :param embedding_separator: Between those fields and the text.
        :param batch_size: Texts per model call of an in-process model.
        :param threads: ONNX threads of an in-process model.
        :param progress_bar: Show a progress bar; default: as whoever builds the graph prefers (a terminal: on).
        :param cache_dir: fastembed's cache folder (in-process model).
        :param local_files_only: Load without a hub (in-process model).
        :param model_kwargs: fastembed's model arguments (in-process model).
        :raises ValueError: On an unknown provider.
        :raises MissingModelError: When the index's offline model is not assembled (`needle models`).
        """
        self.provider = provider
        self.model = model
        self.prefix = prefix
        self.suffix = suffix
        self.meta_fields_to_embed = meta_fields_to_embed
        self.embedding_separator = embedding_separator
        self.batch_size = batch_size
        self.threads = threads
        self.progress_bar = progress_bar
        self.cache_dir = cache_dir
        self.local_files_only = local_files_only
        self.model_kwargs = model_kwargs
        chosen = provider or index.settings().embedding.provider
        carried: dict[str, Any] = {
            "suffix": suffix,
            "meta_fields_to_embed": meta_fields_to_embed,
            "embedding_separator": embedding_separator,
        }
        if chosen == "fastembed":
            from haystack_integrations.components.embedders.needle.fastembed_dense_document_embedder import (
                FastembedDenseDocumentEmbedder,
            )

            self.embedder: Any = FastembedDenseDocumentEmbedder(
                model=model,
                prefix=prefix,
                batch_size=batch_size,
                threads=threads,
                progress_bar=index.progress_bar(progress_bar),
                cache_dir=cache_dir,
                local_files_only=local_files_only,
                model_kwargs=model_kwargs,
                **carried,
            )
        elif chosen in ("openai", "ollama"):
            self.embedder = index.served_embedder(
                "document",
                provider=chosen,
                model=model,
                prefix=prefix,
                progress_bar=index.progress_bar(progress_bar),
                **carried,
            )
        else:
            raise ValueError(f"provider must be fastembed, openai or ollama, got {chosen!r}")

    def warm_up(self) -> None:
        """The embedder's warm-up (an in-process model still loads only when there is text: `load`)."""
        self.embedder.warm_up()

    def load(self) -> None:
        """Load an in-process model now (a server at start-up); a served model has nothing to load."""
        if isinstance(self.embedder, LoadsOnFirstUse):
            self.embedder.load()

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component: what it was given (the settings fill the rest in again)."""
        optional = {
            "provider": self.provider,
            "model": self.model,
            "prefix": self.prefix,
            "threads": self.threads,
            "cache_dir": self.cache_dir,
            "local_files_only": self.local_files_only,
            "model_kwargs": self.model_kwargs,
            "meta_fields_to_embed": self.meta_fields_to_embed,
            "progress_bar": self.progress_bar,
        }
        return default_to_dict(
            self,
            **{k: v for k, v in optional.items() if v is not None},
            suffix=self.suffix,
            embedding_separator=self.embedding_separator,
            batch_size=self.batch_size,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DenseDocumentEmbedder":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    def describe(self) -> dict[str, Any]:
        """The embedder this one built, serialised (which class, which model): what really runs."""
        return component_to_dict(self.embedder, "embedder")

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """
        Embed documents.

        :param documents: The documents to embed.
        :returns: A dictionary with `documents`: new documents with `embedding` set, in the order given.
        :raises TypeError: If `documents` is not a list of Documents.
        :raises EmbeddingServerError: When a served model's server cannot embed (nothing of the batch is kept).
        """
        return self.embedder.run(documents=documents)
