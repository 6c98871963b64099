"""The tail's stored incidents against the one-shot audit's (`manage.py audit --json`).

Each table is replayed into a fresh directory a few commits at a time with the tail running
between arrivals (seeded chunk sizes, interrupted steps, commits landing mid-audit: the
differential of tests/app/test_tail_differential.py). At the end the stored incidents must
be the CLI's `incidents`: same id, cause, severity, status, findings, first and last version
and damage; and every open finding linked to exactly the incident whose findings hold it.
The data-folder scan's kinds and the app's health kinds are not the tail's to find (the
worker's scan and the health hook make them), so incidents of those kinds alone are left out
on both sides.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from deltalake import DeltaTable, write_deltalake

from audit.core.runs import tailwindow
from audit.core.vocab import HEALTH_KINDS, SCAN_KINDS
from audit.incidents.models import Incident
from audit.models import Finding, Table
from tests.app.test_tail_differential import replay_through_tail
from tests.support import scenarios, storm_tables
from tests.support.tail_views import cli_json

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

NOT_THE_TAILS = SCAN_KINDS | HEALTH_KINDS
SEEDS = (1, 2)


def cli_incidents(report: dict) -> dict[str, tuple]:
    return {
        i["id"]: _view(i["cause"], i["severity"], i["status"], i["findings"], i, i["damage"])
        for i in report["incidents"]
        if not all(f["kind"] in NOT_THE_TAILS for f in i["findings"])
    }


def stored_incidents(table: Table) -> dict[str, tuple]:
    out = {}
    for row in Incident.objects.filter(table=table, finding_count__gt=0):
        linked = Finding.objects.filter(incident=row, status="open")
        findings = [{"kind": f.kind, "version": f.version} for f in linked]
        assert len(findings) == row.finding_count, row
        if all(f["kind"] in NOT_THE_TAILS for f in findings):
            continue
        facts = {"first_version": row.first_version, "last_version": row.last_version}
        out[row.incident_id] = _view(
            row.cause, row.severity, row.status, findings, facts, row.damage
        )
    return out


def _view(cause, severity, status, findings, versions, damage) -> tuple:
    return (
        cause,
        severity,
        status,
        tuple(sorted(Counter((f["kind"], f["version"]) for f in findings).items())),
        versions["first_version"],
        versions["last_version"],
        tuple(sorted((k, repr(v)) for k, v in damage.items())),
    )


def assert_incidents_equal(src: Path, dst: Path, seed: int, monkeypatch, chunks) -> dict:
    table = replay_through_tail(src, dst, seed, monkeypatch, chunks)
    assert table is not None and table.status == "ok", table and table.last_error
    report = cli_json(dst)
    assert report is not None
    want, got = cli_incidents(report), stored_incidents(table)
    assert got == want, f"seed {seed}: tail {got}\n cli {want}"
    # Every open finding of the tail's own kinds is linked, and to a stored incident.
    open_rows = Finding.objects.filter(table=table, status="open").exclude(kind__in=NOT_THE_TAILS)
    assert not open_rows.filter(incident__isnull=True).exists()
    return want


@pytest.fixture
def roots(tmp_path, settings, monkeypatch):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 0
    settings.AUDIT_BACKFILL_CHUNK = 2
    settings.AUDIT_BACKFILL_STEP_SECONDS = 60
    monkeypatch.setattr(tailwindow, "GUESS", 0)
    return tmp_path


SCENARIOS = sorted(name[len("build_") :] for name in dir(scenarios) if name.startswith("build_"))


@pytest.mark.parametrize("name", SCENARIOS)
def test_it_stores_the_clis_incidents_on_every_scenario(name, roots, monkeypatch):
    src = roots / "src"
    getattr(scenarios, f"build_{name}")(str(src))
    for seed in SEEDS:
        assert_incidents_equal(src, roots / f"tail-{seed}", seed, monkeypatch, (1, 2, 5, None))


@pytest.mark.parametrize("storm", range(4))
def test_it_stores_the_clis_incidents_on_random_concurrent_workloads(storm, roots, monkeypatch):
    src = roots / "src"
    storm_tables.build_storm(str(src), seed=storm)
    for seed in SEEDS:
        assert_incidents_equal(src, roots / f"tail-{seed}", seed, monkeypatch, (1, 3, None))


def _rows(day: str, ids: list[int]):
    import pyarrow as pa

    return pa.table({"day": [day] * len(ids), "id": ids, "value": [float(i) for i in ids]})


def test_it_stores_an_ignored_setting_heading_the_conflicts_it_let_through(roots, monkeypatch):
    src = str(roots / "src")
    write_deltalake(
        src, _rows("p0", [1, 2, 3]), configuration={"delta.isolationLevel": "WriteSerializable"}
    )
    for k in range(3):  # delta-rs (reading the setting as Serializable) misses these
        stale = DeltaTable(src)
        write_deltalake(src, _rows("p0", [100 + k]), mode="append")
        stale.delete(f"id = {k + 1}")
    want = assert_incidents_equal(Path(src), roots / "tail", 1, monkeypatch, (1,))
    assert [v[0] for v in want.values()].count("isolation_setting_ignored") == 1


def test_it_stores_one_incident_for_a_stale_overwriter_forty_times_over(roots, monkeypatch):
    """The demo's pattern: one writer overwriting a stale snapshot again and again is one
    incident, however the tail's chunks revealed its findings."""
    src = str(roots / "src")
    write_deltalake(src, _rows("p0", [0]), partition_by=["day"])
    for k in range(12):
        stale = DeltaTable(src)
        write_deltalake(src, _rows("p1", [k]), mode="append", partition_by=["day"])
        write_deltalake(stale, _rows("p0", [k]), mode="overwrite", partition_by=["day"])
    want = assert_incidents_equal(Path(src), roots / "tail", 2, monkeypatch, (1, 4, None))
    stale_ones = [v for v in want.values() if v[0].startswith("stale_write")]
    assert len(stale_ones) == 1 and sum(n for _, n in stale_ones[0][3]) >= 12


def test_it_stores_the_clis_incidents_on_the_demo_tables(roots, monkeypatch):
    from audit.demo import create_demo_tables

    causes = set()
    for path in create_demo_tables(roots / "demo", rounds=8):
        name = Path(path).name
        want = assert_incidents_equal(
            Path(path), roots / f"tail-{name}", 3, monkeypatch, (1, 5, None)
        )
        causes |= {view[0] for view in want.values()}
    assert {"stale_write_unchecked", "isolation_setting_ignored"} & causes, causes
