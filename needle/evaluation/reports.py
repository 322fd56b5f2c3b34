"""Where evaluation reports go: `<pipeline>-<data>-<timestamp>` files in a reports folder (default `eval/reports/`)."""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path
from typing import Any

DEFAULT_REPORTS = Path("eval/reports")


def label(*parts: str) -> str:
    """A file-name-safe label from pipeline names or paths (`pipelines/query.yml` → `query`)."""
    stems = [Path(p).stem if p.endswith((".yml", ".yaml")) else p for p in parts if p]
    return re.sub(r"[^A-Za-z0-9_+-]+", "_", "-".join(stems)).strip("_") or "report"


def report_stem(reports_dir: Path, name: str) -> Path:
    """`reports_dir/<name>-<UTC timestamp>`, with a counter appended if that name is taken."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    stem = reports_dir / f"{name}-{stamp}"
    counter = 2
    while Path(f"{stem}.json").exists():
        stem = reports_dir / f"{name}-{stamp}-{counter}"
        counter += 1
    return stem


def write_report(report: dict[str, Any], markdown: str, reports_dir: Path, name: str) -> Path:
    """
    Write a report as JSON plus its markdown summary, side by side.

    :param report: The JSON-ready report.
    :param markdown: The summary.
    :param reports_dir: The reports folder (created when missing).
    :param name: The file name before the timestamp.
    :returns: The stem both files share (`.json` and `.md` suffixes).
    """
    reports_dir.mkdir(parents=True, exist_ok=True)
    stem = report_stem(reports_dir, name)
    Path(f"{stem}.json").write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    Path(f"{stem}.md").write_text(markdown.rstrip() + "\n", encoding="utf-8")
    return stem


def without_nan(value: Any) -> Any:
    """
    A copy of a report with every NaN as `None` (JSON has no NaN; an undefined score is written as null).

    :param value: A JSON-ready structure of dicts, lists and scalars.
    :returns: The same structure, NaN floats replaced.
    """
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {key: without_nan(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [without_nan(item) for item in value]
    return value
