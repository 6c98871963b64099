"""docs/architecture.md's "Where each concern lives" table is true of the tree, and the tree
keeps the house's proportions: a few loose modules in audit/, no crowded package.

The table is what a newcomer reads first, so it must name every package of the app, the core
and the workers, and every path it names must exist.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
# Folders that hold code but are not concerns of their own (Django's conventions).
NOT_CONCERNS = {"migrations", "templates", "static", "templatetags", "commands", "__pycache__"}
MAX_LOOSE_IN_AUDIT = 8
MAX_MODULES_PER_PACKAGE = 15


def _concern_rows() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Where each concern lives", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("|") and "---" not in line]


def _named_paths() -> set[str]:
    """Every path a row names; a bare `name.py` lies in the folder named before it in the row
    (`audit/core/storage/` (`stores.py`, ...))."""
    names: set[str] = set()
    for row in _concern_rows():
        folder = ""
        for name in re.findall(r"`([\w./-]+(?:\.py|/))`", row):
            if "/" not in name:
                name = folder + name
            elif name.endswith("/"):
                folder = name
            names.add(name)
    return names


def _packages() -> list[Path]:
    found = []
    for top in ("audit", "workers", "frontend", "config"):
        for init in (ROOT / top).rglob("__init__.py"):
            package = init.parent
            if not NOT_CONCERNS & set(package.relative_to(ROOT).parts):
                found.append(package)
    return sorted(found)


def _modules(package: Path) -> list[Path]:
    return [p for p in package.glob("*.py") if p.name != "__init__.py"]


def test_it_names_only_paths_that_exist():
    missing = sorted(p for p in _named_paths() if not (ROOT / p).exists())
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_it_names_every_package():
    named = _named_paths()
    unnamed = [
        str(p.relative_to(ROOT)) + "/"
        for p in _packages()
        if p != ROOT / "audit" and str(p.relative_to(ROOT)) + "/" not in named
    ]
    assert not unnamed, f"packages missing from 'Where each concern lives': {unnamed}"


def test_it_keeps_few_loose_modules_in_the_app():
    loose = sorted(p.name for p in _modules(ROOT / "audit"))
    assert len(loose) <= MAX_LOOSE_IN_AUDIT, loose


def test_it_keeps_every_package_small():
    crowded = {
        str(p.relative_to(ROOT)): len(_modules(p))
        for p in _packages()
        if len(_modules(p)) > MAX_MODULES_PER_PACKAGE
    }
    assert not crowded, f"packages over {MAX_MODULES_PER_PACKAGE} modules: {crowded}"


def test_it_keeps_the_performance_notes_current_and_short():
    # Current numbers and how to measure them; their history lives in git, not in the file.
    lines = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"docs/performance.md has {len(lines)} lines (at most 300)"
    assert not [line for line in lines if re.match(r"^\*\*Stop \d+", line)], "a stop's log"
