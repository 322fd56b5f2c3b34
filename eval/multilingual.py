"""Keyword search in German and Chinese: questions against the answers of a public dialogue corpus.

    python eval/multilingual.py                       # german and chinese, English analysis against per-language
    python eval/multilingual.py --language japanese --language french

The data is chatterbot-corpus (BSD licence, the `eval` extra: `pip install chatterbot-corpus`), whose YAML
files pair questions with answers in 28 languages. Each distinct answer becomes a note; each question is a
query whose one relevant note is its answer. Many answers share no word with their question ("Wer hat die
Glühbirne erfunden?" → "Thomas Edison."), so no keyword search finds every answer: what matters is the
difference between analyses on the same pairs. Every language is indexed three times by Needle's ingest
graph, each time in a fresh folder: with the collection's language `english` (the analysis every collection
had before languages existed), `auto` (told per file) and the language itself (`--language german`). `search` (BM25) answers every question; the table
gives nDCG@10, Recall@10, MRR@10 and the share of questions with any result at all. Writes
eval/reports/multilingual-<time>.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from needle.evaluation.metrics import mean, mrr_at_k, ndcg_at_k, recall_at_k  # noqa: E402
from needle.languages import check_language  # noqa: E402

REPORTS = ROOT / "eval" / "reports"
ANALYSES = ("english", "auto", "declared")


def load_pairs(language: str) -> list[tuple[str, str]]:
    """The (question, answer) pairs of one language of chatterbot-corpus."""
    try:
        import chatterbot_corpus
    except ImportError:
        raise SystemExit("eval/multilingual.py needs chatterbot-corpus: pip install -c constraints.txt chatterbot-corpus") from None
    folder = Path(chatterbot_corpus.__file__).parent / "data" / language
    if not folder.is_dir():
        raise SystemExit(f"chatterbot-corpus has no {language} data")
    pairs = []
    for path in sorted(folder.glob("*.yml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for turns in data.get("conversations") or []:
            if len(turns) >= 2 and all(isinstance(t, str) and t.strip() for t in turns[:2]):
                pairs.append((turns[0].strip(), turns[1].strip()))
    return pairs


def build_set(pairs: list[tuple[str, str]], folder: Path) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """Write each distinct answer as a note; returns the queries and their relevant note."""
    folder.mkdir(parents=True, exist_ok=True)
    notes: dict[str, str] = {}
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    for question, answer in pairs:
        if answer not in notes:
            notes[answer] = f"a{len(notes):04d}.md"
            (folder / notes[answer]).write_text(answer + "\n", encoding="utf-8")
        qid = f"q{len(queries):04d}"
        queries[qid] = question
        qrels[qid] = {notes[answer]: 1}
    return queries, qrels


def evaluate(language: str, analysis: str, data_root: Path, model_dir: Path) -> dict[str, Any]:
    """Index one language's answers with one analysis and score its questions with `search`."""
    from needle.app import Needle
    from needle.settings import load_settings

    pairs = load_pairs(language)
    data_dir = data_root / f"{language}-{analysis}"
    declared = language if analysis == "declared" else analysis
    queries, qrels = build_set(pairs, data_dir / "notes")
    settings = load_settings(env={"NEEDLE_DATA_DIR": str(data_dir / "data"), "NEEDLE_MODEL_DIR": str(model_dir)})
    needle = Needle(settings)
    try:
        needle.collections.add(data_dir / "notes", language, language=declared)
        report = needle.index()
        scores: dict[str, list[float]] = {"ndcg@10": [], "recall@10": [], "mrr@10": [], "answered": []}
        for qid, text in queries.items():
            ranking = [hit.path for hit in needle.search(text, pipeline="search", top_k=10).results]
            scores["ndcg@10"].append(ndcg_at_k(ranking, qrels[qid], 10))
            scores["recall@10"].append(recall_at_k(ranking, qrels[qid], 10))
            scores["mrr@10"].append(mrr_at_k(ranking, qrels[qid], 10))
            scores["answered"].append(1.0 if ranking else 0.0)
        found = needle.query_languages()
    finally:
        needle.close()
    return {
        "language": language, "analysis": declared, "queries": len(queries), "notes": report["files_seen"],
        "analysed_as": found, **{name: mean(values) for name, values in scores.items()},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--language", action="append", dest="languages", help="chatterbot-corpus languages (default german, chinese)")
    args = parser.parse_args()
    from needle.settings import load_settings

    languages = args.languages or ["german", "chinese"]
    for language in languages:
        check_language(language)
    model_dir = load_settings().model_dir
    rows = []
    with tempfile.TemporaryDirectory(prefix="needle-multilingual-") as tmp:
        for language in languages:
            for analysis in ANALYSES:
                print(f"== {language}, collection language {analysis}", file=sys.stderr, flush=True)
                rows.append(evaluate(language, analysis, Path(tmp), model_dir))
    lines = [
        "| language | collection language | analysed as | questions | notes | nDCG@10 | Recall@10 | MRR@10 | with a result |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['language']} | {row['analysis']} | {', '.join(row['analysed_as'])} | {row['queries']} | {row['notes']} | "
            f"{row['ndcg@10']:.3f} | {row['recall@10']:.3f} | {row['mrr@10']:.3f} | {row['answered']:.2f} |"
        )
    table = "\n".join(lines)
    print(table)
    REPORTS.mkdir(parents=True, exist_ok=True)
    out = REPORTS / f"multilingual-{datetime.now().strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps({"rows": rows, "table": table}, indent=2, ensure_ascii=False))
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
