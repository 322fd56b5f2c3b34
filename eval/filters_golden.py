"""The filter and time questions with self-query on and off: hit@1 and hit@3 per mode, a table and a chart.

    python -m eval.filters_golden [--file eval/golden/filters.yml]

Runs every question of the golden file through search, vsearch and query twice over the same index of its
corpus: with the self-query stage reading filters out of the question (the graphs' default) and with it
off (the question read as plain text). Prints a markdown table and writes it with a bar chart to
eval/results/filters-golden.md and .png. `needle eval golden --file eval/golden/filters.yml` checks the
thresholds (self-query on); this script shows what the stage is worth.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from eval.result_files import RESULTS, pyplot, save_figure
from needle.core.requests import SearchRequest
from needle.evaluation import golden as golden_eval

KINDS = ("filter", "time", "all")


def score(needle: Any, golden: golden_eval.GoldenSet, mode: str, self_query: bool) -> dict[str, dict[str, float]]:
    rows = {}
    for q in golden.for_mode(mode):
        request = SearchRequest(
            query=q.query, limit=golden_eval.DEFAULT_CANDIDATES, now=golden.today, self_query=self_query
        )
        results = needle.search(request, pipeline=mode).results
        rows[q.id] = {
            "difficulty": q.difficulty,
            **golden_eval.score_ranking(golden_eval.group_by_document(results), q.expected),
        }
    return golden_eval.summarise(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval.filters_golden", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--file", type=Path, default=Path("eval/golden/filters.yml"))
    parser.add_argument("--cache", type=Path, default=None)
    args = parser.parse_args(argv)
    golden = golden_eval.load_golden(args.file)
    needle = golden_eval.prepare_index(golden, cache=args.cache)
    summaries = {(mode, on): score(needle, golden, mode, on) for mode in golden_eval.MODES for on in (True, False)}
    needle.close()
    lines = [
        f"Self-query on and off, {args.file} (today: {golden.today})",
        "",
        "| mode | questions | self-query on: hit@1 | hit@3 | off: hit@1 | hit@3 |",
        "|---|---|---|---|---|---|",
    ]
    for mode in golden_eval.MODES:
        for kind in KINDS:
            on, off = summaries[(mode, True)].get(kind), summaries[(mode, False)].get(kind)
            if on and off:
                lines.append(
                    f"| {mode} | {kind} ({int(on['queries'])}) | {on['hit@1']:.3f} | {on['hit@3']:.3f} | "
                    f"{off['hit@1']:.3f} | {off['hit@3']:.3f} |"
                )
    table = "\n".join(lines)
    print(table)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "filters-golden.md").write_text(table + "\n")
    plot(summaries, RESULTS / "filters-golden.png")
    print(f"\nwrote {RESULTS / 'filters-golden.md'} and {RESULTS / 'filters-golden.png'}")
    return 0


def plot(summaries: dict, path: Path) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), sharey=True)
    for axis, kind in zip(axes, ("filter", "time")):
        labels, width = list(golden_eval.MODES), 0.2
        for offset, (on, metric, colour) in enumerate(
            [
                (True, "hit@1", "#1f77b4"),
                (True, "hit@3", "#9ecae1"),
                (False, "hit@1", "#d62728"),
                (False, "hit@3", "#fcae91"),
            ]
        ):
            values = [summaries[(mode, on)].get(kind, {}).get(metric, 0.0) for mode in labels]
            xs = [i + (offset - 1.5) * width for i in range(len(labels))]
            axis.bar(xs, values, width, color=colour, label=f"self-query {'on' if on else 'off'} {metric}")
        axis.set_xticks(range(len(labels)), labels)
        axis.set_title(f"{kind} questions")
        axis.set_ylim(0, 1.05)
    axes[0].set_ylabel("share of questions")
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.suptitle("Filter and time questions over the demo notes: reading filters out of the question")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    save_figure(fig, path, tight=False)


if __name__ == "__main__":
    raise SystemExit(main())
