"""Dates as UTC ranges: one date expression a person gives (`--after "last week"`), and the date a file's path gives.

A date phrase in English, German or French ("last March", "letzten Monat", "Q3 2023") is read by the grammar of
`haystack_integrations.components.needle._date_phrases`, which also finds them in free text for the self-query
stage. What it does not read (an exact time, "May 5th 2024 at noon", "3 weeks from now") goes to dateparser
(scrapinghub's, maintained), which reads one English expression into a date and its period (day, week, month,
quarter, year); the period turns the date into a range.
"""

from __future__ import annotations

import calendar
import datetime
import re
from functools import cache
from typing import Any

UTC = datetime.timezone.utc
_LAST_N = re.compile(r"^(?:the\s+)?(?:last|past)\s+(\d{1,3})\s+(day|week|month|year)s?$", re.IGNORECASE)
_QUARTER = re.compile(r"^q([1-4])\s*(\d{4})$|^(\d{4})\s*q([1-4])$", re.IGNORECASE)
_ISO_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ISO_MONTH = re.compile(r"^\d{4}-\d{2}$")
_YEAR = re.compile(r"^\d{4}$")
# Dates in a file's name or path, most precise first: 2024-05-11 (also 2024_05_11, 20240511), 2024/05/11 as
# folders, 2024-05, 2025-q3 or q3-2025, 2026-w45, august-2025 or 2025-august, a year alone.
_D = r"(?<![0-9])"
_PATH_DAY = re.compile(rf"{_D}((?:19|20)\d{{2}})[-_.]?(0[1-9]|1[0-2])[-_.]?(0[1-9]|[12]\d|3[01])(?![0-9])")
_PATH_FOLDERS_DAY = re.compile(rf"{_D}((?:19|20)\d{{2}})/(0?[1-9]|1[0-2])/(0?[1-9]|[12]\d|3[01])(?![0-9])")
_PATH_MONTH = re.compile(rf"{_D}((?:19|20)\d{{2}})[-_./](0[1-9]|1[0-2])(?![0-9])")
_PATH_QUARTER = re.compile(
    rf"{_D}((?:19|20)\d{{2}})[-_ ]?q([1-4])(?![0-9a-z])|(?<![0-9a-z])q([1-4])[-_ ]((?:19|20)\d{{2}})(?![0-9])", re.I
)
_PATH_WEEK = re.compile(rf"{_D}((?:19|20)\d{{2}})[-_ ]?w(0[1-9]|[1-4]\d|5[0-3])(?![0-9])", re.I)
_PATH_YEAR = re.compile(rf"{_D}((?:19|20)\d{{2}})(?![0-9])")


@cache
def _parser() -> Any:
    from dateparser.date import DateDataParser

    return DateDataParser(languages=["en"], settings={"PREFER_DATES_FROM": "past", "RETURN_AS_TIMEZONE_AWARE": False})


def reference_time(now: str | datetime.datetime | None) -> datetime.datetime:
    """`now` as a naive UTC datetime: an ISO string or datetime, or the current time when `None`."""
    if now is None:
        return datetime.datetime.now(UTC).replace(tzinfo=None, microsecond=0)
    if isinstance(now, str):
        now = datetime.datetime.fromisoformat(now.strip().replace("Z", "+00:00"))
    if now.tzinfo is not None:
        now = now.astimezone(UTC).replace(tzinfo=None)
    return now


def period_range(text: str, now: datetime.datetime) -> tuple[datetime.datetime, datetime.datetime] | None:
    """
    The time span a date expression names, `[start, end)`, relative to `now`.

    :param text: "yesterday", "last week", "March", "March 2024", "2024-05", "Q3 2023", "past 10 days", "letzten
        Monat", "en mars dernier" (`haystack_integrations.components.needle._date_phrases`), else any expression
        dateparser reads in English.
    :param now: The reference time (naive UTC).
    :returns: Start (inclusive) and end (exclusive); `None` when the text is not a date.
    """
    text = " ".join(text.split())
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    from haystack_integrations.components.needle._date_phrases import phrase_range

    named = phrase_range(text, now)
    if named is not None:
        return named
    last_n = _LAST_N.match(text)
    if last_n:
        count, unit = int(last_n.group(1)), last_n.group(2).lower()
        return _shift(today, unit, -count), today + datetime.timedelta(days=1)
    quarter = _QUARTER.match(text)
    if quarter:
        q, year = (quarter.group(1), quarter.group(2)) if quarter.group(1) else (quarter.group(4), quarter.group(3))
        start = datetime.datetime(int(year), 3 * int(q) - 2, 1)
        return start, _shift(start, "month", 3)
    if _ISO_DAY.match(text):
        day = _iso(text)
        return (day, day + datetime.timedelta(days=1)) if day else None
    if _ISO_MONTH.match(text):
        first = _iso(text + "-01")
        return (first, _shift(first, "month", 1)) if first else None
    if _YEAR.match(text):
        start = datetime.datetime(int(text), 1, 1)
        return start, _shift(start, "year", 1)
    parser = _parser()
    parser._settings.RELATIVE_BASE = now  # per call: the parser is shared, its settings object is not frozen
    data = parser.get_date_data(text)
    if data is None or data.date_obj is None:
        return None
    return _span(data.date_obj.replace(tzinfo=None), data.period or "day", today)


def _span(
    moment: datetime.datetime, period: str, today: datetime.datetime
) -> tuple[datetime.datetime, datetime.datetime]:
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "week":
        start = day - datetime.timedelta(days=day.weekday())
        return start, start + datetime.timedelta(days=7)
    if period == "month":
        start = day.replace(day=1)
        return start, _shift(start, "month", 1)
    if period == "quarter":
        start = day.replace(month=3 * ((day.month - 1) // 3) + 1, day=1)
        return start, _shift(start, "month", 3)
    if period == "year":
        start = day.replace(month=1, day=1)
        return start, _shift(start, "year", 1)
    if period == "time":
        return moment, moment + datetime.timedelta(hours=1)
    return day, day + datetime.timedelta(days=1)


def _shift(moment: datetime.datetime, unit: str, count: int) -> datetime.datetime:
    if unit == "day":
        return moment + datetime.timedelta(days=count)
    if unit == "week":
        return moment + datetime.timedelta(weeks=count)
    index = moment.year * 12 + moment.month - 1 + count * (12 if unit == "year" else 1)
    year, month = index // 12, index % 12 + 1
    return moment.replace(year=year, month=month, day=min(moment.day, calendar.monthrange(year, month)[1]))


def _iso(text: str) -> datetime.datetime | None:
    try:
        return datetime.datetime.fromisoformat(text)
    except ValueError:
        return None


def path_date(path: str) -> tuple[datetime.datetime, str] | None:
    """
    The date a file's name, else its folders, give it (`2024-05-11-standup.md`, `journal/2024/05/11.md`,
    `mochi-blood-test-2026-10.md`, `okrs-2025-q3.md`, `weekly-review-2026-w45.md`, `brittany-august-2025.md`,
    `budget-2024.txt`): the first day of the period named, the most precise reading first.

    :returns: The date (naive UTC) and where it was read (`file name` or `path`); `None` when neither has one.
    """
    from haystack_integrations.components.needle._date_phrases import month_number

    name = path.replace("\\", "/").rsplit("/", 1)
    stem = name[-1].rsplit(".", 1)[0] if "." in name[-1] else name[-1]
    whole = f"{name[0]}/{stem}" if len(name) > 1 else ""
    for text, source in ((stem, "file name"), (whole, "path")):
        found = _date_in(text, month_number)
        if found is not None:
            return found, source
    return None


def _date_in(text: str, month_number: Any) -> datetime.datetime | None:
    for pattern in (_PATH_DAY, _PATH_FOLDERS_DAY):
        for match in pattern.finditer(text):
            try:
                return datetime.datetime(int(match.group(1)), int(match.group(2)), int(match.group(3)))
            except ValueError:
                continue
    month = _PATH_MONTH.search(text)
    if month:
        return datetime.datetime(int(month.group(1)), int(month.group(2)), 1)
    quarter = _PATH_QUARTER.search(text)
    if quarter:
        year, number = quarter.group(1) or quarter.group(4), quarter.group(2) or quarter.group(3)
        return datetime.datetime(int(year), 3 * int(number) - 2, 1)
    week = _PATH_WEEK.search(text)
    if week:
        return datetime.datetime.fromisocalendar(int(week.group(1)), int(week.group(2)), 1)
    for word_match in re.finditer(r"[^\W\d_]+", text):
        month = month_number(word_match.group(0))
        if month is None:
            continue
        around = text[max(0, word_match.start() - 6) : word_match.end() + 6]
        year = re.search(r"(?:(?<=[-_ ])|^)((?:19|20)\d{2})(?:(?=[-_ ])|$)", around)
        if year:
            return datetime.datetime(int(year.group(1)), month, 1)
    for match in _PATH_YEAR.finditer(text):
        # a year alone, not a part of a longer run of numbers (`2023-13-40`, `v1.2024`)
        if not re.search(r"\d[-_.]?$", text[: match.start()]) and not re.match(r"[-_.]?\d", text[match.end() :]):
            return datetime.datetime(int(match.group(1)), 1, 1)
    return None


def rfc3339(moment: datetime.datetime) -> str:
    """A naive UTC datetime as the store's datetime payload reads it."""
    return moment.replace(microsecond=0).isoformat() + "Z"


def parse_bound(text: str, now: datetime.datetime, end: bool = False) -> datetime.datetime:
    """
    One bound of a date range given by a person (`--after 2024-05-01`, `--before "last week"`).

    :param text: An ISO date or time, or any expression `period_range` reads.
    :param now: The reference time.
    :param end: Take the end of the named span instead of its start.
    :returns: The bound (naive UTC).
    :raises ValueError: When the text is not a date.
    """
    stripped = text.strip()
    if "T" in stripped or (" " in stripped and _ISO_DAY.match(stripped.split(" ")[0])):
        try:
            return reference_time(stripped)
        except ValueError:
            pass
    span = period_range(stripped, now)
    if span is None:
        raise ValueError(f"not a date: {text!r} (use 2024-05-01, 2024-05, 'last week', 'March 2024'...)")
    return span[1] if end else span[0]
