"""The project's shape, checked: folders that are layers depending one way, no import cycle, packages declared.

The layers are read from the folders (docs/architecture.md#layers): a module's layer is the folder it lives in, and
`pyproject.toml` says which package each folder installs as (`components/<kind>/` as
`haystack_integrations.components.<kind>.needle`, `document_stores/` as `haystack_integrations.document_stores.needle`).
`eval/` (the measurement harness, run from the repository as `python -m eval.NAME`) sits on top: it may import anything
of Needle, and nothing imports it.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parent.parent

# Lowest first: a module imports its own layer and the layers below it, never one above (lazy imports and imports
# for type checking included). The key is the folder, relative to the repository.
LAYERS = (
    ("needle/core", "core"),
    ("document_stores", "stores"),
    ("components", "components"),
    ("needle/lifecycle", "lifecycle"),
    ("needle/runtime", "runtime"),
    ("needle/facade", "facade"),
    ("needle/commands", "commands"),
    ("needle/owner", "owner"),
    ("needle/evaluation", "evaluation"),
    ("needle/shells", "shells"),
    ("server", "server"),
    ("needle", "package"),
    ("eval", "eval"),
)
RANK = {name: position for position, (_, name) in enumerate(LAYERS)}
TOP_LEVEL_LIMIT = 12


@cache
def _package_dirs() -> dict[str, str]:
    """Folder (relative to the repository) -> the package it installs as, from pyproject.toml."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    folders = {folder: package for package, folder in config["package-dir"].items()}
    folders.update(
        {package.replace(".", "/"): package for package in config["packages"] if package.startswith("needle")}
    )
    return folders


def module_name(path: Path) -> str:
    """The dotted name a project file is imported by."""
    relative = path.relative_to(REPO).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    if parts and parts[0] in ("server", "eval"):  # imported from the repository as they lie, not installed
        return ".".join(parts)
    folders = _package_dirs()
    for cut in range(len(parts), 0, -1):
        folder = "/".join(parts[:cut])
        if folder in folders:
            return ".".join([folders[folder], *parts[cut:]])
    raise AssertionError(f"{path} lies in no package that pyproject.toml declares")


def _modules() -> dict[str, Path]:
    found = {}
    for top in ("needle", "components", "document_stores", "server", "eval"):
        for path in (REPO / top).rglob("*.py"):
            found[module_name(path)] = path
    return found


def layer(path: Path) -> str:
    """The layer of a project file: the first folder of `LAYERS` that holds it."""
    relative = path.relative_to(REPO).as_posix()
    for folder, name in LAYERS:
        if relative.startswith(folder + "/"):
            return name
    raise AssertionError(f"{relative} is in no layer")


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    """Project modules a module imports anywhere in it (inside functions too: a lazy import is still a dependency)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    # A package's __init__ re-exporting its submodules is not a dependency of theirs on it.
    return {
        name: {t for t in _imports(path, name, known) if not (path.name != "__init__.py" and name.startswith(t + "."))}
        for name, path in modules.items()
    }


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _upward(graph: dict[str, set[str]], layers: dict[str, str]) -> list[str]:
    """Every import of a module in a higher layer, as `importer (layer) -> imported (layer)`."""
    return sorted(
        f"{name} ({layers[name]}) -> {target} ({layers[target]})"
        for name, targets in graph.items()
        for target in targets
        if RANK[layers[target]] > RANK[layers[name]]
    )


def test_no_import_cycle_among_the_projects_modules():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_layers_depend_one_way_from_the_core_up():
    modules = _modules()
    layers = {name: layer(path) for name, path in modules.items()}
    assert _upward(_graph(), layers) == []


def test_the_layer_check_sees_a_store_importing_a_component():
    store, component = REPO / "document_stores" / "protocol.py", REPO / "components" / "joiners" / "x.py"
    assert layer(store) == "stores" and layer(component) == "components"
    assert layer(REPO / "needle" / "core" / "files" / "walking.py") == "core"
    layers = {"s": "stores", "c": "components"}
    assert _upward({"s": {"c"}, "c": {"s"}}, layers) == ["s (stores) -> c (components)"]


def test_the_harness_is_the_top_layer_and_leaves_the_import_path_alone():
    assert layer(REPO / "eval" / "bench.py") == "eval"
    assert layer(REPO / "eval" / "corpora" / "built_corpora.py") == "eval"
    assert _upward({"n": {"e"}}, {"n": "evaluation", "e": "eval"}) == ["n (evaluation) -> e (eval)"]
    for path in (REPO / "eval").rglob("*.py"):
        assert "sys.path" not in path.read_text(encoding="utf-8"), f"{path.relative_to(REPO)} edits the import path"


def test_every_file_is_in_a_layer_and_a_declared_package():
    for path in _modules().values():
        layer(path)
    declared = set(_package_dirs())
    for top in ("needle", "components", "document_stores"):
        for init in (REPO / top).rglob("__init__.py"):
            folder = init.parent.relative_to(REPO).as_posix()
            assert folder in declared, f"{folder} is a package that pyproject.toml does not install"


def test_the_top_of_needle_holds_few_modules_and_names_are_unique():
    top = [p.name for p in (REPO / "needle").glob("*.py")]
    assert len(top) <= TOP_LEVEL_LIMIT, top
    seen: dict[str, Path] = {}
    for folder in ("needle", "components", "document_stores", "eval"):
        for path in (REPO / folder).rglob("*.py"):
            if path.name in ("__init__.py", "__main__.py", "conftest.py"):
                continue
            assert path.name not in seen, (
                f"{path.relative_to(REPO)} and {seen[path.name].relative_to(REPO)} share a name"
            )
            seen[path.name] = path


def test_stores_live_outside_components_behind_a_protocol():
    assert not list((REPO / "components").rglob("*document_store.py"))
    from haystack_integrations.document_stores.needle import (
        EdgeDocumentStore,
        ManagedStore,
        QdrantServerDocumentStore,
    )

    assert isinstance(EdgeDocumentStore(path="/nonexistent/never-opened", embedding_dim=4), ManagedStore)
    assert isinstance(QdrantServerDocumentStore(embedding_dim=4, client_kwargs={"location": ":memory:"}), ManagedStore)


def test_no_shell_imports_the_one_that_starts_it():
    # `needle` starts the server, the MCP server and the eval runner; none of them reaches back.
    graph = _graph()
    for lower, upper in (
        ("needle.shells.mcp", "needle.shells.http.server"),
        ("needle.shells.mcp", "needle.shells.cli"),
        ("needle.shells.http.server", "needle.shells.cli"),
        ("needle.evaluation.eval_command", "needle.shells.cli"),
    ):
        assert upper not in graph[lower], f"{lower} imports {upper}"
