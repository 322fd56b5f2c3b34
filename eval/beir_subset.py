"""A smaller BEIR dataset: every document a split's judgements name, plus others drawn at random, up to a size.

    python -m eval.beir_subset --dataset ../shared/datasets/scifact --size 800 --out /tmp/scifact-800

For comparisons that only need the same corpus on both sides (served vs in-process embeddings) on a
machine where embedding the whole corpus twice takes too long. Scores are not comparable to the full
corpus's (fewer distractors).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval.beir_subset", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--size", type=int, default=800, help="documents in the subset (judged ones always in)")
    parser.add_argument("--split", default="test")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    qrels = (args.dataset / "qrels" / f"{args.split}.tsv").read_text().splitlines()[1:]
    judged = {line.split("\t")[1] for line in qrels if line.strip()}
    corpus = [json.loads(line) for line in (args.dataset / "corpus.jsonl").read_text().splitlines() if line.strip()]
    others = [doc["_id"] for doc in corpus if doc["_id"] not in judged]
    random.Random(args.seed).shuffle(others)
    keep = judged | set(others[: max(0, args.size - len(judged))])
    (args.out / "qrels").mkdir(parents=True, exist_ok=True)
    with (args.out / "corpus.jsonl").open("w") as out:
        for doc in corpus:
            if doc["_id"] in keep:
                out.write(json.dumps(doc) + "\n")
    shutil.copyfile(args.dataset / "queries.jsonl", args.out / "queries.jsonl")
    shutil.copyfile(args.dataset / "qrels" / f"{args.split}.tsv", args.out / "qrels" / f"{args.split}.tsv")
    print(f"{len(keep)} documents ({len(judged)} judged) in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
