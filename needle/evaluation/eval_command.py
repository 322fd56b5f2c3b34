"""`needle eval`: golden queries, BEIR datasets and A/B comparisons of pipeline YAMLs.

    needle eval golden [--file eval/golden/demo.yml] [--mode query]
    needle eval beir --dataset DIR --pipeline search --pipeline my.yml
    needle eval compare A.yml B.yml (--dataset DIR | --golden FILE) [--margin 0.0]
    needle eval ragas (--golden FILE | --dataset DIR) [--pipeline query] [--llm [--rag-pipeline rag]]
    needle eval calibration [--dataset DIR] [--golden FILE] [--offtopic FILE] [--pipeline query] [--fit [--write]]
    needle eval decompose [--golden FILE] [--pipeline query]
    needle eval retry [--golden eval/golden/answers.yml] [--pipeline rag] [--set COMPONENT.PARAM=VALUE]
    needle eval interactions [LOG]

Exit codes: 0 when thresholds pass, B is no regression and ragas' id metrics agree with ours; 1 when
not; 2 on usage errors.
Reports (JSON, a markdown summary and, for comparisons, a PNG chart) go to `--reports` (eval/reports/).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from needle.owner.locate import PROJECT_ROOT

DEFAULT_GOLDEN = Path("eval/golden/demo.yml")


def _existing(path: Path, what: str) -> Path:
    """`path`, else the same path inside the project; `ValueError` when neither exists."""
    if path.exists():
        return path
    if not path.is_absolute() and (PROJECT_ROOT / path).exists():
        return PROJECT_ROOT / path
    raise ValueError(f"{what} {path} does not exist")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cache", type=Path, default=None, help="where built indexes are kept (~/.cache/needle/eval)")
    parser.add_argument(
        "--reports", type=Path, default=Path("eval/reports"), help="reports folder (default: eval/reports)"
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def add_eval_parser(sub: Any) -> argparse.ArgumentParser:
    """
    Add `eval` and its subcommands to a subparsers object.

    :param sub: What `ArgumentParser.add_subparsers()` returned.
    :returns: The `eval` parser.
    """
    evaluation = sub.add_parser("eval", help="score pipelines: golden queries, BEIR datasets, A/B comparisons")
    esub = evaluation.add_subparsers(dest="eval_command", required=True, metavar="EVAL_COMMAND")
    _add_golden(esub)
    _add_beir(esub)
    _add_compare(esub)
    _add_ragas(esub)
    _add_calibration(esub)
    _add_decompose(esub)
    _add_retry(esub)
    _add_interactions(esub)
    return evaluation


def _add_golden(esub: Any) -> None:
    """`needle eval golden` and its options."""
    golden = esub.add_parser("golden", help="score modes on a golden query set and check its thresholds")
    golden.add_argument("--file", type=Path, default=DEFAULT_GOLDEN, help="golden file (default: eval/golden/demo.yml)")
    golden.add_argument(
        "--mode",
        action="append",
        dest="modes",
        help="mode or pipeline YAML (repeatable; default: search, vsearch, query)",
    )
    golden.add_argument(
        "--thresholds",
        type=Path,
        default=None,
        help="thresholds file (default: NAME-thresholds.yml beside the golden file NAME.yml, else "
        "thresholds.yml there, when present)",
    )
    golden.add_argument("--no-thresholds", action="store_true", help="report only, check no thresholds")
    golden.add_argument("--candidates", type=int, default=50, help="chunk results per query before grouping")
    _common(golden)


def _add_beir(esub: Any) -> None:
    """`needle eval beir` and its options."""
    beir = esub.add_parser("beir", help="score pipelines on a BEIR dataset")
    beir.add_argument("--dataset", type=Path, required=True, help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/)")
    beir.add_argument("--pipeline", action="append", required=True, help="pipeline name or YAML path (repeatable)")
    beir.add_argument("--split", default="test", help="qrels split (default: test)")
    beir.add_argument("--candidates", type=int, default=300, help="chunk results per query before grouping")
    beir.add_argument("--limit", type=int, default=None, help="only the first N queries")
    _common(beir)


def _add_compare(esub: Any) -> None:
    """`needle eval compare` and its options."""
    compare = esub.add_parser("compare", help="A/B-compare two pipelines on the same queries and index")
    compare.add_argument("a", help="pipeline A (name or YAML path), the baseline")
    compare.add_argument("b", help="pipeline B (name or YAML path), the candidate")
    data = compare.add_mutually_exclusive_group(required=True)
    data.add_argument("--dataset", type=Path, help="BEIR folder")
    data.add_argument("--golden", type=Path, help="golden file")
    compare.add_argument("--mode", default=None, help="golden only: just the queries tagged with this mode")
    compare.add_argument("--split", default="test", help="BEIR qrels split (default: test)")
    compare.add_argument("--limit", type=int, default=None, help="only the first N queries")
    compare.add_argument("--candidates", type=int, default=None, help="chunk results per query (golden 50, BEIR 300)")
    compare.add_argument("--metric", default="ndcg@10", help="primary metric (default: ndcg@10)")
    compare.add_argument(
        "--margin",
        type=float,
        default=0.0,
        help="exit 1 when B trails A on the primary metric by more than this (default: 0.0)",
    )
    compare.add_argument("--permutations", type=int, default=10_000, help="sign flips of the randomisation test")
    compare.add_argument("--seed", type=int, default=0, help="seed of the test and the bootstrap")
    _common(compare)


def _add_ragas(esub: Any) -> None:
    """`needle eval ragas` and its options."""
    ragas = esub.add_parser(
        "ragas", help="ragas metrics: id-based retrieval (cross-checked with ours and Haystack's), LLM-judged answers"
    )
    data = ragas.add_mutually_exclusive_group(required=True)
    data.add_argument("--golden", type=Path, help="golden file (its optional `reference:` answers feed --llm)")
    data.add_argument("--dataset", type=Path, help="BEIR folder")
    ragas.add_argument("--pipeline", default="query", help="retrieval pipeline, name or YAML path (default: query)")
    ragas.add_argument("--k", type=int, default=10, help="documents scored per query, 1 to 10 (default: 10)")
    ragas.add_argument("--split", default="test", help="BEIR qrels split (default: test)")
    ragas.add_argument("--limit", type=int, default=None, help="only the first N queries")
    ragas.add_argument("--candidates", type=int, default=None, help="chunk results per query (golden 50, BEIR 300)")
    ragas.add_argument(
        "--llm",
        action="store_true",
        help="also answer each query with --rag-pipeline (the `llm:` server) and judge the answers with the judge",
    )
    ragas.add_argument(
        "--judge-url",
        default=None,
        metavar="URL",
        help="the judge's OpenAI-compatible server (default: eval.judge.url, else llm.url)",
    )
    ragas.add_argument(
        "--judge-model",
        default=None,
        metavar="NAME",
        help="the judge's model (default: eval.judge.model, else llm.model)",
    )
    ragas.add_argument(
        "--judge-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="seconds per request to the judge; a slower judgement scores NaN for its answer only (default: eval.judge.timeout)",
    )
    ragas.add_argument("--rag-pipeline", default="rag", help="answer graph, name or YAML path (default: rag)")
    ragas.add_argument("--contexts", type=int, default=3, help="chunks given to the LLM per answer (default: 3)")
    ragas.add_argument("--max-tokens", type=int, default=1024, help="tokens per judgement (default: 1024)")
    ragas.add_argument(
        "--retries", type=int, default=1, help="re-asks after a judgement that does not parse (default: 1)"
    )
    ragas.add_argument(
        "--structured-output",
        choices=["tools", "json"],
        default="tools",
        help="how the judge returns structured output: a forced tool call or a JSON object (default: tools)",
    )
    ragas.add_argument(
        "--metric",
        action="append",
        dest="metrics",
        metavar="NAME",
        choices=["faithfulness", "answer_relevancy", "context_utilization", "context_precision", "context_recall"],
        help="LLM metric to score (repeatable; default: all five)",
    )
    _common(ragas)


def _add_calibration(esub: Any) -> None:
    """`needle eval calibration` and its options."""
    calibration = esub.add_parser(
        "calibration", help="how well the confidence separates relevant top results from wrong ones; fit its weights"
    )
    calibration.add_argument("--dataset", type=Path, help="BEIR folder")
    calibration.add_argument("--split", default="test", help="BEIR qrels split (default: test)")
    calibration.add_argument("--golden", type=Path, help="golden file (its top results judged by `expected`)")
    calibration.add_argument(
        "--golden-as-index",
        action="store_true",
        help="run only the off-topic questions on the golden corpus, not its queries (fit without them)",
    )
    calibration.add_argument(
        "--offtopic", type=Path, help="off-topic questions (eval/golden/offtopic.yml), run on every index"
    )
    calibration.add_argument("--offtopic-split", default=None, help="which off-topic questions (default: --split)")
    calibration.add_argument(
        "--pipeline",
        action="append",
        dest="pipelines",
        metavar="NAME|FILE",
        help="graph to score (repeatable; default: search, vsearch, query)",
    )
    calibration.add_argument("--limit", type=int, default=None, help="only the first N queries of each data set")
    calibration.add_argument(
        "--fit", action="store_true", help="fit each graph's weights on these queries and report with them"
    )
    calibration.add_argument("--write", action="store_true", help="with --fit: write the weights into the graphs' YAML")
    calibration.add_argument("--l2", type=float, default=1.0, help="the fit's L2 penalty (default: 1.0)")
    calibration.add_argument("--bins", type=int, default=10, help="reliability diagram bins (default: 10)")
    calibration.add_argument(
        "--plot", type=Path, default=None, help="where the reliability diagram goes (default: beside the report)"
    )
    _common(calibration)


def _add_decompose(esub: Any) -> None:
    """`needle eval decompose` and its options."""
    decompose = esub.add_parser(
        "decompose",
        help="multi-part questions made of two golden questions: are both parts found, with and without splitting",
    )
    decompose.add_argument(
        "--golden", type=Path, default=DEFAULT_GOLDEN, help="golden file (default: eval/golden/demo.yml)"
    )
    decompose.add_argument("--pipeline", default="query", help="graph (default: query)")
    decompose.add_argument("--pairs", type=int, default=60, help="how many question pairs (default: 60)")
    decompose.add_argument("--seed", type=int, default=0, help="seed of the pairing (default: 0)")
    decompose.add_argument(
        "--joiner",
        action="append",
        dest="joiners",
        metavar="TEMPLATE",
        help="how two questions are joined, with {a} and {b} (repeatable; default: the rule forms)",
    )
    _common(decompose)


def _add_retry(esub: Any) -> None:
    """`needle eval retry` and its options."""
    retry = esub.add_parser(
        "retry", help="self-RAG: answer each golden question with the retry loop off and on (the `llm:` server)"
    )
    retry.add_argument(
        "--golden",
        type=Path,
        default=Path("eval/golden/answers.yml"),
        help="golden file (default: eval/golden/answers.yml)",
    )
    retry.add_argument("--pipeline", default="rag", help="answer graph with a `retry` stage (default: rag)")
    retry.add_argument("--contexts", type=int, default=3, help="chunks given to the LLM (default: 3)")
    retry.add_argument("--limit", type=int, default=None, help="only the first N questions")
    retry.add_argument(
        "--set",
        action="append",
        dest="overrides",
        metavar="COMPONENT.PARAM=VALUE",
        help="override a parameter of the graph for both runs (repeatable)",
    )
    _common(retry)


def _add_interactions(esub: Any) -> None:
    """`needle eval interactions` and its options."""
    interactions = esub.add_parser(
        "interactions", help="per-variant table of an online A/B test from needle serve's interaction log"
    )
    interactions.add_argument(
        "log",
        nargs="?",
        type=Path,
        default=None,
        help="the log (default: serve.interaction_log, else DATA_DIR/interactions.jsonl)",
    )
    interactions.add_argument("--json", action="store_true", help="print the rows as JSON")


def _interactions(args: argparse.Namespace) -> int:
    from needle.core.settings import load_settings
    from needle.evaluation.interactions import format_table, read_log, variant_table

    if args.log is None:
        settings = load_settings()
        args.log = Path(settings.serve.interaction_log or settings.data_dir / "interactions.jsonl")
    rows = variant_table(read_log(args.log.expanduser()))
    print(json.dumps(rows, indent=2) if args.json else format_table(rows))
    return 0


def _positive(value: int | None, name: str) -> None:
    if value is not None and value < 1:
        raise ValueError(f"{name} must be > 0, got {value}")


def _emit(report: dict[str, Any], markdown: str, args: argparse.Namespace, files: list[Path]) -> None:
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print(markdown)
        for path in files:
            print(f"report: {path}")


def _golden(args: argparse.Namespace) -> int:
    from needle.evaluation import golden as golden_eval
    from needle.evaluation.reports import label, write_report

    _positive(args.candidates, "--candidates")
    golden = golden_eval.load_golden(_existing(args.file, "golden file"))
    thresholds = []
    if not args.no_thresholds:
        own = golden.path.parent / f"{golden.name}-thresholds.yml"
        path = args.thresholds or (own if own.is_file() else golden.path.parent / "thresholds.yml")
        if args.thresholds is not None or path.exists():
            thresholds = golden_eval.load_thresholds(_existing(path, "thresholds file"))
    needle = golden_eval.prepare_index(golden, cache=args.cache)
    modes = args.modes or list(golden_eval.MODES)
    report = golden_eval.evaluate_golden(
        needle, golden, modes, args.candidates, thresholds, progress=sys.stderr.isatty()
    )
    markdown = golden_eval.format_table(report)
    stem = write_report(report, markdown, args.reports, label("+".join(label(m) for m in modes), golden.name))
    _emit(report, markdown, args, [stem.with_name(stem.name + ".json"), stem.with_name(stem.name + ".md")])
    return 0 if report["thresholds"]["passed"] else 1


def _beir(args: argparse.Namespace) -> int:
    from needle.evaluation import beir

    _positive(args.candidates, "--candidates")
    _positive(args.limit, "--limit")
    dataset = _existing(args.dataset, "dataset folder")
    report = beir.evaluate(
        dataset,
        args.pipeline,
        split=args.split,
        candidates=args.candidates,
        limit=args.limit,
        cache=args.cache or beir.DEFAULT_CACHE,
        reports_dir=args.reports,
    )
    markdown = beir.format_table(report)
    summary = Path(report["report_file"]).with_suffix(".md")
    summary.write_text(markdown + "\n", encoding="utf-8")
    _emit(report, markdown, args, [Path(report["report_file"]), summary])
    return 0


def _compare(args: argparse.Namespace) -> int:
    from needle.evaluation import compare
    from needle.evaluation import golden as golden_eval
    from needle.evaluation.reports import label, write_report
    from needle.runtime.loader import pipeline_path

    _positive(args.candidates, "--candidates")
    _positive(args.limit, "--limit")
    _positive(args.permutations, "--permutations")
    if args.margin < 0:
        raise ValueError(f"--margin must be >= 0, got {args.margin}")
    for pipeline in (args.a, args.b):
        pipeline_path(pipeline)  # a missing file fails before any index is built
    options = {"primary": args.metric, "margin": args.margin, "permutations": args.permutations, "seed": args.seed}
    if args.golden is not None:
        if args.metric not in golden_eval.METRICS:
            raise ValueError(f"unknown metric {args.metric!r}; use one of {', '.join(golden_eval.METRICS)}")
        golden = golden_eval.load_golden(_existing(args.golden, "golden file"))
        needle = golden_eval.prepare_index(golden, cache=args.cache)
        report = compare.compare_golden(
            needle,
            golden,
            args.a,
            args.b,
            mode=args.mode,
            limit=args.limit,
            candidates=args.candidates or golden_eval.DEFAULT_CANDIDATES,
            progress=sys.stderr.isatty(),
            **options,
        )
    else:
        if args.mode:
            raise ValueError("--mode applies to --golden only")
        report = compare.compare_beir(
            _existing(args.dataset, "dataset folder"),
            args.a,
            args.b,
            split=args.split,
            limit=args.limit,
            candidates=args.candidates or 300,
            cache=args.cache,
            **options,
        )
    markdown = compare.format_comparison(report)
    stem = write_report(
        report, markdown, args.reports, label(f"{label(args.a)}-vs-{label(args.b)}", report["data_name"])
    )
    files = [stem.with_name(stem.name + ".json"), stem.with_name(stem.name + ".md")]
    try:
        files.append(compare.plot_comparison(report, stem.with_name(stem.name + ".png")))
    except ImportError as error:
        print(f"warning: no chart: {error}", file=sys.stderr)
    _emit(report, markdown, args, files)
    return 1 if report["regression"] else 0


def _ragas(args: argparse.Namespace) -> int:
    from needle.evaluation import golden as golden_eval
    from needle.evaluation.reports import label, without_nan, write_report
    from needle.runtime.loader import pipeline_path

    _positive(args.candidates, "--candidates")
    _positive(args.limit, "--limit")
    _positive(args.contexts, "--contexts")
    _positive(args.max_tokens, "--max-tokens")
    if args.retries < 0:
        raise ValueError(f"--retries must be >= 0, got {args.retries}")
    if not 1 <= args.k <= 10:
        raise ValueError(f"--k must be between 1 and 10, got {args.k}")
    pipeline_path(args.pipeline)  # a missing file fails before any index is built
    if args.llm:
        pipeline_path(args.rag_pipeline)
    if args.judge_timeout is not None and args.judge_timeout <= 0:
        raise ValueError(f"--judge-timeout must be > 0 seconds, got {args.judge_timeout}")
    try:
        from needle.evaluation import ragas_retrieval
    except ImportError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    progress = sys.stderr.isatty()
    if args.golden is not None:
        golden = golden_eval.load_golden(_existing(args.golden, "golden file"))
        needle = golden_eval.prepare_index(golden, cache=args.cache)
        candidates = args.candidates or golden_eval.DEFAULT_CANDIDATES
        runs = ragas_retrieval.golden_rankings(needle, golden, args.pipeline, candidates, args.limit, progress)
        queries = golden_eval.answerable_only(golden.for_mode(args.pipeline))
        cases = [{"id": q.id, "question": q.query, "reference": q.reference} for q in queries[: args.limit or None]]
        data, data_name = f"golden:{golden.path}", golden.name
    else:
        from needle.core.settings import load_settings
        from needle.evaluation import beir

        dataset = beir.load_dataset(_existing(args.dataset, "dataset folder"), args.split)
        candidates = args.candidates or 300
        settings = beir.eval_settings(load_settings(), dataset, args.cache or beir.DEFAULT_CACHE, candidates)
        needle, _ = beir.prepare_index(dataset, settings)
        runs = ragas_retrieval.beir_rankings(needle, dataset, args.pipeline, candidates, args.limit)
        cases = [{"id": r.id, "question": dataset.queries[r.id], "reference": None} for r in runs]
        data, data_name = f"beir:{dataset.name} ({args.split})", dataset.name
    report: dict[str, Any] = {
        "kind": "ragas",
        "data": data,
        "retrieval": ragas_retrieval.retrieval_section(runs, args.pipeline, args.k),
        "answers": None,
    }
    markdown = f"ragas on {data}\n\n" + ragas_retrieval.format_retrieval(report["retrieval"])
    if args.llm:
        from needle.evaluation import ragas_answers

        judge = ragas_answers.judge_settings(needle.settings, args.judge_url, args.judge_model, args.judge_timeout)
        report["answers"] = ragas_answers.answers_section(
            needle,
            cases,
            args.rag_pipeline,
            args.contexts,
            args.structured_output,
            args.max_tokens,
            args.retries,
            metrics=args.metrics or ragas_answers.METRICS,
            progress=progress,
            judge=judge,
        )
        markdown += "\n\n" + ragas_answers.format_answers(report["answers"])
    run_result = ragas_answers.run_result(report["answers"]) if args.llm else None
    report = without_nan(report)
    names = [label(args.pipeline), *([label(args.rag_pipeline)] if args.llm else [])]
    stem = write_report(report, markdown, args.reports, label("ragas-" + "+".join(names), data_name))
    files = [stem.with_name(stem.name + ".json"), stem.with_name(stem.name + ".md")]
    if run_result is not None:  # Haystack's EvaluationRunResult, one row per answer
        files.append(stem.with_name(stem.name + ".csv"))
        run_result.detailed_report(output_format="csv", csv_file=str(files[-1]))
    _emit(report, markdown, args, files)
    return 0 if report["retrieval"]["agree"] else 1


def _calibration(args: argparse.Namespace) -> int:
    from needle.evaluation import calibration
    from needle.evaluation import golden as golden_eval
    from needle.evaluation.beir import doc_id_from_path
    from needle.evaluation.reports import label, without_nan, write_report
    from needle.runtime.loader import pipeline_path

    _positive(args.limit, "--limit")
    _positive(args.bins, "--bins")
    if args.l2 < 0:
        raise ValueError(f"--l2 must be >= 0, got {args.l2}")
    if args.write and not args.fit:
        raise ValueError("--write needs --fit")
    if args.dataset is None and args.golden is None:
        raise ValueError("give --dataset, --golden or both")
    pipelines = args.pipelines or ["search", "vsearch", "query"]
    for pipeline in pipelines:
        pipeline_path(pipeline)
    offtopic = []
    if args.offtopic is not None:
        offtopic = calibration.offtopic_questions(
            _existing(args.offtopic, "off-topic file"), args.offtopic_split or args.split
        )
        offtopic = offtopic[: args.limit or None]
    runs: list[tuple[Any, list[calibration.Case], Callable[[Any], str]]] = []
    if args.dataset is not None:
        from needle.core.settings import load_settings
        from needle.evaluation import beir

        dataset = beir.load_dataset(_existing(args.dataset, "dataset folder"), args.split)
        needle, _ = beir.prepare_index(
            dataset, beir.eval_settings(load_settings(), dataset, args.cache or beir.DEFAULT_CACHE)
        )
        source = f"{dataset.name} {args.split}"
        ids = sorted(dataset.queries)[: args.limit or None]
        cases = [
            calibration.Case(q, dataset.queries[q], source, frozenset(d for d, g in dataset.qrels[q].items() if g > 0))
            for q in ids
        ]

        def key(hit: Any) -> str:
            return doc_id_from_path(hit.path)

        runs.append((needle, cases, key))
        if offtopic:
            runs.append((needle, calibration.offtopic_cases(offtopic, f"off-topic on {dataset.name}"), key))
    if args.golden is not None:
        golden = golden_eval.load_golden(_existing(args.golden, "golden file"))
        needle = golden_eval.prepare_index(golden, cache=args.cache)
        if not args.golden_as_index:
            cases = [
                calibration.Case(q.id, q.query, golden.name, frozenset(q.expected))
                for q in golden.queries[: args.limit or None]
            ]
            runs.append((needle, cases, lambda h: h.path))
        if offtopic:
            runs.append((needle, calibration.offtopic_cases(offtopic, f"off-topic on {golden.name}"), lambda h: h.path))
    report = calibration.evaluate(
        runs, pipelines, fit=args.fit, l2=args.l2, bins=args.bins, progress=sys.stderr.isatty()
    )
    markdown = calibration.format_report(report)
    files = []
    if args.write:
        for pipeline, result in report["pipelines"].items():
            try:
                written = calibration.write_weights(pipeline, result["fit"]["weights"], result["fit"]["bias"])
                markdown += f"\nwrote the weights into {written}"
            except ValueError as error:
                print(f"warning: {error}", file=sys.stderr)
    names = "+".join(label(p) for p in pipelines)
    stem = write_report(
        without_nan(report), markdown, args.reports, label(f"calibration-{names}", "+".join(report["data"]))
    )
    files += [stem.with_name(stem.name + ".json"), stem.with_name(stem.name + ".md")]
    try:
        files.append(calibration.plot_reliability(report, args.plot or stem.with_name(stem.name + ".png")))
    except ImportError as error:
        print(f"warning: no chart: {error}", file=sys.stderr)
    _emit(report, markdown, args, files)
    return 0


def _decompose(args: argparse.Namespace) -> int:
    from needle.evaluation import decomposition
    from needle.evaluation import golden as golden_eval
    from needle.evaluation.reports import label, write_report
    from needle.runtime.loader import pipeline_path

    _positive(args.pairs, "--pairs")
    pipeline_path(args.pipeline)
    golden = golden_eval.load_golden(_existing(args.golden, "golden file"))
    needle = golden_eval.prepare_index(golden, cache=args.cache)
    report = decomposition.evaluate(
        needle,
        golden,
        args.pipeline,
        pairs=args.pairs,
        seed=args.seed,
        joiners=args.joiners or list(decomposition.JOINERS),
        progress=sys.stderr.isatty(),
    )
    markdown = decomposition.format_report(report)
    stem = write_report(report, markdown, args.reports, label(f"decompose-{label(args.pipeline)}", golden.name))
    _emit(report, markdown, args, [stem.with_name(stem.name + ".json"), stem.with_name(stem.name + ".md")])
    return 0


def _retry(args: argparse.Namespace) -> int:
    from needle.core.settings import parse_assignments
    from needle.evaluation import golden as golden_eval
    from needle.evaluation import selfrag
    from needle.evaluation.reports import label, write_report
    from needle.runtime.loader import pipeline_path

    _positive(args.contexts, "--contexts")
    _positive(args.limit, "--limit")
    pipeline_path(args.pipeline)
    overrides: dict[str, Any] = {}
    for value in args.overrides or []:
        overrides.update(parse_assignments(value))
    golden = golden_eval.load_golden(_existing(args.golden, "golden file"))
    needle = golden_eval.prepare_index(golden, cache=args.cache)
    report = selfrag.evaluate(
        needle,
        golden.queries[: args.limit or None],
        args.pipeline,
        args.contexts,
        overrides,
        progress=sys.stderr.isatty(),
    )
    report["model"] = needle.settings.llm.model
    markdown = selfrag.format_report(report, needle.settings.llm.model)
    stem = write_report(report, markdown, args.reports, label(f"retry-{label(args.pipeline)}", golden.name))
    _emit(report, markdown, args, [stem.with_name(stem.name + ".json"), stem.with_name(stem.name + ".md")])
    return 0


def run_eval(args: argparse.Namespace) -> int:
    """
    Run the `eval` subcommand `args.eval_command`.

    :returns: The exit code: 0 pass, 1 thresholds failed, B regressed or ragas disagreed with our metrics.
    :raises ValueError: On a usage mistake (missing file, bad number, invalid golden file).
    """
    handlers = {
        "golden": _golden,
        "beir": _beir,
        "compare": _compare,
        "ragas": _ragas,
        "calibration": _calibration,
        "decompose": _decompose,
        "retry": _retry,
        "interactions": _interactions,
    }
    return handlers[args.eval_command](args)
