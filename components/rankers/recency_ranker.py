"""Dates as ranking signals of their own: a 0..1 decay of each result's date, and whether it falls in the question's period."""

import datetime
import math
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from haystack_integrations.components.needle._dates import reference_time
from needle.core.documents import replace


@component
class RecencyRanker:
    """
    Mixes a note's date into the final scores: recency when a request asks for the newest notes, and a bonus
    for notes dated in the period a question names.

    Each result's document date (`meta.date`: frontmatter, then a date in the file name or path, then the
    file's modification time, `meta.date_source` saying which) becomes a recency score in 0..1 that halves
    every `half_life_days`: `0.5 ** (age / half_life)`, 1 for a note dated at the reference time or later; a
    result without a date scores 0. A date that is only the file's modification time counts `file_time_weight`
    of that (a note copied or touched today is not a note written today), and is not the newest date the ages
    count from while some leading result has a date of its own. The age counts from `now` (`reference: now`)
    or from the newest of the `reference_top_k` most relevant results (`reference: newest`, the default): "the
    latest kestrel sync" asks for the newest of the relevant notes, however long ago it was written, and a
    notes archive may not have been touched for months.

    A `period` (the dates a question named, from `SelfQueryExtractor`: "in March" in "the 1099 that arrived in
    March") gives each result dated in it a bonus of 1 (`file_time_weight` for a file time), 0 outside: the
    notes of that time rank first, and the others stay. The final score is `(1 - weight - period_weight) ·
    relevance + weight · recency + period_weight · in_period` (each weight counting only when its signal is on),
    relevance being the graph's own 0..1 score, so a timestamp is never compared with a relevance score;
    results are sorted again. Off unless switched on (`enabled`, per request: `--recent`, or
    `SelfQueryExtractor` when the question asks for the newest) or given a period; off, it returns its input
    untouched. Both Qdrant engines have decay functions in their score formulas, but in these graphs the final
    order comes from the rerank stage after retrieval, so the signals are mixed in here (see docs/filters.md).
    Haystack's `MetaFieldRanker` ranks by a metadata value but reads dates as plain values, not ages.

    Usage example:
    ```python
    RecencyRanker(half_life_days=30, weight=0.3).run(documents=results, enabled=True, now="2024-06-15T00:00:00Z")
    RecencyRanker().run(documents=results, period={"after": "2026-03-01T00:00:00Z", "before": "2026-04-01T00:00:00Z"})
    ```
    """

    def __init__(
        self,
        half_life_days: float = 30.0,
        weight: float = 0.3,
        enabled: bool = False,
        reference: str = "newest",
        reference_top_k: int = 5,
        period_weight: float = 0.3,
        file_time_weight: float = 0.5,
    ) -> None:
        """
        Create the ranker.

        :param half_life_days: Age at which the recency score is 0.5.
        :param weight: Share of recency in the final score, 0..1.
        :param enabled: Mix recency in when a request does not say.
        :param reference: Count ages from `now` or from the `newest` relevant result.
        :param reference_top_k: With `reference: newest`, how many of the most relevant results the newest
            date is taken from.
        :param period_weight: Share of "dated in the question's period" in the final score, 0..1.
        :param file_time_weight: What a date counts for when it is only the file's modification time, 0..1 of a
            date the note gives itself.
        :raises ValueError: When `half_life_days` or `reference_top_k` is not positive, a weight is outside
            0..1, `weight + period_weight` is above 1, or `reference` is neither `now` nor `newest`.
        """
        if isinstance(reference_top_k, bool) or not isinstance(reference_top_k, int) or reference_top_k < 1:
            raise ValueError(f"reference_top_k must be an integer > 0, got {reference_top_k!r}")
        if reference not in ("now", "newest"):
            raise ValueError(f"reference must be 'now' or 'newest', got {reference!r}")
        if isinstance(half_life_days, bool) or not isinstance(half_life_days, (int, float)) or half_life_days <= 0:
            raise ValueError(f"half_life_days must be > 0, got {half_life_days!r}")
        for name, value in (
            ("weight", weight),
            ("period_weight", period_weight),
            ("file_time_weight", file_time_weight),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise ValueError(f"{name} must be between 0 and 1, got {value!r}")
        if weight + period_weight > 1:
            raise ValueError(f"weight + period_weight must be at most 1, got {weight} + {period_weight}")
        self.half_life_days = half_life_days
        self.weight = weight
        self.enabled = enabled
        self.reference = reference
        self.reference_top_k = reference_top_k
        self.period_weight = period_weight
        self.file_time_weight = file_time_weight

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component."""
        return default_to_dict(
            self,
            half_life_days=self.half_life_days,
            weight=self.weight,
            enabled=self.enabled,
            reference=self.reference,
            reference_top_k=self.reference_top_k,
            period_weight=self.period_weight,
            file_time_weight=self.file_time_weight,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RecencyRanker":
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(
        self,
        documents: list[Document],
        enabled: bool | None = None,
        now: str | None = None,
        period: dict[str, Any] | None = None,
    ) -> dict[str, list[Document]]:
        """
        Mix recency and the question's period in.

        :param documents: Results with 0..1 scores, `meta.date` (RFC 3339) and `meta.date_source`.
        :param enabled: Switch recency on or off for this request; the init value when `None`.
        :param now: The reference time (ISO); the current time when `None`.
        :param period: The dates to rank first: `after` (inclusive) and `before` (exclusive), RFC 3339 or
            `None` for an open side; `None` for no period.
        :returns: A dictionary with `documents`: re-sorted by the mixed score, each with `meta["recency"]`
            (`date`, `score` and `relevance`) when recency is on and `meta["period"]` (`date`, `score`) with
            a period, or the input untouched when both are off.
        """
        recent = self.enabled if enabled is None else enabled
        bounds = _bounds(period)
        if not (recent or bounds) or not documents:
            return {"documents": documents}
        moment = reference_time(now)
        if recent and self.reference == "newest":
            leading = sorted(documents, key=lambda d: float(d.score or 0.0), reverse=True)[: self.reference_top_k]
            own = [_parse(d.meta.get("date")) for d in leading if not _file_time(d)]
            every = [_parse(d.meta.get("date")) for d in leading]
            dates = [d for d in own if d is not None] or [d for d in every if d is not None]
            moment = max(dates, default=moment)
        weight = self.weight if recent else 0.0
        period_weight = self.period_weight if bounds else 0.0
        mixed = []
        for doc in documents:
            relevance = float(doc.score or 0.0)
            credit = self.file_time_weight if _file_time(doc) else 1.0
            meta = dict(doc.meta)
            score = (1 - weight - period_weight) * relevance
            if recent:
                recency = credit * self.decay(doc.meta.get("date"), moment)
                score += weight * recency
                meta["recency"] = {"date": doc.meta.get("date"), "score": recency, "relevance": relevance}
            if bounds:
                inside = credit * _inside(doc.meta.get("date"), bounds)
                score += period_weight * inside
                meta["period"] = {"date": doc.meta.get("date"), "score": inside, "relevance": relevance}
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


def _file_time(doc: Document) -> bool:
    """Whether a result's date is only its file's modification time."""
    return doc.meta.get("date_source") == "mtime"


def _bounds(period: dict[str, Any] | None) -> tuple[datetime.datetime | None, datetime.datetime | None] | None:
    """A period's `after` and `before` as naive UTC datetimes; `None` when there is no period."""
    if not period:
        return None
    after, before = _parse(period.get("after")), _parse(period.get("before"))
    return (after, before) if after or before else None


def _inside(date: Any, bounds: tuple[datetime.datetime | None, datetime.datetime | None]) -> float:
    moment = _parse(date)
    if moment is None:
        return 0.0
    after, before = bounds
    return float((after is None or moment >= after) and (before is None or moment < before))


def _parse(date: Any) -> datetime.datetime | None:
    """An RFC 3339 date as a naive UTC datetime; `None` when missing or unreadable."""
    if not isinstance(date, str) or not date:
        return None
    try:
        return reference_time(date)
    except ValueError:
        return None
