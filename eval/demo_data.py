"""The data the benchmarks share: the bundled demo notes, the golden files, and what is made from the notes.

`DEMO_NOTES` is the folder `make demo` indexes; `DEMO_GOLDEN`, `OFFTOPIC` and `TRAIN` are golden files under
`GOLDEN` (`eval/golden/`); `QUERIES` are a few questions about the notes that a user would type. The functions
read the notes as texts (`demo_texts`, for documents of other formats), their words (`demo_vocabulary`, for
generated notes that look like notes) and their paragraphs (`demo_paragraphs`).
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEMO_NOTES = REPO / "needle" / "demo" / "notes"
GOLDEN = REPO / "eval" / "golden"
DEMO_GOLDEN = GOLDEN / "demo.yml"
OFFTOPIC = GOLDEN / "offtopic.yml"
# Questions written from the notes for fitting the label, never from the golden ones; filters and dates beside.
TRAIN = (GOLDEN / "train.yml", GOLDEN / "filters.yml")
SCIFACT = REPO.parent / "shared" / "datasets" / "scifact"

QUERIES = [
    "why does my pod keep getting killed",
    "certbot renew",
    "sqlite write-ahead log concurrent readers",
    "git rebase onto another branch",
    "backing up my laptop to an encrypted repository",
    "postgres logical replication slot",
    "ssh jump host",
    "sourdough starter feeding",
]


def demo_files() -> list[Path]:
    """The demo notes' text files, in path order."""
    return [p for p in sorted(DEMO_NOTES.rglob("*")) if p.is_file() and p.suffix in (".md", ".txt")]


def demo_texts() -> list[tuple[str, str]]:
    """The demo notes as `(title, body)`: the title is the first heading or the file name, the frontmatter dropped."""
    texts = []
    for path in demo_files():
        body = re.sub(r"(?s)\A---\n.*?\n---\n", "", path.read_text(encoding="utf-8"))
        title = next((line.lstrip("# ").strip() for line in body.splitlines() if line.startswith("# ")), path.stem)
        lines = [line for line in body.splitlines() if not line.startswith("# ")]
        # Headings below the title become plain lines, so that one text stays one page or section.
        rows = [line.lstrip("#").strip() if line.startswith("#") else line for line in lines]
        texts.append((title, "\n".join(rows).strip()))
    return texts


def demo_vocabulary() -> list[str]:
    """The lower-cased words of 4 to 15 letters the demo notes use, sorted."""
    words: set[str] = set()
    for note in DEMO_NOTES.rglob("*.md"):
        words.update(w.lower() for w in re.findall(r"[A-Za-z][a-z]{3,14}", note.read_text(encoding="utf-8")))
    return sorted(words)


def demo_paragraphs(min_chars: int = 80) -> list[str]:
    """The demo notes' paragraphs longer than `min_chars`, in path order."""
    return [
        part.strip()
        for note in sorted(DEMO_NOTES.rglob("*.md"))
        for part in note.read_text(encoding="utf-8").split("\n\n")
        if len(part.strip()) > min_chars
    ]
