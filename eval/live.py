"""Edit-to-searchable latency of `needle watch`: how long after a note is saved a search finds it.

    python -m eval.live                                # 50 edits on the demo notes, polling `query`
    python -m eval.live --generated 5000 --no-demo     # 50 edits on 5,000 generated notes

Copies the demo notes into a fresh folder, starts `needle watch` on them (it owns the index and serves its
routes on a loopback port, named in the owner record), waits for the catch-up run, then, one edit at a time,
writes a new word into a note and polls the owner's hybrid query (`POST /query/run`; `--route search` for
keywords only) until the note is found. Half the edits change an existing note, half add a new one.
`--generated N` also runs on a folder of N small notes built from the demo notes' paragraphs, each with
words of its own. Prints the catch-up time and a table per corpus, writes eval/results/live.json and draws
eval/results/live.png (latency CDF per corpus, p50/p95 marked).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from eval.demo_data import DEMO_NOTES, REPO, demo_paragraphs
from eval.result_files import RESULTS, command_line, pyplot, read_json, save_figure, write_json
from eval.servers import CLI, auth_headers, stop, wait_for_owner
from needle.evaluation.metrics import percentile


def generate(folder: Path, count: int) -> None:
    """Write `count` small notes built from the demo notes' paragraphs, each with two words of its own."""
    paragraphs = demo_paragraphs()
    for i in range(count):
        picked = [paragraphs[(i * 7 + j * 13) % len(paragraphs)] for j in range(3)]
        note = folder / f"g{i // 500:02d}" / f"note-{i:05d}.md"
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text(
            f"# Note {i}\n\nTopic gennote{i}z, series genseries{i % 97}k.\n\n" + "\n\n".join(picked) + "\n",
            encoding="utf-8",
        )


def found(client: httpx.Client, route: str, word: str, path: str) -> bool:
    """Whether the owner's `route` (query or search) for `word` finds the note at `path` with the word in its
    text (a note can rank in the top 5 for a made-up word by its vector alone, before the edit is indexed)."""
    result = client.post(f"/{route}/run", json={"query": word, "limit": 5}).json()["result"]
    return any(hit["path"] == path and word in (hit.get("text") or "") for hit in result["results"])


def run(name: str, source: Path | None, generated: int, args: argparse.Namespace) -> dict:
    """Time `args.edits` edits on one corpus under a fresh `needle watch`; the corpus's report."""
    base = Path(tempfile.mkdtemp(prefix="needle-live-"))
    notes, data = base / "notes", base / "data"
    if source is not None:
        shutil.copytree(source, notes)
    else:
        generate(notes, generated)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEEDLE_")}
    env.update(
        {"NEEDLE_DATA_DIR": str(data), "NEEDLE_MODEL_DIR": os.environ.get("NEEDLE_MODEL_DIR", "~/.cache/needle/models")}
    )
    debounce = os.environ.get("NEEDLE_WATCH__DEBOUNCE_MS")
    if debounce:
        env["NEEDLE_WATCH__DEBOUNCE_MS"] = debounce
    subprocess.run(
        [*CLI, "collection", "add", str(notes), "--name", "notes"], env=env, cwd=REPO, check=True, capture_output=True
    )
    log = (base / "watch.log").open("w")
    started = time.perf_counter()
    process = subprocess.Popen([*CLI, "watch"], env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    latencies: list[float] = []
    try:
        record = wait_for_owner(data, process, args.catch_up_timeout)
        headers = auth_headers(record["token"])
        with httpx.Client(base_url=record["address"], headers=headers, timeout=120) as client:
            existing = sorted(p.relative_to(notes).as_posix() for p in notes.rglob("*.md"))
            last = time.perf_counter()
            while client.post("/status/run", json={}).json()["result"]["watcher"]["last_update"] is None:
                if time.perf_counter() - last > 30:
                    print(f"[{name}] catching up, {time.perf_counter() - started:.0f} s", file=sys.stderr)
                    last = time.perf_counter()
                if process.poll() is not None:
                    raise SystemExit(f"needle watch exited with {process.returncode}")
                time.sleep(0.5)
            catch_up = time.perf_counter() - started
            print(
                f"[{name}] needle watch up and caught up with {len(existing)} notes in {catch_up:.1f} s",
                file=sys.stderr,
            )
            for i in range(args.edits):
                word = f"livewordx{i}q"
                if i % 2 == 0:
                    rel = existing[(i * 7) % len(existing)]
                    note = notes / rel
                    saved = note.read_text(encoding="utf-8") + f"\n\nEdited: {word} marks this edit.\n"
                else:
                    rel = f"live/new-{i}.md"
                    note = notes / rel
                    note.parent.mkdir(exist_ok=True)
                    saved = f"# Live note {i}\n\n{word} is written into a new note.\n"
                t0 = time.perf_counter()
                note.write_text(saved, encoding="utf-8")
                while not found(client, args.route, word, rel):
                    if time.perf_counter() - t0 > args.timeout:
                        raise SystemExit(f"edit {i} ({rel}) not searchable within {args.timeout} s")
                    time.sleep(0.05)
                latencies.append(time.perf_counter() - t0)
                print(
                    f"[{name}] edit {i + 1:2d} {'change' if i % 2 == 0 else 'new   '} {rel:40s} {latencies[-1]:6.2f} s",
                    file=sys.stderr,
                )
    finally:
        stop(process, timeout=60)
        shutil.rmtree(base, ignore_errors=True)
    return {
        "corpus": name,
        "notes": len(existing),
        "edits": len(latencies),
        "route": args.route,
        "debounce_ms": int(debounce or 500),
        "catch_up_s": round(catch_up, 1),
        "p50_s": round(statistics.median(latencies), 2),
        "p95_s": round(percentile(latencies, 95), 2),
        "max_s": round(max(latencies), 2),
        "mean_s": round(statistics.mean(latencies), 2),
        "latencies_s": [round(x, 3) for x in latencies],
    }


def plot(reports: list[dict], path: Path) -> None:
    """Draw the latency CDF of each corpus, its p50 and p95 marked."""
    fig, ax = pyplot().subplots(figsize=(7, 4))
    for row, report in enumerate(reports):
        ordered = sorted(report["latencies_s"])
        share = [(k + 1) / len(ordered) for k in range(len(ordered))]
        (line,) = ax.step(ordered, share, where="post", label=f"{report['corpus']} ({report['notes']} notes)")
        for q, key, marker in ((0.5, "p50_s", "o"), (0.95, "p95_s", "^")):
            ax.plot([report[key]], [q], marker, color=line.get_color())
            ax.annotate(
                f"p{int(q * 100)} {report[key]} s",
                (report[key], q),
                textcoords="offset points",
                xytext=(8, -12 - 12 * row),
                fontsize=8,
                color=line.get_color(),
            )
    ax.set_xlabel(f"seconds from save until `{reports[0]['route']}` finds the note")
    ax.set_ylabel("share of edits")
    ax.set_title("needle watch: edit to searchable")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    save_figure(fig, path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.live", description=__doc__.split("\n\n")[0])
    parser.add_argument("--edits", type=int, default=50, help="edits to time per corpus (default 50)")
    parser.add_argument("--route", choices=["query", "search"], default="query", help="the owner's route polled")
    parser.add_argument("--generated", type=int, default=0, help="also run on N generated notes")
    parser.add_argument("--no-demo", action="store_true", help="skip the demo notes")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds an edit may take (default 120)")
    parser.add_argument("--catch-up-timeout", type=float, default=7200.0, help="seconds the first index may take")
    parser.add_argument("--output", type=Path, default=RESULTS / "live.json")
    parser.add_argument("--plot", type=Path, default=RESULTS / "live.png")
    args = parser.parse_args(argv)
    if args.no_demo and not args.generated:
        raise SystemExit("nothing to run: --no-demo needs --generated N")

    reports = []
    if not args.no_demo:
        reports.append(run("demo", DEMO_NOTES, 0, args))
    if args.generated:
        reports.append(run(f"generated-{args.generated}", None, args.generated, args))
    command = command_line("eval.live", argv)
    for report in reports:
        print(f"\n{report['corpus']}: catch-up (first index) {report['catch_up_s']} s")
        print("| corpus | edits | notes | route | debounce | p50 | p95 | max |")
        print("|---|---|---|---|---|---|---|---|")
        print(
            f"| {report['corpus']} | {report['edits']} | {report['notes']} | {report['route']} | "
            f"{report['debounce_ms']} ms | {report['p50_s']} s | {report['p95_s']} s | {report['max_s']} s |"
        )
    earlier = read_json(args.output, {})
    merged = {r["corpus"]: r for r in earlier.get("corpora", [])} if isinstance(earlier, dict) else {}
    for report in reports:
        merged[report["corpus"]] = {"command": command, **report}
    write_json(args.output, {"corpora": list(merged.values())})
    plot(list(merged.values()), args.plot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
