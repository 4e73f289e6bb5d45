"""The errors rankkit reports to its users, and the exit code of each.

Every error a user can act on derives from :class:`RankkitError`, which carries the exit code the
command line ends with; the CLI maps them in one place (:func:`rankkit.cli.guarded`):

* **2 — bad input or usage**, fixed by changing the command or the files: a malformed tasks,
  results or judgments file (:class:`TaskFormatError`, defined here because every reader of
  those files raises it), a spec that cannot be understood
  (:class:`~rankkit.specs.SpecError`), an unusable cache (:class:`~rankkit.cache.CacheError`), a run
  file (:class:`~rankkit.config.ConfigError`), a leaderboard that cannot be built
  (:class:`~rankkit.leaderboard.LeaderboardError`), a missing optional dependency
  (:class:`~rankkit.plots.PlotDependencyError`);
* **1 — a failure a rerun may fix** (``resumable``): the judge or its server failed
  (:class:`~rankkit.judges.base.JudgeError`); every judgment received is in the cache, so the same
  command resumes. ``compare`` and ``rank`` also exit 1 when every judgment of a strategy failed to
  parse (the judge never answered in the expected format), unless ``--allow-failures`` is given.

Each is also the built-in exception its kind of failure is (``ValueError`` for bad input,
``RuntimeError`` for a failed judge), so a caller may catch either.
"""

from __future__ import annotations

from os import PathLike


class RankkitError(Exception):
    """Base of the errors rankkit reports to a user.

    exit_code: what the command line exits with (2: bad input or usage; 1: a failure a rerun may fix).
    resumable: whether rerunning the same command can succeed and resumes from the cache.
    """

    exit_code: int = 2
    resumable: bool = False


class TaskFormatError(RankkitError, ValueError):
    """Bad input data. ``str(error)`` reads ``FILE:LINE: field 'F': message``.

    path: the file (or the kind of source, e.g. ``DataFrame``); line: its line or row, None when
    the problem is not on one; field_name: the field or column, None when it is not one field.
    """

    def __init__(self, path: str | PathLike[str], line: int | None, field_name: str | None, message: str):
        self.path = str(path)
        self.line = line
        self.field = field_name
        self.message = message
        where = self.path + (f":{line}" if line is not None else "")
        what = f" field {field_name!r}:" if field_name else ""
        super().__init__(f"{where}:{what} {message}")
