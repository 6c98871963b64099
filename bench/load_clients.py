"""The load clients of bench/bench_api.py: wrk (a separate process, with a Lua script that
prints its latency percentiles as JSON), a thread-pool client in a subprocess when wrk is not
installed, and one plain GET. Each returns {p50, p95, p99 (ms), requests, non2xx, errors,
seconds}."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

WRK_LUA = """
done = function(summary, latency, requests)
  io.write(string.format(
    "WRKJSON {\\"p50\\": %.3f, \\"p95\\": %.3f, \\"p99\\": %.3f, \\"requests\\": %d, "
    .. "\\"non2xx\\": %d, \\"errors\\": %d, \\"seconds\\": %.3f}\\n",
    latency:percentile(50) / 1000, latency:percentile(95) / 1000,
    latency:percentile(99) / 1000, summary.requests, summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write
      + summary.errors.timeout, summary.duration / 1e6))
end
"""


def fetch(url: str, header: str) -> tuple[int, bytes]:
    """GET with one header line ("Authorization: Token ..." or "Cookie: sessionid=...")."""
    name, value = header.split(": ", 1)
    request = urllib.request.Request(url, headers={name: value})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.status, response.read()


def run_wrk(url: str, header: str, connections: int, seconds: int, lua: Path) -> dict:
    out = subprocess.run(
        [
            "wrk",
            "-t",
            "2",
            "-c",
            str(connections),
            "-d",
            f"{seconds}s",
            "--timeout",
            "10s",
            "-H",
            header,
            "-s",
            str(lua),
            url,
        ],  # fmt: skip
        capture_output=True,
        text=True,
        check=True,
    )
    line = next(line for line in out.stdout.splitlines() if line.startswith("WRKJSON "))
    return json.loads(line[len("WRKJSON ") :])


PY_CLIENT = r"""
import json, sys, time, urllib.request
from concurrent.futures import ThreadPoolExecutor
url, header, conns, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
name, value = header.split(": ", 1)
end = time.monotonic() + seconds
def worker(_):
    lat, bad = [], 0
    while time.monotonic() < end:
        t = time.perf_counter()
        req = urllib.request.Request(url, headers={name: value})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                r.read(); bad += r.status >= 300
        except Exception:
            bad += 1
        lat.append((time.perf_counter() - t) * 1000)
    return lat, bad
with ThreadPoolExecutor(conns) as pool:
    results = list(pool.map(worker, range(conns)))
lat = sorted(x for l, _ in results for x in l)
pct = lambda p: lat[min(int(len(lat) * p / 100), len(lat) - 1)]
print(json.dumps({"p50": pct(50), "p95": pct(95), "p99": pct(99), "requests": len(lat),
                  "non2xx": sum(b for _, b in results), "errors": 0, "seconds": seconds}))
"""


def run_python_client(url: str, header: str, connections: int, seconds: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", PY_CLIENT, url, header, str(connections), str(seconds)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])
