"""Date phrases in English, German and French found in free text, each with the range of days it names.

"last March", "two summers ago", "Q3 last year", "letzten Monat", "vor zwei Wochen", "en mars dernier",
"l'hiver dernier", "early October", "Ende letzten Jahres": each phrase becomes a half-open `[start, end)` range
of naive UTC datetimes, counted from a reference time. The conventions, the same in every language:

- a named month without "last", "this" or a year is the most recent one not after the reference month ("in
  December" read in November is last year's); "last <month>" is the most recent one before the reference month;
- seasons are meteorological (spring March to May, summer June to August, autumn September to November, winter
  December to February, named by the year it starts); "last <season>" is the most recent complete one, "N summers
  ago" the one N - 1 years before that;
- weeks run Monday to Sunday; "N weeks ago" and "N months ago" are the calendar week and month holding the day that
  far back, "N days ago" that day; "the last N days" end with the reference day;
- a weekday alone ("on Friday", "am Montag", "lundi dernier", "last Monday") is the most recent one before the
  reference day;
- early, mid and late (Anfang, Mitte, Ende; début, mi-, fin) a month are its days 1-10, 11-20 and 21 to the end;
  the beginning and the end of a year are its January and its December.

Each phrase also says how it dates: `relative` (counted from the reference time: "last week", "letzten Monat") or
`absolute` ("in March 2024", "Q3 2025", "im März"), and a bound before it ("since", "seit", "depuis", "before",
"vor", "avant", "until", "bis", "after", "nach", "après") or a span around two ("between March and May 2024",
"von 2009 bis 2014", "du 3 au 10 mars") turns it into one side of a range. Words that only look like dates are
not read: "the march on the capital", "May I ask", "the summer tires", "the Ides of March", "a Q3 launch", "1984"
without a preposition, "Sommerreifen", "aller sur Mars", "last week of the plan", "last year's return".
"""

from __future__ import annotations

import calendar
import datetime
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

Range = tuple[datetime.datetime, datetime.datetime]

_MONTH_WORDS = {
    1: ("january", "jan", "januar", "jänner", "janvier", "janv"),
    2: ("february", "feb", "februar", "février", "fevrier", "févr", "fevr"),
    3: ("march", "mar", "märz", "maerz", "mars"),
    4: ("april", "apr", "avril", "avr"),
    5: ("may", "mai"),
    6: ("june", "jun", "juni", "juin"),
    7: ("july", "jul", "juli", "juillet", "juil"),
    8: ("august", "aug", "août", "aout"),
    9: ("september", "sep", "sept", "septembre"),
    10: ("october", "oct", "oktober", "okt", "octobre"),
    11: ("november", "nov", "novembre"),
    12: ("december", "dec", "dezember", "dez", "décembre", "decembre", "déc"),
}
# Month words that are also everyday words: read only with a day, a year or "last"/"dernier" beside them, never
# after a bare preposition ("in mar", "sur Mars", "im Mai" is German May and stays).
_AMBIGUOUS_MONTHS = {"mar", "jan", "jun", "jul", "aug", "sep", "oct", "nov", "dec", "dez", "okt", "mars", "avr", "déc"}
_WEEKDAY_WORDS = {
    0: ("monday", "montag", "lundi"),
    1: ("tuesday", "dienstag", "mardi"),
    2: ("wednesday", "mittwoch", "mercredi"),
    3: ("thursday", "donnerstag", "jeudi"),
    4: ("friday", "freitag", "vendredi"),
    5: ("saturday", "samstag", "sonnabend", "samedi"),
    6: ("sunday", "sonntag", "dimanche"),
}
_SEASON_WORDS = {
    3: ("spring", "frühling", "frühjahr", "fruehling", "fruehjahr", "printemps"),
    6: ("summer", "sommer", "sommers", "sommern", "summers", "été", "étés"),
    9: ("autumn", "autumns", "fall", "herbst", "herbsts", "automne", "automnes"),
    12: ("winter", "winters", "wintern", "hiver", "hivers"),
}
_UNIT_WORDS = {
    "day": ("day", "days", "tag", "tage", "tagen", "tages", "jour", "jours"),
    "week": ("week", "weeks", "woche", "wochen", "semaine", "semaines"),
    "weekend": ("weekend", "week-end", "wochenende"),
    "month": ("month", "months", "monat", "monate", "monaten", "monats", "mois"),
    "quarter": ("quarter", "quarters", "quartal", "quartale", "quartalen", "quartals", "trimestre", "trimestres"),
    "year": ("year", "years", "jahr", "jahre", "jahren", "jahres", "an", "ans", "année", "années", "annee", "annees"),
}
_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "ein": 1, "eine": 1, "einem": 1, "einer": 1, "einen": 1, "un": 1, "une": 1,
    "two": 2, "zwei": 2, "deux": 2, "three": 3, "drei": 3, "trois": 3, "four": 4, "vier": 4, "quatre": 4,
    "five": 5, "fünf": 5, "cinq": 5, "six": 6, "sechs": 6, "seven": 7, "sieben": 7, "sept": 7,
    "eight": 8, "acht": 8, "huit": 8, "nine": 9, "neun": 9, "neuf": 9, "ten": 10, "zehn": 10, "dix": 10,
    "eleven": 11, "elf": 11, "onze": 11, "twelve": 12, "zwölf": 12, "douze": 12,
}  # fmt: skip
_ORDINALS = {
    1: ("first", "1st", "erste", "ersten", "erstes", "premier", "1er"),
    2: ("second", "2nd", "zweite", "zweiten", "zweites", "deuxième", "deuxieme", "2e", "2ème"),
    3: ("third", "3rd", "dritte", "dritten", "drittes", "troisième", "troisieme", "3e", "3ème"),
    4: ("fourth", "4th", "vierte", "vierten", "viertes", "quatrième", "quatrieme", "4e", "4ème"),
}


def _alternatives(words: Iterable[Iterable[str]] | dict[str, int]) -> str:
    """A regex alternation of words (groups of words, or a dict's keys), longest first."""
    flat = set(words) if isinstance(words, dict) else {w for group in words for w in group}
    return "(?:" + "|".join(re.escape(w) for w in sorted(flat, key=len, reverse=True)) + ")"


_MONTH = _alternatives(_MONTH_WORDS.values())
_FULL_MONTH = _alternatives([[w for w in group if w not in _AMBIGUOUS_MONTHS] for group in _MONTH_WORDS.values()])
_WEEKDAY = _alternatives(_WEEKDAY_WORDS.values())
_SEASON = _alternatives(_SEASON_WORDS.values())
_NUMBER = r"(?:\d{1,3}|" + _alternatives(_NUMBER_WORDS)[3:]
_ORDINAL = _alternatives(_ORDINALS.values())
_DAY_UNIT = _alternatives([_UNIT_WORDS["day"]])
_WEEK_UNIT = _alternatives([_UNIT_WORDS["week"]])
_MONTH_UNIT = _alternatives([_UNIT_WORDS["month"]])
_QUARTER_UNIT = _alternatives([_UNIT_WORDS["quarter"]])
_YEAR_UNIT = _alternatives([_UNIT_WORDS["year"]])
# Units by language, so that "this tag" (English "this", German "Tag") is not a date.
_UNIT_EN = r"(?:days?|weeks?|months?|quarters?|years?)"
_UNIT_DE = r"(?:tag(?:e|en|es)?|wochen?|monat(?:e|en|s)?|quartal(?:e|en|s)?|jahr(?:e|en|es)?)"
_UNIT_FR = r"(?:jours?|semaines?|mois|trimestres?|ans?|ann[ée]es?)"
_YEAR = r"(?:19|20)\d{2}"
_APOSTROPHE = "['’]"
# "last", "past", "previous" before the word; German inflected forms; French after it.
_LAST_EN = r"(?:last|past|previous)"
_LAST_DE = r"(?:letzte[nrsm]?|vergangene[nrsm]?|vorige[nrsm]?)"
_LAST_BEFORE = rf"(?:{_LAST_EN}|{_LAST_DE})"
_LAST_FR = r"(?:derni[eè]re?|pass[ée]e?)"
_THIS = r"(?:this|current|diese[nrsm]?|ce|cet|cette)"
_BEFORE_LAST = r"(?:before\s+last|vorletzte[nrsm]?)"
_ARTICLE = rf"(?:the|le|la|les|l{_APOSTROPHE}\s?|der|die|das|den|dem)"
_DAY_NUMBER = r"(?:[12]\d|3[01]|0?[1-9])"

# Bounds before a date and connectors of spans; "vor" is German "before" only before a date that is not a
# count of units ("vor zwei Wochen" reads "two weeks ago").
_BOUND = re.compile(
    r"(?<![\w'’-])(?P<bound>since|after|before|until|till|up\s+to|seit|nach|vor|bis(?:\s+(?:zum|zur|ende))?"
    rf"|depuis|apr[eè]s|avant|jusqu{_APOSTROPHE}(?:à|a|au|en)(?:\s+(?:la|l{_APOSTROPHE}))?)\s+(?:the\s+)?$",
    re.IGNORECASE,
)
_BOUND_SIDE = {
    "since": "since", "seit": "since", "depuis": "since",
    "after": "after", "nach": "after", "après": "after", "apres": "after",
    "before": "before", "vor": "before", "avant": "before",
}  # fmt: skip
_SPAN_OPEN = re.compile(r"(?<![\w'’-])(?:between|from|zwischen|von|vom|entre|du|de)\s+(?:the\s+)?$", re.IGNORECASE)
_SPAN_JOIN = re.compile(
    r"\s+(?:to|and|until|till|through|und|bis(?:\s+zum)?|et|à|a|au|jusqu['’](?:à|a|au|en))\s+(?:the\s+)?", re.IGNORECASE
)
# A plain preposition before a date that a phrase did not take: read with it (and left out of the question with it).
_PLAIN_PREPOSITION = re.compile(
    rf"(?<![\w'’-])(?:from|of|in|on|during|at|von|vom|im|am|de|du|d{_APOSTROPHE}|en|au)\s*$", re.IGNORECASE
)
# What a date word never is when it is followed by these: "last week of the plan", "last year's return".
_NOT_A_DATE_AFTER = re.compile(r"^(?:['’]s(?!\w)|\s+of\s+(?!(?:19|20)\d{2}(?!\d)))", re.IGNORECASE)


@dataclass(frozen=True)
class DateMention:
    """One date phrase of a text: where it is, what it names and how."""

    start: int  # offset of its first character in the text
    end: int  # offset after its last character
    text: str
    range: Range  # the days it names, [start, end)
    kind: str  # "relative" (counted from the reference time) or "absolute"
    side: str | None = None  # "since", "after", "before" or "until" with a bound before it; "span" for two dates
    after: datetime.datetime | None = None  # the range as the filter reads it: on or after
    before: datetime.datetime | None = None  # strictly before


def find_dates(text: str, now: datetime.datetime) -> list[DateMention]:
    """
    The date phrases of a text, left to right, none overlapping another.

    :param text: Free text (a question).
    :param now: The reference time (naive UTC).
    :returns: Each phrase with its range; a bound or span around it already applied to `after` and `before`.
    """
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    found: list[tuple[int, int, Range, str]] = []
    for pattern, handler, kind in _rules():
        for match in pattern.finditer(text):
            if _NOT_A_DATE_AFTER.match(text[match.end() :]):
                continue
            span = handler(match, today)  # type: ignore[operator]
            if span is not None and span[0] < span[1]:
                found.append((match.start(), match.end(), span, kind))
    chosen: list[tuple[int, int, Range, str]] = []
    for item in sorted(found, key=lambda f: (-(f[1] - f[0]), f[0])):
        if all(item[1] <= s or item[0] >= e for s, e, _, _ in chosen):
            chosen.append(item)
    chosen.sort()
    mentions: list[DateMention] = []
    index = 0
    while index < len(chosen):
        start, end, span, kind = chosen[index]
        index += 1
        if index < len(chosen):
            following = chosen[index]
            join = _SPAN_JOIN.fullmatch(text[end : following[0]])
            opener = _SPAN_OPEN.search(text[:start])
            if join and opener and span[0] < following[2][1]:
                index += 1
                first, last = opener.start(), following[1]
                mentions.append(
                    DateMention(
                        first, last, text[first:last], (span[0], following[2][1]), _both(kind, following[3]),
                        "span", span[0], following[2][1],
                    )
                )  # fmt: skip
                continue
        bound = _BOUND.search(text[:start])
        if bound:
            side = _side(bound.group("bound"))
            first = bound.start()
            after = span[0] if side == "since" else span[1] if side == "after" else None
            before = span[0] if side == "before" else span[1] if side == "until" else None
            mentions.append(DateMention(first, end, text[first:end], span, kind, side, after, before))
            continue
        plain = _PLAIN_PREPOSITION.search(text[:start])
        first = plain.start() if plain else start
        mentions.append(DateMention(first, end, text[first:end], span, kind, None, span[0], span[1]))
    return mentions


def _introduced(match: re.Match[str]) -> bool:
    """Whether a bare month or year is introduced by a bound, a span's opening or joining word."""
    before = match.string[: match.start()]
    return bool(_BOUND.search(before) or _SPAN_OPEN.search(before) or re.search(
        r"(?<![\w'’-])(?:to|and|until|till|through|und|bis|et|à|au|jusqu['’](?:à|a|au|en))\s+(?:the\s+)?$", before, re.IGNORECASE
    ))  # fmt: skip


def phrase_range(text: str, now: datetime.datetime) -> Range | None:
    """
    The range a text that is one date phrase names: "last March", "Q3 2023", also a month or a year alone
    ("March", "2024") and "hier"; `None` when the text is not one date phrase.
    """
    stripped = " ".join(text.split()).rstrip(" ?.!")
    for candidate, offset in ((stripped, 0), (f"in {stripped}", 3)):
        mentions = find_dates(candidate, now)
        whole = len(mentions) == 1 and mentions[0].start <= offset and mentions[0].end == len(candidate)
        if whole and mentions[0].side in (None, "span"):
            return mentions[0].range
    if stripped.lower() == "hier":
        return _day(now.replace(hour=0, minute=0, second=0, microsecond=0) - datetime.timedelta(days=1))
    return None


def month_number(word: str) -> int | None:
    """The month a full month name names in English, German or French (`None` for any other word)."""
    lowered = word.lower()
    if lowered in _AMBIGUOUS_MONTHS or len(lowered) < 3:
        return None
    return next((month for month, words in _MONTH_WORDS.items() if lowered in words), None)


def _both(first: str, second: str) -> str:
    return "relative" if "relative" in (first, second) else "absolute"


def _side(word: str) -> str:
    lowered = " ".join(word.lower().split())
    if lowered in _BOUND_SIDE:
        return _BOUND_SIDE[lowered]
    return "until"  # until, till, up to, bis..., jusqu'à...


# ------------------------------------------------------------------------------------------- the calendar


def _shift(moment: datetime.datetime, months: int) -> datetime.datetime:
    index = moment.year * 12 + moment.month - 1 + months
    year, month = index // 12, index % 12 + 1
    return moment.replace(year=year, month=month, day=min(moment.day, calendar.monthrange(year, month)[1]))


def _day(moment: datetime.datetime) -> Range:
    return moment, moment + datetime.timedelta(days=1)


def _week(moment: datetime.datetime) -> Range:
    start = moment - datetime.timedelta(days=moment.weekday())
    return start, start + datetime.timedelta(days=7)


def _month(year: int, month: int) -> Range:
    start = datetime.datetime(year, month, 1)
    return start, _shift(start, 1)


def _quarter(year: int, quarter: int) -> Range:
    start = datetime.datetime(year, 3 * quarter - 2, 1)
    return start, _shift(start, 3)


def _year(year: int) -> Range:
    return datetime.datetime(year, 1, 1), datetime.datetime(year + 1, 1, 1)


def _season(year: int, first_month: int) -> Range:
    start = datetime.datetime(year, first_month, 1)
    return start, _shift(start, 3)


def _period(unit: str, today: datetime.datetime, back: int = 0) -> Range:
    """The calendar day, week, month, quarter or year holding `today`, `back` of them earlier."""
    if unit == "day":
        return _day(today - datetime.timedelta(days=back))
    if unit == "week":
        return _week(today - datetime.timedelta(weeks=back))
    if unit == "month":
        moment = _shift(today, -back)
        return _month(moment.year, moment.month)
    if unit == "quarter":
        moment = _shift(today, -3 * back)
        return _quarter(moment.year, (moment.month - 1) // 3 + 1)
    return _year(today.year - back)


def _weekend(today: datetime.datetime, back: int) -> Range:
    saturday = today - datetime.timedelta(days=today.weekday()) + datetime.timedelta(days=5 - 7 * back)
    return saturday, saturday + datetime.timedelta(days=2)


def _recent_month(month: int, today: datetime.datetime, strictly_before: bool = False) -> int:
    """The year of the most recent `month` not after today's month (before it when `strictly_before`)."""
    if month < today.month or (month == today.month and not strictly_before):
        return today.year
    return today.year - 1


def _recent_season(first_month: int, today: datetime.datetime, complete: bool) -> int:
    """The starting year of the most recent season begun by today (`complete`: also ended by today)."""
    year = today.year if first_month <= today.month else today.year - 1
    if complete and _season(year, first_month)[1] > today:
        year -= 1
    return year


def _recent_quarter(quarter: int, today: datetime.datetime) -> int:
    return today.year if 3 * quarter - 2 <= today.month else today.year - 1


def _part(span: Range, part: str) -> Range:
    """Early, mid or late part of a month (days 1-10, 11-20, 21-end) or of a year (January, July, December)."""
    start, end = span
    if (end - start).days > 40:  # a year
        month = {"early": 1, "mid": 7, "late": 12}[part]
        return _month(start.year, month)
    if part == "early":
        return start, start + datetime.timedelta(days=10)
    if part == "mid":
        return start + datetime.timedelta(days=10), start + datetime.timedelta(days=20)
    return start + datetime.timedelta(days=20), end


# ------------------------------------------------------------------------------------------- reading words


def _lookup(table: dict[int, tuple[str, ...]], word: str) -> int:
    lowered = word.lower()
    return next(key for key, words in table.items() if lowered in words)


def _number(word: str) -> int:
    lowered = word.lower()
    return int(lowered) if lowered.isdigit() else _NUMBER_WORDS[lowered]


def _unit(word: str) -> str:
    lowered = word.lower()
    return next(name for name, words in _UNIT_WORDS.items() if lowered in words)


def _part_word(word: str) -> str:
    lowered = word.lower().rstrip("-")
    if lowered in ("early", "beginning", "start", "anfang", "début", "debut", "the beginning", "the start"):
        return "early"
    if lowered in ("mid", "middle", "mitte", "mi", "the middle"):
        return "mid"
    return "late"


def _relative_year(words: str, today: datetime.datetime) -> int:
    """The year "last year", "this year", "letzten Jahres", "l'an dernier", "de l'année dernière" name."""
    lowered = words.lower()
    if re.search(r"last|previous|letzt|vergangen|vorig|derni|pass", lowered):
        return today.year - 1
    return today.year


# ------------------------------------------------------------------------------------------- the rules

_B = r"(?<![\w-])"  # a phrase starts at a word start (after an elided "d'" or "l'" too)
_E = r"(?![\w-])"  # and ends at a word end
_PREP_IN = r"(?:in|during|from|of|im|in\s+den|in\s+der|am|en|au|aux|dans|de|du|à)"
_PART = r"(?:early|mid-?|late|the\s+(?:beginning|start|middle|end)\s+of|(?:beginning|start|middle|end)\s+of|anfang|mitte|ende|début|debut|mi-|fin)"
_REL_YEAR = (
    rf"(?:(?:of\s+)?(?:last|this|previous)\s+year|(?:des\s+)?(?:letzten|vergangenen|vorigen|diesen|dieses)\s+jahr(?:es|s)?"
    rf"|letztes\s+jahr|(?:de\s+)?l{_APOSTROPHE}\s?(?:an|ann[ée]e)\s+(?:derni[eè]re?|pass[ée]e?)|(?:de\s+)?cette\s+ann[ée]e)"
)


def _r_yesterday(match: re.Match[str], today: datetime.datetime) -> Range | None:
    word = match.group(0).lower()
    if word in ("vorgestern", "avant-hier") or "before yesterday" in word:
        return _day(today - datetime.timedelta(days=2))
    if word.endswith("hier") and not _french_around(match):
        return None
    return _day(today - datetime.timedelta(days=1))


def _french_around(match: re.Match[str]) -> bool:
    """Whether the text around "hier" reads French (in German it means "here")."""
    text = match.string.lower()
    return bool(
        re.search(
            rf"(?<!\w)(?:j{_APOSTROPHE}|qu{_APOSTROPHE}|est-ce|je|ai|avons|nous|d{_APOSTROPHE}|le|la|les|des)(?!\w)",
            text,
        )
    )


def _r_today(match: re.Match[str], today: datetime.datetime) -> Range | None:
    return _day(today)


def _r_last_n(match: re.Match[str], today: datetime.datetime) -> Range | None:
    count, unit = _number(match.group("n")), _unit(match.group("unit"))
    end = today + datetime.timedelta(days=1)
    if unit == "day":
        return end - datetime.timedelta(days=count), end
    if unit == "week":
        return end - datetime.timedelta(weeks=count), end
    months = {"month": 1, "quarter": 3, "year": 12}[unit] * count
    return _shift(end, -months), end


def _r_ago(match: re.Match[str], today: datetime.datetime) -> Range | None:
    count = _number(match.group("n"))
    word = match.group("unit").lower()
    if any(word in words for words in _SEASON_WORDS.values()):
        first_month = _lookup(_SEASON_WORDS, word)
        return _season(_recent_season(first_month, today, complete=True) - (count - 1), first_month)
    if word in _UNIT_WORDS["weekend"]:
        return _weekend(today, count)
    unit = _unit(word)
    if unit == "day":
        return _day(today - datetime.timedelta(days=count))
    return _period(unit, today, count)


def _r_unit(match: re.Match[str], today: datetime.datetime) -> Range | None:
    """last / this / before-last week, month, quarter, year, weekend."""
    unit_word = match.group("unit").lower()
    which = (match.group("which") or "").lower()
    back = 2 if re.search(r"before|vorletzt", which) else 0 if re.match(r"this|current|dies|ce", which) else 1
    if unit_word in _UNIT_WORDS["weekend"]:
        return _weekend(today, back)
    return _period(_unit(unit_word), today, back)


def _r_earlier_this(match: re.Match[str], today: datetime.datetime) -> Range | None:
    return _period(_unit(match.group("unit") or match.group("unit2")), today)


def _r_weekday(match: re.Match[str], today: datetime.datetime) -> Range | None:
    weekday = _lookup(_WEEKDAY_WORDS, match.group("wd"))
    which = (match.group("which") or "").lower()
    if re.match(r"this|dies|ce", which):
        return _day(today - datetime.timedelta(days=today.weekday() - weekday))
    back = (today.weekday() - weekday) % 7 or 7
    return _day(today - datetime.timedelta(days=back))


def _r_season_relative(match: re.Match[str], today: datetime.datetime) -> Range | None:
    first_month = _lookup(_SEASON_WORDS, match.group("season"))
    which = (match.group("which") or match.group("which_after") or "").lower()
    if re.match(r"this|dies|ce|cet", which):
        if first_month == 12 and today.month <= 2:
            return _season(today.year - 1, 12)
        return _season(today.year, first_month)
    return _season(_recent_season(first_month, today, complete=True), first_month)


def _r_season_year(match: re.Match[str], today: datetime.datetime) -> Range | None:
    first_month = _lookup(_SEASON_WORDS, match.group("season"))
    year = match.group("year")
    return _season(int(year) if year else _relative_year(match.group("rel"), today), first_month)


def _r_season_bare(match: re.Match[str], today: datetime.datetime) -> Range | None:
    first_month = _lookup(_SEASON_WORDS, match.group("season"))
    return _season(_recent_season(first_month, today, complete=False), first_month)


def _r_month_relative(match: re.Match[str], today: datetime.datetime) -> Range | None:
    """last March, this December, letzten März, en mars dernier."""
    month = _lookup(_MONTH_WORDS, match.group("month"))
    which = (match.group("which") or match.group("which_after") or "").lower()
    if re.match(r"this|dies|ce", which):
        return _month(today.year, month)
    return _month(_recent_month(month, today, strictly_before=True), month)


def _r_month_rel_year(match: re.Match[str], today: datetime.datetime) -> Range | None:
    """March last year, im März letzten Jahres, en mars l'an dernier."""
    month = _lookup(_MONTH_WORDS, match.group("month"))
    span = _month(_relative_year(match.group("rel"), today), month)
    return _part(span, _part_word(match.group("part"))) if match.group("part") else span


def _r_month_year(match: re.Match[str], today: datetime.datetime) -> Range | None:
    """March 2024, (early) März 2024, 5 March 2024, March 5th, 2024, le 5 mars 2024."""
    month = _lookup(_MONTH_WORDS, match.group("month"))
    year = int(match.group("year"))
    day = match.group("day") or match.group("day_after")
    if day:
        try:
            return _day(datetime.datetime(year, month, int(day)))
        except ValueError:
            return None
    span = _month(year, month)
    return _part(span, _part_word(match.group("part"))) if match.group("part") else span


def _r_month_bare(match: re.Match[str], today: datetime.datetime) -> Range | None:
    """in March, im März, en mars, (early) October, mid-September, Anfang Oktober, fin septembre, my March sessions."""
    word = match.group("month")
    lowered = word.lower()
    prep = (match.group("prep") or "").lower()
    if lowered in _AMBIGUOUS_MONTHS and not (lowered == "mars" and (prep == "en" or match.group("part"))):
        return None
    introduced = _introduced(match)
    if not prep and not match.group("part") and not introduced:
        # a month without a preposition: an English one written with its capital, after a determiner
        determiner = re.search(r"(?<![\w-])(?:my|our|the|this|that)\s+$", match.string[: match.start()], re.IGNORECASE)
        if not word[0].isupper() or lowered == "may" or not determiner:
            return None
    if lowered == "may" and not word[0].isupper() and prep not in ("in", "during"):
        return None
    month = _lookup(_MONTH_WORDS, word)
    span = _month(_recent_month(month, today), month)
    return _part(span, _part_word(match.group("part"))) if match.group("part") else span


def _r_part_year(match: re.Match[str], today: datetime.datetime) -> Range | None:
    """end of last year, Ende letzten Jahres, fin de l'année dernière, beginning of this year."""
    return _part(_year(_relative_year(match.group("rel"), today)), _part_word(match.group("part")))


def _r_year(match: re.Match[str], today: datetime.datetime) -> Range | None:
    if not match.group("prep") and not _introduced(match):
        return None
    return _year(int(match.group("year")))


def _r_iso(match: re.Match[str], today: datetime.datetime) -> Range | None:
    year, month, day = int(match.group("y")), int(match.group("m")), match.group("d")
    try:
        return _day(datetime.datetime(year, month, int(day))) if day else _month(year, month)
    except ValueError:
        return None


def _r_quarter(match: re.Match[str], today: datetime.datetime) -> Range | None:
    quarter = int(match.group("q") or match.group("q2") or 0) or _lookup(_ORDINALS, match.group("ord"))
    if match.group("year") or match.group("year2"):
        return _quarter(int(match.group("year") or match.group("year2")), quarter)
    if match.group("rel"):
        return _quarter(_relative_year(match.group("rel"), today), quarter)
    return _quarter(_recent_quarter(quarter, today), quarter)


@cache
def _rules() -> list[tuple[re.Pattern[str], object, str]]:
    """The phrase patterns, each with the function that reads its range and its kind."""
    last_n_head = r"(?:(?:in|within|over|during)\s+)?(?:the\s+)?(?:last|past|previous)"
    n_unit = rf"(?P<n>{_NUMBER})\s+(?P<unit>{_UNIT_EN})"
    n_unit_de = rf"(?P<n>{_NUMBER})\s+(?P<unit>{_UNIT_DE})"
    rules: list[tuple[str, object, str]] = [
        (r"yesterday|the\s+day\s+before\s+yesterday|gestern|vorgestern|avant-hier|hier", _r_yesterday, "relative"),
        (
            r"(?<=\s)(?:from|since|written|wrote|added|noted)\s+today|heute\s+(?:notiert|geschrieben)|aujourd['’]hui",
            _r_today,
            "relative",
        ),
        # the last 7 days, in den letzten 7 Tagen, les 7 derniers jours, ces deux dernières semaines
        (rf"{last_n_head}\s+{n_unit}", _r_last_n, "relative"),
        (rf"(?:in\s+den\s+)?(?:letzten|vergangenen)\s+{n_unit_de}", _r_last_n, "relative"),
        (rf"(?:les|ces)\s+(?P<n>{_NUMBER})\s+derni[eè]re?s\s+(?P<unit>{_UNIT_FR})", _r_last_n, "relative"),
        # two weeks ago, vor zwei Wochen, il y a deux semaines, two summers ago
        (rf"(?P<n>{_NUMBER})\s+(?P<unit>{_UNIT_EN}|{_SEASON}|weekends?)\s+ago", _r_ago, "relative"),
        (rf"vor\s+(?P<n>{_NUMBER})\s+(?P<unit>{_UNIT_DE}|{_SEASON}|wochenenden?)", _r_ago, "relative"),
        (rf"il\s+y\s+a\s+(?P<n>{_NUMBER})\s+(?P<unit>{_UNIT_FR}|{_SEASON})", _r_ago, "relative"),
        # last week, this month, the week before last, letzte Woche, diesen Monat, la semaine dernière
        (r"(?:the\s+)?(?P<unit>week|month|quarter|year|weekend)\s+(?P<which>before\s+last)", _r_unit, "relative"),
        (
            rf"(?:in\s+)?(?:the\s+)?(?P<which>{_LAST_EN}|this|current)\s+(?P<unit>day|week|month|quarter|year|weekend)",
            _r_unit,
            "relative",
        ),
        (
            rf"(?:(?:im|am|in\s+der)\s+)?(?P<which>{_LAST_DE}|diese[nrsm]?|vorletzte[nrsm]?)\s+(?P<unit>{_UNIT_DE}|wochenende)",
            _r_unit,
            "relative",
        ),
        (rf"(?:{_ARTICLE}\s*)?(?P<unit>{_UNIT_FR}|week-end)\s+(?P<which>derni[eè]re?|pass[ée]e?)", _r_unit, "relative"),
        (r"(?P<which>ce|cette)\s+(?P<unit>mois|semaine|ann[ée]e|trimestre)(?:-ci)?", _r_unit, "relative"),
        (
            r"earlier\s+this\s+(?P<unit>week|month|year|quarter)|(?:früher\s+)?(?:in\s+)?diese[mn]\s+(?P<unit2>monat)",
            _r_earlier_this,
            "relative",
        ),
        # last Monday, on Friday, am Montag, letzten Samstag, lundi dernier, ce lundi
        (
            rf"(?:(?:on|am)\s+)?(?P<which>{_LAST_BEFORE}|this|diese[nrsm]?|ce)\s+(?P<wd>{_WEEKDAY})",
            _r_weekday,
            "relative",
        ),
        (rf"(?:on|am|this\s+past)\s+(?P<wd>{_WEEKDAY})(?P<which>)", _r_weekday, "relative"),
        (rf"(?:le\s+)?(?P<wd>{_WEEKDAY})\s+(?:derni[eè]re?|pass[ée]e?)(?P<which>)", _r_weekday, "relative"),
        # last summer, this autumn, im letzten Sommer, l'été dernier, cet automne
        (
            rf"(?:(?:in|im|during)\s+)?(?:the\s+)?(?P<which>{_LAST_BEFORE}|{_THIS})\s+(?P<season>{_SEASON})(?P<which_after>)",
            _r_season_relative,
            "relative",
        ),
        (
            rf"(?:{_ARTICLE}\s*)?(?P<season>{_SEASON})\s+(?P<which_after>derni[eè]re?|pass[ée]e?)(?P<which>)",
            _r_season_relative,
            "relative",
        ),
        # the spring of 2025, im Frühjahr 2025, au printemps 2025, summer of last year
        (
            rf"(?:(?:in|im|au|en|during)\s+)?(?:the\s+|l{_APOSTROPHE}\s?)?(?P<season>{_SEASON})\s+(?:of\s+|de\s+)?(?:(?P<year>{_YEAR})|(?P<rel>{_REL_YEAR}))",
            _r_season_year,
            "absolute",
        ),
        (rf"(?:in|im|au|en|during)\s+(?:the\s+)?(?P<season>{_SEASON})", _r_season_bare, "absolute"),
        # last March, letzten März, en mars dernier, this December
        (
            rf"(?:(?:in|im)\s+)?(?P<which>{_LAST_BEFORE}|this|diese[nrsm]?)\s+(?P<month>{_MONTH})(?P<which_after>)",
            _r_month_relative,
            "relative",
        ),
        (
            rf"(?:en\s+)?(?P<month>{_MONTH})\s+(?P<which_after>derni[eè]re?|pass[ée]e?)(?P<which>)",
            _r_month_relative,
            "relative",
        ),
        # (early) March last year, im März letzten Jahres, en mars l'an dernier
        (
            rf"(?:{_PREP_IN}\s+)?(?:(?P<part>{_PART})\s*)?(?P<month>{_MONTH})\s+(?:of\s+)?(?P<rel>{_REL_YEAR})",
            _r_month_rel_year,
            "relative",
        ),
        # Q3 last year, im dritten Quartal letzten Jahres, Q3 2025, au troisième trimestre 2025, in Q3
        (
            rf"(?:{_PREP_IN}\s+)?(?:q(?P<q>[1-4])|(?:the\s+)?(?P<ord>{_ORDINAL})\s+{_QUARTER_UNIT})\s+(?:of\s+|de\s+)?(?P<rel>{_REL_YEAR})(?P<q2>)(?P<year>)(?P<year2>)",
            _r_quarter,
            "relative",
        ),
        (
            rf"(?:{_PREP_IN}\s+)?(?:q(?P<q>[1-4])\s*[/ ]?\s*(?P<year>{_YEAR})|(?P<year2>{_YEAR})\s*[/-]?\s*q(?P<q2>[1-4])|(?:the\s+)?(?P<ord>{_ORDINAL})\s+{_QUARTER_UNIT}\s+(?:of\s+)?(?P<year3>{_YEAR}))(?P<rel>)",
            _r_quarter_any,
            "absolute",
        ),
        (
            rf"(?:in|im|au|during)\s+(?:q(?P<q>[1-4])|(?:the\s+)?(?P<ord>{_ORDINAL})\s+{_QUARTER_UNIT})(?P<rel>)(?P<q2>)(?P<year>)(?P<year2>)",
            _r_quarter,
            "absolute",
        ),
        # end of last year, Ende letzten Jahres, fin de l'année dernière
        (
            rf"(?:at\s+)?(?:the\s+)?(?P<part>end|beginning|start|middle|ende|anfang|mitte|fin|début|debut)\s+(?:of\s+|des\s+|de\s+)?(?P<rel>{_REL_YEAR})",
            _r_part_year,
            "relative",
        ),
        # 2024-05-11, 2024-05
        (
            r"(?:(?:on|in|im|am|en|le)\s+)?(?P<y>(?:19|20)\d{2})-(?P<m>0[1-9]|1[0-2])(?:-(?P<d>[0-3]\d))?",
            _r_iso,
            "absolute",
        ),
        # March 2024, early March 2024, 5 March 2024, March 5th, 2024, le 5 mars 2024, 5. März 2024
        (
            rf"(?:{_PREP_IN}\s+)?(?:(?P<part>{_PART})\s*)?(?:(?:le\s+)?(?P<day>{_DAY_NUMBER})(?:st|nd|rd|th|er|\.)?\s+(?:of\s+)?)?(?P<month>{_MONTH})\.?\s+(?:(?P<day_after>{_DAY_NUMBER})(?:st|nd|rd|th)?,?\s+)?(?:of\s+)?(?P<year>{_YEAR})",
            _r_month_year,
            "absolute",
        ),
        # September 22, Apr 1, the 5th of May, 5. März, le 5 mars
        (
            rf"(?:(?:on|am|le|from|since)\s+)?(?:(?P<month>{_MONTH})\.?\s+(?P<day_after>{_DAY_NUMBER})(?:st|nd|rd|th)?(?P<day>)|(?:the\s+)?(?P<day2>{_DAY_NUMBER})(?:st|nd|rd|th|er|\.)?\s+(?:of\s+)?(?P<month2>{_MONTH}))(?![\d:])",
            _r_month_day_any,
            "absolute",
        ),
        # in March, im März, en mars, early October, mid-September, Anfang Oktober, fin septembre, my March sessions
        (
            rf"(?:(?P<prep>in|during|im|en)\s+)?(?:(?P<part>{_PART})\s*)?(?P<month>{_MONTH})(?!\s+(?:of|on|to|\d))",
            _r_month_bare,
            "absolute",
        ),
        # in 2024, im Jahr 2024, en 2024; since 2019, from 2009 to 2014 (a bound or span word before it)
        (
            rf"(?:(?P<prep>in|during|im(?:\s+jahr(?:e)?)?|in\s+the\s+year|en|au\s+cours\s+de)\s+(?:l{_APOSTROPHE}ann[ée]e\s+)?)?(?P<year>{_YEAR})",
            _r_year,
            "absolute",
        ),
    ]
    compiled = []
    for body, handler, kind in rules:
        compiled.append((re.compile(rf"{_B}(?:{body}){_E}", re.IGNORECASE), handler, kind))
    return compiled


def _r_quarter_any(match: re.Match[str], today: datetime.datetime) -> Range | None:
    quarter = int(match.group("q") or match.group("q2") or 0) or _lookup(_ORDINALS, match.group("ord"))
    year = match.group("year") or match.group("year2") or match.group("year3")
    return _quarter(int(year), quarter)


def _r_month_day_any(match: re.Match[str], today: datetime.datetime) -> Range | None:
    month_word = match.group("month") or match.group("month2")
    day = match.group("day_after") or match.group("day2")
    if (
        month_word.lower() == "may"
        and not match.group("month2")
        and match.string[match.start("month")].isupper() is False
    ):
        return None
    month = _lookup(_MONTH_WORDS, month_word)
    for year in (today.year, today.year - 1):
        try:
            moment = datetime.datetime(year, month, int(day))
        except ValueError:
            return None
        if moment <= today:
            return _day(moment)
    return None


__all__ = ["DateMention", "find_dates", "month_number", "phrase_range"]
