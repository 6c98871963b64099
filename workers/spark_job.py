"""The fleet audit on Spark: many tables' logs read in parallel, audited per table by the core.

Django-free: it takes a SparkSession and table URIs and yields one `TableOutcome` per table;
`workers.spark_tasks` stores the outcomes through audit.ingest like the Celery path does.

The plan (SPEC §5: Spark pays a task-level cost per small file, so it never sees commit files):

1. Driver: list each table's `_delta_log` (a listing, no reads) and cut its commit versions
   into chunks of `chunk_commits` consecutive versions: rows (table_uri, latest, start, end).
2. Stage 1, `mapInArrow` over the chunk rows (spread round-robin over the tasks): each chunk
   is read with the core's own reader (`iter_commits`, orjson, read-ahead) and summarised by
   `summarize_commits`; out come compact rows (audit.core.serialize.summary_to_row), plus the
   metaData / protocol a commit set.
3. Stage 2, `groupBy(table_uri).applyInArrow`: per table, the History is rebuilt from those
   rows (the latest state comes from the core's replay: latest checkpoint + later commits) and
   `audit_history` runs, the same function the Celery path calls. Out come the commits with
   their audits, the findings and the table's settings, as JSON rows.
4. Driver: `toLocalIterator` streams the result partition by partition; each table's rows are
   contiguous, so it is handed on as soon as it is complete.

The one cross-chunk dependency of a summary is the table configuration in force before the
chunk (it decides the *derived* isolation level of commits that recorded none). Chunks
summarise with what they see; stage 2 re-derives those levels from the full config timeline
with the core's `effective_isolation_level`.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import weakref
import zipfile
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa

from audit.core import serialize
from audit.core.errors import DeltaAuditError
from audit.core.log import iter_commits, open_log
from audit.core.model import (
    Commit,
    CommitSummary,
    Finding,
    IdentityColumn,
    LogListing,
    Metadata,
    Protocol,
    TableState,
)
from audit.core.storage import open_store
from audit.core.summary import History, effective_isolation_level, summarize_commits

DEFAULT_CHUNK_COMMITS = 2000
RESULT_COMMITS_PER_PARTITION = 20_000
_MARKER = -1  # version of the row an empty chunk emits, so every table reaches stage 2

CHUNK_SCHEMA = pa.schema(
    [("table_uri", pa.string()), ("latest", pa.int64()), ("start", pa.int64()), ("end", pa.int64())]
)
STAGE1_SCHEMA = pa.schema(
    [
        ("table_uri", pa.string()),
        ("latest", pa.int64()),
        *serialize.SUMMARY_SCHEMA,
        ("metadata", pa.string()),
        ("protocol", pa.string()),
        ("error", pa.string()),
    ]
)
RESULT_SCHEMA = pa.schema(
    [
        ("table_uri", pa.string()),
        ("kind", pa.string()),  # table | commit | finding | error
        ("version", pa.int64()),
        ("payload", pa.string()),
    ]
)


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


# --------------------------------------------------------------------------- planning (driver)


@dataclass
class TablePlan:
    table_uri: str
    listing: LogListing
    chunks: list[tuple[int, int]]


def plan_table(uri: str, chunk_commits: int) -> TablePlan:
    """List one table's log and cut its commits into chunks. Raises DeltaAuditError."""
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
    step = max(int(chunk_commits), 1)
    chunks = [
        (versions[i], versions[min(i + step, len(versions)) - 1])
        for i in range(0, len(versions), step)
    ]
    # Keyed by the URI as the caller gave it (the outcome must find its way back to the
    # caller's table); histories use the normalised listing.table_uri like the Python path.
    return TablePlan(uri, listing, chunks or [(0, _MARKER)])


def plan_tables(
    uris: Iterable[str], chunk_commits: int, threads: int = 16
) -> tuple[list[TablePlan], dict[str, str]]:
    """Plans for readable tables, and {uri: error} for the others. Listings run on threads."""
    uris = list(dict.fromkeys(uris))

    def attempt(uri: str) -> TablePlan | str:
        try:
            return plan_table(uri, chunk_commits)
        except DeltaAuditError as err:
            return _one_line(str(err))

    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(uris) or 1))) as pool:
        results = list(pool.map(attempt, uris))
    plans = [r for r in results if isinstance(r, TablePlan)]
    errors = {u: r for u, r in zip(uris, results, strict=True) if isinstance(r, str)}
    return plans, errors


# --------------------------------------------------------------------------- stage 1 (tasks)


def summarize_chunk(uri: str, latest: int, start: int, end: int) -> list[dict[str, Any]]:
    """Stage-1 rows of commits start..end of one table (read and summarised by the core)."""
    base = {"table_uri": uri, "latest": latest, "metadata": None, "protocol": None, "error": None}
    if start > end:
        return [{**base, **dict.fromkeys(serialize.SUMMARY_COLUMNS), "version": _MARKER}]
    try:
        return [{**base, **row} for row in _chunk_rows(uri, start, end)]
    except DeltaAuditError as err:
        return [_error_row(base, _one_line(str(err)))]
    except Exception as err:  # a core bug on a hostile log must fail this table, not the job
        return [_error_row(base, _internal(err))]


def _chunk_rows(uri: str, start: int, end: int) -> Iterator[dict[str, Any]]:
    store = open_store(uri)
    # The driver checked these versions exist: a listing of just this range saves each task a
    # full listing of the log (which is as large as the log).
    listing = LogListing(uri, list(range(start, end + 1)), {}, [], None, end, start)
    current: list[Commit] = []

    def remember(commits: Iterable[Commit]) -> Iterator[Commit]:
        for commit in commits:
            current[:] = [commit]
            yield commit

    commits = remember(iter_commits(store, listing, start, end))
    for summary in summarize_commits(commits, [], []):
        row = serialize.summary_to_row(summary)
        commit = current[0]
        row["metadata"] = serialize.metadata_to_json(commit.metadata)
        row["protocol"] = serialize.protocol_to_json(commit.protocol)
        yield row


def _error_row(base: dict[str, Any], message: str) -> dict[str, Any]:
    return {
        **base,
        **dict.fromkeys(serialize.SUMMARY_COLUMNS),
        "version": _MARKER,
        "error": message,
    }


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
    for secrets), never resolved secrets: audit.core.storage resolves them here, on the
    executor, when a store is opened, so no secret is put in Spark's conf, logs or UI.
    """
    if not text:
        return
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"delta-audit-storage-{os.getuid()}-{digest}.toml"
    if not path.exists():
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            out.write(text)
    os.environ[STORAGE_CONFIG_ENV] = str(path)


def _stage1(
    storage_config: str | None,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def summarize(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        use_storage_config(storage_config)
        yield from _summarize_batches(batches)

    return summarize


def _summarize_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for chunk in batch.to_pylist():
            rows = summarize_chunk(
                chunk["table_uri"], chunk["latest"], chunk["start"], chunk["end"]
            )
            yield pa.RecordBatch.from_pylist(rows, schema=STAGE1_SCHEMA)


# --------------------------------------------------------------------------- stage 2 (tasks)


def history_from_rows(uri: str, latest: int, rows: list[dict[str, Any]]) -> History:
    """The History `summary.history_from_log` builds, from stage-1 rows instead of a re-read.

    Raises DeltaAuditError (first the state's, as history_from_log would, then the chunks').
    """
    log = open_log(uri)
    log.listing = _clamp_listing(log.listing, latest)
    state = log.snapshot(latest)
    for row in rows:
        if row["error"] is not None:
            raise DeltaAuditError(row["error"], table_uri=uri)
    rows = sorted((r for r in rows if r["version"] != _MARKER), key=lambda r: r["version"])
    metadata_timeline: list[tuple[int, Metadata]] = []
    protocol_timeline: list[tuple[int, Protocol]] = []
    summaries = []
    for row in rows:
        metadata = serialize.metadata_from_json(row["metadata"])
        protocol = serialize.protocol_from_json(row["protocol"])
        if metadata is not None:
            metadata_timeline.append((row["version"], metadata))
        if protocol is not None:
            protocol_timeline.append((row["version"], protocol))
        summary = serialize.summary_from_row(row)
        _rederive_isolation_level(summary, metadata_timeline)
        summaries.append(summary)
    if not metadata_timeline and state.metadata is not None:
        metadata_timeline.append((state.version, state.metadata))
    if not protocol_timeline and state.protocol is not None:
        protocol_timeline.append((state.version, state.protocol))
    return History(log.uri, log.listing, state, summaries, metadata_timeline, protocol_timeline)


def _rederive_isolation_level(
    summary: CommitSummary, metadata_timeline: list[tuple[int, Metadata]]
) -> None:
    """Derive a level the commit did not record from the config in force (see module doc)."""
    if summary.facts.get("isolation_level") == "recorded":
        return
    properties = metadata_timeline[-1][1].configuration if metadata_timeline else {}
    level = effective_isolation_level(summary.engine, properties)
    summary.isolation_level = level
    summary.facts["isolation_level"] = "derived" if level else "unknown"


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


def audit_rows(
    uri: str, latest: int, rows: list[dict[str, Any]], *, check_data: bool, paths: bool = False
) -> list[dict[str, Any]]:
    """Stage-2 result rows of one table: its settings, commits with audits, findings.

    The summaries shipped back leave out file paths unless `paths` (see summary_to_row).
    """
    from audit.core.audit import audit_history  # noqa: PLC0415  (keeps stage 1 imports small)

    history = history_from_rows(uri, latest, rows)
    result = audit_history(history, check_data=check_data)
    out = [_result(uri, "table", latest, _table_payload(history))]
    for summary in history.summaries:
        audit = result.commits.get(summary.version)
        payload = {
            "summary": serialize.summary_to_row(summary, paths=paths),
            "audit": None if audit is None else serialize.commit_audit_to_json(audit),
        }
        out.append(_result(uri, "commit", summary.version, orjson.dumps(payload).decode()))
    for finding in result.findings:
        row = serialize.finding_to_row(finding)
        out.append(_result(uri, "finding", finding.version, orjson.dumps(row).decode()))
    return out


def _table_payload(history: History) -> str:
    state = history.state
    return orjson.dumps(
        {
            "state_version": state.version,
            "metadata": serialize.metadata_to_json(state.metadata),
            "protocol": serialize.protocol_to_json(state.protocol),
            "clustering_columns": list(state.clustering_columns),
            "identity_columns": [asdict(c) for c in state.identity_columns],
            "num_files": len(state.files),
        }
    ).decode()


def _result(uri: str, kind: str, version: int | None, payload: str) -> dict[str, Any]:
    return {"table_uri": uri, "kind": kind, "version": version, "payload": payload}


def _stage2(
    check_data: bool, paths: bool, storage_config: str | None = None
) -> Callable[[pa.Table], pa.Table]:
    def audit_group(table: pa.Table) -> pa.Table:
        use_storage_config(storage_config)
        rows = table.to_pylist()
        uri, latest = rows[0]["table_uri"], rows[0]["latest"]
        try:
            out = audit_rows(uri, latest, rows, check_data=check_data, paths=paths)
        except DeltaAuditError as err:
            out = [_result(uri, "error", None, _one_line(str(err)))]
        except Exception as err:  # one table's bug must not fail the fleet
            out = [_result(uri, "error", None, _internal(err))]
        return pa.Table.from_pylist(out, schema=RESULT_SCHEMA)

    return audit_group


# --------------------------------------------------------------------------- the job (driver)


def audit_fleet(
    spark: Any,
    uris: Iterable[str],
    *,
    chunk_commits: int = DEFAULT_CHUNK_COMMITS,
    check_data: bool = True,
    parallelism: int | None = None,
    paths: bool = False,
) -> Iterator[TableOutcome]:
    """Audit every table of `uris` in one Spark job; yields one TableOutcome per table.

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
    chunk_rows = [(p.table_uri, p.listing.latest_version, s, e) for p in plans for s, e in p.chunks]
    listings = {p.table_uri: p.listing for p in plans}
    chunks = spark.createDataFrame(chunk_rows, schema=_spark_schema(CHUNK_SCHEMA))
    # A few chunks per core evens out chunks of unequal cost (short tails, big commits).
    chunks = chunks.repartition(max(1, min(len(chunk_rows), cores * 3)))
    storage_config = storage_config_text()  # as written: see use_storage_config
    summaries = chunks.mapInArrow(_stage1(storage_config), _spark_schema(STAGE1_SCHEMA))
    # Hash-partition by table once: the groupBy reuses it. At least 2 tasks per core, and
    # enough that one partition's result (which toLocalIterator holds in the driver's heap)
    # stays around RESULT_COMMITS_PER_PARTITION commits.
    commits = sum(len(p.listing.commit_versions) for p in plans)
    wanted = max(cores * 2, -(-commits // RESULT_COMMITS_PER_PARTITION))
    groups = summaries.repartition(max(1, min(len(plans), wanted)), "table_uri")
    results = groups.groupBy("table_uri").applyInArrow(
        _stage2(check_data, paths, storage_config), _spark_schema(RESULT_SCHEMA)
    )
    yield from _outcomes(results.toLocalIterator(prefetchPartitions=True), listings)


def _outcomes(rows: Iterable[Any], listings: dict[str, LogListing]) -> Iterator[TableOutcome]:
    """Group the streamed result rows by table (each table's rows arrive contiguously)."""
    current: str | None = None
    buffer: list[dict[str, Any]] = []
    done: set[str] = set()
    for row in rows:
        d = row.asDict()
        if d["table_uri"] != current:
            if current is not None:
                yield outcome_from_rows(current, buffer, listings[current])
                done.add(current)
            current, buffer = d["table_uri"], []
            if current in done:  # would mean Spark interleaved groups: never store half a table
                raise RuntimeError(f"result rows of {current} arrived in two pieces")
        buffer.append(d)
    if current is not None:
        yield outcome_from_rows(current, buffer, listings[current])


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
    state = TableState(
        version=table["state_version"],
        metadata=serialize.metadata_from_json(table["metadata"]),
        protocol=serialize.protocol_from_json(table["protocol"]),
        files={},  # not shipped back: storage needs the settings, not the live files
        clustering_columns=table["clustering_columns"],
        identity_columns=[IdentityColumn(**c) for c in table["identity_columns"]],
    )
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
    """
    from pyspark import cloudpickle

    from workers.spark_probe import probe_executors  # noqa: PLC0415

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    if spark in _prepared or _master_of(spark).startswith("local"):
        return
    if not _running_from_archive():
        archive = core_archive()
        if hasattr(spark, "addArtifacts"):  # Spark Connect
            spark.addArtifacts(archive, pyfile=True)
        else:
            spark.sparkContext.addPyFile(archive)
    probe_executors(spark, tasks=min(_default_parallelism(spark), 4))
    _prepared.add(spark)


def _master_of(spark: Any) -> str:
    try:
        return str(spark.sparkContext.master)
    except Exception:
        return "sc://"


JOB_MODULES = ("spark_job.py", "spark_probe.py", "spark_output.py", "spark_entry.py")
# The zip's `workers` package holds only the Django-free job modules: the real
# workers/__init__.py starts the Celery app, which a cluster has no use for (nor Celery).
_WORKERS_STUB = b'"""The Spark job modules of Delta Audit (shipped zip: no Celery, no Django)."""\n'


def core_archive(target: str | None = None) -> str:
    """A zip of the core (audit/__init__.py + audit/core/**.py) and the Spark job's modules.

    The name carries a hash of the contents: Spark refuses to add a different file under a
    name it has already shipped, and a fresh name per build never serves a stale core.
    """
    root = Path(__file__).resolve().parent.parent
    sources = [(root / "audit" / "__init__.py", "audit/__init__.py")]
    core = sorted((root / "audit" / "core").rglob("*.py"))  # with its packages (core/log/)
    sources += [(p, p.relative_to(root).as_posix()) for p in core]
    sources += [(root / "workers" / name, f"workers/{name}") for name in JOB_MODULES]
    digest = hashlib.sha256(_WORKERS_STUB)
    for path, name in sources:
        digest.update(name.encode() + b"\0" + path.read_bytes())
    directory = Path(target) if target else Path(tempfile.mkdtemp(prefix="delta-audit-code-"))
    target_path = directory / f"delta_audit_core_{digest.hexdigest()[:12]}.zip"
    with zipfile.ZipFile(target_path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("workers/__init__.py", _WORKERS_STUB)
        for path, name in sources:
            archive.write(path, name)
    return str(target_path)


def _running_from_archive() -> bool:
    """True inside a shipped zip (spark-submit --py-files): executors have it already."""
    return not Path(__file__).is_file()


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else "unknown error"


def _internal(err: Exception) -> str:
    return f"internal error while auditing: {type(err).__name__}: {_one_line(str(err))[:300]}"
