"""The errors rankkit reports to its users, and the exit code of each.

Every error a user can act on derives from :class:`RankkitError`, which carries the exit code the
command line ends with; the CLI maps them in one place (:func:`rankkit.cli.guarded`):

* **2 — bad input or usage**, fixed by changing the command or the files: malformed data
  (:class:`~rankkit.tasks.TaskFormatError`), a spec that cannot be understood
  (:class:`~rankkit.specs.SpecError`), an unusable cache (:class:`~rankkit.cache.CacheError`), a run
  file (:class:`~rankkit.config.ConfigError`), a leaderboard that cannot be built
  (:class:`~rankkit.leaderboard.LeaderboardError`), a missing optional dependency
  (:class:`~rankkit.plots.PlotDependencyError`);
* **1 — a failure a rerun may fix** (``resumable``): the judge or its server failed
  (:class:`~rankkit.judges.base.JudgeError`); every judgment received is in the cache, so the same
  command resumes.

Each also derives from the built-in exception it used to be (``ValueError``, ``RuntimeError``), so
code that caught those keeps working.
"""

from __future__ import annotations


class RankkitError(Exception):
    """Base of the errors rankkit reports to a user.

    exit_code: what the command line exits with (2: bad input or usage; 1: a failure a rerun may fix).
    resumable: whether rerunning the same command can succeed and resumes from the cache.
    """

    exit_code: int = 2
    resumable: bool = False
