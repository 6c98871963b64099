"""Tables written by named delta-rs writers, and their contention telemetry."""

from __future__ import annotations

from pathlib import Path

from deltalake import CommitProperties, DeltaTable, write_deltalake

from audit.core.audit import audit_history
from audit.core.history.summary import load_history
from audit.core.writers import writer_telemetry
from tests.support.tables import rows


def as_user(name: str, **extra) -> CommitProperties:
    # delta-rs puts custom metadata at the top level of commitInfo, where Spark writes userName.
    return CommitProperties(custom_metadata={"userName": name}, **extra)


def build_two_writers(path: Path) -> None:
    """alice appends; bob deletes from a snapshot alice's appends overtook (v3 read v1)."""
    write_deltalake(str(path), rows(3), partition_by=["day"], commit_properties=as_user("alice"))
    write_deltalake(str(path), rows(2, start=10), mode="append", commit_properties=as_user("alice"))
    stale = DeltaTable(str(path))  # bob reads v1
    write_deltalake(str(path), rows(2, start=20), mode="append", commit_properties=as_user("alice"))
    stale.delete("id = 1", commit_properties=as_user("bob"))  # v3, readVersion 1


def telemetry(path: Path) -> dict:
    history = load_history(str(path))
    return writer_telemetry(history, audit_history(history, check_data=False).commits)
