"""What a line or a query says, read the same way by the stages that need it.

`is_content` (a line that says something) is shared by `SnippetExtractor`, which centres a snippet on one, and
`ConfidenceScorer`, which reads the top result's sentences; `exact_terms` (what must appear verbatim) by
`ConfidenceScorer`'s signals and `QueryDecomposer`, which never splits one.
"""

import re

_HEADING = re.compile(r"\s{0,3}#{1,6}(\s.*)?")
_FENCE = re.compile(r"\s*(```|~~~).*")
_RULE = re.compile(r"\s*([-*_=]\s*){3,}")
_MARKS = frozenset("#`~-*_=")


def is_content(line: str) -> bool:
    """Whether a line says something: not blank, not only a heading, a code fence or a rule."""
    stripped = line.lstrip()
    if not stripped:
        return False
    if stripped[0] not in _MARKS:  # each pattern starts (after spaces) with one of these
        return True
    return not (_HEADING.fullmatch(line) or _FENCE.fullmatch(line) or _RULE.fullmatch(line))


# Exact terms of a query: quoted phrases, and identifiers (words with a digit, an underscore, an inner dot,
# slash or colon, camelCase, a leading dash, or in capitals).
_QUOTED = re.compile(r"\"([^\"]{2,80})\"|“([^”]{2,80})”|`([^`]{2,80})`|(?<![\w])'([^']{2,80})'(?![\w])")
_TOKEN = re.compile(r"(?<![\w-])-{0,2}[\w][\w.:/+#-]*[\w+#]|(?<![\w-])[\w]")
_IDENTIFIER = re.compile(r"\d.*[\w]|[\w].*\d|_|\w[.:/]\w|[a-z][A-Z]|^[A-Z][a-z]+[A-Z]|^-{1,2}\w|^[A-Z]{3,}$")


def exact_terms(query: str) -> list[str]:
    """
    The parts of a query that must appear verbatim in an answer: quoted phrases and identifiers.

    :param query: The query.
    :returns: Distinct phrases and identifiers, in order (`pg_dump`, `ERR-401`, `--onto`, `TaskGroup`, `WAL`).
    """
    found: dict[str, None] = {}
    rest = query
    for match in _QUOTED.finditer(query):
        phrase = next(g for g in match.groups() if g is not None).strip()
        if phrase:
            found.setdefault(phrase, None)
        rest = rest.replace(match.group(0), " ")
    for token in _TOKEN.findall(rest):
        token = token.rstrip(".:/")
        if len(token) >= 2 and _IDENTIFIER.search(token):
            found.setdefault(token, None)
    return list(found)


def contains_term(text: str, term: str) -> bool:
    """Whether `term` occurs in `text` as a whole word or phrase, ignoring case."""
    return re.search(r"(?<![\w])" + re.escape(term) + r"(?![\w])", text, re.IGNORECASE) is not None


__all__ = ["contains_term", "exact_terms", "is_content"]
