"""Cost before spending: what a run will ask the judge, worked out without asking it (``--dry-run``).

One module per step:

* :mod:`~rankkit.plan.dry_run` — :func:`dry_run`: the run itself, on a stand-in judge; per
  strategy, the comparisons and grades it uses and whether each is cached, shared with an earlier
  strategy, or new (to pay for), exact or bounded; :func:`expected_judgments` for a progress bar;
* :mod:`~rankkit.plan.stand_in` — the stand-in judge (the real judge's identity, made-up
  verdicts) and the cache opened read-only;
* :mod:`~rankkit.plan.tokens` — prompt sizes of the new judgments, estimated in tokens;
* the judge it stands in for is ``make_judge(spec, stand_in=True)``
  (:func:`rankkit.judges.make_judge`): each backend's descriptor says how to build it with its real
  fingerprint and prompts but no model — nothing is loaded and nothing is called;
* :mod:`~rankkit.plan.output` — :func:`format_dry_run`: the table and summary.
"""

from rankkit.plan.dry_run import DryRun, PlanRow, dry_run, expected_judgments
from rankkit.plan.output import COLUMNS, display_rows, format_dry_run
from rankkit.plan.stand_in import POLICIES, ReadOnlyCache, StandInJudge, read_only_cache
from rankkit.plan.tokens import CHARS_PER_TOKEN, PromptSizes, estimate_tokens

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
