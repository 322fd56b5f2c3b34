"""Where the benchmarks' numbers go, and how they are written: JSON results, markdown tables, charts.

`RESULTS` (`eval/results/`, committed) holds what the docs cite: each file says the command that printed it
(`command_line`). `REPORTS` (`eval/reports/`, not committed) holds the reports of single runs. Charts are drawn
with matplotlib (the `eval` extra) on its file backend (`pyplot`).
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eval.demo_data import REPO

RESULTS = REPO / "eval" / "results"
REPORTS = REPO / "eval" / "reports"


def command_line(module: str, argv: Sequence[str] | None = None) -> str:
    """
    The command that runs a benchmark with these arguments, as the docs cite it.

    :param module: The entry point's module name (`__name__` of `eval.ingest` or `__main__`'s spec name).
    :param argv: Its arguments; the process's own when `None`.
    :returns: `python -m eval.ingest --floor`, say.
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    return " ".join(["python", "-m", module, *(shlex.quote(a) for a in arguments)])


def write_json(path: Path, data: Any) -> Path:
    """Write `data` as indented JSON (folders created; values JSON lacks, such as paths, as text)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    return path


def read_json(path: Path, default: Any = None) -> Any:
    """A JSON file's content, or `default` when the file is missing or unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return default


def markdown_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> str:
    """A markdown table of `rows` (their keys as the header, or `columns`), each value as text."""
    if not rows:
        return ""
    header = list(columns or rows[0])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(row.get(c, "")) for c in header) + " |" for row in rows]
    return "\n".join(lines)


def pyplot() -> Any:
    """
    matplotlib's `pyplot` on the file backend (Agg), for charts written to PNG.

    :raises ImportError: When matplotlib is not installed (`pip install -e '.[eval]'`).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(figure: Any, path: Path, dpi: int = 110, tight: bool = True) -> Path:
    """Write a chart to `path` (folders created; its layout tightened unless `tight` is off) and close it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if tight:
        figure.tight_layout()
    figure.savefig(path, dpi=dpi)
    pyplot().close(figure)
    return path
