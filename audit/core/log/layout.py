"""Where things live in `_delta_log`: directory and file names, and the patterns of checkpoints."""

from __future__ import annotations

import re

LOG_DIR = "_delta_log"
SIDECAR_DIR = f"{LOG_DIR}/_sidecars"
LAST_CHECKPOINT = "_last_checkpoint"
CLUSTERING_DOMAIN = "delta.clustering"

# File names are listed from storage: ASCII digits only (`\d` takes any Unicode digit).
_CLASSIC_CHECKPOINT = re.compile(r"^([0-9]{20})\.checkpoint\.parquet$")
_MULTIPART_CHECKPOINT = re.compile(r"^([0-9]{20})\.checkpoint\.([0-9]{10})\.([0-9]{10})\.parquet$")
_V2_CHECKPOINT = re.compile(
    r"^([0-9]{20})\.checkpoint\."
    r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
    r"\.(parquet|json)$"
)
_COMPACTION = re.compile(r"^([0-9]{20})\.([0-9]{20})\.compacted\.json$")

# Columns of a checkpoint that replay needs. `remove` is left out on purpose: tombstones do
# not affect the live files, and skipping them makes large checkpoints cheaper to read.
_CHECKPOINT_COLUMNS = (
    "add",
    "metaData",
    "protocol",
    "txn",
    "domainMetadata",
    "checkpointMetadata",
    "sidecar",
)
_ADD_FIELDS = (
    "path",
    "partitionValues",
    "size",
    "modificationTime",
    "dataChange",
    "stats",
    "tags",
    "deletionVector",
    "baseRowId",
    "clusteringProvider",
)


def commit_file_name(version: int) -> str:
    return f"{version:020d}.json"


def _commit_path(version: int) -> str:
    return f"{LOG_DIR}/{commit_file_name(version)}"
