"""Ingest benchmark: how long an index run takes when nothing, some or everything changed.

    python -m eval.ingest                      # 5k and 20k generated notes, then SciFact's corpus
    python -m eval.ingest --sizes 5000 --no-scifact

For each size N, generated notes (a title heading and two short paragraphs each, in 50 folders) are
indexed into a fresh data folder by `Needle.index` in this process. The notes repeat a few distinct texts,
so that the first index embeds only their first copies (200 chunk texts; whole files get vectors pooled
from their chunks') and copies their vectors onto the other notes' chunks (`VectorReuser`): the index
holds one chunk and one whole-file point per note, as a
real one would, without an hour of embedding on a small machine; what the runs below time does not
depend on the texts. Then:

- `no-op`: the same run again with nothing changed (every file's stat matches the record: none is read);
- `edit` (the first size only): 500 notes get a new paragraph; only they are read and their new chunks embedded;
- `rename` (the first size only): 500 notes move to another folder; their vectors are reused, not embedded;
- `touch` (the first size only): 500 notes get a new modification time; they are read, nothing is embedded.

SciFact (`--dataset`, `../shared/datasets/scifact` by default: 5,183 abstracts; `--scifact-docs` takes the first N)
is written as one markdown file per abstract and indexed once: the first-index throughput, every text
embedded. Every row gives the run's wall time and its report's
counters (files read, texts embedded, chunks reused, batches). A `needle index` process run (`cli no-op`)
adds the start-up of a process to the no-op; `cli no-op through needle watch` is the same command while a
`needle watch` owns the index (the command runs in the watcher's process). Prints a markdown table and writes
eval/results/ingest.json.

    python -m eval.ingest --floor              # throughput against the physical floor
    python -m eval.ingest --tokens             # tokens the dense model runs over: floors and Needle (3 orders)
    python -m eval.ingest --batch-sizes 4 8 16 32   # the dense model alone, per batch size

`--floor` compares Needle's first index with two floors, both the same fastembed dense model and BM25 sparse
model, batched, in one process, models loaded beforehand: `floor` embeds each file's text once as one text
(the dense model reads only its first 256 tokens: the rest of a longer file is not in any vector), and
`full-text floor` embeds every token of each file once (the text cut into consecutive pieces of 254 tokens
by the dense model's own tokenizer, each embedded once). It runs on
two file sets, the first `--floor-docs` SciFact abstracts (300) as markdown files and the bundled notes
(needle/demo/notes), each `--repeats` times (2), and reports the medians: floor seconds, Needle seconds
(ingest graph warmed beforehand, a fresh index each time), ratio = floor / Needle, and texts embedded per
file. Writes eval/results/ingest-floor.json and draws eval/results/ingest-floor.png (the seconds as bars).
Needle's runs take graph overrides from NEEDLE_SET (e.g. NEEDLE_SET=chunker.overlap_chars=100 for the
chunking before).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from eval.corpus_index import needle_with_collection, scratch, settings_for
from eval.demo_data import DEMO_NOTES, SCIFACT
from eval.result_files import RESULTS, command_line, pyplot, save_figure, write_json
from eval.servers import CLI, stop, wait_for_owner
from needle.core.requests import IndexRequest
from needle.facade.api import Needle

WORDS = [
    "river",
    "stone",
    "lamp",
    "garden",
    "engine",
    "winter",
    "copper",
    "signal",
    "harbor",
    "maple",
    "orbit",
    "ledger",
    "canvas",
    "thunder",
    "meadow",
    "circuit",
    "lantern",
    "falcon",
    "glacier",
    "pepper",
    "violin",
    "anchor",
    "compass",
    "ember",
    "quartz",
    "saddle",
    "tunnel",
    "velvet",
    "willow",
]
CHANGED = 500
KEYS = ("files_seen", "files_read", "files_skipped_by_stat", "texts_embedded", "chunks_reused", "deleted", "batches")


def note(i: int, rng: random.Random) -> str:
    """A generated note: a title heading and two short paragraphs of pseudo-words."""
    paragraphs = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(25, 45))) for _ in range(2)]
    return f"# Note {i}: {rng.choice(WORDS)} {rng.choice(WORDS)}\n\n" + "\n\n".join(paragraphs) + "\n"


def generate(root: Path, count: int, distinct: int = 50) -> list[Path]:
    """Write `count` notes into 50 folders under `root`, repeating `distinct` texts."""
    rng = random.Random(count)
    texts = [note(i, rng) for i in range(distinct)]
    files = []
    for i in range(count):
        path = root / f"folder-{i % 50:02d}" / f"note-{i:06d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(texts[(i // 50) % distinct])
        files.append(path)
    return files


def fresh_needle(base: Path, name: str, root: Path) -> Needle:
    """A Needle with its own data folder `base/data-NAME` and `root` as its one collection (`NEEDLE_SET` applies)."""
    return needle_with_collection(base / f"data-{name}", root)


def timed(rows: list[dict[str, Any]], scenario: str, size: int, needle: Needle) -> dict[str, Any]:
    """Run an index run, time it and keep a row."""
    started = time.perf_counter()
    report = needle.index(IndexRequest())
    seconds = time.perf_counter() - started
    row = {"scenario": scenario, "files": size, "seconds": round(seconds, 2), **{k: getattr(report, k) for k in KEYS}}
    if scenario.startswith("first"):
        row["files_per_s"] = round(size / seconds, 1)
        row["texts_per_s"] = round(report.texts_embedded / seconds, 1)
    rows.append(row)
    print(json.dumps(row), flush=True)
    return report


def cli_noop(rows: list[dict[str, Any]], size: int, data_dir: Path) -> None:
    """A no-op `needle index` in a new process: start-up, models and the run."""
    env = {**os.environ, "NEEDLE_DATA_DIR": str(data_dir)}
    started = time.perf_counter()
    done = subprocess.run([*CLI, "index", "--json"], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"needle index failed: {done.stderr.strip()}")
    report = json.loads(done.stdout)
    row = {
        "scenario": "cli no-op",
        "files": size,
        "seconds": round(seconds, 2),
        **{k: getattr(report, k) for k in KEYS},
    }
    rows.append(row)
    print(json.dumps(row), flush=True)


def owner_noop(rows: list[dict[str, Any]], size: int, data_dir: Path) -> None:
    """A no-op `needle index` in a new process while `needle watch` owns the index: the command runs through it."""
    env = {**os.environ, "NEEDLE_DATA_DIR": str(data_dir)}
    watcher = subprocess.Popen([*CLI, "watch"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_owner(data_dir, watcher, timeout=600, caught_up=True)
        for _ in range(2):  # the owner's first index run through the route warms it; the second is timed
            started = time.perf_counter()
            done = subprocess.run([*CLI, "index", "--json"], env=env, capture_output=True, text=True)
            seconds = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"needle index through the owner failed: {done.stderr.strip()}")
        report = json.loads(done.stdout)
        row = {
            "scenario": "cli no-op through needle watch",
            "files": size,
            "seconds": round(seconds, 2),
            **{k: getattr(report, k) for k in KEYS},
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    finally:
        stop(watcher, timeout=60)


def notes_benchmark(base: Path, size: int, changes: bool, rows: list[dict[str, Any]]) -> None:
    """First index, no-op, and (with `changes`) edit, rename and touch 500 notes, at one size."""
    root = base / f"notes-{size}"
    files = generate(root, size)
    needle = fresh_needle(base, str(size), root)
    timed(rows, "first index", size, needle)
    timed(rows, "no-op", size, needle)
    if changes:
        rng = random.Random(7)
        for path in rng.sample(files, CHANGED):
            path.write_text(
                path.read_text() + "\nAn added line: " + " ".join(rng.choice(WORDS) for _ in range(12)) + "\n"
            )
        timed(rows, f"edit {CHANGED}", size, needle)
        moved = root / "moved"
        moved.mkdir()
        for path in rng.sample(files, CHANGED):
            path.rename(moved / path.name)
        timed(rows, f"rename {CHANGED}", size, needle)
        now = time.time()
        for path in sorted(moved.iterdir())[:CHANGED]:
            os.utime(path, (now + 10, now + 10))
        timed(rows, f"touch {CHANGED}", size, needle)
        timed(rows, "no-op", size, needle)
    needle.close()
    cli_noop(rows, size, base / f"data-{size}")
    owner_noop(rows, size, base / f"data-{size}")


def write_scifact(root: Path, limit: int | None, dataset: Path = SCIFACT) -> int:
    """Write the first `limit` abstracts of SciFact (a BEIR folder) as markdown files under `root`; returns how many."""
    root.mkdir(parents=True)
    count = 0
    with (dataset / "corpus.jsonl").open() as corpus:
        for line in corpus:
            if limit is not None and count >= limit:
                break
            doc = json.loads(line)
            (root / f"{doc['_id']}.md").write_text(f"# {doc.get('title') or doc['_id']}\n\n{doc['text']}\n")
            count += 1
    return count


def floor_embedders(settings: Any) -> tuple[Any, Any]:
    """The index's dense and BM25 sparse fastembed embedders, warmed (models loaded)."""
    from haystack_integrations.components.embedders.fastembed import (
        FastembedDocumentEmbedder,
        FastembedSparseDocumentEmbedder,
    )
    from needle.core.model_files import dense_embedder_params, sparse_embedder_params

    dense = FastembedDocumentEmbedder(
        **dense_embedder_params(settings.embedding.model, settings.model_dir),
        prefix=settings.embedding.document_prefix or "",
        batch_size=16,
        progress_bar=False,
    )
    sparse = FastembedSparseDocumentEmbedder(
        **sparse_embedder_params(settings.sparse.model, settings.model_dir),
        batch_size=256,
        progress_bar=False,
    )
    dense.warm_up()
    sparse.warm_up()
    return dense, sparse


def model_tokenizer(dense: Any, truncate: bool = True) -> Any:
    """The warmed dense embedder's tokenizer, without padding (and without truncation unless `truncate`)."""
    from haystack_integrations.components.embedders.needle.fastembed_dense_document_embedder import token_counter

    tokenizer = token_counter(dense)
    if not truncate:
        tokenizer.no_truncation()
    return tokenizer


def shortest_first(texts: list[str], tokenizer: Any) -> list[Any]:
    """`texts` as Documents, fewest model tokens first (the least padding, as Needle's dense embedder orders them)."""
    from haystack import Document

    lengths = [len(encoding.ids) for encoding in tokenizer.encode_batch(texts)]
    return [Document(content=texts[i]) for i in sorted(range(len(texts)), key=lambda i: lengths[i])]


def floor_seconds(files: list[Path], dense: Any, sparse: Any) -> float:
    """Seconds to read `files` and embed each one's text once with both models (shortest first: least padding)."""
    tokenizer = model_tokenizer(dense)
    started = time.perf_counter()
    docs = shortest_first([path.read_text() for path in files], tokenizer)
    sparse.run(documents=dense.run(documents=docs)["documents"])
    return time.perf_counter() - started


def token_windows(text: str, tokenizer: Any, size: int = 254) -> list[str]:
    """`text` cut into consecutive pieces of at most `size` tokens (the model adds two of its own)."""
    offsets = list(tokenizer.encode(text, add_special_tokens=False).offsets)
    if not offsets:
        return [text]
    pieces = []
    for start in range(0, len(offsets), size):
        window = offsets[start : start + size]
        end = offsets[start + size][0] if start + size < len(offsets) else len(text)
        pieces.append(text[(window[0][0] if start else 0) : end])
    return pieces


def floor_full_seconds(files: list[Path], dense: Any, sparse: Any) -> tuple[float, int]:
    """Seconds to read `files` and embed every token of each once (pieces of 254 tokens, shortest first), and
    how many pieces."""
    tokenizer, counter = model_tokenizer(dense, truncate=False), model_tokenizer(dense)
    started = time.perf_counter()
    pieces = [piece for path in files for piece in token_windows(path.read_text(), tokenizer)]
    docs = shortest_first(pieces, counter)
    sparse.run(documents=dense.run(documents=docs)["documents"])
    return time.perf_counter() - started, len(docs)


def padded_tokens(lengths: list[int], keys: list[int] | None = None, batch: int = 16, window: int = 256) -> int:
    """
    Tokens a model runs over for texts of these token lengths, batched in the order of `keys` (by default the
    lengths: shortest first), each batch padded to its longest.
    """
    capped = [min(n, window) for n in lengths]
    order = keys if keys is not None else capped
    ordered = [capped[i] for i in sorted(range(len(capped)), key=lambda i: order[i])]
    return sum(max(ordered[i : i + batch]) * len(ordered[i : i + batch]) for i in range(0, len(ordered), batch))


def needle_texts(files: list[Path], texts: list[str], needle: Needle) -> list[str]:
    """The texts of `files` (read as `texts`) that `needle`'s ingest graph gives its dense model: each chunk
    with its context, as its dense embedder prepares it; the graph's models are not loaded."""
    from haystack import Document

    ingest = needle.pipeline("ingest")
    docs = [Document(content=text, meta={"collection": "notes", "path": path.name}) for path, text in zip(files, texts)]
    chunks = ingest.get_component("chunker").run(documents=docs)["documents"]
    return ingest.get_component("dense_embedder").embedder._prepare_texts_to_embed(chunks)


def token_counts(files: list[Path], needle: Needle, tokenizer: Any) -> dict[str, int]:
    """
    Tokens the dense model runs over for the floor (each file's text), the full-text floor (its 254-token
    pieces) and Needle (the chunks of `needle`'s own ingest graph, each text as its dense embedder prepares
    it), batched as `padded_tokens` counts them; for Needle's chunks also in the order the chunker gives them
    and shortest in characters first, and how many of them, and how many of their tokens, the model's
    256-token window cuts off. The graph's models are not loaded.
    """
    texts = [path.read_text() for path in files]
    embedded = needle_texts(files, texts, needle)

    def lengths(pieces: list[str]) -> list[int]:  # the tokenizer adds the model's two special tokens
        return [len(tokenizer.encode(piece).ids) for piece in pieces]

    needle_lengths = lengths(embedded)
    pieces = [piece for text in texts for piece in token_windows(text, tokenizer)]
    return {
        "floor": padded_tokens(lengths(texts)),
        "full_text_floor": padded_tokens(lengths(pieces)),
        "needle": padded_tokens(needle_lengths),
        "needle_given_order": padded_tokens(needle_lengths, keys=list(range(len(embedded)))),
        "needle_by_characters": padded_tokens(needle_lengths, keys=[len(text) for text in embedded]),
        "needle_texts": len(embedded),
        "needle_texts_past_window": sum(1 for n in needle_lengths if n > 256),
        "needle_tokens_past_window": sum(n - 256 for n in needle_lengths if n > 256),
    }


def needle_seconds(base: Path, name: str, root: Path) -> tuple[float, dict[str, Any]]:
    """Seconds of Needle's first index of `root` into a fresh index, the ingest graph warmed beforehand."""
    needle = fresh_needle(base, name, root)
    try:
        needle.warm("ingest")
        started = time.perf_counter()
        report = needle.index(IndexRequest())
        return time.perf_counter() - started, report
    finally:
        needle.close()
        shutil.rmtree(base / f"data-{name}", ignore_errors=True)


def file_sets(base: Path, docs: int, dataset: Path = SCIFACT) -> dict[str, tuple[Path, list[Path]]]:
    """
    The floor's two file sets, each as its folder and its files: the first `docs` SciFact abstracts (written
    under `base`) and the bundled notes.
    """
    write_scifact(base / "scifact", docs, dataset)
    roots = {f"SciFact {docs}": base / "scifact", "bundled notes": DEMO_NOTES}
    return {
        label: (root, sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".md", ".txt")))
        for label, root in roots.items()
    }


def token_table(base: Path, docs: int, dataset: Path = SCIFACT) -> str:
    """`token_counts` for the floor's two file sets, as a markdown table."""
    needle = fresh_needle(base, "tokens", base)
    dense, _ = floor_embedders(needle.settings)
    tokenizer = model_tokenizer(dense, truncate=False)
    lines = [
        "| set | files | floor tokens | full-text floor tokens | Needle tokens | Needle texts | floor / Needle | "
        "Needle tokens, chunks in the chunker's order | Needle tokens, shortest in characters first | "
        "Needle texts past 256 tokens | their tokens past it |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    try:
        for label, (_, files) in file_sets(base, docs, dataset).items():
            c = token_counts(files, needle, tokenizer)
            lines.append(
                f"| {label} | {len(files)} | {c['floor']} | {c['full_text_floor']} | {c['needle']} | "
                f"{c['needle_texts']} | {c['floor'] / c['needle']:.3f} | {c['needle_given_order']} | "
                f"{c['needle_by_characters']} | {c['needle_texts_past_window']} | "
                f"{c['needle_tokens_past_window']} |"
            )
    finally:
        needle.close()
    return "\n".join(lines)


def batch_table(base: Path, docs: int, sizes: list[int], repeats: int, dataset: Path = SCIFACT) -> str:
    """
    Seconds the dense model alone takes over the floor's texts (the first `docs` SciFact abstracts, each
    once) and over Needle's chunks of them (as its dense embedder prepares them), fewest tokens first, in
    batches of each of `sizes` (median of `repeats`), as a markdown table.
    """
    needle = fresh_needle(base, "batches", base)
    try:
        dense, _ = floor_embedders(needle.settings)
        counter = model_tokenizer(dense)
        _, files = file_sets(base, docs, dataset)[f"SciFact {docs}"]
        texts = [path.read_text() for path in files]
        prepared = needle_texts(files, texts, needle)
        sets = {"floor": shortest_first(texts, counter), "Needle's chunks": shortest_first(prepared, counter)}
        lines = ["| batch | " + " | ".join(f"{name} s" for name in sets) + " |", "|---|" + "---|" * len(sets)]
        for size in sizes:
            dense.batch_size = size
            cells = []
            for documents in sets.values():
                runs = []
                for _ in range(repeats):
                    started = time.perf_counter()
                    dense.run(documents=documents)
                    runs.append(time.perf_counter() - started)
                cells.append(f"{statistics.median(runs):.2f}")
            lines.append(f"| {size} | " + " | ".join(cells) + " |")
            print(lines[-1], file=sys.stderr, flush=True)  # progress
        return "\n".join(lines)
    finally:
        needle.close()


def floor_benchmark(base: Path, docs: int, repeats: int, dataset: Path = SCIFACT) -> list[dict[str, Any]]:
    """For each file set, the median floor and Needle seconds over `repeats` runs, and their ratio."""
    sets = file_sets(base, docs, dataset)
    dense, sparse = floor_embedders(settings_for(base / "data-floor"))
    rows = []
    for label, (root, files) in sets.items():
        floors, fulls, needles, report, pieces = [], [], [], {}, 0
        for run in range(repeats):
            floors.append(floor_seconds(files, dense, sparse))
            full, pieces = floor_full_seconds(files, dense, sparse)
            fulls.append(full)
            seconds, report = needle_seconds(base, f"floor-{run}", root)
            needles.append(seconds)
            print(
                json.dumps(
                    {
                        "set": label,
                        "run": run,
                        "floor_s": round(floors[-1], 2),
                        "full_floor_s": round(full, 2),
                        "needle_s": round(seconds, 2),
                    }
                ),
                flush=True,
            )
        floor_s, full_s, needle_s = statistics.median(floors), statistics.median(fulls), statistics.median(needles)
        row = {
            "set": label,
            "files": len(files),
            "floor_s": round(floor_s, 2),
            "full_floor_s": round(full_s, 2),
            "needle_s": round(needle_s, 2),
            "ratio": round(floor_s / needle_s, 3),
            "full_ratio": round(full_s / needle_s, 3),
            "full_floor_texts_per_file": round(pieces / len(files), 2),
            "texts_per_file": round(report.texts_embedded / len(files), 2),
            "floor_runs": [round(x, 2) for x in floors],
            "full_floor_runs": [round(x, 2) for x in fulls],
            "needle_runs": [round(x, 2) for x in needles],
            **{k: getattr(report, k) for k in KEYS},
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def floor_table(rows: list[dict[str, Any]]) -> str:
    """The floor rows as a markdown table."""
    lines = [
        "| set | files | floor s | full-text floor s | Needle s | ratio to floor | ratio to full-text floor | "
        "texts per file (full-text floor) | texts per file (Needle) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['set']} | {r['files']} | {r['floor_s']} | {r['full_floor_s']} | {r['needle_s']} | {r['ratio']} | "
            f"{r['full_ratio']} | {r['full_floor_texts_per_file']} | {r['texts_per_file']} |"
        )
    return "\n".join(lines)


def plot_floor(rows: list[dict[str, Any]], path: Path) -> None:
    """Draw each set's floor, full-text floor and Needle seconds as bars, Needle's two ratios written beside."""
    fig, axes = pyplot().subplots(1, len(rows), figsize=(4.5 * len(rows), 3.6), squeeze=False)
    for ax, row in zip(axes[0], rows):
        seconds = [row["floor_s"], row["full_floor_s"], row["needle_s"]]
        bars = ax.bar(["floor", "full-text\nfloor", "Needle"], seconds, color=["#9aa5b1", "#6b7785", "#2f6fb0"])
        ax.bar_label(bars, fmt="%.2f s", fontsize=8)
        ax.set_title(
            f"{row['set']} ({row['files']} files)\nfloor / Needle {row['ratio']}, "
            f"full-text floor / Needle {row['full_ratio']}",
            fontsize=9,
        )
        ax.set_ylabel("seconds, first index (median)")
        ax.margins(y=0.15)
        ax.grid(axis="y", alpha=0.3)
    save_figure(fig, path, dpi=120)


def scifact_benchmark(base: Path, rows: list[dict[str, Any]], limit: int | None, dataset: Path = SCIFACT) -> None:
    """SciFact's corpus (its first `limit` abstracts) as markdown files, indexed once."""
    root = base / "scifact"
    count = write_scifact(root, limit, dataset)
    needle = fresh_needle(base, "scifact", root)
    timed(rows, "first index (SciFact)", count, needle)
    timed(rows, "no-op (SciFact)", count, needle)
    needle.close()


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as a markdown table."""
    head = [
        "scenario",
        "files",
        "seconds",
        "files read",
        "skipped by stat",
        "texts embedded",
        "chunks reused",
        "deleted",
        "batches",
        "files/s",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append(
            f"| {r['scenario']} | {r['files']} | {r['seconds']} | {r['files_read']} | {r['files_skipped_by_stat']} | "
            f"{r['texts_embedded']} | {r['chunks_reused']} | {r['deleted']} | {r['batches']} | {r.get('files_per_s', '')} |"
        )
    return "\n".join(lines)


def write_results(path: Path, rows: list[dict[str, Any]], argv: list[str] | None) -> None:
    """Write a benchmark's rows as JSON, with the command that made them and the machine it ran on."""
    machine = {"cpus": os.cpu_count(), "python": platform.python_version()}
    write_json(path, {"command": command_line("eval.ingest", argv), "machine": machine, "rows": rows})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.ingest", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--sizes", type=int, nargs="*", default=[5000, 20000], help="generated notes per run (none: SciFact only)"
    )
    parser.add_argument("--no-scifact", action="store_true", help="leave SciFact out")
    parser.add_argument("--dataset", type=Path, default=SCIFACT, help="the SciFact BEIR folder (its corpus.jsonl)")
    parser.add_argument("--scifact-docs", type=int, default=None, help="index only the first N SciFact abstracts")
    parser.add_argument(
        "--out", default=None, help="results file (default eval/results/ingest.json or ingest-floor.json)"
    )
    parser.add_argument("--floor", action="store_true", help="throughput against the floor (embedding each file once)")
    parser.add_argument("--floor-docs", type=int, default=300, help="SciFact abstracts in the floor's file set")
    parser.add_argument(
        "--repeats", type=int, default=2, help="runs per file set in --floor, per batch size in --batch-sizes (median)"
    )
    parser.add_argument("--tokens", action="store_true", help="count the tokens the dense model runs over (no timing)")
    parser.add_argument(
        "--batch-sizes",
        type=int,
        nargs="+",
        default=None,
        help="time the dense model alone over the floor's texts and Needle's chunks per batch size",
    )
    args = parser.parse_args(argv)
    if args.batch_sizes:
        with scratch("needle-batches-") as base:
            print(batch_table(base, args.floor_docs, args.batch_sizes, args.repeats, args.dataset))
        return 0
    if args.tokens:
        with scratch("needle-tokens-") as base:
            print(token_table(base, args.floor_docs, args.dataset))
        return 0
    if args.floor:
        with scratch("needle-floor-") as base:
            rows = floor_benchmark(base, args.floor_docs, args.repeats, args.dataset)
        print(floor_table(rows))
        out = Path(args.out or RESULTS / "ingest-floor.json")
        plot_floor(rows, out.with_suffix(".png"))
        write_results(out, rows, argv)
        return 0
    rows: list[dict[str, Any]] = []
    with scratch("needle-ingest-") as base:
        for i, size in enumerate(args.sizes):
            notes_benchmark(base, size, changes=i == 0, rows=rows)
        if not args.no_scifact:
            scifact_benchmark(base, rows, args.scifact_docs, args.dataset)
    print(table(rows))
    write_results(Path(args.out or RESULTS / "ingest.json"), rows, argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
