"""Every finding's words come from audit/core/wording/: a detector passes facts to a wording
function and never spells a summary or an explanation itself.

Parses the core's modules with ast: a `Finding(...)` or `FindingText(...)` built outside
wording/ is a sentence written next to detection."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "audit" / "core"
WORDING = CORE / "wording"


def _builders(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
        words = {k.arg for k in node.keywords} & {"summary", "explanation"}
        if name == "FindingText" or (name == "Finding" and (words or len(node.args) > 5)):
            found.append(f"{path.relative_to(CORE.parent.parent)}:{node.lineno}")
    return found


def test_it_builds_finding_text_only_in_wording():
    outside = [p for p in sorted(CORE.rglob("*.py")) if WORDING not in p.parents]
    built = [where for path in outside for where in _builders(path)]
    assert not built, f"finding text built outside wording/: {built}"
