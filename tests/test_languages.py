"""Keyword search in other languages than English: the analysis, telling languages apart, and end to end."""

import pytest

from needle.core.collections import CollectionError
from needle.core.languages import (
    bm25_kwargs,
    check_language,
    chunk_language,
    cjk_pairs,
    compound_parts,
    detect,
    fold,
    identify,
    main_languages,
    normalise,
    prepare,
    script_languages,
)
from needle.core.requests import IndexRequest, SearchRequest
from needle.facade.api import Needle
from tests.conftest import make_settings

ENGLISH_NOTES = {
    "tea.md": "# Green tea\n\nBrew at 75 degrees for two minutes, never with boiling water, or it turns bitter.\n",
    "bread.md": "# Sourdough\n\nFeed the starter twice a day with rye flour and keep it somewhere warm.\n",
    "bike.md": "# Flat tyre\n\nFind the hole in the inner tube by the bubbles under water, then glue a patch on.\n",
    "laptop.md": "# New laptop\n\nInstall the password manager first and turn on disk encryption.\n",
    "garden.md": "# Watering\n\nThe tomatoes need water every morning in July, the beans every second day.\n",
    "deploy.md": "# Deploy\n\nMerge to main, wait for the pipeline to pass, then run the deploy job by hand.\n",
    "coffee.md": "# Coffee machine\n\nDescale the coffee machine every month with citric acid.\n",
    "running.md": "# Running\n\nThree runs a week: a long one on Sunday, intervals on Tuesday, an easy one on Thursday.\n",
    "taxes.md": "# Taxes\n\nReceipts for donations go in the blue folder; the deadline is the end of July.\n",
    "birds.md": "# Birds\n\nGreat tits and blue tits come to the feeder every morning; sunflower seeds go fastest.\n",
    "meeting.md": "# Planning\n\nWe moved the release to March because the payment provider changes its API.\n",
    "onboarding.md": "# Onboarding\n\nGive new engineers a laptop on day one and a buddy for their first two weeks.\n",
}
GERMAN_NOTE = "# Datenbank\n\nDie Sicherungen der Kundendatenbank laufen jede Nacht um drei Uhr."
ODD_NOTES = {
    "quote.md": "# Quote\n\nLa vie est un sommeil, l'amour en est le rêve, et vous aurez vécu si vous avez aimé.\n",
    "menu.md": "# Menu\n\nAntipasto misto, spaghetti alle vongole e tiramisù della nonna per il dolce.\n",
}


class TestAnalysis:
    def test_cjk_runs_become_overlapping_pairs_and_other_text_stays(self):
        assert cjk_pairs("机器学习").split() == ["机器", "器学", "学习"]
        assert cjk_pairs("Python 入门 和 numpy").split() == ["Python", "入门", "和", "numpy"]
        assert cjk_pairs("東京タワー").split() == ["東京", "京タ", "タワ", "ワー"]

    @pytest.mark.parametrize(
        ("text", "language"),
        [
            ("Die Häuser am See sind im Winter nicht bewohnt, und der Weg ist mit Schnee bedeckt.", "german"),
            ("Les maisons au bord du lac ne sont pas habitées pendant l'hiver et la route est fermée.", "french"),
            ("The houses by the lake are not lived in during the winter, and the road is closed.", "english"),
            ("机器学习是人工智能的一个分支，它研究计算机怎样模拟人类的学习行为。", "chinese"),
            ("これは日本語の文章です。東京タワーに行きました。", "japanese"),
            ("한국어 문장입니다. 서울에 갔습니다.", "korean"),
        ],
    )
    def test_detect_tells_languages_apart(self, text, language):
        assert detect(text) == language

    def test_unclear_text_is_the_fallback(self):
        assert detect("def main(): return 0") == "english"
        assert detect("x = 1", fallback="german") == "german"
        assert detect("backup", fallback="french") == "french"

    @pytest.mark.parametrize("text", ["Sicherung", "Notizen verknüpfen", GERMAN_NOTE])
    def test_short_german_is_most_likely_german(self, text):
        assert identify(text)[0] == "german"

    def test_a_short_german_note_is_told_clearly(self):
        assert detect(GERMAN_NOTE) == "german"
        assert (
            detect("# Notizen verknüpfen\n\nVerweise zwischen Notizen mit doppelten eckigen Klammern setzen.")
            == "german"
        )

    def test_a_query_is_told_among_the_languages_searched(self):
        assert identify("Où est la sauvegarde ?")[0] == "french"
        assert identify("backup", among=["english", "german"])[0] in ("english", "german")
        assert identify("机器学习", among=["english", "german"]) == (None, 0.0)

    def test_a_short_chunk_keeps_its_files_language_and_a_long_one_clearly_in_another_leaves_it(self):
        assert chunk_language("La casa della nonna è vicino al mare.", "english") == "english"
        german = "Der Sauerteig wird zweimal am Tag gefüttert und steht an einem warmen Platz in der Küche. " * 3
        assert chunk_language(german, "english") == "german"
        assert chunk_language("東京タワーに行きました。" * 30, "chinese") == "chinese"  # analysed alike

    def test_a_sliver_of_chunks_is_no_main_language(self):
        assert main_languages({"english": 3630, "french": 2, "spanish": 1}, 0.1) == ["english"]
        assert main_languages({"english": 60, "german": 40}, 0.1) == ["english", "german"]
        assert main_languages({"english": 1, "german": 1}, 1.0) == ["english"]  # the largest always; ties: English
        assert main_languages({}, 0.1) == []

    def test_german_compounds_bring_their_parts(self):
        parts = compound_parts("Kundendatenbank")
        assert {"kunden", "datenbank", "bank"} <= set(parts)
        assert compound_parts("Datenbank") == []  # under ten letters
        assert compound_parts("Kundendatenbank", "none") == []
        assert "date" in compound_parts("Kundendatenbank", "ngrams")
        assert "datenbank" in prepare(GERMAN_NOTE, "german").split()
        assert prepare(GERMAN_NOTE, "english") == GERMAN_NOTE

    def test_accents_fold_where_the_language_folds_them(self):
        assert fold("Crêpes, œufs, Straße") == "Crepes, oeufs, Strasse"
        stemmer = bm25_kwargs("french")["stemmer"]
        assert stemmer.stem_word("crêpes") == stemmer.stem_word("crepes") == "crep"
        assert "stemmer" not in bm25_kwargs("english") and "stemmer" not in bm25_kwargs("swedish")

    @pytest.mark.parametrize(
        "written, read",
        [
            ("İstanbul", "istanbul"),
            ("ISTANBUL", "istanbul"),
            ("ıstakoz", "istakoz"),
            ("ISTAKOZ", "istakoz"),
            ("Straße", "strasse"),
            ("STRASSE", "strasse"),
            ("zero\u200bwidth", "zerowidth"),
            ("soft\u00adhyphen", "softhyphen"),
            ("\u202bمرحبا\u202c", "مرحبا"),
            ("ＮＡＳ ﬁle", "nas file"),
            ("ΣΟΦΟΣ", "σοφοσ"),
            ("Plain ASCII", "plain ascii"),
        ],
    )
    def test_normalise_reads_text_as_people_read_it(self, written, read):
        assert normalise(written) == read

    def test_han_alone_may_be_any_cjk_language(self):
        assert script_languages("予算会議") == ("chinese", "japanese", "korean")
        assert script_languages("予算会議は") == ("japanese",)
        assert script_languages("예산 회의") == ("korean",)
        assert script_languages("budget") == ()

    def test_check_language(self):
        assert check_language(" German ") == "german"
        assert check_language("auto") == "auto"
        with pytest.raises(ValueError, match="language must be auto or one of arabic, chinese"):
            check_language("klingon")


@pytest.mark.integration
class TestKeywordSearchInOtherLanguages:
    @pytest.fixture
    def needle(self, settings, tmp_path) -> Needle:
        german = tmp_path / "de"
        german.mkdir()
        (german / "haus.md").write_text("# Das Haus\n\nDas Haus am See ist im Winter nicht bewohnt.\n")
        (german / "garten.md").write_text("# Garten\n\nIm Garten wachsen Tomaten und Bohnen.\n")
        chinese = tmp_path / "zh"
        chinese.mkdir()
        (chinese / "ml.md").write_text(
            "# 机器学习\n\n机器学习是人工智能的一个分支，研究计算机怎样模拟人类的学习行为。\n"
        )
        (chinese / "cooking.md").write_text("# 做饭\n\n红烧肉需要慢火炖两个小时，再加冰糖收汁。\n")
        n = Needle(settings)
        n.collections.add(german, "de", language="german")
        n.collections.add(chinese, "zh")  # auto: told per file
        n.index(IndexRequest())
        yield n
        n.close()

    def paths(self, needle: Needle, query: str, **kwargs) -> list[str]:
        return [hit.path for hit in needle.search(SearchRequest(query=query, **kwargs), pipeline="search").results]

    def test_german_matches_other_forms_of_a_word(self, needle):
        assert self.paths(needle, "Häuser", collections=["de"])[:1] == ["haus.md"]
        assert needle.query_languages(["de"]) == {"german": 2}

    def test_chinese_matches_words_inside_sentences(self, needle):
        assert self.paths(needle, "人工智能")[:1] == ["ml.md"]
        assert self.paths(needle, "小时", collections=["zh"])[:1] == ["cooking.md"]
        assert needle.query_languages(["zh"]) == {"chinese": 2}
        assert needle.query_languages() == {"chinese": 2, "german": 2}

    def test_the_english_analysis_finds_nothing_in_chinese(self, needle, tmp_path):
        # What keyword search did before: a Chinese sentence was one term, which no query matches.
        needle.collections.add(tmp_path / "zh", "zh", language="english")
        needle.index(IndexRequest(collections=["zh"], rebuild=True))
        assert self.paths(needle, "人工智能", collections=["zh"]) == []

    def test_a_stray_chunk_in_another_language_leaves_queries_in_the_files_language(self, needle, tmp_path):
        notes = tmp_path / "en"
        notes.mkdir()
        section = "The starter needs feeding twice a day and it should be kept in a warm place in the kitchen. " * 4
        quote = "La casa della nonna è vicino al mare e il gatto dorme sul divano tutto il giorno."
        (notes / "bread.md").write_text(
            f"# Bread\n\n## Feeding\n\n{section}\n\n## A quote\n\n{quote}\n\n## Baking\n\n{section}\n"
        )
        needle.collections.add(notes, "en")
        needle.index(IndexRequest(collections=["en"]))
        assert set(needle.query_languages(["en"])) == {"english"}
        (notes / "bread.md").write_text("# Pane\n\n" + quote * 3 + "\n")
        needle.index(IndexRequest(collections=["en"]))  # the collection's languages are what its chunks are in now
        assert set(needle.query_languages(["en"])) == {"italian"}

    def test_an_index_that_recorded_only_language_names_is_counted_at_the_next_run(self, needle):
        from needle.lifecycle import provenance as index_info

        info = index_info.read(needle.settings)
        index_info._write(needle.settings, {**info, "languages": {"de": ["german"], "zh": ["chinese", "italian"]}})
        assert needle.query_languages(["zh"]) == {"chinese": 1, "italian": 1}
        assert needle.index(IndexRequest()).chunks_embedded == 0  # nothing changed, yet the chunks are counted
        assert needle.query_languages() == {"chinese": 2, "german": 2}

    def test_an_unknown_language_is_refused(self, needle, tmp_path):
        with pytest.raises(CollectionError, match="language must be auto or one of"):
            needle.collections.add(tmp_path / "de", "de", language="klingon")


SCRIPT_NOTES = {
    **ENGLISH_NOTES,
    "trip.md": "# Trip\n\nThree days in İstanbul: the ferry to Kadıköy and dinner at the fish market.\n",
    "menu.md": "# Balık\n\nIzgara ıstakoz ve midye dolma, Cuma akşamı.\n",
    "street.md": "# Umzug\n\nDie neue Wohnung liegt in der Goethestraße, dritter Stock.\n",
    "glitch.md": "# Pasted\n\nThe zero\u200bwidth space came in with text copied from a web page.\n",
    "greek.md": "# Σημειώσεις\n\nΟ ΣΟΦΟΣ δάσκαλος είπε να διαβάζουμε κάθε πρωί.\n",
    "kiev.md": "# Поездка\n\nПОЕЗДКА в Киев была в мае, поезд шёл всю ночь.\n",
}

JAPANESE_NOTES = {
    "yosan.md": "# 予算会議\n\n予算会議は来週の月曜日に開かれます。営業部の予算を見直します。\n",
    "shuukai.md": "# 週次定例\n\n毎週水曜日の朝に定例会があります。議事録は共有フォルダに置きます。\n",
}


@pytest.mark.integration
class TestWordsWrittenInOtherScriptsAndCases:
    """Keyword search and the exact-term signals read text as people read it, in several scripts."""

    @pytest.fixture(scope="class")
    def needle(self, tmp_path_factory, model_dir) -> Needle:
        notes = tmp_path_factory.mktemp("scripts")
        for name, text in SCRIPT_NOTES.items():
            (notes / name).write_text(text)
        n = Needle(make_settings(tmp_path_factory.mktemp("scripts-data"), model_dir))
        n.collections.add(notes, "notes")
        n.index(IndexRequest())
        yield n
        n.close()

    @pytest.mark.parametrize(
        "query, path",
        [
            ("istanbul", "trip.md"),
            ("ISTANBUL ferry", "trip.md"),
            ("KADIKÖY", "trip.md"),
            ("ISTAKOZ", "menu.md"),
            ("goethestrasse", "street.md"),
            ("zerowidth", "glitch.md"),
            ("σοφοσ", "greek.md"),
            ("поездка", "kiev.md"),
        ],
    )
    def test_a_word_is_found_whatever_its_case_marks_or_invisible_characters(self, needle, query, path):
        assert [hit.path for hit in needle.search(SearchRequest(query=query), pipeline="search").results][:1] == [path]

    def test_an_identifier_in_another_case_counts_as_held_by_the_top_result(self, needle):
        answer = needle.search(SearchRequest(query="ISTANBUL", explain=True), pipeline="query")
        assert answer.results[0].path == "trip.md"
        assert answer.explain["confidence"]["exact"] == 1.0


@pytest.mark.integration
class TestHanOnlyQueriesInAMostlyEnglishCollection:
    """Kanji-only queries find the few Japanese notes of an English collection (under a fifth of its chunks)."""

    @pytest.fixture(scope="class")
    def needle(self, tmp_path_factory, model_dir) -> Needle:
        notes = tmp_path_factory.mktemp("kanji")
        for name, text in {**ENGLISH_NOTES, **JAPANESE_NOTES}.items():
            (notes / name).write_text(text)
        n = Needle(make_settings(tmp_path_factory.mktemp("kanji-data"), model_dir))
        n.collections.add(notes, "notes")
        n.index(IndexRequest())
        yield n
        n.close()

    @pytest.mark.parametrize("query", ["予算会議", "月曜日", "予算会議は", "予算"])
    @pytest.mark.parametrize("pipeline", ["search", "query"])
    def test_kanji_alone_find_the_japanese_note(self, needle, query, pipeline):
        assert needle.query_languages() == {"english": 12, "japanese": 2}
        assert [hit.path for hit in needle.search(SearchRequest(query=query), pipeline=pipeline).results][:1] == [
            "yosan.md"
        ]


@pytest.mark.integration
class TestLanguagesOfAMostlyEnglishCollection:
    @pytest.fixture(scope="class")
    def needle(self, tmp_path_factory, model_dir) -> Needle:
        notes = tmp_path_factory.mktemp("mostly-english")
        for name, text in {**ENGLISH_NOTES, **ODD_NOTES, "datenbank.md": GERMAN_NOTE}.items():
            (notes / name).write_text(text)
        n = Needle(make_settings(tmp_path_factory.mktemp("mostly-english-data"), model_dir))
        n.collections.add(notes, "notes")
        n.index(IndexRequest())
        yield n
        n.close()

    def paths(self, needle: Needle, query: str) -> list[str]:
        return [hit.path for hit in needle.search(SearchRequest(query=query), pipeline="search").results]

    def test_a_short_german_note_is_found_by_another_form_of_its_words(self, needle):
        assert needle.query_languages() == {"english": 12, "french": 1, "german": 1, "italian": 1}
        assert self.paths(needle, "Sicherung")[:1] == ["datenbank.md"]
        assert self.paths(needle, "Sicherungen")[:1] == ["datenbank.md"]

    def test_a_german_compound_is_found_by_its_parts(self, needle):
        assert self.paths(needle, "Kunden")[:1] == ["datenbank.md"]
        assert self.paths(needle, "Datenbank")[:1] == ["datenbank.md"]

    def test_a_few_odd_files_leave_english_queries_analysed_in_english_alone(self, needle):
        embedder = needle.pipeline("search").get_component("bm25_embedder")
        languages = needle.query_languages()
        assert embedder.analyses("how often do the tomatoes need water", languages) == ["english"]
        assert embedder.analyses("descale the coffee machine", languages) == ["english"]
        assert embedder.analyses("Wann laufen die Sicherungen?", languages) == ["english", "german"]
        assert self.paths(needle, "tomatoes water")[:1] == ["garden.md"]
