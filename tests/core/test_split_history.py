"""A long history audited in version ranges: the whole-log History assembled from the ranges'
parts (audit.core.runs.split_history) equals the one the whole-log pass builds, and so do the
table-level findings audited from it; each range's own audit equals the one-shot audit."""

from __future__ import annotations

import pytest

from audit.core import serialize
from audit.core.audit import audit_history
from audit.core.history.summary import load_history
from audit.core.log import open_log
from audit.core.runs.split_history import assemble_history, load_range
from audit.core.vocab import TABLE_LEVEL_KINDS
from bench.gen_log import generate


@pytest.fixture(scope="module")
def long_table(tmp_path_factory) -> str:
    uri = str(tmp_path_factory.mktemp("split") / "long")
    generate(uri, 700, seed=5)  # concurrent writers, MERGE, OPTIMIZE, a checkpoint every 100
    return uri


@pytest.mark.parametrize("step", [50, 240])  # 50: windows reaching the first version too
def test_history_assembled_from_ranges_equals_the_whole_log_pass(long_table, step):
    whole = load_history(long_table)
    expected = audit_history(whole, check_data=False)
    log = open_log(long_table)
    versions = log.listing.commit_versions
    parts, commits, findings = [], {}, []
    for i in range(0, len(versions), step):
        start, end = versions[i], versions[min(i + step, len(versions)) - 1]
        history, part = load_range(log, start, end)
        parts.append(part)
        result = audit_history(history, check_data=False, versions=(start, end))
        commits.update({v: a for v, a in result.commits.items() if start <= v <= end})
        findings += [
            f
            for f in result.findings
            if start <= f.version <= end and f.kind not in TABLE_LEVEL_KINDS
        ]
    assembled = assemble_history(open_log(long_table), parts[::-1])  # any order
    assert assembled.summaries == whole.summaries
    assert assembled.metadata_timeline == whole.metadata_timeline
    assert assembled.protocol_timeline == whole.protocol_timeline
    assert assembled.integrity == whole.integrity
    table_level = audit_history(assembled, check_data=False).findings
    findings += [f for f in table_level if f.kind in TABLE_LEVEL_KINDS]
    findings.sort(key=lambda f: (f.version, f.kind, f.related_versions))
    assert findings == expected.findings
    # As storage keeps them (an audit's in-memory scope objects are not compared).
    as_json = serialize.commit_audit_to_json
    assert {v: as_json(a) for v, a in commits.items()} == {
        v: as_json(a) for v, a in expected.commits.items()
    }
    # Not vacuous: table-level and commit-level findings both.
    kinds = {f.kind for f in expected.findings}
    assert kinds & TABLE_LEVEL_KINDS and kinds - TABLE_LEVEL_KINDS
