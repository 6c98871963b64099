"""`manage.py conflict_matrix`, in-process and as a subprocess: the JSON contract, the grid,
exit code 2 with one line (the matrix itself: tests/core/test_matrix.py)."""

from __future__ import annotations

import itertools
import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from audit.core.matrix import (
    INSERT,
    OPTIMIZE,
    UDM,
)
from tests.support.cli import manage

# ------------------------------------------------------------------ the page, mirrored
# Each entry: the cell's text as printed on the page (rows x columns of
# "INSERT (1) | UPDATE, DELETE, MERGE INTO | OPTIMIZE"), and the reading of that text as a
# function of (isolation level, deletion vectors, zorder). The lower triangle is what the page
# prints; the matrix is symmetric.

WITH_RLC = {
    (INSERT, INSERT): (
        "Cannot conflict",
        lambda level, dv, z: "cannot_conflict",
    ),
    (UDM, INSERT): (
        "Cannot conflict in WriteSerializable. Can conflict in Serializable when modifying the "
        "same row. See Limitations for row-level concurrency.",
        lambda level, dv, z: (
            "cannot_conflict" if level == "WriteSerializable" else "can_conflict_same_row"
        ),
    ),
    (UDM, UDM): (
        "Can conflict when modifying the same row. See Limitations for row-level concurrency.",
        lambda level, dv, z: "can_conflict_same_row",
    ),
    (OPTIMIZE, INSERT): (
        "Cannot conflict",
        lambda level, dv, z: "cannot_conflict",
    ),
    (OPTIMIZE, UDM): (
        "Can conflict when ZORDER BY is used. Cannot conflict otherwise.",
        lambda level, dv, z: "can_conflict" if z else "cannot_conflict",
    ),
    (OPTIMIZE, OPTIMIZE): (
        "Can conflict when ZORDER BY is used. Cannot conflict otherwise.",
        lambda level, dv, z: "can_conflict" if z else "cannot_conflict",
    ),
}

WITHOUT_RLC = {
    (INSERT, INSERT): (
        "Cannot conflict",
        lambda level, dv, z: "cannot_conflict",
    ),
    (UDM, INSERT): (
        "Cannot conflict in WriteSerializable. Can conflict in Serializable. See avoid "
        "conflicts with partitions.",
        lambda level, dv, z: "cannot_conflict" if level == "WriteSerializable" else "can_conflict",
    ),
    (UDM, UDM): (
        "Can conflict in Serializable and WriteSerializable. See avoid conflicts with partitions.",
        lambda level, dv, z: "can_conflict",
    ),
    (OPTIMIZE, INSERT): (
        "Cannot conflict",
        lambda level, dv, z: "cannot_conflict",
    ),
    (OPTIMIZE, UDM): (
        "Cannot conflict with in tables with deletion vectors enabled, unless ZORDER BY is used. "
        "Can conflict otherwise.",
        lambda level, dv, z: "cannot_conflict" if dv and not z else "can_conflict",
    ),
    (OPTIMIZE, OPTIMIZE): (
        "Cannot conflict with in tables with deletion vectors enabled, unless ZORDER BY is used. "
        "Can conflict otherwise.",
        lambda level, dv, z: "cannot_conflict" if dv and not z else "can_conflict",
    ),
}

LEVELS = ("Serializable", "WriteSerializable")
COMBINATIONS = list(itertools.product(LEVELS, (True, False), (True, False), (True, False)))


def expected_verdict(level: str, rlc: bool, dv: bool, zorder: bool, a: str, b: str) -> str:
    # "Tables do not support row-level concurrency if they ... do not have deletion vectors
    # enabled": without DVs the second table applies whatever was asked for.
    page = WITH_RLC if rlc and dv else WITHOUT_RLC
    entry = page.get((a, b)) or page[(b, a)]
    return entry[1](level, dv, zorder)


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
