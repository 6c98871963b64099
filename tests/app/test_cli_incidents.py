"""`manage.py audit --json` gains `incidents` (SPEC §4, fourth round), run as a user would."""

from __future__ import annotations

import json
from collections import Counter

from tests.support import scenarios
from tests.support.cli import run_audit
from tests.support.paths import DELTA_TABLES

INCIDENT_KEYS = {
    "id",
    "cause",
    "headline",
    "severity",
    "status",
    "first_version",
    "last_version",
    "findings",
    "damage",
    "repair",
    "inspect",
    "prevent",
}


def _report(*args: str) -> dict:
    proc = run_audit(*args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _grouped(report: dict) -> Counter:
    return Counter((f["kind"], f["version"]) for i in report["incidents"] for f in i["findings"])


def test_it_groups_every_finding_into_one_incident(tmp_path):
    scenarios.build_stale_full_overwrite(str(tmp_path))
    report = _report(str(tmp_path))
    assert list(report)[-1] == "incidents"
    assert _grouped(report) == Counter((f["kind"], f["version"]) for f in report["findings"])
    for incident in report["incidents"]:
        assert incident.keys() >= INCIDENT_KEYS
        assert incident["damage"].keys() >= {"rows_wrong_now", "files", "partitions", "exact"}
    stale = next(i for i in report["incidents"] if i["cause"] == "stale_write_unchecked")
    assert (stale["severity"], stale["status"]) == ("critical", "open")
    assert stale["damage"]["rows_wrong_now"] == 2 and stale["damage"]["exact"] is True
    assert [s["engine"] for s in stale["repair"]] == ["deltalake", "spark-sql"]
    # Stable across runs: the same ids again.
    assert [i["id"] for i in _report(str(tmp_path))["incidents"]] == [
        i["id"] for i in report["incidents"]
    ]


def test_without_data_the_damage_is_not_counted_and_nothing_is_repaired(tmp_path):
    scenarios.build_stale_full_overwrite(str(tmp_path))
    report = _report(str(tmp_path), "--no-data")
    stale = next(i for i in report["incidents"] if i["cause"] == "stale_write_unchecked")
    assert stale["damage"]["rows_wrong_now"] is None and stale["damage"]["exact"] is False
    assert stale["repair"] == []


def test_a_clean_spark_table_has_no_incident():
    report = _report(str(DELTA_TABLES / "golden" / "basic-with-inserts-updates"))
    assert report["incidents"] == [] or _grouped(report) == Counter(
        (f["kind"], f["version"]) for f in report["findings"]
    )
