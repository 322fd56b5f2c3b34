"""Offline reranking: rescore fused candidates by their files' exact BM25 and cosine scores."""

import math
import random
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from haystack import Document, component, default_to_dict, logging
from haystack.dataclasses.sparse_embedding import SparseEmbedding

from haystack_integrations.components.needle._store_deserialization import with_document_store
from haystack_integrations.document_stores.needle.access import searchable
from haystack_integrations.document_stores.needle.protocol import BestScore
from needle.core.checks import OptionalQueryVector, QueryVector, check_top_k
from needle.core.documents import replace
from needle.core.schema import FILE_ID

logger = logging.getLogger(__name__)

_COSINE_SCALES = ("best", "raw")
# BM25's term-frequency saturation in fastembed's `Qdrant/bm25` (k1): a term's score is at most (k1 + 1) times its IDF.
_K1 = 1.2
# How long a store's document count is reused for the terms' specificity (it moves the result by its logarithm).
_COUNT_SECONDS = 60.0
# A collection's balance is measured again once its chunk count moved by more than this share.
_BALANCE_DRIFT = 0.1
# The metadata field naming a chunk's collection (each collection learns its own balance).
_COLLECTION = "collection"
# A pseudo-question: a file's first chunk's most frequent terms, less its rarest ones (the page's own name and
# codes), so what is left are the words a question about the page would share with its neighbours.
_PSEUDO_TERMS = 12
_PSEUDO_DROP = 3
# The files a pseudo-question's lead is read among (BM25's best chunks' files): the lead needs only the first two.
_LEAD_CANDIDATES = 10


@component
class HybridScoreRanker:
    """
    Reranks candidate files by `bm25_weight * bm25 + (1 - bm25_weight) * cosine`, each signal exact and scaled.

    Reciprocal rank fusion keeps ranks and throws the scores away, and a file that only one list retrieved
    gets nothing from the other. This ranker asks the store for the exact score of each candidate file's best
    chunk per signal (one search per file and signal, scores only; every search a store answers, the query
    terms' best scores included, goes to it in one batch). The cosine is
    divided by the best candidate's; the BM25 score by the best the query could reach (the sum, over its
    terms, of the best single-term score in the index), so a file that matches one incidental word of a
    paraphrased question scores low instead of being stretched to 1 by min-max scaling. It needs no model of
    its own (the query's embeddings come from the graph) and is the offline default of the rerank stage: no
    cross-encoder installs offline, and this rescoring is what lifts the hybrid graph on SciFact and on the
    golden set (see docs/evaluation.md, Ablation). Haystack's rankers either run a model (cross-encoders, LLMs) or
    sort by metadata; none rescores with the store's scores.

    With a `file_document_store` (whole-file documents, see `FileDocumentBuilder`) each signal is read
    twice, for the file's best chunk and for its whole text, each normalised as above, and mixed by
    `file_weight`: words or meaning spread over several chunks then still count. With `bm25_weight` at
    1.0 or 0.0 it is a single-signal ranker, which is how `search.yml` and `vsearch.yml` score files.

    Keyword matches on common words are weak evidence. With `common_bm25_weight`, the BM25 weight follows how
    specific the query's words are in the collection: a term's specificity is its best single-term score as a
    share of the best any term can reach there (a term found once, `(k1 + 1) · ln(1 + (N − 0.5) / 1.5)` for
    N chunks), and the query's is that of its `specific_terms`-th most specific term. From the lower bound of
    `specificity` down the weight is `common_bm25_weight`, from the upper bound up `bm25_weight`, linear
    between. A how-to question in plain words over thousands of similar reference pages ("delete a folder
    and everything in it") then leans on meaning, while a question naming two rare things (a drug and a
    gene, `pg_dump` and `--format`) keeps its keywords' full weight. One rare word alone is not enough: it
    is as often the name of another page (`watch` in "watch a log file as new lines are written").

    When the two sides disagree, the stronger evidence should decide, and keyword evidence is strong when one
    file stands out. With `lead_margin`, BM25's weight also follows the lead of the best candidate's BM25 over
    the second's (both as shares of what the query could reach): a lead of `lead_margin` or more keeps the
    weight, no lead keeps `lead_floor` of it, linear between. Over many similar pages that share the question's
    words about equally (a how-to question in plain words over reference pages) meaning then settles more of
    the order; a question whose words pick out one file (a name, a code, a title) keeps its keywords' weight.

    How much a keyword lead is worth differs by collection: over thousands of reference pages that share
    their words, a question's words rarely pick out its page, while over scientific abstracts they usually
    do. With `balance_samples`, the collection teaches its own balance: `balance_samples` of its files
    (seeded) each make a pseudo-question from their own terms (the whole file's, or its first chunk's
    without a `file_document_store`), the most frequent less the rarest (its name and codes, which a
    question in plain words does not say), and the median lead of BM25's best file over the second on them
    (as above) is the collection's keyword lead. BM25's weight is multiplied by `balance_floor` where that
    lead is `balance_leads`' lower bound or less, by 1 from its upper bound, linearly between. It is
    measured once per collection, at its first query (a fraction of a second for 1,500 files), and again
    when the collection's chunk count moved by more than a tenth; each result's `meta["hybrid"]` shows the
    collection's `collection_lead` and the `collection_balance` it gave.

    The cosine part is relative to the candidate set, so scores are not cached per document:
    `cacheable = False` tells `CandidateReranker` to skip its cache.

    Usage example:
    ```python
    ranker = HybridScoreRanker(document_store=store, bm25_weight=0.5)
    ranker.run(query="q", documents=candidates, query_embedding=vector, query_sparse_embedding=sparse)
    ```
    """

    cacheable = False

    def __init__(
        self,
        document_store: Any,
        bm25_weight: float = 0.5,
        group_by: str = FILE_ID,
        file_document_store: Any = None,
        file_weight: float = 0.5,
        cosine_scale: str = "best",
        common_bm25_weight: float | None = None,
        specificity: list[float] | None = None,
        specific_terms: int = 2,
        lead_margin: float | None = None,
        lead_floor: float = 0.8,
        balance_samples: int = 0,
        balance_leads: list[float] | None = None,
        balance_floor: float = 0.2,
    ) -> None:
        """
        Create the ranker.

        :param document_store: A Needle document store (or qdrant-haystack's `QdrantDocumentStore`); its
            `best_scores()` runs one batch of searches per query (`BestScore`).
        :param bm25_weight: Weight of the normalised BM25 score; the cosine gets the rest. At 1.0 the ranker
            needs no dense query embedding, at 0.0 no sparse one.
        :param group_by: Metadata field naming a document's file; candidates are scored per file.
        :param file_document_store: The store of whole-file documents (see `FileDocumentBuilder`); when given,
            each signal mixes the file's best chunk and its whole text.
        :param file_weight: The whole text's share of each signal when `file_document_store` is given.
        :param cosine_scale: `best` divides each cosine by the best candidate's (the best file always gets
            1.0); `raw` keeps the cosine (clamped to [0, 1]), so a query nothing resembles stays low.
        :param common_bm25_weight: The BM25 weight for a query whose words are common in the collection;
            `None` weighs every query `bm25_weight`.
        :param specificity: The range `[low, high]` of the query's specificity over which its BM25 weight
            moves from `common_bm25_weight` to `bm25_weight` (default `[0.3, 0.45]`).
        :param specific_terms: How many of the query's terms must be specific: the query's specificity is
            that of its n-th most specific term (of its least specific, when it has fewer).
        :param lead_margin: The lead of the best candidate's BM25 over the second's (both as shares of what the
            query could reach) from which BM25 keeps its whole weight (`None`: the lead does not count).
        :param lead_floor: The share of its weight BM25 keeps when no candidate leads (two tie).
        :param balance_samples: Pseudo-questions per collection that measure its keyword lead (0: BM25's
            weight does not follow the collection).
        :param balance_leads: The range `[low, high]` of the collection's keyword lead over which BM25's
            multiplier moves from `balance_floor` to 1 (default `[0.15, 0.3]`).
        :param balance_floor: BM25's multiplier in a collection whose keyword lead is `low` or less.
        :raises ValueError: When a store is not one Needle's components can search (`searchable`), a weight
            is outside [0, 1],
            `cosine_scale` is unknown, `specificity` is not two bounds `0 <= low < high <= 1` or
            `specific_terms` is below 1, `lead_margin` is not within (0, 1] or `lead_floor` not within [0, 1],
            `balance_samples` is negative, `balance_leads` not two bounds `0 <= low < high <= 1` or
            `balance_floor` not within [0, 1].
        """
        self._store = searchable(document_store)
        self._file_store = None if file_document_store is None else searchable(file_document_store)
        if not 0.0 <= bm25_weight <= 1.0:
            raise ValueError(f"bm25_weight must be within [0, 1], got {bm25_weight}")
        if not 0.0 <= file_weight <= 1.0:
            raise ValueError(f"file_weight must be within [0, 1], got {file_weight}")
        if cosine_scale not in _COSINE_SCALES:
            raise ValueError(f"cosine_scale must be one of {_COSINE_SCALES}, got {cosine_scale!r}")
        if common_bm25_weight is not None and not 0.0 <= common_bm25_weight <= 1.0:
            raise ValueError(f"common_bm25_weight must be within [0, 1], got {common_bm25_weight}")
        specificity = list(specificity) if specificity is not None else [0.3, 0.45]
        if len(specificity) != 2 or not 0.0 <= specificity[0] < specificity[1] <= 1.0:
            raise ValueError(f"specificity must be [low, high] with 0 <= low < high <= 1, got {specificity}")
        if specific_terms < 1:
            raise ValueError(f"specific_terms must be > 0, got {specific_terms}")
        if lead_margin is not None and not 0.0 < lead_margin <= 1.0:
            raise ValueError(f"lead_margin must be within (0, 1], got {lead_margin}")
        if not 0.0 <= lead_floor <= 1.0:
            raise ValueError(f"lead_floor must be within [0, 1], got {lead_floor}")
        if balance_samples < 0:
            raise ValueError(f"balance_samples must be >= 0, got {balance_samples}")
        balance_leads = list(balance_leads) if balance_leads is not None else [0.15, 0.3]
        if len(balance_leads) != 2 or not 0.0 <= balance_leads[0] < balance_leads[1] <= 1.0:
            raise ValueError(f"balance_leads must be [low, high] with 0 <= low < high <= 1, got {balance_leads}")
        if not 0.0 <= balance_floor <= 1.0:
            raise ValueError(f"balance_floor must be within [0, 1], got {balance_floor}")
        self.document_store = document_store
        self.bm25_weight = bm25_weight
        self.group_by = group_by
        self.file_document_store = file_document_store
        self.file_weight = file_weight
        self.cosine_scale = cosine_scale
        self.common_bm25_weight = common_bm25_weight
        self.specificity = specificity
        self.specific_terms = specific_terms
        self.lead_margin = lead_margin
        self.lead_floor = lead_floor
        self.balance_samples = balance_samples
        self.balance_leads = balance_leads
        self.balance_floor = balance_floor
        self._count: tuple[float, int] | None = None
        # collection → (its chunk count when measured, its keyword lead or None, its multiplier)
        self._balances: dict[str, tuple[int, float | None, float]] = {}
        self._balance_lock = threading.Lock()
        self._chunk_counts: tuple[Any, dict[str, int]] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Serialise the ranker and its stores."""
        return default_to_dict(
            self,
            document_store=self.document_store.to_dict(),
            bm25_weight=self.bm25_weight,
            group_by=self.group_by,
            file_document_store=self.file_document_store.to_dict() if self.file_document_store is not None else None,
            file_weight=self.file_weight,
            cosine_scale=self.cosine_scale,
            common_bm25_weight=self.common_bm25_weight,
            specificity=self.specificity,
            specific_terms=self.specific_terms,
            lead_margin=self.lead_margin,
            lead_floor=self.lead_floor,
            balance_samples=self.balance_samples,
            balance_leads=self.balance_leads,
            balance_floor=self.balance_floor,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "HybridScoreRanker":
        """Deserialise the ranker; the stores are rebuilt from their own dictionaries."""
        data = with_document_store(with_document_store(data), "file_document_store", optional=True)
        return cls(**data["init_parameters"])

    def _file(self, doc: Document) -> str:
        return str(doc.meta.get(self.group_by, doc.id))

    def _levels(self) -> list[tuple[str, Any, float]]:
        """(name, store, weight) of each level a signal is read at."""
        if self._file_store is None or self.file_weight == 0.0:
            return [("chunk", self._store, 1.0)]
        levels = [("file", self._file_store, self.file_weight)]
        if self.file_weight < 1.0:
            levels.insert(0, ("chunk", self._store, 1.0 - self.file_weight))
        return levels

    def _read(
        self, files: list[str], sparse: SparseEmbedding | None, dense: QueryVector | None
    ) -> dict[str, dict[str, Any]]:
        """
        Every score the signals need, one batch of engine calls per level's store: each file's best BM25 and
        cosine there (files without a scored document left out) and each query term's best single-term score.

        :returns: level name → `bm25`, `terms`, `cosine` (those the weights need).
        """
        read: dict[str, dict[str, Any]] = {}
        for name, store, _weight in self._levels():
            lexical = BestScore.per_value(self.group_by, files, sparse=sparse) if sparse is not None else []
            terms = BestScore.per_term(sparse) if sparse is not None else []
            semantic = BestScore.per_value(self.group_by, files, dense=dense) if dense is not None else []
            scores = store.best_scores([*lexical, *terms, *semantic])
            read[name] = {}
            if sparse is not None:
                read[name]["bm25"] = _by_file(files, scores[: len(lexical)])
                read[name]["terms"] = [
                    0.0 if score is None else score for score in scores[len(lexical) : len(lexical) + len(terms)]
                ]
            if dense is not None:
                read[name]["cosine"] = _by_file(files, scores[len(lexical) + len(terms) :])
        return read

    def _lexical(
        self, files: list[str], read: dict[str, dict[str, Any]], trace: dict[str, dict[str, float]]
    ) -> dict[str, float]:
        """BM25 per file and level, divided by the best score the query could reach there, mixed by level."""

        def normalise(level: str, scores: dict[str, float], name: str) -> dict[str, float]:
            # The best the query could reach: each term's best single-term score, summed.
            terms = [float(t) for t in read[level]["terms"]]
            ceiling = sum(terms)
            trace[f"{name}bm25_ceiling"] = dict.fromkeys(files, ceiling)
            # The share of the query's terms that no document has (the ceiling leaves them out).
            trace[f"{name}bm25_unknown"] = dict.fromkeys(
                files, sum(1 for t in terms if t <= 0) / len(terms) if terms else 0.0
            )
            return {f: min(score / ceiling, 1.0) for f, score in scores.items()} if ceiling > 0 else {}

        return self._mix(files, read, trace, "bm25", normalise)

    def _semantic(
        self, files: list[str], read: dict[str, dict[str, Any]], trace: dict[str, dict[str, float]]
    ) -> dict[str, float]:
        """Cosine per file and level (divided by the best candidate's there, unless `raw`), mixed by level."""

        def normalise(_level: str, scores: dict[str, float], _name: str) -> dict[str, float]:
            best = max(scores.values(), default=0.0) if self.cosine_scale == "best" else 1.0
            return {f: min(max(score, 0.0) / best, 1.0) for f, score in scores.items()} if best > 0 else {}

        return self._mix(files, read, trace, "cosine", normalise)

    def _mix(
        self,
        files: list[str],
        read: dict[str, dict[str, Any]],
        trace: dict[str, dict[str, float]],
        signal: str,
        normalise: Callable[[str, dict[str, float], str], dict[str, float]],
    ) -> dict[str, float]:
        """
        One signal per file, mixed over the levels read.

        A file with a chunk score but no whole-file score has no whole-file document (it was indexed before
        whole files were), or its matching words lie past `FileDocumentBuilder.max_chars`: its chunk value
        stands in for the missing one.
        """
        mixed = dict.fromkeys(files, 0.0)
        chunk_values: dict[str, float] = {}
        for name, _store, weight in self._levels():
            prefix = "" if name == "chunk" else "file_"
            scores = read[name][signal]
            trace[f"{prefix}{signal}"] = {f: scores.get(f, 0.0) for f in files}
            values = normalise(name, scores, prefix)
            for f in files:
                value = values.get(f)
                if value is None:
                    value = chunk_values.get(f, 0.0) if f not in scores else 0.0
                mixed[f] += weight * value
            if name == "chunk":
                chunk_values = {f: values.get(f, 0.0) for f in files if f in scores}
        return mixed

    def _documents(self) -> int:
        """The chunk store's document count, counted again after `_COUNT_SECONDS`."""
        now = time.monotonic()
        if self._count is None or now - self._count[0] > _COUNT_SECONDS:
            self._count = (now, int(self.document_store.count_documents()))
        return self._count[1]

    def specificity_of(self, terms: list[float], documents: int | None = None) -> float:
        """
        How specific a query's words are in the collection (0..1): its `specific_terms`-th most specific term's.

        :param terms: Each query term's best single-term BM25 score among the chunks (0 for a term no chunk has).
        :param documents: The chunks in the store; counted (and the count reused for a minute) when `None`.
        """
        documents = self._documents() if documents is None else documents
        found = sorted((t for t in terms if t > 0), reverse=True)
        if not found or documents < 1:
            return 0.0
        reachable = (_K1 + 1.0) * math.log(1.0 + (documents - 0.5) / 1.5)
        nth = found[min(self.specific_terms, len(found)) - 1]
        return min(nth / reachable, 1.0) if reachable > 0 else 0.0

    def weight_for(self, specificity: float) -> float:
        """The BM25 weight of a query of this specificity (`bm25_weight` without `common_bm25_weight`)."""
        if self.common_bm25_weight is None:
            return self.bm25_weight
        low, high = self.specificity
        share = min(max((specificity - low) / (high - low), 0.0), 1.0)
        return self.common_bm25_weight + share * (self.bm25_weight - self.common_bm25_weight)

    def lead_of(self, lexical: dict[str, float]) -> float:
        """How far the best candidate's normalised BM25 leads the second's (the best's own when it is alone)."""
        best = sorted(lexical.values(), reverse=True)[:2]
        if not best:
            return 0.0
        return best[0] - (best[1] if len(best) > 1 else 0.0)

    def weighed_by_lead(self, weight: float, lead: float) -> float:
        """`weight` times `lead_floor` with no lead, whole from a lead of `lead_margin` (unchanged without it)."""
        if self.lead_margin is None:
            return weight
        return weight * (self.lead_floor + (1.0 - self.lead_floor) * min(lead / self.lead_margin, 1.0))

    def pseudo_questions(self, collection: str) -> list[SparseEmbedding]:
        """
        The collection's pseudo-questions: for `balance_samples` of its files (seeded, so the same index gives
        the same ones), the `_PSEUDO_TERMS` most frequent terms of the whole file (of its first chunk without
        a file store) less the `_PSEUDO_DROP` rarest of them.
        """
        where = {"field": f"meta.{_COLLECTION}", "operator": "==", "value": collection}
        store = self._file_store if self._file_store is not None else self._store
        if store is self._file_store:
            # Whole-file documents: one per file, listed without reading the chunks.
            files = sorted(str(row["id"]) for row in store.list_documents_meta(where, fields=[]))
            ids = random.Random(0).sample(files, min(self.balance_samples, len(files)))
        else:
            first: dict[str, tuple[int, str]] = {}
            for row in store.list_documents_meta(where, fields=[self.group_by, "start_line"]):
                meta = row.get("meta") or {}
                key, line = str(meta.get(self.group_by, row["id"])), int(meta.get("start_line") or 0)
                if key not in first or (line, row["id"]) < first[key]:
                    first[key] = (line, row["id"])
            files = sorted(first)
            chosen = random.Random(0).sample(files, min(self.balance_samples, len(files)))
            ids = [first[f][1] for f in chosen]
        documents = store.filter_documents({"field": "id", "operator": "in", "value": ids}) if ids else []
        frequent = []
        for doc in sorted(documents, key=lambda d: d.id):
            sparse = doc.sparse_embedding
            if sparse is None or len(sparse.indices) <= _PSEUDO_DROP + 1:
                continue
            top = sorted(zip(sparse.values, sparse.indices), reverse=True)[:_PSEUDO_TERMS]
            frequent.append([int(index) for _value, index in top])
        # How rare each term is: its best single-term score (a rarer term scores higher).
        terms = sorted({t for found in frequent for t in found})
        rarity = (
            dict(
                zip(
                    terms,
                    self._store.best_scores(
                        BestScore.per_term(SparseEmbedding(indices=terms, values=[1.0] * len(terms)))
                    ),
                )
            )
            if terms
            else {}
        )
        questions = []
        for found in frequent:
            kept = sorted(found, key=lambda t: rarity.get(t) or 0.0)[: len(found) - _PSEUDO_DROP]
            questions.append(SparseEmbedding(indices=sorted(kept), values=[1.0] * len(kept)))
        return questions

    def keyword_lead(self, collection: str) -> float | None:
        """The median lead of BM25's best file over its second on the collection's pseudo-questions (`None`: none)."""
        where = {"field": f"meta.{_COLLECTION}", "operator": "==", "value": collection}
        leads = []
        for question in self.pseudo_questions(collection):
            found = self._store.query_sparse(question, top_k=_LEAD_CANDIDATES, filters=where, fields=[self.group_by])
            files = list(dict.fromkeys(self._file(doc) for doc in found))
            if not files:
                continue
            read = self._read(files, question, None)
            leads.append(self.lead_of(self._lexical(files, read, {})))
        return statistics.median(leads) if leads else None

    def multiplier_for(self, lead: float) -> float:
        """BM25's multiplier in a collection of this keyword lead: `balance_floor` up to 1 over `balance_leads`."""
        low, high = self.balance_leads
        return self.balance_floor + (1.0 - self.balance_floor) * min(max((lead - low) / (high - low), 0.0), 1.0)

    def _chunks_per_collection(self) -> dict[str, int]:
        """
        Chunks per collection, counted again only when the store changed (its `changes()`), or after
        `_COUNT_SECONDS` for a store that does not say: counting them costs milliseconds, a query should not.
        """
        changes = getattr(self._store, "changes", None)
        stamp: Any = changes() if callable(changes) else int(time.monotonic() // _COUNT_SECONDS)
        if self._chunk_counts is None or self._chunk_counts[0] != stamp:
            counts = {str(k): int(v) for k, v in self._store.count_values(_COLLECTION).items()}
            self._chunk_counts = (stamp, counts)
        return self._chunk_counts[1]

    def balance_of(self, collection: str) -> tuple[float | None, float]:
        """The collection's keyword lead and BM25's multiplier there, measured at need (see the class docs)."""
        if self.balance_samples == 0:
            return None, 1.0
        with self._balance_lock:
            chunks = self._chunks_per_collection().get(collection, 0)
            known = self._balances.get(collection)
            if known is None or abs(chunks - known[0]) > _BALANCE_DRIFT * max(known[0], 1):
                started = time.monotonic()
                try:
                    lead = self.keyword_lead(collection)
                except Exception as error:  # the balance is a refinement: a store that cannot give it keeps 1
                    logger.warning(
                        "Collection {collection}'s balance could not be measured, BM25 keeps its weight: {error}",
                        collection=collection,
                        error=error,
                    )
                    lead = None
                logger.info(
                    "Collection {collection}: keyword lead {lead} on {samples} pseudo-questions ({seconds:.1f} s)",
                    collection=collection,
                    lead=lead,
                    samples=self.balance_samples,
                    seconds=time.monotonic() - started,
                )
                multiplier = 1.0 if lead is None else self.multiplier_for(lead)
                known = (chunks, lead, multiplier)
                self._balances[collection] = known
            return known[1], known[2]

    def rescore(
        self,
        documents: list[Document],
        query_embedding: OptionalQueryVector = None,
        query_sparse_embedding: SparseEmbedding | None = None,
    ) -> list[tuple[float, dict[str, Any]]]:
        """
        The new score of each candidate and the metadata `run` adds to it, without building any document.

        `CandidateReranker` reads these instead of the documents `run` returns: it builds each reranked
        document once, with every field it changes.

        :param documents: Candidates, one per file.
        :param query_embedding: The query's dense embedding.
        :param query_sparse_embedding: The query's sparse (BM25) embedding.
        :returns: One `(score, {"hybrid": ...})` per document, in input order (see `run`).
        :raises ValueError: When an embedding the weights need is missing.
        """
        if not documents:
            return []
        if self.bm25_weight < 1.0 and query_embedding is None:
            raise ValueError("HybridScoreRanker needs query_embedding (its bm25_weight is below 1)")
        if self.bm25_weight > 0.0 and query_sparse_embedding is None:
            raise ValueError("HybridScoreRanker needs query_sparse_embedding (its bm25_weight is above 0)")
        files = list(dict.fromkeys(self._file(doc) for doc in documents))
        read = self._read(
            files,
            query_sparse_embedding if self.bm25_weight > 0.0 else None,
            query_embedding if self.bm25_weight < 1.0 else None,
        )
        trace: dict[str, dict[str, float]] = {}
        mixed = dict.fromkeys(files, 0.0)
        weight = self.bm25_weight
        if self.common_bm25_weight is not None and 0.0 < self.bm25_weight < 1.0 and "chunk" in read:
            specificity = self.specificity_of([float(t) for t in read["chunk"]["terms"]])
            weight = self.weight_for(specificity)
            trace["specificity"] = dict.fromkeys(files, round(specificity, 4))
            trace["bm25_weight"] = dict.fromkeys(files, round(weight, 4))
        if self.bm25_weight > 0.0:
            lexical = self._lexical(files, read, trace)
            if self.lead_margin is not None and self.bm25_weight < 1.0:
                lead = self.lead_of(lexical)
                weight = self.weighed_by_lead(weight, lead)
                trace["bm25_lead"] = dict.fromkeys(files, round(lead, 4))
                trace["bm25_weight"] = dict.fromkeys(files, round(weight, 4))
            if self.balance_samples and self.bm25_weight < 1.0:
                collection_lead, multiplier = self._balance([doc.meta.get(_COLLECTION) for doc in documents])
                weight = min(weight * multiplier, 1.0)
                if collection_lead is not None:
                    trace["collection_lead"] = dict.fromkeys(files, round(collection_lead, 4))
                trace["collection_balance"] = dict.fromkeys(files, round(multiplier, 4))
                trace["bm25_weight"] = dict.fromkeys(files, round(weight, 4))
            for f, value in lexical.items():
                mixed[f] += weight * value
        if self.bm25_weight < 1.0:
            for f, value in self._semantic(files, read, trace).items():
                mixed[f] += (1.0 - weight) * value
        keys = [self._file(doc) for doc in documents]
        return [(mixed[key], {"hybrid": {name: values[key] for name, values in trace.items()}}) for key in keys]

    def _balance(self, collections: list[Any]) -> tuple[float | None, float]:
        """The candidates' collections' lead and multiplier, each collection counted by its candidates."""
        named = [str(c) for c in collections if c is not None]
        if not named:
            return None, 1.0
        balances = {c: self.balance_of(c) for c in set(named)}
        multiplier = sum(balances[c][1] for c in named) / len(named)
        leads = [lead for lead in (balances[c][0] for c in named) if lead is not None]
        return (sum(leads) / len(leads) if leads else None), multiplier

    @component.output_types(documents=list[Document])
    def run(
        self,
        query: str,
        documents: list[Document],
        top_k: int | None = None,
        query_embedding: OptionalQueryVector = None,
        query_sparse_embedding: SparseEmbedding | None = None,
    ) -> dict[str, list[Document]]:
        """
        Rescore and sort the candidates; only the `top_k` returned are built as new documents.

        :param query: The user's query (unused: the embeddings carry it; kept for the ranker interface).
        :param documents: Candidates, one per file.
        :param top_k: How many to return; all when `None`.
        :param query_embedding: The query's dense embedding.
        :param query_sparse_embedding: The query's sparse (BM25) embedding.
        :returns: A dictionary with `documents`, best first, `score` in [0, 1] and `meta["hybrid"]` holding
            the file's exact scores at each level read (`bm25`, `cosine`, `file_bm25`, `file_cosine`), the
            query's `bm25_ceiling` (`file_bm25_ceiling`) and the share of its terms no document has
            (`bm25_unknown`, `file_bm25_unknown`); with `common_bm25_weight`, also the query's `specificity`
            and the `bm25_weight` it got; with `lead_margin`, the best candidate's lead (`bm25_lead`) and the
            `bm25_weight` it left.
        :raises ValueError: When `top_k` is below 1 or an embedding the weights need is missing.
        """
        check_top_k(top_k, optional=True)
        scored = self.rescore(documents, query_embedding, query_sparse_embedding)
        # A stable sort of the positions: ties keep their input order.
        order = sorted(range(len(documents)), key=lambda i: -scored[i][0])
        return {
            "documents": [
                replace(documents[i], score=scored[i][0], meta={**documents[i].meta, **scored[i][1]})
                for i in (order if top_k is None else order[:top_k])
            ]
        }


def _by_file(files: list[str], found: list[float | None]) -> dict[str, float]:
    """Each file's score from one batch of engine answers (in `files`' order), files without one left out."""
    return {f: score for f, score in zip(files, found) if score is not None}
