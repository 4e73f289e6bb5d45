"""Statistics: confidence intervals, agreement with human scores, rating models."""
