"""What the confidence's `sentence` signal adds to a query: milliseconds of the scorer, with and without it.

    python -m eval.confidence_cost            # golden questions over the demo notes, 5 rounds, medians

For each golden question (`eval/golden/demo.yml`), `vsearch`'s results are scored again by a
`ConfidenceScorer` with the sentence check (the query and the top result's sentences embedded by the index's
dense model, loaded once beforehand) and by one without it; the script prints the median milliseconds per
question of each (wall, and CPU time of the process: what it costs on an idle core) and the number of
sentences embedded. Timings on a shared machine are noisy: it repeats the rounds and reports medians.
"""

from __future__ import annotations

import argparse
import statistics
import time

from eval.demo_data import DEMO_GOLDEN
from needle.core.requests import SearchRequest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.confidence_cost", description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds over the questions (default 5)")
    args = parser.parse_args(argv)

    from haystack import Document

    from haystack_integrations.components.classifiers.needle.confidence_scorer import ConfidenceScorer, sentences_of
    from needle.core.model_files import dense_embedder_params
    from needle.evaluation.golden import load_golden, prepare_index

    golden = load_golden(DEMO_GOLDEN)
    needle = prepare_index(golden)
    params = dense_embedder_params(needle.settings.embedding.model, needle.settings.model_dir)
    with_sentences = ConfidenceScorer(
        sentence_check=True,
        threads=1,
        dense_model=params["model"],
        dense_model_kwargs=params.get("model_kwargs"),
        dense_local_files_only=params["local_files_only"],
        dense_cache_dir=params.get("cache_dir"),
    )
    with_sentences.warm_up()
    without = ConfidenceScorer()
    cases = []
    for q in golden.queries:
        answer = needle.search(SearchRequest(query=q.query, limit=10), pipeline="vsearch")
        docs = [Document(content=hit.text, meta={"path": hit.path}) for hit in answer.results]
        if docs:
            cases.append((q.query, docs))
    needle.close()
    timings: dict[str, list[float]] = {"with the sentence signal": [], "without": []}
    cpu: dict[str, list[float]] = {name: [] for name in timings}
    for _ in range(args.rounds):
        for name, scorer in (("with the sentence signal", with_sentences), ("without", without)):
            began, began_cpu = time.perf_counter(), time.process_time()
            for query, docs in cases:
                scorer.run(documents=docs, query=query)
            timings[name].append(1000 * (time.perf_counter() - began) / len(cases))
            cpu[name].append(1000 * (time.process_time() - began_cpu) / len(cases))
    sentences = [len(sentences_of(docs[0].content or "", with_sentences.max_sentences)) for _, docs in cases]
    print(f"{len(cases)} golden questions, vsearch's results, {args.rounds} rounds (medians; shared machine)")
    for name, values in timings.items():
        print(
            f"ConfidenceScorer {name}: {statistics.median(values):.1f} ms per question, "
            f"{statistics.median(cpu[name]):.1f} ms of CPU (the model runs on 1 thread)"
        )
    print(f"sentences embedded per question: median {statistics.median(sentences)}, max {max(sentences)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
