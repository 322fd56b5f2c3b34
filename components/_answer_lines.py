"""Where a chunk answers a query: its lines as whole units, each scored by the query's words.

A unit is what a reader needs whole: a paragraph, a list item (with the line that leads the list in, "Agreed:"),
a table row (with the table's header), a code block (with the line that introduces it), a heading. Each unit is
scored by the query terms it holds, every term weighted by how few of the chunk's units hold it (a word on every
line says nothing about which line answers), a term's stem counting half and a unit's lead-in or header a third.
`SnippetExtractor` cuts a snippet around the best unit; `AnswerChunkSelector` compares the best units of a file's
chunks.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from haystack_integrations.components.needle._scores import FILLER, WORD

_HEADING = re.compile(r"\s{0,3}#{1,6}(\s.*)?")
_FENCE = re.compile(r"\s*(```|~~~)")
_RULE = re.compile(r"\s*([-*_=]\s*){3,}")
_ITEM = re.compile(r"(\s*)(?:[-*+]|\d{1,9}[.)])(?:\s|$)")
_TABLE_DELIMITER = re.compile(r"\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*")
# What joins the parts of a hyphenated or elided word (`kfz-versicherung`, `qu'on`).
_PARTS = re.compile(r"['’-]")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
# Words that say nothing about where an answer is: the query-term filler, and more of the languages notes are
# most often written in.
_FILLER = FILLER | frozenset(
    [
        "want",
        "need",
        "make",
        "my",
        "me",
        "der",
        "die",
        "das",
        "den",
        "dem",
        "des",
        "ein",
        "eine",
        "einen",
        "einem",
        "einer",
        "und",
        "oder",
        "aber",
        "mit",
        "von",
        "vom",
        "zum",
        "zur",
        "für",
        "fuer",
        "auf",
        "aus",
        "bei",
        "ins",
        "im",
        "in",
        "ist",
        "sind",
        "war",
        "waren",
        "wird",
        "werden",
        "hat",
        "haben",
        "habe",
        "hatte",
        "ich",
        "wir",
        "sie",
        "er",
        "es",
        "du",
        "ihr",
        "mein",
        "meine",
        "wie",
        "was",
        "wann",
        "wo",
        "wer",
        "welche",
        "welcher",
        "welches",
        "warum",
        "viel",
        "viele",
        "noch",
        "schon",
        "auch",
        "nur",
        "nicht",
        "kein",
        "keine",
        "les",
        "des",
        "une",
        "est",
        "sont",
        "pour",
        "avec",
        "dans",
        "par",
        "sur",
        "aux",
        "que",
        "qui",
        "quoi",
        "quel",
        "quelle",
        "quels",
        "quelles",
        "comment",
        "combien",
        "quand",
        "pourquoi",
        "mon",
        "mes",
        "notre",
        "nos",
        "votre",
        "vos",
        "leur",
        "leurs",
        "avons",
        "ont",
        "était",
        "sont",
        "fait",
        "faire",
        "pas",
        "plus",
    ]
)


# How much a long unit's score is divided down for its length (BM25's `b`): a 20-line code block holds more of
# the query's words than the one line that answers.
LENGTH_NORM = 0.3


@dataclass(frozen=True)
class Unit:
    """Lines of a chunk that belong together."""

    first: int  # index of its first line in the chunk
    last: int  # index of its last line, inclusive
    kind: str  # heading, code, table, item, prose
    context: tuple[int, ...] = ()  # lines that make it readable: a table's header, a list's lead-in, a block's intro


@functools.lru_cache(maxsize=256)
def _terms(query: str) -> tuple[str, ...]:
    return tuple(terms(query))


def terms(query: str) -> list[str]:
    """
    The query's words worth finding in a line: lower-cased, three letters or more, filler words left out, with the
    parts of a hyphenated or elided word as words of their own (`kfz-versicherung`, `qu'on`); a run of Chinese,
    Japanese or Korean characters becomes its overlapping pairs of characters (those scripts have no spaces between
    words).
    """
    found: dict[str, None] = {}

    def keep(word: str) -> None:
        if len(word) >= 3 and word not in _FILLER:
            found.setdefault(word, None)

    for word in WORD.findall(query.lower()):
        runs = _CJK.findall(word)
        if runs:
            for run in runs:
                pairs = [run[i : i + 2] for i in range(len(run) - 1)] or [run]
                found.update(dict.fromkeys(pairs))
            for rest in _CJK.sub(" ", word).split():
                keep(rest)
            continue
        keep(word.strip("'-"))
        parts = [p for p in _PARTS.split(word) if p]
        if len(parts) > 1:
            for part in parts:
                keep(part)
    return list(found)


def stems(words: list[str]) -> list[str]:
    """The first five letters of the longer terms, so that `renewing` finds `renewal` and `backups` `backup`."""
    return sorted({t[:5] for t in words if len(t) >= 6 and not _CJK.search(t)})


def is_content(line: str) -> bool:
    """Whether a line says something: not blank, not only a heading mark, a code fence or a rule."""
    stripped = line.strip()
    if not stripped:
        return False
    return not (_FENCE.match(line) or _RULE.fullmatch(line) or re.fullmatch(r"\s{0,3}#{1,6}\s*", line))


def units(lines: list[str]) -> list[Unit]:
    """The units of a chunk's lines, in order (blank lines and rules belong to none)."""
    found: list[Unit] = []
    kinds = _kinds(lines)
    index = 0
    while index < len(lines):
        kind = kinds[index]
        if kind in ("blank", "rule"):
            index += 1
        elif kind == "fence":
            end = _fence_end(lines, index)
            found.append(Unit(index, end, "code", _intro(lines, kinds, index)))
            index = end + 1
        elif kind == "heading":
            found.append(Unit(index, index, "heading"))
            index += 1
        elif kind == "table":
            end = index
            while end + 1 < len(lines) and kinds[end + 1] == "table":
                end += 1
            header = (index, index + 1) if index + 1 <= end and _TABLE_DELIMITER.fullmatch(lines[index + 1]) else ()
            rows = range(index + len(header), end + 1)
            found.extend(Unit(row, row, "table", header) for row in rows)
            if not rows:
                found.append(Unit(index, end, "table"))
            index = end + 1
        elif kind == "item":
            index = _list_units(lines, kinds, index, found)
        else:
            end = index
            while end + 1 < len(lines) and kinds[end + 1] == "prose":
                end += 1
            found.append(Unit(index, end, "prose"))
            index = end + 1
    return found


def _kinds(lines: list[str]) -> list[str]:
    kinds = []
    fenced = False
    for line in lines:
        if _FENCE.match(line):
            kinds.append("fence")
            fenced = not fenced
        elif fenced:
            kinds.append("code")
        elif not line.strip():
            kinds.append("blank")
        elif _HEADING.fullmatch(line):
            kinds.append("heading")
        elif _RULE.fullmatch(line):
            kinds.append("rule")
        elif line.lstrip().startswith("|") or (line.count("|") >= 2 and "|" in line.strip()[1:-1]):
            kinds.append("table")
        elif _ITEM.match(line):
            kinds.append("item")
        else:
            kinds.append("prose")
    return kinds


def _fence_end(lines: list[str], start: int) -> int:
    marker = _FENCE.match(lines[start]).group(1)  # type: ignore[union-attr]
    for index in range(start + 1, len(lines)):
        if lines[index].strip().startswith(marker):
            return index
    return len(lines) - 1


def _intro(lines: list[str], kinds: list[str], start: int) -> tuple[int, ...]:
    """The line introducing a block: the nearest line above it that says something, when it is prose or an item."""
    index = start - 1
    while index >= 0 and kinds[index] == "blank":
        index -= 1
    if index >= 0 and start - index <= 2 and kinds[index] in ("prose", "item"):
        return (index,)
    return ()


def _list_units(lines: list[str], kinds: list[str], start: int, found: list[Unit]) -> int:
    """Each item of the list starting at `start` (with its continuation lines), led in by the line above the list."""
    lead = _intro(lines, kinds, start)
    parents: list[tuple[int, int]] = []  # (indent, line) of the items above, outermost first
    index = start
    while index < len(lines):
        if kinds[index] != "item":
            break
        indent = len(_ITEM.match(lines[index]).group(1).expandtabs())  # type: ignore[union-attr]
        end = index
        while end + 1 < len(lines) and (
            (kinds[end + 1] == "prose" and lines[end + 1][:1] in (" ", "\t")) or kinds[end + 1] == "code"
        ):
            end += 1
        while parents and parents[-1][0] >= indent:
            parents.pop()
        found.append(Unit(index, end, "item", lead + tuple(line for _, line in parents)))
        parents.append((indent, index))
        index = end + 1
        if index < len(lines) and kinds[index] == "blank" and index + 1 < len(lines) and kinds[index + 1] == "item":
            index += 1  # a loose list: one blank line between items
    return index


def holds(text: str, word: str, stem: bool = False) -> bool:
    """
    Whether a lower-cased text holds a term as a word or with up to three more letters (`slot` in `slots`,
    `rebuild` in `rebuilding`; not `den` in `jeden`, nor `käse` in `käsespätzle`), a stem at the start of any word,
    a Chinese, Japanese or Korean pair of characters anywhere.
    """
    if _CJK.match(word):
        return word in text
    return word in _forms(text)[1 if stem else 0]


@functools.lru_cache(maxsize=8192)
def _forms(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """A text's words with up to three of their last letters cut (each at least three letters), and their stems."""
    cut: set[str] = set()
    starts: set[str] = set()
    for token in WORD.findall(text):
        for word in {token, *_PARTS.split(token)} if _PARTS.search(token) else (token,):
            if len(word) < 3:
                continue
            starts.add(word[:5])
            cut.update(word[: len(word) - k] for k in range(4) if len(word) - k >= 3)
    return frozenset(cut), frozenset(starts)


# What units hold, kept through one search's term weights and unit scores (`Held`): by text, terms and stem flag.
Held = dict[tuple[str, frozenset[str], bool], frozenset[str]]


def _held(text: str, words: Iterable[str], stem: bool = False, memo: Held | None = None) -> frozenset[str]:
    """
    The terms (or stems) of `words` a lower-cased text holds (`holds`), found by one set intersection; read from
    `memo` when it has them (and kept there).
    """
    wanted = words if isinstance(words, frozenset) else frozenset(words)
    if memo is None:
        return _held_of(text, wanted, stem)
    key = (text, wanted, stem)
    found = memo.get(key)
    if found is None:
        found = memo[key] = _held_of(text, wanted, stem)
    return found


def _held_of(text: str, wanted: frozenset[str], stem: bool) -> frozenset[str]:
    found = wanted & _forms(text)[1 if stem else 0]
    cjk = _cjk_of(wanted)
    if cjk:
        found |= {w for w in cjk if w in text}
    return found


@functools.lru_cache(maxsize=8192)
def _size(text: str) -> int:
    """A unit's length in words (at least 1), for its length norm."""
    return max(len(WORD.findall(text)), 1)


@functools.lru_cache(maxsize=256)
def _cjk_of(words: frozenset[str]) -> frozenset[str]:
    return frozenset(w for w in words if _CJK.match(w))


def weights(unit_texts: list[str], words: list[str], stem: bool = False, memo: Held | None = None) -> dict[str, float]:
    """
    Each term's weight: higher the fewer units hold it (`log(1 + (n + 1) / (df + 0.5))`); 0 for a term none holds.
    What each unit holds is kept in `memo` when given (for `scores` over the same units).
    """
    count = len(unit_texts)
    df: Counter[str] = Counter()
    wanted = frozenset(words)
    for text in unit_texts:
        df.update(_held(text, wanted, stem, memo))
    return {word: math.log(1 + (count + 1) / (df[word] + 0.5)) if df[word] else 0.0 for word in words}


@dataclass(frozen=True)
class Weights:
    """How much each query term and stem counts, read over a set of units."""

    words: dict[str, float]
    stems: dict[str, float]


@functools.lru_cache(maxsize=2048)
def parsed(text: str) -> tuple[tuple[str, ...], tuple[Unit, ...], tuple[str, ...]]:
    """
    A chunk's lines, units and unit texts (`units`, `unit_texts`), kept for the chunks read again: the chunks of
    the files a search keeps finding, and the chosen chunk that the snippet reads after the answer chunk stage.
    """
    lines = text.split("\n")
    found = units(lines)
    return tuple(lines), tuple(found), tuple(unit_texts(lines, found))


def unit_texts(lines: list[str], found: list[Unit]) -> list[str]:
    """Each unit's lines, joined and lower-cased."""
    return ["\n".join(lines[u.first : u.last + 1]).lower() for u in found]


def query_weights(texts: list[str], query: str, title: str = "", memo: Held | None = None) -> Weights:
    """
    The weight of each query term and stem over these unit texts (`weights`), a third for a term of the note's
    title: once the note is found, the words that name it say little about where in it the answer is. What each
    unit holds is kept in `memo` when given, for `scores` of the same units.
    """
    words = list(_terms(query))
    named = _terms(title)
    word_weights = weights(texts, words, memo=memo)
    stem_weights = weights(texts, stems(words), stem=True, memo=memo)
    for word in word_weights:
        if any(holds(name, word) for name in named):
            word_weights[word] /= 3
    for stem in stem_weights:
        if any(name.startswith(stem) for name in named):
            stem_weights[stem] /= 3
    return Weights(word_weights, stem_weights)


def scores(
    lines: list[str],
    found: list[Unit],
    query: str,
    title: str = "",
    weighted: Weights | None = None,
    texts: list[str] | None = None,
    memo: Held | None = None,
) -> list[float]:
    """
    Each unit's score for the query (0 when it holds none of its words).

    :param lines: The chunk's lines.
    :param found: Its units.
    :param query: The query.
    :param title: The note's title: its own heading (a first-level one, or one that starts with the title) counts a
        fifth (it names the note, it does not answer), any other heading 0.7 of what it holds.
    :param weighted: Term weights read over more units (a whole file's); over these units when `None`.
    :param texts: The units' texts (`unit_texts`) when the caller has them.
    :param memo: What units hold, kept by `query_weights` over the same units in the same search.
    """
    words = list(_terms(query))
    if not words or not found:
        return [0.0] * len(found)
    texts = texts if texts is not None else unit_texts(lines, found)
    memo = {} if memo is None else memo  # what the units hold, read once for their weights and their scores
    weighted = weighted or query_weights(texts, query, title, memo)
    named = " ".join(title.lower().split())
    pairs = [f"{a} {b}" for a, b in itertools.pairwise(words)]
    sizes = [_size(text) for text in texts]
    wanted, wanted_stems = frozenset(words), frozenset(weighted.stems)
    word_weights, stem_weights = weighted.words, weighted.stems
    average = sum(sizes) / len(sizes)
    out = []
    for unit, text, size in zip(found, texts, sizes, strict=True):
        context = "\n".join(lines[i] for i in unit.context).lower() if unit.context else ""
        in_text = _held(text, wanted, False, memo)
        score = sum(word_weights.get(w, 0.0) for w in in_text)
        if context:
            in_context = _held_of(context, wanted, False) - in_text
            score += sum(word_weights.get(w, 0.0) for w in in_context) / 3
        if wanted_stems:
            covered = {stem for stem in stem_weights if any(w.startswith(stem) for w in in_text)} if in_text else set()
            stems_in_text = _held(text, wanted_stems, True, memo) - covered
            score += sum(stem_weights[st] for st in stems_in_text) / 2
            if context:
                stems_in_context = _held_of(context, wanted_stems, True) - covered - stems_in_text
                score += sum(stem_weights[st] for st in stems_in_context) / 6
        score += 0.5 * sum(1 for pair in pairs if pair in text)
        if unit.kind == "heading":
            heading = " ".join(text.lstrip("# ").split())
            own = text.startswith("# ") or (named and (heading == named or heading.startswith(named)))
            score *= 0.2 if own else 0.7
        out.append(score / (1 - LENGTH_NORM + LENGTH_NORM * size / average))
    return out


def line_scores(lines: list[str], query: str, title: str = "") -> list[float]:
    """Each line's score for the query, as if every line were a unit of its own."""
    return scores(lines, [Unit(i, i, "prose") for i in range(len(lines))], query, title)


__all__ = [
    "Held",
    "Unit",
    "Weights",
    "holds",
    "is_content",
    "line_scores",
    "parsed",
    "query_weights",
    "scores",
    "stems",
    "terms",
    "unit_texts",
    "units",
    "weights",
]
