"""Score semantics and query terms shared by Needle's query-stage components.

BM25 scores are unbounded and corpus-dependent; cosine similarities live in [-1, 1]. They are never
compared raw: where a score is shown, gated or tested against a threshold, BM25 becomes
`s / (1 + s)` (monotonic, query-independent, as qmd does) and cosine is clamped to [0, 1].
"""

import re
from pathlib import Path
from typing import Any

from haystack import Document

from needle.core.documents import replace
from needle.core.schema import FILE_ID, FUSION, SCORE_KIND

WORD = re.compile(r"[\w][\w'-]*", re.UNICODE)
# Words that carry no topic even when longer than two letters.
FILLER = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "what",
        "how",
        "why",
        "who",
        "whom",
        "when",
        "where",
        "which",
        "does",
        "did",
        "are",
        "was",
        "were",
        "has",
        "have",
        "had",
        "can",
        "could",
        "should",
        "would",
        "will",
        "not",
        "but",
        "from",
        "into",
        "onto",
        "about",
        "this",
        "that",
        "these",
        "those",
        "there",
        "their",
        "them",
        "they",
        "you",
        "your",
        "our",
        "its",
        "any",
        "all",
        "some",
        "more",
        "most",
        "much",
        "many",
        "very",
        "just",
        "also",
        "than",
        "then",
        "get",
        "got",
        "use",
        "using",
        "used",
    ]
)


STOPWORDS = frozenset((Path(__file__).parent / "data" / "english_stopwords.txt").read_text().split())


def normalize_bm25(score: float | None) -> float:
    """Map a BM25 score (>= 0) into [0, 1): `s / (1 + s)`."""
    s = max(float(score or 0.0), 0.0)
    return s / (1.0 + s)


def clamp_cosine(score: float | None) -> float:
    """Clamp a cosine similarity into [0, 1]."""
    return min(max(float(score or 0.0), 0.0), 1.0)


NORMALIZERS = {"bm25": normalize_bm25, "cosine": clamp_cosine}


def normalised(documents: list[Document], kind: str) -> list[Document]:
    """
    Copies of `documents` with scores on 0..1 by `kind` (`bm25` or `cosine`), the raw score kept.

    :returns: The documents with `score` normalised, `meta["raw_score"]` and `meta["score_kind"]` set.
    :raises KeyError: On an unknown kind (callers validate it first).
    """
    normalize = NORMALIZERS[kind]
    return [
        replace(d, score=normalize(d.score), meta={**d.meta, "raw_score": d.score, "score_kind": kind})
        for d in documents
    ]


def check_score_kind(kind: str | None, optional: bool = False) -> None:
    """:raises ValueError: Unless `kind` names a normaliser (or is `None` and `optional`)."""
    if kind is None and optional:
        return
    if kind not in NORMALIZERS:
        raise ValueError(f"score kind must be one of {sorted(NORMALIZERS)}, got {kind!r}")


def query_terms(text: str, min_length: int = 3) -> list[str]:
    """Distinct lower-cased words of at least `min_length` letters, filler words left out, in order."""
    seen: dict[str, None] = {}
    for word in WORD.findall(text.lower()):
        if len(word) >= min_length and word not in FILLER:
            seen.setdefault(word, None)
    return list(seen)


def term_hits(text: str, terms: list[str]) -> tuple[int, int]:
    """How many distinct `terms` occur in `text` (case-insensitive), and how many occurrences in all."""
    return lowered_term_hits(text.lower(), terms)


def lowered_term_hits(lowered: str, terms: list[str]) -> tuple[int, int]:
    """`term_hits` of a text already lower-cased (to count several term lists in it without lowering it again)."""
    counts = [lowered.count(term) for term in terms]
    return sum(1 for c in counts if c), sum(counts)


def strong_signal(probe: list[Document], min_score: float, min_gap: float, group_by: str = FILE_ID) -> bool:
    """
    Whether a normalised BM25 probe is decisive: its best file scores at least `min_score` and leads the
    second file by at least `min_gap` (qmd skips query expansion then).

    :param probe: BM25 results with normalised scores, best first.
    """
    best: dict[Any, float] = {}
    for doc in probe:
        key = doc.meta.get(group_by, doc.id)
        best[key] = max(best.get(key, 0.0), float(doc.score or 0.0))
    ranked = sorted(best.values(), reverse=True)
    if not ranked:
        return False
    second = ranked[1] if len(ranked) > 1 else 0.0
    return ranked[0] >= min_score and ranked[0] - second >= min_gap


def fused_scores(doc: Document) -> dict[str, float]:
    """
    The best normalised score a document got per kind (`bm25`, `cosine`) across the lists Needle's fusion stage
    fused (its trace, `meta["fusion"]`); a document without that trace (from Haystack's `DocumentJoiner`, or
    straight from a retriever) has its own score, of the kind its retriever noted (`meta["score_kind"]`).
    """
    best: dict[str, float] = {}
    trace = doc.meta.get(FUSION)
    if not trace:
        kind = doc.meta.get(SCORE_KIND)
        return {kind: float(doc.score)} if kind and doc.score is not None else {}
    for entry in trace.values():
        kind = entry.get("kind")
        if kind and entry.get("score") is not None:
            best[kind] = max(best.get(kind, 0.0), float(entry["score"]))
    return best


def order_known_scores(documents: list[Document], scores: list[float | None]) -> list[int]:
    """
    The output order of `documents` given their scores, some unknown.

    Documents with an unknown score (`None`) keep their input position; the scored ones fill the other
    positions by descending score (ties keep input order). An unknown score is thus neither a 0 that
    buries the document nor a guess: the retrieval order stands where no judgement exists.

    :returns: Input indices in output order.
    """
    known = {i: s for i, s in enumerate(scores) if s is not None}
    fill = iter(sorted(known, key=lambda i: -known[i]))
    return [i if scores[i] is None else next(fill) for i in range(len(documents))]
