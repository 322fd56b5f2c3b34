"""Rerank the leading fused candidates with any Haystack ranker, caching its scores when they are per document."""

import inspect
import math
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.core.serialization import component_to_dict
from haystack.dataclasses.sparse_embedding import SparseEmbedding

from haystack_integrations.components.needle._index_models import FROM_SETTINGS, cache_file, without
from haystack_integrations.components.needle._llm_cache import LLMCache, load_component, model_label
from haystack_integrations.components.needle._scores import order_known_scores
from needle.core.checks import OptionalQueryVector, check_top_k
from needle.core.documents import replace

logger = logging.getLogger(__name__)

SCORE_TRANSFORMS = ("auto", "sigmoid", "none")


def sigmoid(x: float) -> float:
    """The logistic function, safe for large magnitudes."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


@component
class CandidateReranker:
    """
    Reranks the first `candidates` documents with a wrapped ranker, keeping every document and, where the
    ranker's scores belong to one document, caching each per query and document.

    The wrapped ranker is any Haystack ranker (`run(query, documents, top_k)`): a cross-encoder such as
    `FastembedRanker`, an `LLMJudgeRanker`, or another. A cross-encoder's or a judge's scores are cached per
    (query, document checksum, model) in the data folder's SQLite cache, so a repeated query, or a new query
    whose candidates were partly seen, sends only the misses to the ranker; `HybridScoreRanker`'s are not
    (see below), so around it this stage reranks without a cache (its store queries cost a few milliseconds). Nothing is dropped: the candidates come first, ordered by rerank score, then the other
    documents in their input order; a later blending stage combines the fused and rerank scores and the
    final cutoff cuts. `doc.score` keeps the fused score; `meta["rerank"]` holds `score` (in [0, 1]),
    `raw` (as the ranker gave it) and `input_rank` (1-based fused rank), and only `input_rank` for
    documents beyond the candidates; metadata the ranker added to a freshly scored candidate (such as
    `HybridScoreRanker`'s `hybrid` trace) is kept on it. A candidate the ranker could not score (it failed, or left it out)
    gets `score=None`, keeps its input position and is not cached. Haystack's rankers neither cache nor
    keep the documents they do not rerank. A ranker whose `run` takes `query_embedding` or
    `query_sparse_embedding` (such as `HybridScoreRanker`) receives the query's embeddings; one that says
    `cacheable = False` (its scores depend on the whole candidate set) is never cached. A ranker with a
    `rescore(documents, ...)` method giving each document's score and added metadata (`HybridScoreRanker`)
    is asked for those instead of documents, so each reranked document is built once; any other ranker gets
    copies of the candidates, as some rankers set `score` on the documents they are given.

    Usage example:
    ```yaml
    rerank:
      type: haystack_integrations.components.rankers.needle.candidate_reranker.CandidateReranker
      init_parameters:
        ranker:
          type: haystack_integrations.components.rankers.fastembed.FastembedRanker
          init_parameters: {model_name: Xenova/ms-marco-MiniLM-L-6-v2}
        candidates: 40
    ```
    """

    def __init__(
        self,
        ranker: Any,
        cache_path: str | None = FROM_SETTINGS,
        cache_ttl_hours: float = 168,
        model_name: str | None = None,
        candidates: int = 40,
        top_k: int = 10,
        score_transform: str = "auto",
        enabled: bool = True,
    ) -> None:
        """
        Create the reranker.

        :param ranker: A Haystack ranker, or its serialised mapping (`type`, `init_parameters`).
        :param cache_path: SQLite file caching rerank scores; default: the data folder's
            (`cache.sqlite`, from Needle's settings); `None` disables the cache.
        :param cache_ttl_hours: How long a cached score stays valid.
        :param model_name: The model's name in cache keys; by default the ranker's `model` or `model_name`
            (or that of its chat generator), else its class name.
        :param candidates: How many leading documents to rerank.
        :param top_k: How many leading documents the caller will keep: at least this many are reranked,
            even when `candidates` is smaller. No document is dropped here.
        :param score_transform: How raw scores map to [0, 1]: `"sigmoid"` (for logits), `"none"`, or
            `"auto"` (sigmoid when any raw score of the call lies outside [0, 1]).
        :param enabled: Rerank by default; a request can switch it either way. While off, the wrapped
            ranker is not even loaded (a hub model is never fetched for a stage nobody uses).
        :raises ValueError: On `candidates`, `top_k` or `cache_ttl_hours` not > 0, an unknown
            `score_transform` or a `ranker` mapping without `type`.
        """
        if candidates < 1:
            raise ValueError(f"candidates must be > 0, got {candidates}")
        check_top_k(top_k)
        if cache_ttl_hours <= 0:
            raise ValueError(f"cache_ttl_hours must be > 0, got {cache_ttl_hours}")
        if score_transform not in SCORE_TRANSFORMS:
            raise ValueError(f"score_transform must be one of {SCORE_TRANSFORMS}, got {score_transform!r}")
        self.ranker = load_component(ranker, "ranker")
        # The query embeddings the wrapped ranker takes (none for most rankers), read once.
        self._ranker_inputs = {"query_embedding", "query_sparse_embedding"} & set(
            inspect.signature(self.ranker.run).parameters
        )
        self._from_settings = {"cache_path"} if cache_path is FROM_SETTINGS else set()
        self.cache_path = cache_file() if cache_path is FROM_SETTINGS else cache_path
        self.cache_ttl_hours = cache_ttl_hours
        self.model_name = model_name
        self.candidates = candidates
        self.top_k = top_k
        self.score_transform = score_transform
        self.enabled = enabled
        self._cache: LLMCache | None = None

    def warm_up(self) -> None:
        """Warm the wrapped ranker up and open the cache (only when enabled); a second call does nothing."""
        if self._cache is not None or not self.enabled:
            return
        self._load()

    def _load(self) -> None:
        if hasattr(self.ranker, "warm_up"):
            self.ranker.warm_up()
        self._cache = LLMCache(self.cache_path, self.cache_ttl_hours)

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component, the wrapped ranker included."""
        return without(
            default_to_dict(
                self,
                ranker=component_to_dict(self.ranker, "ranker"),
                cache_path=self.cache_path,
                cache_ttl_hours=self.cache_ttl_hours,
                model_name=self.model_name,
                candidates=self.candidates,
                top_k=self.top_k,
                score_transform=self.score_transform,
                enabled=self.enabled,
            ),
            self._from_settings,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CandidateReranker":
        """
        Deserialise the component, the nested ranker first (inside Haystack's deserialisation, so that
        its settings are read like those of the graph's other components).
        """
        params = data.get("init_parameters", {})
        nested = load_component(params.get("ranker"), "ranker")
        return default_from_dict(cls, {**data, "init_parameters": {**params, "ranker": nested}})

    @staticmethod
    def document_key(doc: Document) -> str:
        """The document's part of the cache key: its content checksum, else its id."""
        return str(doc.meta.get("checksum") or doc.id)

    def _rerank(
        self, query: str, documents: list[Document], embeddings: dict[str, Any]
    ) -> tuple[dict[str, float], dict[str, dict[str, Any]]]:
        """
        Raw scores of the documents the wrapped ranker scored, by document id, and the metadata the ranker
        added to each (e.g. `HybridScoreRanker`'s exact scores, which the confidence stage reads).
        """
        extra = {name: value for name, value in embeddings.items() if value is not None and name in self._ranker_inputs}
        rescore = getattr(self.ranker, "rescore", None)
        try:
            if callable(rescore):
                # A ranker that rescores without building documents (`HybridScoreRanker.rescore`): each
                # reranked document is then built once, in `run`, with every field this stage changes.
                found = rescore(documents, **extra)
                scores = {doc.id: float(score) for doc, (score, _) in zip(documents, found, strict=True)}
                added = {
                    doc.id: {k: v for k, v in meta.items() if k not in doc.meta}
                    for doc, (_, meta) in zip(documents, found, strict=True)
                }
                return scores, added
            # Copies: some rankers set `score` on the documents they are given.
            copies = [replace(doc) for doc in documents]
            ranked = self.ranker.run(query=query, documents=copies, top_k=len(copies), **extra)["documents"]
        except Exception as error:
            logger.warning("Reranking failed, keeping the fused order: {error}", error=error)
            return {}, {}
        given = {doc.id: doc.meta for doc in documents}
        scores = {doc.id: float(doc.score) for doc in ranked if doc.score is not None}
        added = {
            doc.id: {k: v for k, v in doc.meta.items() if k not in given.get(doc.id, {})}
            for doc in ranked
            if doc.id in scores
        }
        return scores, added

    def _transform(self, raws: list[float | None]) -> list[float | None]:
        known = [r for r in raws if r is not None]
        use_sigmoid = self.score_transform == "sigmoid" or (
            self.score_transform == "auto" and any(not 0.0 <= r <= 1.0 for r in known)
        )
        return [None if r is None else (sigmoid(r) if use_sigmoid else r) for r in raws]

    @component.output_types(documents=list[Document])
    def run(
        self,
        query: str,
        documents: list[Document],
        top_k: int | None = None,
        enabled: bool | None = None,
        query_embedding: OptionalQueryVector = None,
        query_sparse_embedding: SparseEmbedding | None = None,
    ) -> dict[str, list[Document]]:
        """
        Rerank the leading candidates, from the cache where possible.

        :param query: The user's query.
        :param documents: Fused documents, one per file, best first.
        :param top_k: Overrides the init `top_k` for this call (at least this many are reranked).
        :param enabled: Rerank this request or not; the init value when `None`. Off passes the documents
            through untouched.
        :param query_embedding: The query's dense embedding, for rankers that take it.
        :param query_sparse_embedding: The query's sparse embedding, for rankers that take it.
        :returns: A dictionary with `documents`: all input documents, the reranked candidates first by
            descending rerank score, then the others in input order, each with `meta["rerank"]`.
        :raises ValueError: If `top_k` is below 1.
        """
        check_top_k(top_k, optional=True)
        top_k = top_k if top_k is not None else self.top_k
        if not (self.enabled if enabled is None else enabled) or not documents:
            return {"documents": documents}
        if self._cache is None:
            self._load()
        assert self._cache is not None
        model = self.model_name or model_label(self.ranker)
        count = max(self.candidates, top_k)
        candidates, rest = documents[:count], documents[count:]
        keys = [self.document_key(doc) for doc in candidates]
        embeddings = {"query_embedding": query_embedding, "query_sparse_embedding": query_sparse_embedding}
        use_cache = getattr(self.ranker, "cacheable", True) is not False

        cached = self._cache.get_many("rerank", query, model, keys) if use_cache else {}
        misses: dict[str, Document] = {}
        for key, doc in zip(keys, candidates):
            if key not in cached:
                misses.setdefault(key, doc)
        fresh: dict[str, float] = {}
        added: dict[str, dict[str, Any]] = {}
        if misses:
            by_id, added_by_id = self._rerank(query, list(misses.values()), embeddings)
            fresh = {key: by_id[doc.id] for key, doc in misses.items() if doc.id in by_id}
            added = {key: added_by_id[doc.id] for key, doc in misses.items() if doc.id in added_by_id}
            if use_cache:
                self._cache.put_many("rerank", query, model, fresh)

        raws = [cached.get(key, fresh.get(key)) for key in keys]
        scores = self._transform(raws)
        reranked = [
            replace(
                candidates[i],
                meta={
                    **candidates[i].meta,
                    **added.get(keys[i], {}),
                    "rerank": {"score": scores[i], "raw": raws[i], "input_rank": i + 1},
                },
            )
            for i in order_known_scores(candidates, scores)
        ]
        others = [
            replace(doc, meta={**doc.meta, "rerank": {"input_rank": count + n + 1}}) for n, doc in enumerate(rest)
        ]
        return {"documents": reranked + others}
