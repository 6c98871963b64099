"""`manage.py explain_conflict`, in-process and as a subprocess: the JSON contract, the readable
text, exit code 2 with one line (the parsing itself: tests/core/test_explain.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO

import pytest
from django.core.management import call_command

from audit.core.explain import (
    METADATA,
)
from tests.support.cli import manage
from tests.support.paths import DELTA_TABLES, EXCEPTIONS

CORPUS = EXCEPTIONS
TABLES = DELTA_TABLES


def corpus(name: str) -> str:
    return (CORPUS / name).read_text()


# ------------------------------------------------------------------ the command


def _command(stdin: str, *args: str) -> subprocess.CompletedProcess:
    return manage("explain_conflict", *args, input=stdin)


def test_the_command_prints_the_json_contract_with_a_table():
    proc = _command(
        corpus("spark_metadata_changed.txt"),
        "--table",
        str(TABLES / "spark" / "delta-1.2.1"),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["exception"] == METADATA
    assert result["conflicting_version"] == 1
    assert result["conflicting_commit"]["operation"] == "SET TBLPROPERTIES"
    assert result["fixes"]


def test_the_command_without_json_is_readable_and_safe(monkeypatch):
    monkeypatch.setattr(sys, "stdin", StringIO(corpus("hostile_script.txt")))
    out = StringIO()
    call_command("explain_conflict", stdout=out)
    text = out.getvalue()
    assert text.startswith("ConcurrentAppendException (conflicting version 9)")
    assert "Fixes:" in text and "\x1b" not in text


def test_the_command_says_when_it_is_not_a_conflict():
    proc = _command(corpus("not_delta_java_cme.txt"), "--json")
    assert proc.returncode == 0
    assert json.loads(proc.stdout) == {
        "exception": None,
        "conflicting_version": None,
        "explanation": json.loads(proc.stdout)["explanation"],
        "fixes": [],
    }


@pytest.mark.parametrize("args", [["--table", "/nonexistent/table", "--json"], ["--bogus"]])
def test_the_command_exits_2_with_one_line(args):
    proc = _command(corpus("spark_metadata_changed.txt"), *args)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
