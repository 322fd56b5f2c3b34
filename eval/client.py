"""Client benchmark: what a `needle` command costs as a whole process, with and without an index owner.

    python -m eval.client --build           # generate 7,200 notes, index them (once) into $TMPDIR/needle-client-bench
    python -m eval.client                   # the tables below; writes eval/results/client.json
    python -m eval.client --only during     # one part: commands, first, breakdown, during, handover, startup

Generated notes (a title and a few tldr-page-like lines each, distinct words from the demo notes, in 60
folders) are indexed once. Then, per command, whole process (`python -m needle.shells.cli ...`), median of
`--repeat` runs of wall time and peak memory (the child's max RSS, `wait4`):

- `no owner`: `owner.autostart` off, nothing holds the index: the command opens it itself (today's path);
- `owner running`: a background owner (`needle owner start`) holds it: the command goes through it;
- `first call`: no owner, autostart on: the command starts one, waits for it and goes through it (each run
  stops the owner again first).

`during`: while `needle index` (run inside the owner) indexes `--during-notes` new notes, a search every
0.5 s from other processes: how many answered, p50 and max latency. `handover`: two `needle mcp` processes
driven by the MCP SDK's own stdio client; the owner's is closed (`--settle` seconds after the other's
first answer), then the other's `search` tool is called every 0.1 s: the time until it answers again and the calls that failed after that (median of `--repeat`).
`first`: the first call against the command in-process, interleaved run by run (`--before CHECKOUT` adds the
first call of another checkout's code). `through`: commands through a running owner, this code against
`--before`'s, interleaved. `breakdown`: when each step of a background owner's start-up ends.
`startup`: what a command sent to an owner spends before its request leaves (`STARTUP`), median of `--repeat`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from eval.demo_data import REPO, demo_vocabulary
from eval.result_files import RESULTS, pyplot, save_figure, write_json
from eval.servers import cli_env, needle_cli, stop_owner, timed_cli
from needle.evaluation.memory import Timed, run_timed

DEFAULT_DIR = Path(tempfile.gettempdir()) / "needle-client-bench"
COMMANDS = {
    "search": ["search", "rsync copy directory remote", "-n", "5"],
    "get": ["get", "notes/f07/tool-00427.md"],
    "query": ["query", "copy a directory to another machine and only send what changed", "-n", "5"],
    "vsearch": ["vsearch", "renew a certificate before it expires", "-n", "5"],
    "status": ["status"],
    "ls": ["ls", "notes"],
}


def generate(root: Path, count: int, start: int = 0, seed: int = 0) -> None:
    """`count` distinct notes like tldr pages, in 60 folders."""
    rng = random.Random(seed)
    words = demo_vocabulary()
    for i in range(start, start + count):
        folder = root / f"f{i % 60:02d}"
        folder.mkdir(parents=True, exist_ok=True)

        def pick(n: int) -> str:
            return " ".join(rng.choice(words) for _ in range(n))

        lines = [f"# tool-{i:05d}", "", f"> {pick(12).capitalize()}.", ""]
        for _ in range(3):
            lines += [
                f"- {pick(7).capitalize()}:",
                "",
                f"`tool-{i:05d} --{rng.choice(words)} {{{{{rng.choice(words)}}}}}`",
                "",
            ]
        (folder / f"tool-{i:05d}.md").write_text("\n".join(lines), encoding="utf-8")


def build(base: Path, count: int) -> None:
    shutil.rmtree(base, ignore_errors=True)
    generate(base / "notes", count)
    env = cli_env(base / "data", autostart=False)
    needle_cli(["collection", "add", str(base / "notes"), "--name", "notes"], env)
    started = time.perf_counter()
    needle_cli(["index"], env)
    print(f"indexed {count} notes in {time.perf_counter() - started:.0f} s")


def median_row(name: str, runs: list[Timed]) -> dict[str, Any]:
    return {
        "command": name,
        "runs": len(runs),
        "wall_s": round(statistics.median(r.seconds for r in runs), 3),
        "peak_mb": round(statistics.median(r.peak_mb for r in runs), 1),
        "exit_codes": sorted({r.returncode for r in runs}),
    }


MODES = ("no owner", "owner running", "first call")


def commands(data: Path, repeat: int, modes: tuple[str, ...] = MODES) -> dict[str, list[dict[str, Any]]]:
    rows: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
    stop_owner(data)
    local = cli_env(data, autostart=False)
    for name, args in COMMANDS.items() if "no owner" in modes else ():
        rows["no owner"].append(median_row(name, [timed_cli(args, local) for _ in range(repeat)]))
    needle_cli(["owner", "start"], local)
    through = cli_env(data, autostart=True)
    for name, args in COMMANDS.items() if "owner running" in modes else ():
        timed_cli(args, through)  # the owner's first run of a graph warms it
        rows["owner running"].append(median_row(name, [timed_cli(args, through) for _ in range(repeat)]))
    for name in ("search", "query") if "first call" in modes else ():
        runs = []
        for _ in range(repeat):
            stop_owner(data)
            runs.append(timed_cli(COMMANDS[name], through))
        rows["first call"].append(median_row(name, runs))
    return rows


def first_calls(data: Path, repeat: int, before: Path | None = None) -> list[dict[str, Any]]:
    """
    The first call that starts an owner against the same command in its own process, interleaved run by run
    (the machine's load moves between runs): per command and repeat, `no owner` (autostart off), `first call`
    (no owner, autostart on: it starts one), and with `before` the first call of that checkout's code.
    """
    columns = {"no owner": (REPO, False), "first call": (REPO, True)}
    if before is not None:
        columns["first call (before)"] = (before, True)
    runs: dict[tuple[str, str], list[Timed]] = {}
    for _ in range(repeat):
        for name in ("search", "query"):
            for column, (repo, autostart) in columns.items():
                stop_owner(data)
                found = timed_cli(COMMANDS[name], cli_env(data, autostart, repo), repo)
                runs.setdefault((name, column), []).append(found)
    stop_owner(data)
    return [
        {**median_row(name, found), "mode": column, "each_s": [round(r.seconds, 2) for r in found]}
        for (name, column), found in runs.items()
    ]


def through_owner(data: Path, repeat: int, before: Path) -> list[dict[str, Any]]:
    """
    `search`, `get` and `query` through a running owner, this code against `before`'s (its owner and its
    client), interleaved: per repeat and checkout, an owner is started (`needle owner start`), each command
    run once to warm it (an instance's first run loads what it loads lazily), then timed `TIMED_PER_START` times;
    medians over every timed run.
    """
    runs: dict[tuple[str, str], list[Timed]] = {}
    for _ in range(repeat):
        for column, repo in (("now", REPO), ("before", before)):
            stop_owner(data)
            env = cli_env(data, True, repo)
            subprocess.run(
                [sys.executable, "-m", "needle.shells.cli", "owner", "start"],
                cwd=repo,
                env=env,
                capture_output=True,
                check=True,
            )
            for name in ("search", "get", "query"):
                timed_cli(COMMANDS[name], env, repo)
                runs.setdefault((name, column), []).extend(
                    timed_cli(COMMANDS[name], env, repo) for _ in range(TIMED_PER_START)
                )
    stop_owner(data)
    return [{**median_row(name, found), "mode": column} for (name, column), found in runs.items()]


TIMED_PER_START = 9


# The steps a background owner takes before it answers its first command (`needle owner run --first=search`),
# timed in one process, each from the process's start: the client's part is the first call's wall time minus
# these. The full HTTP app (`create_app`) is built after the first answer now; it is timed last to show its cost.
BREAKDOWN = """
import time; T0 = time.perf_counter(); marks = []
def mark(name): marks.append((name, round(time.perf_counter() - T0, 3)))
import needle.shells.cli; mark("import needle.shells.cli")
from needle.owner.code_stamp import code_stamp; code_stamp(); mark("code stamp")
from needle.core.settings import load_settings; settings = load_settings(); mark("settings (pydantic)")
from needle import owner as records; records.refuse_second_owner(settings)
from needle.shells.http.endpoints import warm_first, get_needle; warm_first(["search"]); mark("import Haystack and the graph code")
needle = get_needle(); records.hold_index(needle); mark("open the index")
needle.pipeline("search"); mark("load the search graph (its models)")
import uvicorn, starlette.applications; from needle.owner.staged import StagedApp; mark("import uvicorn, starlette")
record = records.new_record("http://127.0.0.1:1", records.new_token(), "background")
StagedApp(record, build=lambda: None); mark("the owner routes (answers from here)")
from needle.shells.http.server import create_app; create_app(host="127.0.0.1", token=record.token, owner=record, own_record=False)
mark("the full HTTP app (hayhooks, FastAPI, MCP): built after answering")
import json; print(json.dumps(marks))
"""


def breakdown(data: Path, repeat: int) -> list[dict[str, Any]]:
    """Median, over `repeat` runs, of the seconds from process start to each `BREAKDOWN` step."""
    stop_owner(data)
    found: dict[str, list[float]] = {}
    for _ in range(repeat):
        done = subprocess.run(
            [sys.executable, "-c", BREAKDOWN],
            cwd=REPO,
            env=cli_env(data, autostart=False),
            capture_output=True,
            text=True,
            check=True,
        )
        for name, seconds in json.loads(done.stdout.strip().splitlines()[-1]):
            found.setdefault(name, []).append(seconds)
    return [
        {"step": name, "at_s": round(statistics.median(times), 3), "runs": len(times)} for name, times in found.items()
    ]


def during_index(base: Path, count: int) -> dict[str, Any]:
    """Searches from other processes while the owner indexes `count` new notes."""
    data = base / "data"
    extra = base / "more"
    shutil.rmtree(extra, ignore_errors=True)
    generate(extra, count, start=100_000, seed=1)
    env = cli_env(data, autostart=True)
    needle_cli(["collection", "remove", "more"], env, check=False)
    needle_cli(["collection", "add", str(extra), "--name", "more"], env)
    needle_cli(["owner", "start"], env)
    latencies: list[float] = []
    failures: list[int] = []
    indexer = threading.Thread(target=lambda: needle_cli(["index", "more"], env))
    started = time.perf_counter()
    indexer.start()
    while indexer.is_alive():
        found = timed_cli(COMMANDS["search"], env)
        if found.returncode == 0:
            latencies.append(found.seconds)
        else:
            failures.append(found.returncode)
        time.sleep(0.5)
    indexer.join()
    seconds = time.perf_counter() - started
    needle_cli(["collection", "remove", "more"], env, check=False)
    return {
        "notes": count,
        "index_seconds": round(seconds, 1),
        "searches": len(latencies) + len(failures),
        "answered": len(latencies),
        "failed": len(failures),
        "p50_s": round(statistics.median(latencies), 3) if latencies else None,
        "max_s": round(max(latencies), 3) if latencies else None,
    }


def handover(data: Path, repeat: int = 1, settle: float = 0.0) -> dict[str, Any]:
    """
    Two `needle mcp` over the SDK's stdio client: `settle` seconds after the second one's first answer, close
    the owner's; time until the other answers again. `repeat` times, the median and every run.
    """
    runs = [asyncio.run(_handover(data, settle)) for _ in range(repeat)]
    times = [r["seconds_to_answer_again"] for r in runs if r["seconds_to_answer_again"] is not None]
    return {
        "runs": len(runs),
        "settle_seconds": settle,
        "median_seconds_to_answer_again": round(statistics.median(times), 2) if times else None,
        "max_seconds_to_answer_again": max(times) if times else None,
        "failed_calls": sum(r["failed_calls_until_then"] + r["failed_calls_of_20_after"] for r in runs),
        "each": runs,
    }


async def _handover(data: Path, settle: float = 0.0) -> dict[str, Any]:
    from mcp import StdioServerParameters

    from needle.evaluation.agent_window import AgentWindow

    stop_owner(data)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "needle.shells.cli", "mcp"],
        cwd=str(REPO),
        env=cli_env(data, autostart=False),
    )
    arguments = {"query": "rsync copy directory remote", "limit": 3}
    first = AgentWindow(params)
    await first.search(arguments)  # the first one owns the index once it answers
    second = AgentWindow(params)
    before = await second.search(arguments)
    await asyncio.sleep(settle)  # how long both windows stay open (the second loads its standby meanwhile)
    await first.close()  # the owner's agent window closes
    closed = time.perf_counter()
    failed_before, failed_after, recovered, errors = 0, 0, None, []
    while time.perf_counter() - closed < 300:
        result = await second.search(arguments)
        if result.is_error:
            failed_before += 1
            errors.append(result.content[0].text)
            await asyncio.sleep(0.1)
            continue
        recovered = time.perf_counter() - closed
        for _ in range(20):
            after = await second.search(arguments)
            failed_after += after.is_error
            errors += [after.content[0].text] if after.is_error else []
        break
    await second.close()
    return {
        "answered_before": not before.is_error,
        "seconds_to_answer_again": None if recovered is None else round(recovered, 2),
        "failed_calls_until_then": failed_before,
        "failed_calls_of_20_after": failed_after,
        "errors": errors[:3],
    }


# What a command sent to an owner spends before its request leaves: the interpreter, then the client's imports,
# then parsing its arguments and finding the owner's settings (`python -c CODE`, whole process).
STARTUP = {
    "interpreter": "pass",
    "client imports": "import needle.shells.cli, needle.owner.thin_client",
    "imports, parser and settings": (
        "import needle.shells.cli, needle.owner.thin_client; from needle.owner.locate import locate; locate(); "
        "needle.shells.cli._parser(needle.shells.cli._command(['search', 'rsync'])).parse_args(['search', 'rsync'])"
    ),
}


def startup(repeat: int) -> list[dict[str, Any]]:
    """Median wall time and peak memory of each `STARTUP` step, `repeat` runs each (interleaved)."""
    env = cli_env(DEFAULT_DIR / "data", autostart=True)
    runs: dict[str, list[Timed]] = {name: [] for name in STARTUP}
    for _ in range(repeat):
        for name, code in STARTUP.items():
            runs[name].append(run_timed([sys.executable, "-c", code], env=env, cwd=REPO))
    # CPU time (user + system) moves less than wall time on a machine others load.
    return [
        {**median_row(name, found), "cpu_s": round(statistics.median(r.cpu_seconds for r in found), 3)}
        for name, found in runs.items()
    ]


def table(rows: dict[str, list[dict[str, Any]]]) -> str:
    lines = ["| command | no owner | owner running | first call (starts an owner) |", "| --- | --- | --- | --- |"]
    by = {mode: {r["command"]: r for r in found} for mode, found in rows.items()}
    for name in COMMANDS:
        cells = []
        for mode in ("no owner", "owner running", "first call"):
            row = by.get(mode, {}).get(name)
            cells.append(f"{row['wall_s']:.2f} s, {row['peak_mb']:.0f} MB" if row else "")
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(rows: dict[str, list[dict[str, Any]]], path: Path) -> None:
    try:
        plt = pyplot()
    except ImportError:
        print("(matplotlib is not installed: no chart)")
        return
    names = list(COMMANDS)
    modes = [m for m in ("no owner", "owner running", "first call") if rows.get(m)]
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(modes)
    for i, mode in enumerate(modes):
        found = {r["command"]: r["wall_s"] for r in rows[mode]}
        ax.bar([x + i * width for x in range(len(names))], [found.get(n, 0) for n in names], width, label=mode)
    ax.set_xticks([x + width for x in range(len(names))], names)
    ax.set_ylabel("seconds, whole process (median)")
    ax.set_yscale("log")
    ax.legend()
    ax.set_title("needle commands with and without an index owner")
    save_figure(fig, path, dpi=120)
    print(f"wrote {path}")


def plot_first(rows: list[dict[str, Any]], path: Path) -> None:
    """Bars: per command, its own process against the first call that starts an owner (now and before)."""
    try:
        plt = pyplot()
    except ImportError:
        print("(matplotlib is not installed: no chart)")
        return
    names = list(dict.fromkeys(r["command"] for r in rows))
    modes = list(dict.fromkeys(r["mode"] for r in rows))
    fig, ax = plt.subplots(figsize=(7, 3.6))
    width = 0.8 / len(modes)
    for i, mode in enumerate(modes):
        found = {r["command"]: r["wall_s"] for r in rows if r["mode"] == mode}
        ax.bar([x + i * width for x in range(len(names))], [found.get(n, 0) for n in names], width, label=mode)
    ax.set_xticks([x + width * (len(modes) - 1) / 2 for x in range(len(names))], names)
    ax.set_ylabel("seconds, whole process (median)")
    ax.legend()
    ax.set_title("the first call, which starts the owner, against the command in its own process")
    save_figure(fig, path, dpi=120)
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.client", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="notes and data folder")
    parser.add_argument("--build", action="store_true", help="generate and index the notes first")
    parser.add_argument("--notes", type=int, default=7200)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--during-notes", type=int, default=1500)
    parser.add_argument(
        "--only",
        choices=("commands", "first", "through", "breakdown", "during", "handover", "startup"),
        action="append",
    )
    parser.add_argument(
        "--before",
        type=Path,
        default=None,
        metavar="CHECKOUT",
        help="first: also time the first call of another checkout's code, interleaved",
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=0.0,
        help="handover: seconds both windows stay open before the owner's closes (default 0)",
    )
    parser.add_argument(
        "--get", default=COMMANDS["get"][1], metavar="REF", help="what `get` reads (another index's file)"
    )
    parser.add_argument("--mode", choices=MODES, action="append", help="commands: only these columns (default all)")
    args = parser.parse_args(argv)
    if args.build:
        build(args.dir, args.notes)
    data = args.dir / "data"
    COMMANDS["get"][1] = args.get
    parts = args.only or ["commands", "during", "handover"]
    out = RESULTS / "client.json"
    results: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    results["notes"] = args.notes
    try:
        if "commands" in parts:
            found = commands(data, args.repeat, tuple(args.mode or MODES))
            results["commands"] = {**results.get("commands", {}), **found}
            print(table(results["commands"]))
            plot(results["commands"], RESULTS / "client.png")
        if "first" in parts:
            results["first_calls"] = first_calls(data, args.repeat, args.before)
            for row in results["first_calls"]:
                print(
                    f"{row['command']} {row['mode']}: {row['wall_s']:.2f} s (median of {row['runs']}: {row['each_s']}), "
                    f"{row['peak_mb']:.0f} MB, exit {row['exit_codes']}"
                )
            plot_first(results["first_calls"], RESULTS / "client-first.png")
        if "through" in parts:
            if args.before is None:
                parser.error("--only through needs --before CHECKOUT")
            results["through_owner_against_before"] = through_owner(data, args.repeat, args.before)
            for row in results["through_owner_against_before"]:
                print(
                    f"{row['command']} {row['mode']}: {row['wall_s']:.3f} s (median of {row['runs']}), {row['peak_mb']:.0f} MB"
                )
        if "breakdown" in parts:
            results["owner_start_breakdown"] = breakdown(data, args.repeat)
            for row in results["owner_start_breakdown"]:
                print(f"{row['at_s']:6.2f} s  {row['step']}")
        if "during" in parts:
            results["during_index"] = during_index(args.dir, args.during_notes)
            print(json.dumps(results["during_index"]))
        if "handover" in parts:
            found = handover(data, args.repeat, args.settle)
            results.setdefault("handover_by_settle", {})[f"{args.settle:g}"] = found
            print(json.dumps(found))
        if "startup" in parts:
            results["startup"] = startup(args.repeat)
            for row in results["startup"]:
                print(
                    f"{row['command']}: {row['wall_s'] * 1000:.0f} ms wall, {row['cpu_s'] * 1000:.0f} ms CPU, "
                    f"{row['peak_mb']:.0f} MB (median of {row['runs']})"
                )
    finally:
        stop_owner(data)
    write_json(out, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
