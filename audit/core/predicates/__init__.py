"""Predicates from Delta commits: parse, normalise and reason about them.

Predicates reach us as text in `commitInfo.operationParameters` in three dialects:

* Spark `simpleString`, often a JSON list of strings, with expression ids and *unquoted*
  literals: `["((id#1904L >= 5) AND (id#1904L <= 9))"]`, `(date#12 = 2024-01-02)`.
* delta-rs / DataFusion SQL: `d = '2024-01-02'::date`, `arrow_cast(x, 'Int64') > 5`, `"col" = 1`.
* Plain SQL written by users: `date < '2010-01-01'`.

Everything is parsed with sqlglot into one AST; `Predicate.sql` is that AST printed in sqlglot's
default (ANSI-like) dialect, and the raw text is always kept. On top of the AST the package
answers the audit's questions. Where each concern lives:

* `parsing`: `parse_predicate`, `expression_of` and the caches; `templates` (the fast path for
  predicates that differ only in literals), `dialects` (which sqlglot dialect reads the text),
  `spark` (Spark simpleString -> SQL), `normalise` (one spelling for one meaning).
* `comparisons`: conjuncts, disjuncts and `column op literal` read off the AST.
* `skipping`: which conjuncts touch partition columns, and may a file (by its partition values
  or min/max stats) hold matching rows; built on `evaluator` (the predicate compiled once),
  `logic` (three-valued masks) and `facts` (what a file says about a column).
* `disjointness`: do two predicates select disjoint values of a column.
* `arrow`: the predicate as a pyarrow expression, to evaluate it on a data file.
* `merge`: a MERGE condition's target alias, and pinning it to partitions.

All answers are conservative: what we cannot model "may match". Log text is untrusted, so
nothing here raises on bad input; unparsable text gives `Predicate(sql=None, error=...)`.
The sqlglot expressions handed out are shared through a cache: copy before mutating.
"""

from __future__ import annotations

from audit.core.predicates.arrow import to_arrow_expression
from audit.core.predicates.disjointness import disjoint
from audit.core.predicates.merge import (
    detect_target_alias,
    merge_condition_lacks_partition_literal,
    rewrite_merge_condition,
)
from audit.core.predicates.parsing import expression_of, parse_predicate
from audit.core.predicates.skipping import (
    names_partition_column,
    partition_matcher,
    partition_part,
    stats_may_match,
)

__all__ = [
    "detect_target_alias",
    "disjoint",
    "expression_of",
    "merge_condition_lacks_partition_literal",
    "names_partition_column",
    "parse_predicate",
    "partition_matcher",
    "partition_part",
    "rewrite_merge_condition",
    "stats_may_match",
    "to_arrow_expression",
]
