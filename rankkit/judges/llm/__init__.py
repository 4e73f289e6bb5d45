"""LLM judges: prompting a runtime (PREPAIR included) and reading its verdicts unsteerably."""
