"""The API's reads, each declared once (docs/api.md, "Where a new endpoint goes"): `routes`
(every route: who may read it, what its cached body depends on), `lists` (a list's fields,
filters and ordering), `params` (the filters' validation), `list_sql` (their SQL, compiled once)."""
