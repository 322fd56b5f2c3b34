"""How much of an answer the chunks it cites support: each sentence checked against its citations."""

import re
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.core.serialization import component_to_dict
from haystack.dataclasses import ChatMessage

from haystack_integrations.components.embedders.fastembed.embedding_backend.fastembed_backend import (
    _FastembedEmbeddingBackendFactory,
)
from haystack_integrations.components.needle._citations import parse_citations, selects
from haystack_integrations.components.needle._index_models import by_name, without
from haystack_integrations.components.needle._llm_cache import load_component
from haystack_integrations.components.needle._scores import STOPWORDS, query_terms

logger = logging.getLogger(__name__)

_BRACKETS = re.compile(r"\[[^\[\]\n]*\]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_BULLET = re.compile(r"^\s*(?:[-*•+]|\d+[.)])\s+")
# Sentences that say the notes do not answer: not claims about the world.
_REFUSAL = re.compile(
    r"\b(?:do(?:es)?\s*n[o']t|did\s*n[o']t|cannot|can't)\s+(?:contain|mention|say|cover|include|provide|answer)"
    r"|\bno (?:information|mention)\b|\bnot (?:mentioned|covered|in the notes)\b",
    re.IGNORECASE,
)
_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "ed", "es", "ly", "s")
_JUDGE_PROMPT = """\
Passage:
{passage}

Claim: {claim}

Does the passage support the claim? Answer with one word: yes or no."""


def stem(word: str) -> str:
    """A crude English stem, enough to match `renewed` with `renewal` and `slots` with `slot`."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def sentences(answer: str) -> list[str]:
    """
    An answer's sentences (list items count as sentences), each keeping the citations that follow it:
    "Do X. [a.md:1-5] Then Y." gives "Do X. [a.md:1-5]" and "Then Y.".
    """
    out: list[str] = []
    for line in (answer or "").splitlines():
        line = _BULLET.sub("", line).strip()
        if not line:
            continue
        for piece in _SENTENCE_END.split(line):
            piece = piece.strip()
            leading = re.match(r"^(?:\[[^\[\]\n]*\]\s*)+", piece)
            if leading and out:
                out[-1] = f"{out[-1]} {leading.group(0).strip()}"
                piece = piece[leading.end() :].strip()
            if piece:
                out.append(piece)
    return out


def claim_terms(text: str) -> list[str]:
    """A claim's topic words, stemmed: three letters or more, stopwords and citations left out."""
    words = query_terms(_BRACKETS.sub(" ", text))
    return list(dict.fromkeys(stem(w) for w in words if w not in STOPWORDS))


def term_overlap(claim: str, support: str) -> float:
    """The share of a claim's topic words (stemmed) that occur in the supporting text."""
    terms = claim_terms(claim)
    if not terms:
        return 0.0
    present = {stem(w) for w in re.findall(r"[\w][\w'-]*", support.lower())}
    return sum(1 for t in terms if t in present) / len(terms)


@component
class ClaimCoverage:
    """
    Measures an answer's claim coverage: the share of its sentences that the chunks they cite support.

    An answer can cite a note and still say something the note does not. Each sentence of the answer that
    makes a claim (at least `min_claim_terms` topic words; "the notes do not say" is no claim) is checked
    against the chunks it cites as `[path:start-end]`, or, if it cites none, against every chunk the answer
    cites: it is covered when enough of its topic words occur in them (`min_term_overlap`, stems compared)
    or when it is close enough in meaning to one of their sentences (`min_similarity`, cosine of the
    index's embedding model, run offline). With a `chat_generator` (a judge LLM) each claim is instead asked
    about ("does the passage support the claim? yes or no"); an unusable answer falls back to the offline
    check for that claim, with a warning. No claim means no coverage (`None`). Haystack's evaluators
    (`FaithfulnessEvaluator`) need an LLM for every claim and do not read line-anchored citations.

    Usage example:
    ```python
    coverage = ClaimCoverage(dense_model="BAAI/bge-small-en-v1.5")
    coverage.run(answer="Set wal_level to logical [howto/pg.md:12-20].", documents=chunks)["coverage"]  # 1.0
    ```
    """

    def __init__(
        self,
        min_term_overlap: float = 0.6,
        min_similarity: float = 0.6,
        min_claim_terms: int = 3,
        max_sentences: int = 60,
        dense_model: str | None = None,
        dense_model_kwargs: dict[str, Any] | None = None,
        dense_local_files_only: bool | None = None,
        dense_cache_dir: str | None = None,
        threads: int | None = None,
        chat_generator: Any = None,
        dense_embedder: Any = None,
    ) -> None:
        """
        Create the coverage check.

        :param min_term_overlap: Share of a claim's topic words its citations must contain to cover it.
        :param min_similarity: Cosine between the claim and one sentence of its citations that covers it;
            1.0 or more turns the embedding check off.
        :param min_claim_terms: Topic words a sentence needs to count as a claim.
        :param max_sentences: At most this many sentences of the cited chunks are embedded per answer.
        :param dense_model: fastembed model of the embedding check; default: the index's, from Needle's settings
            (with its folder: the `dense_*` parameters left out are filled in too).
        :param dense_model_kwargs: Extra fastembed arguments.
        :param dense_local_files_only: Load the model without a hub.
        :param dense_cache_dir: fastembed cache folder.
        :param threads: ONNX threads.
        :param chat_generator: A Haystack chat generator (or its serialised mapping) that judges each claim.
        :param dense_embedder: A served query embedder (or its mapping) that embeds in place of the fastembed
            model; default, when the index's model runs on a server: that server's.
        :raises ValueError: On `min_term_overlap` outside [0, 1], a negative `min_similarity`, or
            `min_claim_terms` / `max_sentences` below 1.
        """
        if not 0.0 <= min_term_overlap <= 1.0:
            raise ValueError(f"min_term_overlap must be within [0, 1], got {min_term_overlap}")
        if min_similarity < 0.0:
            raise ValueError(f"min_similarity must be >= 0, got {min_similarity}")
        for name, value in (("min_claim_terms", min_claim_terms), ("max_sentences", max_sentences)):
            if value < 1:
                raise ValueError(f"{name} must be > 0, got {value}")
        self.min_term_overlap = min_term_overlap
        self.min_similarity = min_similarity
        self.min_claim_terms = min_claim_terms
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
        self.chat_generator = load_component(chat_generator, "chat_generator") if chat_generator is not None else None
        self.dense_embedder = values["dense_embedder"]
        self._dense: Any = None

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component, the judge included."""
        data = default_to_dict(
            self,
            min_term_overlap=self.min_term_overlap,
            min_similarity=self.min_similarity,
            min_claim_terms=self.min_claim_terms,
            max_sentences=self.max_sentences,
            dense_model=self.dense_model,
            dense_model_kwargs=self.dense_model_kwargs,
            dense_local_files_only=self.dense_local_files_only,
            dense_cache_dir=self.dense_cache_dir,
            threads=self.threads,
            chat_generator=component_to_dict(self.chat_generator, "chat_generator") if self.chat_generator else None,
            dense_embedder=component_to_dict(self.dense_embedder, "dense_embedder") if self.dense_embedder else None,
        )
        return without(data, self._from_settings)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ClaimCoverage":
        """Deserialise the component, the nested judge first (so that the environment reaches it)."""
        params = dict(data.get("init_parameters", {}))
        for key in ("chat_generator", "dense_embedder"):
            if params.get(key) is not None:
                params[key] = load_component(params[key], key)
        return default_from_dict(cls, {**data, "init_parameters": params})

    def warm_up(self) -> None:
        """Load (or share) the embedding model when the embedding check is on; a second call does nothing."""
        if self._dense is None and self.min_similarity < 1.0 and self.dense_embedder is not None:
            self._dense = self.dense_embedder  # a served embedder: `embed(texts)` like fastembed's backend
        if self._dense is None and self.min_similarity < 1.0:
            self._dense = _FastembedEmbeddingBackendFactory.get_embedding_backend(
                model_name=self.dense_model,
                cache_dir=self.dense_cache_dir,
                threads=self.threads,
                local_files_only=self.dense_local_files_only,
                model_kwargs=self.dense_model_kwargs,
            )
        if self.chat_generator is not None and hasattr(self.chat_generator, "warm_up"):
            self.chat_generator.warm_up()

    def _similarities(self, claims: list[str], supports: list[list[Document]]) -> list[float]:
        """Each claim's best cosine with one sentence of its supporting chunks."""
        if self.min_similarity >= 1.0:
            return [0.0] * len(claims)
        self.warm_up()
        pool: dict[str, None] = {}
        for docs in supports:
            for doc in docs:
                for sentence in sentences(doc.content or ""):
                    if len(pool) < self.max_sentences:
                        pool.setdefault(sentence, None)
        if not pool:
            return [0.0] * len(claims)
        texts = list(pool)
        vectors = np.asarray(
            list(self._dense.embed([*(_BRACKETS.sub(" ", c) for c in claims), *texts], progress_bar=False))
        )
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        claim_vectors, sentence_vectors = vectors[: len(claims)], vectors[len(claims) :]
        index = {text: i for i, text in enumerate(texts)}
        out = []
        for vector, docs in zip(claim_vectors, supports):
            own = [index[s] for doc in docs for s in sentences(doc.content or "") if s in index]
            out.append(float(max((sentence_vectors[own] @ vector), default=0.0)) if own else 0.0)
        return out

    def _judge(self, claim: str, docs: list[Document]) -> bool | None:
        """The judge's verdict on one claim; `None` when it failed or answered neither yes nor no."""
        assert self.chat_generator is not None
        passage = "\n\n".join(doc.content or "" for doc in docs)[:6000]
        try:
            replies = (
                self.chat_generator.run(
                    messages=[
                        ChatMessage.from_user(_JUDGE_PROMPT.format(passage=passage, claim=_BRACKETS.sub("", claim)))
                    ]
                ).get("replies")
                or []
            )
        except Exception as error:
            logger.warning("The coverage judge failed: {error}", error=error)
            return None
        words = re.findall(r"[a-z]+", " ".join(r.text or "" for r in replies if hasattr(r, "text")).lower())
        first = next((w for w in words if w in ("yes", "no")), None)
        return None if first is None else first == "yes"

    @component.output_types(coverage=float | None, claims=list[dict[str, Any]], uncovered=list[str], warnings=list[str])
    def run(self, answer: str, documents: list[Document], cited: list[Document] | None = None) -> dict[str, Any]:
        """
        Check every claim of the answer against its citations.

        :param answer: The generated answer, citing chunks as `[path:start-end]`.
        :param documents: The chunks the answer was given.
        :param cited: The chunks the answer cites (`CitationExtractor`'s `cited`); read from the answer when `None`.
        :returns: A dictionary with `coverage` (covered claims / claims, `None` without claims), `claims`
            (`text`, `covered`, `term_overlap`, `similarity`, `judged`, `citations` per claim), `uncovered`
            (the uncovered claims' text, citations removed) and `warnings`.
        """
        claims = [
            s for s in sentences(answer) if not _REFUSAL.search(s) and len(claim_terms(s)) >= self.min_claim_terms
        ]
        if not claims:
            return {"coverage": None, "claims": [], "uncovered": [], "warnings": []}
        everything = (
            cited if cited is not None else [d for c in parse_citations(answer) for d in documents if selects(c, d)]
        )
        supports = []
        for claim in claims:
            own = [d for c in parse_citations(claim) for d in documents if selects(c, d)]
            supports.append(list({d.id: d for d in (own or everything)}.values()))
        similarity = self._similarities(claims, supports)
        rows, warnings = [], []
        for claim, docs, sim in zip(claims, supports, similarity):
            overlap = term_overlap(claim, " ".join(d.content or "" for d in docs)) if docs else 0.0
            covered = bool(docs) and (overlap >= self.min_term_overlap or sim >= self.min_similarity)
            judged = None
            if self.chat_generator is not None and docs:
                judged = self._judge(claim, docs)
                if judged is None:
                    warnings.append("the judge LLM gave no verdict on a claim; it was checked offline")
                else:
                    covered = judged
            rows.append(
                {
                    "text": _BRACKETS.sub("", claim).strip(),
                    "covered": covered,
                    "term_overlap": round(overlap, 4),
                    "similarity": round(sim, 4),
                    "judged": judged,
                    "citations": [
                        f"{d.meta.get('path', '')}:{d.meta.get('start_line', '')}-{d.meta.get('end_line', '')}"
                        for d in docs
                    ],
                }
            )
        coverage = sum(bool(r["covered"]) for r in rows) / len(rows)
        return {
            "coverage": round(coverage, 4),
            "claims": rows,
            "uncovered": [r["text"] for r in rows if not r["covered"]],
            "warnings": list(dict.fromkeys(warnings)),
        }
