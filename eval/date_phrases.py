"""Dates in words read out of questions: how many of the golden phrasings the self-query stage reads as their range.

    python -m eval.date_phrases [--file eval/golden/dates.yml]

Runs every `question` of the file through `SelfQueryExtractor` (the rules, no index) against the file's `today`
and compares the date range it read (a filter, or a range it only ranks first) with the phrase's `start` and `end`;
a phrase with no date must read none. Prints the counts per language and every phrasing read otherwise.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from haystack_integrations.components.query.needle.self_query_extractor import SelfQueryExtractor


def read_range(read: dict[str, Any]) -> tuple[str | None, str | None]:
    """The range a question was read as, `[after, before)` as ISO dates: its date filter, else its date boost."""
    filters = read.get("filters", {})
    span = filters if "after" in filters or "before" in filters else filters.get("boost", {})
    return (span.get("after") or "")[:10] or None, (span.get("before") or "")[:10] or None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval.date_phrases", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--file", type=Path, default=Path("eval/golden/dates.yml"))
    args = parser.parse_args(argv)
    data = yaml.safe_load(args.file.read_text())
    extractor = SelfQueryExtractor()
    total: Counter[str] = Counter()
    right: Counter[str] = Counter()
    wrong = []
    for phrase in data["phrases"]:
        kind = f"{phrase['lang']} {'date' if phrase['start'] else 'no date'}"
        want = (str(phrase["start"]), str(phrase["end"])) if phrase["start"] else (None, None)
        got = read_range(extractor.run(query=phrase["question"], now=str(data["today"]))["self_query"])
        total[kind] += 1
        if got == want:
            right[kind] += 1
        else:
            wrong.append(f"- {phrase['question']!r} ({phrase['text']}): read {got}, want {want}")
    print(f"{args.file} (today {data['today']})")
    print("| phrasings | read as their range |")
    print("|---|---|")
    for kind in sorted(total):
        print(f"| {kind} | {right[kind]} of {total[kind]} |")
    print(f"| all | {sum(right.values())} of {sum(total.values())} |")
    print("\n".join(wrong))
    return 0 if not wrong else 1


if __name__ == "__main__":
    raise SystemExit(main())
