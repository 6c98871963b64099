"""Check that two checkouts print byte-identical `manage.py audit --json` on every suite table.

    python bench/same_output.py --against /tmp/old [--tables DIR ...] [--log bench/out/...]

Runs the one-shot command of this checkout and of `--against` (another checkout, e.g.
`git archive <rev> | tar -x -C /tmp/old`) on every Delta table under tests/data (and on the
logs given with `--log`), each checkout in its own interpreter that audits table after table
in process (the command's own code path, its stdout captured as bytes), and compares the
outputs byte for byte: the exit status, stdout and stderr. Prints the tables that differ and
exits 1 if any does. A speed-up of the audit must leave every report as it was.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# Run inside the checkout under test: audit each table given on stdin, print one JSON line
# per table with the digest of its output (the bytes go to files when --keep is given).
_DRIVER = r"""
import contextlib, hashlib, io, json, os, sys, time
root = sys.argv[1]
sys.path.insert(0, root)
os.chdir(root)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django
django.setup()
from audit.management.commands.audit import Command
keep = sys.argv[2] if len(sys.argv) > 2 else ""
# The report says when it was made only through `now` (incident ages, publish lag): pin it.
time.time = lambda: 1_800_000_000.0
for table in sys.stdin.read().split("\n"):
    if not table:
        continue
    out, err = io.BytesIO(), io.StringIO()
    stdout = io.TextIOWrapper(out, write_through=True)
    code = 0
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(err):
        try:
            Command().run_from_argv(["manage.py", "audit", table, "--json"])
        except SystemExit as e:
            code = e.code
    stdout.flush()
    body = out.getvalue()
    if keep:
        name = hashlib.sha1(table.encode()).hexdigest()[:12]
        with open(os.path.join(keep, name + ".json"), "wb") as fh:
            fh.write(body)
    print(json.dumps({"table": table, "code": code, "bytes": len(body),
                      "sha": hashlib.sha256(body).hexdigest(), "stderr": err.getvalue()}),
          flush=True)
"""


def suite_tables(base: str) -> list[str]:
    found = []
    for here, dirs, _files in os.walk(base):
        if "_delta_log" in dirs:
            found.append(os.path.abspath(here))
            dirs.remove("_delta_log")
    return sorted(found)


def digests(root: str, tables: list[str], keep: str | None) -> dict[str, dict]:
    args = [os.path.join(ROOT, ".venv", "bin", "python"), "-c", _DRIVER, root]
    if keep:
        os.makedirs(keep, exist_ok=True)
        args.append(keep)
    out = subprocess.run(
        args, input="\n".join(tables), capture_output=True, text=True, check=False, cwd=root
    )
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    if len(rows) != len(tables):
        sys.stderr.write(out.stderr[-2000:])
        raise SystemExit(f"{root}: {len(rows)} of {len(tables)} tables audited")
    return {r["table"]: r for r in rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", required=True, help="the other checkout")
    parser.add_argument("--tables", action="append", default=[], help="folders to walk")
    parser.add_argument("--log", action="append", default=[], help="more tables (bench logs)")
    parser.add_argument("--keep", help="write each output under KEEP/{new,old}/")
    args = parser.parse_args(argv)
    bases = args.tables or [os.path.join(ROOT, "tests", "data")]
    tables = [t for base in bases for t in suite_tables(base)]
    tables += [os.path.abspath(t) for t in args.log]
    keep = args.keep
    new = digests(ROOT, tables, keep and os.path.join(keep, "new"))
    old = digests(os.path.abspath(args.against), tables, keep and os.path.join(keep, "old"))
    differ = [t for t in tables if new[t] != old[t]]
    for table in differ:
        print(f"DIFFERS: {table}\n  new {new[table]}\n  old {old[table]}")
    total = sum(r["bytes"] for r in new.values())
    digest = hashlib.sha256("".join(new[t]["sha"] for t in tables).encode()).hexdigest()[:16]
    print(
        f"{len(tables) - len(differ)} of {len(tables)} tables identical ({total:,} bytes; {digest})"
    )
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
