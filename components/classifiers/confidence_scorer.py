"""How likely the top result answers the query: a 0..1 confidence from signals the graph already computed."""

import math
import re
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict

from haystack_integrations.components.embedders.fastembed.embedding_backend.fastembed_backend import (
    _FastembedEmbeddingBackendFactory,
)
from haystack_integrations.components.needle._index_models import by_name, without
from haystack_integrations.components.needle._llm_cache import load_component
from haystack_integrations.components.needle._scores import query_terms
from haystack_integrations.components.needle._text import contains_term, exact_terms, is_content

# The signals, each on 0..1; a weight per signal (and a bias) in the graph's YAML.
FEATURES = (
    "rerank",
    "cosine",
    "bm25",
    "unknown",
    "exact",
    "exact_missing",
    "agreement",
    "support",
    "margin",
    "filter",
    "words",
    "words_unseen",
    "sentence",
)


def _cosine(doc: Document) -> float | None:
    """The document's raw cosine with the query: the exact rescore (best chunk, whole file), else the fused lists'."""
    hybrid = doc.meta.get("hybrid") or {}
    levels = [hybrid[k] for k in ("cosine", "file_cosine") if hybrid.get(k) is not None]
    if levels:
        return min(max(max(levels), 0.0), 1.0)
    kinds = [e.get("score") for e in (doc.meta.get("fusion") or {}).values() if e.get("kind") == "cosine"]
    kinds = [s for s in kinds if s is not None]
    if kinds:
        return min(max(max(kinds), 0.0), 1.0)
    if doc.meta.get("score_kind") == "cosine" and doc.score is not None:
        return min(max(float(doc.score), 0.0), 1.0)
    return None


def _bm25(doc: Document) -> float | None:
    """
    The document's BM25 evidence: its score as a share of the best the query could reach (chunk and whole
    file, the better one; scaled by the share of the query's terms the index has at all), where the graph
    rescored it; else the fused lists' `s / (1 + s)`.
    """
    hybrid = doc.meta.get("hybrid") or {}
    shares = []
    for level in ("", "file_"):
        score, ceiling = hybrid.get(f"{level}bm25"), hybrid.get(f"{level}bm25_ceiling")
        if score is not None and ceiling is not None:
            # Terms no document has cannot be matched: they count against the share, not out of it.
            known = 1.0 - float(hybrid.get(f"{level}bm25_unknown") or 0.0)
            shares.append(min(float(score) / float(ceiling), 1.0) * known if ceiling > 0 else 0.0)
    if shares:
        return max(shares)
    kinds = [e.get("score") for e in (doc.meta.get("fusion") or {}).values() if e.get("kind") == "bm25"]
    kinds = [s for s in kinds if s is not None]
    if kinds:
        return max(kinds)
    if doc.meta.get("score_kind") == "bm25" and doc.score is not None:
        return float(doc.score)
    return None


def _lexical_ranks(doc: Document) -> tuple[int | None, int | None]:
    """The document's best rank in any BM25 list and in any vector list of the fusion (0-based)."""
    best: dict[str, int] = {}
    for entry in (doc.meta.get("fusion") or {}).values():
        kind = entry.get("kind")
        if kind in ("bm25", "cosine") and entry.get("rank") is not None:
            best[kind] = min(best.get(kind, entry["rank"]), entry["rank"])
    return best.get("bm25"), best.get("cosine")


def _words(query: str) -> list[str]:
    """The query's words that carry meaning (filler left out), a long one cut to its first 5 letters as a stem."""
    return list(dict.fromkeys(word[:5] if len(word) >= 6 else word for word in query_terms(query)))


def _text(doc: Document) -> str:
    """A document's text, title, headings and path, lower-cased: where a query's words are looked for."""
    meta = doc.meta
    return " ".join(
        [
            doc.content or "",
            str(meta.get("title", "")),
            " ".join(meta.get("heading_path") or []),
            str(meta.get("path", "")),
        ]
    ).lower()


def _score(doc: Document) -> float:
    rerank = (doc.meta.get("rerank") or {}).get("score")
    return float(rerank if rerank is not None else doc.score or 0.0)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_BULLET = re.compile(r"^\s*(?:[-*+>|]|\d+[.)])\s+")


def sentences_of(text: str, limit: int = 40) -> list[str]:
    """
    A chunk's sentences: its lines that carry content (no heading, fence, rule or blank line), split at
    sentence ends, list markers dropped, the first `limit` of more than 3 characters.
    """
    out: list[str] = []
    for line in (text or "").split("\n"):
        if not is_content(line):
            continue
        for piece in _SENTENCE_END.split(_BULLET.sub("", line)):
            if len(piece.strip()) > 3 and len(out) < limit:
                out.append(piece.strip())
    return out


def collect_signals(
    documents: list[Document],
    query: str,
    candidates: list[Document] | None = None,
    filters_engaged: bool = False,
    agreement_depth: int = 5,
    support_depth: int = 4,
    support_min: float = 0.5,
    sub_questions: list[str] | None = None,
    embed: Any = None,
    max_sentences: int = 24,
) -> dict[str, float]:
    """
    Every signal that can be read for the top result (a missing one is left out).

    :param documents: The results returned, best first.
    :param query: The query.
    :param candidates: The ranked list before the cutoff (the results' own list when `None`), for the
        signals that look past the top result: agreement, support and margin.
    :param filters_engaged: Whether a metadata filter narrowed the search.
    :param sub_questions: The parts a multi-part question was split into: the word signals are those of the
        part the top result holds best.
    :param embed: A function embedding texts (`list[str] -> vectors`) with the index's dense model: the
        `sentence` signal is the best cosine between the query (or one of its parts) and one sentence of
        the top result; left out without it.
    :param max_sentences: At most this many sentences of the top result are embedded.
    :returns: Signal name → value on 0..1.
    """
    if not documents:
        return {}
    pool = candidates if candidates else documents
    top = documents[0]
    signals: dict[str, float] = {}
    rerank = (top.meta.get("rerank") or {}).get("score")
    if rerank is not None:
        signals["rerank"] = float(rerank)
    for name, value in (("cosine", _cosine(top)), ("bm25", _bm25(top))):
        if value is not None:
            signals[name] = value
    unknown = (top.meta.get("hybrid") or {}).get("bm25_unknown")
    if unknown is not None:
        signals["unknown"] = float(unknown)
    ranks = [_lexical_ranks(d) for d in pool[:agreement_depth]]
    if any(b is not None for b, _ in ranks) and any(v is not None for _, v in ranks):
        both = sum(
            1 for b, v in ranks if b is not None and v is not None and b < agreement_depth and v < agreement_depth
        )
        signals["agreement"] = both / agreement_depth
    others = pool[1 : 1 + support_depth]
    evidence = [max(x for x in (_cosine(d), _bm25(d), 0.0) if x is not None) for d in others]
    signals["support"] = sum(1 for e in evidence if e >= support_min) / support_depth
    signals["margin"] = min(max(_score(pool[0]) - (_score(pool[1]) if len(pool) > 1 else 0.0), 0.0), 1.0)
    signals["filter"] = 1.0 if filters_engaged else 0.0
    # A question split into parts: the words of the part the top result holds best (it answers one part).
    texts = [_text(d) for d in pool]
    lexical = [_lexical(asked, _text(top), texts) for asked in (sub_questions or [query])]
    best: dict[str, float] = max(lexical, key=lambda read: (read.get("words", 0.0), read.get("exact", 0.0)))
    signals.update(best)
    if embed is not None:
        sentence = _best_sentence(embed, [query, *(sub_questions or [])], top.content or "", max_sentences)
        if sentence is not None:
            signals["sentence"] = sentence
    return signals


def _best_sentence(embed: Any, asked: list[str], text: str, max_sentences: int) -> float | None:
    """The best cosine between one of the asked texts and one sentence of `text` (clamped to 0..1)."""
    found = sentences_of(text, max_sentences)
    if not found:
        return None
    asked = list(dict.fromkeys(asked))
    vectors = np.asarray(embed([*asked, *found]), dtype=np.float32)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    best = float((vectors[len(asked) :] @ vectors[: len(asked)].T).max())
    return min(max(best, 0.0), 1.0)


def _lexical(query: str, top: str, pool: list[str]) -> dict[str, float]:
    """
    The signals read off the words of a query: the share of its identifiers and quoted phrases the top result
    holds verbatim (`exact`) and lacks (`exact_missing`), the share of its words (or their stems) the top result
    holds (`words`) and the share no candidate holds (`words_unseen`).

    :param query: The query, or one part of it.
    :param top: The top result's text (`_text`).
    :param pool: The candidates' texts.
    """
    signals: dict[str, float] = {}
    terms = exact_terms(query)
    if terms:
        hit = sum(contains_term(top, term) for term in terms) / len(terms)
        signals["exact"] = hit
        signals["exact_missing"] = 1.0 - hit
    words = _words(query)
    if words:
        signals["words"] = sum(1 for w in words if w in top) / len(words)
        signals["words_unseen"] = sum(1 for w in words if not any(w in t for t in pool)) / len(words)
    return signals


@component
class ConfidenceScorer:
    """
    Gives a response a confidence in 0..1 that its top result answers the query.

    A label says PASS or not; an agent deciding whether to answer, or to say "I don't know", needs a number
    that means the same thing on every query. This component reads the signals the graph already computed
    for the top result and its neighbours, each on 0..1: its rerank score, its cosine with the query, its
    BM25 score as a share of the best the query could reach, the share of the query's terms no document has
    (a query about something the notes never mention), how many of the query's identifiers and quoted
    phrases it contains verbatim (and how many it lacks), how far the BM25 and vector lists agree on the top
    files, how many other files carry evidence of their own, its lead over the second result, whether a
    metadata filter narrowed the search, the share of the query's words (or their stems) the top result holds
    and the share no candidate holds (a question about something the notes never mention, also where no
    BM25 ran), and, with `sentence_check`, the query's best cosine with one sentence of the top result by the
    index's dense model (`sentence`: a paraphrase sharing no word with its note still finds the sentence
    that answers it, while a question that only shares a stock phrase with a chunk, "which tools do I need
    for ...", finds no such sentence). It combines them by logistic regression,
    `sigmoid(bias + sum(weight * signal))`, whose weights are fitted per graph on labelled queries
    (`needle eval calibration --fit`), so the number reads as a probability. A missing signal adds nothing.
    The signals come from the traces earlier stages leave on the documents: `meta["rerank"]`
    (`CandidateReranker`), `meta["hybrid"]` (`HybridScoreRanker`'s exact scores), `meta["fusion"]`
    (`WeightedRRFJoiner`'s ranks and scores per list); after Haystack's own stages, which leave none, a
    document's own score stands for its kind (`meta["score_kind"]`) and the rank and agreement signals are
    missing.
    When an answer was generated, its claim coverage scales the result by
    `1 - coverage_weight * (1 - coverage)`; an answer graph scores its search once and hands that confidence
    to a second scorer after the answer (`confidence` input), which only applies the coverage. No result
    means 0. Haystack has no confidence component.

    Usage example:
    ```python
    scorer = ConfidenceScorer(weights={"rerank": 2.0, "cosine": 4.0, "bm25": 3.0, "exact": 1.5}, bias=-4.0)
    scorer.run(documents=results, query="pg_dump custom format")["confidence"]  # e.g. 0.93
    ```
    """

    def __init__(
        self,
        weights: dict[str, float] | None = None,
        bias: float = 0.0,
        coverage_weight: float = 0.5,
        agreement_depth: int = 5,
        support_depth: int = 4,
        support_min: float = 0.5,
        sentence_check: bool = False,
        max_sentences: int = 24,
        dense_model: str | None = None,
        dense_model_kwargs: dict[str, Any] | None = None,
        dense_local_files_only: bool | None = None,
        dense_cache_dir: str | None = None,
        threads: int | None = None,
        dense_embedder: Any = None,
    ) -> None:
        """
        Create the scorer.

        :param weights: Weight per signal (`FEATURES`); signals not named weigh 0.
        :param bias: The logistic regression's intercept.
        :param coverage_weight: How much an answer's uncovered claims lower the confidence (0 ignores coverage,
            1 scales it by the coverage itself).
        :param agreement_depth: How many leading results the BM25 and vector lists must share to agree fully.
        :param support_depth: How many results after the top one are checked for evidence of their own.
        :param support_min: The cosine or BM25 share a result needs to count as support.
        :param sentence_check: Read the `sentence` signal: the query's best cosine with one sentence of the
            top result, by the index's dense model (loaded at warm-up; a graph with a dense model shares it).
        :param max_sentences: At most this many sentences of the top result are embedded per query.
        :param dense_model: fastembed model of the sentence check; default: the index's, from Needle's settings
            (with its folder: the `dense_*` parameters left out are filled in too).
        :param dense_model_kwargs: Extra fastembed arguments.
        :param dense_local_files_only: Load the model without a hub.
        :param dense_cache_dir: fastembed cache folder.
        :param threads: ONNX threads.
        :param dense_embedder: A served query embedder (or its mapping) that embeds in place of the fastembed
            model; default, when the index's model runs on a server: that server's.
        :raises ValueError: On an unknown signal, a weight or bias that is not a finite number, a
            `coverage_weight` or `support_min` outside [0, 1], or a depth or `max_sentences` below 1.
        """
        weights = dict(weights or {})
        unknown = set(weights) - set(FEATURES)
        if unknown:
            raise ValueError(f"weights name unknown signals {sorted(unknown)}; use some of {', '.join(FEATURES)}")
        for name, value in [*weights.items(), ("bias", bias)]:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"weight {name} must be a finite number, got {value!r}")
        for name, value in (("coverage_weight", coverage_weight), ("support_min", support_min)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be within [0, 1], got {value}")
        for name, value in (
            ("agreement_depth", agreement_depth),
            ("support_depth", support_depth),
            ("max_sentences", max_sentences),
        ):
            if value < 1:
                raise ValueError(f"{name} must be > 0, got {value}")
        self.weights = {name: float(value) for name, value in weights.items()}
        self.bias = float(bias)
        self.coverage_weight = coverage_weight
        self.agreement_depth = agreement_depth
        self.support_depth = support_depth
        self.support_min = support_min
        self.sentence_check = sentence_check
        self.max_sentences = max_sentences
        embedder = load_component(dense_embedder, "dense_embedder") if dense_embedder is not None else None
        values, self._from_settings = by_name(
            "dense", dense_model, dense_model_kwargs, dense_local_files_only, dense_cache_dir, embedder
        )
        self.dense_model = values["dense_model"]
        self.dense_model_kwargs = values["dense_model_kwargs"]
        self.dense_local_files_only = values["dense_local_files_only"]
        self.dense_cache_dir = values["dense_cache_dir"]
        self.threads = threads
        self.dense_embedder = values["dense_embedder"]
        self._dense: Any = None

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        from haystack.core.serialization import component_to_dict

        data = default_to_dict(
            self,
            weights=self.weights,
            bias=self.bias,
            coverage_weight=self.coverage_weight,
            agreement_depth=self.agreement_depth,
            support_depth=self.support_depth,
            support_min=self.support_min,
            sentence_check=self.sentence_check,
            max_sentences=self.max_sentences,
            dense_model=self.dense_model,
            dense_model_kwargs=self.dense_model_kwargs,
            dense_local_files_only=self.dense_local_files_only,
            dense_cache_dir=self.dense_cache_dir,
            threads=self.threads,
            dense_embedder=component_to_dict(self.dense_embedder, "dense_embedder") if self.dense_embedder else None,
        )
        return without(data, self._from_settings)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ConfidenceScorer":
        """Deserialise the component (a served embedder included)."""
        params = dict(data.get("init_parameters") or {})
        if params.get("dense_embedder") is not None:
            params["dense_embedder"] = load_component(params["dense_embedder"], "dense_embedder")
        return default_from_dict(cls, {**data, "init_parameters": params})

    def warm_up(self) -> None:
        """Load (or share) the dense model when the sentence check is on; a second call does nothing."""
        if self._dense is None and self.sentence_check:
            self._dense = self.dense_embedder or _FastembedEmbeddingBackendFactory.get_embedding_backend(
                model_name=self.dense_model,
                cache_dir=self.dense_cache_dir,
                threads=self.threads,
                local_files_only=self.dense_local_files_only,
                model_kwargs=self.dense_model_kwargs,
            )

    def _embed(self, texts: list[str]) -> list[Any]:
        """
        The texts' vectors by the dense model (loaded on first use), in batches of 4 texts of similar length:
        a batch is padded to its longest text, so one long line would otherwise make every short one cost as
        much (`python -m eval.confidence_cost`).
        """
        self.warm_up()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors: list[Any] = [None] * len(texts)
        for start in range(0, len(order), 4):
            batch = order[start : start + 4]
            for i, vector in zip(batch, self._dense.embed([texts[i] for i in batch], progress_bar=False), strict=True):
                vectors[i] = vector
        return vectors

    def combine(self, signals: dict[str, float], coverage: float | None = None) -> float:
        """
        The confidence for a set of signals.

        :param signals: Signal name → value (missing ones add nothing).
        :param coverage: An answer's claim coverage in 0..1, if any.
        :returns: The confidence in 0..1.
        """
        z = self.bias + sum(self.weights.get(name, 0.0) * value for name, value in signals.items())
        confidence = 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))
        if coverage is not None:
            confidence *= 1.0 - self.coverage_weight * (1.0 - min(max(coverage, 0.0), 1.0))
        return confidence

    @component.output_types(confidence=float, signals=dict[str, float])
    def run(
        self,
        documents: list[Document],
        query: str,
        candidates: list[Document] | None = None,
        filters_engaged: bool | None = None,
        coverage: float | None = None,
        confidence: float | None = None,
        sub_questions: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """
        Score the response.

        :param documents: The results returned, best first.
        :param query: The query.
        :param candidates: The ranked list before the cutoff, so that the confidence does not depend on how
            many results were asked for; the results themselves when `None`.
        :param filters_engaged: Whether a metadata filter narrowed the search (`None`: no filter).
        :param coverage: The share of an answer's claims its citations cover, when there is an answer.
        :param confidence: The confidence another scorer already gave these results (an answer graph's search):
            only the coverage is applied to it, so that the answer keeps the search's weights.
        :param sub_questions: A decomposed question's parts (`QueryDecomposer`'s `variants`, `{"text": ...}` each):
            the word signals are read for the part the top result holds best.
        :returns: A dictionary with `confidence` (0..1, rounded to 4 places; 0 without results) and
            `signals` (each signal read, on 0..1, plus `coverage` when given; only `search` and `coverage`
            with `confidence`).
        """
        if not documents:
            return {"confidence": 0.0, "signals": {}}
        if confidence is not None:
            signals = {"search": float(confidence)}
            factor = 1.0 if coverage is None else 1.0 - self.coverage_weight * (1.0 - min(max(coverage, 0.0), 1.0))
            confidence = float(confidence) * factor
        else:
            parts = [str(v["text"]) for v in sub_questions or [] if v.get("origin") != "step_back" and v.get("text")]
            signals = collect_signals(
                documents,
                query,
                candidates,
                bool(filters_engaged),
                self.agreement_depth,
                self.support_depth,
                self.support_min,
                parts or None,
                self._embed if self.sentence_check else None,
                self.max_sentences,
            )
            confidence = self.combine(signals, coverage)
        if coverage is not None:
            signals = {**signals, "coverage": float(coverage)}
        return {"confidence": round(confidence, 4), "signals": {k: round(v, 4) for k, v in signals.items()}}
