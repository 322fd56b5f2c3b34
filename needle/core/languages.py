"""The languages of BM25 keyword search: how a text in each one is cut into terms, and telling them apart.

fastembed's `Qdrant/bm25` lowercases, splits at every character that is not a letter or a digit, drops
English stopwords and stems with the English Snowball stemmer. Other alphabetic languages need their own
stemmer (German `Häuser` and `Haus` meet only under the German one), which the same model takes as its
`language`. Chinese, Japanese and Korean do not separate words with spaces: split that way, a whole
sentence is one "word" that no query matches. For them each run of CJK characters becomes its overlapping
character pairs (`机器学习` → `机器 器学 学习`), as Lucene's CJK analyser does: no dictionary is needed, and a
query matches the pairs it shares with a text. German glues nouns into compounds (`Kundendatenbank`): a
long German word also brings its leading and trailing parts (`kunden`, `datenbank`, ...), so a query for
one part finds the compound (`compound_parts`). Languages whose writers often leave accents out (French,
Spanish, Portuguese, Italian, Dutch, Romanian) have their stems folded to plain letters (`crêpes` and
`crepes` meet), while English keeps fastembed's own analysis so that an English index is unchanged.

`identify` tells a text's language with py3langid (langid.py's model, shipped in its wheel, restricted to
the languages above), Chinese, Japanese and Korean by script; `detect` keeps only what it tells clearly.
A text of Han characters alone can be Chinese or Japanese (kanji), so `script_languages` names both.

Before any analysis a text is read as people read it (`normalise`): marks that do not show (zero-width
spaces and joiners, soft hyphens, direction marks) are dropped, compatibility forms unified (NFKC: full-width
letters, ligatures) and case folded by Unicode (German `ß` is `ss`), Turkish dotted and dotless i folded to
`i` (`İstanbul` and `istanbul` meet, `ISTAKOZ` and `ıstakoz` too).
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

# fastembed's Bm25 stemmers (Snowball, via py-rust-stemmers).
SNOWBALL = (
    "arabic",
    "danish",
    "dutch",
    "english",
    "finnish",
    "french",
    "german",
    "greek",
    "hungarian",
    "italian",
    "norwegian",
    "portuguese",
    "romanian",
    "russian",
    "spanish",
    "swedish",
    "tamil",
    "turkish",
)
CJK = ("chinese", "japanese", "korean")
LANGUAGES = tuple(sorted(SNOWBALL + CJK))
AUTO = "auto"
DEFAULT = "english"
# Stems folded to plain letters (writers of these languages often type without accents). German's
# stemmer already folds umlauts; Nordic, Turkish, Hungarian, Finnish letters with marks are other letters.
FOLDED = ("dutch", "french", "italian", "portuguese", "romanian", "spanish")
# How German compounds are reached from their parts: `affixes` (leading and trailing parts), `ngrams`
# (character 4-grams of long words) or `none` (`python -m eval.multilingual` measures them).
COMPOUNDS = ("affixes", "ngrams", "none")

ISO_CODES = {
    "arabic": "ar",
    "chinese": "zh",
    "danish": "da",
    "dutch": "nl",
    "english": "en",
    "finnish": "fi",
    "french": "fr",
    "german": "de",
    "greek": "el",
    "hungarian": "hu",
    "italian": "it",
    "japanese": "ja",
    "korean": "ko",
    "norwegian": "no",
    "portuguese": "pt",
    "romanian": "ro",
    "russian": "ru",
    "spanish": "es",
    "swedish": "sv",
    "tamil": "ta",
    "turkish": "tr",
}
_BY_CODE = {code: language for language, code in ISO_CODES.items()}

# A file's language counts when the detector gives it this probability (`python -m eval.language_detection`).
CLEAR = 0.7
# A chunk leaves its file's language only for a long stretch told this surely.
CHUNK_CLEAR = 0.99
CHUNK_MIN_LETTERS = 200
_SAMPLE = 250
_SAMPLES = 3
_READ = 20000
_CJK_SHARE = 0.3
_COMPOUND_MIN = 10
_PART_MIN = 4
_NGRAM = 4
_CODE_BLOCK = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)
_NOISE = re.compile(r"https?://\S+|\S+@\S+|[#*_>|\[\]()<>{}=~-]+")
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)
_KANA = "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f"
_HANGUL = "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af"
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
_CJK_CHAR = re.compile(f"[{_KANA}{_HANGUL}{_HAN}]")
_KANA_CHAR = re.compile(f"[{_KANA}]")
_HANGUL_CHAR = re.compile(f"[{_HANGUL}]")

# Characters that do not show and that no one types on purpose in a search: soft hyphen, Arabic letter mark,
# Mongolian vowel separator, zero-width space, non-joiner and joiner, direction marks and embeddings, word
# joiner and invisible operators, direction isolates, byte-order mark, interlinear annotation, tags.
_INVISIBLE = re.compile(
    "[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)
# Turkish and Azerbaijani i: dotted capital and dotless small both fold to `i` (casefold alone would make `İ`
# an `i` with a combining dot, and keep `ı` apart from `I`).
_TURKISH_I = str.maketrans({"İ": "i", "ı": "i"})

_lock = threading.Lock()
_identifier: Any = None


def check_language(name: str) -> str:
    """
    A language name as Needle spells it (lowercase).

    :raises ValueError: When it is neither `auto` nor one of `LANGUAGES`.
    """
    language = str(name).strip().lower()
    if language != AUTO and language not in LANGUAGES:
        raise ValueError(f"language must be auto or one of {', '.join(LANGUAGES)}, got {name!r}")
    return language


def check_compounds(mode: str) -> str:
    """
    A way of reaching German compounds from their parts.

    :raises ValueError: When it is not one of `COMPOUNDS`.
    """
    if mode not in COMPOUNDS:
        raise ValueError(f"compounds must be one of {', '.join(COMPOUNDS)}, got {mode!r}")
    return mode


def is_cjk(char: str) -> bool:
    """Whether a character is Han (with its extensions), kana (half-width too) or Hangul (with jamo)."""
    return _CJK_CHAR.match(char) is not None


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


def normalise(text: str) -> str:
    """
    A text as keyword matching reads it: invisible marks dropped, NFKC, Turkish i folded, case folded.

    `zero\u200bwidth` → `zerowidth`, `İstanbul` → `istanbul`, `ISTAKOZ` and `ıstakoz` → `istakoz`, `Straße` →
    `strasse`, `ＮＡＳ` → `nas`. An ASCII text is only lower-cased (what the BM25 model does anyway), so
    English text is analysed exactly as before.
    """
    if text.isascii():
        return text.lower()
    text = unicodedata.normalize("NFKC", _INVISIBLE.sub("", text).translate(_TURKISH_I))
    return text.casefold()


def fold(text: str) -> str:
    """A text without accents and with ligatures spelled out (`crêpe` → `crepe`, `œuf` → `oeuf`)."""
    text = text.replace("œ", "oe").replace("Œ", "OE").replace("æ", "ae").replace("Æ", "AE").replace("ß", "ss")
    decomposed = unicodedata.normalize("NFKD", text)
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))


class FoldingStemmer:
    """
    A Snowball stemmer whose stems are folded to plain letters, for fastembed's `Bm25(stemmer=...)`.

    Folding after stemming keeps the stemmer's accented suffix rules (`crêpes` → `crêp` → `crep`) and the
    stopword list (checked before stemming) as they are.
    """

    def __init__(self, language: str) -> None:
        from py_rust_stemmers import SnowballStemmer

        self.language = language
        self._stemmer = SnowballStemmer(language)

    def stem_word(self, word: str) -> str:
        """The word's stem, folded."""
        return fold(self._stemmer.stem_word(word))

    def __repr__(self) -> str:  # the shared backend's cache key
        return f"FoldingStemmer({self.language!r})"

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (FoldingStemmer, (self.language,))


_stemmers: dict[str, FoldingStemmer] = {}


def bm25_kwargs(language: str) -> dict[str, Any]:
    """fastembed `Bm25` arguments of a language: its Snowball stemmer (folded where it folds), or none for CJK."""
    if language in CJK:
        return {"disable_stemmer": True}
    if language in FOLDED:
        stemmer = _stemmers.setdefault(language, FoldingStemmer(language))
        return {"language": language, "stemmer": stemmer}
    return {"language": language}


def compound_parts(word: str, mode: str = "affixes") -> list[str]:
    """
    The parts a long German word is also indexed under, so that a query for one part finds the compound.

    `affixes`: every leading and trailing part of at least four letters (`kundendatenbank` → `kund`, ...,
    `kunden`, ..., `datenbank`, ..., `bank`): one of them is each word the compound was glued from, with
    no dictionary. `ngrams`: the word's character 4-grams. Words shorter than ten letters have none.
    """
    word = word.lower()
    if mode == "none" or len(word) < _COMPOUND_MIN:
        return []
    if mode == "ngrams":
        return [word[i : i + _NGRAM] for i in range(len(word) - _NGRAM + 1)]
    return [word[:i] for i in range(_PART_MIN, len(word) - _PART_MIN + 1)] + [
        word[i:] for i in range(_PART_MIN, len(word) - _PART_MIN + 1)
    ]


def prepare(text: str, language: str, compounds: str = "affixes") -> str:
    """A text as the language's BM25 analysis takes it (CJK: character pairs; German: with compound parts)."""
    if language in CJK:
        return cjk_pairs(text)
    if language == "german" and compounds != "none":
        parts = [part for word in _WORD.findall(text) for part in compound_parts(word, compounds)]
        return f"{text}\n{' '.join(parts)}" if parts else text
    return text


def _load() -> Any:
    """py3langid's identifier, restricted to Needle's languages (loaded once per process, about a second)."""
    global _identifier
    with _lock:
        if _identifier is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
            identifier.set_languages(sorted(ISO_CODES.values()))
            # The wheel keeps its table in float16, which numpy multiplies without BLAS (a fifth slower).
            identifier.nb_ptc = identifier.nb_ptc.astype("float32")
            _identifier = identifier
    return _identifier


def forget_identifier() -> None:
    """
    Let go of py3langid's identifier (about 90 MB: its model's tables as Python lists), which an index run
    loads to tell its files' languages; the next identification loads it again (about a second).
    """
    global _identifier
    with _lock:
        _identifier = None


def _clean(text: str) -> str:
    """A text without code, links and markdown marks, which tell nothing of its language."""
    return " ".join(_NOISE.sub(" ", _CODE_BLOCK.sub(" ", text[:_READ])).split())


def _samples(text: str) -> list[str]:
    """Up to `_SAMPLES` stretches of `_SAMPLE` characters from the start, the middle and the end of a text."""
    if len(text) <= _SAMPLE * _SAMPLES:
        return [text]
    starts = [round(i * (len(text) - _SAMPLE) / (_SAMPLES - 1)) for i in range(_SAMPLES)]
    return [text[start : start + _SAMPLE] for start in starts]


def script_language(text: str) -> str | None:
    """Chinese, Japanese or Korean when a text is written mostly in their scripts (kana: Japanese, Hangul: Korean)."""
    letters = len(_LETTER.findall(text))
    if not letters or len(_CJK_CHAR.findall(text)) / letters < _CJK_SHARE:
        return None
    return "japanese" if _KANA_CHAR.search(text) else "korean" if _HANGUL_CHAR.search(text) else "chinese"


def script_languages(text: str) -> tuple[str, ...]:
    """
    The CJK languages a text's script allows: kana Japanese, Hangul Korean, Han characters alone any of the
    three (Japanese writes `予算会議` and `月曜日` in kanji, Korean some words in hanja); none for other text.
    """
    language = script_language(text)
    if language is None:
        return ()
    return CJK if language == "chinese" else (language,)


def _distribution(sample: str) -> dict[str, float]:
    """Language → probability of one stretch of text (CJK by script)."""
    if not _LETTER.search(sample):
        return {}
    cjk = script_language(sample)
    if cjk is not None:
        return {cjk: 1.0}
    return {_BY_CODE[code]: p for code, p in _load().rank(sample) if code in _BY_CODE}


def identify(text: str, among: Iterable[str] | None = None) -> tuple[str | None, float]:
    """
    A text's most likely language and its probability.

    Chinese, Japanese and Korean are told by script (kana: Japanese, Hangul: Korean, Han alone: Chinese;
    they are analysed alike); the others by py3langid's naive Bayes over byte n-grams. A long text is read
    at its start, middle and end (`_SAMPLES` stretches of `_SAMPLE` characters, weighed by their letters),
    which bounds the cost per file: a text in two languages gets a probability well below 1.

    :param text: The text.
    :param among: Only these languages are candidates (probabilities renormalised over them).
    :returns: The language (`None` for a text without letters, or none of `among`) and its probability.
    """
    allowed = set(among) if among is not None else None
    combined: dict[str, float] = {}
    weight = 0
    for sample in _samples(_clean(text)):
        found = _distribution(sample)
        if allowed is not None:
            found = {language: p for language, p in found.items() if language in allowed}
        total = sum(found.values())
        letters = len(_LETTER.findall(sample))
        if total <= 0 or not letters:
            continue
        weight += letters
        for language, p in found.items():
            combined[language] = combined.get(language, 0.0) + letters * p / total
    if not combined:
        return None, 0.0
    language = max(combined, key=combined.__getitem__)
    return language, combined[language] / weight


def detect(text: str, fallback: str = DEFAULT, clear: float = CLEAR) -> str:
    """
    A text's language when told clearly, else `fallback`.

    :param text: The text.
    :param fallback: What an unclear text is taken to be.
    :param clear: The probability a language needs.
    """
    language, p = identify(text)
    return language if language is not None and p >= clear else fallback


def chunk_language(text: str, inherited: str) -> str:
    """
    A chunk's language: its file's (`inherited`), unless the chunk is a long stretch clearly in another.

    A short chunk (a list of Latin names, a quoted title, a table of numbers) is easily taken for another
    language; only `CHUNK_MIN_LETTERS` letters told at `CHUNK_CLEAR` leave the file's language. Callers
    ask only for the chunks of files not told at `CHUNK_CLEAR` themselves (a file in one language is read
    once).
    """
    if len(_LETTER.findall(_clean(text))) < CHUNK_MIN_LETTERS:
        return inherited
    language, p = identify(text)
    if language is None or p < CHUNK_CLEAR or {language, inherited} <= set(CJK):
        return inherited
    return language


def main_languages(counts: Mapping[str, int], min_share: float) -> list[str]:
    """
    The languages holding at least `min_share` of the chunks counted (the largest always), sorted.

    :param counts: Language → chunks in it.
    :param min_share: The share of all chunks a language needs.
    """
    total = sum(counts.values())
    if total <= 0:
        return []
    largest = max(counts, key=lambda language: (counts[language], language == DEFAULT))
    return sorted({largest} | {language for language, n in counts.items() if n / total >= min_share})


__all__ = [
    "AUTO",
    "CJK",
    "CLEAR",
    "COMPOUNDS",
    "DEFAULT",
    "FOLDED",
    "ISO_CODES",
    "LANGUAGES",
    "SNOWBALL",
    "FoldingStemmer",
    "bm25_kwargs",
    "check_compounds",
    "check_language",
    "chunk_language",
    "cjk_pairs",
    "compound_parts",
    "detect",
    "fold",
    "forget_identifier",
    "identify",
    "main_languages",
    "normalise",
    "prepare",
    "script_language",
    "script_languages",
]
