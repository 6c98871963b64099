"""The core's floors: its packages (and loose modules) in one declared order, ground floor up.
A module imports only from its own floor or the floors below, never from a floor above:
module-level, function-local and TYPE_CHECKING imports alike (read by
tests/support/import_graph.py, which also counts the package `__init__`s an import runs).
docs/architecture.md draws the same order.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from tests.support.import_graph import import_cycles, import_graph

CORE = Path(__file__).resolve().parents[2] / "audit" / "core"
PACKAGE = "audit.core"

# Ground floor first. Each entry is a package of audit/core or one of its loose modules.
FLOORS: list[tuple[str, ...]] = [
    # The words (finding kinds, operations), the one error, safe values, the dataclasses.
    (
        "vocab",
        "operations",
        "errors",
        "scrub",
        "numbers",
        "jsonsafe",
        "severity",
        "commit_record",
        "model",
        "serialize",
    ),
    ("storage",),  # reading bytes inside the allowed roots
    ("log",),  # listing, commits, checkpoints, replay, discovery of tables
    ("predicates",),  # what a recorded predicate selects
    ("facts", "cycles"),  # what each finding states, as the words need it
    ("wording",),  # the sentences of every finding
    ("integrity",),  # what the log says of itself (checked while the history is read)
    ("history",),  # the history model: summaries, digest, parallel, provenance, caches
    ("data",),  # what the data files say: witness, deletion vectors, keys, orphans
    ("conflicts",),  # Delta's commit-time rules and the reference matrix
    ("health",),  # health, changes, time travel, commit times, the data scan
    ("anomalies",),  # the detectors
    ("writers",),  # who wrote and retried
    ("audit",),  # the orchestrator
    ("advice",),  # isolation settings and partitioning, from an audit
    ("explain",),  # a pasted exception, explained
    ("incidents",),  # findings by root cause
    ("report",),  # the JSON contract
    ("runs",),  # the ways of running the audit, and the front door (runs/table.py)
]


def _part(module: str) -> str | None:
    """The package or loose module of audit/core that `module` lies in (None: the core's own
    __init__, or no core module)."""
    parts = module.split(".")
    return parts[2] if module.startswith(PACKAGE + ".") else None


def _floor_of() -> dict[str, int]:
    return {part: i for i, floor in enumerate(FLOORS) for part in floor}


@cache  # parsed once for the module's tests (read only)
def _core_graph() -> dict[str, set[str]]:
    graph = import_graph()
    return {
        module: {t for t in targets if t.startswith(PACKAGE + ".")}
        for module, targets in graph.items()
        if module.startswith(PACKAGE + ".")
    }


def upward_imports(graph: dict[str, set[str]], floor_of: dict[str, int]) -> list[str]:
    found = []
    for module, targets in sorted(graph.items()):
        here = floor_of[_part(module)]
        for target in sorted(targets):
            if floor_of[_part(target)] > here:
                found.append(f"{module} -> {target}")
    return found


def test_the_graph_sees_the_core():
    graph = _core_graph()
    assert "audit.core.history.summary" in graph["audit.core.audit"]
    # function-local imports count too (the witness loads pyarrow only when it is needed)
    assert "audit.core.data.witness" in graph["audit.core.audit"]


def test_every_package_of_the_core_is_on_one_floor():
    parts = {_part(m) for m in _core_graph()}
    declared = [part for floor in FLOORS for part in floor]
    assert len(declared) == len(set(declared)), "a package declared on two floors"
    assert not parts - set(declared), f"not on any floor: {sorted(parts - set(declared))}"
    assert not set(declared) - parts, f"floors name nothing: {sorted(set(declared) - parts)}"


def test_no_import_runs_back_up():
    upward = upward_imports(_core_graph(), _floor_of())
    assert not upward, "imports from a lower floor to a higher one:\n" + "\n".join(upward)


def test_no_import_cycle_in_the_core():
    cycles = import_cycles(_core_graph())
    assert not cycles, f"import cycles: {cycles}"


def test_the_floors_see_an_upward_import():
    # The check itself: the old place of the operation vocabulary (advice, above conflicts).
    graph = {"audit.core.conflicts.rules": {"audit.core.advice.matrix"}}
    assert upward_imports(graph, _floor_of()) == [
        "audit.core.conflicts.rules -> audit.core.advice.matrix"
    ]
