"""Needle's components stand alone: a Haystack project imports one without the application, beside its own `components`."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PUBLIC = sorted(p for p in (REPO / "components").glob("*/*.py") if p.name != "__init__.py")
# What importing a component must never bring: the servers and the application around the components.
FORBIDDEN = ("hayhooks", "mcp", "fastapi", "starlette", "uvicorn", "watchfiles")
APPLICATION = (
    "needle.runtime",
    "needle.facade",
    "needle.owner",
    "needle.shells",
    "needle.commands",
    "needle.lifecycle",
)
CORE_LIMIT = 3

FOOTPRINT = """
import importlib, json, sys
import components.weighted_rrf_joiner as mine  # the project's own package of that name
module = importlib.import_module(sys.argv[1])
print(json.dumps({
    "mine": mine.WHOSE,
    "modules": sorted(sys.modules),
}))
"""


def installed_name(path: Path) -> str:
    """`components/joiners/weighted_rrf_joiner.py` -> `haystack_integrations.components.joiners.needle.weighted_rrf_joiner`."""
    return f"haystack_integrations.components.{path.parent.name}.needle.{path.stem}"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Haystack user's project with a `components` package of its own, as the custom-component guide has it."""
    root = tmp_path_factory.mktemp("project")
    (root / "components").mkdir()
    (root / "components" / "__init__.py").write_text("")
    (root / "components" / "weighted_rrf_joiner.py").write_text('WHOSE = "the project\'s"\n')
    return root


def footprint(project: Path, module: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", FOOTPRINT, module],
        cwd=project,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(project), "HOME": str(project)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


@pytest.mark.integration
def test_every_component_imports_alone_beside_a_projects_own_components_package(project):
    with ThreadPoolExecutor(max_workers=2) as pool:
        found = dict(zip(PUBLIC, pool.map(lambda p: footprint(project, installed_name(p)), PUBLIC)))
    for path, seen in found.items():
        modules = seen["modules"]
        assert seen["mine"] == "the project's", path.name
        assert not {m.split(".")[0] for m in modules} & set(FORBIDDEN), path.name
        assert not [m for m in modules if m.startswith(APPLICATION)], path.name
        core = [m for m in modules if m.startswith("needle.core.") and m != "needle.core.files"]
        assert len(core) <= CORE_LIMIT, f"{path.name} imports {core}"


def _component_classes(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        and any(isinstance(d, ast.Name) and d.id == "component" for d in node.decorator_list)
    }


def snake(name: str) -> str:
    """A class name as its file is named: `WeightedRRFJoiner` -> `weighted_rrf_joiner`."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower().replace("open_ai", "openai")


@pytest.mark.parametrize("path", PUBLIC, ids=lambda p: p.stem)
def test_a_public_module_is_exactly_one_component_named_after_it(path):
    assert [snake(name) for name in _component_classes(path)] == [path.stem]


def test_components_share_helpers_through_private_modules_only():
    # From another public module a component takes only its component class (to build it), never a helper.
    offenders = []
    for path in PUBLIC:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("haystack_integrations.components."):
                parts = node.module.split(".")
                if len(parts) == 5 and parts[3] == "needle":  # haystack_integrations.components.<kind>.needle.<module>
                    target = REPO / "components" / parts[2] / f"{parts[4]}.py"
                    allowed = _component_classes(target)
                    offenders += [f"{path.stem} <- {parts[4]}.{a.name}" for a in node.names if a.name not in allowed]
    assert offenders == []
