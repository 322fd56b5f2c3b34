"""Search in several languages: mixed-language notes, their questions, and what each language rule does.

    python -m eval.multilingual                 # every measurement below (a few minutes)
    python -m eval.multilingual --baseline      # only `search`/`query` hit@k with the graphs' defaults

The same on another checkout's code (its `needle` package first on the import path, this harness after it;
run from outside both, so that the working folder does not come first):

    cd /tmp && PYTHONPATH=/path/to/other/checkout:/path/to/this/checkout python -m eval.multilingual --baseline \
        --out /path/to/this/checkout/eval/results/multilingual-main.json

The notes and questions are eval/data/multilingual.yml: short and long notes in English, German, French,
Chinese and Japanese, with the questions a user of each language would ask (a German compound's part,
French without accents, a Japanese or Chinese phrase inside a sentence). Three collections, each indexed in
a fresh folder by Needle's ingest graph:

- `mixed`: every language's notes together (`auto`), searched with `search` (BM25) and `query` (hybrid):
  hit@1 and hit@3 per language; the share of its files told in their language.
- `compounds`: `mixed` indexed with each way of reaching German compounds (`affixes`, `ngrams`, `none`):
  keyword hit@k per language.
- `shares`: the query-language rule's `min_share` (the share of chunks a language needs to analyse every
  query) on `mixed`, on `mostly-english` (the English notes and two short German ones) and on `quoted`
  (the English notes and two files quoted whole in French and Italian).
- `english-only`: English notes (a few with Latin names or an Italian menu), indexed as `auto` and as
  `english`: hit@k must match.

Writes eval/results/multilingual.json (and eval/results/multilingual-baseline.json with --baseline).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from eval.corpus_index import needle_with_collection, scratch
from eval.demo_data import REPO
from eval.result_files import RESULTS, write_json
from needle.core.requests import IndexRequest, SearchRequest
from needle.evaluation.metrics import hit_at_k, mean, mrr_at_k

DATA = REPO / "eval" / "data" / "multilingual.yml"
FOLDERS = {"en": "english", "de": "german", "fr": "french", "zh": "chinese", "ja": "japanese"}
SHARES = (0.0, 0.02, 0.05, 0.1, 0.2, 0.35, 1.0)


def load() -> dict[str, Any]:
    return yaml.safe_load(DATA.read_text(encoding="utf-8"))


def write_notes(data: dict[str, Any], folder: Path, keep: Any) -> None:
    """Write the notes whose path `keep` accepts under `folder`."""
    for path, text in data["notes"].items():
        if keep(path):
            target = folder / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")


class Run:
    """One Needle data folder with one collection of notes."""

    def __init__(
        self, root: Path, name: str, notes: Path, language: str = "auto", overrides: dict[str, Any] | None = None
    ):
        from needle.core.model_files import provision

        self.needle = needle_with_collection(root / name, notes, language=language)
        provision(self.needle.settings.model_dir)
        self.report = self.needle.index(IndexRequest(set=overrides or None))

    def ranking(self, query: str, pipeline: str, overrides: dict[str, Any] | None = None) -> list[str]:
        answer = self.needle.search(SearchRequest(query=query, limit=10, set=overrides or None), pipeline=pipeline)
        return [hit.path for hit in answer.results]

    def close(self) -> None:
        self.needle.close()


def score(
    run: Run, questions: list[dict[str, str]], pipeline: str, overrides: dict[str, Any] | None = None
) -> dict[str, float]:
    """hit@1, hit@3 and MRR@10 of questions (each names its one note)."""
    hits1, hits3, mrr, missed = [], [], [], []
    for q in questions:
        relevant = {q["note"]: 1}
        ranking = run.ranking(q["q"], pipeline, overrides)
        hits1.append(hit_at_k(ranking, relevant, 1))
        hits3.append(hit_at_k(ranking, relevant, 3))
        mrr.append(mrr_at_k(ranking, relevant, 10))
        if not hits1[-1]:
            missed.append({"q": q["q"], "note": q["note"], "top3": ranking[:3]})
    return {
        "questions": len(questions),
        "hit@1": round(mean(hits1), 3),
        "hit@3": round(mean(hits3), 3),
        "mrr@10": round(mean(mrr), 3),
        "missed_first": missed,
    }


def told_right(run: Run) -> dict[str, Any]:
    """The share of files whose chunks were all analysed in their folder's language."""
    by_file: dict[str, set[str]] = {}
    for doc in run.needle.store.filter_documents():
        by_file.setdefault(doc.meta["path"], set()).add(str(doc.meta.get("language")))
    wrong = {path: sorted(langs) for path, langs in by_file.items() if langs != {FOLDERS[path.split("/")[0]]}}
    return {"files": len(by_file), "right": round(1 - len(wrong) / max(len(by_file), 1), 3), "wrong": wrong}


def languages_of(questions: dict[str, list[dict[str, str]]]) -> list[str]:
    return [language for language in questions if language != "english-only"]


def baseline(tmp: Path, data: dict[str, Any]) -> dict[str, Any]:
    """`search` and `query` hit@k per language on `mixed` and `english-only`, with the graphs' defaults."""
    write_notes(data, tmp / "mixed", lambda p: p.split("/")[0] in FOLDERS)
    write_notes(data, tmp / "english", lambda p: p.startswith("english-only/"))
    out: dict[str, Any] = {"mixed": {}, "english-only": {}}
    run = Run(tmp, "mixed-data", tmp / "mixed")
    for pipeline in ("search", "query"):
        out["mixed"][pipeline] = {
            lang: score(run, data["questions"][lang], pipeline) for lang in languages_of(data["questions"])
        }
    run.close()
    run = Run(tmp, "english-data", tmp / "english")
    for pipeline in ("search", "query"):
        out["english-only"][pipeline] = score(run, data["questions"]["english-only"], pipeline)
    run.close()
    return out


def full(tmp: Path, data: dict[str, Any]) -> dict[str, Any]:
    questions = data["questions"]
    out = baseline(tmp, data)
    # Detection on the mixed collection, and the rules measured on it.
    run = Run(tmp, "mixed-told", tmp / "mixed")
    out["told"] = told_right(run)
    out["shares"] = {"mixed": {}, "mostly-english": {}, "quoted": {}}
    for share in SHARES:
        over = {"bm25_embedder.min_share": share}
        out["shares"]["mixed"][str(share)] = {
            lang: score(run, questions[lang], "search", over) for lang in languages_of(questions)
        }
    run.close()
    for mode in ("affixes", "ngrams", "none"):
        run = Run(tmp, f"mixed-{mode}", tmp / "mixed", overrides={"sparse_embedder.compounds": mode})
        over = {"bm25_embedder.compounds": mode}
        out.setdefault("compounds", {})[mode] = {
            lang: score(run, questions[lang], "search", over) for lang in languages_of(questions)
        }
        run.close()
    # A mostly English collection with two short German notes.
    keep = ("en/", "english-only/", "de/datenbank.md", "de/notizen.md")
    write_notes(data, tmp / "mostly", lambda p: p.startswith(keep))
    run = Run(tmp, "mostly-data", tmp / "mostly")
    german = [q for q in questions["german"] if q["note"] in keep]
    english = questions["english"] + questions["english-only"]
    out["mostly-english"] = {"languages": run.needle.query_languages()}
    for share in SHARES:
        over = {"bm25_embedder.min_share": share}
        out["shares"]["mostly-english"][str(share)] = {
            "english": score(run, english, "search", over),
            "german": score(run, german, "search", over),
        }
    run.close()
    # English notes with two files quoted in other languages (a French poem, an Italian recipe).
    write_notes(data, tmp / "quoted", lambda p: p.startswith(("en/", "english-only/", "quoted/")))
    run = Run(tmp, "quoted-data", tmp / "quoted")
    out["quoted"] = {"languages": run.needle.query_languages()}
    for share in SHARES:
        out["shares"]["quoted"][str(share)] = score(run, english, "search", {"bm25_embedder.min_share": share})
    run.close()
    # English alone: told per file against declared English.
    for language in ("auto", "english"):
        run = Run(tmp, f"english-{language}", tmp / "english", language=language)
        out.setdefault("english-analysis", {})[language] = {
            pipeline: score(run, questions["english-only"], pipeline) for pipeline in ("search", "query")
        }
        out["english-analysis"][language]["languages"] = run.needle.query_languages()
        run.close()
    return out


def table(rows: dict[str, dict[str, float]], label: str) -> list[str]:
    lines = [f"| {label} | questions | hit@1 | hit@3 | MRR@10 |", "|---|---|---|---|---|"]
    lines += [
        f"| {name} | {r['questions']} | {r['hit@1']:.3f} | {r['hit@3']:.3f} | {r['mrr@10']:.3f} |"
        for name, r in rows.items()
    ]
    return lines


def report(out: dict[str, Any]) -> str:
    lines: list[str] = []
    for pipeline in ("search", "query"):
        lines += ["", f"mixed collection, {pipeline}:", *table(out["mixed"][pipeline], "language")]
        lines.append(
            f"| english-only | {out['english-only'][pipeline]['questions']} | {out['english-only'][pipeline]['hit@1']:.3f} | "
            f"{out['english-only'][pipeline]['hit@3']:.3f} | {out['english-only'][pipeline]['mrr@10']:.3f} |"
        )
    if "told" in out:
        lines += [
            "",
            f"files told in their language: {out['told']['right']:.3f} of {out['told']['files']} (wrong: {out['told']['wrong']})",
        ]
        lines += [
            "",
            "German compounds (search, mixed collection), hit@1 / hit@3:",
            "| mode | " + " | ".join(languages_of_out(out)) + " |",
            "|---|" + "---|" * len(languages_of_out(out)),
        ]
        for mode, rows in out["compounds"].items():
            lines.append(
                f"| {mode} | "
                + " | ".join(f"{rows[lang]['hit@1']:.3f} / {rows[lang]['hit@3']:.3f}" for lang in languages_of_out(out))
                + " |"
            )
        lines += [
            "",
            "min_share (search), hit@1 / hit@3:",
            "| min_share | "
            + " | ".join(languages_of_out(out))
            + " | mostly-english: english | mostly-english: german | quoted: english |",
            "|---|" + "---|" * (len(languages_of_out(out)) + 3),
        ]
        for share, rows in out["shares"]["mixed"].items():
            mostly = out["shares"]["mostly-english"][share]
            lines.append(
                f"| {share} | "
                + " | ".join(f"{rows[lang]['hit@1']:.3f} / {rows[lang]['hit@3']:.3f}" for lang in languages_of_out(out))
                + f" | {mostly['english']['hit@1']:.3f} / {mostly['english']['hit@3']:.3f} | {mostly['german']['hit@1']:.3f} / {mostly['german']['hit@3']:.3f}"
                + f" | {out['shares']['quoted'][share]['hit@1']:.3f} / {out['shares']['quoted'][share]['hit@3']:.3f} |"
            )
        lines += [
            "",
            f"mostly-english chunks per language: {out['mostly-english']['languages']}",
            f"quoted chunks per language: {out['quoted']['languages']}",
            "",
            "English-only collection, told per file (auto) against declared English:",
            "| collection language | search hit@1 | search hit@3 | query hit@1 | query hit@3 | chunks per language |",
            "|---|---|---|---|---|---|",
        ]
        for language, r in out["english-analysis"].items():
            lines.append(
                f"| {language} | {r['search']['hit@1']:.3f} | {r['search']['hit@3']:.3f} | {r['query']['hit@1']:.3f} | "
                f"{r['query']['hit@3']:.3f} | {r['languages']} |"
            )
    return "\n".join(lines)


def languages_of_out(out: dict[str, Any]) -> list[str]:
    return list(out["mixed"]["search"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval.multilingual", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baseline", action="store_true", help="only search/query hit@k with the graphs' defaults")
    parser.add_argument("--out", type=Path, help="results file (default eval/results/multilingual[-baseline].json)")
    args = parser.parse_args(argv)
    data = load()
    with scratch("needle-multilingual-") as tmp:
        out = baseline(tmp, data) if args.baseline else full(tmp, data)
    text = report(out)
    print(text)
    suffix = "-baseline" if args.baseline else ""
    target = args.out or RESULTS / f"multilingual{suffix}.json"
    write_json(target, {**out, "table": text})
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
