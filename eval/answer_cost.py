"""What the answer chunk stage adds to a `query` search: CPU time per search with the stage and without it.

    python -m eval.answer_cost                 # demo and notes golden sets, 7 rounds each, medians
    python -m eval.answer_cost --sets demo --rounds 9

For each golden set (`eval/golden/SET.yml`, its index built or reused as `needle eval golden` does), every
answerable question runs through `query` as a user runs it, in rounds, once through the shipped graph and once
through the same graph whose answer chunk stage has no store (`answer_chunk.document_store: null`: the results
pass through it, and the snippets are cut from the chunks that ranked the files), one right after the other.
The script prints, per set and over the sets, the median over the rounds of the process's CPU time per search
(what a search costs on an idle core; wall-clock time on a shared machine moves with other work), how much the
stage adds as a share of the search without it, and the CPU time of the stage itself and of the snippets after
it (which cut more hunks with it), read by Haystack's tracing hooks with a CPU clock. The rankings are the same
either way (the stage runs after the cutoff); `needle eval golden` measures what the snippets show.
"""

from __future__ import annotations

import argparse
import statistics
import time

from haystack import tracing

from eval.demo_data import GOLDEN
from needle.core.requests import SearchRequest
from needle.evaluation.timing import ComponentTimer

# The graph override that switches the stage off: without a store it passes the results through.
STAGE_OFF = {"answer_chunk.document_store": None}
# The stages whose CPU time is shown apart: the answer chunk stage, and the snippets it gives more to cut.
STAGES = ("answer_chunk", "snippets")


class _CpuTimer(ComponentTimer):
    """The CPU time each stage spends (the engine's threads included), not its wall-clock time."""

    clock = staticmethod(time.process_time)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.answer_cost", description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="+", default=["demo", "notes"], help="golden sets (default demo notes)")
    parser.add_argument("--rounds", type=int, default=7, help="rounds over each set's questions (default 7)")
    args = parser.parse_args(argv)

    from needle.evaluation.golden import load_golden, prepare_index

    totals: dict[str, list[float]] = {"with": [], "without": []}
    print(
        f"`query`, CPU time of the process per search, median of {args.rounds} rounds (each question with and without the stage in turn)"
    )
    for name in args.sets:
        golden = load_golden(GOLDEN / f"{name}.yml")
        needle = prepare_index(golden)
        questions = [q.query for q in golden.queries if q.answerable and "query" in q.modes]
        variants = {"with": None, "without": STAGE_OFF}
        try:
            for overrides in variants.values():  # build both graphs and read what a first search reads once
                for question in questions:
                    needle.search(SearchRequest(query=question, set=overrides))
            cpu: dict[str, list[float]] = {variant: [] for variant in variants}
            stages: dict[str, list[float]] = {stage: [] for stage in STAGES}
            snippets_without: list[float] = []
            for round_ in range(args.rounds):
                spent = dict.fromkeys(variants, 0.0)
                timers = {variant: _CpuTimer() for variant in variants}
                # each question with and without the stage in turn (the first one alternating by round), so
                # that other work on the machine weighs on both alike
                order = list(variants.items()) if round_ % 2 == 0 else list(variants.items())[::-1]
                for question in questions:
                    for variant, overrides in order:
                        tracing.enable_tracing(timers[variant])
                        began = time.process_time()
                        try:
                            needle.search(SearchRequest(query=question, set=overrides))
                        finally:
                            spent[variant] += time.process_time() - began
                            tracing.disable_tracing()
                for variant in variants:
                    cpu[variant].append(1000 * spent[variant] / len(questions))
                for stage in STAGES:
                    stages[stage].append(1000 * timers["with"].seconds[stage] / len(questions))
                snippets_without.append(1000 * timers["without"].seconds["snippets"] / len(questions))
        finally:
            needle.close()
        for variant in variants:
            totals[variant].append(statistics.median(cpu[variant]))
        _line(f"{name} ({len(questions)} questions)", statistics.median(cpu["with"]), statistics.median(cpu["without"]))
        print(
            f"  of which the answer chunk stage {statistics.median(stages['answer_chunk']):.2f} ms, the snippets "
            f"{statistics.median(stages['snippets']):.2f} ms ({statistics.median(snippets_without):.2f} ms without "
            "the stage)"
        )
    if len(args.sets) > 1:
        _line("mean over the sets", statistics.fmean(totals["with"]), statistics.fmean(totals["without"]))
    return 0


def _line(label: str, with_stage: float, without: float) -> None:
    added = with_stage / without - 1 if without else float("nan")
    print(f"{label}: {with_stage:.1f} ms with the answer chunk stage, {without:.1f} ms without, {added:+.0%}")


if __name__ == "__main__":
    raise SystemExit(main())
