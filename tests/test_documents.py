"""`needle.core.documents`: cheap copies that equal Haystack's own."""

import dataclasses

import numpy as np
import pytest
from haystack import Document
from haystack.dataclasses import ByteStream, SparseEmbedding

from needle.core.documents import from_stored, replace


def _document() -> Document:
    return Document(
        content="alpha beta",
        meta={"path": "a.md", "tags": ["x"]},
        score=0.5,
        embedding=[0.1, 0.2],
        sparse_embedding=SparseEmbedding(indices=[1, 4], values=[0.3, 0.7]),
    )


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"score": 0.9},
        {"meta": {"path": "b.md"}},
        {"embedding": None, "sparse_embedding": None},
        {"score": None, "meta": {}, "embedding": [1.0, 2.0]},
    ],
)
def test_replace_equals_dataclasses_replace_and_leaves_the_original(changes):
    original = _document()
    before = original.to_dict()
    copy = replace(original, **changes)
    assert copy == dataclasses.replace(original, **changes)
    assert copy is not original and type(copy) is Document
    assert original.to_dict() == before


def test_replace_of_checked_fields_goes_through_haystack():
    original = _document()
    assert replace(original, content="gamma").content == "gamma"
    assert replace(original, id="").id == dataclasses.replace(original, id="").id != ""  # computed again
    arrayed = replace(original, embedding=np.array([1.0, 2.0]))
    assert arrayed.embedding == [1.0, 2.0] and isinstance(arrayed.embedding, list)
    with pytest.raises(TypeError):
        replace(original, colour="red")


def test_a_copy_warns_on_mutation_like_any_document():
    copy = replace(_document(), score=0.1)
    with pytest.warns(Warning, match="Mutating attribute 'score'"):
        copy.score = 0.2


@pytest.mark.parametrize(
    "data",
    [
        {
            "id": "d1",
            "content": "text",
            "meta": {"path": "a.md"},
            "score": 1.5,
            "embedding": None,
            "sparse_embedding": None,
        },
        {
            "id": "d2",
            "content": None,
            "meta": {},
            "score": None,
            "embedding": [0.5],
            "sparse_embedding": {"indices": [3], "values": [0.25]},
        },
        {"id": "d3", "content": "t", "path": "flattened.md", "score": 0.1},
        {"id": "d4", "content": "t", "blob": ByteStream(b"x").to_dict(), "meta": {}},
        {"id": "", "content": "no id yet", "meta": {}},
    ],
)
def test_from_stored_equals_document_from_dict(data):
    expected = Document.from_dict(dict(data))
    built = from_stored(dict(data))
    assert built == expected
    assert built.meta is not data.get("meta")
