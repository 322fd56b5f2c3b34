"""A/B comparison of two query pipelines on the same queries and the same index.

Both pipelines run over the same judged queries (a golden set or a BEIR dataset). Per metric the report
gives A, B and B−A, the queries B wins, loses and ties, a paired randomisation test over queries (random
sign flips of the per-query differences, two-sided, seeded) and a bootstrap confidence interval of the
mean difference. B counts as a regression when it trails A on the primary metric by more than a margin.
When every query ties on every metric the report warns that B's change does not reach the ranking (a knob of
a stage whose order a later stage replaces, for example), and says how many rankings are the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from needle.evaluation import golden as golden_eval
from needle.evaluation import metrics as ranking_metrics

PRIMARY = "ndcg@10"
PERMUTATIONS = 10_000
RESAMPLES = 10_000
_BATCH = 1_000
_TIE = 1e-12


def permutation_test(a: Sequence[float], b: Sequence[float], permutations: int = PERMUTATIONS, seed: int = 0) -> float:
    """
    Two-sided paired randomisation test of the mean difference `b - a`.

    Under the null hypothesis each query's difference is as likely to have either sign, so the test flips
    signs at random `permutations` times and counts how often the absolute mean difference is at least the
    observed one. The p-value counts the observed assignment too (`(hits + 1) / (permutations + 1)`), so it
    is never 0, and it is exactly 1.0 when every difference is 0.

    :param a: Per-query scores of A.
    :param b: Per-query scores of B, in the same query order.
    :param permutations: Random sign assignments drawn.
    :param seed: Seed of the random generator.
    :returns: The p-value.
    :raises ValueError: When the lists differ in length or are empty, or `permutations` < 1.
    """
    diffs = _differences(a, b)
    if permutations < 1:
        raise ValueError(f"permutations must be > 0, got {permutations}")
    observed = abs(diffs.mean())
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, permutations, _BATCH):
        size = min(_BATCH, permutations - start)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(size, len(diffs)))
        hits += int(np.count_nonzero(np.abs(signs @ diffs / len(diffs)) >= observed - _TIE))
    return (hits + 1) / (permutations + 1)


def bootstrap_ci(
    differences: Sequence[float] | np.ndarray, resamples: int = RESAMPLES, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """
    Percentile bootstrap confidence interval of a mean (resampling queries with replacement).

    :param differences: Per-query differences.
    :param resamples: Bootstrap resamples drawn.
    :param confidence: The interval's coverage, between 0 and 1.
    :param seed: Seed of the random generator.
    :returns: The interval's lower and upper bounds.
    :raises ValueError: On no values, `resamples` < 1 or `confidence` outside (0, 1).
    """
    values = np.asarray(differences, dtype=float)
    if values.size == 0:
        raise ValueError("bootstrap_ci needs at least one value")
    if resamples < 1:
        raise ValueError(f"resamples must be > 0, got {resamples}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    rng = np.random.default_rng(seed)
    means = []
    for start in range(0, resamples, _BATCH):
        size = min(_BATCH, resamples - start)
        means.append(values[rng.integers(0, values.size, size=(size, values.size))].mean(axis=1))
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(np.concatenate(means), [tail, 100 - tail])
    return float(low), float(high)


def _differences(a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    if len(a) != len(b):
        raise ValueError(f"paired scores must have the same length, got {len(a)} and {len(b)}")
    if not len(a):
        raise ValueError("paired scores must not be empty")
    return np.asarray(b, dtype=float) - np.asarray(a, dtype=float)


def compare_per_query(
    per_query_a: Mapping[str, Mapping[str, Any]],
    per_query_b: Mapping[str, Mapping[str, Any]],
    metric_names: Sequence[str] | None = None,
    primary: str = PRIMARY,
    margin: float = 0.0,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
) -> dict[str, Any]:
    """
    Compare two pipelines' per-query scores on the queries both answered.

    :param per_query_a: Per query id, A's metric values.
    :param per_query_b: Per query id, B's metric values.
    :param metric_names: Metrics to compare; every numeric metric both share when `None`.
    :param primary: The metric that decides a regression.
    :param margin: How far B may trail A on `primary` before it counts as a regression.
    :param permutations: Sign flips of the randomisation test.
    :param seed: Seed of the test and the bootstrap.
    :returns: `queries`, `primary`, `margin`, `metrics` (per metric: a, b, diff, wins, losses, ties,
        p_value, ci95), `per_query_diff` (primary metric, per query id) and `regression`.
    :raises ValueError: When no query or the primary metric is shared, or `margin` < 0.
    """
    if margin < 0:
        raise ValueError(f"margin must be >= 0, got {margin}")
    ids = sorted(set(per_query_a) & set(per_query_b))
    if not ids:
        raise ValueError("the two runs share no query")
    if metric_names is None:
        first_a, first_b = per_query_a[ids[0]], per_query_b[ids[0]]
        metric_names = [
            name
            for name, value in first_a.items()
            if name in first_b and isinstance(value, float) and name != "latency_ms"
        ]
    if primary not in metric_names:
        raise ValueError(f"primary metric {primary!r} is not among the compared metrics {list(metric_names)}")
    table: dict[str, dict[str, Any]] = {}
    for name in metric_names:
        a = [float(per_query_a[q][name]) for q in ids]
        b = [float(per_query_b[q][name]) for q in ids]
        diffs = _differences(a, b)
        table[name] = {
            "a": ranking_metrics.mean(a),
            "b": ranking_metrics.mean(b),
            "diff": float(diffs.mean()),
            "wins": int(np.count_nonzero(diffs > _TIE)),
            "losses": int(np.count_nonzero(diffs < -_TIE)),
            "ties": int(np.count_nonzero(np.abs(diffs) <= _TIE)),
            "p_value": permutation_test(a, b, permutations, seed),
            "ci95": list(bootstrap_ci(diffs, seed=seed)),
        }
    per_query_diff = {q: float(per_query_b[q][primary]) - float(per_query_a[q][primary]) for q in ids}
    tied = all(m["wins"] == m["losses"] == 0 for m in table.values())
    return {
        "queries": len(ids),
        "primary": primary,
        "margin": margin,
        "permutations": permutations,
        "seed": seed,
        "metrics": table,
        "per_query_diff": per_query_diff,
        "regression": table[primary]["diff"] < -margin - _TIE,
        "warning": TIED if tied else None,
    }


TIED = "every query ties on every metric: B's change does not reach the ranking"


def same_rankings(rankings_a: Mapping[str, Sequence[str]], rankings_b: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """
    How many of the queries both runs answered got the same top 10 from A and from B.

    :param rankings_a: Per query id, A's documents, best first.
    :param rankings_b: Per query id, B's.
    :returns: `queries` (answered by both) and `same` (identical top 10).
    """
    ids = set(rankings_a) & set(rankings_b)
    same = sum(1 for q in ids if list(rankings_a[q])[:10] == list(rankings_b[q])[:10])
    return {"queries": len(ids), "same": same}


def _with_rankings(comparison: dict[str, Any], rankings: dict[str, int]) -> dict[str, Any]:
    """
    The comparison with the count of identical rankings; when every query ties, the warning says whether B's
    change reached the rankings at all or only moved documents the judgements do not tell apart.
    """
    warning = comparison["warning"]
    same, queries = rankings["same"], rankings["queries"]
    if warning and same < queries:
        warning = (
            f"every query ties on every metric: B's change moved {queries - same} of {queries} top-10 rankings, "
            "none across a relevant document"
        )
    elif warning:
        warning = f"{warning} ({same} of {queries} top-10 rankings are identical)"
    return {**comparison, "same_rankings": rankings, "warning": warning}


def _latency(per_query: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    values = [row["latency_ms"] for row in per_query.values() if "latency_ms" in row]
    return {
        "latency_ms_p50": ranking_metrics.percentile(values, 50),
        "latency_ms_p95": ranking_metrics.percentile(values, 95),
    }


def compare_golden(
    needle: Any,
    golden: golden_eval.GoldenSet,
    a: str,
    b: str,
    mode: str | None = None,
    candidates: int = golden_eval.DEFAULT_CANDIDATES,
    primary: str = PRIMARY,
    margin: float = 0.0,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
    limit: int | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """
    Compare two pipelines on a golden set.

    :param needle: A `Needle` bound to an index of the golden corpus.
    :param golden: The golden set.
    :param a: Pipeline A (a name in `pipelines/` or a YAML path).
    :param b: Pipeline B.
    :param mode: Only the queries tagged with this mode; every query when `None` (unanswerable ones never: they
        have no ranking metric to compare).
    :param limit: Only the first `limit` of those queries.
    :returns: The comparison (see `compare_per_query`) plus data, pipelines, latencies and both runs' per-query rows.
    """
    queries = golden_eval.answerable_only(golden.for_mode(mode) if mode else golden.queries)
    queries = queries[:limit] if limit else queries
    run_a = golden_eval.run_queries(needle, queries, a, candidates, progress, golden.today)
    run_b = golden_eval.run_queries(needle, queries, b, candidates, progress, golden.today)
    comparison = compare_per_query(run_a, run_b, golden_eval.METRICS, primary, margin, permutations, seed)
    rankings = same_rankings(
        {q: row["ranking"] for q, row in run_a.items()}, {q: row["ranking"] for q, row in run_b.items()}
    )
    comparison = _with_rankings(comparison, rankings)
    return {
        "kind": "compare",
        "data": f"golden:{golden.path}" + (f" (mode {mode})" if mode else ""),
        "data_name": golden.name,
        "a": a,
        "b": b,
        **comparison,
        "latency": {"a": _latency(run_a), "b": _latency(run_b)},
        "runs": {"a": run_a, "b": run_b},
    }


def compare_beir(
    dataset_dir: str | Path,
    a: str,
    b: str,
    split: str = "test",
    candidates: int = 300,
    limit: int | None = None,
    cache: Path | None = None,
    settings: Any = None,
    primary: str = PRIMARY,
    margin: float = 0.0,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
) -> dict[str, Any]:
    """
    Compare two pipelines on a BEIR dataset, both on the one cached index of that dataset.

    :returns: The comparison (see `compare_per_query`) plus data, pipelines, latencies and both BEIR results.
    """
    from needle.evaluation import beir

    report = beir.evaluate(
        dataset_dir,
        [a, b],
        split=split,
        candidates=candidates,
        limit=limit,
        cache=Path(cache or beir.DEFAULT_CACHE),
        settings=settings,
    )
    run_a, run_b = report["results"]
    comparison = compare_per_query(run_a["per_query"], run_b["per_query"], None, primary, margin, permutations, seed)
    comparison = _with_rankings(comparison, same_rankings(run_a["rankings"], run_b["rankings"]))
    return {
        "kind": "compare",
        "data": f"beir:{report['dataset']} ({split})",
        "data_name": report["dataset"],
        "a": a,
        "b": b,
        **comparison,
        "latency": {
            side: {"latency_ms_p50": run["latency_ms_p50"], "latency_ms_p95": run["latency_ms_p95"]}
            for side, run in (("a", run_a), ("b", run_b))
        },
        "index": report["index"],
        "runs": {"a": run_a, "b": run_b},
    }


def format_comparison(report: Mapping[str, Any]) -> str:
    """A markdown summary: per metric A, B, B−A, its 95% interval, p-value and wins/losses/ties; then the verdict."""
    name_a, name_b = Path(report["a"]).stem, Path(report["b"]).stem
    lines = [
        f"A = {report['a']}, B = {report['b']} on {report['data']}: {report['queries']} queries",
        "",
        "| metric | A | B | B−A | 95% CI | p | B wins / losses / ties |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, m in report["metrics"].items():
        marker = " (primary)" if name == report["primary"] else ""
        lines.append(
            f"| {name}{marker} | {m['a']:.3f} | {m['b']:.3f} | {m['diff']:+.3f} | "
            f"[{m['ci95'][0]:+.3f}, {m['ci95'][1]:+.3f}] | {m['p_value']:.4f} | {m['wins']} / {m['losses']} / {m['ties']} |"
        )
    la, lb = report["latency"]["a"], report["latency"]["b"]
    lines.append(
        f"| latency p50 / p95 ms | {la['latency_ms_p50']:.1f} / {la['latency_ms_p95']:.1f} | "
        f"{lb['latency_ms_p50']:.1f} / {lb['latency_ms_p95']:.1f} | | | | |"
    )
    p = report["metrics"][report["primary"]]
    verdict = "REGRESSION" if report["regression"] else "no regression"
    lines += [
        "",
        f"{verdict}: {name_b} − {name_a} on {report['primary']} is {p['diff']:+.4f} (margin {report['margin']}), "
        f"p = {p['p_value']:.4f} (paired randomisation test, {report['permutations']} sign flips, seed {report['seed']}).",
    ]
    if report.get("warning"):
        lines.append(f"warning: {report['warning']}.")
    return "\n".join(lines)


def plot_comparison(report: Mapping[str, Any], path: Path) -> Path:
    """
    Draw the comparison as a PNG: A and B per metric (B−A written above each pair), and the per-query
    difference on the primary metric, sorted.

    :param report: A comparison report.
    :param path: The PNG file to write.
    :returns: `path`.
    :raises ImportError: When matplotlib is not installed (it comes with the `eval` extra).
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ImportError("the comparison chart needs matplotlib: pip install 'needle-search[eval]'") from error

    name_a, name_b = Path(report["a"]).stem, Path(report["b"]).stem
    if name_a == name_b:
        name_a, name_b = f"A: {name_a}", f"B: {name_b}"
    names = list(report["metrics"])
    a = [report["metrics"][n]["a"] for n in names]
    b = [report["metrics"][n]["b"] for n in names]
    figure = Figure(figsize=(13, 5.5), layout="constrained")
    FigureCanvasAgg(figure)
    bars, queries = figure.subplots(1, 2, width_ratios=[3, 2])
    x = np.arange(len(names))
    bars.bar(x - 0.2, a, 0.4, label=name_a, color="#8da0cb")
    bars.bar(x + 0.2, b, 0.4, label=name_b, color="#fc8d62")
    for i, n in enumerate(names):
        m = report["metrics"][n]
        colour = "#1a9850" if m["diff"] > _TIE else "#d73027" if m["diff"] < -_TIE else "#555555"
        star = "*" if m["p_value"] < 0.05 else ""
        bars.text(i, max(m["a"], m["b"]) + 0.02, f"{m['diff']:+.3f}{star}", ha="center", fontsize=8, color=colour)
    bars.set_xticks(x, names, rotation=30, ha="right")
    bars.set_ylim(0, 1.2)
    bars.set_ylabel("mean over queries")
    bars.set_title(f"{report['data_name']}: {report['queries']} queries (B−A above bars, * p < 0.05)", fontsize=10)
    bars.legend(loc="upper left", ncol=2, fontsize=9)

    primary = report["primary"]
    diffs = sorted(report["per_query_diff"].values(), reverse=True)
    colours = ["#1a9850" if d > _TIE else "#d73027" if d < -_TIE else "#999999" for d in diffs]
    queries.bar(np.arange(len(diffs)), diffs, width=1.0, color=colours)
    queries.axhline(0, color="black", linewidth=0.8)
    p = report["metrics"][primary]
    queries.axhline(p["diff"], color="#555555", linestyle="--", linewidth=0.8, label=f"mean {p['diff']:+.3f}")
    queries.set_xlabel("queries, sorted by difference")
    queries.set_ylabel(f"{primary}: B − A")
    queries.set_title(
        f"per query: {p['wins']} better, {p['losses']} worse, {p['ties']} tied\n"
        f"p = {p['p_value']:.4f}, 95% CI of the mean [{p['ci95'][0]:+.3f}, {p['ci95'][1]:+.3f}]",
        fontsize=10,
    )
    queries.legend(loc="upper right")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    return path
