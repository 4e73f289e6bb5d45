"""Cost before spending: what a run will ask the judge, worked out without asking it (``--dry-run``).

* :mod:`~rankkit.runs.plan.dry_run` — :func:`dry_run`, per strategy the judgments it uses and whether
  each is cached, shared or new, exact or bounded; :func:`expected_judgments` for a progress bar;
* :mod:`~rankkit.runs.plan.stand_in` — the stand-in judge and the read-only cache;
* :mod:`~rankkit.runs.plan.tokens` — prompt sizes, estimated in tokens;
* :mod:`~rankkit.runs.plan.output` — :func:`format_dry_run`: the table and summary.

The judge stood in for is ``make_judge(spec, stand_in=True)``: nothing is loaded or called.
"""

from rankkit.runs.plan.dry_run import DryRun, PlanRow, dry_run, expected_judgments
from rankkit.runs.plan.output import COLUMNS, display_rows, format_dry_run
from rankkit.runs.plan.stand_in import POLICIES, ReadOnlyCache, StandInJudge, read_only_cache
from rankkit.runs.plan.tokens import CHARS_PER_TOKEN, PromptSizes, estimate_tokens

__all__ = [
    "CHARS_PER_TOKEN",
    "COLUMNS",
    "POLICIES",
    "DryRun",
    "PlanRow",
    "PromptSizes",
    "ReadOnlyCache",
    "StandInJudge",
    "display_rows",
    "dry_run",
    "estimate_tokens",
    "expected_judgments",
    "format_dry_run",
    "read_only_cache",
]
