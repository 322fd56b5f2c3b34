"""How much the background owner keeps resident: after an index run of the demo notes and twenty mixed queries.

    python -m eval.owner_memory --data-dir /tmp/owner-memory

On a fresh data folder: `needle collection add` of the demo notes, `needle index` (which starts the background
owner), then twenty queries (`search`, `vsearch`, `query` in turn), each through the owner as a shell would
send them. Prints the owner's resident memory (VmRSS, and its anonymous part) after each step and every
`--every` seconds meanwhile, then stops the owner. The target is at most 350 MB after the queries.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEMO_NOTES = REPO / "needle" / "demo" / "notes"
QUERIES = [
    "renew the TLS certificate with certbot",
    "git rebase onto another branch",
    "encrypted laptop backups",
    "exit code 137 container memory",
    "kestrel",
    "postgres vacuum",
    "ssh key rotation",
    "sourdough starter",
    "kubernetes liveness probe",
    "tax documents",
]


def resident(pid: int) -> tuple[int, int]:
    """VmRSS and RssAnon of the process, in MB (0 when it is gone)."""
    values = {"VmRSS": 0, "RssAnon": 0}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in values:
                values[key] = int(value.split()[0]) // 1024
    except OSError:
        pass
    return values["VmRSS"], values["RssAnon"]


def owner_pid(data: Path) -> int | None:
    record = data / "owner.json"
    return json.loads(record.read_text())["pid"] if record.exists() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=f"python -m {__name__}", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, required=True, help="a scratch folder (emptied first)")
    parser.add_argument("--every", type=float, default=5.0, help="seconds between samples while a step runs")
    parser.add_argument("--queries", type=int, default=20)
    args = parser.parse_args(argv)
    shutil.rmtree(args.data_dir, ignore_errors=True)
    env = {**os.environ, "NEEDLE_DATA_DIR": str(args.data_dir), "NEEDLE_OWNER__AUTOSTART": "true"}
    cli = [sys.executable, "-m", "needle.shells.cli"]
    started = time.monotonic()
    samples: list[tuple[float, str, int, int]] = []

    def sample(step: str) -> None:
        pid = owner_pid(args.data_dir)
        if pid is not None:
            rss, anon = resident(pid)
            samples.append((time.monotonic() - started, step, rss, anon))
            print(f"{samples[-1][0]:7.1f} s  {step:<28} owner RSS {rss:5d} MB (anonymous {anon:5d} MB)", flush=True)

    def meanwhile(step: str, done: threading.Event) -> None:
        while not done.wait(args.every):
            sample(f"{step} (running)")

    def run(step: str, *command: str) -> None:
        done = threading.Event()
        watcher = threading.Thread(target=meanwhile, args=(step, done), daemon=True)
        watcher.start()
        subprocess.run([*cli, *command], env=env, check=True, capture_output=True)
        done.set()
        watcher.join()

    try:
        subprocess.run([*cli, "collection", "add", str(DEMO_NOTES), "--name", "notes"], env=env, check=True)
        run("index", "index")
        sample("after index")
        for number in range(args.queries):
            kind = ("search", "vsearch", "query")[number % 3]
            subprocess.run(
                [*cli, kind, QUERIES[number % len(QUERIES)], "-n", "5"], env=env, check=True, capture_output=True
            )
        sample(f"after {args.queries} queries")
        time.sleep(2)
        sample("2 s later")
    finally:
        subprocess.run([*cli, "owner", "stop"], env=env, capture_output=True)
    final = samples[-1][2] if samples else 0
    print(f"owner resident after index + {args.queries} queries: {final} MB (target: at most 350 MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
