"""A real table whose log names data files by paths that carry credentials, the way a writer
that logs signed URLs, or an engine given `s3://key:secret@bucket` URIs, leaves them: a stale
DELETE's concurrent append (a cycle's evidence lists its files; the witness reads one), files
missing from storage,
an add of a file already active and a remove of a file never added (integrity findings), rows
whose key (`id`) two files hold, and
an orphan file whose name carries a signature. `SECRETS` must show nowhere."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from tests.support.hand_commits import commit_text, log_file
from tests.support.scenarios import DAY1, build_ws_reorder_matching

SECRETS = (
    "SECRETAAA1", "SECRETBBB2", "SECRETCCC3", "SECRETDDD4", "SECRETEEE5", "SECRETFFF6",
    "SECRETGGG7",
)  # fmt: skip
# The appended files of v2: the first is delta-rs's file, renamed on disk too (the witness
# reads its rows), the second a copy of it, the others are missing or outside the table.
PATHS = (
    f"day={DAY1}/part-1.parquet?sig=SECRETAAA1",
    f"day={DAY1}/part-3.parquet?sig=SECRETAAA1",  # a copy: its rows' keys are duplicates
    f"day={DAY1}/part-2.parquet?sv=2020-08-04&sig=SECRETGGG7",
    "s3://AKIAUSER:SECRETBBB2@bucket/lake/x.parquet",
    "https://acct.blob.core.windows.net/c/x.parquet?sv=2020-08-04&sig=SECRETCCC3",
    "abfss://c@acct.dfs.core.windows.net/x.parquet?sv=2020-08-04&sig=SECRETDDD4&se=SECRETEEE5",
)
UNKNOWN_REMOVE = "gs://svc:SECRETFFF6@bucket/never-added.parquet"
ORPHAN = f"day={DAY1}/part-9.parquet?sig=SECRETAAA1"


def build_secret_paths(path: Path) -> None:
    build_ws_reorder_matching(str(path))  # v3 is a stale DELETE; v2 its concurrent append
    v2 = log_file(path, 2)
    lines = [json.loads(line) for line in v2.read_text().splitlines()]
    template = next(a["add"] for a in lines if "add" in a)
    (path / template["path"]).rename(path / PATHS[0])
    shutil.copy(path / PATHS[0], path / PATHS[1])
    actions = [a for a in lines if "add" not in a]
    adds = [{"add": {**template, "path": p}} for p in PATHS]
    v2.write_text("\n".join(json.dumps(a) for a in [*actions, *adds]) + "\n")
    duplicate = {"add": {**template, "path": PATHS[0], "dataChange": True}}
    unknown = {"remove": {"path": UNKNOWN_REMOVE, "deletionTimestamp": 1, "dataChange": True}}
    info = {"timestamp": 1_900_000_000_000, "operation": "WRITE"}
    log_file(path, 4).write_text(commit_text(duplicate, unknown, info=info))
    orphan = path / ORPHAN
    orphan.write_bytes(b"PAR1 not a real file")
    old = time.time() - 2 * 86_400  # older than any commit's time in flight
    os.utime(orphan, (old, old))
