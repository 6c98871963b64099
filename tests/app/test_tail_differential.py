"""The live tail against the one-shot audit (`manage.py audit --json`), on every table we have.

Every scenario table of tests/support/scenarios.py and every real table of tests/data/delta-tables is
replayed into a fresh directory a few commits at a time (as writers would land them), and the
tail (`audit.tail_once`) runs between the arrivals with seeded random chunk sizes. Some
steps are interrupted (the step raises after storing, so its transaction rolls back and the next
step redoes it) and some see new commits land while their chunk is being audited. At the end the
stored commits and the open findings must equal the CLI's JSON for the same log: same versions,
read versions (and how they were obtained), concurrent versions; same finding kinds, versions,
related versions, severity and confirmation.
"""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path

import pytest

from audit.core.runs import tailwindow
from audit.ingest import chunk
from audit.ingest.tables import register_table
from audit.models import Table
from audit.tail import step
from audit.tail.step import tail_once
from tests.support import revealing_tables, scenarios, storm_tables
from tests.support.logutil import all_table_dirs
from tests.support.tail_views import cli_json, cli_view, stored_view

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

SEEDS = (1, 2, 3)
# None: a worker's step, several chunks of AUDIT_BACKFILL_CHUNK with one listing.
CHUNKS = (1, 1, 2, 3, 5, 7, 50, None)
SCENARIOS = sorted(name[len("build_") :] for name in dir(scenarios) if name.startswith("build_"))
VERSIONED = re.compile(r"^(\d{20})\.")


class Interrupted(Exception):
    """Raised inside a tail step to simulate a worker dying before its transaction commits."""


class Arrivals:
    """Copies a finished table's log into `dst` a version at a time, as writers would."""

    def __init__(self, src: Path, dst: Path):
        self.src_log, self.dst_log = src / "_delta_log", dst / "_delta_log"
        # Data files first (the tail reads them only for commits it has seen).
        shutil.copytree(src, dst, ignore=lambda d, names: ["_delta_log"] if d == str(src) else [])
        self.dst_log.mkdir(parents=True, exist_ok=True)
        by_version: dict[int, list[Path]] = {}
        self.unversioned: list[Path] = []
        for p in sorted(self.src_log.rglob("*")):
            if p.is_dir():
                continue
            match = VERSIONED.match(p.name)
            if match and p.parent == self.src_log:
                by_version.setdefault(int(match.group(1)), []).append(p)
            else:
                self.unversioned.append(p)
        self.versions = sorted(by_version)
        self.by_version = by_version
        self.next = 0

    @property
    def done(self) -> bool:
        return self.next >= len(self.versions) and not self.unversioned

    def land(self, n: int) -> None:
        for version in self.versions[self.next : self.next + n]:
            for p in self.by_version[version]:
                shutil.copy2(p, self.dst_log / p.name)
        self.next += n
        if self.next >= len(self.versions):
            for p in self.unversioned:  # _last_checkpoint etc. once what they name is there
                target = self.dst_log / p.relative_to(self.src_log)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(p, target)
            self.unversioned = []


def replay_through_tail(
    src: Path, dst: Path, seed: int, monkeypatch, chunks: tuple[int | None, ...] = CHUNKS
) -> Table | None:
    rng = random.Random(seed)
    arrivals = Arrivals(src, dst)
    arrivals.land(rng.randint(1, 3))
    try:
        table, _ = register_table(str(dst))
    except Exception:  # noqa: BLE001  (a log not readable yet: land everything, register again)
        arrivals.land(len(arrivals.versions))
        try:
            table, _ = register_table(str(dst))
        except Exception:  # noqa: BLE001
            return None
    real_run_audit, real_upsert = step.run_audit, step.upsert_findings
    mode = {"land_during_audit": 0, "interrupt": False}

    def run_audit(tailed, history, versions):
        if mode["land_during_audit"]:
            arrivals.land(mode["land_during_audit"])
        return real_run_audit(tailed, history, versions)

    def upsert_findings(*args, **kwargs):
        result = real_upsert(*args, **kwargs)
        if mode["interrupt"]:
            mode["interrupt"] = False
            raise Interrupted
        return result

    monkeypatch.setattr(step, "run_audit", run_audit)
    # The step writes gap and table-level findings; the chunk writer the commit-level ones.
    for module in (step, chunk):
        monkeypatch.setattr(module, "upsert_findings", upsert_findings)
    for _ in range(10_000):
        mode["land_during_audit"] = rng.choice([0, 0, 1, 2]) if not arrivals.done else 0
        mode["interrupt"] = rng.random() < 0.15
        try:
            # None: a worker's step, several chunks of AUDIT_BACKFILL_CHUNK with one listing.
            result = tail_once(table.id, chunk=rng.choice(chunks))
        except Interrupted:
            continue
        if not arrivals.done and rng.random() < 0.6:
            arrivals.land(rng.randint(1, 4))
        if arrivals.done and not result.more and not mode["interrupt"]:
            break
    monkeypatch.setattr(step, "run_audit", real_run_audit)
    for module in (step, chunk):
        monkeypatch.setattr(module, "upsert_findings", real_upsert)
    # Up to date: one last idle step refreshes the table-level findings (no debounce here).
    tail_once(table.id)
    table.refresh_from_db()
    return table


def assert_tail_equals_cli(
    src: Path, dst: Path, seed: int, monkeypatch, chunks: tuple[int | None, ...] = CHUNKS
) -> dict | None:
    table = replay_through_tail(src, dst, seed, monkeypatch, chunks)
    report = cli_json(dst)
    if report is None:
        assert table is None or table.status == "error", (
            "the CLI refuses this log; so must the tail"
        )
        return None
    assert table is not None and table.status == "ok", table and table.last_error
    want_commits, want_findings = cli_view(report)
    got_commits, got_findings = stored_view(table)
    assert sorted(got_commits) == sorted(want_commits)
    diff = {
        v: (got_commits[v], want_commits[v])
        for v in want_commits
        if got_commits[v] != want_commits[v]
    }
    assert not diff, f"seed {seed}: stored commits differ from the CLI: {diff}"
    assert got_findings == want_findings, (
        f"seed {seed}: extra {got_findings - want_findings}, missing {want_findings - got_findings}"
    )
    return report


@pytest.fixture
def roots(tmp_path, settings, monkeypatch):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_TABLE_FINDINGS_SECONDS = 0
    settings.AUDIT_BACKFILL_CHUNK = 2
    settings.AUDIT_BACKFILL_STEP_SECONDS = 60
    # The first guess of the window is only a speed-up: without it every widening is exercised.
    monkeypatch.setattr(tailwindow, "GUESS", 0)
    return tmp_path


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_tail_equals_the_cli_on_every_scenario(name, roots, monkeypatch):
    src = roots / "src"
    getattr(scenarios, f"build_{name}")(str(src))
    for seed in SEEDS:
        assert_tail_equals_cli(src, roots / f"tail-{seed}", seed, monkeypatch)


REAL_TABLES = all_table_dirs()


@pytest.mark.parametrize(("name", "path"), REAL_TABLES, ids=[name for name, _ in REAL_TABLES])
def test_the_tail_equals_the_cli_on_every_real_table(name, path, roots, monkeypatch):
    for seed in SEEDS:
        assert_tail_equals_cli(Path(path), roots / f"tail-{seed}", seed, monkeypatch)


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 7, 50, None])
@pytest.mark.parametrize("name", sorted(revealing_tables.BUILDERS))
def test_it_stores_findings_a_later_commit_reveals_at_every_chunk_size(
    name, chunk, roots, monkeypatch
):
    """A finding placed before the commit that reveals it (a metadata change that a later
    overwrite or delete without a read version ran across) is found whatever the chunks."""
    src = roots / "src"
    planted = revealing_tables.BUILDERS[name](str(src))
    for seed in SEEDS:
        report = assert_tail_equals_cli(src, roots / f"tail-{seed}", seed, monkeypatch, (chunk,))
        assert report is not None
        found = {
            (f["kind"], f["version"], tuple(f["related_versions"])) for f in report["findings"]
        }
        want = ("concurrent_metadata_change", planted["metadata_change"])
        assert (*want, tuple(planted["in_flight"])) in found, found


@pytest.mark.parametrize("history", range(8))
def test_it_equals_the_cli_on_random_short_histories_with_stale_writes_at_chunk_size_1(
    history, roots, monkeypatch
):
    """Where a stale write's derived read version lands is up to the files it leaves: some of
    these place a finding before the commit that reveals it, some do not."""
    src = roots / "src"
    revealing_tables.build_random_history(str(src), seed=history)
    for seed in SEEDS:
        assert_tail_equals_cli(src, roots / f"tail-{seed}", seed, monkeypatch, (1,))


@pytest.mark.parametrize("storm", range(6))
def test_it_equals_the_cli_on_random_concurrent_workloads(storm, roots, monkeypatch):
    """Threads of delta-rs writers racing (stale ones among them) with every kind of operation:
    whatever log the race leaves, the tail stores what the one-shot audit reports."""
    src = roots / "src"
    storm_tables.build_storm(str(src), seed=storm)
    assert len(list((src / "_delta_log").glob("*.json"))) >= 6, "the storm wrote too little"
    for seed in SEEDS:
        assert_tail_equals_cli(src, roots / f"tail-{seed}", seed, monkeypatch, (1, 2, 3, None))
