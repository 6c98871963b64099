"""The imports of the house as a graph, read with ast (module level, inside functions, under
TYPE_CHECKING), so a cycle hidden in a function-local import is caught without importing
anything. Used by the whole-house test (tests/app/test_house.py) and the core's layer test
(tests/core/test_import_layers.py)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("audit", "workers", "frontend", "config")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def house_modules() -> dict[str, Path]:
    paths = [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]
    return {module_name(p): p for p in paths}


def resolve(name: str, known: set[str]) -> str | None:
    """The known module `name` is or lies in (`a.b.name` -> `a.b` when `name` is no module)."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def targets(module: str, path: Path) -> list[str]:
    """Every dotted name `module` imports, anywhere in its body."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    targets: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join(anchor + ([base] if base else []))
            # `from a import b` names a module b or a name in a: both resolve below.
            targets += [f"{base}.{alias.name}" for alias in node.names] + [base]
    return targets


def import_graph() -> dict[str, set[str]]:
    modules = house_modules()
    known = set(modules)
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        own_packages = {module.rsplit(".", n)[0] for n in range(1, module.count(".") + 1)}
        edges: set[str] = set()
        for target in targets(module, path):
            resolved = resolve(target, known)
            while resolved:  # the module and every package above it run on import
                if resolved != module and resolved not in own_packages and resolved in known:
                    edges.add(resolved)
                resolved = resolved.rpartition(".")[0]
        graph[module] = edges
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

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
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found
