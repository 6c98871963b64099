"""Who and what wrote each commit: user, engine, job, notebook, cluster, user metadata.

Writers record this in `commitInfo` and no viewer shows it. The summary already keeps the
user, engine, cluster and `txn` app ids as fields; `commit_extra` keeps what it lacks (client
version, notebook, the job when it is not Spark's object, `userMetadata`, `tags` and every
key Delta does not define: delta-rs `CommitProperties(custom_metadata=...)` writes those at
the top of `commitInfo`). `provenance_of` joins both into the report's `provenance` object,
with absent fields omitted.

A commit that records an in-commit timestamp keeps its three times apart in its provenance
(`commit_times`): the in-commit timestamp, `commitInfo.timestamp` and the commit file's
modification time. Its `timestamp` is the first of them; `TIMESTAMP AS OF` resolves by it
where the table has them and by the file's time before. Other commits add no time: their one
recorded time is the `timestamp` (`facts.timestamp` says whether it was recorded or derived),
so a table without in-commit timestamps gains no field per commit.

Log values are untrusted: every kept string is cut, and custom properties are bounded in
number and size, so a hostile commit cannot grow a summary (or a stored row) without limit.
"""

from __future__ import annotations

from typing import Any

from audit.core.model import CommitSummary
from audit.core.numbers import log_int

# commitInfo keys Delta (Spark, kernel, delta-rs) defines; any other key is a custom property.
DEFINED_KEYS = frozenset(
    {
        "version",
        "timestamp",
        "inCommitTimestamp",
        "userId",
        "userName",
        "operation",
        "operationParameters",
        "operationMetrics",
        "job",
        "notebook",
        "clusterId",
        "readVersion",
        "isolationLevel",
        "isBlindAppend",
        "userMetadata",
        "tags",
        "engineInfo",
        "clientVersion",
        "txnId",
    }
)
# Spark's `job` object: its keys, as the report names them.
_JOB_KEYS = (
    ("jobId", "job_id"),
    ("jobName", "job_name"),
    ("runId", "run_id"),
    ("jobOwnerId", "job_owner_id"),
    ("triggerType", "trigger_type"),
)
MAX_TEXT = 1000  # characters kept of one value
MAX_CUSTOM = 32  # custom properties kept per commit


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, dict | list):
        return None
    text = value if isinstance(value, str) else str(value)
    return text[:MAX_TEXT] if text else None


def _scalar(value: Any) -> Any:
    """A custom value as kept: scalars as they are (strings cut), anything nested as text."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return value[:MAX_TEXT]
    return str(value)[:MAX_TEXT]


def commit_extra(info: dict[str, Any] | None) -> dict[str, Any] | None:
    """The provenance fields of `info` the summary has no field for; None when there are none.

    Only text values: the result is shared between commits that wrote the same ones.
    """
    if not info:
        return None
    extra: dict[str, Any] = {}
    for key, name in (("clientVersion", "client_version"), ("userMetadata", "user_metadata")):
        text = _text(info.get(key))
        if text is not None:
            extra[name] = text
    notebook = info.get("notebook")
    if isinstance(notebook, dict):
        text = _text(notebook.get("notebookId"))
        if text is not None:
            extra["notebook_id"] = text
    job = info.get("job")
    if job is not None and not isinstance(job, dict):
        text = _text(job)  # a custom `job` property (delta-rs custom metadata)
        if text is not None:
            extra["job_id"] = text
    tags = info.get("tags")
    custom = _custom(info, tags if isinstance(tags, dict) else None)
    if custom:
        extra["custom"] = custom
    return extra or None


def commit_times(info: dict[str, Any] | None, file_time: int | None) -> dict[str, int] | None:
    """The three times of a commit that records an in-commit timestamp; None for any other."""
    if not info:
        return None
    in_commit = log_int(info.get("inCommitTimestamp"), signed=True)
    if in_commit is None:
        return None
    times = {"in_commit_timestamp": in_commit}
    recorded = log_int(info.get("timestamp"), signed=True)
    if recorded is not None:
        times["commit_info_timestamp"] = recorded
    if file_time is not None:
        times["file_modification_time"] = file_time
    return times


_TIME_KEYS = ("in_commit_timestamp", "commit_info_timestamp", "file_modification_time")


def _custom(info: dict[str, Any], tags: dict[str, Any] | None) -> dict[str, Any]:
    if not tags and info.keys() <= DEFINED_KEYS:
        return {}  # most commits: every key is a defined one (one set comparison, in C)
    custom: dict[str, Any] = {}
    for source in (info, tags or {}):
        for key, value in source.items():
            if len(custom) >= MAX_CUSTOM:
                return custom
            if source is info and key in DEFINED_KEYS:
                continue
            custom[str(key)[:200]] = _scalar(value)
    return custom


def share_key(extra: dict[str, Any] | None) -> Any:
    """A hashable key for `extra` (None when it holds anything but text and flat customs)."""
    if extra is None:
        return None
    items: list[Any] = []
    for key, value in extra.items():
        if isinstance(value, dict):
            value = tuple((k, type(v).__name__, v) for k, v in value.items())
        items.append((key, value))
    try:
        key = ("provenance", tuple(items))
        hash(key)
    except TypeError:
        return None
    return key


def provenance_of(summary: CommitSummary) -> dict[str, Any]:
    """The report's `provenance` of one commit: who and what wrote it, absent fields omitted."""
    out: dict[str, Any] = {}
    if not summary.has_rare_fields:  # most commits: no user, job, cluster, txn or extra
        if summary.engine_info:
            out["engine"] = summary.engine_info
        if summary.txn_id:
            out["txn_id"] = summary.txn_id
        return out
    for name, value in (
        ("user_name", summary.user_name),
        ("user_id", summary.user_id),
        ("engine", summary.engine_info),
    ):
        if value:
            out[name] = value
    extra = summary.provenance or {}
    if "client_version" in extra:
        out["client_version"] = extra["client_version"]
    job = summary.job
    if isinstance(job, dict):
        for key, name in _JOB_KEYS:
            text = _text(job.get(key))
            if text is not None:
                out[name] = text
    for name in ("job_id", "notebook_id"):
        if name in extra and name not in out:
            out[name] = extra[name]
    if summary.cluster_id:
        out["cluster_id"] = summary.cluster_id
    if summary.txn_id:
        out["txn_id"] = summary.txn_id
    if "user_metadata" in extra:
        out["user_metadata"] = extra["user_metadata"]
    if "custom" in extra:
        out["custom"] = dict(extra["custom"])
    for name in _TIME_KEYS:
        if name in extra:
            out[name] = extra[name]
    if summary.app_ids:
        out["txn"] = [{"app_id": a, "version": v} for a, v in sorted(summary.app_ids.items())]
    return out
