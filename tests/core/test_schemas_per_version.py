"""The schema at each version and the changes between two, from a real table's change
history (audit/core/health/schemas.py over changes_from_history)."""

from __future__ import annotations

from audit.core.health.changes import changes_from_history, schema_columns
from audit.core.health.schemas import schema_at, schema_changes
from audit.core.history.summary import load_history
from tests.support.schema_tables import evolving_schema_table


def _schemas(tmp_path):
    path = evolving_schema_table(tmp_path / "t")
    history = load_history(str(path))
    changes = changes_from_history(history)
    meta = history.state.metadata
    now = (schema_columns(meta.schema_string), list(meta.partition_columns))
    return [schema_at(changes, v, *now) for v in range(4)]


def _columns(schema):
    return [(c["name"], c["type"], c["partition"]) for c in schema["columns"]]


def test_it_gives_the_columns_each_version_had(tmp_path):
    v0, v1, v2, v3 = _schemas(tmp_path)
    assert _columns(v0) == [
        ("day", "string", False),
        ("id", "long", False),
        ("amount", "long", False),
    ]
    assert [c["name"] for c in v1["columns"]] == ["day", "id", "amount", "note"]
    assert v1["since"] == 1 and v2["since"] == 1 and v0["since"] is None
    assert v2["columns"] == v1["columns"]
    assert _columns(v3) == [
        ("day", "string", True),
        ("id", "long", False),
        ("amount", "double", False),
    ]
    assert v3["partition_columns"] == ["day"] and v0["partition_columns"] == []


def test_it_names_what_changed_between_two_versions(tmp_path):
    v0, v1, v2, v3 = _schemas(tmp_path)
    added = schema_changes(v0, v1)
    assert [c["name"] for c in added["added"]] == ["note"] and added["partitioning"] is None
    assert added["changed"] and not schema_changes(v1, v2)["changed"]
    later = schema_changes(v1, v3)
    assert [c["name"] for c in later["dropped"]] == ["note"]
    assert later["type_changed"] == [{"name": "amount", "from": "long", "to": "double"}]
    assert later["partitioning"] == {"from": [], "to": ["day"]}
    assert later["added"] == [] and (later["from"], later["to"]) == (1, 3)


def test_it_reads_a_table_that_never_changed_from_its_current_schema():
    now = {"a": {"type": "integer", "nullable": False}}
    schema = schema_at([], 5, now, ["a"])
    assert schema["columns"] == [
        {"name": "a", "type": "integer", "nullable": False, "partition": True}
    ]
    assert schema_at([], 5)["columns"] == []
