"""`verify` reads every stored dense vector and names the points and files whose vector is NaN, infinite or zero."""

import pytest
from haystack import Document

from haystack_integrations.document_stores.needle import EdgeDocumentStore
from needle.core.vectors import describe


def test_verify_names_the_spoiled_vectors_and_their_files(tmp_path):
    store = EdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=2, use_sparse_embeddings=False)
    try:
        vectors = {"good": [1.0, 0.0], "zero": [0.0, 0.0], "nan": [float("nan"), 1.0], "inf": [float("inf"), 0.0]}
        store.write_documents(
            [
                Document(id=name, content=name, embedding=vector, meta={"collection": "c", "path": f"{name}.md"})
                for name, vector in vectors.items()
            ]
        )
        found = store.verify()
        assert found["points"] == 4 and found["spoiled_dense"] == 3
        assert sorted(found["spoiled_ids"]) == ["inf", "nan", "zero"]
        assert found["spoiled_files"] == ["c:inf.md", "c:nan.md", "c:zero.md"]
    finally:
        store.close()


@pytest.mark.parametrize(
    "vector, said",
    [
        ([0.1, 0.2], None),
        ([0.0, 0.0], "a vector of zeros"),
        ([float("nan"), 0.0], "a vector with NaN values"),
        ([float("-inf"), 0.0], "a vector with infinite values"),
        ([float("inf"), float("-inf")], "a vector with infinite values"),
        ([0.1], "a vector of 1 values where the index holds 2"),
        ([], "a vector of 0 values where the index holds 2"),
    ],
)
def test_describe(vector, said):
    assert describe(vector, 2) == said
