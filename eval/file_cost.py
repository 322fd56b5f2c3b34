"""What one hostile note costs an index run: its chunks, the run's time and the peak memory of its processes.

Each note is generated (the shapes that once cost minutes: thousands of one-line sections), indexed alone by
the real CLI in a fresh data folder, and measured with `needle.evaluation.memory.run_measured`:

    python -m eval.file_cost [--sections 20000] [--only sections]

Prints one line per note: its size, chunks written, seconds and peak resident MB of the largest process.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from needle.evaluation.memory import run_measured


def notes(sections: int) -> dict[str, str]:
    """The hostile notes, by name."""
    one_line = "# Many sections\n\n" + "".join(f"## Heading {i}\nText {i} here.\n" for i in range(sections))
    headings_only = "# Headings\n\n" + "".join(f"### H{i}\n" for i in range(sections))
    one_line_paragraphs = "# Paragraphs\n\n" + "".join(f"Line {i}.\n\n" for i in range(sections))
    return {"sections": one_line, "headings": headings_only, "paragraphs": one_line_paragraphs}


def measure(name: str, text: str, model_dir: str | None) -> dict[str, object]:
    """Index the note alone in a fresh data folder; what it cost."""
    with tempfile.TemporaryDirectory() as root:
        folder = Path(root) / "notes"
        folder.mkdir()
        (folder / f"{name}.md").write_text(text, encoding="utf-8")
        env = {
            **os.environ,
            "NEEDLE_DATA_DIR": str(Path(root) / "data"),
            "NEEDLE_OWNER__AUTOSTART": "false",
        }
        if model_dir:
            env["NEEDLE_MODEL_DIR"] = model_dir
        cli = [sys.executable, "-m", "needle.shells.cli"]
        added = run_measured([*cli, "collection", "add", str(folder), "--name", "n"], env=env)
        assert added.returncode == 0, added.stderr
        done = run_measured([*cli, "index", "--json"], env=env, timeout=1800)
        report = json.loads(done.stdout) if done.returncode == 0 else {}
        return {
            "note": name,
            "kb": round(len(text.encode()) / 1024),
            "chunks": report.get("chunks", report.get("report", {}).get("chunks")),
            "seconds": round(done.seconds, 1),
            "peak_mb": done.peak_process_mb,
            "warnings": [w["reason"] for w in report.get("warnings", [])],
            "exit": done.returncode,
        }


def main(argv: list[str] | None = None) -> int:
    """Measure each note and print one line per note."""
    parser = argparse.ArgumentParser(prog="python -m eval.file_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--sections", type=int, default=20_000, help="sections (or lines) per note")
    parser.add_argument("--only", action="append", help="measure only this note (repeatable)")
    parser.add_argument("--model-dir", default=os.environ.get("NEEDLE_MODEL_DIR"))
    args = parser.parse_args(argv)
    for name, text in notes(args.sections).items():
        if args.only and name not in args.only:
            continue
        print(json.dumps(measure(name, text, args.model_dir)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
