"""What the log-integrity checks read of each add and remove action (`FileRef`), and of a
whole commit (`IntegrityRecord`).

integrity.py judges refs, not `AddFile`/`RemoveFile` objects, so the one-shot audit checks
refs that digest.py builds on its own walk over the action dicts it decoded
(`digest.digest_refs`, with the coercions of `_add_from`/`_remove_from`) instead of
re-reading and re-parsing every commit file into model objects; histories built elsewhere
convert their parsed commits (`refs_of_commit`). A record is what the forked child of parallel.py sends
the parent for each of its commits: plain tuples, cheap to pickle.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from audit.core.model import AddFile, Commit, Protocol, RemoveFile


class FileRef(NamedTuple):
    """What the checks read of an add or remove action, coerced as `AddFile`/`RemoveFile` are."""

    path: str  # URL-decoded
    data_change: bool
    deletion_vector: dict[str, Any] | None
    stats: str | None  # raw JSON, parsed only by the rare rewrite check; None for removes
    base_row_id: int | None


def dv_identity(dv: dict[str, Any] | None) -> str | None:
    """What tells two logical files of one path apart: their deletion vectors' identity."""
    if not dv:
        return None
    return f"{dv.get('storageType')}:{dv.get('pathOrInlineDv')}@{dv.get('offset')}"


def ref_of(file: AddFile | RemoveFile) -> FileRef:
    if isinstance(file, AddFile):
        return FileRef(
            file.path, file.data_change, file.deletion_vector, file.stats, file.base_row_id
        )
    return FileRef(file.path, file.data_change, file.deletion_vector, None, None)


def refs_of_commit(commit: Commit) -> tuple[list[FileRef], list[FileRef]]:
    return [ref_of(a) for a in commit.adds], [ref_of(r) for r in commit.removes]


# What the checks read of one commit, as a tuple that pickles cheaply: version, the commitInfo
# keys the checks read, protocol, domain metadata, add refs, remove refs.
IntegrityRecord = tuple[
    int, dict[str, Any] | None, Protocol | None, list, list[FileRef], list[FileRef]
]
_INFO_KEYS = ("operation", "operationMetrics", "readVersion")


def integrity_record(
    commit: Commit, adds: list[FileRef], removes: list[FileRef]
) -> IntegrityRecord:
    """The commit as `IntegrityTap.replay` needs it, without the rest of its commitInfo."""
    info = commit.commit_info
    if info is not None:
        info = {k: info[k] for k in _INFO_KEYS if k in info}
    return commit.version, info, commit.protocol, commit.domain_metadata, adds, removes
