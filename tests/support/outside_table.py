"""A table whose log names a data file outside its root: a stale DELETE's surviving file is
moved elsewhere (rows marked SECRET) and the append's add action rewritten by hand to point
there, the way anyone who can write the table's log could. With the file read, its rows would
be a never-existed-snapshot witness shown to every user.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from urllib.parse import quote

from tests.support import scenarios
from tests.support.hand_commits import log_file

SECRET = "SECRET-ROW-VALUE"
APPEND_VERSION = 2  # scenarios.build_stale_unconditional_delete: v2 survives the v3 DELETE


def build_outside(table: Path, outside: Path, how: str) -> Path:
    """Write the table at `table`, move its surviving data file into `outside` (its rows
    rewritten to hold SECRET) and point the log at it; `how` spells the path: "absolute",
    "relative" (../), "file_uri" or "same" (left in place: the control). The moved file."""
    scenarios.build_stale_unconditional_delete(str(table))
    commit = log_file(table, APPEND_VERSION)
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    add = next(a["add"] for a in actions if "add" in a)
    source = table / add["path"]
    if how == "same":
        return source
    outside.mkdir(parents=True, exist_ok=True)
    target = outside / "secret.parquet"
    write_secret_rows(source, target)
    source.unlink()
    add["path"] = _spelled(target, table, how)
    commit.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return target


def point_add_at(table: Path, path: str) -> None:
    """Rewrite the surviving add's path to `path` (as the log spells it: URL-encoded)."""
    commit = log_file(table, APPEND_VERSION)
    actions = [json.loads(line) for line in commit.read_text().splitlines()]
    next(a["add"] for a in actions if "add" in a)["path"] = path
    commit.write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def _spelled(target: Path, table: Path, how: str) -> str:
    if how == "absolute":
        return str(target)
    if how == "relative":
        return os.path.relpath(target, table)
    if how == "file_uri":
        # Percent-encoded, as a URI in the log is: decoding must happen before the check.
        return "file://" + quote(str(target))
    raise ValueError(how)


def write_secret_rows(source: Path, target: Path) -> None:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    data = pq.read_table(source)
    column = data.schema.get_field_index("value")
    secret = pc.cast(pc.binary_join_element_wise(data["value"], SECRET, ""), data["value"].type)
    pq.write_table(data.set_column(column, "value", secret), target)


def copy_table(source: Path, target: Path) -> Path:
    return Path(shutil.copytree(source, target))
