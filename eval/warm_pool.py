"""The first searches through a freshly started owner: does a warmed graph instance answer its first search fast?

    python -m eval.warm_pool --dir /tmp/hp/data-hotpath --before OLD --repeat 3

An owner serves each graph from `serve.graph_instances` warmed instances (`needle.runtime.pool`). Per repeat and per
checkout (this one, and `--before`'s, interleaved), on the same index:

- `sequential`: `needle owner start` (returns once every graph is warm), then `--searches` `needle search`
  commands one after the other (whole process, wall time), each with another query;
- `concurrent`: a fresh `needle owner start`, then two rounds of `serve.graph_instances` searches sent at
  once (each round keeps every instance busy, so each instance answers its first search in round 1).

`--first-call`: the first call that starts an owner (`search`, `query`) against the command in its own
process (autostart off) and, with `--before`, that checkout's first call; interleaved, each run after the
previous owner's process is gone (its index lock released), median of `--repeat`.

`--in-process`: in this process (the code of this checkout; for another, copy the script there), a
`Needle` on the index warms the `search` graph's instances, then each instance runs two searches, one
instance after the other: the first round is each instance's first search.

Prints the median of each position over the repeats (sequential), of each round's slowest and median
search (concurrent), and of `needle owner start`'s own wall time. The owner writes its record and log into the data folder; the index is only read.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import threading
import time
from pathlib import Path

from eval.client import COMMANDS
from eval.corpus_index import needle_on
from eval.demo_data import REPO
from eval.hotpath import read_queries
from eval.servers import CLI, cli_env, stop_owner, timed_cli
from needle.core.requests import SearchRequest

INSTANCES = 4  # serve.graph_instances' default


STARTS: dict[Path, list[float]] = {}


def start_owner(data: Path, repo: Path) -> None:
    """`needle owner start` (returns once every graph is warm), its wall time kept in `STARTS`."""
    env = cli_env(data, True, repo)
    started = time.perf_counter()
    subprocess.run(
        [*CLI, "owner", "start"],
        cwd=repo,
        env=env,
        capture_output=True,
        check=True,
    )
    STARTS.setdefault(repo, []).append(time.perf_counter() - started)


def sequential(data: Path, repo: Path, queries: list[str], count: int) -> list[float]:
    stop_owner(data)
    start_owner(data, repo)
    env = cli_env(data, True, repo)
    walls = [timed_cli(["search", query, "-n", "5"], env, repo).seconds for query in queries[:count]]
    stop_owner(data)
    return walls


def concurrent(data: Path, repo: Path, queries: list[str], rounds: int = 2) -> list[list[float]]:
    stop_owner(data)
    start_owner(data, repo)
    env = cli_env(data, True, repo)
    found: list[list[float]] = []
    for number in range(rounds):
        walls: list[float] = [0.0] * INSTANCES

        def one(i: int, walls: list[float] = walls, number: int = number) -> None:
            walls[i] = timed_cli(["search", queries[20 + number * INSTANCES + i], "-n", "5"], env, repo).seconds

        threads = [threading.Thread(target=one, args=(i,)) for i in range(INSTANCES)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        found.append(walls)
    stop_owner(data)
    return found


def in_process(data: Path, graph: str = "search") -> None:
    """Each warmed instance's first and second search, in this process (ms)."""
    needle = needle_on(data)
    needle.store.count_documents()  # open the index first, as an owner does before it loads a graph
    needle.warm(graph)
    pool = needle.runtime.pool(graph)
    queries = read_queries(data)
    instances = list(pool._idle)
    try:
        for number in range(2):
            walls = []
            for i, instance in enumerate(instances):
                pool._idle = [instance]  # this instance only
                started = time.perf_counter()
                needle.search(SearchRequest(query=queries[number * len(instances) + i], limit=5), pipeline=graph)
                walls.append(round((time.perf_counter() - started) * 1000))
            print(f"{graph}, round {number + 1}, instance 1..{len(instances)}: {walls} ms", flush=True)
    finally:
        pool._idle = instances


def _owner_gone(data: Path) -> None:
    """Stop the owner and wait until no owner process runs (a command that starts too soon finds the index locked)."""
    stop_owner(data)
    for _ in range(100):
        if not subprocess.run(
            ["pgrep", "-f", "needle.shells.cli owner run"], capture_output=True, text=True
        ).stdout.strip():
            return
        time.sleep(0.1)


def first_call(data: Path, before: Path | None, repeat: int) -> None:
    """The first call against the command in its own process (wall seconds, exit code)."""
    columns = {"no owner": (REPO, False), "first call": (REPO, True)}
    if before is not None:
        columns["first call (before)"] = (before, True)
    found: dict[tuple[str, str], list[tuple[float, int]]] = {}
    for _ in range(repeat):
        for name in ("search", "query"):
            for column, (repo, autostart) in columns.items():
                _owner_gone(data)
                run = timed_cli(COMMANDS[name], cli_env(data, autostart, repo), repo)
                found.setdefault((name, column), []).append((round(run.seconds, 2), run.returncode))
    _owner_gone(data)
    print("| command | " + " | ".join(columns) + " |")
    print("| --- |" + " --- |" * len(columns))
    for name in ("search", "query"):
        cells = [f"{statistics.median(w for w, _ in found[(name, c)]):.2f} s" for c in columns]
        print(f"| `{name}` | " + " | ".join(cells) + " |", [found[(name, c)] for c in columns])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.warm_pool", description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/hp/data-hotpath"), help="an indexed data folder")
    parser.add_argument("--before", type=Path, help="another checkout's tree, measured interleaved with this one")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--searches", type=int, default=5)
    parser.add_argument(
        "--first-call", action="store_true", help="the first call that starts an owner, against in-process"
    )
    parser.add_argument("--in-process", action="store_true", help="each graph instance's first search, in this process")
    args = parser.parse_args(argv)
    if args.first_call:
        first_call(args.dir, args.before.resolve() if args.before else None, args.repeat)
        return 0
    if args.in_process:
        in_process(args.dir)
        return 0
    queries = read_queries(args.dir)
    checkouts = [("now", REPO)] + ([("before", args.before.resolve())] if args.before else [])
    seq: dict[str, list[list[float]]] = {name: [] for name, _ in checkouts}
    con: dict[str, list[list[list[float]]]] = {name: [] for name, _ in checkouts}
    for _ in range(args.repeat):
        for name, repo in reversed(checkouts):
            seq[name].append(sequential(args.dir, repo, queries, args.searches))
            con[name].append(concurrent(args.dir, repo, queries))
            print(
                name,
                "sequential",
                [round(w, 2) for w in seq[name][-1]],
                "concurrent",
                [[round(w, 2) for w in r] for r in con[name][-1]],
                flush=True,
            )
    print(f"\nsequential searches after `needle owner start`, median of {args.repeat} (s)")
    print("| checkout | " + " | ".join(f"search {i + 1}" for i in range(args.searches)) + " |")
    print("| --- |" + " --- |" * args.searches)
    for name, runs in seq.items():
        print(
            f"| {name} | "
            + " | ".join(f"{statistics.median(r[i] for r in runs):.2f}" for i in range(args.searches))
            + " |"
        )
    print(f"\n{INSTANCES} searches at once, two rounds, median over {args.repeat} of each round's slowest / median (s)")
    print("| checkout | round 1 slowest | round 1 median | round 2 slowest | round 2 median |")
    print("| --- | --- | --- | --- | --- |")
    for name, runs in con.items():
        cells = []
        for number in range(2):
            cells.append(f"{statistics.median(max(r[number]) for r in runs):.2f}")
            cells.append(f"{statistics.median(statistics.median(r[number]) for r in runs):.2f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("\n`needle owner start` (every graph warm), median of", 2 * args.repeat)
    for name, repo in checkouts:
        print(f"| {name} | {statistics.median(STARTS[repo]):.2f} s |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
