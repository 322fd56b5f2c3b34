"""Edit-to-searchable latency of `needle watch`: how long after a note is saved a search finds it.

    python eval/live.py --edits 20

Copies the demo notes into a fresh folder, starts `needle watch` on them (it owns the index and serves its
routes on a loopback port, named in the owner record), waits for the catch-up run, then, one edit at a time,
writes a new word into a note and polls the owner's keyword search (`POST /search/run`) until the note is
found. Half the edits change an existing note, half add a new one. Prints p50/p95/max and writes
eval/results/live.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "needle" / "demo" / "notes"
RESULTS = REPO / "eval" / "results" / "live.json"


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100), interpolated between the closest ranks."""
    ordered = sorted(values)
    k = (len(ordered) - 1) * q / 100
    low, high = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


def owner(data: Path, process: subprocess.Popen, timeout: float) -> dict:
    """The owner record once its routes answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"needle watch exited with {process.returncode}")
        try:
            record = json.loads((data / "owner.json").read_text())
            headers = {"Authorization": f"Bearer {record['token']}"}
            if httpx.get(f"{record['address']}/status", headers=headers, timeout=2).status_code == 200:
                return record
        except (OSError, ValueError, httpx.HTTPError):
            pass
        time.sleep(0.2)
    raise SystemExit(f"needle watch did not start within {timeout} s")


def found(client: httpx.Client, word: str, path: str) -> bool:
    """Whether a keyword search for `word` finds the note at `path`."""
    result = client.post("/search/run", json={"query": word, "limit": 5}).json()["result"]
    return any(hit["path"] == path for hit in result["results"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edits", type=int, default=20, help="edits to time (default 20)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds an edit may take (default 120)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()

    base = Path(tempfile.mkdtemp(prefix="needle-live-"))
    notes, data = base / "notes", base / "data"
    shutil.copytree(DEMO, notes)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEEDLE_")}
    env.update({"NEEDLE_DATA_DIR": str(data), "NEEDLE_MODEL_DIR": os.environ.get("NEEDLE_MODEL_DIR", "~/.cache/needle/models")})
    debounce = os.environ.get("NEEDLE_WATCH__DEBOUNCE_MS")
    if debounce:
        env["NEEDLE_WATCH__DEBOUNCE_MS"] = debounce
    cli = [sys.executable, "-m", "needle.cli"]
    subprocess.run([*cli, "collection", "add", str(notes), "--name", "notes"], env=env, cwd=REPO, check=True, capture_output=True)
    log = (base / "watch.log").open("w")
    started = time.perf_counter()
    process = subprocess.Popen([*cli, "watch"], env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    latencies: list[float] = []
    try:
        record = owner(data, process, 600)
        headers = {"Authorization": f"Bearer {record['token']}"}
        with httpx.Client(base_url=record["address"], headers=headers, timeout=120) as client:
            existing = sorted(p.relative_to(notes).as_posix() for p in notes.rglob("*.md"))
            while client.post("/status/run", json={}).json()["result"]["watcher"]["last_update"] is None:
                time.sleep(0.5)
            catch_up = time.perf_counter() - started
            print(f"needle watch up and caught up with {len(existing)} notes in {catch_up:.1f} s", file=sys.stderr)
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
                while not found(client, word, rel):
                    if time.perf_counter() - t0 > args.timeout:
                        raise SystemExit(f"edit {i} ({rel}) not searchable within {args.timeout} s")
                    time.sleep(0.05)
                latencies.append(time.perf_counter() - t0)
                print(f"edit {i + 1:2d} {'change' if i % 2 == 0 else 'new   '} {rel:55s} {latencies[-1]:6.2f} s", file=sys.stderr)
    finally:
        process.terminate()
        process.wait(timeout=60)
        shutil.rmtree(base, ignore_errors=True)

    report = {
        "command": "python eval/live.py --edits " + str(args.edits),
        "notes": len(existing),
        "edits": len(latencies),
        "debounce_ms": int(debounce or 500),
        "p50_s": round(statistics.median(latencies), 2),
        "p95_s": round(percentile(latencies, 95), 2),
        "max_s": round(max(latencies), 2),
        "mean_s": round(statistics.mean(latencies), 2),
        "latencies_s": [round(x, 3) for x in latencies],
    }
    print("| edits | notes | debounce | p50 | p95 | max |")
    print("|---|---|---|---|---|---|")
    print(f"| {report['edits']} | {report['notes']} | {report['debounce_ms']} ms | {report['p50_s']} s | "
          f"{report['p95_s']} s | {report['max_s']} s |")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
