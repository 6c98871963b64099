"""The web server's configuration: `scripts/run.sh`, the compose file, the Dockerfile and
`bench/bench_api.py` all start gunicorn with this file (and nothing else on the command line
but the bind address and where logs go), so the bench measures what runs.

Threaded workers with keep-alive, 2 x cores + 1 processes of 4 threads (WEB_CONCURRENCY,
WEB_THREADS override). A cached API read costs ~0.2 ms of Python; closing the connection after
each response (sync workers) made every request pay a TCP handshake and teardown on both sides,
which cost more than the answer: at 20 wrk connections on 2 busy cores, gthread + keep-alive
served ~3x the requests of sync workers at a p50 of 5-7 ms instead of ~21 ms, and the cold path
did no worse (issue 16, docs/performance.md). A keep-alive connection stays on the worker that
accepted it; with 2 x cores + 1 workers no core idles for lack of a connection, which 2 workers
of 4 threads did (about a fifth of the CPU idle). The GIL makes threads of one worker take
turns: they hide I/O waits, processes give parallelism. Put a buffering reverse proxy in front
for slow clients on the open internet.
"""

from __future__ import annotations

import gc
import multiprocessing
import os

bind = os.environ.get("WEB_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", 2 * multiprocessing.cpu_count() + 1))
worker_class = "gthread"
threads = int(os.environ.get("WEB_THREADS", "4"))
keepalive = int(os.environ.get("WEB_KEEPALIVE", "5"))  # seconds an idle connection is kept
timeout = int(os.environ.get("WEB_TIMEOUT", "60"))
graceful_timeout = int(os.environ.get("WEB_GRACEFUL_TIMEOUT", "30"))  # on SIGTERM
backlog = 256
# Load Django once in the master: workers fork with the app imported (faster start, shared
# pages), and its objects are frozen out of the cyclic GC so collections stay short.
preload_app = True
# Where the access log goes ("-": stdout); empty: none. run.sh and the compose file set it, and
# so does the bench (writing one line per request is part of a request's cost).
accesslog = os.environ.get("WEB_ACCESS_LOG") or None
errorlog = os.environ.get("WEB_ERROR_LOG", "-")


def pre_fork(server, worker):
    gc.freeze()
