"""The fleet audit on Spark: many tables, and long histories split by version ranges, in one job.

Django-free: it takes a SparkSession and table URIs and yields one `TableOutcome` per table;
`workers.spark.tasks` stores the outcomes through audit.ingest like the Celery path does.

The plan (SPEC §5: Spark pays a cost per task, so tasks are few and carry many tables):

1. Driver: list each table's `_delta_log` (a listing, no reads) and turn it into units
   (workers.spark.units): a table of at most `chunk_commits` commits is one unit, audited
   whole in one task exactly as the Python path does; a longer one is cut into version ranges
   [a, b], each audited over only its concurrent window (the live tail's window,
   audit.core.runs.tailwindow), sending back its commits, its commit-level findings and
   its partial of the whole-history (table-level) findings.
2. One stage, no shuffle: `spark.range(P, numPartitions=P).mapInArrow`, task i running the
   units packed into bin i (a few bins per core, largest units first onto the least loaded).
   The listings travel with the job, so no task lists a log again.
3. Driver: each wave of bins (RESULT_COMMITS_PER_JOB commits at most) is one job collected
   with `toArrow` (every task of the wave runs at once), one row per unit, its results
   pickled. A whole table is handed on at once, a split one when all its units have arrived
   (ranges joined in version order, a range's findings replacing the earlier ones' from the
   first version it revealed a finding at, the table-level findings merged from the
   partials: audit.core.runs.range_partials; findings sorted as audit_history sorts them).

A split table costs about one task's CPU plus the driver's decoding of its results: no part
of it is read or audited twice (docs/spark.md, "Long histories").
"""

from __future__ import annotations

import hashlib
import os
import pickle
import stat
import sys
import tempfile
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa

from audit.core import serialize
from audit.core.data.dv import DvLimits
from audit.core.errors import DeltaAuditError, one_line
from audit.core.history.summary import History, paused_gc
from audit.core.log import open_log
from audit.core.model import Finding, IdentityColumn, LogListing, TableState
from audit.core.scrub import scrub_error
from workers.spark import units as spark_units
from workers.spark.archive import core_archive, running_from_archive
from workers.spark.units import RANGE, TABLE_LEVEL, Unit, pack, table_units

DEFAULT_CHUNK_COMMITS = 2000
RESULT_COMMITS_PER_JOB = 250_000


@dataclass
class FleetAudit:
    """An AuditResult as storage sees it (audit.ingest reads `findings` and `commits`)."""

    findings: list[Finding]
    commits: dict[int, serialize.AuditedCommit]
    hotspots: list[Any] = field(default_factory=list)


@dataclass
class TableOutcome:
    """One table's result: a history and its audit, or the one-line reason it failed."""

    table_uri: str
    history: History | None = None
    audit: FleetAudit | None = None
    error: str | None = None
    settings_payload: str | None = None  # the table's state as stage 2 sent it (JSON)

    def __post_init__(self) -> None:
        # Scrubbed again here, with the driver's secrets: an executor knows only its own, and
        # this text is stored (Table.last_error, the output table) and printed.
        if self.error is not None:
            self.error = scrub_error(self.error)


# --------------------------------------------------------------------------- planning (driver)


@dataclass
class TablePlan:
    table_uri: str
    listing: LogListing
    units: list[Unit]


def plan_table(uri: str, chunk_commits: int) -> TablePlan:
    """List one table's log and cut it into units. Raises DeltaAuditError."""
    log = open_log(uri)
    listing = log.listing
    versions = listing.commit_versions
    if versions:
        # The Python path refuses a log whose commit files have gaps (only checkpoints left):
        # run the same check, with the same message, before any task starts.
        next(log.iter_commits(versions[0], versions[-1]), None)
    for v in (listing.latest_version, *versions[-1:]):
        if v > 2**63 - 1:
            raise DeltaAuditError(f"{uri}: version {v} is out of range for Spark (64-bit)")
    # Keyed by the URI as the caller gave it (the outcome must find its way back to the
    # caller's table); histories use the normalised listing.table_uri like the Python path.
    return TablePlan(uri, listing, table_units(uri, versions, int(chunk_commits)))


def plan_tables(
    uris: Iterable[str], chunk_commits: int, threads: int = 16
) -> tuple[list[TablePlan], dict[str, str]]:
    """Plans for readable tables, and {uri: error} for the others. Listings run on threads."""
    uris = list(dict.fromkeys(uris))

    def attempt(uri: str) -> TablePlan | str:
        try:
            return plan_table(uri, chunk_commits)
        except DeltaAuditError as err:
            return one_line(str(err))

    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(uris) or 1))) as pool:
        results = list(pool.map(attempt, uris))
    plans = [r for r in results if isinstance(r, TablePlan)]
    errors = {u: r for u, r in zip(uris, results, strict=True) if isinstance(r, str)}
    return plans, errors


STORAGE_CONFIG_ENV = "AUDIT_STORAGE_CONFIG"  # names a TOML file of [[storage]] entries


def storage_config_text() -> str | None:
    """Driver: the per-root storage configuration's text, to ship to the tasks (or None).

    As written: values of the form `env:NAME` stay references, resolved on the executor.
    """
    path = os.environ.get(STORAGE_CONFIG_ENV)
    if not path:
        return None
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise DeltaAuditError(f"cannot read {STORAGE_CONFIG_ENV}={path}: {err.strerror}") from None


def use_storage_config(text: str | None) -> None:
    """Where a task runs: make the per-root storage configuration visible to the core.

    The one place executors learn how to reach object stores. The driver ships the
    configuration as written (which root uses which options, naming environment variables
    for secrets), never resolved secrets: audit.core.storage.stores resolves them here, on the
    executor, when a store is opened, so no secret is put in Spark's conf, logs or UI.
    """
    if not text:
        return
    digest = hashlib.sha256(text.encode()).hexdigest()
    known = _config_files.get(digest)
    if known is None or not _still_ours(*known):
        # A new name each time (mkstemp: O_EXCL, mode 0600): a predictable name in a shared
        # temp directory could be made first by another user, who would then choose the
        # options (endpoints) this task reads with.
        descriptor, name = tempfile.mkstemp(prefix="delta-audit-storage-", suffix=".toml")
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            out.write(text)
        known = (name, os.stat(name).st_ino)
        _config_files[digest] = known
    os.environ[STORAGE_CONFIG_ENV] = known[0]


# The files this process wrote, by the digest of their text (a reused Python worker runs many
# tasks: one file per configuration, not one per task).
_config_files: dict[str, tuple[str, int]] = {}


def _still_ours(path: str, inode: int) -> bool:
    """Whether `path` is still the regular file this process made (not removed or replaced)."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_ino == inode and info.st_uid == os.getuid()


def _clamp_listing(listing: LogListing, latest: int) -> LogListing:
    """The listing as the driver saw it: commits written since the plan are left for later."""
    if listing.latest_version == latest:
        return listing
    if listing.latest_version < latest:
        raise DeltaAuditError(
            f"{listing.table_uri}: the log shrank while being audited (latest version "
            f"{listing.latest_version}, expected {latest})",
            table_uri=listing.table_uri,
        )
    return replace(
        listing,
        commit_versions=[v for v in listing.commit_versions if v <= latest],
        checkpoints={v: f for v, f in listing.checkpoints.items() if v <= latest},
        compactions=[c for c in listing.compactions if c[1] <= latest],
        latest_version=latest,
        file_modification_times={
            v: t for v, t in listing.file_modification_times.items() if v <= latest
        },
    )


# --------------------------------------------------------------------------- the job (driver)


def audit_fleet(
    spark: Any,
    uris: Iterable[str],
    *,
    chunk_commits: int = DEFAULT_CHUNK_COMMITS,
    check_data: bool = True,
    read_roots: Iterable[str] | Mapping[str, Sequence[str]] | None = None,
    sample_rows: int | None = None,
    parallelism: int | None = None,
    paths: bool = False,
    dv_limits: DvLimits | None = None,
) -> Iterator[TableOutcome]:
    """Audit every table of `uris` in one Spark job; yields one TableOutcome per table.

    Data files are read only with `check_data`, only inside `read_roots` (None: each table's
    own root; a mapping: each table URI's own roots, e.g. its ReadScope, a table missing
    there its own root), a witness keeps at most `sample_rows` rows and deletion vectors are
    decoded within `dv_limits` (as `audit_history`).

    The summaries in the outcomes carry no file paths unless `paths=True` (storage needs none
    of them, and they are most of the bytes a big history sends back to the driver).

    Tables that cannot be listed are yielded first, with their error; the rest as the job's
    result streams back (in no particular order).
    """
    plans, errors = plan_tables(uris, chunk_commits)
    for uri, message in errors.items():
        yield TableOutcome(uri, error=message)
    if not plans:
        return
    prepare_executors(spark)
    cores = parallelism or _default_parallelism(spark)
    units = [u for p in plans for u in p.units]
    # One job per wave of bins, each collected whole (toArrow: every task of the wave runs at
    # once; toLocalIterator would run one partition after another). Waves bound what the
    # driver holds to about RESULT_COMMITS_PER_JOB commits' results (and maxResultSize).
    per_wave = cores * spark_units.UNITS_PER_CORE
    waves = max(1, -(-sum(u.cost for u in units) // RESULT_COMMITS_PER_JOB))
    bins = pack(units, per_wave * waves)
    listings = {p.table_uri: p.listing for p in plans}
    setup = _storage_setup(storage_config_text())
    expected = {p.table_uri: len(p.units) for p in plans}
    if isinstance(read_roots, Mapping):
        reads = spark_units.DataReads(check_data, None, sample_rows, dict(read_roots), dv_limits)
    else:
        roots = None if read_roots is None else tuple(read_roots)
        reads = spark_units.DataReads(check_data, roots, sample_rows, None, dv_limits)
    pending: dict[str, list[dict[str, Any]]] = {}
    waves_of_bins = [bins[first : first + per_wave] for first in range(0, len(bins), per_wave)]
    # Each wave is decoded on a helper thread while the next wave's job runs (this thread
    # then only waits on the JVM): decoding is the driver's serial part, ~10 µs a commit.
    with ThreadPoolExecutor(max_workers=1) as decoder:
        decoding = None
        for batches in _collected(spark, waves_of_bins, listings, reads, paths, setup):
            done, decoding = decoding, decoder.submit(_decoded, batches)
            del batches
            if done is not None:
                yield from _outcomes(done.result(), expected, listings, pending, paths)
        if decoding is not None:
            yield from _outcomes(decoding.result(), expected, listings, pending, paths)
    if pending:  # would mean Spark lost rows: never store half a table
        raise RuntimeError(f"results of {sorted(pending)[0]} are incomplete")


def _collected(
    spark: Any,
    waves: list[list[list[Unit]]],
    listings: dict[str, LogListing],
    reads: spark_units.DataReads,
    paths: bool,
    setup: Any,
) -> Iterator[list[pa.RecordBatch]]:
    """Each wave's result rows, one job per wave (submitted from this thread: a job sent from
    another thread started fresh Python workers, losing prepare_executors' warm ones)."""
    for wave in waves:
        task = spark_units.run_units(wave, listings, reads, paths, setup, spark_units.ROW_COMMITS)
        ids = spark.range(0, len(wave), 1, len(wave))
        yield ids.mapInArrow(task, _spark_schema(spark_units.RESULT_SCHEMA)).toArrow().to_batches()


def _decoded(batches: list[pa.RecordBatch]) -> list[dict[str, Any]]:
    """The wave's rows decoded, each batch let go once decoded (the wave's bytes and the
    objects built from them are not held at once: at 1M commits, the driver's peak)."""
    rows: list[dict[str, Any]] = []
    batches.reverse()
    while batches:
        rows += [decode_row(row) for row in batches.pop().to_pylist()]
    return rows


def _storage_setup(text: str | None) -> Any:
    def before() -> None:
        use_storage_config(text)

    return before


def _outcomes(
    rows: Iterable[dict[str, Any]],
    expected: dict[str, int],
    listings: dict[str, LogListing],
    pending: dict[str, list[dict[str, Any]]],
    paths: bool = True,
) -> Iterator[TableOutcome]:
    """A table's outcome as soon as all its units' rows have arrived (`pending` holds the
    units of tables still incomplete, across waves)."""
    for row in rows:
        uri = row["table_uri"]
        # Decoded at once: a split table's rows wait here for its other units, and its bytes
        # would otherwise sit beside the objects (a 1M-commit split: ~1 GB of parts).
        if isinstance(row["payload"], bytes):  # else decoded already (_decoded)
            row = decode_row(row)
        units = pending.setdefault(uri, [])
        units.append(row)
        heads = [u["parts"] for u in units if u["part"] == 0]
        if len(heads) == expected[uri] and len(units) == sum(heads):
            del pending[uri]
            yield outcome_from_units(uri, units, listings[uri], paths)


def decode_row(row: dict[str, Any]) -> dict[str, Any]:
    """A result row with its payload unpickled and its objects built (units.decode_payload)."""
    with paused_gc():
        # Pickles made by this job's own tasks (Spark ships its tasks' code the same way).
        return {**row, "payload": spark_units.decode_payload(pickle.loads(row["payload"]))}


def outcome_from_units(
    uri: str,
    units: list[dict[str, Any]],
    listing: LogListing,
    paths: bool = True,
) -> TableOutcome:
    """A table's outcome from its units' rows: one whole table, or ranges (+ table-level)."""
    # Unpickling builds many long-lived objects: the collector would re-walk them (7x slower).
    with paused_gc():
        return _outcome_from_units(uri, units, listing, paths)


def _outcome_from_units(
    uri: str, units: list[dict[str, Any]], listing: LogListing, paths: bool
) -> TableOutcome:
    pieces: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for u in sorted(units, key=lambda u: u["part"]):
        pieces.setdefault((u["start"], u["kind"]), []).append(u["payload"])
    decoded = sorted(
        ((start, kind, spark_units.merge_pieces(p)) for (start, kind), p in pieces.items()),
        key=lambda t: (t[1] != RANGE, t[0]),  # the ranges in version order, then the rest
    )
    errors = [(kind, d["error"]) for _, kind, d in decoded if "error" in d]
    if errors:
        # The whole-history unit reads what the Python path reads: its error is that path's.
        errors.sort(key=lambda e: e[0] == RANGE)
        return TableOutcome(uri, error=errors[0][1])
    table = next((d["table"] for _, kind, d in decoded if d.get("table") is not None), None)
    summaries, audits, findings, partials = [], {}, [], []
    for _, _, payload in decoded:
        more_summaries, more_audits = spark_units.decode_results(payload)
        summaries += more_summaries
        audits.update(more_audits)
        findings = _merge_findings(findings, payload)
        if "partial" in payload:
            partials.append(payload["partial"])
    if partials and not any(kind == TABLE_LEVEL for _, kind, _ in decoded):
        try:  # ranges only: the whole-history findings merged from their partials
            table, table_findings = _table_level(uri, listing, partials, table)
        except DeltaAuditError as err:
            return TableOutcome(uri, error=one_line(str(err)))
        except Exception as err:  # as in a task: a core bug fails this table, not the job
            return TableOutcome(uri, error=spark_units.internal_error(err))
        findings += table_findings
    findings.sort(key=lambda f: (f.version, f.kind, f.related_versions))  # audit_history's order
    state = _state(table)
    history = History(listing.table_uri, _clamp_listing(listing, state.version), state, summaries)
    return TableOutcome(
        uri, history, FleetAudit(findings, audits), settings_payload=orjson.dumps(table).decode()
    )


def _merge_findings(found: list[Finding], payload: dict[str, Any]) -> list[Finding]:
    """The findings so far (of the earlier ranges, in version order) with this unit's: a
    range's findings replace those from its `from` version on (units.revealed_findings)."""
    lo = payload.get("from")
    kept = found if lo is None else [f for f in found if f.version < lo]
    return kept + payload["findings"]


def _table_level(
    uri: str, listing: LogListing, partials: list[Any], table: dict[str, Any] | None
) -> tuple[dict[str, Any], list[Finding]]:
    """A split table's settings and whole-history findings, merged from its ranges' partials
    (audit.core.runs.range_partials): no history assembled, nothing audited again. Only a
    log whose integrity a range could not judge from its checkpointed state (a rare broken
    log, see audit.core.integrity.ranged) has its integrity checked here, over the whole log."""
    from audit.core.integrity.checks import IntegrityTap  # noqa: PLC0415
    from audit.core.runs import range_partials  # noqa: PLC0415
    from audit.core.vocab import INTEGRITY_KINDS  # noqa: PLC0415

    log = spark_units.ListedLog(uri, listing)
    if table is None:  # the last range ended before the latest version: the state from here
        table = spark_units.table_state_payload(log.snapshot(listing.latest_version))
    state = _state(table)
    findings = range_partials.merged_findings(
        partials,
        [c.name for c in state.identity_columns],
        state.protocol,
        log.store,
        listing.latest_version,
    )
    versions = listing.commit_versions
    if versions and range_partials.integrity_unresolved(partials):
        tap = IntegrityTap(log, versions[0])
        for _ in tap.observe(log.iter_commits(versions[0], versions[-1])):
            pass  # as integrity_findings does for a history built without its checks
        findings = [f for f in findings if f.kind not in INTEGRITY_KINDS] + tap.findings
    return table, findings


def _state(table: dict[str, Any]) -> TableState:
    return TableState(
        version=table["state_version"],
        metadata=serialize.metadata_from_json(table["metadata"]),
        protocol=serialize.protocol_from_json(table["protocol"]),
        files={},  # not shipped back: storage needs the settings, not the live files
        clustering_columns=table["clustering_columns"],
        identity_columns=[IdentityColumn(**c) for c in table["identity_columns"]],
    )


def outcome_from_rows(uri: str, rows: list[dict[str, Any]], listing: LogListing) -> TableOutcome:
    """Rebuild a table's History (without live files) and audit from its stage-2 rows."""
    errors = [r["payload"] for r in rows if r["kind"] == "error"]
    if errors:
        return TableOutcome(uri, error=errors[0])
    table_payload = next(r["payload"] for r in rows if r["kind"] == "table")
    table = orjson.loads(table_payload)
    summaries, commits = [], {}
    for r in sorted((r for r in rows if r["kind"] == "commit"), key=lambda r: r["version"]):
        payload = orjson.loads(r["payload"])
        summaries.append(serialize.summary_from_row(payload["summary"]))
        if payload["audit"] is not None:
            commits[r["version"]] = serialize.commit_audit_from_json(payload["audit"])
    findings = [
        serialize.finding_from_row(orjson.loads(r["payload"]))
        for r in rows
        if r["kind"] == "finding"
    ]
    state = _state(table)
    history = History(listing.table_uri, _clamp_listing(listing, state.version), state, summaries)
    return TableOutcome(uri, history, FleetAudit(findings, commits), settings_payload=table_payload)


# --------------------------------------------------------------------------- plumbing


def _spark_schema(schema: pa.Schema) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def _default_parallelism(spark: Any) -> int:
    try:
        return max(1, int(spark.sparkContext.defaultParallelism))
    except Exception:  # Spark Connect has no SparkContext: the server's settings tell
        pass
    for key in ("spark.default.parallelism", "spark.cores.max", "spark.executor.cores"):
        try:
            value = spark.conf.get(key, None)
        except Exception:
            value = None
        if value and str(value).isdigit():
            return max(1, int(value))
    return 4


_prepared: weakref.WeakSet[Any] = weakref.WeakSet()  # sessions whose executors are ready


def prepare_executors(spark: Any) -> None:
    """Ship the core to a cluster's executors and check they can run it (once per session).

    This module's functions are pickled by value, so executors need only `audit.core` (a zip
    built here and added to the job: never assumed to exist on the cluster) and its
    libraries (orjson, pyarrow, sqlglot), never Django or Celery. The probe turns an executor
    Python that lacks them into one line (DeltaAuditError) before the real job starts.
    Local masters share this process's sys.path and Python: nothing to ship or check.
    Then one task per core starts a Python worker and imports the audit into it: Spark keeps
    workers alive between jobs (spark.python.worker.reuse), so jobs start warm.
    """
    from pyspark import cloudpickle

    from workers.spark.probe import probe_executors  # noqa: PLC0415

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    cloudpickle.register_pickle_by_value(spark_units)
    if spark in _prepared:
        return
    if not _master_of(spark).startswith("local"):
        if not running_from_archive():
            archive = core_archive()
            if hasattr(spark, "addArtifacts"):  # Spark Connect
                spark.addArtifacts(archive, pyfile=True)
            else:
                spark.sparkContext.addPyFile(archive)
        probe_executors(spark, tasks=min(_default_parallelism(spark), 4))
    cores = _default_parallelism(spark)
    warm = spark.range(0, cores, 1, cores).mapInArrow(_warm_worker, "id long")
    warm.collect()
    _prepared.add(spark)


def _warm_worker(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    import audit.core.audit  # noqa: F401, PLC0415
    import audit.core.runs.tailwindow  # noqa: F401, PLC0415

    for _ in batches:
        pass
    return iter(())


def _master_of(spark: Any) -> str:
    try:
        return str(spark.sparkContext.master)
    except Exception:
        return "sc://"
