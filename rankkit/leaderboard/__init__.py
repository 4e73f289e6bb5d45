"""System leaderboards: rank the *systems* that wrote the candidates, not the candidates of one task.

Candidates carry ``system``; a leaderboard pools what the judge said on every task into one rating
per system. The package, one module per step:

* :mod:`~rankkit.leaderboard.board` — the data (:class:`Leaderboard`, its rows and the outcomes
  they were rated from) and which system wrote which candidate;
* :mod:`~rankkit.leaderboard.tournament` — playing systems against each other on one task
  (Arena-lite brackets, matches against one opponent);
* :mod:`~rankkit.leaderboard.rating` — from outcomes to rows: Bradley–Terry or win rates, with
  bootstrap intervals;
* :mod:`~rankkit.leaderboard.build` — :func:`build`: ``arena``, ``anchored`` or any per-task
  strategy aggregated;
* :mod:`~rankkit.leaderboard.add` — :func:`add_system` to a stored leaderboard (binary search or
  against an anchor);
* :mod:`~rankkit.leaderboard.truth` — the system-level truth and the correlation with it;
* :mod:`~rankkit.leaderboard.display` — the rows and summary ``rankkit leaderboard`` prints.

Judgments are reused wherever they already exist, in the persistent cache, so adding a system pays only for matches never judged before.
"""

from rankkit.leaderboard.add import ADD_METHODS, add_system, binary_search_placement
from rankkit.leaderboard.board import (
    Leaderboard,
    LeaderboardError,
    SystemRating,
    all_systems,
    restrict,
    systems_of,
)
from rankkit.leaderboard.build import (
    BUILD_METHODS,
    anchored,
    arena,
    build,
    from_strategy,
    induced_outcomes,
)
from rankkit.leaderboard.display import leaderboard_rows, report
from rankkit.leaderboard.rating import rate_bt, rate_win_rate
from rankkit.leaderboard.tournament import play_against, play_tournament
from rankkit.leaderboard.truth import (
    correlations,
    find_truth_file,
    human_system_scores,
    load_truth,
    resolve_truth,
)

__all__ = [
    "ADD_METHODS", "BUILD_METHODS", "Leaderboard", "LeaderboardError", "SystemRating",
    "add_system", "all_systems", "anchored", "arena", "binary_search_placement", "build", "correlations",
    "find_truth_file", "from_strategy", "human_system_scores", "induced_outcomes", "leaderboard_rows",
    "load_truth", "play_against", "play_tournament", "rate_bt", "rate_win_rate", "report", "resolve_truth",
    "restrict", "systems_of",
]
