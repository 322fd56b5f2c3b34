"""The languages of BM25 keyword search: how a text in each one is cut into terms, and telling them apart.

fastembed's `Qdrant/bm25` lowercases, splits at every character that is not a letter or a digit, drops
English stopwords and stems with the English Snowball stemmer. Other alphabetic languages need their own
stemmer (German `Häuser` and `Haus` meet only under the German one), which the same model takes as its
`language`. Chinese, Japanese and Korean do not separate words with spaces: split that way, a whole
sentence is one "word" that no query matches, which is why keyword search finds nothing in CJK notes.
For them each run of CJK characters becomes its overlapping character pairs (`机器学习` → `机器 器学 学习`),
as Lucene's CJK analyser does: no dictionary is needed, and a query matches the pairs it shares with a text.

`detect` tells a text's language for collections set to `auto`: CJK by script, an alphabetic language by
which language's most common words it uses most; anything unclear is the fallback (English).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import Any

# fastembed's Bm25 stemmers (Snowball, via py-rust-stemmers).
SNOWBALL = (
    "arabic", "danish", "dutch", "english", "finnish", "french", "german", "greek", "hungarian", "italian",
    "norwegian", "portuguese", "romanian", "russian", "spanish", "swedish", "tamil", "turkish",
)
CJK = ("chinese", "japanese", "korean")
LANGUAGES = tuple(sorted(SNOWBALL + CJK))
AUTO = "auto"
DEFAULT = "english"

# A language is told by its most frequent words; a text must use a few of them, and more than English's.
_COMMON_WORDS = {
    "english": "the and of to in is that it for was on are with as this be at by not or from have but",
    "german": "der die das und ist nicht ein eine zu mit auf für von den dem des sich auch als wie im es ich sie",
    "french": "le la les et est un une des du que qui dans pour pas sur au avec ce il elle sont ne",
    "spanish": "el la los las y es un una de que en por con para no se del al como lo su",
    "italian": "il la le e è un una di che in per non con del della si gli sono da al",
    "dutch": "de het een en is van dat in op te niet met voor zijn er aan ook als bij",
    "portuguese": "o a os as e é um uma de que em para não com do da se no na por",
    "swedish": "och är att det som en ett på för med inte av till den har jag de om",
    "danish": "og er at det som en et på for med ikke af til den har jeg de om",
    "norwegian": "og er at det som en et på for med ikke av til den har jeg de om",
}
_WORD_SETS = {language: set(words.split()) for language, words in _COMMON_WORDS.items()}
_MIN_HITS = 3
_CJK_SHARE = 0.3
_WORD = re.compile(r"\w+", re.UNICODE)


def check_language(name: str) -> str:
    """
    A language name as Needle spells it (lowercase).

    :raises ValueError: When it is neither `auto` nor one of `LANGUAGES`.
    """
    language = str(name).strip().lower()
    if language != AUTO and language not in LANGUAGES:
        raise ValueError(f"language must be auto or one of {', '.join(LANGUAGES)}, got {name!r}")
    return language


def is_cjk(char: str) -> bool:
    """Whether a character is Han, kana or Hangul."""
    code = ord(char)
    return (
        0x3040 <= code <= 0x30FF  # hiragana, katakana
        or 0x3400 <= code <= 0x4DBF  # CJK extension A
        or 0x4E00 <= code <= 0x9FFF  # CJK unified ideographs
        or 0xAC00 <= code <= 0xD7AF  # Hangul syllables
        or 0xF900 <= code <= 0xFAFF  # compatibility ideographs
        or 0x20000 <= code <= 0x2FA1F  # extensions B and later
    )


def cjk_pairs(text: str) -> str:
    """
    The text with each run of CJK characters replaced by its overlapping character pairs, space-separated.

    A run of one character stays as it is; other text is left alone (so `Python 入门` → `Python 入门`,
    `机器学习` → `机器 器学 学习`).
    """
    out: list[str] = []
    run: list[str] = []

    def close() -> None:
        if len(run) == 1:
            out.append(f" {run[0]} ")
        elif run:
            out.append(" " + " ".join(run[i] + run[i + 1] for i in range(len(run) - 1)) + " ")
        run.clear()

    for char in text:
        if is_cjk(char):
            run.append(char)
        else:
            close()
            out.append(char)
    close()
    return "".join(out)


def bm25_kwargs(language: str) -> dict[str, Any]:
    """fastembed `Bm25` arguments of a language: its Snowball stemmer, or none for CJK (pairs are terms)."""
    if language in CJK:
        return {"disable_stemmer": True}
    return {"language": language}


def prepare(text: str, language: str) -> str:
    """A text as the language's BM25 analysis takes it (CJK: character pairs; others: unchanged)."""
    return cjk_pairs(text) if language in CJK else text


def detect(text: str, fallback: str = DEFAULT) -> str:
    """
    A text's language: CJK by script, an alphabetic language by its most common words, else `fallback`.

    :param text: The text (its first few thousand characters are enough).
    :param fallback: What an unclear text is taken to be.
    """
    sample = text[:4000]
    letters = [c for c in sample if c.isalpha()]
    if letters:
        cjk = [c for c in letters if is_cjk(c)]
        if len(cjk) / len(letters) >= _CJK_SHARE:
            if any(0x3040 <= ord(c) <= 0x30FF for c in cjk):
                return "japanese"
            if any(0xAC00 <= ord(c) <= 0xD7AF for c in cjk):
                return "korean"
            return "chinese"
    words = Counter(unicodedata.normalize("NFC", w.lower()) for w in _WORD.findall(sample))
    hits = {language: sum(words[w] for w in common) for language, common in _WORD_SETS.items()}
    best = max(hits, key=lambda language: hits[language])
    if hits[best] >= _MIN_HITS and hits[best] > hits["english"]:
        return best
    if hits["english"] >= _MIN_HITS:
        return "english"
    return fallback


__all__ = ["AUTO", "CJK", "DEFAULT", "LANGUAGES", "SNOWBALL", "bm25_kwargs", "check_language", "cjk_pairs", "detect", "prepare"]
