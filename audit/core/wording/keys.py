"""Words for duplicate_key findings (facts: audit/core/data/keys.py, anomalies/duplicate_keys.py)."""

from __future__ import annotations

from typing import Any

from audit.core.wording import FindingText

_HOW = {
    "concurrent": "ran concurrently (neither saw the other's rows), so each found the key absent",
    "sequential": "ran one after the other (the later one read a version holding the key): the "
    "writer itself inserted a key that was already there",
    "same_commit": "are one commit that wrote the key twice (a writer's own bug)",
    "unknown": "recorded no read version, so the log cannot tell whether they were concurrent",
}


def _key_text(sample: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in sample["key"].items())


def duplicate_key_text(
    version: int,
    earlier: list[int],
    keys: int,
    extra_rows: int,
    samples: list[dict[str, Any]],
    how: str,
    key_columns: list[str],
) -> FindingText:
    first = _key_text(samples[0]) if samples else "?"
    others = f" with v{', v'.join(str(v) for v in earlier)}" if earlier else ""
    return FindingText(
        f"{keys} key(s) of ({', '.join(key_columns)}) are live more than once after "
        f"v{version}, e.g. {first}",
        f"After version {version}, {keys} value(s) of the declared key "
        f"({', '.join(key_columns)}) are held by more than one live row ({extra_rows} extra "
        f"row(s)), e.g. {first}. Delta has no unique constraints: blind appends never conflict "
        f"and concurrent MERGEs can both insert a key. The commits that added them "
        f"(v{version}{others}) {_HOW.get(how, _HOW['unknown'])}. The rows were found in the "
        "data files (deletion vectors applied).",
    )
