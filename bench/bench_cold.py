"""Server CPU of each cold API read and dashboard page, in-process (no network, no wrk).

    .venv/bin/python bench/bench_cold.py [--commits 200000] [--database-url ...]
        [--repeat 200] [--match <label part>] [--profile <label part>] [--queries]

The same database, endpoints and users as bench/bench_api.py (built by it first), with the
response and page caches off (`--modes off` there): every request computes its answer. Each
endpoint is called through the WSGI application (the whole middleware stack, as gunicorn calls
it) `--repeat` times after a warm-up, and the process CPU per request (time.process_time) is
printed, with the SQL queries one request runs (`--queries`, django's CaptureQueriesContext)
and a cProfile of the endpoints matching `--profile`. The budget: 20 closed-loop clients on 2
cores wait about 20 x CPU / 2, so a cold request must cost < ~4 ms for a p95 under 50 ms.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
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
    args = parser.parse_args()

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

    bench_api.setup_django(args.database_url)
    table_id = bench_api.build(args.commits, args.findings, False)
    token = f"Authorization: Token {bench_api.token_for_bench_user()}"
    session = f"Cookie: {bench_api.session_cookie_for_bench_user()}"
    from django.core.wsgi import get_wsgi_application
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    app = get_wsgi_application()
    endpoints, pages = bench_api.endpoint_lists(8000, table_id, args.commits)
    full = (
        "timeline, whole history (1 request)",
        f"http://127.0.0.1:8000/api/tables/{table_id}/timeline/",
    )
    work = [(label, url, token) for label, url in [*endpoints, full]]
    work += [(label, url, session) for label, url in pages]
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
        if profiler:
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats(
                os.environ.get("SORT", "cumulative")
            ).print_stats(int(os.environ.get("TOP", "45")))
            print(out.getvalue())
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
