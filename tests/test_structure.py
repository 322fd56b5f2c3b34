"""The project's shape, checked: no import cycle, stores outside `components/`, shells that stay thin."""

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
