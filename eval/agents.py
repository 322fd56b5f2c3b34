"""What an agent gets from Needle's MCP tools: the tool list's size, an answer's size, how far the label can be
trusted, whether snippets show the answer, and how soon `needle mcp` answers.

    python -m eval.agents                       # every part; writes eval/results/agents.md and agents.json
    python -m eval.agents --part confidence     # one part (tools, start, confidence, snippets; repeatable):
                                                # the others stay as eval/results/agents.json has them
    python -m eval.agents --tune                # first set each graph's label threshold from training data

Everything runs on the golden corpus (`needle/demo/notes`, indexed once into the eval cache):

- **tools**: `needle mcp` started by the MCP SDK's stdio client, as a desktop agent starts it; the
  `tools/list` answer's compact JSON size, and the size of `query`'s answer to 10 golden queries (10 hits
  each; snippets only, and with `full`).
- **start**: spawn → `initialize` answered, → `tools/list` answered, → first `query` answered, for a first
  `needle mcp` (it owns the index) and a second one started while the first runs (it joins the first);
  `--runs` times, medians; the server's CPU seconds until `initialize` is answered, and what importing the
  MCP SDK's parts (its types, its low-level and its high-level server with the stdio transport) and
  `needle.shells.mcp` costs a fresh interpreter.
- **confidence**: in process, each search graph over the golden questions (`eval/golden/demo.yml`), the
  multi-part questions made of two of them ("A, and also B", 60 pairs, seed 0; `query` with `decompose`,
  counted per part) and the off-topic test questions (`eval/golden/offtopic.yml`), false alarms also by the
  golden questions' difficulty; with `--before CHECKOUT`, that checkout's graphs too (and how many golden
  questions got other results from them: the label must not change ranking), and a plot
  (`eval/results/agents-confidence.png`). A question is answered
  when a file expected for it is among the top 3 results. False alarm: the label is not PASS although a top-3
  hit answers; miss: PASS although none does; off-topic PASS: PASS on a question nothing answers.
- **snippets**: the snippets of `query`'s top 3 for each golden question: the share whose lines contain a
  query term (or its stem), or the chunk's sentence closest to the query in meaning (the bundled dense
  model's cosine); the share made only of heading, fence or blank lines; with `--before CHECKOUT`, the same
  chunks cut by that checkout's extractor beside.

`--tune` first refits each graph's confidence (`ConfidenceScorer` weights, by `needle.evaluation.calibration`)
to "a top-3 hit answers" on training questions only: `eval/golden/train.yml` (written from the notes, never
from the golden questions), 90 pairs of them joined (per part), `eval/golden/filters.yml` (filters, dates)
and the off-topic `train` questions; then moves the bias so that the label's 0.5 is where 3% of those
off-topic training questions would pass (and, for a graph that reads the `sentence` signal, counts the training
false alarms of the same fit without it). Nothing is read off the test questions above; the measurements then run with
the weights written into the graphs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from eval.demo_data import DEMO_GOLDEN, OFFTOPIC, REPO, TRAIN
from eval.result_files import RESULTS, command_line, pyplot, save_figure, write_json
from needle.core.requests import QueryRequest, SearchRequest
from needle.evaluation.memory import cpu_seconds

TRAIN_PAIRS = 90
L2 = 1.0
GRAPHS = ("search", "vsearch", "vsearch-sentence", "query")
PARTS = ("tools", "start", "confidence", "snippets")
TOP = 3
BEFORE: Path | None = None  # --before: a checkout whose snippet extractor the snippets are compared with
OFFTOPIC_TRAIN_PASS = 0.03


def _golden_needle() -> tuple[Any, Any]:
    from needle.evaluation.golden import load_golden, prepare_index

    golden = load_golden(DEMO_GOLDEN)
    return golden, prepare_index(golden)


def _answered(results: list[Any], expected: Any) -> bool:
    return any(hit.path in set(expected) for hit in results[:TOP])


# --- confidence -------------------------------------------------------------------------------------------


def _graph_path(graph: str) -> Path:
    return REPO / "pipelines" / f"{graph}.yml"


def _train_rows(graph: str) -> list[dict[str, Any]]:
    """
    The training questions' signals and whether a top-3 hit answers, counted as the measurements count them:
    the questions of each `TRAIN` set (written from the notes, never from the golden questions; filters and
    dates over the same notes), pairs of the first set's questions joined into multi-part questions (`query`
    with `decompose`; one row per part: does a top-3 hit answer that part), and the off-topic training
    questions (never answered; one with no result at all stays a row, as it stays in the off-topic count).
    """
    from needle.evaluation.calibration import offtopic_questions
    from needle.evaluation.decomposition import join_questions, pairs_of
    from needle.evaluation.golden import load_golden, prepare_index

    rows = []
    for number, path in enumerate(TRAIN):
        train = load_golden(path)
        needle = prepare_index(train)
        filters = {"now": train.today} if train.today else None
        asked: list[tuple[str, Any, dict[str, Any] | None, bool | None]] = []
        asked += [(q.query, [q.expected], filters, None) for q in train.queries]
        if number == 0:
            asked += [
                (
                    join_questions("{a}, and also {b}", a.query, b.query),
                    [a.expected, b.expected],
                    None,
                    True if graph == "query" else None,
                )
                for a, b in pairs_of(list(train.queries), TRAIN_PAIRS, 1)
            ]
            asked += [(q, [], None, None) for q in offtopic_questions(OFFTOPIC, "train")]
        for text, parts, given, decompose in asked:
            request = QueryRequest(query=text, limit=10, explain=True, decompose=decompose, **(given or {}))
            answer = needle.search(request, pipeline=graph)
            signals = (answer.explain or {}).get("confidence") or {}
            for relevant in [_answered(answer.results, expected) for expected in parts] or [False]:
                rows.append({"relevant": relevant, "offtopic": not parts, "label": answer.label, "signals": signals})
        needle.close()
    return rows


def tune() -> dict[str, Any]:
    """
    Fit each graph's confidence to "a top-3 hit answers" on the training questions (`_train_rows`), then move
    its bias so that 0.5, where the label turns PASS, is where `OFFTOPIC_TRAIN_PASS` of the off-topic training
    questions would pass; write the weights and bias into the graph.
    """
    from needle.evaluation.calibration import rescore, write_weights

    chosen = {}
    for graph in GRAPHS:
        rows = _train_rows(graph)
        weights, bias = _fit(rows)
        write_weights(graph, weights, bias)
        passed = [r for r in rescore(rows, weights, bias, 0.5) if not r["offtopic"]]
        chosen[graph] = {
            "weights": weights,
            "bias": bias,
            "rows": len(rows),
            "train_false_alarms": sum(1 for r in passed if r["relevant"] and r["label"] != "PASS"),
            "train_answered": sum(1 for r in passed if r["relevant"]),
        }
        if "sentence" in weights:  # what the sentence signal adds: the same fit without it
            chosen[graph]["train_false_alarms_without_sentence"] = _false_alarms(rows, _fit(rows, without="sentence"))
        print(f"tune: {graph}: {chosen[graph]}", file=sys.stderr)
    return chosen


def _fit(rows: list[dict[str, Any]], without: str | None = None) -> tuple[dict[str, float], float]:
    """
    The logistic fit of "a top-3 hit answers" on the rows' signals (all but `without`), its bias then moved so
    that 0.5 is where `OFFTOPIC_TRAIN_PASS` of the off-topic rows would pass.
    """
    from needle.evaluation.calibration import fit_logistic, fitted_features, rescore

    scored_rows = [r for r in rows if r["label"] != "NO_RESULTS"]
    features = [f for f in fitted_features(scored_rows) if f != without]
    weights, bias = fit_logistic(scored_rows, features, l2=L2)
    scored = rescore(rows, weights, bias, 0.5)
    off = sorted(r["confidence"] if r["label"] != "NO_RESULTS" else 0.0 for r in scored if r["offtopic"])
    quantile = off[min(len(off) - 1, math.ceil((1 - OFFTOPIC_TRAIN_PASS) * len(off)))]
    quantile = min(max(quantile, 1e-6), 1 - 1e-6)
    return weights, round(bias - math.log(quantile / (1 - quantile)), 3)


def _false_alarms(rows: list[dict[str, Any]], fitted: tuple[dict[str, float], float]) -> int:
    """How many answered (not off-topic) rows the fitted weights would not PASS."""
    from needle.evaluation.calibration import rescore

    return sum(1 for r in rescore(rows, *fitted, 0.5) if not r["offtopic"] and r["relevant"] and r["label"] != "PASS")


def confidence(needle: Any, golden: Any) -> dict[str, Any]:
    """False alarms, misses and off-topic PASS per graph, single-part and per part of multi-part questions."""
    from needle.evaluation.calibration import offtopic_questions
    from needle.evaluation.decomposition import join_questions, pairs_of

    offtopic = offtopic_questions(OFFTOPIC, "test")
    pairs = pairs_of(list(golden.queries), 60, 0)
    report: dict[str, Any] = {}
    graphs = [(graph, graph) for graph in GRAPHS]
    if BEFORE:
        graphs += [
            (f"{graph} (before)", str(BEFORE / "pipelines" / f"{graph}.yml"))
            for graph in GRAPHS
            if (BEFORE / "pipelines" / f"{graph}.yml").exists()
        ]
    ranked: dict[str, list[Any]] = {}
    for name, graph in graphs:
        single, by_difficulty, ranked[name] = [], {}, []
        for q in golden.queries:
            answer = needle.search(SearchRequest(query=q.query, limit=10), pipeline=graph)
            single.append((answer.label == "PASS", _answered(answer.results, q.expected)))
            by_difficulty.setdefault(q.difficulty, []).append(single[-1])
            ranked[name].append([(hit.path, hit.start_line, hit.score) for hit in answer.results])
        parts = []
        for a, b in pairs:
            joined = join_questions("{a}, and also {b}", a.query, b.query)
            decompose = True if name.startswith("query") else None
            answer = needle.search(QueryRequest(query=joined, limit=10, decompose=decompose), pipeline=graph)
            passed = answer.label == "PASS"
            parts += [(passed, _answered(answer.results, a.expected)), (passed, _answered(answer.results, b.expected))]
        off = [needle.search(SearchRequest(query=q, limit=10), pipeline=graph).label == "PASS" for q in offtopic]
        report[name] = {
            "single": _rates(single),
            "parts": _rates(parts),
            "offtopic_pass": sum(off),
            "offtopic": len(off),
            "by_difficulty": {d: _rates(rows) for d, rows in by_difficulty.items()},
        }
        before = ranked.get(name.removesuffix(" (before)")) if name.endswith(" (before)") else None
        if before is not None:  # the label must not change ranking: the same files, lines and scores
            report[name]["other_results"] = sum(1 for a, b in zip(before, ranked[name]) if a != b)
    return report


def _rates(rows: list[tuple[bool, bool]]) -> dict[str, Any]:
    answered = [p for p, a in rows if a]
    unanswered = [p for p, a in rows if not a]
    return {
        "questions": len(rows),
        "answered": len(answered),
        "false_alarms": sum(1 for p in answered if not p),
        "misses": sum(1 for p in unanswered if p),
        "unanswered": len(unanswered),
    }


# --- snippets ---------------------------------------------------------------------------------------------


def _sentence_embedder(needle: Any) -> Any:
    """The bundled dense model through fastembed: what "meaning" is measured with (independent of the snippets)."""
    from fastembed import TextEmbedding

    from needle.core.model_files import LOCAL_DENSE_MODEL, dense_embedder_params

    params = dense_embedder_params(LOCAL_DENSE_MODEL, needle.settings.model_dir)
    return TextEmbedding(model_name=params["model"], local_files_only=True, **params["model_kwargs"])


def _sentences(text: str) -> list[str]:
    from haystack_integrations.components.needle._text import is_content

    return [
        part.strip()
        for line in text.split("\n")
        if is_content(line)
        for part in re.split(r"(?<=[.!?])\s+", line)
        if len(part.strip()) > 3
    ]


def snippets(needle: Any, golden: Any) -> dict[str, Any]:
    """
    Do the snippets of `query`'s top 3 show the answer, and never only scaffolding? Measured for the snippets
    Needle returns and, on the same chunks, for the extractor given with `--before` (an older checkout's).
    """
    import numpy as np
    from haystack import Document

    from haystack_integrations.components.needle._scores import query_terms, term_hits
    from haystack_integrations.components.needle._text import is_content

    embedder = _sentence_embedder(needle)
    extractors: dict[str, Any] = {"now": None}  # the graph's own snippet
    if BEFORE:
        import importlib.util

        spec = importlib.util.spec_from_file_location("before_snippets", BEFORE / "components" / "snippet_extractor.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        extractors["before"] = module.SnippetExtractor(max_lines=10, context_lines=2)
    counts = {
        name: {"snippets": 0, "term": 0, "show_answer": 0, "only_scaffolding": 0, "start_on_scaffolding": 0}
        for name in extractors
    }
    for q in golden.queries:
        terms = query_terms(q.query)
        stems = sorted({t[:5] for t in terms if len(t) >= 6})
        query_vector = next(iter(embedder.query_embed([q.query])))
        for hit in needle.search(SearchRequest(query=q.query, limit=TOP), pipeline="query").results:
            sentences = _sentences(hit.text or "")
            best = ""
            if sentences:
                vectors = np.array(list(embedder.embed(sentences)))
                best = sentences[int(np.argmax(vectors @ query_vector))]
            doc = Document(
                content=hit.text, meta={"start_line": hit.start_line, "collection": hit.collection, "path": hit.path}
            )
            for name, extractor in extractors.items():
                snippet = (
                    hit.snippet
                    if extractor is None
                    else extractor.run([doc], query=q.query)["documents"][0].meta["snippet"]
                )
                body = snippet.split("\n")[1:]
                joined = "\n".join(body)
                c = counts[name]
                c["snippets"] += 1
                has_term = term_hits(joined, terms + stems)[0] > 0
                c["term"] += has_term
                c["show_answer"] += has_term or (best != "" and best in joined)
                c["only_scaffolding"] += not any(is_content(line) for line in body)
                c["start_on_scaffolding"] += bool(body) and not is_content(body[0])
    return counts


# --- the MCP server ---------------------------------------------------------------------------------------


def _params(data_dir: Path) -> Any:
    from mcp.client.stdio import StdioServerParameters

    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEEDLE_", "HAYHOOKS_"))}
    env.update({"NEEDLE_DATA_DIR": str(data_dir), "PYTHONPATH": str(REPO)})
    if os.environ.get("NEEDLE_MODEL_DIR"):
        env["NEEDLE_MODEL_DIR"] = os.environ["NEEDLE_MODEL_DIR"]
    return StdioServerParameters(
        command=sys.executable, args=["-m", "needle.shells.cli", "mcp"], env=env, cwd=str(REPO)
    )


def tools(data_dir: Path, golden: Any) -> dict[str, Any]:
    """The tool list's compact size, and `query`'s answer sizes over 10 golden questions."""
    import anyio
    from mcp import Client

    async def go() -> dict[str, Any]:
        async with Client(_params(data_dir)) as client:
            listed = await client.list_tools()
            sizes, full = [], []
            for q in list(golden.queries)[:10]:
                sizes.append(len((await client.call_tool("query", {"query": q.query})).content[0].text))
                full.append(len((await client.call_tool("query", {"query": q.query, "full": True})).content[0].text))
            return {
                "tools": len(listed.tools),
                "tools_list_chars": len(listed.model_dump_json(by_alias=True, exclude_none=True)),
                "per_tool": {t.name: len(t.model_dump_json(by_alias=True, exclude_none=True)) for t in listed.tools},
                "answer_chars_median": statistics.median(sizes),
                "answer_chars_max": max(sizes),
                "full_answer_chars_median": statistics.median(full),
            }

    return anyio.run(go)


def start(data_dir: Path, runs: int) -> dict[str, Any]:
    """Spawn → initialize, → tools/list, → first query answered, for a first and a second `needle mcp`."""
    import anyio
    from mcp import Client

    async def one(
        times: dict[str, list[float]], prefix: str, hold: anyio.Event | None, ready: anyio.Event | None
    ) -> None:
        began = time.perf_counter()
        async with Client(_params(data_dir)) as client:
            times[f"{prefix}initialize"].append(time.perf_counter() - began)
            await client.list_tools()
            times[f"{prefix}tools/list"].append(time.perf_counter() - began)
            call = await client.call_tool("query", {"query": "certbot renew", "limit": 3})
            if call.is_error:
                raise RuntimeError(call.content[0].text)
            times[f"{prefix}first query"].append(time.perf_counter() - began)
            if ready is not None:
                ready.set()
            if hold is not None:
                await hold.wait()

    async def go() -> dict[str, list[float]]:
        times: dict[str, list[float]] = {
            f"{who} {what}": [] for who in ("first", "second") for what in ("initialize", "tools/list", "first query")
        }
        for _ in range(runs):
            hold, ready = anyio.Event(), anyio.Event()
            async with anyio.create_task_group() as group:
                group.start_soon(one, times, "first ", hold, ready)
                await ready.wait()
                await one(times, "second ", None, None)
                hold.set()
        return times

    times = anyio.run(go)
    report = {key: {"median_s": statistics.median(values), "runs": values} for key, values in times.items()}
    cpu = [cpu_to_initialize(data_dir) for _ in range(runs)]
    report["initialize, CPU seconds of the server"] = {"median_s": statistics.median(cpu), "runs": cpu}
    for modules in IMPORTS:
        seconds = [cpu_to_import(modules) for _ in range(runs)]
        report[f"CPU seconds of `import {modules}` alone"] = {"median_s": statistics.median(seconds), "runs": seconds}
    return report


# What the server's start-up is made of: the SDK's types, its low-level server with the stdio transport (what a
# stdio server needs at least: the package's `__init__` imports the client and the high-level server as well),
# the high-level server Needle uses, and `needle.shells.mcp` itself.
IMPORTS = (
    "mcp_types",
    "mcp.server.lowlevel, mcp.server.stdio",
    "mcp.server.mcpserver, mcp.server.stdio",
    "needle.shells.mcp",
)


def cpu_to_import(modules: str) -> float:
    """CPU seconds (user + system) a fresh interpreter spends importing `modules`, start-up included."""
    import subprocess

    code = f"import resource, {modules}; r = resource.getrusage(resource.RUSAGE_SELF); print(r.ru_utime + r.ru_stime)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(REPO),
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    return float(out.stdout.strip())


def cpu_to_initialize(data_dir: Path) -> float:
    """
    CPU seconds `needle mcp` spends until it answers `initialize` (user + system, from /proc): what the
    wall time would be on an idle core, whatever else the machine runs.
    """
    import subprocess

    params = _params(data_dir)
    process = subprocess.Popen(
        [params.command, *params.args],
        env=params.env,
        cwd=params.cwd,
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        request = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "eval", "version": "0"},
            },
        }
        process.stdin.write(json.dumps(request) + "\n")
        process.stdin.flush()
        process.stdout.readline()
        return cpu_seconds(process.pid)
    finally:
        process.kill()
        process.wait()


# --- report -----------------------------------------------------------------------------------------------


def _pct(n: int, d: int) -> str:
    return f"{n} / {d} ({100 * n / d:.1f}%)" if d else "–"


def table(results: dict[str, Any]) -> str:
    out = []
    if "tools" in results:
        t = results["tools"]
        out += [
            "| measure | value | target |",
            "|---|---|---|",
            f"| `tools/list`, compact JSON, {t['tools']} tools | {t['tools_list_chars']:,} chars | ≤ 10,000 |",
            (
                f"| `query` answer, 10 hits (median / max of 10 golden questions) | {t['answer_chars_median']:,.0f} / "
                f"{t['answer_chars_max']:,} chars | ≤ 4,000 |"
            ),
            f"| the same with `full: true` (median) | {t['full_answer_chars_median']:,.0f} chars | |",
            "",
        ]
    if "confidence" in results:
        out += [
            (
                "| graph | questions | false alarms (not PASS, a top-3 hit answers) | misses (PASS, no top-3 hit "
                "answers) | off-topic PASS |"
            ),
            "|---|---|---|---|---|",
        ]
        for graph, r in results["confidence"].items():
            for kind, label in (("single", "golden"), ("parts", "multi-part, per part")):
                x = r[kind]
                off = _pct(r["offtopic_pass"], r["offtopic"]) if kind == "single" else ""
                out.append(
                    f"| {graph} | {label} ({x['questions']}) | {_pct(x['false_alarms'], x['answered'])} | "
                    f"{_pct(x['misses'], x['unanswered'])} | {off} |"
                )
        out.append("")
        difficulties = sorted({d for r in results["confidence"].values() for d in r.get("by_difficulty", {})})
        if difficulties:
            out += [
                "| false alarms on golden questions, by difficulty | " + " | ".join(difficulties) + " |",
                "|---|" + "---|" * len(difficulties),
            ]
            for graph, r in results["confidence"].items():
                rates = r.get("by_difficulty", {})
                out.append(
                    f"| {graph} | "
                    + " | ".join(
                        _pct(rates[d]["false_alarms"], rates[d]["answered"]) if d in rates else "–"
                        for d in difficulties
                    )
                    + " |"
                )
            out.append("")
        changed = {g: r["other_results"] for g, r in results["confidence"].items() if "other_results" in r}
        if changed:
            out += [
                "Golden questions whose results (files, lines, scores) differ from the before graph's: "
                + ", ".join(
                    f"{g.removesuffix(' (before)')} {n} of {results['confidence'][g]['single']['questions']}"
                    for g, n in changed.items()
                ),
                "",
            ]
    if "snippets" in results:
        runs = results["snippets"]
        names = list(runs)
        out += [
            "| snippets of `query`'s top 3, golden questions | " + " | ".join(names) + " | target |",
            "|---|" + "---|" * len(names) + "---|",
        ]
        for key, label, target in (
            ("show_answer", "show a query term (or its stem) or the chunk's sentence closest in meaning", "≥ 90%"),
            ("term", "show a query term (or its stem)", ""),
            ("only_scaffolding", "only heading, fence or blank lines", "0"),
            ("start_on_scaffolding", "start on a heading, fence or blank line", ""),
        ):
            out.append(
                f"| {label} | " + " | ".join(_pct(runs[n][key], runs[n]["snippets"]) for n in names) + f" | {target} |"
            )
        out.append("")
    if "start" in results:
        out += ["| `needle mcp`, spawn → | median s |", "|---|---|"]
        for key, value in results["start"].items():
            out.append(f"| {key} | {value['median_s']:.2f} |")
        out.append("")
    return "\n".join(out)


def plot(results: dict[str, Any], path: Path) -> Path:
    """Bars: false alarms (golden, multi-part parts) and off-topic PASS per graph, before and now."""
    plt = pyplot()
    rows = results["confidence"]
    names = [g for g in GRAPHS if g in rows]
    measures = [
        ("false alarms, golden", lambda r: r["single"]["false_alarms"] / max(1, r["single"]["answered"])),
        ("false alarms, multi-part (per part)", lambda r: r["parts"]["false_alarms"] / max(1, r["parts"]["answered"])),
        ("off-topic PASS", lambda r: r["offtopic_pass"] / max(1, r["offtopic"])),
    ]
    figure, axes = plt.subplots(1, len(measures), figsize=(12, 3.6), sharey=True)
    for axis, (title, value) in zip(axes, measures):
        width = 0.38
        for shift, suffix, colour in ((-width / 2, " (before)", "#bbbbbb"), (width / 2, "", "#3070b0")):
            present = [n for n in names if n + suffix in rows]
            axis.bar(
                [names.index(n) + shift for n in present],
                [100 * value(rows[n + suffix]) for n in present],
                width,
                color=colour,
                label="before" if suffix else "now",
            )
        axis.axhline(10 if "false" in title else 5, color="#c04040", linestyle="--", linewidth=1)
        axis.set_xticks(range(len(names)), names)
        axis.set_title(title, fontsize=10)
    axes[0].set_ylabel("% of questions")
    axes[0].legend(fontsize=8)
    figure.suptitle("The label on golden and off-topic test questions (dashed: the aim)", fontsize=11)
    return save_figure(figure, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.agents", description=__doc__.split("\n")[0])
    parser.add_argument("--part", action="append", choices=PARTS, help="what to measure (default: all)")
    parser.add_argument("--runs", type=int, default=5, help="start-up runs (default 5)")
    parser.add_argument("--tune", action="store_true", help="set the label thresholds from training data first")
    parser.add_argument("--out", type=Path, default=RESULTS / "agents.md")
    parser.add_argument("--before", type=Path, help="a checkout whose snippet extractor to compare with (e.g. main's)")
    args = parser.parse_args(argv)
    global BEFORE
    BEFORE = args.before
    parts = args.part or list(PARTS)
    results: dict[str, Any] = {}
    if args.tune:
        results["fit"] = tune()
    golden, needle = _golden_needle()
    if "confidence" in parts:
        results["confidence"] = confidence(needle, golden)
    if "snippets" in parts:
        results["snippets"] = snippets(needle, golden)
    data_dir = needle.settings.data_dir
    if "tools" in parts or "start" in parts:
        needle.close()
    if "tools" in parts:
        results["tools"] = tools(data_dir, golden)
    if "start" in parts:
        results["start"] = start(data_dir, args.runs)
    command = command_line("eval.agents", argv)
    stored = args.out.with_suffix(".json")
    if args.part and stored.is_file():  # some parts again: the others stay as the file has them
        results = {**json.loads(stored.read_text()), **results}
    results.setdefault("commands", {}).update({part: command.strip() for part in parts})
    text = table(results)
    if "confidence" in results:
        text += f"\n![the label before and now]({plot(results, RESULTS / 'agents-confidence.png').name})\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    commands = sorted(set(results["commands"].values()))
    args.out.write_text("Printed by " + ", ".join(f"`{c}`" for c in commands) + f"\n\n{text}\n")
    write_json(stored, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
