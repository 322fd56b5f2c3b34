"""Questions whose words look like filters but are not, and questions that do name one: how the self-query reads them.

    python -m eval.self_query_traps [--file eval/golden/self-query-traps.yml] [--mode query]

Runs every question of the file through a search graph over an index of its corpus (the bundled notes) and
compares what the self-query stage read with what the file states: a trap (`filters: {}`) is fallen into when
any filter is read (recency included) or a `keep` word is missing from the searched text; a named question
passes when exactly its stated filters are read and its `keep` words stay. Dates the rules only rank first
(a date that may be the date of something in the note, not of the note) are not filters; they are counted
apart. Prints the counts, every question that failed, and the hit@3 of the expected notes.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import yaml

from needle.core.requests import SearchRequest
from needle.evaluation import golden as golden_eval

DEMO = Path("eval/golden/demo.yml")  # the golden set over the same corpus, for its index


def reading(answer: Any) -> tuple[dict[str, Any], str, list[str]]:
    """What the question was read as, in the file's vocabulary; the searched text; the dates only ranked first."""
    read = answer.self_query
    if read is None:
        return {}, "", []
    found: dict[str, Any] = {}
    filters = dict(read.filters)
    boost = filters.pop("boost", {})
    if filters.get("tags"):
        found["tags"] = sorted(filters["tags"])
    if filters.get("paths"):
        found["path"] = filters["paths"][0] if len(filters["paths"]) == 1 else filters["paths"]
    if filters.get("collections"):
        found["collections"] = filters["collections"]
    if filters.get("where"):
        found["where"] = sorted(f"{k}={v}" for k, v in filters["where"].items())
    if filters.get("after"):
        found["after"] = filters["after"][:10]
    if filters.get("before"):
        found["before"] = filters["before"][:10]
    if read.must_contain:
        found["must_contain"] = read.must_contain
    if read.must_not_contain:
        found["must_not_contain"] = read.must_not_contain
    if read.recent_from_question:
        found["recent"] = True
    return found, read.query, list(boost.get("dates", []))


def stated(filters: dict[str, Any]) -> dict[str, Any]:
    """The file's `filters` in the same shape as `reading`'s."""
    out = dict(filters)
    if "tags" in out:
        out["tags"] = sorted(out["tags"])
    if "where" in out:
        out["where"] = sorted(out["where"])
    for key in ("after", "before"):
        if key in out:
            out[key] = str(out[key])
    return out


def kept(searched: str, original: str, words: list[str]) -> list[str]:
    """The `keep` words missing from the searched text (the question itself when nothing was read)."""
    text = (searched or original).lower()
    return [w for w in words if not re.search(rf"(?<!\w){re.escape(w.lower())}(?!\w)", text)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval.self_query_traps",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--file", type=Path, default=Path("eval/golden/self-query-traps.yml"))
    parser.add_argument("--mode", default="query")
    parser.add_argument("--cache", type=Path, default=None)
    args = parser.parse_args(argv)
    data = yaml.safe_load(args.file.read_text())
    needle = golden_eval.prepare_index(golden_eval.load_golden(DEMO), cache=args.cache)
    traps = fallen = named = matched = boosted = found3 = answerable = 0
    failures = []
    for q in data["queries"]:
        answer = needle.search(SearchRequest(query=q["query"], now=str(data["today"])), args.mode)
        found, searched, boosts = reading(answer)
        missing = kept(searched, q["query"], q.get("keep", []))
        paths = golden_eval.group_by_document(answer.results)[:3]
        if q.get("expected"):
            answerable += 1
            found3 += any(p in q["expected"] for p in paths)
        want = stated(q.get("filters") or {})
        boosted += bool(boosts)
        if not want:
            traps += 1
            if found or missing:
                fallen += 1
                failures.append(f"- trap {q['id']} {q['query']!r}: read {found}, missing {missing}")
        else:
            named += 1
            if found == want and not missing:
                matched += 1
            else:
                failures.append(f"- named {q['id']} {q['query']!r}: read {found}, want {want}, missing {missing}")
    needle.close()
    print(f"{args.file} ({args.mode}, today {data['today']})")
    print(f"traps fallen into: {fallen} of {traps}")
    print(f"named questions read as stated: {matched} of {named}")
    print(f"questions with a date only ranked first (not a filter): {boosted}")
    print(f"expected note in the top 3: {found3} of {answerable}")
    print("\n".join(failures))
    return 0 if fallen == 0 and matched == named else 1


if __name__ == "__main__":
    raise SystemExit(main())
