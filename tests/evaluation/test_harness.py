"""The measurement harness (eval/): every benchmark is an entry point of one package, run as `python -m eval.NAME`."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# The modules every benchmark shares; the rest of eval/ are entry points.
HELPERS = {"corpus_index", "demo_data", "result_files", "servers", "stopwatch"}
ENTRY_POINTS = sorted(
    [p.stem for p in (REPO / "eval").glob("*.py") if p.stem not in HELPERS | {"__init__"}] + ["corpora.__main__"]
)


def test_the_harness_has_its_entry_points_and_no_copy_of_the_product_commands():
    assert "corpora.__main__" in ENTRY_POINTS and len(ENTRY_POINTS) >= 25
    # `needle eval golden`, `beir` and `compare` are the product's: no script repeats them.
    assert not {"golden", "beir", "compare", "embedding_server"} & set(ENTRY_POINTS)


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_each_entry_point_says_how_to_run_it(name: str, capsys: pytest.CaptureFixture):
    module = importlib.import_module(f"eval.{name}")
    with pytest.raises(SystemExit) as done:
        module.main(["--help"])
    assert done.value.code == 0
    command = f"python -m eval.{name.removesuffix('.__main__')}"
    assert capsys.readouterr().out.startswith(f"usage: {command}")


def test_an_entry_point_runs_from_the_repository_as_a_module():
    done = subprocess.run(
        [sys.executable, "-m", "eval.corpora", "build", "--help"], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "{manpages,readmes}" in done.stdout


def test_the_docs_cite_benchmarks_that_exist_and_no_script_path():
    pages = [REPO / "README.md", REPO / "Makefile", *sorted((REPO / "docs").glob("*.md"))]
    text = "\n".join(page.read_text(encoding="utf-8") for page in pages)
    cited = set(re.findall(r"python\s+-m\s+eval\.([a-z_]+)", text))
    assert cited and cited <= {name.removesuffix(".__main__") for name in ENTRY_POINTS}
    assert re.findall(r"python\s+eval/\w+\.py", text) == []
