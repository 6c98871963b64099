"""docs/architecture.md's "Where a new finding kind goes" is the way every kind went: the
paths it names exist, and each `FindingKind` (but the health kinds the app raises) has a
detector in the packages the recipe names, worded through wording/, reachable from its
runner, with a row in docs/findings.md.

A detector is a core module that names `FindingKind.X` and calls `.finding(...)` on the
FindingText its words returned (wording/__init__.py), read with ast; reachability is the
import graph of tests/support/import_graph.py.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

from audit.core.vocab import HEALTH_KINDS, SCAN_KINDS, FindingKind
from tests.support.import_graph import import_graph, module_name

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "audit" / "core"
# Kinds not run by the orchestrator, and who runs them (each named in the recipe's step 6).
RUNNER = {kind: "audit.core.health.scan" for kind in SCAN_KINDS}
RUNNER[FindingKind.HISTORY_GAP] = "audit.tail.step"
ORCHESTRATOR = "audit.core.audit"
# Where a finding is put together again rather than found (split ranges' merged findings).
NOT_DETECTION = ("audit.core.wording", "audit.core.runs")


def _recipe() -> dict[str, list[str]]:
    """The recipe's steps by title, each with the paths it names."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Where a new finding kind goes", 1)[1].split("\n## ", 1)[0]
    steps = re.split(r"\n\d+\. \*\*", section)[1:]
    assert len(steps) >= 6, "the recipe lost its steps"
    return {
        step.split("**", 1)[0]: re.findall(r"`((?:audit|docs)/[\w./]+)`", step) for step in steps
    }


def _module(path: str) -> str:
    return module_name(ROOT / path.rstrip("/"))


@cache
def _graph() -> dict[str, set[str]]:
    return import_graph()


def _reachable(start: str) -> set[str]:
    graph = _graph()
    seen, todo = {start}, [start]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


@cache
def detectors() -> dict[str, set[str]]:
    """{kind: the core modules that build its finding}."""
    found: dict[str, set[str]] = {}
    for path in sorted(CORE.rglob("*.py")):
        module = module_name(path)
        if module.startswith(NOT_DETECTION):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        nodes = list(ast.walk(tree))
        if not any(
            isinstance(n, ast.Call) and getattr(n.func, "attr", None) == "finding" for n in nodes
        ):
            continue
        for n in nodes:
            if isinstance(n, ast.Attribute) and getattr(n.value, "id", None) == "FindingKind":
                found.setdefault(FindingKind[n.attr].value, set()).add(module)
    return found


def _kinds() -> list[FindingKind]:
    return [k for k in FindingKind if k not in HEALTH_KINDS]


def test_the_recipe_names_only_paths_that_exist():
    named = [p for paths in _recipe().values() for p in paths]
    assert "audit/core/audit.py" in named and "audit/core/wording/" in named
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert not missing, f"the recipe names paths that do not exist: {missing}"


def test_every_kind_is_detected_where_the_recipe_says():
    packages = tuple(
        _module(p) for p in next(v for k, v in _recipe().items() if k.startswith("Its detection"))
    )
    found = detectors()
    missing = [k.value for k in _kinds() if not found.get(k.value)]
    assert not missing, f"kinds no detector builds: {missing}"
    elsewhere = {
        k: sorted(m for m in modules if not m.startswith(packages)) for k, modules in found.items()
    }
    assert not any(elsewhere.values()), f"detected outside {packages}: {elsewhere}"


def test_every_detector_words_its_finding_through_wording():
    graph = _graph()
    unworded = {
        module
        for modules in detectors().values()
        for module in modules
        if not any(t.startswith("audit.core.wording") for t in graph[module])
    }
    assert not unworded, f"detectors that import no words from wording/: {sorted(unworded)}"


def test_every_detector_is_reached_from_its_runner():
    runners = [
        _module(p) for p in next(v for k, v in _recipe().items() if k.startswith("Its runner"))
    ]
    assert ORCHESTRATOR in runners and set(RUNNER.values()) <= set(runners)
    unreached = {
        kind: sorted(modules - _reachable(RUNNER.get(kind, ORCHESTRATOR)))
        for kind, modules in detectors().items()
        if kind not in HEALTH_KINDS
    }
    unreached = {k: v for k, v in unreached.items() if v}
    assert not unreached, f"detectors their runner never imports: {unreached}"


def test_every_kind_has_a_row_in_the_findings_doc():
    text = (ROOT / "docs" / "findings.md").read_text(encoding="utf-8")
    missing = [k.value for k in _kinds() if f"| `{k.value}` |" not in text]
    assert not missing, f"docs/findings.md has no row for: {missing}"
