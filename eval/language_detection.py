"""Telling languages: py3langid against lingua-language-detector, on short and long texts, and its cost.

    python -m eval.language_detection                      # both detectors, every set
    python -m eval.language_detection --detector py3langid --scifact-limit 1000

Both detectors choose among Needle's 21 keyword-search languages (`needle.core.languages.LANGUAGES`; Chinese,
Japanese and Korean by script first, as Needle does). The sets:

- `chatterbot`: the questions and answers of chatterbot-corpus (the `eval` extra) in the 14 of its
  languages Needle analyses, bucketed by length (letters: 1-20, 21-60, over 60): what short notes and
  queries look like.
- `notes`: the mixed-language notes of eval/data/multilingual.yml, each whole (its folder is its language).
- `scifact`: SciFact's abstracts (title and text), all English: technical English that a detector may
  misread. A file misread *clearly* (probability at least `needle.core.languages.CLEAR`) would be analysed in
  another language; an unclear one takes the collection's main language.

For each detector and set: accuracy (top language right), the share told clearly and wrongly, and
milliseconds per 1,000 texts (one thread). Then the cost at index time: Needle's own rule (a file's
language, each long chunk checked) over SciFact's chunks, in milliseconds per 1,000 chunks. Writes
eval/results/language_detection.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from eval.corpus_index import needle_on
from eval.demo_data import REPO, SCIFACT
from eval.result_files import RESULTS, read_json, write_json
from needle.core.languages import CLEAR, LANGUAGES, identify, script_language

CHATTERBOT = (
    "chinese",
    "dutch",
    "english",
    "french",
    "german",
    "italian",
    "japanese",
    "korean",
    "portuguese",
    "russian",
    "spanish",
    "swedish",
    "tamil",
    "turkish",
)
BUCKETS = ((1, 20), (21, 60), (61, 10**9))


def chatterbot_texts() -> list[tuple[str, str]]:
    """(text, language) for every distinct question and answer of chatterbot-corpus in Needle's languages."""
    try:
        import chatterbot_corpus
    except ImportError:
        raise SystemExit("needs chatterbot-corpus: pip install -c constraints.txt chatterbot-corpus") from None
    out: dict[str, str] = {}
    for language in CHATTERBOT:
        for path in sorted((Path(chatterbot_corpus.__file__).parent / "data" / language).glob("*.yml")):
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            for turns in data.get("conversations") or []:
                for turn in turns:
                    if isinstance(turn, str) and turn.strip():
                        out.setdefault(turn.strip(), language)
    return list(out.items())


def note_texts() -> list[tuple[str, str]]:
    """(text, language) for the notes of eval/data/multilingual.yml (`english-only` is English; `quoted` is left out)."""
    data = yaml.safe_load((REPO / "eval" / "data" / "multilingual.yml").read_text(encoding="utf-8"))
    folders = {
        "en": "english",
        "english-only": "english",
        "de": "german",
        "fr": "french",
        "zh": "chinese",
        "ja": "japanese",
    }
    return [
        (text, folders[path.split("/")[0]]) for path, text in data["notes"].items() if path.split("/")[0] in folders
    ]


def scifact_texts(limit: int | None, dataset: Path = SCIFACT) -> list[tuple[str, str]]:
    """(title and abstract, english) for SciFact's corpus (a BEIR folder)."""
    texts = []
    with (dataset / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            texts.append((f"{row.get('title', '')}\n\n{row.get('text', '')}", "english"))
            if limit and len(texts) >= limit:
                break
    return texts


def py3langid_detector() -> Callable[[str], tuple[str | None, float]]:
    """Needle's detector (py3langid restricted to Needle's languages, CJK by script)."""
    identify("warm up")
    return identify


def lingua_detector() -> Callable[[str], tuple[str | None, float]]:
    """lingua-language-detector over the same languages (both Norwegian written forms), CJK by script too."""
    try:
        from lingua import Language, LanguageDetectorBuilder
    except ImportError:
        raise SystemExit(
            "--detector lingua needs lingua-language-detector: pip install -c constraints.txt lingua-language-detector"
        ) from None

    names = {language: [language.upper()] for language in LANGUAGES}
    names["norwegian"] = ["BOKMAL", "NYNORSK"]
    back = {getattr(Language, name): language for language, several in names.items() for name in several}
    detector = LanguageDetectorBuilder.from_languages(*back).with_preloaded_language_models().build()

    def detect(text: str) -> tuple[str | None, float]:
        language = script_language(text)
        if language is not None:
            return language, 1.0
        values = detector.compute_language_confidence_values(text)
        if not values:
            return None, 0.0
        return back[values[0].language], float(values[0].value)

    return detect


def letters(text: str) -> int:
    return sum(c.isalpha() for c in text)


THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9)


def score(detect: Callable[[str], tuple[str | None, float]], texts: list[tuple[str, str]]) -> dict[str, Any]:
    """Accuracy, clearly wrong share (at `CLEAR` and other thresholds) and speed of a detector over labelled texts."""
    started = time.perf_counter()
    told = [detect(text) for text, _ in texts]
    seconds = time.perf_counter() - started
    thresholds = {
        str(t): {
            "clear": round(sum(p >= t for _, p in told) / max(len(texts), 1), 4),
            "clear_and_wrong": round(
                sum(p >= t and lang != truth for (lang, p), (_, truth) in zip(told, texts, strict=True))
                / max(len(texts), 1),
                4,
            ),
        }
        for t in THRESHOLDS
    }
    right = [language == truth for (language, _), (_, truth) in zip(told, texts, strict=True)]
    clear_wrong = [p >= CLEAR and language != truth for (language, p), (_, truth) in zip(told, texts, strict=True)]
    clear = [p >= CLEAR for _, p in told]
    wrong = [
        {"text": text[:80], "truth": truth, "told": language, "p": round(p, 3)}
        for (language, p), (text, truth) in zip(told, texts, strict=True)
        if language != truth
    ]
    return {
        "texts": len(texts),
        "accuracy": round(sum(right) / max(len(texts), 1), 4),
        "clear": round(sum(clear) / max(len(texts), 1), 4),
        "clear_and_wrong": round(sum(clear_wrong) / max(len(texts), 1), 4),
        "clear_and_wrong_count": sum(clear_wrong),
        "ms_per_1000": round(1000 * seconds / max(len(texts), 1) * 1000, 1),
        "thresholds": thresholds,
        "wrong_examples": wrong[:8],
    }


def index_cost(limit: int | None, dataset: Path = SCIFACT) -> dict[str, Any]:
    """Needle's rule (whole file, then each long chunk) over SciFact's chunks: ms per 1,000 chunks (median of 3)."""
    from haystack import Document

    from haystack_integrations.components.embedders.needle.multilingual_sparse_document_embedder import (
        MultilingualSparseDocumentEmbedder,
    )
    from haystack_integrations.components.preprocessors.needle.markdown_chunker import MarkdownChunker

    files = [
        Document(content=text, meta={"collection": "c", "kind": "file", "source_doc_id": f"c:{i}"})
        for i, (text, _) in enumerate(scifact_texts(limit, dataset))
    ]
    chunker = MarkdownChunker(overlap_chars=0)
    chunks = []
    for doc in files:
        for chunk in chunker.run(
            documents=[Document(content=doc.content, meta={"collection": "c", "path": doc.meta["source_doc_id"]})]
        )["documents"]:
            chunks.append(
                Document(content=chunk.content, meta={"collection": "c", "source_doc_id": doc.meta["source_doc_id"]})
            )
    embedder = MultilingualSparseDocumentEmbedder(model="Qdrant/bm25")
    dense = dense_embedder()
    runs, dense_runs = [], []
    sample = chunks[:256]
    for _ in range(3):
        started = time.perf_counter()
        chosen = embedder._languages(chunks + files, {"c": "auto"}, {})
        runs.append(time.perf_counter() - started)
        # The same machine's cost of what an index run does anyway: the dense embedding of chunks.
        started = time.perf_counter()
        dense.run(documents=sample)
        dense_runs.append(time.perf_counter() - started)
    not_english = sum(language != "english" for language in chosen)
    detect_ms = 1000 * statistics.median(runs) / len(chunks) * 1000
    dense_ms = 1000 * statistics.median(dense_runs) / len(sample) * 1000
    return {
        "files": len(files),
        "chunks": len(chunks),
        "ms_per_1000_chunks": round(detect_ms, 1),
        "dense_ms_per_1000_chunks": round(dense_ms, 1),
        "share_of_dense": round(detect_ms / dense_ms, 4),
        "runs_seconds": [round(r, 2) for r in runs],
        "documents_not_english": not_english,
    }


def dense_embedder() -> Any:
    """Needle's dense document embedder as its ingest graph configures it (the provisioned offline model)."""
    import tempfile

    from needle.core.model_files import provision

    needle = needle_on(Path(tempfile.mkdtemp(prefix="needle-detect-")))
    provision(needle.settings.model_dir)
    embedder = needle.pipeline("ingest").get_component("dense_embedder")
    embedder.warm_up()
    return embedder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval.language_detection",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--detector", action="append", choices=("py3langid", "lingua"), help="default both")
    parser.add_argument("--scifact-limit", type=int, default=None, help="first N SciFact abstracts (default all)")
    parser.add_argument("--no-index-cost", action="store_true", help="skip the cost of Needle's rule at index time")
    parser.add_argument("--dataset", type=Path, default=SCIFACT, help="the SciFact BEIR folder (its corpus.jsonl)")
    parser.add_argument(
        "--out", type=Path, default=RESULTS / "language_detection.json", help="results file (default %(default)s)"
    )
    args = parser.parse_args(argv)
    detectors = args.detector or ["py3langid", "lingua"]
    chatter = chatterbot_texts()
    sets = {
        **{
            f"chatterbot {lo}-{hi if hi < 10**9 else ''} letters": [t for t in chatter if lo <= letters(t[0]) <= hi]
            for lo, hi in BUCKETS
        },
        "notes": note_texts(),
        "scifact": scifact_texts(args.scifact_limit, args.dataset),
    }
    # Detectors not run now keep their rows from the last run.
    previous = read_json(args.out, {})
    results: dict[str, Any] = {
        "sets": {name: len(texts) for name, texts in sets.items()},
        "detectors": {k: v for k, v in previous.get("detectors", {}).items() if k not in detectors},
    }
    for name in detectors:
        started = time.perf_counter()
        detect = py3langid_detector() if name == "py3langid" else lingua_detector()
        load = time.perf_counter() - started
        rows = {}
        for set_name, texts in sets.items():
            print(f"== {name}: {set_name} ({len(texts)} texts)", file=sys.stderr, flush=True)
            rows[set_name] = score(detect, texts)
        results["detectors"][name] = {"load_seconds": round(load, 2), "sets": rows}
    if not args.no_index_cost:
        print("== Needle's rule over SciFact's chunks", file=sys.stderr, flush=True)
        results["index_cost"] = index_cost(args.scifact_limit, args.dataset)
    lines = [
        "| detector | set | texts | accuracy | told clearly | clearly wrong | ms per 1,000 texts |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, found in results["detectors"].items():
        for set_name, row in found["sets"].items():
            lines.append(
                f"| {name} | {set_name} | {row['texts']} | {row['accuracy']:.3f} | {row['clear']:.3f} | "
                f"{row['clear_and_wrong']:.4f} ({row['clear_and_wrong_count']}) | {row['ms_per_1000']:.0f} |"
            )
    lines += [
        "",
        "py3langid by threshold (told clearly / clearly wrong):",
        "| set | " + " | ".join(map(str, THRESHOLDS)) + " |",
        "|---|" + "---|" * len(THRESHOLDS),
    ]
    for set_name, row in results["detectors"].get("py3langid", {}).get("sets", {}).items():
        cells = [
            f"{row['thresholds'][str(t)]['clear']:.3f} / {row['thresholds'][str(t)]['clear_and_wrong']:.4f}"
            for t in THRESHOLDS
        ]
        lines.append(f"| {set_name} | " + " | ".join(cells) + " |")
    loads = ", ".join(f"{name} {found['load_seconds']} s" for name, found in results["detectors"].items())
    cost = results.get("index_cost")
    print("\n".join(lines))
    print(f"model load: {loads}")
    if cost:
        print(
            f"index time, Needle's rule: {cost['ms_per_1000_chunks']} ms per 1,000 chunks ({cost['chunks']} SciFact chunks "
            f"of {cost['files']} files; {cost['documents_not_english']} documents told other than English); the dense "
            f"embedding of 1,000 chunks: {cost['dense_ms_per_1000_chunks']} ms (detection = {100 * cost['share_of_dense']:.1f}% of it)"
        )
    write_json(args.out, results)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
