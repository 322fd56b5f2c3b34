"""Golden queries: hand-judged queries over a small corpus, scored per search mode and per difficulty.

A golden file (`eval/golden/demo.yml`) reads:

```yaml
version: 1
corpus: needle/demo/notes          # relative to the file, the current folder or the project;
                                   # `build:manpages` for a corpus built from this machine (see below)
queries:
  - id: q001
    query: "postgres logical replication slot"
    expected: ["howto/postgres-logical-replication.md"]   # any of them counts as a hit
    difficulty: easy                                       # easy | medium | hard | fusion
    modes: [search, vsearch, query]                        # the modes expected to answer it
    note: "optional free text"
    reference: "optional: what a good answer says"         # for ragas' LLM context precision and recall
    answer: ["wal_level = logical"]                        # optional: exact substrings of an expected file
                                                           # that show the answer (a snippet holding one shows it)
    lang: en                                               # optional: the query's language
```

A query the corpus does not answer has `expected: []` and `difficulty: unanswerable`: it scores no retrieval
metric, and a confident label on it is a false one. The report counts, per mode, how many of them got the PASS
label, run as a user runs them (the graph's own result count). For the answerable queries with `answer` keys
whose expected file is in the top 3, it reports the share whose top-3 snippets show an answer ("answer shown").

`corpus: build:NAME` names a corpus made from files on this machine (man pages, package READMEs), which
`python -m eval.corpora build NAME` builds into `built_corpus(NAME)`: `~/.cache/needle/corpora/NAME`, or
`$NEEDLE_CORPORA_CACHE/NAME`. A build ends by writing its list of files (`BUILT_MANIFEST`, a hidden file that
is not indexed); until then the corpus is not there, and loading the golden file says how to build it.

Results are scored per document: chunk hits are grouped by path, each document taking the rank of its
best chunk. A thresholds file (`eval/golden/thresholds.yml`) sets minimum values per mode, difficulty
and metric, so that a retrieval regression fails CI:

```yaml
version: 1
thresholds:
  query:
    easy: {hit@3: 0.85}
```
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from needle.core.settings import PROJECT_ROOT, Settings, load_settings
from needle.evaluation import metrics

DIFFICULTIES = ("easy", "medium", "hard", "fusion", "filter", "time", "unanswerable")
MODES = ("search", "vsearch", "query")
METRICS = ("hit@1", "hit@3", "hit@5", "hit@10", "recall@5", "recall@10", "precision@5", "mrr@10", "ndcg@10")
ALL = "all"
DEFAULT_CANDIDATES = 50
COLLECTION = "golden"
UNANSWERABLE = "unanswerable"
BUILT = "build:"
BUILT_MANIFEST = ".manifest.txt"
CORPORA_CACHE_ENV = "NEEDLE_CORPORA_CACHE"
SHOWN_IN_TOP = 3  # "answer shown": an expected file in the top 3, an answer in one of the top 3 snippets


class GoldenError(ValueError):
    """A golden or thresholds file is malformed; the message lists every problem found."""


@dataclass(frozen=True)
class GoldenQuery:
    """One judged query."""

    id: str
    query: str
    expected: tuple[str, ...]
    difficulty: str
    modes: tuple[str, ...]
    reference: str | None = None
    # Exact substrings of an expected file that show the answer: a snippet that holds one shows it.
    answers: tuple[str, ...] = ()
    lang: str | None = None

    @property
    def answerable(self) -> bool:
        """Whether the corpus answers it (an unanswerable query expects no file)."""
        return bool(self.expected)


@dataclass(frozen=True)
class GoldenSet:
    """A golden file in memory."""

    path: Path
    name: str
    corpus: Path
    queries: tuple[GoldenQuery, ...]
    today: str | None = None

    def for_mode(self, mode: str) -> list[GoldenQuery]:
        """The queries tagged with `mode`; every query for a pipeline that is not one of the named modes."""
        if mode in MODES:
            return [q for q in self.queries if mode in q.modes]
        return list(self.queries)


@dataclass(frozen=True)
class Threshold:
    """A minimum value of one metric for one mode and difficulty (`all` for every query of the mode)."""

    mode: str
    difficulty: str
    metric: str
    minimum: float


def built_corpus(name: str) -> Path:
    """Where the corpus built from this machine's files `name` (`corpus: build:NAME`) is kept."""
    return Path(os.environ.get(CORPORA_CACHE_ENV) or "~/.cache/needle/corpora").expanduser() / name


def _resolve_corpus(corpus: str, golden_file: Path) -> Path | None:
    """The corpus folder a golden file names: a built corpus once its build finished, else a folder found."""
    if corpus.startswith(BUILT):
        folder = built_corpus(corpus[len(BUILT) :])
        return folder if (folder / BUILT_MANIFEST).is_file() else None
    candidate = Path(corpus).expanduser()
    if candidate.is_absolute():
        return candidate if candidate.is_dir() else None
    for base in (golden_file.parent, Path.cwd(), PROJECT_ROOT):
        if (base / candidate).is_dir():
            return (base / candidate).resolve()
    return None


def _missing_corpus(corpus: str) -> str:
    """Why the corpus a golden file names is not there, and for a built one the command that builds it."""
    if not corpus.startswith(BUILT):
        return f"corpus folder '{corpus}' does not exist"
    name = corpus[len(BUILT) :]
    folder = built_corpus(name)
    state = "is not finished" if folder.is_dir() else "is not built"
    return f"corpus {corpus} {state} in {folder}: build it with `python -m eval.corpora build {name}`"


def _read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise GoldenError(f"no such file: {path}") from error
    except (OSError, yaml.YAMLError) as error:
        raise GoldenError(f"cannot read {path}: {error}") from error


def parse_golden(data: Any, path: Path, check_files: bool = True) -> GoldenSet:
    """
    Validate a parsed golden file.

    :param data: The parsed YAML.
    :param path: Where it came from (relative corpus paths start there).
    :param check_files: Whether every expected file must exist in the corpus.
    :returns: The golden set.
    :raises GoldenError: Listing every problem: missing keys, unknown difficulty or mode, duplicate ids,
        expected files missing from the corpus.
    """
    if not isinstance(data, dict):
        raise GoldenError(f"{path}: expected a mapping with version, corpus and queries")
    problems: list[str] = []
    if data.get("version") != 1:
        problems.append(f"version must be 1, got {data.get('version')!r}")
    corpus = None
    if not isinstance(data.get("corpus"), str) or not data["corpus"]:
        problems.append("corpus must be a folder path")
    else:
        corpus = _resolve_corpus(data["corpus"], path)
        if corpus is None:
            problems.append(_missing_corpus(data["corpus"]))
    raw_queries = data.get("queries")
    if not isinstance(raw_queries, list) or not raw_queries:
        problems.append("queries must be a non-empty list")
        raw_queries = []
    queries: list[GoldenQuery] = []
    seen: set[str] = set()
    for position, item in enumerate(raw_queries, 1):
        if not isinstance(item, dict):
            problems.append(f"query #{position}: expected a mapping")
            continue
        queries.append(_parse_query(item, f"query #{position}", seen, corpus if check_files else None, problems))
    today = data.get("today")
    if today is not None:
        try:
            datetime.date.fromisoformat(str(today))
        except ValueError:
            problems.append(f"today must be a date (2024-12-01), got {today!r}")
    if problems:
        raise GoldenError(f"{path}: {len(problems)} problem(s):\n  " + "\n  ".join(problems))
    assert corpus is not None
    return GoldenSet(
        path=path, name=path.stem, corpus=corpus, queries=tuple(queries), today=None if today is None else str(today)
    )


def _parse_query(
    item: dict[str, Any], where: str, seen: set[str], corpus: Path | None, problems: list[str]
) -> GoldenQuery:
    """
    One query of a golden file, its problems appended to `problems`.

    :param item: The query's mapping.
    :param where: How a problem names the query until its id is known (`query #3`).
    :param seen: The ids read before it; its own is added.
    :param corpus: The corpus its expected files must be in, or `None` to leave them unchecked.
    :param problems: Where problems go.
    :returns: The query, with empty values in place of invalid ones.
    """
    qid = item.get("id")
    if not isinstance(qid, (str, int)) or str(qid) == "":
        problems.append(f"{where}: id is missing")
    else:
        qid = str(qid)
        where = f"{qid}"
        if qid in seen:
            problems.append(f"{where}: duplicate id")
        seen.add(qid)
    unknown = set(item) - {"id", "query", "expected", "difficulty", "modes", "note", "reference", "answer", "lang"}
    if unknown:
        problems.append(f"{where}: unknown keys {sorted(unknown)}")
    text = item.get("query")
    if not isinstance(text, str) or not text.strip():
        problems.append(f"{where}: query must be a non-empty string")
    expected = _expected_files(item, where, corpus, problems)
    difficulty = item.get("difficulty")
    if difficulty not in DIFFICULTIES:
        problems.append(f"{where}: unknown difficulty {difficulty!r}; use one of {', '.join(DIFFICULTIES)}")
    modes = item.get("modes")
    if not isinstance(modes, list) or not modes:
        problems.append(f"{where}: modes must be a non-empty list from {', '.join(MODES)}")
        modes = []
    else:
        for mode in modes:
            if mode not in MODES:
                problems.append(f"{where}: unknown mode {mode!r}; use one of {', '.join(MODES)}")
    reference = item.get("reference")
    if reference is not None and (not isinstance(reference, str) or not reference.strip()):
        problems.append(f"{where}: reference must be a non-empty answer text")
        reference = None
    answers = item.get("answer") or []
    answers = [answers] if isinstance(answers, str) else answers
    if not isinstance(answers, list) or not all(isinstance(a, str) and a.strip() for a in answers):
        problems.append(f"{where}: answer must be a text or a list of texts")
        answers = []
    lang = item.get("lang")
    if lang is not None and not isinstance(lang, str):
        problems.append(f"{where}: lang must be a language code (en, de, zh...)")
        lang = None
    return GoldenQuery(
        str(qid),
        str(text or "").strip(),
        tuple(expected),
        str(difficulty),
        tuple(modes),
        reference.strip() if reference else None,
        tuple(answers),
        lang,
    )


def _expected_files(item: dict[str, Any], where: str, corpus: Path | None, problems: list[str]) -> list[str]:
    """A query's expected files (none for an unanswerable one), each checked in `corpus` unless it is `None`."""
    expected = item.get("expected")
    unanswerable = item.get("difficulty") == UNANSWERABLE
    if unanswerable and expected not in (None, []):
        problems.append(f"{where}: an unanswerable query expects no file (expected: [])")
        return []
    if unanswerable:
        return []
    if not isinstance(expected, list) or not expected or not all(isinstance(e, str) and e for e in expected):
        problems.append(f"{where}: expected must be a non-empty list of paths")
        return []
    if corpus is not None:
        for rel in expected:
            if not (corpus / rel).is_file():
                problems.append(f"{where}: expected file '{rel}' is not in the corpus {corpus}")
    return expected


def load_golden(path: str | Path, check_files: bool = True) -> GoldenSet:
    """
    Read and validate a golden file.

    :param path: The YAML file.
    :param check_files: Whether every expected file must exist in the corpus.
    :returns: The golden set.
    :raises GoldenError: When the file is missing or invalid.
    """
    path = Path(path)
    return parse_golden(_read_yaml(path), path, check_files=check_files)


def parse_thresholds(data: Any, path: Path) -> list[Threshold]:
    """
    Validate a parsed thresholds file: `thresholds: {mode: {difficulty: {metric: minimum}}}`.

    :raises GoldenError: Listing every unknown mode, difficulty or metric and every value outside 0..1.
    """
    if not isinstance(data, dict) or data.get("version") != 1 or not isinstance(data.get("thresholds"), dict):
        raise GoldenError(f"{path}: expected version: 1 and a thresholds mapping")
    problems: list[str] = []
    found: list[Threshold] = []
    for mode, per_difficulty in data["thresholds"].items():
        if mode not in MODES:
            problems.append(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")
            continue
        if not isinstance(per_difficulty, dict):
            problems.append(f"{mode}: expected a mapping of difficulty to metrics")
            continue
        for difficulty, minimums in per_difficulty.items():
            if difficulty not in (*DIFFICULTIES, ALL):
                problems.append(
                    f"{mode}: unknown difficulty {difficulty!r}; use one of {', '.join((*DIFFICULTIES, ALL))}"
                )
                continue
            if not isinstance(minimums, dict):
                problems.append(f"{mode}.{difficulty}: expected a mapping of metric to minimum")
                continue
            for metric, minimum in minimums.items():
                if metric not in METRICS:
                    problems.append(f"{mode}.{difficulty}: unknown metric {metric!r}; use one of {', '.join(METRICS)}")
                elif isinstance(minimum, bool) or not isinstance(minimum, (int, float)) or not 0 <= minimum <= 1:
                    problems.append(
                        f"{mode}.{difficulty}.{metric}: minimum must be a number from 0 to 1, got {minimum!r}"
                    )
                else:
                    found.append(Threshold(mode, difficulty, metric, float(minimum)))
    if problems:
        raise GoldenError(f"{path}: {len(problems)} problem(s):\n  " + "\n  ".join(problems))
    return found


def load_thresholds(path: str | Path) -> list[Threshold]:
    """Read and validate a thresholds file (see `parse_thresholds`)."""
    path = Path(path)
    return parse_thresholds(_read_yaml(path), path)


def group_by_document(results: Iterable[Any]) -> list[str]:
    """Document paths of chunk hits, best first: each document takes the rank of its best-ranked chunk."""
    return list(dict.fromkeys(r.path for r in results))


def score_ranking(ranking: Sequence[str], expected: Iterable[str]) -> dict[str, float]:
    """Every golden metric of one document ranking, with each expected path judged relevant (grade 1)."""
    qrels = dict.fromkeys(expected, 1)
    return {
        "hit@1": metrics.hit_at_k(ranking, qrels, 1),
        "hit@3": metrics.hit_at_k(ranking, qrels, 3),
        "hit@5": metrics.hit_at_k(ranking, qrels, 5),
        "hit@10": metrics.hit_at_k(ranking, qrels, 10),
        "recall@5": metrics.recall_at_k(ranking, qrels, 5),
        "recall@10": metrics.recall_at_k(ranking, qrels, 10),
        "precision@5": metrics.precision_at_k(ranking, qrels, 5),
        "mrr@10": metrics.mrr_at_k(ranking, qrels, 10),
        "ndcg@10": metrics.ndcg_at_k(ranking, qrels, 10),
    }


def snippet_shows(snippet: str, answers: Iterable[str]) -> bool:
    """Whether a result's snippet (its `@@` location line left out) holds one of the answer strings as they are."""
    lines = snippet.split("\n")
    body = "\n".join(lines[1:]) if lines and lines[0].startswith("@@") else snippet
    return any(answer in body for answer in answers)


def answer_shown(query: GoldenQuery, results: Sequence[Any]) -> bool | None:
    """
    Whether the top results show the answer: one of the first `SHOWN_IN_TOP` snippets holds one of the query's
    `answer` strings.

    :returns: `None` when the query has no `answer` keys or no expected file is among the first
        `SHOWN_IN_TOP` results (nothing found to show it in).
    """
    top = results[:SHOWN_IN_TOP]
    if not query.answers or not any(r.path in query.expected for r in top):
        return None
    return any(snippet_shows(r.snippet or "", query.answers) for r in top)


def run_queries(
    needle: Any,
    queries: Sequence[GoldenQuery],
    pipeline: str,
    candidates: int = DEFAULT_CANDIDATES,
    progress: bool = False,
    today: str | None = None,
) -> dict[str, dict[str, Any]]:
    """
    Run golden queries through a pipeline and score each document ranking.

    An unanswerable query runs as a user runs it (the graph's own result count) and is not scored: its row says
    the label it got.

    :param needle: A `Needle` bound to an index of the golden corpus.
    :param queries: The queries to run.
    :param pipeline: A mode, a pipeline name in `pipelines/` or a YAML path.
    :param candidates: Chunk results requested per answerable query (grouped to documents afterwards).
    :param progress: Whether to show a progress bar.
    :param today: The reference date of relative dates and recency in the questions (the golden file's `today`).
    :returns: Per query id: its difficulty, whether it is answerable, the top 10 documents and the latency in
        milliseconds; for an answerable one also the first relevant rank (`None` when not in the ranking), how
        many `answer` keys it has, `answer_shown` (see `answer_shown`) and every metric in `METRICS`; for an
        unanswerable one the label it got.
    """
    from tqdm import tqdm

    from needle.core.requests import SearchRequest

    needle.pipeline(pipeline)  # load and warm up outside the timed loop
    rows: dict[str, dict[str, Any]] = {}
    for q in tqdm(queries, desc=f"{Path(pipeline).stem} golden", unit="q", disable=not progress):
        started = time.perf_counter()
        # An unanswerable query runs at the request's own result count, as a user runs it.
        request = SearchRequest(query=q.query, now=today or None)
        if q.answerable:
            request = replace(request, limit=candidates)
        answer = needle.search(request, pipeline)
        latency = 1000 * (time.perf_counter() - started)
        ranking = group_by_document(answer.results)
        row: dict[str, Any] = {"difficulty": q.difficulty, "answerable": q.answerable}
        if q.answerable:
            row["rank"] = next((i + 1 for i, path in enumerate(ranking) if path in q.expected), None)
            row["answer_keys"] = len(q.answers)
            row["answer_shown"] = answer_shown(q, answer.results)
            row.update(score_ranking(ranking, q.expected))
        else:
            row["label"] = answer.label
        rows[q.id] = {**row, "ranking": ranking[:10], "latency_ms": latency}
    return rows


def answerable_only(queries: Iterable[GoldenQuery]) -> list[GoldenQuery]:
    """The queries the corpus answers (those a comparison or a ranking metric can score)."""
    return [q for q in queries if q.answerable]


def summarise_answers(per_query: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """
    What the rows say beside the ranking metrics: answers shown, and labels on unanswerable queries.

    :param per_query: Rows as `run_queries` returns them.
    :returns: `answer_shown`: answerable queries with `answer` keys (`with_answers`), those with an expected
        file in the top 3 (`found`), those whose top-3 snippets show an answer (`shown`) and `shown / found`
        (`rate`, `None` when nothing was found); `unanswerable`: how many (`queries`), how many got PASS
        (`passed`, a false PASS each) and the count of each label.
    """
    with_answers = [r for r in per_query.values() if r.get("answerable", True) and r.get("answer_keys")]
    found = [r for r in with_answers if r.get("answer_shown") is not None]
    shown = sum(1 for r in found if r["answer_shown"])
    unanswerable = [r for r in per_query.values() if not r.get("answerable", True)]
    labels: dict[str, int] = {}
    for r in unanswerable:
        labels[r["label"]] = labels.get(r["label"], 0) + 1
    return {
        "answer_shown": {
            "with_answers": len(with_answers),
            "found": len(found),
            "shown": shown,
            "rate": shown / len(found) if found else None,
        },
        "unanswerable": {"queries": len(unanswerable), "passed": labels.get("PASS", 0), "labels": labels},
    }


def summarise(per_query: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """
    Average per-query metrics per difficulty and over all answerable queries (unanswerable ones have none).

    :param per_query: Rows as `run_queries` returns them (`difficulty`, metrics, optional `latency_ms`; rows with
        `answerable` false are left out).
    :returns: Per difficulty present (in `DIFFICULTIES` order) and `all`: `queries`, the mean of each
        metric, and `latency_ms_p50` / `latency_ms_p95` when latencies are there.
    """
    answerable = [row for row in per_query.values() if row.get("answerable", True)]
    groups: dict[str, list[Mapping[str, Any]]] = {d: [] for d in DIFFICULTIES}
    for row in answerable:
        groups.setdefault(row["difficulty"], []).append(row)
    groups[ALL] = answerable
    summary: dict[str, dict[str, float]] = {}
    for name, rows in groups.items():
        if not rows:
            continue
        entry: dict[str, float] = {"queries": len(rows)}
        for metric in METRICS:
            entry[metric] = metrics.mean([row[metric] for row in rows])
        latencies = [row["latency_ms"] for row in rows if "latency_ms" in row]
        if latencies:
            entry["latency_ms_p50"] = metrics.percentile(latencies, 50)
            entry["latency_ms_p95"] = metrics.percentile(latencies, 95)
        summary[name] = entry
    return summary


def check_thresholds(
    summaries: Mapping[str, Mapping[str, Mapping[str, float]]], thresholds: Sequence[Threshold]
) -> list[dict[str, Any]]:
    """
    Compare summaries with the thresholds.

    :param summaries: Per mode, what `summarise` returned.
    :param thresholds: The minimums.
    :returns: One check per threshold whose mode was evaluated: mode, difficulty, metric, minimum,
        actual (`None` when the golden set has no such queries, which fails) and passed.
    """
    checks = []
    for t in thresholds:
        if t.mode not in summaries:
            continue
        actual = summaries[t.mode].get(t.difficulty, {}).get(t.metric)
        checks.append(
            {
                "mode": t.mode,
                "difficulty": t.difficulty,
                "metric": t.metric,
                "minimum": t.minimum,
                "actual": actual,
                "passed": actual is not None and actual >= t.minimum - 1e-9,
            }
        )
    return checks


def evaluate_golden(
    needle: Any,
    golden: GoldenSet,
    modes: Sequence[str] = MODES,
    candidates: int = DEFAULT_CANDIDATES,
    thresholds: Sequence[Threshold] | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """
    Score pipelines on a golden set.

    :param needle: A `Needle` bound to an index of the golden corpus.
    :param golden: The golden set.
    :param modes: Modes (each scored on the queries tagged with it) or other pipelines (scored on all).
    :param candidates: Chunk results requested per query.
    :param thresholds: Minimums to check; none when `None`.
    :param progress: Whether to show progress bars.
    :returns: The report: golden file, per mode its summary of the answerable queries, the answers shown and
        the labels on unanswerable queries (`summarise_answers`) and per-query rows, then the threshold checks.
    """
    results: dict[str, dict[str, Any]] = {}
    for mode in modes:
        queries = golden.for_mode(mode)
        rows = run_queries(needle, queries, mode, candidates, progress, golden.today)
        results[mode] = {"pipeline": mode, "summary": summarise(rows), **summarise_answers(rows), "per_query": rows}
    checks = check_thresholds({m: r["summary"] for m, r in results.items()}, thresholds or [])
    return {
        "kind": "golden",
        "golden": str(golden.path),
        "corpus": str(golden.corpus),
        "candidates": candidates,
        "modes": results,
        "thresholds": {"checks": checks, "passed": all(c["passed"] for c in checks)},
    }


def corpus_digest(folder: Path) -> str:
    """A sha256 over the corpus files' relative paths and contents (hidden files and folders left out)."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.is_file() and not any(part.startswith(".") for part in rel.parts):
            digest.update(str(rel.as_posix()).encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def prepare_index(golden: GoldenSet, settings: Settings | None = None, cache: Path | None = None) -> Any:
    """
    Build (or reuse and bring up to date) an index of the golden corpus, cached by corpus content and
    ingestion settings.

    :param golden: The golden set.
    :param settings: The base settings (models, chunking); loaded from the environment when `None`.
    :param cache: Where built indexes are kept; the BEIR runner's cache when `None`.
    :returns: A `Needle` bound to that index.
    """
    from needle.core.collections import Collection, CollectionRegistry
    from needle.evaluation.beir import DEFAULT_CACHE, index_is_built
    from needle.facade.api import Needle, configured_graph
    from needle.lifecycle import provenance as index_info

    base = settings or load_settings()
    corpus = corpus_digest(golden.corpus)
    key = json.dumps(
        {"corpus": corpus, **index_info.fingerprint(base, configured_graph("ingest", base))}, sort_keys=True
    )
    data_dir = (
        Path(cache or DEFAULT_CACHE)
        / f"golden-{golden.corpus.name}-{corpus[:8]}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"
    )
    settings = base.model_copy(update={"data_dir": data_dir})
    CollectionRegistry(settings.collections_file).save(
        {COLLECTION: Collection(name=COLLECTION, root=str(golden.corpus))}
    )
    needle = Needle(settings, progress_bar=sys.stderr.isatty() and not os.environ.get("CI"))
    # Always an index run: on a built index it embeds nothing and brings the notes' metadata up to date
    # (a cache built by an older Needle, or notes whose frontmatter changed), in about a second.
    from needle.core.requests import IndexRequest

    report = needle.index(IndexRequest(collections=[COLLECTION]))
    done = data_dir / ".indexed"
    if not index_is_built(done):
        done.write_text(report.model_dump_json())
    return needle


def format_table(report: Mapping[str, Any]) -> str:
    """
    A markdown summary: per mode and difficulty, the main metrics and latency; per mode the answers shown and
    the PASS labels on unanswerable queries (when the golden set has either); then the threshold checks.
    """
    lines = [f"Golden set {report['golden']} ({report['corpus']})", ""]
    if any(result["summary"] for result in report["modes"].values()):
        lines += [
            "| mode | difficulty | queries | hit@1 | hit@3 | hit@5 | hit@10 | recall@10 | MRR@10 | nDCG@10 | p50 ms | p95 ms |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
    else:
        lines.append("No answerable queries: nothing to rank.")
    for mode, result in report["modes"].items():
        for difficulty, s in result["summary"].items():
            lines.append(
                f"| {mode} | {difficulty} | {int(s['queries'])} | {s['hit@1']:.3f} | {s['hit@3']:.3f} | "
                f"{s['hit@5']:.3f} | {s['hit@10']:.3f} | {s['recall@10']:.3f} | {s['mrr@10']:.3f} | "
                f"{s['ndcg@10']:.3f} | {s.get('latency_ms_p50', 0.0):.1f} | {s.get('latency_ms_p95', 0.0):.1f} |"
            )
    lines += _answers_table(report["modes"])
    checks = report["thresholds"]["checks"]
    if checks:
        lines += ["", "| threshold | minimum | actual | |", "|---|---|---|---|"]
        for c in checks:
            actual = "n/a" if c["actual"] is None else f"{c['actual']:.3f}"
            lines.append(
                f"| {c['mode']} {c['difficulty']} {c['metric']} | {c['minimum']:.2f} | {actual} | "
                f"{'pass' if c['passed'] else 'FAIL'} |"
            )
    return "\n".join(lines)


def _answers_table(modes: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The answers shown and the unanswerable queries' PASS labels per mode, as table lines (none without either)."""
    shown = any(r.get("answer_shown", {}).get("with_answers") for r in modes.values())
    unanswerable = any(r.get("unanswerable", {}).get("queries") for r in modes.values())
    if not shown and not unanswerable:
        return []
    lines = [
        "",
        "| mode | answer shown (an answer in the top-3 snippets, expected file in the top 3) | "
        "unanswerable queries labelled PASS |",
        "|---|---|---|",
    ]
    for mode, result in modes.items():
        a, u = result.get("answer_shown") or {}, result.get("unanswerable") or {}
        cell = "–"
        if a.get("found"):
            cell = f"{a['rate']:.3f} ({a['shown']} of {a['found']}; {a['with_answers']} with answers)"
        elif a.get("with_answers"):
            cell = f"– (0 of {a['with_answers']} with answers found)"
        passed = f"{u['passed']} of {u['queries']}" if u.get("queries") else "–"
        lines.append(f"| {mode} | {cell} | {passed} |")
    return lines
