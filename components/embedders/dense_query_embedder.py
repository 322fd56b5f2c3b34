"""Query embedding by the index's dense model, wherever Needle's settings run it."""

from typing import Any

import numpy as np
from haystack import component, default_from_dict, default_to_dict
from haystack.core.serialization import component_to_dict

from haystack_integrations.components.needle import _index_models as index


@component
class DenseQueryEmbedder:
    """
    Embeds a search query with the index's dense model: in-process (fastembed) or on the model server that
    Needle's settings name (`embedding.provider: openai | ollama`), as a float32 `numpy.ndarray`.

    The graphs of `pipelines/` name this component, so one YAML file serves every provider: the two lines of
    `embedding:` that move the index to a model server (docs/embedders.md) move the queries with it. It builds
    the embedder of the configured provider (`FastembedDenseQueryEmbedder`, `OpenAIDenseQueryEmbedder` or
    `OllamaDenseQueryEmbedder`) and hands every query to it; a YAML that wants one provider whatever the
    settings say names that class instead. What is left out here (the model, its folder or server, the
    prefix, the index's dimension) comes from the settings and is not written back by `to_dict`.

    Usage example:
    ```python
    embedder = DenseQueryEmbedder(threads=1)  # the index's model, as `needle query` embeds
    embedder.run(text="postgres replication slot")["embedding"].shape  # (384,)
    ```
    """

    def __init__(
        self,
        provider: str | None = None,
        model: str | None = None,
        prefix: str | None = None,
        threads: int | None = None,
        progress_bar: bool = False,
    ) -> None:
        """
        Create the embedder.

        :param provider: `fastembed`, `openai` or `ollama`; default: `embedding.provider`.
        :param model: The model; default: the index's (`embedding.model`).
        :param prefix: Put before the query; default: the index's query prefix.
        :param threads: ONNX threads of an in-process model.
        :param progress_bar: Show a progress bar (in-process model).
        :raises ValueError: On an unknown provider.
        :raises MissingModelError: When the index's offline model is not assembled (`needle models`).
        """
        self.provider = provider
        self.model = model
        self.prefix = prefix
        self.threads = threads
        self.progress_bar = progress_bar
        self.embedder = _build(provider, model, prefix, threads, progress_bar)

    def warm_up(self) -> None:
        """Load the model (in-process) or the client; a second call does nothing."""
        self.embedder.warm_up()

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component: what it was given (the settings fill the rest in again)."""
        given = {"provider": self.provider, "model": self.model, "prefix": self.prefix, "threads": self.threads}
        return default_to_dict(
            self, **{k: v for k, v in given.items() if v is not None}, progress_bar=self.progress_bar
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DenseQueryEmbedder":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    def describe(self) -> dict[str, Any]:
        """The embedder this one built, serialised (which class, which model): what really runs."""
        return component_to_dict(self.embedder, "embedder")

    @component.output_types(embedding=np.ndarray | None, warnings=list[str])
    def run(self, text: str) -> dict[str, Any]:
        """
        Embed one query.

        :param text: The query.
        :returns: A dictionary with `embedding`, a one-dimensional float32 array (`None` when the model failed
            or the server did not answer), and `warnings` (why, if so).
        :raises TypeError: If `text` is not a string.
        """
        return self.embedder.run(text=text)


def _build(provider: str | None, model: str | None, prefix: str | None, threads: int | None, progress_bar: bool) -> Any:
    """The configured provider's query embedder."""
    chosen = provider or index.settings().embedding.provider
    if chosen == "fastembed":
        from haystack_integrations.components.embedders.needle.fastembed_dense_query_embedder import (
            FastembedDenseQueryEmbedder,
        )

        return FastembedDenseQueryEmbedder(model=model, prefix=prefix, threads=threads, progress_bar=progress_bar)
    if chosen not in ("openai", "ollama"):
        raise ValueError(f"provider must be fastembed, openai or ollama, got {chosen!r}")
    return index.served_embedder("query", provider=chosen, model=model, prefix=prefix)
