"""Hostile deletion vectors, end to end (tests/support/hostile_vectors.py builds them).

1. No byte of any file reaches a message: `p` vectors aimed at a text file under the table
   root, at every offset, and every text the product makes of them (the CLI's report and its
   stderr, the findings stored and served by the API, the loader's own reasons) is searched for
   the file's bytes in every form a message could carry them (text, and each 4-byte window as
   the numbers it reads as).
2. Bounded vectors: each of the review's memory exhaustions, audited by `manage.py audit --json`
   in a subprocess under an address-space limit, exits 0 with its dv_integrity finding and a
   peak resident memory under 1 GB.

The limit: RLIMIT_AS of 1 GiB, with glibc's malloc arenas (MALLOC_ARENA_MAX) and Arrow's
thread pools (OMP_NUM_THREADS, ARROW_IO_THREADS) held at 2. Virtual address space is not
memory: each thread's arena reserves 64 MiB and its stack 8 MiB, so without those three an
unbounded audit of a 60-file table fails to start Arrow's I/O threads under 1.5 GiB (measured)
while its resident peak is under 200 MB. Held, the audits of these tables run under 1 GiB of
address space (all but `budget` under 700 MiB); the code before the bounds died under 1 GiB on
each (a segfault, or a MemoryError: it asked for 5 GB and more).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.cache import cache

from audit.core.data.dv import Loader, Unusable
from audit.core.data.witness import DataFiles
from audit.ingest.tables import register_table
from audit.models import Finding
from audit.tail.step import tail_once
from tests.support import hostile_vectors as hv
from tests.support.cli import manage
from tests.support.clients import session_client
from tests.support.paths import ROOT

ADDRESS_SPACE = 1 << 30
PEAK_RSS = 1_000_000_000


def _leaks(text: str) -> list[str]:
    return sorted(token for token in hv.forbidden_tokens() if token in text)


# --------------------------------------------------------------------------- no bytes


def test_it_says_no_byte_of_a_file_aimed_at_by_vectors_in_the_cli_report(tmp_path):
    table = tmp_path / "t"
    hv.build_leaky(table)

    done = manage("audit", "--json", "--key", "id", str(table))

    assert done.returncode == 0, done.stderr
    assert _leaks(done.stdout + done.stderr) == []
    findings = json.loads(done.stdout)["findings"]
    (unusable,) = [f for f in findings if f["kind"] == "dv_integrity"]
    assert unusable["witness"]["problem"] == "unusable_vectors"
    reasons = {v["reason"] for v in unusable["witness"]["vectors"]}
    assert reasons == {"deletion vector size header does not match the descriptor's sizeInBytes"}
    # The witness and the key check read the files too, and say why they skipped them.
    (stale,) = [f for f in findings if f["kind"] == "never_existed_snapshot"]
    assert stale["confirmed"] is False
    assert "deletion vector unreadable (deletion vector size header" in stale["explanation"]
    (duplicated,) = [f for f in findings if f["kind"] == "duplicate_key"]
    assert "deletion vector unreadable" in duplicated["witness"]["note"]


def test_it_gives_reasons_not_bytes_for_every_hostile_vector(tmp_path):
    table = tmp_path / "t"
    descriptors = hv.build_leaky(table)
    loader = Loader(DataFiles(str(table), [str(table)]))

    found = [loader.get(d) for d in descriptors]

    assert all(isinstance(f, Unusable) for f in found)
    reasons = " | ".join(f.reason for f in found)  # type: ignore[union-attr]
    assert _leaks(reasons) == []
    assert "size header does not match" in reasons
    assert "outside the Z85 alphabet" in reasons and "too short for a UUID" in reasons
    assert "TOPSECRET" not in reasons  # the log's own text is not repeated either


@pytest.mark.django_db
def test_it_stores_and_serves_no_byte_of_a_file_aimed_at_by_vectors(settings, tmp_path, member):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    settings.AUDIT_CHECK_DATA = True
    cache.clear()
    table_dir = tmp_path / "t"
    hv.build_leaky(table_dir)
    table, _ = register_table(str(table_dir), key_columns=["id"])
    while tail_once(table.id).more:
        pass
    client = session_client(member)

    listed = client.get(f"/api/findings/?table={table.id}")
    details = [client.get(f"/api/findings/{f.id}/") for f in Finding.objects.filter(table=table)]

    assert listed.status_code == 200 and all(d.status_code == 200 for d in details)
    served = listed.content.decode() + "".join(d.content.decode() for d in details)
    assert _leaks(served) == []
    kinds = {d.json()["kind"] for d in details}
    assert {"dv_integrity", "never_existed_snapshot", "duplicate_key"} <= kinds
    stored = json.dumps(
        list(Finding.objects.filter(table=table).values("summary", "explanation", "witness"))
    )
    assert "size header does not match" in stored
    assert _leaks(stored) == []


# --------------------------------------------------------------------------- bounded


def _audit_bounded(table: Path, out: Path) -> tuple[int, int, str]:
    """`manage.py audit --json --key id` under the address-space limit: its exit status, its
    peak resident memory in bytes (measured by tests/support/peak_rss.py, which says why not
    the rusage `wait4` gives), its stderr."""
    env = {
        **os.environ,
        "MALLOC_ARENA_MAX": "2",
        "OMP_NUM_THREADS": "2",
        "ARROW_IO_THREADS": "2",
    }

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    peak_file = out.with_suffix(".peak")
    command = [sys.executable, "-m", "tests.support.peak_rss", str(peak_file)]
    command += [sys.executable, "manage.py", "audit", "--json", "--key", "id", str(table)]
    with open(out, "wb") as stdout, open(out.with_suffix(".err"), "wb") as stderr:
        status = subprocess.call(
            command, cwd=ROOT, env=env, stdout=stdout, stderr=stderr, preexec_fn=limit
        )
    peak = int(peak_file.read_text()) if peak_file.exists() else -1
    return status, peak, out.with_suffix(".err").read_text()


@pytest.mark.parametrize("case", hv.CASES)
def test_it_audits_each_memory_exhausting_vector_within_a_gigabyte(tmp_path, case):
    table = tmp_path / case
    problem = hv.build_memory_case(table, case)

    status, peak, stderr = _audit_bounded(table, tmp_path / "report.json")

    assert status == 0, stderr[-2000:]
    assert 0 < peak < PEAK_RSS, peak
    findings = json.loads((tmp_path / "report.json").read_bytes())["findings"]
    problems = {f["witness"]["problem"] for f in findings if f["kind"] == "dv_integrity"}
    assert problem in problems, problems


def test_it_takes_the_vector_limits_from_the_declared_settings(settings):
    from audit.core.data.dv import DvLimits
    from audit.trust.limits import dv_limits

    assert dv_limits() == DvLimits()  # the core's defaults are the declared ones (Spark's too)
    settings.AUDIT_DV_MAX_VECTOR_BYTES, settings.AUDIT_DV_MAX_POSITIONS = 4096, -1
    settings.AUDIT_DV_MAX_PASS_BYTES = 1 << 20

    assert dv_limits() == DvLimits(vector_bytes=4096, positions=0, pass_bytes=1 << 20)
