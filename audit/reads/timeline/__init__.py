"""The timeline's reads: a window of versions (`window`), its SQL compiled once (`sql`), the
per-1,024-version rollups it is served from (`rollups`), and the grid its buckets are counted on
(`grid`)."""
