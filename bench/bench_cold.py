"""Server CPU of each cold API read and dashboard page, in-process (no network, no wrk).

    .venv/bin/python bench/bench_cold.py [--commits 200000] [--database-url ...]
        [--repeat 200] [--match <label part>] [--profile <label part>] [--queries [--sql]]
        [--against <peer checkout> [--rounds 3]] [--code <checkout>]

The same database, endpoints and users as bench/bench_api.py (built by it first), with the
response and page caches off (`--modes off` there): every request computes its answer. Each
endpoint is called through the WSGI application (the whole middleware stack, as gunicorn calls
it) `--repeat` times after a warm-up, and the process CPU per request (time.process_time) is
printed, with the SQL queries one request runs (`--queries`, django's CaptureQueriesContext)
and a cProfile of the endpoints matching `--profile` (env SORT=tottime to order it by own time,
TOP=n rows; SQL_CHARS=n prints more of each query). The budget: 20 closed-loop clients on 2
cores wait about 20 x CPU / 2, so a cold request must cost < ~4 ms for a p95 under 50 ms.

`--against <checkout>` compares with another checkout of the project (e.g. a worktree of main)
in the same run: this script runs its endpoints on the same database importing the application
from there (`--code`), alternating with this checkout `--rounds` times.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def environ_for(url: str, header: str) -> dict:
    parts = urlsplit(url)
    name, value = header.split(": ", 1)
    return {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": parts.path,
        "QUERY_STRING": parts.query,
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": str(parts.port or 80),
        "HTTP_HOST": parts.netloc,
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(b""),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "wsgi.version": (1, 0),
        "HTTP_" + name.upper().replace("-", "_"): value,
    }


def call(app, url: str, header: str) -> tuple[str, bytes]:
    status_line = []

    def start_response(status, headers, exc_info=None):
        status_line.append(status)

    body = b"".join(app(environ_for(url, header), start_response))
    return status_line[0], body


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=200_000)
    parser.add_argument("--findings", type=int, default=5_000)
    parser.add_argument("--database-url", default=f"sqlite:///{ROOT / 'var' / 'bench-api.sqlite3'}")
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--match", default="")
    parser.add_argument("--profile", default="")
    parser.add_argument("--queries", action="store_true")
    parser.add_argument("--sql", action="store_true", help="with --queries: print each query")
    parser.add_argument(
        "--explain",
        action="store_true",
        help="PostgreSQL: each query's execution time in the server (EXPLAIN ANALYZE), which "
        "the process CPU above does not count",
    )
    parser.add_argument("--code", help="import the application from this checkout instead")
    parser.add_argument("--against", help="a peer checkout: alternate runs, print both")
    parser.add_argument("--rounds", type=int, default=3, help="with --against")
    args = parser.parse_args()
    if args.against:
        return compare(args)

    # The cold path: what `bench_api.py --modes off` sets for gunicorn.
    for name in (
        "AUDIT_API_TIMELINE_CACHE_SECONDS",
        "AUDIT_API_LIST_CACHE_SECONDS",
        "AUDIT_PAGE_CACHE_SECONDS",
    ):
        os.environ[name] = "0"
    os.environ["DJANGO_DEBUG"] = "0"
    os.environ["LOG_LEVEL"] = "WARNING"
    import bench_api

    if args.code:  # the peer's application (ahead of the path bench_api put first)
        sys.path.insert(0, str(Path(args.code).resolve()))

    bench_api.setup_django(args.database_url)
    import audit

    print(f"application: {Path(audit.__file__).parent.parent}", flush=True)
    table_id = bench_api.build(args.commits, args.findings, False)
    token = f"Authorization: Token {bench_api.token_for_bench_user()}"
    session = f"Cookie: {bench_api.session_cookie_for_bench_user()}"
    from django.core.wsgi import get_wsgi_application

    app = get_wsgi_application()
    endpoints, pages = bench_api.endpoint_lists(8000, table_id, args.commits)
    full = (
        "timeline, whole history (1 request)",
        f"http://127.0.0.1:8000/api/tables/{table_id}/timeline/",
    )
    work = [(label, url, token) for label, url in [*endpoints, full]]
    work += [(label, url, session) for label, url in pages]
    measure(app, work, args)


def measure(app, work: list[tuple[str, str, str]], args: argparse.Namespace) -> None:
    """CPU per request of each (label, url, header) of `work` matching `--match`."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    total = 0.0
    for label, url, header in work:
        if args.match not in label:
            continue
        status, body = call(app, url, header)
        assert status.startswith("200"), (label, status, body[:300])
        repeat = 3 if "whole history" in label else args.repeat
        profiler = cProfile.Profile() if args.profile and args.profile in label else None
        started = time.process_time()
        if profiler:
            profiler.enable()
        for _ in range(repeat):
            call(app, url, header)
        if profiler:
            profiler.disable()
        cpu = (time.process_time() - started) * 1000 / repeat
        total += cpu
        queries = ""
        if args.queries:
            with CaptureQueriesContext(connection) as captured:
                call(app, url, header)
            queries = f"  {len(captured.captured_queries)} queries"
        print(f"{label:48s} {cpu:6.2f} ms CPU/request  ({len(body):,} B){queries}", flush=True)
        for query in captured.captured_queries if args.queries and args.sql else ():
            print(
                f"    {query['time']} s  {query['sql'][: int(os.environ.get('SQL_CHARS', '300'))]}"
            )
        if args.explain:
            explain(app, url, header)
        if profiler:
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats(
                os.environ.get("SORT", "cumulative")
            ).print_stats(int(os.environ.get("TOP", "45")))
            print(out.getvalue())
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


def explain(app, url: str, header: str) -> None:
    """The server-side time of each query one request runs (PostgreSQL's EXPLAIN ANALYZE,
    planning + execution), the slowest first: the database's CPU shares the 2 cores with the
    web workers under wrk, and a plan that sorts every open finding costs nothing in Python."""
    from django.db import connection

    if connection.vendor != "postgresql":
        print("    --explain: PostgreSQL only")
        return
    seen: list[tuple[str, object]] = []

    def wrapper(execute, sql, params, many, context):
        seen.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        call(app, url, header)
    timed = []
    with connection.cursor() as cursor:
        for sql, params in seen:
            if not sql.lstrip().upper().startswith(("SELECT", "WITH")):
                continue
            cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
            plan = cursor.fetchone()[0]
            plan = plan[0] if isinstance(plan, list) else plan
            timed.append((plan["Planning Time"] + plan["Execution Time"], sql))
    total = sum(ms for ms, _ in timed)
    print(f"    database: {total:.2f} ms in {len(timed)} queries")
    for ms, sql in sorted(timed, reverse=True)[:3]:
        print(f"      {ms:6.2f} ms  {sql[:160]}")


def compare(args: argparse.Namespace) -> None:
    """This checkout against `--against`, alternating `--rounds` times on the same database
    (the machine's load moves between runs): each endpoint's min and median CPU per request
    and the ratio of the mins."""
    common = ["--database-url", args.database_url, "--repeat", str(args.repeat)]
    common += ["--commits", str(args.commits), "--findings", str(args.findings)]
    common += ["--match", args.match]
    runs: dict[str, dict[str, list[float]]] = {}
    for _ in range(args.rounds):
        for name, extra in (("peer", ["--code", args.against]), ("this", [])):
            out = subprocess.run(
                [sys.executable, __file__, *common, *extra],
                capture_output=True, text=True, check=True,
            ).stdout  # fmt: skip
            for line in out.splitlines():
                if " ms CPU/request" in line:
                    label, cpu = line[:48].strip(), float(line[48:].split()[0])
                    runs.setdefault(label, {}).setdefault(name, []).append(cpu)
    print(f"CPU per cold request, ms: peer {args.against} against this checkout")
    for label, by in runs.items():
        peer, this = by["peer"], by["this"]
        print(
            f"{label:46s} peer min {min(peer):6.2f} med {statistics.median(peer):6.2f}"
            f"  this min {min(this):6.2f} med {statistics.median(this):6.2f}"
            f"  this/peer {min(this) / min(peer):.2f}"
        )
    print(f"load average {os.getloadavg()} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
