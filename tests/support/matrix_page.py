"""The conflict matrix of the Databricks isolation-levels page, mirrored cell by cell: the
reference both the core's matrix and the conflict_matrix command are checked against."""

from __future__ import annotations

import itertools

from audit.core.conflicts.matrix import (
    INSERT,
    OPTIMIZE,
    UDM,
)

# Each entry: the cell's text as printed on the page (rows x columns of
# "INSERT (1) | UPDATE, DELETE, MERGE INTO | OPTIMIZE"), and the reading of that text as a
# function of (isolation level, deletion vectors, zorder). The lower triangle is what the page
# prints; the matrix is symmetric.
WITH_RLC = {
    (INSERT, INSERT): (
        "Cannot conflict",
        lambda level, dv, z: "cannot_conflict",
    ),
    (UDM, INSERT): (
        "Cannot conflict in WriteSerializable. Can conflict in Serializable when modifying the "
        "same row. See Limitations for row-level concurrency.",
        lambda level, dv, z: (
            "cannot_conflict" if level == "WriteSerializable" else "can_conflict_same_row"
        ),
    ),
    (UDM, UDM): (
        "Can conflict when modifying the same row. See Limitations for row-level concurrency.",
        lambda level, dv, z: "can_conflict_same_row",
    ),
    (OPTIMIZE, INSERT): (
        "Cannot conflict",
        lambda level, dv, z: "cannot_conflict",
    ),
    (OPTIMIZE, UDM): (
        "Can conflict when ZORDER BY is used. Cannot conflict otherwise.",
        lambda level, dv, z: "can_conflict" if z else "cannot_conflict",
    ),
    (OPTIMIZE, OPTIMIZE): (
        "Can conflict when ZORDER BY is used. Cannot conflict otherwise.",
        lambda level, dv, z: "can_conflict" if z else "cannot_conflict",
    ),
}


WITHOUT_RLC = {
    (INSERT, INSERT): (
        "Cannot conflict",
        lambda level, dv, z: "cannot_conflict",
    ),
    (UDM, INSERT): (
        "Cannot conflict in WriteSerializable. Can conflict in Serializable. See avoid "
        "conflicts with partitions.",
        lambda level, dv, z: "cannot_conflict" if level == "WriteSerializable" else "can_conflict",
    ),
    (UDM, UDM): (
        "Can conflict in Serializable and WriteSerializable. See avoid conflicts with partitions.",
        lambda level, dv, z: "can_conflict",
    ),
    (OPTIMIZE, INSERT): (
        "Cannot conflict",
        lambda level, dv, z: "cannot_conflict",
    ),
    (OPTIMIZE, UDM): (
        "Cannot conflict with in tables with deletion vectors enabled, unless ZORDER BY is used. "
        "Can conflict otherwise.",
        lambda level, dv, z: "cannot_conflict" if dv and not z else "can_conflict",
    ),
    (OPTIMIZE, OPTIMIZE): (
        "Cannot conflict with in tables with deletion vectors enabled, unless ZORDER BY is used. "
        "Can conflict otherwise.",
        lambda level, dv, z: "cannot_conflict" if dv and not z else "can_conflict",
    ),
}


LEVELS = ("Serializable", "WriteSerializable")


COMBINATIONS = list(itertools.product(LEVELS, (True, False), (True, False), (True, False)))


def expected_verdict(level: str, rlc: bool, dv: bool, zorder: bool, a: str, b: str) -> str:
    # "Tables do not support row-level concurrency if they ... do not have deletion vectors
    # enabled": without DVs the second table applies whatever was asked for.
    page = WITH_RLC if rlc and dv else WITHOUT_RLC
    entry = page.get((a, b)) or page[(b, a)]
    return entry[1](level, dv, zorder)
