import datetime
from pathlib import Path

import pytest
import yaml

from haystack_integrations.components.needle._date_phrases import find_dates, month_number, phrase_range

DATES = yaml.safe_load((Path(__file__).parents[2] / "eval" / "golden" / "dates.yml").read_text())
TODAY = datetime.datetime.fromisoformat(str(DATES["today"]))
PHRASES = DATES["phrases"]
DATED = [p for p in PHRASES if p["start"]]
UNDATED = [p for p in PHRASES if not p["start"]]


def days(span):
    return None if span is None else (span[0].date().isoformat(), span[1].date().isoformat())


def expected(phrase):
    return (str(phrase["start"]), str(phrase["end"]))


class TestDatePhrases:
    def test_the_golden_set_holds_phrases_in_three_languages_and_traps(self):
        assert len(PHRASES) == 92 and len(UNDATED) == 14
        assert {p["lang"] for p in PHRASES} == {"en", "de", "fr"}

    @pytest.mark.parametrize("phrase", DATED, ids=[p["text"] for p in DATED])
    def test_each_phrase_alone_names_its_range(self, phrase):
        assert days(phrase_range(phrase["text"], TODAY)) == expected(phrase)

    @pytest.mark.parametrize("phrase", DATED, ids=[p["text"] for p in DATED])
    def test_each_phrase_is_found_in_its_question(self, phrase):
        mentions = find_dates(phrase["question"], TODAY)
        assert [days(m.range) for m in mentions] == [expected(phrase)]
        assert phrase["text"].lower() in mentions[0].text.lower()

    @pytest.mark.parametrize("phrase", UNDATED, ids=[p["text"] for p in UNDATED])
    def test_words_that_only_look_like_dates_are_not_read(self, phrase):
        assert find_dates(phrase["question"], TODAY) == []

    @pytest.mark.parametrize(
        "text, after, before, side",
        [
            ("changes since 2024-05", "2024-05-01", None, "since"),
            ("deploys after May", "2024-06-01", None, "after"),
            ("postmortems before 2024", None, "2024-01-01", "before"),
            ("plans until March 2024", None, "2024-04-01", "until"),
            ("Protokolle vor 2024", None, "2024-01-01", "before"),
            ("notes depuis mars 2024", "2024-03-01", None, "since"),
            ("sepsis mortality from 2009 to 2014", "2009-01-01", "2015-01-01", "span"),
            ("syncs between March and May 2024", "2024-03-01", "2024-06-01", "span"),
            ("Notizen von März bis Mai 2024", "2024-03-01", "2024-06-01", "span"),
        ],
    )
    def test_bounds_and_spans_give_one_side_or_both(self, text, after, before, side):
        (mention,) = find_dates(text, datetime.datetime(2024, 6, 15, 12))
        assert (mention.side, mention.after and mention.after.date().isoformat()) == (side, after)
        assert (mention.before and mention.before.date().isoformat()) == before

    def test_a_relative_date_says_so_and_an_absolute_one_too(self):
        kinds = [m.kind for m in find_dates("kickoff in March 2024 and the retro last week", TODAY)]
        assert kinds == ["absolute", "relative"]

    @pytest.mark.parametrize(
        "text",
        [
            "what runs are in the last week of the marathon plan?",
            "which numbers from last year's return do I need?",
            "what does this tag mean on the NAS port?",
            "a Q3 launch for marketplace payouts",
            "busy_timeout of 2000 milliseconds",
            "Mom Test: ask how much the problem is costing them today",
            "Was machst du hier?",
        ],
    )
    def test_a_period_of_something_else_is_not_a_date(self, text):
        assert find_dates(text, TODAY) == []

    def test_month_names_in_file_names_are_full_words_only(self):
        assert (month_number("August"), month_number("octobre"), month_number("März")) == (8, 10, 3)
        assert (month_number("mar"), month_number("may"), month_number("notes")) == (None, 5, None)

    def test_a_bound_given_by_a_person_reads_the_same_phrases(self):
        from haystack_integrations.components.needle._dates import parse_bound

        assert parse_bound("letzten Monat", TODAY).date().isoformat() == "2026-10-01"
        assert parse_bound("en mars dernier", TODAY, end=True).date().isoformat() == "2026-04-01"
        assert parse_bound("2024-05-01", TODAY).date().isoformat() == "2024-05-01"
