"""`manage.py conflict_matrix`, in-process and as a subprocess: the JSON contract, the grid,
exit code 2 with one line (the matrix itself: tests/core/test_matrix.py)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from audit.core.conflicts.matrix import (
    INSERT,
    OPTIMIZE,
    UDM,
)
from tests.support.cli import manage
from tests.support.matrix_page import COMBINATIONS, expected_verdict

# ------------------------------------------------------------------ the command


def _run_command(*args: str) -> dict:
    out = StringIO()
    call_command("conflict_matrix", *args, stdout=out)
    return json.loads(out.getvalue())


@pytest.mark.parametrize(("level", "rlc", "dv", "zorder"), COMBINATIONS)
def test_the_command_prints_the_json_contract(level, rlc, dv, zorder):
    on_off = {True: "on", False: "off"}
    payload = _run_command(
        "--isolation-level",
        level,
        "--row-level-concurrency",
        on_off[rlc],
        "--deletion-vectors",
        on_off[dv],
        "--zorder",
        on_off[zorder],
        "--json",
    )
    assert list(payload) == ["cells"]
    assert len(payload["cells"]) == 6
    for cell in payload["cells"]:
        assert list(cell) == ["a", "b", "verdict", "note"]
        assert cell["verdict"] == expected_verdict(level, rlc, dv, zorder, cell["a"], cell["b"])


def test_the_command_without_json_prints_a_grid():
    out = StringIO()
    call_command(
        "conflict_matrix",
        "--isolation-level",
        "writeSerializable",
        "--row-level-concurrency",
        "on",
        "--deletion-vectors",
        "on",
        "--zorder",
        "off",
        stdout=out,
    )
    text = out.getvalue()
    assert text.startswith("Conflict matrix: WriteSerializable, row-level concurrency on")
    assert "same row" in text and "UPDATE/DELETE/MERGE" in text


def test_the_command_rejects_bad_values_in_process():
    with pytest.raises(CommandError) as err:
        call_command(
            "conflict_matrix",
            "--isolation-level",
            "Snapshot",
            "--row-level-concurrency",
            "on",
            "--deletion-vectors",
            "on",
            "--zorder",
            "off",
        )
    assert err.value.returncode == 2


@pytest.mark.parametrize(
    "args",
    [
        [
            "--isolation-level",
            "bogus",
            "--row-level-concurrency",
            "on",
            "--deletion-vectors",
            "on",
            "--zorder",
            "off",
        ],
        [
            "--isolation-level",
            "Serializable",
            "--row-level-concurrency",
            "yes",
            "--deletion-vectors",
            "on",
            "--zorder",
            "off",
        ],
        ["--isolation-level", "Serializable"],
        [
            "--isolation-level",
            "Serializable",
            "--row-level-concurrency",
            "on",
            "--deletion-vectors",
            "on",
            "--zorder",
            "off",
            "--colour",
        ],
    ],
)
def test_the_command_exits_2_with_one_line_on_bad_arguments(args):
    proc = manage("conflict_matrix", *args, timeout=60)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_the_command_json_from_the_command_line_is_exactly_the_contract():
    proc = manage(
        "conflict_matrix",
        "--isolation-level",
        "Serializable",
        "--row-level-concurrency",
        "off",
        "--deletion-vectors",
        "on",
        "--zorder",
        "on",
        "--json",
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    verdicts = {(c["a"], c["b"]): c["verdict"] for c in payload["cells"]}
    assert verdicts == {
        (INSERT, INSERT): "cannot_conflict",
        (INSERT, UDM): "can_conflict",
        (INSERT, OPTIMIZE): "cannot_conflict",
        (UDM, UDM): "can_conflict",
        (UDM, OPTIMIZE): "can_conflict",
        (OPTIMIZE, OPTIMIZE): "can_conflict",
    }
