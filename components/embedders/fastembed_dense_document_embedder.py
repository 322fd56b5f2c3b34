"""Dense embedding of documents for the index: the model loads on the first text, batches by token length."""

from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict
from tokenizers import Tokenizer
from tqdm import tqdm

from haystack_integrations.components.embedders.fastembed import FastembedDocumentEmbedder
from haystack_integrations.components.needle._index_models import fastembed_model, without
from haystack_integrations.components.needle._index_models import progress_bar as show_progress
from haystack_integrations.components.needle._lazy import LoadsOnFirstUse
from haystack_integrations.components.needle._vector_checks import checked


@component
class FastembedDenseDocumentEmbedder(LoadsOnFirstUse, FastembedDocumentEmbedder):
    """
    fastembed-haystack's document embedder, loading its model only when there is text to embed and embedding
    texts in order of their length in tokens.

    The parent loads its model in `warm_up()`, which a Haystack pipeline calls on every component before each
    run, so an index run with nothing to embed (the usual case: no file changed) still loads the model, the
    largest part of a `needle index` process's start-up. Here `warm_up()` does nothing and the model loads on
    the first non-empty run. fastembed pads each batch to its longest text, so a batch that mixes a short
    chunk with long ones runs the model over padding. The texts are embedded shortest first, counted in the
    model's own tokens (the documents come back in the order they were given): on the first 300 SciFact
    abstracts' chunks the model runs over 111,856 tokens where the given order costs 168,896 and an order by
    characters 131,536, since characters per token vary with the text (numbers, formulas, names). A batch
    holds `batch_size` texts at most, and fewer as they grow longer (`attention_batches`): the model's buffers
    grow with the square of a batch's longest text, and sixteen texts of 256 tokens took 600 MB more. Each
    vector is a `SharedVector`, which the pipeline's deep copies of the following stages' inputs do not
    copy. Parameters and output are the parent's, except that what is left out (`model`, where its files are,
    `prefix`) is the index's, from Needle's settings (`_index_models`), and is not written back by `to_dict`.
    `DenseDocumentEmbedder` builds this one when the index's model runs in-process.

    Usage example:
    ```python
    embedder = FastembedDenseDocumentEmbedder(model="BAAI/bge-small-en-v1.5", meta_fields_to_embed=["context"])
    embedder.run(documents=[])  # loads nothing
    embedder.run(documents=chunks)["documents"]  # loads the model, then embeds
    ```
    """

    _counter: Tokenizer | None = None  # the model's tokenizer without padding, made on the first count

    def __init__(
        self,
        model: str | None = None,
        cache_dir: str | None = None,
        threads: int | None = None,
        prefix: str | None = None,
        suffix: str = "",
        batch_size: int = 256,
        progress_bar: bool | None = None,
        parallel: int | None = None,
        local_files_only: bool | None = None,
        meta_fields_to_embed: list[str] | None = None,
        embedding_separator: str = "\n",
        model_kwargs: dict[str, Any] | None = None,
    ) -> None:
        """
        Create the embedder: `FastembedDocumentEmbedder`'s parameters, those left `None` filled from Needle's settings.

        :param model: The fastembed model; default: the index's dense model.
        :param cache_dir: fastembed's cache folder; default: the model folder's (for the index's model).
        :param threads: ONNX threads.
        :param prefix: Put before each text; default: the index's document prefix.
        :param suffix: Put after each text.
        :param batch_size: Texts per model call.
        :param progress_bar: Show a progress bar; default: as whoever builds the graph prefers (a terminal: on).
        :param parallel: fastembed's data-parallel workers.
        :param local_files_only: Load without a hub; default: true for an offline model.
        :param meta_fields_to_embed: Metadata fields embedded in front of the text (e.g. `context`).
        :param embedding_separator: Between those fields and the text.
        :param model_kwargs: fastembed's model arguments (`specific_model_path` of an offline model).
        :raises MissingModelError: When the index's offline model is not assembled (`needle models`).
        """
        values, self._from_settings = fastembed_model(
            "dense", "document", model, cache_dir, local_files_only, model_kwargs, prefix
        )
        if progress_bar is None:
            self._from_settings.add("progress_bar")
        FastembedDocumentEmbedder.__init__(
            self,
            threads=threads,
            suffix=suffix,
            batch_size=batch_size,
            progress_bar=show_progress(progress_bar),
            parallel=parallel,
            meta_fields_to_embed=meta_fields_to_embed,
            embedding_separator=embedding_separator,
            **values,
        )

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component: what it was given (the settings fill the rest in again)."""
        return without(FastembedDocumentEmbedder.to_dict(self), self._from_settings)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "FastembedDenseDocumentEmbedder":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """
        Embed documents, fewest tokens first, loading the model if there is anything to embed.

        :param documents: The documents to embed.
        :returns: A dictionary with `documents`: new documents with `embedding` set, in the order given.
        :raises TypeError: If `documents` is not a list of Documents.
        """
        if not isinstance(documents, list) or not all(isinstance(doc, Document) for doc in documents):
            raise TypeError("FastembedDenseDocumentEmbedder expects a list of Documents")
        if not documents:
            return {"documents": []}
        self.load()
        texts = self._prepare_texts_to_embed(documents=documents)
        lengths = self._token_lengths(texts)
        order = sorted(range(len(documents)), key=lambda i: lengths[i])
        backend: Any = self.embedding_backend
        out: list[Document] = [documents[0]] * len(documents)
        with tqdm(total=len(texts), disable=not self.progress_bar, desc="Calculating embeddings") as bar:
            for batch in attention_batches(order, lengths, self.batch_size):
                vectors = backend.embed(
                    [texts[i] for i in batch], batch_size=len(batch), progress_bar=False, parallel=self.parallel
                )
                for position, vector in zip(batch, vectors, strict=True):
                    vector = checked(vector, f"the model {self.model_name}")
                    out[position] = replace(documents[position], embedding=vector)
                bar.update(len(batch))
        return {"documents": out}

    def _token_lengths(self, texts: list[str]) -> list[int]:
        """
        Each text's length in the model's tokens, cut at the model's window as the model cuts it (characters
        when the backend exposes no `tokenizers` tokenizer).
        """
        if self._counter is None:
            self._counter = token_counter(self)
            if self._counter is None:
                return [len(text) for text in texts]
        return [len(encoding.ids) for encoding in self._counter.encode_batch(texts)]


# The most a batch may hold, counted as its texts times the square of its longest text's tokens (what the
# model's attention buffers grow with): one text of 256 tokens, four of 128, sixteen of 64. On the demo notes'
# chunks an index run then peaks at 351 MB instead of 978 MB with sixteen texts a batch, for no more CPU time
# (43 against 48 s: fewer padding tokens); docs/performance.md, "The background owner's memory".
ATTENTION_BUDGET = 256 * 256


def attention_batches(order: list[int], lengths: list[int], most: int) -> list[list[int]]:
    """
    Split texts, in the order given (fewest tokens first), into batches of at most `most` texts whose count
    times the square of their longest text's tokens stays within `ATTENTION_BUDGET` (a longer text alone).

    :param order: Text positions, shortest first.
    :param lengths: Each position's length in tokens.
    :param most: The most texts a batch holds (the embedder's `batch_size`).
    :returns: The batches, as lists of positions.
    """
    batches: list[list[int]] = []
    batch: list[int] = []
    for position in order:
        longest = max(lengths[position], 1)
        if batch and (len(batch) >= most or (len(batch) + 1) * longest * longest > ATTENTION_BUDGET):
            batches.append(batch)
            batch = []
        batch.append(position)
    if batch:
        batches.append(batch)
    return batches


def token_counter(embedder: FastembedDocumentEmbedder) -> Tokenizer | None:
    """
    A copy of a loaded fastembed embedder's tokenizer that does not pad (it still cuts at the model's
    window), or None when its backend exposes no `tokenizers` tokenizer.
    """
    backend = getattr(getattr(embedder.embedding_backend, "model", None), "model", None)
    tokenizer = getattr(backend, "tokenizer", None)
    if not isinstance(tokenizer, Tokenizer):
        return None
    counter = Tokenizer.from_str(tokenizer.to_str())
    counter.no_padding()
    return counter
