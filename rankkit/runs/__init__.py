"""Running strategies over tasks, and what a run produces: results, the bill, analyses, plans."""
