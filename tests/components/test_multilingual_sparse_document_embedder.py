import pytest
from haystack import Document

from haystack_integrations.components.embedders.fastembed import (
    FastembedSparseDocumentEmbedder,
)
from haystack_integrations.components.embedders.needle.fastembed_sparse_query_embedder import (
    FastembedSparseQueryEmbedder,
)
from haystack_integrations.components.embedders.needle.multilingual_sparse_document_embedder import (
    MultilingualSparseDocumentEmbedder,
)
from needle.core.model_files import BM25_MODEL, sparse_embedder_params


@pytest.fixture
def params(model_dir):
    return {**sparse_embedder_params(BM25_MODEL, model_dir), "progress_bar": False}


def doc(text: str, collection: str) -> Document:
    return Document(content=text, meta={"collection": collection})


class TestMultilingualSparseDocumentEmbedder:
    def test_init_defaults_are_the_parents_and_german_compounds_by_their_affixes(self, params):
        embedder = MultilingualSparseDocumentEmbedder(**params)
        parent = FastembedSparseDocumentEmbedder(**params)
        assert embedder.to_dict()["init_parameters"] == {**parent.to_dict()["init_parameters"], "compounds": "affixes"}

    def test_rejects_an_unknown_way_of_splitting_compounds(self, params):
        with pytest.raises(ValueError, match="compounds must be one of affixes, ngrams, none, got 'dictionary'"):
            MultilingualSparseDocumentEmbedder(**params, compounds="dictionary")

    def test_round_trip_keeps_the_type(self, params):
        data = MultilingualSparseDocumentEmbedder(
            **params, meta_fields_to_embed=["context"], compounds="ngrams"
        ).to_dict()
        assert data["init_parameters"]["compounds"] == "ngrams"
        assert (
            data["type"]
            == "haystack_integrations.components.embedders.needle.multilingual_sparse_document_embedder.MultilingualSparseDocumentEmbedder"
        )
        assert MultilingualSparseDocumentEmbedder.from_dict(data).to_dict() == data

    def test_rejects_what_is_not_documents_and_unknown_languages(self, params):
        embedder = MultilingualSparseDocumentEmbedder(**params)
        with pytest.raises(TypeError, match="list of Documents"):
            embedder.run(documents=["text"])
        with pytest.raises(ValueError, match="language must be auto or one of"):
            embedder.run(documents=[doc("x", "notes")], languages={"notes": "elvish"})

    def test_the_model_loads_on_the_first_documents_not_on_warm_up(self, params):
        embedder = MultilingualSparseDocumentEmbedder(**params)
        embedder.warm_up()
        assert embedder.run(documents=[], languages={"notes": "german"}) == {"documents": [], "languages": {}}
        assert embedder.embedding_backend is None
        with pytest.raises(ValueError, match="language must be auto or one of"):
            embedder.run(documents=[], languages={"notes": "elvish"})
        embedder.run(documents=[doc("Feed the starter", "notes")])
        assert embedder.embedding_backend is not None

    @pytest.mark.integration
    def test_english_documents_are_embedded_as_the_parent_embeds_them(self, params):
        docs = [doc("Feed the starter twice a day", "notes"), doc("Restic backs the laptop up", "notes")]
        parent = FastembedSparseDocumentEmbedder(**params).run(documents=docs)["documents"]
        for languages in (None, {"notes": "english"}, {"notes": "auto"}):
            out = MultilingualSparseDocumentEmbedder(**params).run(documents=docs, languages=languages)
            assert [d.sparse_embedding for d in out["documents"]] == [d.sparse_embedding for d in parent]
            assert out["languages"] == {"notes": {"english": 2}}
        assert all("language" not in d.meta for d in docs)  # the input is left as it was

    @pytest.mark.integration
    def test_in_an_auto_collection_a_files_chunks_take_the_files_language(self, params):
        english = "The starter needs feeding twice a day and it should be kept in a warm place in the kitchen. "
        italian = "La casa della nonna è vicino al mare e il gatto dorme sul divano tutto il giorno."
        docs = [
            Document(content=english * 3, meta={"collection": "n", "source_doc_id": "n:a.md"}),
            Document(content=italian, meta={"collection": "n", "source_doc_id": "n:a.md"}),
            Document(
                content=(english * 3) + italian, meta={"collection": "n", "source_doc_id": "n:a.md", "kind": "file"}
            ),
            Document(content=italian * 2, meta={"collection": "n", "source_doc_id": "n:b.md"}),
            Document(content=italian, meta={"collection": "fixed", "source_doc_id": "fixed:c.md"}),
        ]
        out = MultilingualSparseDocumentEmbedder(**params).run(
            documents=docs, languages={"n": "auto", "fixed": "german"}
        )
        assert [d.meta["language"] for d in out["documents"]] == ["english", "english", "english", "italian", "german"]
        assert out["languages"] == {"n": {"english": 3, "italian": 1}, "fixed": {"german": 1}}

    @pytest.mark.integration
    def test_a_long_chunk_clearly_in_another_language_leaves_its_files(self, params):
        english = "The starter needs feeding twice a day and it should be kept in a warm place in the kitchen. " * 4
        german = "Der Sauerteig wird zweimal am Tag gefüttert und steht an einem warmen Platz in der Küche. " * 4
        docs = [
            Document(content=english, meta={"collection": "n", "source_doc_id": "n:a.md"}),
            Document(content=german, meta={"collection": "n", "source_doc_id": "n:a.md"}),
            Document(
                content=english + english + german, meta={"collection": "n", "source_doc_id": "n:a.md", "kind": "file"}
            ),
        ]
        out = MultilingualSparseDocumentEmbedder(**params).run(documents=docs, languages={"n": "auto"})
        assert [d.meta["language"] for d in out["documents"]] == ["english", "german", "english"]

    @pytest.mark.integration
    def test_an_unclear_file_takes_its_collections_main_language(self, params):
        german = "Die Heizkörper bleiben oben kalt, wenn Luft im System ist; dann den Schlüssel ansetzen."
        docs = [
            Document(content="Inventar: 3 × 12 V, 2 × 230 V", meta={"collection": "n", "source_doc_id": "n:a.md"}),
            Document(content=german, meta={"collection": "n", "source_doc_id": "n:b.md"}),
            Document(content="x = 1", meta={"collection": "m", "source_doc_id": "m:c.md"}),
        ]
        embedder = MultilingualSparseDocumentEmbedder(**params)
        out = embedder.run(documents=docs, languages={"n": "auto", "m": "auto"})
        assert [d.meta["language"] for d in out["documents"]] == ["german", "german", "english"]
        out = embedder.run(documents=docs[2:], languages={"m": "auto"}, main_languages={"m": "french"})
        assert [d.meta["language"] for d in out["documents"]] == ["french"]

    @pytest.mark.integration
    def test_each_collection_in_its_language_and_auto_per_document(self, params):
        docs = [
            doc("Das Haus am See ist im Winter nicht bewohnt", "de"),
            doc("机器学习是人工智能的一个分支", "mixed"),
            doc("The house by the lake is not lived in during the winter", "mixed"),
        ]
        out = MultilingualSparseDocumentEmbedder(**params).run(
            documents=docs, languages={"de": "german", "mixed": "auto"}
        )
        assert [d.meta["language"] for d in out["documents"]] == ["german", "chinese", "english"]
        assert out["languages"] == {"de": {"german": 1}, "mixed": {"chinese": 1, "english": 1}}
        query = FastembedSparseQueryEmbedder(**{k: v for k, v in params.items() if k != "progress_bar"})
        german = query.run(text="Häuser", languages=["german"])["sparse_embedding"]
        assert set(german.indices) <= set(out["documents"][0].sparse_embedding.indices)  # Häuser and Haus: one stem
        chinese = query.run(text="学习", languages=["chinese"])["sparse_embedding"]
        assert set(chinese.indices) <= set(out["documents"][1].sparse_embedding.indices)
