"""The wheel is all Needle needs: built from a copy of the clone, installed without `-e`, run from elsewhere.

A non-editable install (`pip install .`, `pipx install .`) has no clone beside it, so the YAML graphs, the
default configuration and the endpoint wrappers must travel inside the wheel. The test builds the wheel as pip
does, installs it (alone, `--no-deps`) into a fresh virtualenv that borrows the test environment's packages
through a `.pth` file (not its editable `needle`), and runs the installed `needle` command in a folder far from
any clone: status, collection add, index, search and the endpoint wrappers `needle serve` and `needle mcp` load.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# What the working tree holds besides the source: environments, build output, caches, reports.
NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".demo"
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the working tree, as a user's clone would hold it."""
    copy = tmp_path_factory.mktemp("clone") / "needle"
    shutil.copytree(REPO, copy, ignore=NOT_SOURCE)
    return copy


@pytest.fixture(scope="module")
def wheel(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of the copy, built as `pip install .` builds it (no build isolation: offline)."""
    wheels = tmp_path_factory.mktemp("wheels")
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheels),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, (
        built.stderr
    )  # setuptools older than pyproject's build requirement: `make install-test`
    (built,) = wheels.glob("needle_search-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with the wheel installed, its dependencies borrowed from this environment; its `bin/`."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # Appended to sys.path as a plain folder: its own .pth files (this environment's editable Needle) are not run.
    shared = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(purelib, "shared-environment.pth").write_text("".join(f"{p}\n" for p in sorted(shared)))
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return venv / "bin"


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A working folder outside any clone and an environment with nothing pointing back at the repository."""
    home = tmp_path_factory.mktemp("elsewhere")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEEDLE_", "HAYHOOKS_")) and k != "PYTHONPATH"}
    # Each command opens the index itself: a background owner would outlive the test by its idle period.
    env |= {
        "NEEDLE_DATA_DIR": str(home / "data"),
        "NEEDLE_MODEL_DIR": str(home / "models"),
        "NEEDLE_OWNER__AUTOSTART": "false",
    }
    return home, env


def run(bin_dir: Path, where: tuple[Path, dict[str, str]], *args: str) -> subprocess.CompletedProcess:
    home, env = where
    return subprocess.run(
        [bin_dir / args[0], *args[1:]], cwd=home, env=env, capture_output=True, text=True, timeout=300
    )


def test_wheel_carries_the_graphs_the_configuration_and_the_endpoint_wrappers(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {f"needle/_data/pipelines/{p.name}" for p in (REPO / "pipelines").glob("*.yml")}
    expected |= {"needle/_data/config/needle.yml"}
    expected |= {
        f"needle/_data/server/pipelines/{p.parent.name}/pipeline_wrapper.py"
        for p in (REPO / "server" / "pipelines").glob("*/pipeline_wrapper.py")
    }
    assert expected <= names, sorted(expected - names)
    assert not any("__pycache__" in name for name in names)


def test_installed_needle_runs_from_outside_the_clone(installed: Path, elsewhere: tuple[Path, dict[str, str]]) -> None:
    home, _ = elsewhere
    located = run(installed, elsewhere, "python", "-c", "import needle; print(needle.__file__)")
    assert Path(located.stdout.strip()).is_relative_to(installed.parent), located  # the installed copy, not the clone
    notes = home / "notes"
    notes.mkdir()
    (notes / "tls.md").write_text("# Renewing TLS\n\nRun `certbot renew --dry-run` before the certificate expires.\n")
    (notes / "pods.md").write_text("# Pods\n\nA pod killed with OOMKilled needs a higher memory limit.\n")

    models = run(installed, elsewhere, "needle", "models")  # from the model packages, as the README's pip user does
    assert models.returncode == 0, models.stderr
    added = run(installed, elsewhere, "needle", "collection", "add", str(notes), "--name", "notes")
    assert added.returncode == 0, added.stderr
    indexed = run(installed, elsewhere, "needle", "index")
    assert indexed.returncode == 0, indexed.stderr
    status = run(installed, elsewhere, "needle", "status")
    assert status.returncode == 0, status.stderr
    assert "notes: 2 files" in status.stdout, status.stdout
    found = run(installed, elsewhere, "needle", "search", "certbot", "--json")
    assert found.returncode == 0, found.stderr
    assert "tls.md" in found.stdout and "pods.md" not in found.stdout


WRAPPERS = """
import importlib.util, sys
from needle.shells.mcp import SERVER_PIPELINES_DIR
for path in sorted(SERVER_PIPELINES_DIR.glob("*/pipeline_wrapper.py")):
    spec = importlib.util.spec_from_file_location("wrapper_" + path.parent.name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.PipelineWrapper()
    print(path.parent.name)
"""


def test_installed_needle_imports_every_endpoint_wrapper(
    installed: Path, elsewhere: tuple[Path, dict[str, str]]
) -> None:
    """What `needle serve` hands hayhooks and `needle mcp` imports: the wrappers shipped in the wheel."""
    loaded = run(installed, elsewhere, "python", "-c", WRAPPERS)
    assert loaded.returncode == 0, loaded.stderr
    expected = sorted(p.parent.name for p in (REPO / "server" / "pipelines").glob("*/pipeline_wrapper.py"))
    assert loaded.stdout.split() == expected


def test_source_distribution_carries_the_runtime_folders(source: Path, tmp_path: Path) -> None:
    """`python -m build` builds the wheel from the sdist: MANIFEST.in must bring the folders setup.py copies."""
    script = "import sys; from setuptools import build_meta; print(build_meta.build_sdist(sys.argv[1]))"
    built = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "dist")], cwd=source, capture_output=True, text=True, timeout=300
    )
    assert built.returncode == 0, built.stderr
    name = built.stdout.strip().splitlines()[-1]
    with tarfile.open(tmp_path / "dist" / name) as sdist:
        names = {member.split("/", 1)[1] for member in sdist.getnames() if "/" in member}
    expected = {f"pipelines/{p.name}" for p in (REPO / "pipelines").glob("*.yml")} | {"config/needle.yml", "setup.py"}
    expected |= {
        f"server/pipelines/{p.parent.name}/pipeline_wrapper.py"
        for p in (REPO / "server" / "pipelines").glob("*/pipeline_wrapper.py")
    }
    assert expected <= names, sorted(expected - names)
