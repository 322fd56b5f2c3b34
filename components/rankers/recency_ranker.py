"""Recency as a ranking signal of its own: a 0..1 decay of each result's date, mixed with its relevance."""

import datetime
import math
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from haystack_integrations.components.needle._dates import reference_time
from needle.core.documents import replace


@component
class RecencyRanker:
    """
    Mixes a recency score into the final scores when a request asks for the newest notes.

    Each result's document date (`meta.date`: frontmatter, file name or modification time) becomes a
    recency score in 0..1 that halves every `half_life_days`: `0.5 ** (age / half_life)`, 1 for a note
    dated at the reference time or later; a result without a date scores 0. The age counts from `now`
    (`reference: now`) or from the newest of the `reference_top_k` most relevant results
    (`reference: newest`, the default): "the latest kestrel sync" asks for the newest of the relevant
    notes, however long ago it was written, and a notes archive may not have been touched for months. The final score is `(1 - weight) · relevance +
    weight · recency`, relevance being the graph's own 0..1 score, so a timestamp is never compared with a
    relevance score; results are sorted again. Off unless switched on (`enabled`, per request: `--recent`,
    or `SelfQueryExtractor` when the question asks for the newest); off, it returns its input untouched.
    Both Qdrant engines have decay functions in their score formulas, but in these graphs the final order
    comes from the rerank stage after retrieval, so the signal is mixed in here (see docs/filters.md).
    Haystack's `MetaFieldRanker` ranks by a metadata value but reads dates as plain values, not ages.

    Usage example:
    ```python
    RecencyRanker(half_life_days=30, weight=0.3).run(documents=results, enabled=True, now="2024-06-15T00:00:00Z")
    ```
    """

    def __init__(
        self,
        half_life_days: float = 30.0,
        weight: float = 0.3,
        enabled: bool = False,
        reference: str = "newest",
        reference_top_k: int = 5,
    ) -> None:
        """
        Create the ranker.

        :param half_life_days: Age at which the recency score is 0.5.
        :param weight: Share of recency in the final score, 0..1.
        :param enabled: Mix recency in when a request does not say.
        :param reference: Count ages from `now` or from the `newest` relevant result.
        :param reference_top_k: With `reference: newest`, how many of the most relevant results the newest
            date is taken from.
        :raises ValueError: When `half_life_days` or `reference_top_k` is not positive, `weight` is outside
            0..1 or `reference` is neither `now` nor `newest`.
        """
        if isinstance(reference_top_k, bool) or not isinstance(reference_top_k, int) or reference_top_k < 1:
            raise ValueError(f"reference_top_k must be an integer > 0, got {reference_top_k!r}")
        if reference not in ("now", "newest"):
            raise ValueError(f"reference must be 'now' or 'newest', got {reference!r}")
        if isinstance(half_life_days, bool) or not isinstance(half_life_days, (int, float)) or half_life_days <= 0:
            raise ValueError(f"half_life_days must be > 0, got {half_life_days!r}")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 <= weight <= 1:
            raise ValueError(f"weight must be between 0 and 1, got {weight!r}")
        self.half_life_days = half_life_days
        self.weight = weight
        self.enabled = enabled
        self.reference = reference
        self.reference_top_k = reference_top_k

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(
            self,
            half_life_days=self.half_life_days,
            weight=self.weight,
            enabled=self.enabled,
            reference=self.reference,
            reference_top_k=self.reference_top_k,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RecencyRanker":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(
        self, documents: list[Document], enabled: bool | None = None, now: str | None = None
    ) -> dict[str, list[Document]]:
        """
        Mix recency in.

        :param documents: Results with 0..1 scores and `meta.date` (RFC 3339).
        :param enabled: Switch recency on or off for this request; the init value when `None`.
        :param now: The reference time (ISO); the current time when `None`.
        :returns: A dictionary with `documents`: re-sorted by the mixed score, each with `meta["recency"]`
            (`date`, `score` and `relevance`), or the input untouched when off.
        """
        if not (self.enabled if enabled is None else enabled) or not documents:
            return {"documents": documents}
        moment = reference_time(now)
        if self.reference == "newest":
            leading = sorted(documents, key=lambda d: float(d.score or 0.0), reverse=True)[: self.reference_top_k]
            dates = [_parse(doc.meta.get("date")) for doc in leading]
            moment = max((d for d in dates if d is not None), default=moment)
        mixed = []
        for doc in documents:
            recency = self.decay(doc.meta.get("date"), moment)
            relevance = float(doc.score or 0.0)
            score = (1 - self.weight) * relevance + self.weight * recency
            meta = {**doc.meta, "recency": {"date": doc.meta.get("date"), "score": recency, "relevance": relevance}}
            mixed.append(replace(doc, score=score, meta=meta))
        mixed.sort(key=lambda d: d.score or 0.0, reverse=True)
        return {"documents": mixed}

    def decay(self, date: Any, now: datetime.datetime) -> float:
        """The recency score of one date (RFC 3339 string) at `now`: 0.5 per half-life of age, 0 without a date."""
        moment = _parse(date)
        if moment is None:
            return 0.0
        age_days = (now - moment).total_seconds() / 86400
        return 1.0 if age_days <= 0 else math.pow(0.5, age_days / self.half_life_days)


def _parse(date: Any) -> datetime.datetime | None:
    """An RFC 3339 date as a naive UTC datetime; `None` when missing or unreadable."""
    if not isinstance(date, str) or not date:
        return None
    try:
        return reference_time(date)
    except ValueError:
        return None
