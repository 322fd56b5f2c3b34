"""Protect first-place hits after fusion."""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from needle.core.documents import replace
from needle.core.schema import BONUS, FUSION


@component
class TopRankBonus:
    """
    Adds a bonus to documents that some ranked list put first (`rank1_bonus`) or second or third
    (`rank23_bonus`), then re-sorts.

    Reciprocal rank fusion flattens the difference between first and fifth place; an exact keyword hit
    that BM25 ranks first can sink below documents that several noisy lists ranked moderately. The bonus,
    from qmd, keeps such confident hits on top. It reads the trace of Needle's fusion stage
    (`WeightedRRFJoiner`'s `meta["fusion"]`: each list's rank of the document), so that a document first in
    any list gets the bonus; a document without that trace (after Haystack's `DocumentJoiner`, or any other
    stage) is ranked by its place in the list it is given, so the first gets `rank1_bonus` and the next two
    `rank23_bonus`. It records what it added in `meta["bonus"]`. Documents of one file (same fused score
    and trace) stay together.

    Usage example:
    ```python
    TopRankBonus(rank1_bonus=0.05, rank23_bonus=0.02).run(documents=fused)["documents"]
    ```
    """

    def __init__(self, rank1_bonus: float = 0.05, rank23_bonus: float = 0.02) -> None:
        """
        Create the stage.

        :param rank1_bonus: Added when a list ranked the document first.
        :param rank23_bonus: Added when the best rank in any list is second or third.
        :raises ValueError: On a negative bonus.
        """
        if rank1_bonus < 0 or rank23_bonus < 0:
            raise ValueError(f"bonuses must be >= 0, got {rank1_bonus} and {rank23_bonus}")
        self.rank1_bonus = rank1_bonus
        self.rank23_bonus = rank23_bonus

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(self, rank1_bonus=self.rank1_bonus, rank23_bonus=self.rank23_bonus)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TopRankBonus":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """
        Apply the bonus.

        :param documents: Fused documents, best first; those with `meta["fusion"]` (list name → `{"rank":
            0-based}`) are ranked by it, the others by their place here.
        :returns: A dictionary with `documents`, re-sorted by score (stable).
        """
        out = []
        for position, doc in enumerate(documents):
            ranks = [entry["rank"] for entry in (doc.meta.get(FUSION) or {}).values()]
            best = min(ranks) if ranks else position
            bonus = self.rank1_bonus if best == 0 else self.rank23_bonus if best in (1, 2) else 0.0
            out.append(replace(doc, score=(doc.score or 0.0) + bonus, meta={**doc.meta, BONUS: bonus}))
        out.sort(key=lambda d: -(d.score or 0.0))
        return {"documents": out}
