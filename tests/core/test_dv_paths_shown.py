"""The deletion-vector findings name their files as every finding does (roots.shown_path): a
logged path's credentials stay out of their words and witnesses."""

from __future__ import annotations

from dataclasses import asdict

import orjson
import pytest

from audit.core.wording.dv import DvFacts, dv_integrity_text, resurrection_text

SIGNED = "day=1/part-0.parquet?sv=2020&sig=SECRETSIG"
USERINFO = "s3://AKIA:SECRETPW@bucket/part-1.parquet"


@pytest.mark.parametrize("problem", ["two_live_entries", "beyond_records", "cardinality"])
@pytest.mark.parametrize("path", [SIGNED, USERINFO])
def test_dv_findings_show_their_file_without_credentials(problem, path):
    facts = DvFacts(problem, 3, path, [2], decoded=4, recorded=2, positions=[7], entries=2)
    text = dv_integrity_text(facts)
    shown = " ".join([*text, orjson.dumps(facts.witness()).decode()])
    assert "part-" in shown and "SECRET" not in shown


def test_a_resurrection_names_its_files_without_credentials():
    text = resurrection_text(5, 4, [SIGNED, USERINFO], 3, "MERGE")
    assert "part-0.parquet?sv=2020&sig=***" in text.explanation
    assert "s3://bucket/part-1.parquet" in text.explanation
    assert "SECRET" not in " ".join(text)


def test_the_rows_an_unsound_rebase_brought_back_name_their_file_without_credentials(tmp_path):
    from audit.core.audit import audit_history
    from audit.core.history.summary import load_history
    from tests.support import dv_tables as t

    t.create(tmp_path)
    winner = t.stored_dv(tmp_path, [1])
    t.delete(tmp_path, 1, 0, 1, t.remove(), t.add(winner))
    t.delete(tmp_path, 2, 0, 2, t.remove(winner), t.add(t.stored_dv(tmp_path, [2])))
    # The same table, its data file named by a signed path (on disk too: it is read).
    signed = t.DATA_FILE + "?sig=SECRETSIG"
    (tmp_path / t.DATA_FILE).rename(tmp_path / signed)
    for log in (tmp_path / "_delta_log").glob("*.json"):
        log.write_text(log.read_text().replace(t.DATA_FILE, signed))
    result = audit_history(load_history(str(tmp_path)))
    (finding,) = [f for f in result.findings if f.witness and f.witness.get("row_positions")]
    assert finding.witness["row_positions"] == {f"{t.DATA_FILE}?sig=***": [1]}
    assert finding.witness["sample_rows"] == [{"id": 1}]  # the file was read
    shown = orjson.dumps([asdict(f) for f in result.findings], default=str).decode()
    assert "SECRETSIG" not in shown
