"""The whole house imports one way: no module of audit/, workers/, frontend/ or config/ imports,
even lazily, one that imports it back (directly or through others). No exemptions.

Parses every module's imports with ast (module level, inside functions, under TYPE_CHECKING),
so a cycle hidden in a function-local import is caught without importing anything. Importing
`a.b.c` also runs the package `a.b`, so that edge counts too (except a module's own packages,
which are being imported already when it runs).
"""

from __future__ import annotations

from tests.support.import_graph import import_cycles, import_graph


def test_it_sees_every_part_of_the_house():
    graph = import_graph()
    assert "audit.ingest.chunk" in graph["audit.tail.step"]
    assert "audit.ingest" in graph["audit.tail.step"]  # the package runs first
    assert "workers.spark.job" in graph["workers.spark.tasks"]  # a function-local import
    assert {"frontend.views.overview", "config.settings"} <= set(graph)


def test_it_finds_a_cycle_through_a_function_local_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycles(graph) == [["a", "b", "c"]]


def test_it_has_no_import_cycle_anywhere():
    cycles = import_cycles(import_graph())
    assert not cycles, f"import cycles: {cycles}"
