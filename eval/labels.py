"""What the trust label promises, fitted on training questions and measured on the others, per graph and set.

    python -m eval.labels                   # measure the graphs as they are; eval/results/labels.md and .json
    python -m eval.labels --write           # first fit each graph's confidence and the PASS threshold, write them
    python -m eval.labels --golden DIR --cache DIR   # golden files (SET.yml, SET-unanswerable.yml) and indexes

Every question runs through each search graph (`search`, `vsearch`, `query`, `search-native`, `query-plain`,
`vsearch-sentence`) as a user runs it (10 results), whatever
graphs its golden file tags it with; "answered" means an expected file is among the first 3 results.

- **Training** (never reported as a result): `eval/golden/train.yml` and `filters.yml` (questions written from
  the demo notes, never from the golden ones), `eval/golden/train-unanswerable.yml` (50 questions near the demo
  notes' topics or short and personal, which the notes do not answer), the off-topic `train` questions of
  `eval/golden/offtopic.yml`, and the answerable questions with an even number of each set but `demo`.
- **Test**: `demo.yml` and `demo-unanswerable.yml` whole, the unanswerable questions of `notes` and `vault`
  whole, the answerable questions with an odd number of the other sets, the off-topic `test` questions.

`--write` fits each graph's `ConfidenceScorer` weights by logistic regression on the training rows ("a top-3
hit answers", `needle.evaluation.calibration.fit_logistic`), then sets one PASS threshold for the three graphs:
the smallest multiple of 0.05 at which at most `MAX_TRAIN_PASS` of the training questions the notes do not
answer (near topics and personal; the far off-topic ones pass far more rarely) reach PASS in every graph. It
writes both into the graphs' YAML and measures again with them.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from eval.demo_data import GOLDEN, OFFTOPIC
from eval.result_files import RESULTS, command_line, markdown_table, write_json

GRAPHS = ("search", "vsearch", "query", "search-native", "query-plain", "vsearch-sentence")
SETS = ("demo", "notes", "cjk", "vault", "manpages", "readmes")
TRAIN_FILES = (GOLDEN / "train.yml", GOLDEN / "filters.yml", GOLDEN / "train-unanswerable.yml")
MAX_TRAIN_PASS = 0.02
TOP = 3
LABELS = ("PASS", "HALLUCINATION_RISK", "IRRELEVANT", "NO_RESULTS")


def _number(qid: str) -> int:
    digits = "".join(c for c in qid if c.isdigit())
    return int(digits) if digits else 0


def _questions(golden_dir: Path) -> list[tuple[str, Path, str]]:
    """(set, golden file, split) of every file asked: the training files, then each set (and its unanswerable file)."""
    files = [("train", path, "train") for path in TRAIN_FILES]
    for name in SETS:
        for path in (golden_dir / f"{name}.yml", golden_dir / f"{name}-unanswerable.yml"):
            if path.is_file():
                files.append((name, path, "test" if name == "demo" else "by number"))
    return files


def collect(golden_dir: Path, cache: Path | None) -> list[dict[str, Any]]:
    """Each question of each file through each graph: its set, split, kind, whether answered, label, confidence, signals."""
    from needle.core.requests import SearchRequest
    from needle.evaluation.calibration import offtopic_questions
    from needle.evaluation.golden import load_golden, prepare_index

    rows: list[dict[str, Any]] = []
    opened: dict[Path, Any] = {}
    asked: list[tuple[str, Path, str, Any]] = [(s, p, split, load_golden(p)) for s, p, split in _questions(golden_dir)]
    for name, _path, split, golden in asked:
        needle = opened.get(golden.corpus)
        if needle is None:
            for other in opened.values():
                other.close()
            opened = {golden.corpus: prepare_index(golden, cache=cache)}
            needle = opened[golden.corpus]
        now = golden.today or None
        questions = [(q.id, q.query, q.expected, q.answerable, now) for q in golden.queries]
        if name == "train" and _path == TRAIN_FILES[0]:
            questions += [(f"off-{i}", q, (), False, None) for i, q in enumerate(offtopic_questions(OFFTOPIC, "train"))]
        if name == "demo" and _path.name == "demo.yml":
            questions += [(f"off-{i}", q, (), False, None) for i, q in enumerate(offtopic_questions(OFFTOPIC, "test"))]
        for graph in GRAPHS:
            for qid, text, expected, answerable, when in questions:
                answer = needle.search(SearchRequest(query=text, limit=10, explain=True, now=when), graph)
                kind = "offtopic" if qid.startswith("off-") else "answerable" if answerable else "unanswerable"
                row_split = split
                if split == "by number":
                    row_split = ("train" if _number(qid) % 2 == 0 else "test") if answerable else "test"
                rows.append(
                    {
                        "graph": graph,
                        "set": name,
                        "id": qid,
                        "split": row_split,
                        "kind": kind,
                        "relevant": answerable and any(h.path in set(expected) for h in answer.results[:TOP]),
                        "label": answer.label,
                        "confidence": answer.confidence,
                        "signals": (answer.explain or {}).get("confidence") or {},
                        "query": text,
                    }
                )
        print(f"labels: {name} {_path.name}: {len(rows)} rows", file=sys.stderr, flush=True)
    for other in opened.values():
        other.close()
    return rows


def _passes(rows: list[dict[str, Any]], weights: dict[str, float], bias: float, threshold: float) -> list[bool]:
    out = []
    for row in rows:
        if row["label"] == "NO_RESULTS":
            out.append(False)
            continue
        z = bias + sum(weights.get(name, 0.0) * value for name, value in row["signals"].items())
        out.append(1.0 / (1.0 + math.exp(-max(min(z, 30.0), -30.0))) >= threshold)
    return out


def fit(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Each graph's weights fitted on the training rows, and the one threshold chosen on them (see the module)."""
    from needle.evaluation.calibration import fit_logistic, fitted_features

    fitted: dict[str, Any] = {}
    for graph in GRAPHS:
        train = [r for r in rows if r["graph"] == graph and r["split"] == "train" and r["label"] != "NO_RESULTS"]
        weights, bias = fit_logistic(train, fitted_features(train))
        fitted[graph] = {"weights": weights, "bias": bias, "rows": len(train)}
    threshold = None
    for step in range(10, 20):
        candidate = step / 20
        rates = {}
        for graph in GRAPHS:
            unanswered = [
                r for r in rows if r["graph"] == graph and r["split"] == "train" and r["kind"] == "unanswerable"
            ]
            passed = _passes(unanswered, fitted[graph]["weights"], fitted[graph]["bias"], candidate)
            rates[graph] = sum(passed) / len(passed) if passed else 0.0
        if all(rate <= MAX_TRAIN_PASS for rate in rates.values()):
            threshold = candidate
            for graph in GRAPHS:
                fitted[graph]["train_unanswerable_pass"] = rates[graph]
            break
    if threshold is None:
        raise SystemExit(f"no threshold up to 0.95 keeps the training unanswerable PASS at {MAX_TRAIN_PASS} or below")
    return {"graphs": fitted, "threshold": threshold}


# Graphs whose confidence and label are those of another (the same candidates, the same signals).
SHARED = {"query": ("rag", "query-crossencoder", "query-links", "query-llm")}


def write(fitted: dict[str, Any]) -> None:
    """Put each graph's weights and the threshold into its YAML (and into the graphs that share its scorer)."""
    import re

    from needle.evaluation.calibration import write_weights

    for graph in GRAPHS:
        for name in (graph, *SHARED.get(graph, ())):
            path = write_weights(name, fitted["graphs"][graph]["weights"], fitted["graphs"][graph]["bias"])
            text = path.read_text(encoding="utf-8")
            label = re.search(r"type: [\w.]+\.ResultLabeler\n(?:.*\n)*?.*?min_confidence: ([\d.]+)", text)
            if label is not None:
                start, end = label.span(1)
                path.write_text(text[:start] + str(fitted["threshold"]) + text[end:], encoding="utf-8")


def _share(n: int, d: int) -> str:
    return f"{n / d:.3f} ({n}/{d})" if d else "–"


def measure(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per graph and set (test rows) and pooled: PASS share and precision, false alarms, unanswerable PASS; per label, the share answered."""
    out: dict[str, Any] = {"sets": [], "pooled": [], "labels": [], "train": []}
    for graph in GRAPHS:
        mine = [r for r in rows if r["graph"] == graph]
        for split, bucket in (("test", out["pooled"]), ("train", out["train"])):
            part = [r for r in mine if r["split"] == split]
            bucket.append({"graph": graph, **_summary(part)})
        for name in SETS:
            part = [r for r in mine if r["split"] == "test" and r["set"] == name and r["kind"] != "offtopic"]
            if part:
                out["sets"].append({"graph": graph, "set": name, **_summary(part)})
        answerable = [r for r in mine if r["split"] == "test" and r["kind"] == "answerable"]
        for label in LABELS:
            got = [r for r in answerable if r["label"] == label]
            out["labels"].append(
                {
                    "graph": graph,
                    "label": label,
                    "answerable questions": len(got),
                    "answered in the top 3": _share(sum(r["relevant"] for r in got), len(got)),
                }
            )
    return out


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    answerable = [r for r in rows if r["kind"] == "answerable"]
    passed = [r for r in answerable if r["label"] == "PASS"]
    answered = [r for r in answerable if r["relevant"]]
    unanswerable = [r for r in rows if r["kind"] == "unanswerable"]
    offtopic = [r for r in rows if r["kind"] == "offtopic"]
    return {
        "answerable": len(answerable),
        "PASS share": _share(len(passed), len(answerable)),
        "PASS precision (answered in the top 3)": _share(sum(r["relevant"] for r in passed), len(passed)),
        "false alarms (answered, not PASS)": _share(sum(1 for r in answered if r["label"] != "PASS"), len(answered)),
        "unanswerable PASS": _share(sum(r["label"] == "PASS" for r in unanswerable), len(unanswerable)),
        "off-topic PASS": _share(sum(r["label"] == "PASS" for r in offtopic), len(offtopic)),
    }


def table(results: dict[str, Any]) -> str:
    parts = []
    if "fit" in results:
        fit_ = results["fit"]
        parts.append(f"PASS threshold (min_confidence): {fit_['threshold']}\n")
        parts.append(
            markdown_table(
                [
                    {
                        "graph": g,
                        "bias": v["bias"],
                        **v["weights"],
                        "training unanswerable PASS": f"{v['train_unanswerable_pass']:.3f}",
                    }
                    for g, v in fit_["graphs"].items()
                ]
            )
        )
    m = results["measured"]
    parts += ["### Test questions, pooled", markdown_table(m["pooled"])]
    parts += ["### Test questions per set", markdown_table(m["sets"])]
    parts += ["### What each label measured (answerable test questions)", markdown_table(m["labels"])]
    parts += ["### Training questions (fitted on)", markdown_table(m["train"])]
    return "\n\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.labels", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--write", action="store_true", help="fit the weights and the threshold, write them, then measure"
    )
    parser.add_argument(
        "--golden", type=Path, default=GOLDEN, help="folder of SET.yml (and SET-unanswerable.yml) files"
    )
    parser.add_argument("--cache", type=Path, default=None, help="where indexes are kept (the eval cache)")
    parser.add_argument("--out", type=Path, default=RESULTS / "labels.md")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {"command": command_line("eval.labels", argv)}
    rows = collect(args.golden, args.cache)
    if args.write:
        results["fit"] = fit(rows)
        write(results["fit"])
        rows = collect(args.golden, args.cache)
    results["measured"] = measure(rows)
    text = table(results)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(f"Printed by `{results['command']}`\n\n{text}\n", encoding="utf-8")
    write_json(args.out.with_suffix(".json"), {**results, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

__all__ = ["collect", "fit", "main", "measure"]
