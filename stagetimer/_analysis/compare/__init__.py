"""compare: two suites side by side, stage by stage, and whether the comparison is like for like."""
