"""Three-valued SQL logic over sets of outcomes, the algebra of file skipping."""

from __future__ import annotations

from collections.abc import Callable

# Three-valued SQL logic over a *set* of possible outcomes: a bit mask of TRUE, FALSE and
# NULL. A leaf says which outcomes some row of the file could produce; AND/OR/NOT combine
# masks pointwise. A file may match iff TRUE is possible. This is sound (never prunes a file
# that could match) and exact when every value is known (partition values).

TRUE, FALSE, NULL = 1, 2, 4
ANY = TRUE | FALSE | NULL


def _kleene_and(a: int, b: int) -> int:
    return FALSE if FALSE in (a, b) else NULL if NULL in (a, b) else TRUE


def _kleene_or(a: int, b: int) -> int:
    return TRUE if TRUE in (a, b) else NULL if NULL in (a, b) else FALSE


def _lift(op: Callable[[int, int], int]) -> list[list[int]]:
    table = [[0] * 8 for _ in range(8)]
    for a in range(8):
        for b in range(8):
            for x in (TRUE, FALSE, NULL):
                for y in (TRUE, FALSE, NULL):
                    if a & x and b & y:
                        table[a][b] |= op(x, y)
    return table


AND = _lift(_kleene_and)
OR = _lift(_kleene_or)
NOT = [((m & TRUE) and FALSE) | ((m & FALSE) and TRUE) | (m & NULL) for m in range(8)]
