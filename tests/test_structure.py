"""The project's shape, checked: layers that depend one way, no import cycle, stores outside `components/`, thin shells."""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("needle", "components")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


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
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


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


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    # A package's __init__ re-exporting its submodules is not a dependency of theirs on it.
    return {
        name: {t for t in _imports(path, name, known) if not (path.name != "__init__.py" and name.startswith(t + "."))}
        for name, path in modules.items()
    }


def test_no_import_cycle_among_the_projects_modules():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# Needle's layers, lowest first (docs/architecture.md): a module imports its own layer and the layers below it,
# never one above. The core holds the libraries that know nothing of graphs (stores, files, formats, globs,
# languages, argument checks); the components are the graphs' stages, built on the core; the application
# (the facade, the loader, the environment, the shells) loads and runs the graphs; the server's endpoint
# wrappers sit on the application. A new `needle` module is in the application unless named here.
CORE = (
    "needle", "needle.arguments", "needle.atomic", "needle.bounded", "needle.checks", "needle.collections", "needle.disk",
    "needle.document_stores", "needle.documents", "needle.file_records", "needle.files", "needle.formats", "needle.globs",
    "needle.languages", "needle.requests",
)
LAYERS = ("core", "components", "application", "server")


def layer(module: str) -> str:
    """The layer a module belongs to (a package named in `CORE` holds all its modules)."""
    top = module.partition(".")[0]
    if top in ("components", "server"):
        return top
    if any(module == core or (core != "needle" and module.startswith(core + ".")) for core in CORE):
        return "core"
    return "application"


def _upward(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a module in a higher layer, as `importer (layer) -> imported (layer)`."""
    rank = {name: position for position, name in enumerate(LAYERS)}
    return sorted(
        f"{name} ({layer(name)}) -> {target} ({layer(target)})"
        for name, targets in graph.items()
        for target in targets
        if rank[layer(target)] > rank[layer(name)]
    )


def test_packages_depend_one_way_core_components_application_server():
    modules = _modules()
    for path in (REPO / "server").rglob("*.py"):
        modules[".".join(path.relative_to(REPO).with_suffix("").parts)] = path
    known = set(modules)
    graph = {name: _imports(path, name, known) - {name} for name, path in modules.items()}
    assert _upward(graph) == []


def test_the_layer_check_sees_a_store_importing_a_component():
    assert layer("needle.document_stores.protocol") == "core" and layer("needle.app") == "application"
    assert layer("needle") == "core" and layer("needle.files.walking") == "core"
    assert _upward({"needle.document_stores.protocol": {"components._checks"}, "components.x": {"needle.globs"}}) == [
        "needle.document_stores.protocol (core) -> components._checks (components)"
    ]


def test_stores_live_outside_components_behind_a_protocol():
    assert not [p.name for p in (REPO / "components").glob("*document_store.py") if not p.name.startswith("_")]
    from needle.document_stores import EdgeDocumentStore, NeedleDocumentStore, QdrantServerDocumentStore

    assert isinstance(EdgeDocumentStore(path="/nonexistent/never-opened", embedding_dim=4), NeedleDocumentStore)
    assert isinstance(QdrantServerDocumentStore(embedding_dim=4, client_kwargs={"location": ":memory:"}), NeedleDocumentStore)


def test_no_shell_imports_the_one_that_starts_it():
    # `needle` starts the server, the MCP server and the eval runner; none of them reaches back.
    graph = _graph()
    for lower, upper in (
        ("needle.mcp", "needle.http.app"), ("needle.mcp", "needle.cli"), ("needle.http.app", "needle.cli"),
        ("needle.evaluation.cli", "needle.cli"), ("needle.app", "needle.cli"), ("needle.app", "needle.http.app"),
    ):
        assert upper not in graph[lower], f"{lower} imports {upper}"
