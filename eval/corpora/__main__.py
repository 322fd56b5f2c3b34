"""Build an evaluation corpus from this machine's files: `python -m eval.corpora build NAME [DEST]`.

    python -m eval.corpora build manpages          # into the cache the golden files read (built_corpus)
    python -m eval.corpora build readmes /tmp/corpora/readmes

NAME is `manpages` or `readmes` (`eval.corpora.built_corpora` says what each holds). Without DEST the corpus
goes where `needle eval golden --file eval/golden/NAME.yml` finds it: `~/.cache/needle/corpora/NAME`, or
`$NEEDLE_CORPORA_CACHE/NAME`. A second build renders only what is new.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from eval.corpora.built_corpora import BUILDERS, build
from needle.evaluation.golden import built_corpus


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval.corpora", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    building = sub.add_parser("build", help="build a corpus from this machine's files")
    building.add_argument("name", choices=sorted(BUILDERS))
    building.add_argument("dest", type=Path, nargs="?", help="where it goes (default: the golden files' cache)")
    args = parser.parse_args(argv)
    build(args.name, args.dest or built_corpus(args.name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
