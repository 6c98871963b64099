"""The core's imports run one way: no module of audit/core imports, even lazily, one that
imports it back (directly or through others).

Parses every module's imports with ast (module level, inside functions, under TYPE_CHECKING),
so a cycle hidden in a function-local import is caught without importing anything.
"""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "audit" / "core"
PACKAGE = "audit.core"
# Lower layers never reach up into the audit's rules, anomalies or orchestrator.
LOWER = ("audit.core.model", "audit.core.vocab", "audit.core.log", "audit.core.predicates")
LOWER += ("audit.core.data.witness", "audit.core.data.rowfilter")
UPPER = ("audit.core.audit", "audit.core.conflicts", "audit.core.anomalies")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(CORE.parent.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(CORE.rglob("*.py"))}


def _resolve(name: str, known: set[str]) -> str | None:
    """The known module `name` is or lies in (`audit.core.x.y` -> `audit.core.x` if that is one)."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(module: str, path: Path, known: set[str]) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join(anchor + ([base] if base else []))
            # `from audit.core import witness` names a module; `from x import name` a name in x.
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        for target in targets:
            if not target.startswith(PACKAGE):
                continue
            resolved = _resolve(target, known)
            if resolved is not None and resolved != module and resolved != PACKAGE:
                found.add(resolved)
    # Importing a submodule also runs its package's __init__; that implicit edge is left out
    # (the core's subpackages keep their __init__ free of imports, so it adds nothing).
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    graph = {m: _imports(m, p, known) for m, p in modules.items()}
    # `from audit.core.x import y` resolves to x's package too: drop parent-package edges.
    for module, targets in graph.items():
        graph[module] = {t for t in targets if not module.startswith(t + ".")}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_sees_the_core():
    graph = _graph()
    assert "audit.core.audit" in graph and "audit.core.model" in graph
    assert "audit.core.history.summary" in graph["audit.core.audit"]


def test_no_import_cycle_in_the_core():
    cycles = [sorted(c) for c in _cycles(_graph())]
    assert not cycles, f"import cycles: {cycles}"


def test_lower_layers_never_import_the_audit():
    graph = _graph()
    reached = {m: _reachable(graph, m) for m in graph if m.startswith(LOWER)}
    for module, targets in reached.items():
        upward = sorted(t for t in targets if t.startswith(UPPER))
        assert not upward, f"{module} imports {upward}"


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen
