"""The core's imports run one way: no module of audit/core imports, even lazily, one that
imports it back (directly or through others).

The graph is read by tests/support/import_graph.py (function-local imports too).
"""

from __future__ import annotations

from pathlib import Path

from tests.support.import_graph import import_cycles, module_name, resolve, targets

CORE = Path(__file__).resolve().parents[2] / "audit" / "core"
PACKAGE = "audit.core"
# Lower layers never reach up into the audit's rules, anomalies or orchestrator.
LOWER = ("audit.core.model", "audit.core.vocab", "audit.core.log", "audit.core.predicates")
LOWER += ("audit.core.data.witness", "audit.core.data.rowfilter")
UPPER = ("audit.core.audit", "audit.core.conflicts", "audit.core.anomalies")


def _graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in sorted(CORE.rglob("*.py"))}
    known = set(modules)
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        resolved = (resolve(t, known) for t in targets(module, path) if t.startswith(PACKAGE))
        # `from audit.core.x import y` resolves to x's package too: drop parent-package edges.
        # (Importing a submodule also runs its package's __init__; the core's subpackages keep
        # theirs free of imports, so that implicit edge adds nothing and is left out.)
        graph[module] = {
            r
            for r in resolved
            if r is not None and r not in (module, PACKAGE) and not module.startswith(r + ".")
        }
    return graph


def test_the_graph_sees_the_core():
    graph = _graph()
    assert "audit.core.audit" in graph and "audit.core.model" in graph
    assert "audit.core.history.summary" in graph["audit.core.audit"]


def test_no_import_cycle_in_the_core():
    cycles = import_cycles(_graph())
    assert not cycles, f"import cycles: {cycles}"


def test_lower_layers_never_import_the_audit():
    graph = _graph()
    reached = {m: _reachable(graph, m) for m in graph if m.startswith(LOWER)}
    for module, reachable in reached.items():
        upward = sorted(t for t in reachable if t.startswith(UPPER))
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
