"""The interaction log of an online A/B test, and its per-variant table (`needle eval interactions`).

`needle serve` appends one JSON line per request of its split route (`POST /split/run`) to the log:

```json
{"kind": "request", "id": "4f0c…", "time": "2026-11-28T07:30:00.123Z", "variant": "qb",
 "query": "certbot renewal hook", "results": ["#a1b2c3", …], "paths": ["howto/certbot-tls-renewal.md", …],
 "latency_ms": 41.7, "status": 200}
```

and one line per feedback the caller sends about a request (`POST /split/feedback`), naming it by `id`:

```json
{"kind": "feedback", "id": "4f0c…", "time": "…", "clicks": ["#a1b2c3"], "judgements": {"#a1b2c3": 2}}
```

Clicks and judgements name a result by its docid or its path. The table gives per variant: requests, errors,
latency (mean, median, 95th percentile), mean results, the share with no result and, when feedback is
present, the share of requests with a click, the mean reciprocal rank of the first click and nDCG@10 of the
judged requests.

Usage example:
```python
rows = variant_table(read_log(Path("~/.local/share/needle/interactions.jsonl").expanduser()))
print(format_table(rows))
```
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REQUEST = "request"
FEEDBACK = "feedback"


@dataclass
class Interaction:
    """One request of the split route, with the feedback its caller sent about it."""

    id: str
    variant: str
    results: list[str]
    paths: list[str]
    latency_ms: float
    ok: bool
    clicks: list[str] = field(default_factory=list)
    judgements: dict[str, float] = field(default_factory=dict)

    def rank_of(self, name: str) -> int | None:
        """The 1-based rank of the result with this docid or path, `None` when it was not shown."""
        for rank, (docid, path) in enumerate(zip(self.results, self.paths, strict=False), start=1):
            if name in (docid, path):
                return rank
        return None


def read_log(path: Path) -> list[Interaction]:
    """
    The requests of an interaction log, each with its feedback (feedback lines may come in any order).

    :param path: The JSONL log `needle serve` wrote.
    :raises ValueError: When the file is missing or a line is not a JSON object, naming the line.
    """
    if not path.is_file():
        raise ValueError(f"no interaction log at {path}: serve variants with `needle serve --pipeline NAME=FILE`")
    requests: dict[str, Interaction] = {}
    feedback: list[dict[str, Any]] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            entry = None
        if not isinstance(entry, dict) or "id" not in entry:
            raise ValueError(f"{path}:{number} is not a line of an interaction log: fix or delete it")
        if entry.get("kind", REQUEST) == FEEDBACK:
            feedback.append(entry)
            continue
        requests[str(entry["id"])] = Interaction(
            id=str(entry["id"]),
            variant=str(entry.get("variant", "?")),
            results=[str(r) for r in entry.get("results") or []],
            paths=[str(p) for p in entry.get("paths") or []],
            latency_ms=float(entry.get("latency_ms") or 0.0),
            ok=int(entry.get("status", 200)) < 400,
        )
    for entry in feedback:
        target = requests.get(str(entry["id"]))
        if target is None:
            continue
        target.clicks.extend(str(c) for c in entry.get("clicks") or [])
        target.judgements.update({str(k): float(v) for k, v in (entry.get("judgements") or {}).items()})
    return list(requests.values())


def _ndcg(interaction: Interaction, k: int = 10) -> float:
    """nDCG@k of the shown results by the request's judgements (grades; unjudged results count 0)."""
    gains = []
    for docid, path in list(zip(interaction.results, interaction.paths, strict=False))[:k]:
        gains.append(max(interaction.judgements.get(docid, 0.0), interaction.judgements.get(path, 0.0)))
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sorted(interaction.judgements.values(), reverse=True)[:k]
    best = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / best if best > 0 else 0.0


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]


def variant_table(interactions: Iterable[Interaction]) -> list[dict[str, Any]]:
    """
    One row per variant, in name order: counts, latency and, where feedback exists, clicks and judgements.

    :returns: Rows with `variant`, `requests`, `errors`, `latency_ms_mean`, `latency_ms_p50`, `latency_ms_p95`,
        `mean_results`, `no_results`, and `clicked`, `mrr_first_click` (over requests with feedback) and
        `ndcg@10`, `judged` (over judged requests); a metric without data is `None`.
    """
    by_variant: dict[str, list[Interaction]] = {}
    for interaction in interactions:
        by_variant.setdefault(interaction.variant, []).append(interaction)
    rows = []
    for name in sorted(by_variant):
        group = by_variant[name]
        answered = [i for i in group if i.ok]
        latencies = [i.latency_ms for i in answered]
        with_clicks = [i for i in answered if i.clicks]
        judged = [i for i in answered if i.judgements]
        reciprocal = []
        for interaction in with_clicks:
            ranks = [r for r in (interaction.rank_of(c) for c in interaction.clicks) if r is not None]
            reciprocal.append(1.0 / min(ranks) if ranks else 0.0)
        rows.append(
            {
                "variant": name,
                "requests": len(group),
                "errors": len(group) - len(answered),
                "latency_ms_mean": statistics.fmean(latencies) if latencies else None,
                "latency_ms_p50": statistics.median(latencies) if latencies else None,
                "latency_ms_p95": _percentile(latencies, 0.95) if latencies else None,
                "mean_results": statistics.fmean(len(i.results) for i in answered) if answered else None,
                "no_results": sum(not i.results for i in answered) / len(answered) if answered else None,
                "clicked": len(with_clicks) / len(answered) if with_clicks else None,
                "mrr_first_click": statistics.fmean(reciprocal) if reciprocal else None,
                "judged": len(judged),
                "ndcg@10": statistics.fmean(_ndcg(i) for i in judged) if judged else None,
            }
        )
    return rows


COLUMNS = (
    ("variant", "variant"),
    ("requests", "requests"),
    ("errors", "errors"),
    ("latency_ms_mean", "mean ms"),
    ("latency_ms_p50", "p50 ms"),
    ("latency_ms_p95", "p95 ms"),
    ("mean_results", "results"),
    ("no_results", "no result"),
    ("clicked", "clicked"),
    ("mrr_first_click", "MRR (click)"),
    ("judged", "judged"),
    ("ndcg@10", "nDCG@10"),
)


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.1f}" if abs(value) >= 10 else f"{value:.3f}"
    return str(value)


def format_table(rows: list[dict[str, Any]]) -> str:
    """The rows as a markdown table (`–` where a variant has no data for a column)."""
    head = "| " + " | ".join(title for _, title in COLUMNS) + " |"
    rule = "|" + "|".join("---" for _ in COLUMNS) + "|"
    body = ["| " + " | ".join(_cell(row[key]) for key, _ in COLUMNS) + " |" for row in rows]
    return "\n".join([head, rule, *body]) if rows else "no requests in the log yet"


__all__ = ["FEEDBACK", "REQUEST", "Interaction", "format_table", "read_log", "variant_table"]
