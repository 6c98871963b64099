"""The web server's configuration: `scripts/run.sh`, the compose file, the Dockerfile and
`bench/bench_api.py` all start gunicorn with this file (and nothing else on the command line
but the bind address and where logs go), so the bench measures what runs.

Threaded workers with keep-alive, 2 x cores + 1 processes of 4 threads (WEB_CONCURRENCY,
WEB_THREADS override). A cached API read costs ~0.2 ms of Python; closing the connection after
each response (sync workers) made every request pay a TCP handshake and teardown on both sides,
which cost more than the answer: at 20 wrk connections on 2 busy cores, gthread + keep-alive
served ~3x the requests of sync workers at a p50 of 5-7 ms instead of ~21 ms, and the cold path
did no worse (bench/bench_api.py). The GIL makes threads of one worker take turns: they hide
I/O waits, processes give parallelism.

A keep-alive connection stays on the worker that accepted it, and the worker awake when wrk's
20 connections arrive accepts most of them: with gunicorn's default of 1,000 connections a
worker, bench_api.py found [20, 0, 0, 0, 0] or [14, 4, 2, 0, 0] connections on the 5 workers
(`connections per worker`), so one process, one GIL and one core served nearly every request.
`worker_connections` = threads + 2 (WEB_WORKER_CONNECTIONS) caps what a worker holds: a full
worker stops accepting and the others take the rest ([5, 5, 4, 3, 3]). At most 2 of a worker's
connections are kept idle; a response beyond that closes its connection, so many clients never
wait on a full worker, they reconnect. Measured in one run at 20 connections, 1M commits,
SQLite, load 12-22 (loaded: ratios only): caches off 1.57x the requests/s summed over 4
endpoints and p95 0.46-0.76x on 3 of them (1.10x on the fourth); caches on 2.0x and p95
0.07-0.36x on 3 of 4 (1.43x on the findings page). 10 x 2 and 20 x 1 without the cap piled up the same way ([19, 1, 0, ...],
[18, 1, 1, 0, ...]); capped, 10 x 2 matched 5 x 4 and 20 x 1 served fewer requests. A
connection that has sent nothing yet (a browser's preconnect) also counts, for at most
WEB_KEEPALIVE seconds: put a buffering reverse proxy in front for slow clients on the open
internet, and raise WEB_WORKER_CONNECTIONS if many idle sockets reach gunicorn directly.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

# gunicorn reads this file before it imports the app: make the project importable from any cwd.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from config.declared import GUNICORN, read_all  # noqa: E402

web = read_all(Path(__file__).resolve().parent.parent, read_by=GUNICORN)
bind = web["WEB_BIND"]
workers = web["WEB_CONCURRENCY"]
worker_class = "gthread"
threads = web["WEB_THREADS"]
worker_connections = web["WEB_WORKER_CONNECTIONS"]  # spreads keep-alive clients (docstring)
keepalive = web["WEB_KEEPALIVE"]  # seconds an idle connection is kept
timeout = web["WEB_TIMEOUT"]
graceful_timeout = web["WEB_GRACEFUL_TIMEOUT"]  # on SIGTERM
backlog = 256
# Load Django once in the master: workers fork with the app imported (faster start, shared
# pages), and its objects are frozen out of the cyclic GC so collections stay short.
preload_app = True
# Where the access log goes ("-": stdout); empty: none. run.sh and the compose file set it, and
# so does the bench (writing one line per request is part of a request's cost).
accesslog = web["WEB_ACCESS_LOG"] or None
errorlog = web["WEB_ERROR_LOG"]


def pre_fork(server, worker):
    gc.freeze()
