"""The web server's configuration: `scripts/run.sh`, the compose file, the Dockerfile and
`bench/bench_api.py` all start gunicorn with this file (and nothing else on the command line
but the bind address and where logs go), so the bench measures what runs.

Threaded workers with keep-alive: one process per core (at least 2) of 4 threads, each holding
at most 3 x 4 = 12 connections (WEB_CONCURRENCY, WEB_THREADS, WEB_WORKER_CONNECTIONS override).

- Keep-alive: a cached API read costs ~0.2 ms of Python; closing the connection after each
  response (sync workers) made every request pay a TCP handshake and teardown on both sides,
  which cost more than the answer: at 20 wrk connections on 2 busy cores, gthread + keep-alive
  served ~3x the requests of sync workers at a p50 of 5-7 ms instead of ~21 ms.
- Processes: one per core. The GIL makes threads of one worker take turns (they hide I/O waits,
  processes give parallelism), and more processes than cores only take turns on the cores: at
  stop 35, 20 wrk connections, 1M commits, caches off, 24 endpoints, 2 x 4 : 12 had p95s of
  0.40-0.98x (median 0.69-0.71x) those of the former 2 x cores + 1 = 5 x 4 : 6 on SQLite (two
  rounds), 0.60-1.11x (median 0.83x) on PostgreSQL, 0.77-0.95x for the tables list under the
  writer, and 0.37-0.76x (median 0.52x) with the caches on, at 0.7-1.1x the server CPU per
  request.
- Connections per worker: a keep-alive connection stays on the worker that accepted it, and
  the worker awake when clients arrive accepts most of them: with gunicorn's default of 1,000,
  bench_api.py found [20, 0, 0, 0, 0] on 5 workers, so one process and one core served nearly
  every request. The cap makes a full worker stop accepting so the others take the rest
  ([12, 8] on 2 workers). It must hold the clients too: 2 x 2 or 2 x 4 with the former cap of
  threads + 2 held only 8 or 12 of 20 connections, and the others waited in the kernel's
  accept queue until some response closed a connection (at most cap - threads are kept idle):
  1-3 s waits. Beware that shape in a bench: the starved connections send almost nothing, the
  8 served ones see short queues, so most p95s looked 0.4x as good while some endpoints' p95s
  were 1-3 s. Closing every connection instead (WEB_KEEPALIVE=0, so all clients queue fairly
  in the kernel) measured 0.92-0.96x of 2 x 4 : 12's p95s at 0.92-0.95x its requests/s: not
  worth a handshake a request. Uncapped, the pile-up returns.

A connection that has sent nothing yet (a browser's preconnect) also counts, for at most
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
