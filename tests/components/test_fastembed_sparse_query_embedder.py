import re

import pytest

from haystack_integrations.components.embedders.fastembed import (
    FastembedSparseTextEmbedder,
)
from haystack_integrations.components.embedders.needle.fastembed_sparse_query_embedder import (
    FastembedSparseQueryEmbedder,
)
from needle.core.model_files import BM25_MODEL, sparse_embedder_params


@pytest.fixture
def params(model_dir):
    return sparse_embedder_params(BM25_MODEL, model_dir)


class TestFastembedSparseQueryEmbedder:
    def test_round_trip_keeps_the_type(self, params):
        embedder = FastembedSparseQueryEmbedder(**params)
        data = embedder.to_dict()
        assert (
            data["type"]
            == "haystack_integrations.components.embedders.needle.fastembed_sparse_query_embedder.FastembedSparseQueryEmbedder"
        )
        assert FastembedSparseQueryEmbedder.from_dict(data).to_dict() == data

    def test_init_keeps_a_language_holding_a_fifth_as_a_main_one(self, params):
        data = FastembedSparseQueryEmbedder(**params).to_dict()["init_parameters"]
        assert data["min_share"] == 0.2 and data["compounds"] == "affixes"

    def test_rejects_a_share_outside_zero_to_one(self, params):
        with pytest.raises(ValueError, match=re.escape("min_share must be between 0 and 1, got 1.5")):
            FastembedSparseQueryEmbedder(**params, min_share=1.5)

    def test_a_sliver_of_misread_chunks_does_not_analyse_every_query(self, params):
        embedder = FastembedSparseQueryEmbedder(**params)
        counts = {"english": 3630, "french": 2, "spanish": 1}
        assert embedder.analyses("0-dimensional biomaterials show inductive properties", counts) == ["english"]
        assert embedder.analyses("la sauvegarde de la base de données", counts) == ["english", "french"]

    def test_the_querys_own_language_joins_the_main_ones(self, params):
        embedder = FastembedSparseQueryEmbedder(**params)
        assert embedder.analyses("Sicherung", {"english": 40, "german": 1}) == ["english", "german"]
        assert embedder.analyses("Sicherung", {"english": 40}) == ["english"]  # no German text to find
        assert embedder.analyses("backup", {"english": 20, "german": 10, "chinese": 10}) == [
            "chinese",
            "english",
            "german",
        ]
        assert embedder.analyses("人工智能", {"english": 40, "chinese": 1}) == ["chinese", "english"]
        assert embedder.analyses("x", None) == ["english"]

    def test_han_characters_alone_are_read_as_every_cjk_language_held(self, params):
        embedder = FastembedSparseQueryEmbedder(**params)
        # Kanji: a sliver of Japanese among English notes is searched by `予算会議` as by `予算会議は`.
        assert embedder.analyses("予算会議", {"english": 90, "japanese": 10}) == ["english", "japanese"]
        assert embedder.analyses("月曜日", {"english": 90, "japanese": 5, "chinese": 5}) == [
            "chinese",
            "english",
            "japanese",
        ]
        assert embedder.analyses("予算会議は", {"english": 90, "japanese": 10, "chinese": 5}) == [
            "english",
            "japanese",
        ]  # kana: Japanese alone
        assert embedder.analyses("budget meeting", {"english": 90, "japanese": 10}) == ["english"]

    def test_rejects_non_strings(self, params):
        with pytest.raises(TypeError, match="expects a string"):
            FastembedSparseQueryEmbedder(**params).run(text=["a list"])

    @pytest.mark.integration
    def test_query_terms_weigh_one_each_unlike_the_document_side(self, params):
        query = FastembedSparseQueryEmbedder(**params).run(text="replication replication slot")["sparse_embedding"]
        as_document = FastembedSparseTextEmbedder(**params).run(text="replication replication slot")["sparse_embedding"]
        assert sorted(query.values) == [1.0, 1.0]  # distinct stemmed terms, weight 1: the store's IDF does the rest
        assert len(as_document.indices) == 2 and max(as_document.values) > min(as_document.values)

    @pytest.mark.integration
    def test_english_alone_is_the_models_own_analysis(self, params):
        embedder = FastembedSparseQueryEmbedder(**params)
        plain = embedder.run(text="houses by the lake")["sparse_embedding"]
        assert embedder.run(text="houses by the lake", languages=["english"])["sparse_embedding"] == plain
        assert embedder.run(text="houses by the lake", languages=["auto"])["sparse_embedding"] == plain

    @pytest.mark.integration
    def test_a_query_is_analysed_in_each_language_searched(self, params):
        embedder = FastembedSparseQueryEmbedder(**params)
        english = set(embedder.run(text="Häuser")["sparse_embedding"].indices)
        german = set(embedder.run(text="Häuser", languages=["german"])["sparse_embedding"].indices)
        both = embedder.run(text="Häuser", languages=["english", "german"])["sparse_embedding"]
        assert english != german and set(both.indices) == english | german
        assert both.values == [1.0] * len(both.indices) and both.indices == sorted(both.indices)
        pairs = embedder.run(text="机器学习", languages=["chinese"])["sparse_embedding"]
        assert len(pairs.indices) == 3  # 机器 器学 学习

    @pytest.mark.integration
    @pytest.mark.parametrize(
        "typed, written",
        [
            ("istanbul", "İstanbul"),
            ("ISTAKOZ", "ıstakoz"),
            ("strasse", "Straße"),
            ("zerowidth", "zero\u200bwidth"),
            ("righttoleft", "right\u200fto\u200eleft"),
            ("ｆｕｌｌ", "full"),
        ],
    )
    def test_a_query_is_read_as_people_read_it(self, params, typed, written):
        embedder = FastembedSparseQueryEmbedder(**params)
        assert embedder.run(text=typed)["sparse_embedding"] == embedder.run(text=written)["sparse_embedding"]

    def test_rejects_an_unknown_language(self, params):
        with pytest.raises(ValueError, match="language must be auto or one of"):
            FastembedSparseQueryEmbedder(**params).run(text="x", languages=["klingon"])
