"""A day of use, replayed: the index owner's resident memory over time.

    python -m eval.day_of_use --dir /tmp/day --queries 1000 --edits 40 --mcp-calls 60 \\
        --out eval/results/day-of-use.json --plot eval/results/day-of-use.png

On a fresh folder (emptied first): the demo notes copied into `DIR/notes` (and `--extra-notes` generated
ones), then, each step through Needle's own commands as a shell or an agent sends them:

1. `needle collection add` and `needle index` (which starts the background owner);
2. `needle watch` (which takes the index over from the background owner) while `--edits` notes are changed,
   added and deleted, one every `--edit-every` seconds, then stopped with SIGTERM;
3. `--queries` `search`, `vsearch` and `query` commands in turn (the first starts a background owner again);
4. an MCP session: `needle mcp` spawned by the MCP SDK's stdio client (as `eval/mcp_join.py` does), which
   joins the owner, and `--mcp-calls` tool calls (`query`, `search`, `get`, `status` in turn);
5. a last `needle index` after the session, and a pause.

A thread reads the owner's VmRSS and RssAnon (whichever process `DATA_DIR/owner.json` names) every
`--every` seconds. Prints a table per step (resident memory at its end and at most during it), writes the
samples to `--out` and draws them with `--plot` (matplotlib, the `eval` extra). The owner is stopped at the
end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from eval.mcp_join import needle_mcp
from eval.owner_memory import QUERIES, resident
from eval.result_files import command_line, markdown_table, pyplot, save_figure, write_json

REPO = Path(__file__).resolve().parent.parent
DEMO_NOTES = REPO / "needle" / "demo" / "notes"
KINDS = ("search", "vsearch", "query")
MCP_CALLS = (
    ("query", {"query": "renew the TLS certificate with certbot", "limit": 5}),
    ("search", {"query": "postgres vacuum", "limit": 5}),
    ("get", {"ref": "notes/runbooks/k8s-oomkilled-debugging.md", "max_lines": 20}),
    ("status", {}),
)


def owner_of(data: Path) -> tuple[int | None, str]:
    """The owner's pid and command (`background`, `watch`, `mcp`...), from its record."""
    try:
        record = json.loads((data / "owner.json").read_text())
    except (OSError, ValueError):
        return None, ""
    return record.get("pid"), record.get("command") or "serve"


class Sampler:
    """Reads the owner's resident memory every `every` seconds on a thread, labelled with the step under way."""

    def __init__(self, data: Path, every: float) -> None:
        self.data, self.every = data, every
        self.started = time.monotonic()
        self.step = "start"
        self.samples: list[dict[str, Any]] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def sample(self) -> None:
        pid, command = owner_of(self.data)
        if pid is None:
            return
        rss, anon = resident(pid)
        if rss:
            at = round(time.monotonic() - self.started, 2)
            self.samples.append({"t": at, "step": self.step, "pid": pid, "owner": command, "rss": rss, "anon": anon})

    def _run(self) -> None:
        while not self._done.wait(self.every):
            self.sample()

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def edit(notes: Path, number: int) -> None:
    """One edit of the stream: change a note, add one, or delete one added earlier."""
    added = notes / "day" / f"note-{number:04d}.md"
    if number % 3 == 0:
        added.parent.mkdir(parents=True, exist_ok=True)
        added.write_text(
            f"# Day note {number}\n\nA note written during the day about topic {number}: rsync, certbot.\n"
        )
    elif number % 3 == 1:
        target = sorted(notes.rglob("*.md"))[number % 50]
        with target.open("a", encoding="utf-8") as handle:
            handle.write(f"\n\nEdited during the day ({number}): see the runbook for the backup window.\n")
    else:
        earlier = notes / "day" / f"note-{number - 2:04d}.md"
        earlier.unlink(missing_ok=True)


async def mcp_session(data: Path, calls: int) -> float:
    """Spawn `needle mcp` with the MCP SDK's stdio client and make `calls` tool calls; returns the seconds."""
    started = time.monotonic()
    async with needle_mcp(data) as session:
        for number in range(calls):
            name, arguments = MCP_CALLS[number % len(MCP_CALLS)]
            result = await session.call_tool(name, arguments)
            if result.is_error:
                raise RuntimeError(f"the MCP tool {name} failed: {result.content}")
    return time.monotonic() - started


def generate_notes(folder: Path, count: int) -> None:
    """`count` generated notes of a few sections each, beside the demo notes (a larger index)."""
    topics = [q.split()[0] for q in QUERIES]
    for number in range(count):
        path = folder / "generated" / f"g{number // 500:02d}" / f"note-{number:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        sections = "\n\n".join(
            f"## Part {part}\n\n{' '.join(QUERIES[(number + part) % len(QUERIES)] for _ in range(12))} "
            f"about {topics[(number * 7 + part) % len(topics)]} number {number}."
            for part in range(4)
        )
        path.write_text(f"# Generated note {number}\n\n{sections}\n", encoding="utf-8")


def summary(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per step: its owner(s), resident memory at its end and at most during it."""
    rows: list[dict[str, Any]] = []
    for step in dict.fromkeys(s["step"] for s in samples):
        found = [s for s in samples if s["step"] == step]
        last = found[-1]
        rows.append(
            {
                "step": step,
                "owner": ", ".join(dict.fromkeys(s["owner"] for s in found)),
                "seconds": round(found[-1]["t"] - found[0]["t"], 1),
                "RSS at its end MB (anon)": f"{last['rss']} ({last['anon']})",
                "most RSS MB (anon)": f"{max(s['rss'] for s in found)} ({max(s['anon'] for s in found)})",
            }
        )
    return rows


def plot(samples: list[dict[str, Any]], path: Path, title: str) -> None:
    """Resident memory over time, one line per owner process, the steps shaded and named."""
    try:
        plt = pyplot()
    except ImportError:
        print("(matplotlib is not installed: no chart)")
        return
    import textwrap

    fig, ax = plt.subplots(figsize=(9, 4.2))
    for number, pid in enumerate(dict.fromkeys(s["pid"] for s in samples)):
        found = [s for s in samples if s["pid"] == pid]
        ts = [s["t"] for s in found]
        first = number == 0
        ax.plot(ts, [s["rss"] for s in found], color="tab:blue", label="owner VmRSS" if first else None)
        ax.plot(ts, [s["anon"] for s in found], color="tab:orange", label="of it anonymous" if first else None)
        ax.text(ts[0], found[0]["rss"] + 15, f"needle {found[0]['owner']}", fontsize=7, color="tab:blue")
    ax.axhline(350, color="grey", linestyle=":", label="350 MB")
    for number, step in enumerate(dict.fromkeys(s["step"] for s in samples)):
        found = [s["t"] for s in samples if s["step"] == step]
        if number % 2:
            ax.axvspan(min(found), max(found), color="0.93")
        ax.text(min(found), 0.02 + 0.06 * (number % 3), step, transform=ax.get_xaxis_transform(), fontsize=7)
    ax.set_xlabel("seconds")
    ax.set_ylabel("MB")
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper right", fontsize=8)
    ax.set_title("\n".join(textwrap.wrap(title, 110)), fontsize=8)
    save_figure(fig, path, dpi=120)
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=f"python -m {__name__}", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dir", type=Path, help="a scratch folder (emptied first)")
    parser.add_argument("--replot", type=Path, help="draw `--plot` from a saved `--out` file instead of running")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--edits", type=int, default=40)
    parser.add_argument("--edit-every", type=float, default=1.5, help="seconds between two edits under watch")
    parser.add_argument("--mcp-calls", type=int, default=60)
    parser.add_argument("--extra-notes", type=int, default=0, help="generated notes beside the demo notes")
    parser.add_argument("--every", type=float, default=1.0, help="seconds between two samples")
    parser.add_argument("--out", type=Path, help="write the samples and the table here (JSON)")
    parser.add_argument("--plot", type=Path, help="draw resident memory over time here (PNG)")
    args = parser.parse_args(argv)
    if args.replot:
        saved = json.loads(args.replot.read_text())
        print(markdown_table(saved["table"]))
        if args.plot:
            plot(saved["samples"], args.plot, saved["command_line"])
        return 0
    if args.dir is None:
        parser.error("--dir is required (or --replot)")
    shutil.rmtree(args.dir, ignore_errors=True)
    notes, data = args.dir / "notes", args.dir / "data"
    shutil.copytree(DEMO_NOTES, notes)
    generate_notes(notes, args.extra_notes)
    env = {**os.environ, "NEEDLE_DATA_DIR": str(data), "NEEDLE_OWNER__AUTOSTART": "true"}
    cli = [sys.executable, "-m", "needle.shells.cli"]
    sampler = Sampler(data, args.every)

    def step(name: str) -> None:
        sampler.sample()
        sampler.step = name
        print(f"{time.monotonic() - sampler.started:7.1f} s  {name}", flush=True)

    def needle(*command: str) -> None:
        subprocess.run([*cli, *command], env=env, check=True, capture_output=True)

    sampler.start()
    try:
        needle("collection", "add", str(notes), "--name", "notes")
        step("index")
        needle("index")
        step("watch + edits")
        watch = subprocess.Popen([*cli, "watch"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while owner_of(data)[1] != "watch" and time.monotonic() < deadline:
            time.sleep(0.2)
        for number in range(args.edits):
            edit(notes, number)
            time.sleep(args.edit_every)
        time.sleep(3)  # the last edit's index run
        watch.send_signal(signal.SIGTERM)
        watch.wait(60)
        step(f"{args.queries} queries")
        for number in range(args.queries):
            needle(KINDS[number % 3], QUERIES[number % len(QUERIES)], "-n", "5")
        step(f"MCP session ({args.mcp_calls} calls)")
        took = asyncio.run(mcp_session(data, args.mcp_calls))
        print(f"         the MCP session took {took:.1f} s", flush=True)
        step("index after the session")
        needle("index")
        step("idle")
        time.sleep(10)
        sampler.sample()
    finally:
        sampler.stop()
        subprocess.run([*cli, "owner", "stop"], env=env, capture_output=True)
    rows = summary(sampler.samples)
    print(markdown_table(rows))
    if args.out:
        write_json(
            args.out, {"command_line": command_line("eval.day_of_use", argv), "table": rows, "samples": sampler.samples}
        )
        print(f"wrote {args.out}")
    if args.plot:
        plot(sampler.samples, args.plot, command_line("eval.day_of_use", argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
