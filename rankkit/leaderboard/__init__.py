"""System leaderboards: rank the *systems* that wrote the candidates, not the candidates of one task.

More in ``docs/leaderboards.md``.
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
from rankkit.leaderboard.human import HumanVotes, pair_votes, ppi_ratings, ppi_scores, ppi_win_rates, read_votes
from rankkit.leaderboard.human_board import HumanCorrection, human_leaderboard
from rankkit.leaderboard.human_compare import StrategyAgreement, strategy_agreements
from rankkit.leaderboard.rating import rate_bt, rate_win_rate
from rankkit.leaderboard.style import (
    CONTROLS,
    controlled_ratings,
    length_controlled_win_rates,
    parse_control,
    self_preference_systems,
)
from rankkit.leaderboard.tournament import play_against, play_tournament
from rankkit.leaderboard.truth import (
    correlations,
    find_truth_file,
    human_system_scores,
    load_truth,
    resolve_truth,
)

__all__ = [
    "ADD_METHODS",
    "BUILD_METHODS",
    "CONTROLS",
    "HumanCorrection",
    "HumanVotes",
    "Leaderboard",
    "LeaderboardError",
    "StrategyAgreement",
    "SystemRating",
    "add_system",
    "all_systems",
    "anchored",
    "arena",
    "binary_search_placement",
    "build",
    "controlled_ratings",
    "correlations",
    "find_truth_file",
    "from_strategy",
    "human_leaderboard",
    "human_system_scores",
    "induced_outcomes",
    "leaderboard_rows",
    "length_controlled_win_rates",
    "load_truth",
    "pair_votes",
    "parse_control",
    "play_against",
    "play_tournament",
    "ppi_ratings",
    "ppi_scores",
    "ppi_win_rates",
    "rate_bt",
    "rate_win_rate",
    "read_votes",
    "report",
    "resolve_truth",
    "restrict",
    "self_preference_systems",
    "strategy_agreements",
    "systems_of",
]
