"""A catalog-managed (or coordinated-commits) table with commits staged beyond the published
log, built by hand as the protocol describes: `_delta_log/_staged_commits/<v>.<uuid>.json`
(or `_delta_log/_commits/`), published later as `_delta_log/<v>.json`."""

from __future__ import annotations

import json
from pathlib import Path

from deltalake import write_deltalake

from tests.support.tables import rows

UUIDS = ("0f3c0000-0000-4000-8000-000000000000", "9e8d0000-0000-4000-8000-000000000000")
STAGED_AT = 1_700_000_100_000


def _adds(path: Path, version: int) -> list[dict]:
    log = path / "_delta_log" / f"{version:020d}.json"
    return [json.loads(x)["add"] for x in log.read_text().splitlines() if '"add"' in x]


def build(path: Path, *, folder: str = "_staged_commits", ambiguous: bool = True) -> None:
    """v0-v2 written by deltalake, v3 (published, its staged file left behind) makes the table
    catalog-managed; staged v4 is
    a DELETE that read v1 and removes v0's and v1's files (v2's rows survive it, and v3's
    protocol change ran concurrently); v5 is staged twice (only the catalog knows which won)."""
    write_deltalake(str(path), rows(3))
    write_deltalake(str(path), rows(2, start=10), mode="append")
    write_deltalake(str(path), rows(2, start=20), mode="append")
    log = path / "_delta_log"
    info = {"timestamp": 1_700_000_000_000, "inCommitTimestamp": 1_700_000_000_000,
            "operation": "UPGRADE PROTOCOL", "operationParameters": {},
            "engineInfo": "Apache-Spark/4.0.0 Delta-Lake/4.0.0"}  # fmt: skip
    protocol = {"minReaderVersion": 3, "minWriterVersion": 7,
                "readerFeatures": ["catalogManaged"],
                "writerFeatures": ["catalogManaged", "inCommitTimestamp"]}  # fmt: skip
    (log / f"{3:020d}.json").write_text(
        json.dumps({"commitInfo": info}) + "\n" + json.dumps({"protocol": protocol}) + "\n"
    )
    removes = [
        {"remove": {"path": a["path"], "deletionTimestamp": STAGED_AT, "dataChange": True,
                    "partitionValues": a["partitionValues"], "size": a["size"]}}
        for v in (0, 1) for a in _adds(path, v)
    ]  # fmt: skip
    delete = {"timestamp": STAGED_AT, "inCommitTimestamp": STAGED_AT, "operation": "DELETE",
              "operationParameters": {"predicate": json.dumps(["(id >= 0)"])},
              "readVersion": 1, "isolationLevel": "Serializable", "isBlindAppend": False,
              "engineInfo": "Apache-Spark/4.0.0 Delta-Lake/4.0.0"}  # fmt: skip
    staged = log / folder
    staged.mkdir()
    # Staged files stay after their version is published: v3's is still there.
    (staged / f"{3:020d}.{UUIDS[1]}.json").write_text(json.dumps({"commitInfo": info}) + "\n")
    lines = [json.dumps({"commitInfo": delete}), *(json.dumps(r) for r in removes)]
    (staged / f"{4:020d}.{UUIDS[0]}.json").write_text("\n".join(lines) + "\n")
    fives = UUIDS if ambiguous else UUIDS[:1]
    for uid in fives:
        later = {**delete, "timestamp": STAGED_AT + 1000, "inCommitTimestamp": STAGED_AT + 1000,
                 "operation": "WRITE", "readVersion": 4}  # fmt: skip
        (staged / f"{5:020d}.{uid}.json").write_text(json.dumps({"commitInfo": later}) + "\n")
