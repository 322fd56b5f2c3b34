"""`requirements-ragas.txt` installs ragas with one pip command: it lists everything ragas, ragas-haystack and
instructor need beyond Needle's own install, at constraints.txt's versions, and pip accepts it as it is."""

from __future__ import annotations

import importlib.metadata as metadata
import subprocess
import sys

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.evaluation.conftest import REPO

# The checks read the installed packages' metadata: an environment without ragas (the Haystack 2.x one) has none.
pytest.importorskip("ragas", reason="ragas is not installed here (requirements-ragas.txt)")

ROOTS = ("ragas", "ragas-haystack", "instructor")
# What the file leaves out on purpose (its heading says why): ragas' LangChain integration.
LEFT_OUT = {"langchain"}


def _pins(path):
    pins = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[canonicalize_name(name)] = version.strip()
    return pins


def _requirements(name: str, extras: tuple[str, ...] = ()) -> list[Requirement]:
    found = []
    for text in metadata.distribution(name).requires or []:
        requirement = Requirement(text)
        marker = requirement.marker
        if marker is None or any(marker.evaluate({"extra": extra}) for extra in ("", *extras)):
            found.append(requirement)
    return found


def _closure(roots: list[tuple[str, tuple[str, ...]]], stop: set[str] = frozenset()) -> set[str]:
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        name, extras = stack.pop()
        key = canonicalize_name(name)
        if key in seen or key in stop:
            continue
        seen.add(key)
        try:
            stack.extend((r.name, tuple(r.extras)) for r in _requirements(name, extras))
        except metadata.PackageNotFoundError:
            continue
    return seen


def test_the_file_lists_what_ragas_needs_beyond_needle_at_the_constraints_versions():
    pins = _pins(REPO / "requirements-ragas.txt")
    constraints = _pins(REPO / "constraints.txt")
    assert {name: constraints.get(name) for name in pins} == pins
    base = _closure([("needle-search", ("documents",))])
    needed = _closure([(name, ()) for name in ROOTS], stop=base) - LEFT_OUT
    assert needed - set(pins) == set()  # nothing missing
    assert set(pins) - needed == set()  # nothing extra


def test_the_only_conflicts_pip_cannot_resolve_are_instructors_caps():
    pins = {**_pins(REPO / "constraints.txt")}
    broken = set()
    for name in _pins(REPO / "requirements-ragas.txt"):
        for requirement in _requirements(name):
            key = canonicalize_name(requirement.name)
            if key in pins and not requirement.specifier.contains(pins[key], prereleases=True):
                broken.add((canonicalize_name(name), key))
    assert broken == {("instructor", "jiter"), ("instructor", "rich")}


@pytest.mark.integration
def test_pip_takes_the_one_documented_command():
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--no-deps",
            "-c",
            "constraints.txt",
            "-r",
            "requirements-ragas.txt",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "Would install" not in done.stdout  # this environment was installed by it, at those versions
