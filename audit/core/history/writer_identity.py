"""Who a writer is: the one definition the writers view, the writer telemetry and the incident
causes share.

A writer is what its provenance (`audit.core.history.provenance`) names and stays the same
from one run of a job to the next: the engine (engineInfo, with its version), the user, the
job (Spark's `job.jobId`, else a custom `job` property), the notebook and the idempotent
`txn` app ids. Run and cluster ids change with every run, so they are details of a writer,
never part of who it is (two runs of one nightly job are one writer).

Pure; values come from logs and are cut to MAX_PART characters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from audit.core.history.provenance import provenance_of
from audit.core.model import CommitSummary

MAX_PART = 200
# A writer's parts in the order its key writes them.
PARTS = ("engine", "user", "job", "notebook", "app")
UNKNOWN_ENGINE = "unknown"


def identity(provenance: Mapping[str, Any], engine: Any = "") -> dict[str, str]:
    """The parts of a writer from a commit's provenance (its report object, or the stored
    one) and its engine kind (used when the commit recorded no engineInfo)."""
    parts = {"engine": str(provenance.get("engine") or engine)[:MAX_PART]}
    user = provenance.get("user_name") or provenance.get("user_id")
    if user:
        parts["user"] = str(user)[:MAX_PART]
    job = provenance.get("job_id")
    if job is not None and job != "":
        parts["job"] = str(job)[:MAX_PART]
    notebook = provenance.get("notebook_id")
    if notebook is not None and notebook != "":
        parts["notebook"] = str(notebook)[:MAX_PART]
    txn = provenance.get("txn")
    if isinstance(txn, list):
        apps = sorted(str(t.get("app_id")) for t in txn if isinstance(t, Mapping))
        if apps:
            parts["app"] = ",".join(apps)[:MAX_PART]
    return parts


def identity_of(summary: CommitSummary | None) -> dict[str, str]:
    """The parts of the writer of a commit summary ({"engine": "unknown"} for none)."""
    if summary is None:
        return {"engine": UNKNOWN_ENGINE}
    if not summary.has_rare_fields:  # most commits: no user, job, notebook or txn
        return {"engine": str(summary.engine_info or summary.engine)[:MAX_PART]}
    return identity(provenance_of(summary), summary.engine)


def identity_key(parts: Mapping[str, str]) -> str:
    """A writer as one string, its parts in one fixed order (`engine=... user=...`)."""
    return " ".join(f"{k}={parts[k]}" for k in PARTS if k in parts)


def identity_name(parts: Mapping[str, str]) -> str:
    """A writer as people read it: who (user, job, notebook, app), else the engine."""
    who = [f"{k} {parts[k]}" for k in PARTS[1:] if k in parts]
    return ", ".join(who) if who else parts.get("engine") or "unknown writer"
