import numpy as np
import pytest
from haystack.core.pipeline.utils import _deepcopy_with_exceptions

from haystack_integrations.components.embedders.fastembed import FastembedTextEmbedder
from haystack_integrations.components.embedders.needle.fastembed_dense_query_embedder import FastembedDenseQueryEmbedder
from needle.core.checks import check_query_embedding
from needle.core.model_files import dense_embedder_params
from needle.core.settings import Settings


@pytest.fixture
def params(model_dir):
    return {**dense_embedder_params(Settings().embedding.model, model_dir), "progress_bar": False}


class TestFastembedDenseQueryEmbedder:
    def test_round_trip_keeps_the_type(self, params):
        embedder = FastembedDenseQueryEmbedder(**params, prefix="query: ")
        data = embedder.to_dict()
        assert (
            data["type"]
            == "haystack_integrations.components.embedders.needle.fastembed_dense_query_embedder.FastembedDenseQueryEmbedder"
        )
        assert data["init_parameters"]["prefix"] == "query: "
        assert FastembedDenseQueryEmbedder.from_dict(data).to_dict() == data

    def test_an_onnx_runtime_failure_gives_no_vector_and_a_warning(self, params):
        from onnxruntime.capi.onnxruntime_pybind11_state import Fail

        class BrokenModel:
            def embed(self, texts, parallel=None):
                raise Fail("[ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running Gather node")

        embedder = FastembedDenseQueryEmbedder(**params)
        embedder.embedding_backend = type("Backend", (), {"model": BrokenModel()})()
        out = embedder.run(text="postgres replication slot")
        assert out["embedding"] is None
        assert out["warnings"][0].startswith(
            "vector search skipped: the embedding model failed (Fail: [ONNXRuntimeError]"
        )

    def test_other_errors_are_not_swallowed(self, params):
        class BrokenModel:
            def embed(self, texts, parallel=None):
                raise MemoryError("out of memory")

        embedder = FastembedDenseQueryEmbedder(**params)
        embedder.embedding_backend = type("Backend", (), {"model": BrokenModel()})()
        with pytest.raises(MemoryError):
            embedder.run(text="x")

    def test_rejects_non_strings(self, params):
        with pytest.raises(TypeError, match="expects a string"):
            FastembedDenseQueryEmbedder(**params).run(text=["a list"])

    @pytest.mark.integration
    def test_same_vector_as_haystacks_embedder_as_one_float32_array(self, params):
        ours = FastembedDenseQueryEmbedder(**params, prefix="q: ").run(text="postgres replication slot")["embedding"]
        theirs = FastembedTextEmbedder(**params, prefix="q: ").run(text="postgres replication slot")["embedding"]
        assert isinstance(ours, np.ndarray) and ours.dtype == np.float32 and ours.shape == (len(theirs),)
        assert np.allclose(ours, theirs, atol=1e-6)
        # What Haystack does to every stage's inputs: an array is copied whole, a list element by element.
        copied = _deepcopy_with_exceptions(ours)
        assert copied is not ours and np.array_equal(copied, ours)


class TestCheckQueryEmbedding:
    def test_takes_lists_and_arrays(self):
        assert check_query_embedding([1, 2.5], 2) == [1.0, 2.5]
        values = check_query_embedding(np.array([0.5, 0.25], dtype=np.float32), 2)
        assert values == [0.5, 0.25] and all(type(v) is float for v in values)

    def test_rejects_wrong_sizes_and_shapes(self):
        with pytest.raises(ValueError, match="must have 3 values, got 2"):
            check_query_embedding(np.zeros(2), 3)
        with pytest.raises(ValueError, match="one vector"):
            check_query_embedding(np.zeros((2, 3)), 3)
