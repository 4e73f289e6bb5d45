"""Presentation of a run: the HTML report, plots and the judge report."""
