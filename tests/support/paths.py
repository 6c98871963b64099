"""Where the tests find the checkout and their data, wherever a test file sits (core/, app/, e2e/)."""

from __future__ import annotations

import os
from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent.parent
ROOT = TESTS_DIR.parent  # the checkout: manage.py, docs/, scripts/, bench/
DATA_DIR = TESTS_DIR / "data"
DELTA_TABLES = DATA_DIR / "delta-tables"  # Delta Lake's own test tables (Apache-2.0)
EXCEPTIONS = DATA_DIR / "exceptions"  # writers' conflict messages, as engines print them
ARTIFACTS = TESTS_DIR / "artifacts"  # browser screenshots of failed runs


def every_suite_table() -> list[Path]:
    """Every table under DELTA_TABLES (a folder holding `_delta_log`), sorted."""
    found = []
    for dirpath, dirnames, _ in os.walk(DELTA_TABLES):
        if "_delta_log" in dirnames:
            found.append(Path(dirpath))
            dirnames.remove("_delta_log")
    return sorted(found)
