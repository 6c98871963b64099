"""The fleet audit as a plain Spark job: no Django, no database, results as Delta tables.

Build the bundle once, where the project is installed:

    python workers/spark/entry.py --bundle dist/spark
    # -> dist/spark/delta_audit_job.zip (audit/core + the job modules) and
    #    dist/spark/delta_audit_main.py (the driver script)

Run it on any cluster (the driver needs pyspark, orjson, pyarrow, sqlglot, deltalake; the
executors orjson, pyarrow, sqlglot: see docs/spark.md for packing them):

    spark-submit --master spark://host:7077 --py-files dist/spark/delta_audit_job.zip \\
        dist/spark/delta_audit_main.py --output s3://bucket/audit-results \\
        s3://bucket/tables/orders s3://bucket/tables/events

then, where the dashboard runs: `python manage.py import_audit s3://bucket/audit-results`.
Prints one line per table; exit status 0, 1 when a table failed, 2 when the job cannot run.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

MAIN = '''"""spark-submit driver script of the Delta Audit fleet job (see docs/spark.md)."""
import sys

from workers.spark.entry import main

sys.exit(main())
'''


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="delta_audit_main.py", description=__doc__.split("\n")[0])
    parser.add_argument("tables", nargs="*", metavar="TABLE_URI", help="tables to audit")
    parser.add_argument("--tables-file", help="a file with one table URI per line")
    parser.add_argument("--output", help="root URI of the result Delta tables")
    parser.add_argument(
        "--chunk-commits",
        type=int,
        default=100_000,
        help="commits per range task (longer tables are split)",
    )
    parser.add_argument("--no-data", action="store_true", help="do not read data files")
    parser.add_argument(
        "--read-root",
        action="append",
        metavar="ROOT_URI",
        help="read data files only under these roots (repeatable; default: each table's own)",
    )
    parser.add_argument(
        "--sample-rows",
        type=int,
        default=None,
        help="matching rows a witness keeps (0: counts and file names only; default 5)",
    )
    parser.add_argument("--master", help="only outside spark-submit (e.g. local[2])")
    parser.add_argument("--bundle", metavar="DIR", help="write the job's zip and main script")
    return parser.parse_args(argv)


def bundle(directory: str) -> tuple[str, str]:
    """Write delta_audit_job.zip and delta_audit_main.py into `directory`."""
    from workers.spark.job import core_archive  # noqa: PLC0415

    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    built = Path(core_archive())
    archive = target / "delta_audit_job.zip"
    shutil.copyfile(built, archive)
    shutil.rmtree(built.parent, ignore_errors=True)
    main_script = target / "delta_audit_main.py"
    main_script.write_text(MAIN)
    return str(archive), str(main_script)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.bundle:
        archive, script = bundle(args.bundle)
        print(f"wrote {archive} and {script}")
        return 0
    from audit.core.errors import DeltaAuditError, one_line  # noqa: PLC0415

    uris = list(args.tables)
    try:
        if args.tables_file:
            with open(args.tables_file, encoding="utf-8") as lines:
                uris += [line.strip() for line in lines if line.strip()]
        if not uris or not args.output:
            raise DeltaAuditError("give --output and at least one table URI (or --tables-file)")
        failed = run(uris, args)
    except DeltaAuditError as err:
        sys.stderr.write(f"error: {one_line(str(err))}\n")
        return 2
    return 1 if failed else 0


def run(uris: list[str], args: argparse.Namespace) -> int:
    """Audit `uris` and write the results; the number of tables that failed."""
    from workers.spark.job import audit_fleet  # noqa: PLC0415
    from workers.spark.output import write_outcomes  # noqa: PLC0415

    spark = session(args.master)

    def report(outcome) -> None:
        if outcome.error is not None:
            print(f"{outcome.table_uri}: error: {outcome.error}", flush=True)
        else:
            versions = len(outcome.history.summaries)
            print(f"{outcome.table_uri}: ok, {versions} commits", flush=True)

    outcomes = audit_fleet(
        spark,
        uris,
        chunk_commits=args.chunk_commits,
        check_data=not args.no_data,
        read_roots=args.read_root,
        sample_rows=None if args.sample_rows is None else max(args.sample_rows, 0),
    )
    summary = write_outcomes(args.output, outcomes, on_table=report)
    print(
        f"run {summary.run_id}: {summary.tables} tables, {summary.commits} commits, "
        f"{summary.findings} findings written to {args.output}",
        flush=True,
    )
    return summary.errors


def session(master: str | None):
    """spark-submit's session (its --master and --conf), or a new one for `--master`."""
    from pyspark.sql import SparkSession  # noqa: PLC0415

    if master:
        from workers.spark.session import get_spark  # noqa: PLC0415

        return get_spark(master)
    return SparkSession.builder.appName("delta-audit-fleet").getOrCreate()


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    sys.exit(main())
