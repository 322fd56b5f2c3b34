import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding

from haystack_integrations.components.rankers.needle.answer_chunk_selector import AnswerChunkSelector
from haystack_integrations.document_stores.needle import EdgeDocumentStore

QUERY = [1.0, 0.0, 0.0, 0.0]
TERMS = SparseEmbedding(indices=[1, 2], values=[1.0, 1.0])
RETRO = "\n".join(
    ["# Launch retro", "", "## Went well", "", "- zero discrepancies", "- the report went out on time"]
)  # what the searches retrieved for the question
WRONG = "\n".join(["## Did not go well", "", "- the backfill took 3 nights instead of 1", "- alerts fired for nothing"])
PHONE = "The phone's config:\n\n```ini\n[Interface]\nPrivateKey = <phone private key>\nAllowedIPs = 10.8.0.0/24\n```"
SERVER = "## Server\n\n```ini\n[Peer]\nAllowedIPs = 10.8.0.2/32\n[Peer]\nAllowedIPs = 10.8.0.3/32\n```"


def chunk(doc_id: str, file: str, text: str, start: int, embedding: list[float], terms: list[int]) -> Document:
    return Document(
        id=doc_id,
        content=text,
        meta={
            "source_doc_id": file,
            "start_line": start,
            "end_line": start + text.count("\n"),
            "heading_path": [text.split("\n")[0].lstrip("# ")],
        },
        embedding=embedding,
        sparse_embedding=SparseEmbedding(indices=terms, values=[1.0] * len(terms)) if terms else None,
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Retro's second chunk answers by its words and its meaning; another file's chunk is close in meaning only."""
    document_store = EdgeDocumentStore(
        path=str(tmp_path_factory.mktemp("answer") / "edge"), embedding_dim=4, durable_writes=False
    )
    document_store.write_documents(
        [
            chunk("r1", "retro.md", RETRO, 7, [0.6, 0.8, 0.0, 0.0], [1]),
            chunk("r2", "retro.md", WRONG, 14, [0.9, 0.44, 0.0, 0.0], [1, 2]),
            chunk("o1", "other.md", "- backfill scripts live in tools/", 1, [1.0, 0.0, 0.0, 0.0], [2]),
            chunk("w1", "wg.md", PHONE, 1, [1.0, 0.0, 0.0, 0.0], [3]),
            chunk("w2", "wg.md", SERVER, 9, [0.0, 1.0, 0.0, 0.0], []),
        ]
    )
    yield document_store
    document_store.close()


def result(doc_id: str, file: str, text: str, score: float) -> Document:
    meta = {"source_doc_id": file, "start_line": 7, "end_line": 12, "heading_path": ["Went well"], "title": "Retro"}
    return Document(id=doc_id, content=text, score=score, meta={**meta, "collection": "notes", "path": file})


class TestAnswerChunkSelector:
    def test_init_defaults(self, store):
        selector = AnswerChunkSelector(document_store=store)
        assert (selector.top_files, selector.chunks_per_search, selector.cosine_weight, selector.lines_weight) == (
            3,
            200,
            0.35,
            0.25,
        )

    @pytest.mark.parametrize(
        "kwargs, message",
        [
            ({"top_files": 0}, "top_files"),
            ({"chunks_per_search": 0}, "chunks_per_search"),
            ({"cosine_weight": 1.5}, "cosine_weight"),
            ({"lines_weight": -0.1}, "lines_weight"),
            ({"cosine_weight": 0.7, "lines_weight": 0.5}, "at most 1"),
            ({"alternates": -1}, "alternates"),
        ],
    )
    def test_bad_params_raise(self, store, kwargs, message):
        with pytest.raises(ValueError, match=message):
            AnswerChunkSelector(document_store=store, **kwargs)

    def test_to_dict_and_from_dict(self):
        data = AnswerChunkSelector(top_files=5, lines_weight=0.3).to_dict()
        assert data == {
            "type": "haystack_integrations.components.rankers.needle.answer_chunk_selector.AnswerChunkSelector",
            "init_parameters": {
                "document_store": None,
                "top_files": 5,
                "chunks_per_search": 200,
                "cosine_weight": 0.35,
                "lines_weight": 0.3,
                "alternates": 2,
            },
        }
        assert AnswerChunkSelector.from_dict(data).to_dict() == data

    def test_the_chunk_of_the_file_that_answers_takes_the_results_place(self, store):
        docs = [result("r1", "retro.md", RETRO, 0.9), result("o1", "other.md", "- backfill scripts", 0.4)]
        out = AnswerChunkSelector(document_store=store).run(
            documents=docs,
            query="what went wrong with the backfill",
            query_embedding=QUERY,
            query_sparse_embedding=TERMS,
        )["documents"]
        first = out[0]
        assert (first.id, first.content, first.score) == ("r2", WRONG, 0.9)
        assert (first.meta["start_line"], first.meta["end_line"], first.meta["heading_path"]) == (
            14,
            17,
            ["Did not go well"],
        )
        assert (first.meta["title"], first.meta["path"], first.meta["answer_chunk"]) == ("Retro", "retro.md", True)
        assert WRONG.split("\n")[first.meta["answer_line"]] == "- the backfill took 3 nights instead of 1"
        assert [d.meta["source_doc_id"] for d in out] == ["retro.md", "other.md"]

    def test_the_next_best_chunk_goes_along_for_the_snippet(self, store):
        docs = [result("r1", "retro.md", RETRO, 0.9)]
        ask = {"query": "what went wrong with the backfill", "query_embedding": QUERY, "query_sparse_embedding": TERMS}
        (first,) = AnswerChunkSelector(document_store=store).run(documents=docs, **ask)["documents"]
        (also,) = first.meta["answer_also"]
        assert (also["start_line"], also["end_line"], also["content"]) == (7, 12, RETRO)
        assert RETRO.split("\n")[also["answer_line"]] == "- the report went out on time"
        (alone,) = AnswerChunkSelector(document_store=store, alternates=0).run(documents=docs, **ask)["documents"]
        assert alone.id == "r2" and "answer_also" not in alone.meta

    def test_the_words_a_blocks_lead_in_shows_do_not_pick_its_line(self, store):
        docs = [result("w1", "wg.md", PHONE, 0.9)]
        (first,) = AnswerChunkSelector(document_store=store).run(
            documents=docs, query="AllowedIPs on the phone", query_embedding=QUERY
        )["documents"]
        assert first.id == "w1" and PHONE.split("\n")[first.meta["answer_line"]] == "AllowedIPs = 10.8.0.0/24"

    def test_one_signal_is_enough(self, store):
        docs = [result("r1", "retro.md", RETRO, 0.9)]
        dense = AnswerChunkSelector(document_store=store).run(documents=docs, query="backfill", query_embedding=QUERY)
        sparse = AnswerChunkSelector(document_store=store).run(
            documents=docs, query="backfill", query_sparse_embedding=TERMS
        )
        assert dense["documents"][0].id == sparse["documents"][0].id == "r2"

    def test_only_the_first_files_are_read_again(self, store):
        docs = [result("o1", "other.md", "x", 0.9), result("r1", "retro.md", RETRO, 0.5)]
        out = AnswerChunkSelector(document_store=store, top_files=1).run(
            documents=docs, query="backfill", query_embedding=QUERY
        )["documents"]
        assert out[1] is docs[1]

    def test_without_a_store_or_query_vectors_the_results_pass_through(self, store):
        docs = [result("r1", "retro.md", RETRO, 0.9)]
        assert AnswerChunkSelector().run(documents=docs, query="backfill", query_embedding=QUERY)["documents"] is docs
        assert AnswerChunkSelector(document_store=store).run(documents=docs, query="backfill")["documents"] is docs
