"""Cost before spending: what a run will ask the judge, worked out without asking it (``--dry-run``).

One module per step:

* :mod:`~rankkit.plan.dry_run` — :func:`dry_run`: per strategy, the comparisons and grades it
  uses and whether each is cached, shared with an earlier strategy, or new (to pay for);
* :mod:`~rankkit.plan.replay` — the cache opened read-only, and strategies whose judgments depend
  on verdicts replayed on it;
* :mod:`~rankkit.plan.tokens` — prompt sizes of the new judgments, estimated in tokens;
* :mod:`~rankkit.plan.judge` — :func:`plan_judge`: LLM judges with their real fingerprint and
  prompts but no model — nothing is loaded and nothing is called;
* :mod:`~rankkit.plan.output` — :func:`format_dry_run`: the table and summary.
"""

from rankkit.plan.dry_run import DryRun, PlanRow, dry_run
from rankkit.plan.judge import PlanEngine, hub_revision, plan_judge
from rankkit.plan.output import COLUMNS, display_rows, format_dry_run
from rankkit.plan.replay import CacheOnlyJudge, NotCached, Replay, read_only_cache, replay_on_cache
from rankkit.plan.tokens import CHARS_PER_TOKEN, PromptSizes, estimate_tokens

__all__ = [
    "CHARS_PER_TOKEN", "COLUMNS", "CacheOnlyJudge", "DryRun", "NotCached", "PlanEngine", "PlanRow", "PromptSizes",
    "Replay", "display_rows", "dry_run", "estimate_tokens", "format_dry_run", "hub_revision", "plan_judge",
    "read_only_cache", "replay_on_cache",
]
