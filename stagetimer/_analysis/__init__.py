"""Read-only analysis of saved sidecars: the tree walk, statistics, report, compare, table, rows."""
