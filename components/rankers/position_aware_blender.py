"""Blend retrieval rank and rerank score, trusting retrieval more at the top."""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from needle.core.documents import replace

_BY = ("rank", "score")


@component
class PositionAwareBlender:
    """
    Final score = `w * retrieval + (1 - w) * rerank_score`, with `w` by fused rank: `top_weight` for ranks
    1 to `top_ranks`, `mid_weight` up to `mid_ranks`, `tail_weight` beyond.

    A reranker that reads one chunk can overturn a ranking that several signals agreed on; qmd found that
    trusting retrieval more at the top (75/60/40) keeps exact hits first while letting the reranker
    rescue good documents from lower ranks. Reads `meta["rerank"]` (`score` in 0..1, `input_rank`
    1-based) written by the rerank stage; documents without a rerank score blend with 0. Without any
    rerank scores (reranking off) the order is left as it is. The retrieval part is `1 / rank` (`by:
    rank`, qmd's) or the fused score the document arrived with divided by the best one among the documents
    (`by: score`): then the fusion's weights and the top-rank bonus move the final order by how far apart
    they put two files, not only by which comes first, and a small `w` lets them settle near-ties of the
    reranker without overturning it.

    Usage example:
    ```python
    PositionAwareBlender().run(documents=reranked)["documents"]
    ```
    """

    def __init__(
        self,
        top_weight: float = 0.75,
        mid_weight: float = 0.60,
        tail_weight: float = 0.40,
        top_ranks: int = 3,
        mid_ranks: int = 10,
        by: str = "rank",
    ) -> None:
        """
        Create the blender.

        :param by: The retrieval part: `rank` (`1 / fused rank`) or `score` (the fused score over the best one).
        :raises ValueError: On a weight outside [0, 1], rank bounds that are not 1 <= top <= mid, or an unknown `by`.
        """
        for name, weight in (("top_weight", top_weight), ("mid_weight", mid_weight), ("tail_weight", tail_weight)):
            if not 0.0 <= weight <= 1.0:
                raise ValueError(f"{name} must be within [0, 1], got {weight}")
        if not 1 <= top_ranks <= mid_ranks:
            raise ValueError(f"need 1 <= top_ranks <= mid_ranks, got {top_ranks} and {mid_ranks}")
        if by not in _BY:
            raise ValueError(f"by must be one of {_BY}, got {by!r}")
        self.top_weight = top_weight
        self.mid_weight = mid_weight
        self.tail_weight = tail_weight
        self.top_ranks = top_ranks
        self.mid_ranks = mid_ranks
        self.by = by

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(
            self,
            top_weight=self.top_weight,
            mid_weight=self.mid_weight,
            tail_weight=self.tail_weight,
            top_ranks=self.top_ranks,
            mid_ranks=self.mid_ranks,
            by=self.by,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "PositionAwareBlender":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    def weight(self, rank: int) -> float:
        """The retrieval weight for a 1-based fused rank."""
        if rank <= self.top_ranks:
            return self.top_weight
        if rank <= self.mid_ranks:
            return self.mid_weight
        return self.tail_weight

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """
        Blend and re-sort.

        :param documents: Documents with `meta["rerank"]` from the rerank stage.
        :returns: A dictionary with `documents` sorted by blended score (`meta["blend"]` explains it).
        """
        if not any((d.meta.get("rerank") or {}).get("score") is not None for d in documents):
            return {"documents": documents}
        best = max((float(d.score or 0.0) for d in documents), default=0.0)
        out = []
        for position, doc in enumerate(documents, 1):
            rerank = doc.meta.get("rerank") or {}
            rank = int(rerank.get("input_rank") or position)
            score = float(rerank.get("score") or 0.0)
            w = self.weight(rank)
            retrieval = 1 / rank if self.by == "rank" else (float(doc.score or 0.0) / best if best > 0 else 0.0)
            final = w * retrieval + (1 - w) * score
            out.append(
                replace(
                    doc,
                    score=final,
                    meta={
                        **doc.meta,
                        "fused_score": doc.score,
                        "blend": {"weight": w, "fused_rank": rank, "retrieval": retrieval, "rerank": score},
                    },
                )
            )
        out.sort(key=lambda d: -(d.score or 0.0))
        return {"documents": out}
