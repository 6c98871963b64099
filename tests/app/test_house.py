"""The whole house imports one way: floor by floor, ground up, and no cycle anywhere.

FLOORS is the app's declared order (docs/architecture.md, "The app's floors"): a module may import
its own floor and the floors below it, never one above, even lazily. Every module of audit/,
workers/, frontend/ and config/ lies on a declared floor, so a new package has to be placed.

The graph is read by tests/support/import_graph.py: every module's imports with ast (module
level, inside functions, under TYPE_CHECKING), without importing anything. Importing `a.b.c`
also runs the package `a.b`, so that edge counts too, except a package whose `__init__.py`
holds no code (it runs nothing) and a module's own packages (being imported already).
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

from tests.support.import_graph import ROOT, house_modules, import_cycles, import_graph

# Django's models of the app: one floor of three modules (the health and alerting models live
# beside their packages, but every package above reads them).
MODELS = ("audit.models", "audit.health.models", "audit.incidents.models", "audit.alerting.models")
FLOORS: tuple[tuple[str, ...], ...] = (
    ("config",),  # the settings, read through django.conf; names the app only in strings
    ("audit.core",),  # Django-free; its own order: tests/core/test_import_layers.py
    MODELS,
    ("audit.trust",),  # who sees what, allowed roots and read scopes, limits
    ("audit.reads",),  # the one query layer and its caches
    ("audit.ingest",),  # the one writer of a chunk's rows (stored health too), the table lease
    ("audit.alerting",),  # rules, deliveries, transports, the alert findings of health
    ("audit.tail",),  # the tail step, polling, kept logs, notifications, discovery, orphans
    ("workers.spark",),  # the fleet audit on Spark
    ("workers",),  # the Celery app and its tasks
    ("audit.api", "frontend"),  # the web layer
    ("audit.management", "audit.admin", "audit.apps", "audit.migrations", "audit.demo"),
)


def _places(floors: tuple[tuple[str, ...], ...]) -> dict[str, int]:
    return {unit: height for height, floor in enumerate(floors) for unit in floor}


def unit_of(module: str, places: dict[str, int]) -> str | None:
    """The declared unit `module` lies in: the longest declared name it is or lies under."""
    while module:
        if module in places:
            return module
        module = module.rpartition(".")[0]
    return None


def runs_nothing(path: Path) -> bool:
    """A package whose `__init__.py` is empty or a docstring: importing it runs no code."""
    if path.name != "__init__.py":
        return False
    body = ast.parse(path.read_text()).body
    return all(isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) for n in body)


def upward_imports(
    graph: dict[str, set[str]], floors: tuple[tuple[str, ...], ...], inert: set[str] = frozenset()
) -> list[tuple[str, str]]:
    """Every (module, imported) whose import runs from a floor up to a higher one."""
    places = _places(floors)
    found = []
    for module, targets in sorted(graph.items()):
        unit = unit_of(module, places)
        for target in sorted(targets - inert):
            above = unit_of(target, places)
            if unit is not None and above is not None and places[above] > places[unit]:
                found.append((module, target))
    return found


@cache
def _house() -> tuple[dict[str, set[str]], set[str]]:
    """The house's graph (read once for the tests below) and its packages that run nothing."""
    modules = house_modules()
    return import_graph(), {m for m, path in modules.items() if runs_nothing(path)}


def test_it_sees_every_part_of_the_house():
    graph, _ = _house()
    assert "audit.ingest.chunk" in graph["audit.tail.step"]
    assert "audit.ingest" in graph["audit.tail.step"]  # the package runs first
    assert "workers.spark.job" in graph["workers.spark.tasks"]  # a function-local import
    assert {"frontend.views.overview", "config.settings"} <= set(graph)


def test_it_finds_a_cycle_through_a_function_local_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycles(graph) == [["a", "b", "c"]]


def test_it_has_no_import_cycle_anywhere():
    cycles = import_cycles(_house()[0])
    assert not cycles, f"import cycles: {cycles}"


def test_it_finds_an_import_running_back_up():
    floors = (("low",), ("mid.models", "other.models"), ("mid",), ("top",))
    graph = {
        "low.a": {"mid.models", "mid"},  # up, and up to a package that runs nothing
        "mid.models": {"low.a", "other.models"},  # down, and sideways on its own floor
        "mid.b": {"mid.models", "top.c"},  # down, and up
        "top.c": {"low.a", "mid.b"},
        "mid": set(),
    }
    upward = [("low.a", "mid.models"), ("mid.b", "top.c")]
    assert upward_imports(graph, floors, inert={"mid"}) == upward
    assert upward_imports(graph, floors) == [("low.a", "mid"), *upward]


def test_every_module_lies_on_a_declared_floor():
    graph, inert = _house()
    places = _places(FLOORS)
    undeclared = sorted(m for m in graph if unit_of(m, places) is None and m not in inert)
    assert not undeclared, f"modules on no floor of FLOORS (declare their package): {undeclared}"


def test_no_import_runs_back_up_the_floors():
    graph, inert = _house()
    upward = upward_imports(graph, FLOORS, inert)
    assert not upward, "imports running back up the floors:\n" + "\n".join(
        f"  {module} -> {target}" for module, target in upward
    )


def test_the_architecture_doc_states_the_declared_order():
    """docs/architecture.md's floors table names the units of FLOORS, in their order."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## The app's floors", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    stated = [name for row in rows for name in re.findall(r"`([\w./]+)`", row)]
    modules = house_modules()
    declared = [
        unit.replace(".", "/") + ("/" if modules[unit].name == "__init__.py" else ".py")
        for floor in FLOORS
        for unit in floor
    ]
    assert stated == declared
