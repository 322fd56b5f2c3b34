"""For each result file, the chunk that answers the query: read from all of the file's chunks, not only the retrieved ones."""

from collections.abc import Callable
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.dataclasses.sparse_embedding import SparseEmbedding

from haystack_integrations.components.needle._answer_lines import (
    Held,
    Unit,
    Weights,
    holds,
    is_content,
    query_weights,
    scores,
    stems,
    terms,
)
from haystack_integrations.components.needle._answer_lines import parsed as chunk_units
from haystack_integrations.components.needle._store_deserialization import with_document_store
from haystack_integrations.document_stores.needle.access import searchable
from needle.core.checks import OptionalQueryVector
from needle.core.documents import replace

logger = logging.getLogger(__name__)

# What differs from one chunk of a file to another; the rest of a result's metadata is the file's.
_CHUNK_FIELDS = ["source_doc_id", "start_line", "end_line", "heading_path", "page", "page_end", "page_line", "checksum"]


@component
class AnswerChunkSelector:
    """
    Replaces each of the first results by the chunk of its file that best answers the query.

    Ranking needs one chunk per file, and the chunk that represents a file is one the searches retrieved (the one
    with the most query words, `BestChunkSelector`); the chunk that answers is often another one of the same file
    (on the bundled golden set, in about half of the results whose snippet missed the answer). This stage reads
    every chunk of the first `top_files` result files from the chunk store, in one dense and one sparse search
    restricted to those files (whichever query vectors the graph has), and scores each chunk by its BM25 score and
    its cosine, each scaled from the lowest to the highest of its file's chunks (the words of the note's title
    in every chunk then count for none), and by the query words of its best unit
    (`haystack_integrations.components.needle._answer_lines`: a list item, a table row, a code block...) divided
    by the best of its file's. The best chunk takes the result's place with its lines and headings; the result's
    score, rank and file metadata stay, so the ranking is unchanged and the citation and snippet point at the
    chunk that answers. The next `alternates` chunks whose units hold the query's words go along in
    `meta["answer_also"]` (each one's text, lines and answering line): when the best chunk is a close call
    (a paraphrased question, a keyword query naming a page), `SnippetExtractor` shows their answering unit as a
    hunk of its own in the room the snippet has left. Units are scored, and a query word's rarity read, only in
    the chunks that can still reach one of those places. Without a store, or without query vectors, the results
    pass through. Haystack has no such stage.

    Usage example:
    ```python
    selector = AnswerChunkSelector(document_store=chunk_store)
    selector.run(documents=results, query="taper weeks", query_embedding=vector, query_sparse_embedding=sparse)
    ```
    """

    def __init__(
        self,
        document_store: Any = None,
        top_files: int = 3,
        chunks_per_search: int = 200,
        cosine_weight: float = 0.35,
        lines_weight: float = 0.25,
        alternates: int = 2,
    ) -> None:
        """
        Create the selector.

        :param document_store: The chunk store (a `NeedleDocumentStore`, or qdrant-haystack's `QdrantDocumentStore`);
            without it the results pass through.
        :param top_files: How many of the first results get their answering chunk.
        :param chunks_per_search: Most chunks each of the two searches returns (over all `top_files` files).
        :param cosine_weight: Share of the chunk's cosine in its score, 0..1.
        :param lines_weight: Share of the query words of the chunk's best unit in its score, 0..1; the rest is its
            BM25 score.
        :param alternates: How many of the next-best chunks of each file are passed on for the snippet (0: none).
        :raises ValueError: When `top_files` or `chunks_per_search` is below 1, `alternates` below 0, or a weight
            or their sum is outside 0..1.
        """
        if top_files < 1:
            raise ValueError(f"top_files must be > 0, got {top_files}")
        if chunks_per_search < 1:
            raise ValueError(f"chunks_per_search must be > 0, got {chunks_per_search}")
        for name, value in (("cosine_weight", cosine_weight), ("lines_weight", lines_weight)):
            if not 0 <= value <= 1:
                raise ValueError(f"{name} must be between 0 and 1, got {value}")
        if alternates < 0:
            raise ValueError(f"alternates must be >= 0, got {alternates}")
        if cosine_weight + lines_weight > 1:
            raise ValueError(f"cosine_weight + lines_weight must be at most 1, got {cosine_weight} + {lines_weight}")
        self._store = None if document_store is None else searchable(document_store)
        self.document_store = document_store
        self.top_files = top_files
        self.chunks_per_search = chunks_per_search
        self.cosine_weight = cosine_weight
        self.lines_weight = lines_weight
        self.alternates = alternates

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        store = None if self.document_store is None else self.document_store.to_dict()
        return default_to_dict(
            self,
            document_store=store,
            top_files=self.top_files,
            chunks_per_search=self.chunks_per_search,
            cosine_weight=self.cosine_weight,
            lines_weight=self.lines_weight,
            alternates=self.alternates,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "AnswerChunkSelector":
        """Deserialise the component."""
        return default_from_dict(cls, with_document_store(data, optional=True))

    @component.output_types(documents=list[Document])
    def run(
        self,
        documents: list[Document],
        query: str,
        query_embedding: OptionalQueryVector = None,
        query_sparse_embedding: SparseEmbedding | None = None,
    ) -> dict[str, list[Document]]:
        """
        Put the answering chunk of each of the first files in its place.

        :param documents: Results, one per file (`source_doc_id`), best first.
        :param query: The query the searches ran.
        :param query_embedding: The query's dense vector, when the graph has one.
        :param query_sparse_embedding: The query's sparse vector, when the graph has one.
        :returns: A dictionary with `documents`: the same results in the same order, each of the first
            `top_files` as its file's answering chunk (`meta["answer_chunk"]` says whether it changed) with
            `meta["answer_line"]`, the index of its line that answers best (`None` when none holds a query word),
            and `meta["answer_also"]` (the next-best chunks, when any holds the query's words), for
            `SnippetExtractor`.
        """
        leading = documents[: self.top_files]
        files = list(dict.fromkeys(str(d.meta.get("source_doc_id")) for d in leading if d.meta.get("source_doc_id")))
        if self._store is None or not files or (query_embedding is None and query_sparse_embedding is None):
            return {"documents": documents}
        chunks = self._chunks(files, query_embedding, query_sparse_embedding)
        out = []
        for doc in leading:
            candidates = chunks.get(str(doc.meta.get("source_doc_id")), {})
            out.append(self._answering(doc, candidates, query))
        return {"documents": out + documents[self.top_files :]}

    def _chunks(
        self, files: list[str], query_embedding: OptionalQueryVector, query_sparse_embedding: SparseEmbedding | None
    ) -> dict[str, dict[str, dict[str, Any]]]:
        """Per file, its chunks by id: the chunk, its cosine and its BM25 score (when each search ran)."""
        assert self._store is not None
        filters = {"field": "meta.source_doc_id", "operator": "in", "value": files}
        found: dict[str, dict[str, dict[str, Any]]] = {}
        searches: list[tuple[str, Callable[[], list[Document]]]] = []
        store = self._store
        if query_embedding is not None:
            dense = query_embedding
            searches.append(
                (
                    "cosine",
                    lambda: store.query_dense(
                        dense, top_k=self.chunks_per_search, filters=filters, fields=_CHUNK_FIELDS
                    ),
                )
            )
        if query_sparse_embedding is not None and query_sparse_embedding.indices:
            sparse = query_sparse_embedding
            searches.append(
                (
                    "bm25",
                    lambda: store.query_sparse(
                        sparse, top_k=self.chunks_per_search, filters=filters, fields=_CHUNK_FIELDS
                    ),
                )
            )
        for kind, search in searches:
            try:
                hits = search()
            except Exception as error:  # a store without sparse vectors, an engine error: keep the results as they are
                logger.warning("Answer chunks not read ({kind}): {error}", kind=kind, error=error)
                continue
            for hit in hits:
                file = str(hit.meta.get("source_doc_id"))
                entry = found.setdefault(file, {}).setdefault(hit.id, {"chunk": hit})
                entry[kind] = max(float(hit.score or 0.0), 0.0)
        return found

    def _answering(self, doc: Document, candidates: dict[str, dict[str, Any]], query: str) -> Document:
        """The result as its file's answering chunk (itself when it is that chunk or nothing better was read)."""
        if not candidates:
            return doc
        ids = list(candidates)
        title = str(doc.meta.get("title") or "")
        read = [chunk_units(candidates[chunk_id]["chunk"].content or "") for chunk_id in ids]
        parsed = [(list(lines), list(found)) for lines, found, _ in read]
        combined = dict.fromkeys(ids, 0.0)
        for kind, share in (("cosine", self.cosine_weight), ("bm25", 1 - self.cosine_weight - self.lines_weight)):
            values = [candidates[c].get(kind, 0.0) for c in ids]
            low, high = min(values), max(values)
            if high > low:
                for chunk_id, value in zip(ids, values, strict=True):
                    combined[chunk_id] += share * (value - low) / (high - low)
        # Units are scored only in the chunks that can still be among the first 1 + `alternates` with the best
        # possible units (those further behind cannot take a place whatever their lines hold), and a query word's
        # rarity is read over those chunks' units.
        place = sorted(combined.values(), reverse=True)[min(self.alternates, len(ids) - 1)]
        hopeful = [combined[c] + self.lines_weight >= place for c in ids]
        # what each unit holds is read once, for the term weights and the units' scores
        memo: Held = {}
        weighted = query_weights(
            [text for (_, _, texts), keep in zip(read, hopeful, strict=True) if keep for text in texts],
            query,
            title,
            memo,
        )
        unit_scores = [
            scores(list(lines), list(found), query, title, weighted, list(texts), memo) if keep else [0.0] * len(found)
            for (lines, found, texts), keep in zip(read, hopeful, strict=True)
        ]
        lines_best = [max(ranked, default=0.0) for ranked in unit_scores]
        top_lines = max(lines_best) or 1.0
        for chunk_id, best in zip(ids, lines_best, strict=True):
            combined[chunk_id] += self.lines_weight * best / top_lines
        ranked = sorted(ids, key=lambda c: (combined[c], c == doc.id), reverse=True)
        chosen = ranked[0]
        position = ids.index(chosen)
        answer_line = _answer_line(parsed, position, unit_scores[position], query, title, weighted)
        also = self._runners_up(ranked, ids, parsed, unit_scores, lines_best, candidates, query, title, weighted)
        if chosen == doc.id:
            return replace(doc, meta={**doc.meta, "answer_chunk": False, "answer_line": answer_line, **also})
        chunk = candidates[chosen]["chunk"]
        meta = {key: value for key, value in doc.meta.items() if key not in _CHUNK_FIELDS}
        meta.update({key: chunk.meta[key] for key in _CHUNK_FIELDS if key in chunk.meta})
        meta.pop("kind", None)
        meta.update({"answer_chunk": True, "answer_line": answer_line, **also})
        return replace(doc, id=chunk.id, content=chunk.content, meta=meta)

    def _runners_up(
        self,
        ranked: list[str],
        ids: list[str],
        parsed: list[tuple[list[str], list[Unit]]],
        unit_scores: list[list[float]],
        lines_best: list[float],
        candidates: dict[str, dict[str, Any]],
        query: str,
        title: str,
        weighted: Weights,
    ) -> dict[str, Any]:
        """
        The file's next-best chunks for `SnippetExtractor` (`answer_also`: each one's text, lines and answering
        line), those of the `alternates` after the best whose units hold the query's words; `{}` when none does.
        """
        also = []
        for chunk_id in ranked[1 : 1 + self.alternates]:
            position = ids.index(chunk_id)
            if lines_best[position] <= 0:
                continue
            line = _answer_line(parsed, position, unit_scores[position], query, title, weighted, skip_headings=True)
            if line is None:
                continue
            chunk = candidates[chunk_id]["chunk"]
            where = {key: chunk.meta[key] for key in _CHUNK_FIELDS if key in chunk.meta and key != "checksum"}
            also.append({**where, "content": chunk.content or "", "answer_line": line})
        return {"answer_also": also} if also else {}


def _answer_line(
    parsed: list[tuple[list[str], list[Unit]]],
    position: int,
    ranked: list[float],
    query: str,
    title: str,
    weighted: Weights,
    skip_headings: bool = False,
) -> int | None:
    """
    The line of the chosen chunk that best answers: in its best unit (headings left out with `skip_headings`),
    the line holding the query's rarest words, rarity read over the units of the file's chunks still in the
    running (`weighted`, the query's `Weights` over them); `None` when no unit holds a query word.
    """
    lines, found = parsed[position]
    kept = [i for i in range(len(found)) if not (skip_headings and found[i].kind == "heading")]
    if not kept or max((ranked[i] for i in kept), default=0.0) <= 0:
        return None
    unit = found[max(kept, key=lambda i: (ranked[i], -i))]
    inside = [Unit(i, i, "prose") for i in range(unit.first, unit.last + 1) if is_content(lines[i])]
    if not inside:
        return unit.first
    # the words the unit's lead-in or header already shows say nothing about which of its lines answers
    context = "\n".join(lines[i] for i in unit.context).lower()
    rest = [word for word in terms(query) if not holds(context, word)] if context else []
    if rest and len(rest) < len(terms(query)):
        query, rest_stems = " ".join(rest), set(stems(rest))
        weighted = Weights(
            {w: v for w, v in weighted.words.items() if w in rest},
            {s: v for s, v in weighted.stems.items() if s in rest_stems},
        )
    line_ranked = scores(lines, inside, query, title, weighted)
    return inside[max(range(len(inside)), key=lambda k: (line_ranked[k], -k))].first
