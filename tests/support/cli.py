"""`manage.py` as a user runs it: a subprocess in the checkout, output captured as text."""

from __future__ import annotations

import subprocess
import sys

from tests.support.paths import ROOT


def manage(
    *args: str,
    input: str | None = None,  # noqa: A002 - subprocess.run's name
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """`python manage.py <args>`; `env` replaces the environment when given (callers that add
    to it pass `{**os.environ, ...}`), so a test can also take variables away."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        input=input,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_audit(*args: str) -> subprocess.CompletedProcess[str]:
    """`manage.py audit <args>`: the CLI contract of SPEC §4."""
    return manage("audit", *args)


def located_nowhere(report: dict) -> dict:
    """An `audit --json` report with its table's location taken out: the URI itself, and the
    statements of its incidents that name the table (Spark SQL's delta.`<uri>`), so the audit
    of one table in two places compares equal."""
    import json  # noqa: PLC0415

    uri = report["table"]["uri"]
    text = json.dumps({**report, "table": {k: v for k, v in report["table"].items() if k != "uri"}})
    return json.loads(text.replace(json.dumps(uri)[1:-1], "<table>"))
