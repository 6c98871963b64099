"""The web server's configuration: `scripts/run.sh`, the compose file, the Dockerfile and
`bench/bench_api.py` all start gunicorn with this file, so the bench measures what runs.

Sync workers, 2 x cores + 1 of them (WEB_CONCURRENCY overrides): the API's reads are short and
CPU-bound, and a sync worker closes each connection after its response, so load spreads over
every worker. gthread workers keep a keep-alive connection on the worker that accepted it; with
20 clients on 2 workers x 4 threads that left about a fifth of the CPU idle. Put a buffering
reverse proxy in front for slow clients on the open internet.
"""

from __future__ import annotations

import gc
import multiprocessing
import os

bind = os.environ.get("WEB_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", 2 * multiprocessing.cpu_count() + 1))
worker_class = "sync"
timeout = int(os.environ.get("WEB_TIMEOUT", "60"))
backlog = 256
# Load Django once in the master: workers fork with the app imported (faster start, shared
# pages), and its objects are frozen out of the cyclic GC so collections stay short.
preload_app = True
accesslog = os.environ.get("WEB_ACCESS_LOG") or None
errorlog = os.environ.get("WEB_ERROR_LOG", "-")


def pre_fork(server, worker):
    gc.freeze()
