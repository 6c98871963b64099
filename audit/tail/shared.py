"""Each table's log listing shared by the pool's worker processes (Redis), so a table's log is
listed in full once for the pool, not once per process.

A tail step runs wherever the table's lease lands (audit/ingest/lease.py): any process of any
worker on any machine. Without this, a process that has not seen the table pays a full
listing of its `_delta_log` (one LIST per 1,000 files, plus `_last_checkpoint`), and with more
tables than AUDIT_LOG_CACHE_TABLES per process its cache thrashes. With it, the process that
last advanced a table's listing publishes it here (compressed: a 10,000-commit listing is a few
tens of KB), and a process without the table picks it up and lists only what was written
after it: one LIST, as if it had tailed the table itself. The time of the last full listing
travels with it, so AUDIT_FULL_LISTING_SECONDS (noticing log cleanup) holds pool-wide.

Nothing here is correctness-critical: a listing that no longer matches the log is detected by
the incremental listing itself (extend_listing then asks for a full one), and Redis being
unreachable only costs requests. AUDIT_LOG_SHARE_URL empty turns it off.

The same Redis keeps beat's tail passes from overlapping (claim_pass): a pass over thousands
of tables can outlast the tail interval, and two passes at once probe every table twice.
"""

from __future__ import annotations

import logging
import uuid
import zlib
from typing import Any

import orjson
from django.conf import settings

from audit.core.model import LogListing

log = logging.getLogger(__name__)

_FORMAT = 1
_client: Any = None
_client_url: str | None = None


def _redis() -> Any:
    global _client, _client_url
    url = settings.AUDIT_LOG_SHARE_URL
    if not url:
        return None
    if _client is None or _client_url != url:
        import redis  # noqa: PLC0415 - only workers with sharing on need it

        _client = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)
        _client_url = url
    return _client


def _key(uri: str) -> str:
    return f"delta-audit:listing:{uri}"


def encode(listing: LogListing, listed_at: float) -> bytes:
    versions = listing.commit_versions
    contiguous = bool(versions) and versions[-1] - versions[0] + 1 == len(versions)
    doc = {
        "format": _FORMAT,
        "listed_at": listed_at,
        "uri": listing.table_uri,
        # A run of versions (the usual case) as its ends; anything else as the list.
        "commits": [versions[0], versions[-1]] if contiguous else None,
        "commit_list": None if contiguous else versions,
        "checkpoints": [[v, names] for v, names in listing.checkpoints.items()],
        "compactions": listing.compactions,
        "last_checkpoint": listing.last_checkpoint,
        "latest": listing.latest_version,
        "first": listing.first_available_version,
        "mtimes": [listing.file_modification_times.get(v) for v in versions],
    }
    return zlib.compress(orjson.dumps(doc), 1)


def decode(data: bytes) -> tuple[LogListing, float] | None:
    try:
        doc = orjson.loads(zlib.decompress(data))
    except (zlib.error, orjson.JSONDecodeError):
        return None
    if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
        return None
    try:
        return _listing_of(doc)
    except (KeyError, TypeError, ValueError, IndexError):  # a damaged entry: list afresh
        return None


def _listing_of(doc: dict) -> tuple[LogListing, float]:
    if doc["commits"] is not None:
        versions = list(range(doc["commits"][0], doc["commits"][1] + 1))
    else:
        versions = list(doc["commit_list"])
    listing = LogListing(
        table_uri=doc["uri"],
        commit_versions=versions,
        checkpoints={int(v): list(names) for v, names in doc["checkpoints"]},
        compactions=[(int(a), int(b), str(n)) for a, b, n in doc["compactions"]],
        last_checkpoint=doc["last_checkpoint"],
        latest_version=int(doc["latest"]),
        first_available_version=int(doc["first"]),
        file_modification_times={
            v: t for v, t in zip(versions, doc["mtimes"], strict=True) if t is not None
        },
    )
    return listing, float(doc["listed_at"])


def publish(listing: LogListing, listed_at: float) -> None:
    """Make `listing` the pool's view of the table (kept until a full listing is due again)."""
    client = _redis()
    if client is None:
        return
    ttl = max(int(settings.AUDIT_FULL_LISTING_SECONDS), 1)
    try:
        client.set(_key(listing.table_uri), encode(listing, listed_at), ex=ttl)
    except Exception as err:  # noqa: BLE001 - sharing is an optimisation: never fail a tail step
        log.debug("cannot share the listing of %s: %s", listing.table_uri, err)


def fetch(uri: str) -> tuple[LogListing, float] | None:
    """The pool's last listing of the table and when it was last listed in full, if any."""
    client = _redis()
    if client is None:
        return None
    try:
        data = client.get(_key(uri))
    except Exception as err:  # noqa: BLE001 - as in publish()
        log.debug("cannot read the shared listing of %s: %s", uri, err)
        return None
    found = decode(data) if data else None
    if found is None or found[0].table_uri != uri:
        return None
    return found


def drop(uri: str) -> None:
    client = _redis()
    if client is None:
        return
    try:
        client.delete(_key(uri))
    except Exception as err:  # noqa: BLE001 - as in publish()
        log.debug("cannot drop the shared listing of %s: %s", uri, err)


# --------------------------------------------------------------------------- one pass at a time

_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end"


def claim_pass(name: str, ttl: float) -> str | None:
    """A lease on the pool-wide pass `name` (beat's tail pass): its token, or None while another
    process runs one. Passes over thousands of tables can take longer than the tail interval;
    overlapping, each would probe every table again. Without Redis: always granted (as before).
    A process killed mid-pass holds it for `ttl` seconds at most."""
    token = uuid.uuid4().hex
    client = _redis()
    if client is None:
        return token
    try:
        won = client.set(f"delta-audit:pass:{name}", token, nx=True, px=int(ttl * 1000))
    except Exception as err:  # noqa: BLE001 - no coordination: run the pass, as without Redis
        log.debug("cannot claim the %s pass: %s", name, err)
        return token
    return token if won else None


def release_pass(name: str, token: str) -> None:
    client = _redis()
    if client is None:
        return
    try:
        client.eval(_RELEASE, 1, f"delta-audit:pass:{name}", token)
    except Exception as err:  # noqa: BLE001 - the lease expires on its own
        log.debug("cannot release the %s pass: %s", name, err)
