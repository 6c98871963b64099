"""The conflict matrices of the reference page, as one pure function.

Source: reference/isolation-levels-and-write-conflicts.txt, the tables "Write conflicts with
row-level concurrency" and "Write conflicts without row-level concurrency", footnote (1), the
REORG note and the identity-columns note. The verdicts below are transcribed from those two
tables and nothing else; `audit.core.operations.classify_operation` maps the operation names
real writers record in commitInfo onto the three operation kinds the tables use.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from audit.core.vocab import TABLE_ISOLATION_LEVELS, IsolationLevel, OperationClass, Verdict

# The matrix's names, as modules and tests import them from here.
INSERT = OperationClass.INSERT
UDM = OperationClass.UDM
OPTIMIZE = OperationClass.OPTIMIZE
OPS: tuple[OperationClass, ...] = tuple(OperationClass)

CANNOT = Verdict.CANNOT_CONFLICT
CAN = Verdict.CAN_CONFLICT
SAME_ROW = Verdict.CAN_CONFLICT_SAME_ROW
VERDICTS: tuple[Verdict, ...] = tuple(Verdict)

SERIALIZABLE = IsolationLevel.SERIALIZABLE
WRITE_SERIALIZABLE = IsolationLevel.WRITE_SERIALIZABLE
ISOLATION_LEVELS: tuple[IsolationLevel, ...] = TABLE_ISOLATION_LEVELS

# The page's general notes, kept verbatim-close so the UI can show them under the grid.
FOOTNOTE_1 = (
    "(1) INSERT means a blind append that reads nothing from the table before committing; an "
    "INSERT with a subquery or condition reading the same table has the concurrency of MERGE."
)
REORG_NOTE = (
    "REORG behaves as OPTIMIZE when it rewrites files to apply deletion vectors; REORG ... APPLY "
    "(UPGRADE UNIFORM ...) changes the protocol, which conflicts with every concurrent operation."
)
IDENTITY_NOTE = "Tables with identity columns do not support concurrent transactions."
METADATA_NOTE = (
    "Metadata changes (protocol, table properties, schema) make every concurrent write fail."
)
GENERAL_NOTES: tuple[str, ...] = (FOOTNOTE_1, REORG_NOTE, IDENTITY_NOTE, METADATA_NOTE)


@dataclass(frozen=True, slots=True)
class MatrixCell:
    a: OperationClass
    b: OperationClass
    verdict: Verdict
    note: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def normalize_isolation_level(value: str) -> IsolationLevel:
    """'serializable', 'WRITESERIALIZABLE', 'writeSerializable', 'Write Serializable' -> canonical."""
    if not isinstance(value, str):
        raise ValueError(f"isolation level must be a string, got {type(value).__name__}")
    key = value.strip().replace(" ", "").replace("_", "").replace("-", "").lower()
    for level in ISOLATION_LEVELS:
        if key == level.lower():
            return level
    shown = value if len(value) <= 60 else value[:57] + "..."
    raise ValueError(
        f"unknown isolation level {shown!r}: expected Serializable or WriteSerializable"
    )


# --------------------------------------------------------------------------- the tables


def conflict_matrix(
    isolation_level: str,
    row_level_concurrency: bool,
    deletion_vectors: bool,
    zorder: bool,
    *,
    identity_columns: bool = False,
) -> list[MatrixCell]:
    """The six cells (every unordered pair of OPS) for one table configuration.

    Row-level concurrency needs deletion vectors ("Tables do not support row-level concurrency
    if they ... do not have deletion vectors enabled"), so with `deletion_vectors` off the table
    without row-level concurrency applies even when `row_level_concurrency` is asked for, and
    the notes say so. `identity_columns` does not change a verdict (the page's tables do not
    model it) but adds the page's warning to every cell.
    """
    level = normalize_isolation_level(isolation_level)
    rlc_effective = bool(row_level_concurrency) and bool(deletion_vectors)
    build = _cells_with_rlc if rlc_effective else _cells_without_rlc
    cells = build(level == SERIALIZABLE, bool(deletion_vectors), bool(zorder))
    suffix = ""
    if row_level_concurrency and not deletion_vectors:
        suffix += (
            " Row-level concurrency needs deletion vectors, so the table without"
            " row-level concurrency applies."
        )
    if identity_columns:
        suffix += " This table has identity columns: " + IDENTITY_NOTE.lower()
    if suffix:
        cells = [MatrixCell(c.a, c.b, c.verdict, c.note + suffix) for c in cells]
    return cells


def _insert_insert() -> MatrixCell:
    return MatrixCell(
        INSERT,
        INSERT,
        CANNOT,
        "Blind appends never conflict with each other (footnote (1): an INSERT reading the"
        " same table counts as MERGE). Not so on tables with identity columns, which support"
        " no concurrent transactions.",
    )


def _insert_optimize() -> MatrixCell:
    return MatrixCell(
        INSERT,
        OPTIMIZE,
        CANNOT,
        "OPTIMIZE only rewrites files that already existed; files a blind append adds are not"
        " among them. REORG behaves as OPTIMIZE here.",
    )


def _optimize_cells(deletion_vectors: bool, zorder: bool, rlc: bool) -> list[MatrixCell]:
    """UDM-OPTIMIZE and OPTIMIZE-OPTIMIZE: the two tables give both cells the same rule."""
    if rlc:
        verdict = CAN if zorder else CANNOT
        why = (
            "ZORDER BY rewrites rows across files, so it can conflict."
            if zorder
            else "Without ZORDER BY, OPTIMIZE cannot conflict under row-level concurrency."
        )
    else:
        verdict = CANNOT if deletion_vectors and not zorder else CAN
        if deletion_vectors and zorder:
            why = "Deletion vectors are on but ZORDER BY is used, so it can conflict."
        elif deletion_vectors:
            why = "Deletion vectors are on and no ZORDER BY: cannot conflict."
        else:
            why = (
                "Without deletion vectors OPTIMIZE removes files others read or remove"
                " (ConcurrentDeleteReadException, ConcurrentDeleteDeleteException)."
            )
    return [
        MatrixCell(UDM, OPTIMIZE, verdict, why + " REORG behaves as OPTIMIZE."),
        MatrixCell(
            OPTIMIZE,
            OPTIMIZE,
            verdict,
            why
            + (
                " Two compactions of the same files raise ConcurrentDeleteDeleteException."
                if verdict == CAN
                else ""
            ),
        ),
    ]


def _cells_without_rlc(
    serializable: bool, deletion_vectors: bool, zorder: bool
) -> list[MatrixCell]:
    if serializable:
        insert_udm = MatrixCell(
            INSERT,
            UDM,
            CAN,
            "Serializable checks blind appends too: an append into a partition the"
            " UPDATE/DELETE/MERGE read raises ConcurrentAppendException. Partition by the"
            " columns of its condition to keep the file sets disjoint.",
        )
    else:
        insert_udm = MatrixCell(
            INSERT,
            UDM,
            CANNOT,
            "WriteSerializable exempts files added by blind appends, so the append may"
            " serialize before the UPDATE/DELETE/MERGE that the history shows first.",
        )
    udm_udm = MatrixCell(
        UDM,
        UDM,
        CAN,
        "Conflicts in both isolation levels when both touch the same files (same partition, or"
        " anywhere in an unpartitioned table). Partition by the columns of their conditions.",
    )
    return [
        _insert_insert(),
        insert_udm,
        _insert_optimize(),
        udm_udm,
        *_optimize_cells(deletion_vectors, zorder, rlc=False),
    ]


def _cells_with_rlc(serializable: bool, deletion_vectors: bool, zorder: bool) -> list[MatrixCell]:
    if serializable:
        insert_udm = MatrixCell(
            INSERT,
            UDM,
            SAME_ROW,
            "Row-level concurrency: in Serializable it conflicts only when both modify the same"
            " row (see Limitations for row-level concurrency).",
        )
    else:
        insert_udm = MatrixCell(
            INSERT,
            UDM,
            CANNOT,
            "WriteSerializable exempts files added by blind appends from the conflict check.",
        )
    udm_udm = MatrixCell(
        UDM,
        UDM,
        SAME_ROW,
        "Row-level concurrency: conflicts only when both modify the same row; complex"
        " conditions (complex types, non-deterministic expressions, subqueries) fall back to"
        " file-level conflicts.",
    )
    return [
        _insert_insert(),
        insert_udm,
        _insert_optimize(),
        udm_udm,
        *_optimize_cells(deletion_vectors, zorder, rlc=True),
    ]


def verdict_for(cells: list[MatrixCell], op_a: str, op_b: str) -> Verdict:
    """The verdict of the unordered pair (op_a, op_b); KeyError if the pair is not in `cells`."""
    wanted = {op_a, op_b}
    for cell in cells:
        if {cell.a, cell.b} == wanted:
            return cell.verdict
    raise KeyError(f"no cell for the pair ({op_a}, {op_b})")


def matrix_as_json(cells: list[MatrixCell]) -> str:
    """The `conflict_matrix --json` contract: {"cells": [{"a", "b", "verdict", "note"}]}."""
    return json.dumps({"cells": [cell.as_dict() for cell in cells]}, ensure_ascii=False)
