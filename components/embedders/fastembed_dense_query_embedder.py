"""Dense query embedding handed on as one numpy vector, which Haystack copies in microseconds."""

from typing import Any

import numpy as np
from haystack import component, default_from_dict, logging

from haystack_integrations.components.embedders.fastembed import FastembedTextEmbedder
from haystack_integrations.components.needle._index_models import fastembed_model, without

logger = logging.getLogger(__name__)


def is_runtime_failure(error: BaseException) -> bool:
    """Whether an error comes from the ONNX runtime running a loaded model (not from a missing model or bad input)."""
    return type(error).__module__.startswith("onnxruntime")


@component
class FastembedDenseQueryEmbedder(FastembedTextEmbedder):
    """
    Embeds a search query with fastembed and returns the vector as a float32 `numpy.ndarray`.

    Haystack deep-copies every input of every component it runs, and it walks lists element by element,
    checking each element against its `Component` protocol. On Python 3.11 that costs about 6 ms for one
    384-value `list[float]`, paid again by every stage that takes the query vector (retrieval, reranking,
    expansion): a fifth of a hybrid query's time, spent copying. An array is copied whole, in about 0.02 ms.
    Needle's retrievers, rankers and stores take either form, so Haystack's own `FastembedTextEmbedder`
    still plugs into the same graphs. Everything else (init parameters, the shared model backend, prefix
    and suffix) is fastembed-haystack's embedder, except that what is left out (`model`, where its files are,
    `prefix`) is the index's, from Needle's settings (`_index_models`), and is not written back by `to_dict`.

    When the ONNX runtime fails while embedding (an `OrtException` such as `Fail` or `RuntimeException`),
    the query is not lost: the embedding is `None` with the error in `warnings`, the vector search returns
    nothing, BM25 answers alone and the confidence, which then lacks a cosine, drops. A model that cannot
    load at all is still an error (`warm_up`).

    Usage example:
    ```python
    embedder = FastembedDenseQueryEmbedder(model="BAAI/bge-small-en-v1.5")
    embedder.warm_up()
    embedder.run(text="postgres replication slot")["embedding"].shape  # (384,)
    ```
    """

    def __init__(
        self,
        model: str | None = None,
        cache_dir: str | None = None,
        threads: int | None = None,
        prefix: str | None = None,
        suffix: str = "",
        progress_bar: bool = True,
        parallel: int | None = None,
        local_files_only: bool | None = None,
        model_kwargs: dict[str, Any] | None = None,
    ) -> None:
        """
        Create the embedder: `FastembedTextEmbedder`'s parameters, those left `None` filled from Needle's settings.

        :param model: The fastembed model; default: the index's dense model.
        :param cache_dir: fastembed's cache folder; default: the model folder's (for the index's model).
        :param threads: ONNX threads.
        :param prefix: Put before the query; default: the index's query prefix.
        :param suffix: Put after the query.
        :param progress_bar: Show a progress bar.
        :param parallel: fastembed's data-parallel workers.
        :param local_files_only: Load without a hub; default: true for an offline model.
        :param model_kwargs: fastembed's model arguments (`specific_model_path` of an offline model).
        :raises MissingModelError: When the index's offline model is not assembled (`needle models`).
        """
        values, self._from_settings = fastembed_model(
            "dense", "query", model, cache_dir, local_files_only, model_kwargs, prefix
        )
        FastembedTextEmbedder.__init__(
            self, threads=threads, suffix=suffix, progress_bar=progress_bar, parallel=parallel, **values
        )

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component: what it was given (the settings fill the rest in again)."""
        return without(FastembedTextEmbedder.to_dict(self), self._from_settings)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "FastembedDenseQueryEmbedder":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(embedding=np.ndarray | None, warnings=list[str])
    def run(self, text: str) -> dict[str, Any]:
        """
        Embed one query.

        :param text: The query.
        :returns: A dictionary with `embedding`, a one-dimensional float32 array (`None` when the ONNX runtime
            failed), and `warnings` (that failure, if any).
        :raises TypeError: If `text` is not a string.
        """
        if not isinstance(text, str):
            raise TypeError(f"FastembedDenseQueryEmbedder expects a string, got {type(text).__name__}")
        if self.embedding_backend is None:
            self.warm_up()
        backend = self.embedding_backend
        assert backend is not None  # warm_up sets it
        texts = [self.prefix + text + self.suffix]
        try:
            vectors = backend.model.embed(texts, parallel=self.parallel)
            return {"embedding": np.asarray(next(iter(vectors)), dtype=np.float32), "warnings": []}
        except Exception as error:
            if not is_runtime_failure(error):
                raise
            logger.warning("The embedding model failed, searching without vectors: {error}", error=error)
            reason = f"{type(error).__name__}: {str(error).strip()[:200]}"
            return {"embedding": None, "warnings": [f"vector search skipped: the embedding model failed ({reason})"]}
