"""`manage.py audit --json` on a catalog-managed table with staged commits: the published part
is as before; staged commits come in an added `unpublished` section; health has the lag."""

from __future__ import annotations

import json

from tests.support import staged_tables
from tests.support.cli import manage


def test_it_reports_staged_commits_apart_and_the_publish_lag(tmp_path):
    staged_tables.build(tmp_path)
    proc = manage("audit", str(tmp_path), "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert [c["version"] for c in report["commits"]] == [0, 1, 2, 3]
    assert all(f["version"] <= 3 for f in report["findings"])
    section = report["unpublished"]
    assert [c["version"] for c in section["commits"]] == [4]
    assert any(f["kind"] == "never_existed_snapshot" for f in section["findings"])
    lag = report["health"]["publish_lag"]
    assert (lag["versions"], lag["published_version"]) == (2, 3)
    assert lag["seconds"] > 0
