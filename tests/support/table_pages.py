"""Every page and API endpoint of one stored table, and what each should answer: for the tests
that a hostile log, once stored, never makes a page fail (tests/app/test_hostile_ingest.py,
tests/app/test_one_commit_never_stops_a_table.py)."""

from __future__ import annotations

from audit.models import Commit, Finding, Table

API_PARTS = (
    "commits",
    "timeline",
    "hotspots",
    "writers",
    "settings",
    "recommendations",
    "orphans",
    "health",
    "health/history",
    "changes",
)
PAGE_PARTS = ("", "status/", "analysis/", "writers/")
# The endpoints that read the table's log: a log the tail could not read (the table in error)
# answers 409 there, with the reason.
READS_THE_LOG = ("hotspots", "writers", "settings", "recommendations", "health", "diff")
MAX_COMMITS = 12  # the stored commits whose pages are asked for (the newest ones)
MAX_FINDINGS = 12


def table_urls(table: Table) -> dict[str, int]:
    """URL -> the status it should answer: 200, except the diff (first to last stored version)
    of a table with one stored version (no two versions to compare: the client's mistake,
    400)."""
    api, page, last = f"/api/tables/{table.id}/", f"/tables/{table.id}/", table.last_seen_version
    urls = {api: 200, f"/api/findings/?table={table.id}": 200}
    urls.update({f"{page}{part}": 200 for part in PAGE_PARTS})
    urls.update({f"{api}{part}/": 200 for part in API_PARTS})
    versions = Commit.objects.filter(table=table).order_by("-version").values_list("version")
    for (version,) in versions[:MAX_COMMITS]:
        urls[f"{api}commits/{version}/"] = urls[f"{page}commits/{version}/"] = 200
    findings = Finding.objects.filter(table=table).order_by("id").values_list("id")
    for (finding_id,) in findings[:MAX_FINDINGS]:
        urls[f"/findings/{finding_id}/"] = urls[f"/api/findings/{finding_id}/"] = 200
    first = Commit.objects.filter(table=table).order_by("version").values_list("version")[:1]
    if last is not None and first:
        (low,) = first[0]
        diff = f"diff/?from={low}&to={last}"
        urls[f"{api}{diff}"] = urls[f"{page}{diff}"] = 200 if last > low else 400
    return urls


def answers(client, table: Table) -> dict[str, int]:
    """The URLs of `table` that answered otherwise than they should: URL -> status. The test
    client re-raises a view's exception, so a crash fails the caller as a 500 would."""
    wrong = {}
    unreadable = table.status == Table.Status.ERROR
    for url, expected in table_urls(table).items():
        status = client.get(url).status_code
        if status == 409 and unreadable and _reads_the_log(url):
            continue
        if status != expected:
            wrong[url] = status
    return wrong


def _reads_the_log(url: str) -> bool:
    return url.startswith("/api/") and any(f"/{part}/" in url for part in READS_THE_LOG)
