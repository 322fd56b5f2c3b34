"""Keyword search in other languages than English: the analysis, telling languages apart, and end to end."""

import pytest

from needle.app import Needle
from needle.collections import CollectionError
from needle.languages import check_language, cjk_pairs, detect


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
        (chinese / "ml.md").write_text("# 机器学习\n\n机器学习是人工智能的一个分支，研究计算机怎样模拟人类的学习行为。\n")
        (chinese / "cooking.md").write_text("# 做饭\n\n红烧肉需要慢火炖两个小时，再加冰糖收汁。\n")
        n = Needle(settings)
        n.collections.add(german, "de", language="german")
        n.collections.add(chinese, "zh")  # auto: told per file
        n.index()
        yield n
        n.close()

    def paths(self, needle: Needle, query: str, **kwargs) -> list[str]:
        return [hit.path for hit in needle.search(query, pipeline="search", **kwargs).results]

    def test_german_matches_other_forms_of_a_word(self, needle):
        assert self.paths(needle, "Häuser", collections=["de"])[:1] == ["haus.md"]
        assert needle.query_languages(["de"]) == ["german"]

    def test_chinese_matches_words_inside_sentences(self, needle):
        assert self.paths(needle, "人工智能")[:1] == ["ml.md"]
        assert self.paths(needle, "小时", collections=["zh"])[:1] == ["cooking.md"]
        assert needle.query_languages(["zh"]) == ["chinese"]
        assert needle.query_languages() == ["chinese", "german"]

    def test_the_english_analysis_finds_nothing_in_chinese(self, needle, tmp_path):
        # What keyword search did before: a Chinese sentence was one term, which no query matches.
        needle.collections.add(tmp_path / "zh", "zh", language="english")
        needle.index(["zh"], rebuild=True)
        assert self.paths(needle, "人工智能", collections=["zh"]) == []

    def test_a_stray_chunk_in_another_language_leaves_queries_in_the_files_language(self, needle, tmp_path):
        notes = tmp_path / "en"
        notes.mkdir()
        section = "The starter needs feeding twice a day and it should be kept in a warm place in the kitchen. " * 4
        quote = "La casa della nonna è vicino al mare e il gatto dorme sul divano tutto il giorno."
        (notes / "bread.md").write_text(f"# Bread\n\n## Feeding\n\n{section}\n\n## A quote\n\n{quote}\n\n## Baking\n\n{section}\n")
        needle.collections.add(notes, "en")
        needle.index(["en"])
        assert needle.query_languages(["en"]) == ["english"]
        (notes / "bread.md").write_text("# Pane\n\n" + quote * 3 + "\n")
        needle.index(["en"])  # the collection's languages are what its chunks are in now
        assert needle.query_languages(["en"]) == ["italian"]

    def test_an_unknown_language_is_refused(self, needle, tmp_path):
        with pytest.raises(CollectionError, match="language must be auto or one of"):
            needle.collections.add(tmp_path / "de", "de", language="klingon")
